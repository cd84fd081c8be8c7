"""JSON Lines: one JSON object per line (``.jsonl``, ``.ndjson``, ``.json``, optionally gzipped).

pyarrow's reader does the work; only when it refuses a file, or the text field
is not a string, does a line-by-line pass find each bad line and its reason.
Blank lines are skipped.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from neardup.errors import InputError
from neardup.io._common import (
    BLOCK_SIZE,
    Format,
    Part,
    Problems,
    block_size_for,
    head,
    is_text_type,
    json_text,
    json_type,
    read_bytes,
    split_lines,
    temporal_columns,
    utf8_reason,
)

Source = Callable[[], Any]
STREAM_BLOCK_SIZE = 1 << 20
"""Bytes per block of the block-wise reader: it parses ahead, so small blocks hold less at once."""


def read_jsonl(path: Path, fmt: Format, *, text_column: str, problems: Problems) -> Part:
    """Read one JSON Lines file; record-level problems go to ``problems``."""

    def source() -> Any:
        return pa.input_stream(str(path), compression="gzip" if fmt.gzip else None)

    try:
        table = _arrow_read(source, text_column, BLOCK_SIZE)
    except (pa.ArrowException, ValueError, OSError):
        table = None
    if table is not None:
        return Part(table, str(path), line_finder=lambda: _record_lines(path, fmt))
    return _read_slowly(path, fmt, text_column=text_column, problems=problems)


def _arrow_read(source: Source, text_column: str, block_size: int) -> pa.Table | None:
    """The file as read by pyarrow, or ``None`` if it needs a closer look line by line."""
    read = pj.ReadOptions(block_size=block_size)
    # pyarrow turns ISO dates into timestamps; keep them as the strings they were. The
    # sample finds most such columns up front, a second read catches the rest.
    strings = _temporal_in(head(source))
    while True:
        parse = pj.ParseOptions(
            explicit_schema=pa.schema([(name, pa.string()) for name in strings]),
            unexpected_field_behavior="infer",
        )
        table = _parse(source, read, parse)
        temporal = temporal_columns(table)
        if not temporal:
            break
        strings += temporal
    try:
        table.validate(full=True)  # pyarrow's JSON reader does not check UTF-8 itself
    except pa.ArrowInvalid:
        return None
    if text_column in table.column_names:
        dtype = table.schema.field(text_column).type
        if not (is_text_type(dtype) or pa.types.is_null(dtype)):
            return None
    if table.num_columns and table.num_rows:
        # pyarrow reads a `null` line as a row of nulls; only the slow path can tell it from `{}`.
        empty = pc.is_null(table.column(0))
        for column in table.columns[1:]:
            empty = pc.and_(empty, pc.is_null(column))
        if pc.any(empty).as_py():
            return None
    return table


def _parse(source: Source, read: pj.ReadOptions, parse: pj.ParseOptions) -> pa.Table:
    """The file parsed block by block (the raw bytes are never held whole), or by ``read_json``
    when a later block gives a column a type the first did not (the block-wise reader fixes the
    types from the first block; ``read_json`` unifies them over the file) or a record is longer
    than the block."""
    stream = source()
    blocks = pj.ReadOptions(block_size=min(read.block_size, STREAM_BLOCK_SIZE))
    try:
        reader = pj.open_json(stream, read_options=blocks, parse_options=parse)
        return pa.Table.from_batches(list(reader), schema=reader.schema)
    except pa.ArrowInvalid:
        return pj.read_json(source(), read_options=read, parse_options=parse)


def _temporal_in(sample: bytes) -> list[str]:
    try:
        return temporal_columns(pj.read_json(io.BytesIO(sample))) if sample else []
    except (pa.ArrowException, ValueError):
        return []


def _read_slowly(path: Path, fmt: Format, *, text_column: str, problems: Problems) -> Part:
    """Parse line by line, reporting each bad line; build the table from the good ones."""
    records: list[dict[str, Any]] = []
    good: list[bytes] = []
    numbers: list[int] = []
    where = str(path)
    for number, raw in enumerate(split_lines(read_bytes(path, fmt)), 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(InputError(utf8_reason(raw, exc), path=where, line=number))
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(
                InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", path=where, line=number)
            )
            continue
        if not isinstance(record, dict):
            problems.add(
                InputError(f"expected a JSON object, got {json_type(record)}", path=where, line=number)
            )
            continue
        text = record.get(text_column)
        if text is not None and not isinstance(text, str):
            reason = f"field {text_column!r} is not a string (got {json_type(text)})"
            problems.add(InputError(reason, path=where, line=number))
            continue
        records.append(record)
        good.append(raw)
        numbers.append(number)

    table = None
    if good:
        # pyarrow may read the good lines (in one block, should one line be huge), with the
        # same type inference as on the fast path; columns it cannot type need the fallback.
        data = b"\n".join(good)
        try:
            table = _arrow_read(lambda: io.BytesIO(data), text_column, block_size_for(data))
        except (pa.ArrowException, ValueError):
            table = None
    if table is None:
        table = table_from_records(records)
    return Part(table, where, lines=np.asarray(numbers, dtype=np.int64))


def _record_lines(path: Path, fmt: Format) -> np.ndarray:
    """1-based physical line of each record (blank lines hold none)."""
    lines = split_lines(read_bytes(path, fmt))
    return np.asarray([n for n, raw in enumerate(lines, 1) if raw.strip()], dtype=np.int64)


def table_from_records(records: list[dict[str, Any]]) -> pa.Table:
    """A table from parsed records; a column whose values do not share a type becomes JSON text."""
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record))
    columns: dict[str, pa.Array] = {}
    for name in names:
        values = [record.get(name) for record in records]
        try:
            columns[name] = pa.array(values)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            columns[name] = json_text(values)
    return pa.table(columns)
