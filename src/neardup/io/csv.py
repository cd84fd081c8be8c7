"""CSV and TSV (``.csv``, ``.tsv``, optionally gzipped), with a header row.

Quoted fields may hold delimiters, doubled quotes and newlines. pyarrow parses
the file; only when it refuses it, or a column is not valid UTF-8, does a pass
with Python's ``csv`` module find each bad record and its line. :func:`read_blocks`
gives the same table a block at a time, for the files that read the same that way.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from neardup.errors import InputError
from neardup.io._common import (
    BLOCK_SIZE,
    Format,
    Part,
    Problems,
    WholeReadNeededError,
    block_size_for,
    head,
    read_bytes,
    read_or_fall_back,
    temporal_columns,
    utf8_reason,
    wide_encoding,
    wide_encoding_hint,
)

Source = Callable[[], Any]
STREAM_BLOCK_SIZE = 1 << 20
"""Bytes per block of the block-wise reader: pyarrow reads some 30 blocks ahead (240 MiB of
8 MiB blocks), so small blocks hold less at once."""


def read_csv(path: Path, fmt: Format, *, text_column: str, problems: Problems) -> Part:
    """Read one CSV/TSV file; record-level problems go to ``problems``."""

    def source() -> Any:
        return pa.input_stream(str(path), compression="gzip" if fmt.gzip else None)

    try:
        table = _arrow_read(source, fmt.delimiter, text_column, BLOCK_SIZE)
    except (pa.ArrowException, ValueError, OSError):
        table = None
    if table is not None and not any(pa.types.is_binary(f.type) for f in table.schema):
        return Part(table, str(path), line_finder=lambda: _record_lines(path, fmt))
    return _read_slowly(path, fmt, text_column=text_column, problems=problems)


def _options(
    source: Source, delimiter: str, text_column: str, block_size: int
) -> tuple[Any, Any, dict[str, pa.DataType]]:
    """pyarrow's read and parse options, and the column types to give it: the text as strings,
    and the dates and times a sample of the file holds kept as written rather than as pyarrow
    re-prints them."""
    read = pcsv.ReadOptions(block_size=block_size)
    parse = pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    types: dict[str, pa.DataType] = {text_column: pa.string()}
    sample = head(source)
    if sample:
        try:
            found = pcsv.read_csv(io.BytesIO(sample), read, parse, pcsv.ConvertOptions(column_types=types))
            types.update((name, pa.string()) for name in temporal_columns(found))
        except (pa.ArrowException, ValueError):
            pass
    return read, parse, types


def _arrow_read(source: Source, delimiter: str, text_column: str, block_size: int) -> pa.Table:
    read, parse, types = _options(source, delimiter, text_column, block_size)
    while True:  # the sample finds most date columns up front, a second read catches the rest
        table = pcsv.read_csv(source(), read, parse, pcsv.ConvertOptions(column_types=types))
        temporal = temporal_columns(table)
        if not temporal:
            return table
        types.update((name, pa.string()) for name in temporal)


def read_blocks(path: Path, fmt: Format, *, text_column: str) -> Iterator[pa.Table]:
    """The table :func:`read_csv` reads from ``path``, a block of ``STREAM_BLOCK_SIZE`` at a
    time, never held whole. Raises :class:`~neardup.io._common.WholeReadNeededError`, possibly after some
    blocks, where the file does not read the same that way: a column pyarrow reads as binary
    (not UTF-8), a value a later block cannot convert to the type the first block gave its
    column (the whole-file reader widens the type over the file), a bad record, a file without
    records."""

    def source() -> Any:
        return pa.input_stream(str(path), compression="gzip" if fmt.gzip else None)

    read, parse, types = _options(source, fmt.delimiter, text_column, STREAM_BLOCK_SIZE)
    while True:
        convert = pcsv.ConvertOptions(column_types=dict(types))
        reader = read_or_fall_back(partial(pcsv.open_csv, source(), read, parse, convert))
        temporal = temporal_columns(reader.schema.empty_table())
        if not temporal:
            break
        types.update((name, pa.string()) for name in temporal)
    schema = reader.schema
    if any(pa.types.is_binary(f.type) for f in schema):
        raise WholeReadNeededError("a column is not UTF-8")
    blocks = 0
    while (batch := read_or_fall_back(reader.read_next_batch)) is not None:
        if batch.schema != schema:
            raise WholeReadNeededError("a block read with other columns")
        blocks += 1
        yield pa.Table.from_batches([batch], schema=schema)
    if blocks == 0:
        raise WholeReadNeededError("no records")


def _records(text: str | IO[str], delimiter: str, path: str) -> Iterator[tuple[int, int, list[str]]]:
    """``(first line, last line, fields)`` of every row, header included, blank lines left out;
    ``text`` is the file's text, or a text stream of it opened with ``newline=""``."""
    # Documents can be long; the csv module's default limit is 128 KiB per field.
    if csv.field_size_limit() < (1 << 30):
        csv.field_size_limit((1 << 31) - 1)
    stream = io.StringIO(text, newline="") if isinstance(text, str) else text
    reader = csv.reader(stream, delimiter=delimiter)
    end = 0
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if row:
                yield start, end, row
    except csv.Error as exc:
        # The reader cannot go on past this point, so the whole file is unreadable.
        raise InputError(f"malformed CSV: {exc}", path=path, line=end + 1) from exc


def _read_slowly(path: Path, fmt: Format, *, text_column: str, problems: Problems) -> Part:
    """Check every record, report the bad ones, and let pyarrow read the good ones."""
    where = str(path)
    data = read_bytes(path, fmt).removeprefix(b"\xef\xbb\xbf")
    wide = wide_encoding(data)
    if wide is not None:  # every record would be wrong: say why once
        raise InputError(f"not UTF-8{wide_encoding_hint(data)}", path=where, line=1)
    bad_lines = _bad_utf8_lines(data)
    text = data.decode("utf-8", "surrogateescape")
    header: list[str] | None = None
    good: list[list[str]] = []
    lines: list[int] = []
    records: list[int] = []
    record = 0
    for start, end, row in _records(text, fmt.delimiter, where):
        bad = next((n for n in range(start, end + 1) if n in bad_lines), None)
        if header is None:
            if bad is not None:
                raise InputError(bad_lines[bad], path=where, line=bad)
            header = row
            continue
        record += 1
        if bad is not None:
            problems.add(InputError(bad_lines[bad], path=where, line=bad))
        elif len(row) != len(header):
            reason = f"expected {len(header)} fields, got {len(row)}"
            problems.add(InputError(reason, path=where, line=start))
        else:
            good.append(row)
            lines.append(start)
            records.append(record)
    if header is None:
        return Part(pa.table({}), where)

    out = io.StringIO()
    writer = csv.writer(out, delimiter=fmt.delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(good)
    clean = out.getvalue().encode("utf-8")
    try:
        table = _arrow_read(lambda: io.BytesIO(clean), fmt.delimiter, text_column, block_size_for(clean))
    except (pa.ArrowException, ValueError) as exc:
        raise InputError(f"cannot read CSV: {exc}", path=where) from exc
    return Part(
        table,
        where,
        lines=np.asarray(lines, dtype=np.int64),
        records=np.asarray(records, dtype=np.int64),
    )


def _bad_utf8_lines(data: bytes) -> dict[int, str]:
    """Reason for every physical line that is not valid UTF-8 (none in a clean file)."""
    try:
        data.decode("utf-8")
        return {}
    except UnicodeDecodeError:
        pass
    bad: dict[int, str] = {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad[number] = utf8_reason(raw, exc)
    return bad


def _record_lines(path: Path, fmt: Format) -> np.ndarray:
    """First physical line of each data record, the file read as a stream rather than whole."""
    try:
        with (
            gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
            if fmt.gzip
            else open(path, encoding="utf-8-sig", errors="replace", newline="")
        ) as fh:
            starts = np.fromiter((start for start, _, _ in _records(fh, fmt.delimiter, str(path))), np.int64)
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise InputError(f"not a readable gzip file: {exc}", path=path) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    return starts[1:]
