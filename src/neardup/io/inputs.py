"""From the paths on the command line to one table: expansion, format detection, combining.

Files are read in order and their tables stacked; a column missing from a
file is null there, and a column whose types differ between files becomes
text. Record-level problems follow ``ReadOptions.on_error``; file-level ones
always raise.
"""

from __future__ import annotations

import bisect
import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.errors import ConfigError, InputError, MissingColumnError
from neardup.io._common import Format, Part, Problems, is_text_type, json_text
from neardup.io.csv import read_csv
from neardup.io.html import read_html_files
from neardup.io.jsonl import read_jsonl
from neardup.io.parquet import read_parquet
from neardup.io.text import read_text_files, read_text_lines

_FORMATS: dict[str, Format] = {
    ".jsonl": Format("jsonl"),
    ".ndjson": Format("jsonl"),
    ".json": Format("jsonl", json_document=True),
    ".jsonl.gz": Format("jsonl", gzip=True),
    ".ndjson.gz": Format("jsonl", gzip=True),
    ".json.gz": Format("jsonl", gzip=True, json_document=True),
    ".csv": Format("csv"),
    ".csv.gz": Format("csv", gzip=True),
    ".tsv": Format("csv", delimiter="\t"),
    ".tsv.gz": Format("csv", delimiter="\t", gzip=True),
    ".parquet": Format("parquet"),
    ".pq": Format("parquet"),
    ".txt": Format("text"),
    ".text": Format("text"),
    ".md": Format("text"),
    ".html": Format("html"),
    ".htm": Format("html"),
}
INPUT_EXTENSIONS: tuple[str, ...] = tuple(_FORMATS)
"""The file name endings neardup reads, compressed ones included."""

GENERATED_ID = "row_id"
_GLOB = re.compile(r"[*?\[]")
_MAX_LISTED = 20


@dataclass(frozen=True)
class ReadOptions:
    """How to read the inputs.

    ``id_column=None`` generates an int64 column ``row_id`` numbering the rows
    0, 1, 2, ... across all inputs. ``lines`` reads plain text one document per
    line. ``on_error="skip"`` drops bad records (and keeps their errors) instead
    of stopping at the first.
    """

    text_column: str = "text"
    id_column: str | None = None
    lines: bool = False
    on_error: Literal["stop", "skip"] = "stop"

    def __post_init__(self) -> None:
        if self.on_error not in ("stop", "skip"):
            raise ConfigError(f"on_error must be 'stop' or 'skip', not {self.on_error!r}")
        if not self.text_column:
            raise ConfigError("text_column must not be empty")
        if self.id_column == "":
            raise ConfigError("id_column must not be empty (None generates row_id)")


@dataclass
class Corpus:
    """The inputs as one table, and what reading them found.

    ``table`` holds every input column (null where a file lacks one) and the
    id column; ``sources`` the files read, in order; ``skipped`` the bad
    records dropped under ``on_error="skip"``; ``family`` the format of the
    first file (``jsonl``, ``csv``, ``parquet``, ``text`` or ``html``).
    """

    table: pa.Table
    text_column: str
    id_column: str
    sources: list[str]
    skipped: list[InputError]
    family: str

    @property
    def null_texts(self) -> int:
        """Rows whose text is null (JSON ``null``, a missing field, a null cell): each is
        deduplicated as an empty document."""
        return null_texts(self.table, self.text_column)


def null_texts(table: pa.Table, text_column: str) -> int:
    """How many rows of ``table`` have a null in ``text_column`` (all of them if it is absent)."""
    if text_column not in table.column_names:
        return int(table.num_rows)
    return int(table.column(text_column).null_count)


def detect_format(path: str | os.PathLike[str]) -> Format:
    """The format of a file, from its name; an unknown ending is an :class:`InputError`."""
    fmt = _format_or_none(os.fspath(path))
    if fmt is None:
        supported = ", ".join(INPUT_EXTENSIONS)
        raise InputError(f"unsupported file type (supported: {supported})", path=path)
    return fmt


def input_ending(name: str) -> str | None:
    """The input ending ``name`` has (``.jsonl.gz``, ``.csv``, ...), or None."""
    lower = name.lower()
    for ending in sorted(_FORMATS, key=len, reverse=True):
        if lower.endswith(ending):
            return ending
    return None


def _format_or_none(name: str) -> Format | None:
    ending = input_ending(name)
    return None if ending is None else _FORMATS[ending]


def expand_inputs(inputs: Sequence[str | Path]) -> list[Path]:
    """The files named by ``inputs``, in order, each once.

    A directory stands for the supported files under it (recursively, sorted,
    hidden ones left out); a glob pattern (``*``, ``?``, ``[``, ``**``) for the
    files it matches, sorted. A named or matched file of an unknown type is an
    error, as are a missing path, a pattern matching no file and a directory
    without supported files.
    """
    files: list[Path] = []
    for item in inputs:
        text = os.fspath(item)
        path = Path(text)
        if _GLOB.search(text) and not path.exists():
            matched = [Path(m) for m in sorted(glob.glob(text, recursive=True)) if os.path.isfile(m)]
            if not matched:
                raise InputError("no files match this pattern", path=text)
            for match in matched:
                detect_format(match)
            files.extend(matched)
        elif path.is_dir():
            found = _supported_files(path)
            if not found:
                raise InputError("no supported files in this directory", path=text)
            files.extend(found)
        elif path.exists():
            detect_format(path)
            files.append(path)
        else:
            raise InputError("no such file or directory", path=text)
    seen: set[Path] = set()
    unique: list[Path] = []
    for path in files:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _supported_files(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(
            Path(root, name)
            for name in names
            if not name.startswith(".") and _format_or_none(name) is not None
        )
    return sorted(found)


def read_corpus(inputs: Sequence[str | Path], options: ReadOptions = ReadOptions()) -> Corpus:
    """Read every input into one table, ready for deduplication.

    The text column comes out as strings (null for a record without text);
    the id column, given or generated, is unique. With more than one input file, a last
    ``source_file`` column names each row's file (unless the inputs have such a column, or every
    row is a whole file, named in its ``path`` column).
    """
    if not inputs:
        raise InputError("no inputs given")
    paths = expand_inputs(inputs)
    problems = Problems(options.on_error)
    parts = [
        _checked(read_part(group, fmt, options, problems), options) for group, fmt in groups(paths, options)
    ]

    table = _combine([part.table for part in parts])
    if _needs_sources(paths, parts) and SOURCE_COLUMN not in table.column_names:
        table = table.append_column(SOURCE_COLUMN, pa.concat_arrays([source_files(p) for p in parts]))
    if options.id_column is not None and table.num_rows:
        table = _unique_ids(table, options.id_column, parts, problems)
    id_column = options.id_column or GENERATED_ID
    if options.id_column is None:
        ids = pa.array(np.arange(table.num_rows, dtype=np.int64))
        table = table.add_column(0, GENERATED_ID, ids)
    if table.num_rows == 0:
        raise InputError("no records to deduplicate", path=", ".join(os.fspath(i) for i in inputs))
    return Corpus(
        table=table,
        text_column=options.text_column,
        id_column=id_column,
        sources=[str(path) for path in paths],
        skipped=problems.errors,
        family=detect_format(paths[0]).family,
    )


SOURCE_COLUMN = "source_file"
"""The column naming each row's input file when a run reads more than one."""


def _needs_sources(paths: Sequence[Path], parts: Sequence[Part]) -> bool:
    """More than one file, and some rows are records of a file (one-document files have ``path``)."""
    return len(paths) > 1 and any(part.row_paths is None for part in parts)


def source_files(part: Part) -> pa.Array:
    """The file of each row of ``part``, as strings."""
    if part.row_paths is not None:
        return pa.array(part.row_paths, pa.string())
    return pa.repeat(pa.scalar(part.path, pa.string()), part.table.num_rows)


def groups(paths: Sequence[Path], options: ReadOptions) -> list[tuple[list[Path], Format]]:
    """The files in the groups that make one table each, with their format.

    A run of one-document files (HTML, or plain text without ``lines``) is one
    group; every other file is a group of its own.
    """
    out: list[tuple[list[Path], Format]] = []
    start = 0
    while start < len(paths):
        fmt = detect_format(paths[start])
        stop = start + 1
        if fmt.family == "html" or (fmt.family == "text" and not options.lines):
            while stop < len(paths) and detect_format(paths[stop]).family == fmt.family:
                stop += 1
        out.append((list(paths[start:stop]), fmt))
        start = stop
    return out


def read_part(paths: list[Path], fmt: Format, options: ReadOptions, problems: Problems) -> Part:
    """One group of files (see :func:`groups`) as one table, with its rows' provenance."""
    path = paths[0]
    if fmt.family == "jsonl":
        return read_jsonl(path, fmt, text_column=options.text_column, problems=problems)
    if fmt.family == "csv":
        return read_csv(path, fmt, text_column=options.text_column, problems=problems)
    if fmt.family == "parquet":
        return read_parquet(path)
    if fmt.family == "html":
        return read_html_files(paths, problems=problems)
    if options.lines:
        return read_text_lines(path, problems=problems)
    return read_text_files(paths, problems=problems)


def _listing(names: list[str]) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:_MAX_LISTED])
    more = len(names) - _MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def _checked(part: Part, options: ReadOptions) -> Part:
    """The part with its text column as strings, once its columns are what the options ask for."""
    table = part.table
    if table.num_rows == 0 and table.num_columns == 0:
        return part
    if check_columns(table.schema, part.path, options):
        part.table = text_as_string(table, options.text_column)
    return part


def check_columns(schema: pa.Schema, path: str, options: ReadOptions) -> bool:
    """Raise unless a table of ``schema`` has the columns the options ask for; True when its
    text column must be cast to strings (:func:`text_as_string`)."""
    names = schema.names
    text = options.text_column
    if text not in names:
        raise MissingColumnError(
            f"no column {text!r} (columns: {_listing(names)}); pass --text-column to choose the text column",
            path=path,
        )
    if options.id_column is not None and options.id_column not in names:
        raise MissingColumnError(
            f"no column {options.id_column!r} (columns: {_listing(names)}); "
            "pass --id-column to choose the id column",
            path=path,
        )
    if options.id_column is None and GENERATED_ID in names:
        raise InputError(
            f"the input already has a column {GENERATED_ID!r}; "
            f"pass --id-column {GENERATED_ID} to use it as the id, or rename it",
            path=path,
        )
    if options.id_column is not None:
        id_type = schema.field(options.id_column).type
        if pa.types.is_nested(id_type):
            raise InputError(
                f"column {options.id_column!r} holds {id_type}, which cannot serve as an id",
                path=path,
            )
    dtype = schema.field(text).type
    if is_text_type(dtype):
        return False
    value_type = dtype.value_type if pa.types.is_dictionary(dtype) else dtype
    if not (pa.types.is_null(dtype) or pa.types.is_string_view(value_type) or is_text_type(value_type)):
        raise InputError(
            f"column {text!r} holds {dtype}, not text; pass --text-column to choose the text column",
            path=path,
        )
    return True


def text_as_string(table: pa.Table, text: str) -> pa.Table:
    """``table`` with its text column cast to strings."""
    return table.set_column(table.column_names.index(text), text, table.column(text).cast(pa.string()))


def _combine(tables: list[pa.Table]) -> pa.Table:
    """Stack tables: missing columns become null, columns with clashing types become text."""
    tables = [t for t in tables if t.num_columns]
    if not tables:
        return pa.table({})
    if len(tables) == 1:
        return tables[0]
    types: dict[str, list[pa.DataType]] = {}
    for table in tables:
        for f in table.schema:
            types.setdefault(f.name, []).append(f.type)
    target = {name: _common_type(found) for name, found in types.items()}
    while True:
        try:
            aligned = [_aligned(table, target) for table in tables]
        except _UncastableError as exc:
            target[exc.name] = pa.string()
            continue
        return pa.concat_tables(aligned)


class _UncastableError(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _aligned(table: pa.Table, target: dict[str, pa.DataType]) -> pa.Table:
    columns: list[pa.Array | pa.ChunkedArray] = []
    for name, dtype in target.items():
        if name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, dtype))
            continue
        column = table.column(name)
        if column.type != dtype:
            try:
                column = column.cast(dtype)
            except (pa.ArrowException, NotImplementedError) as exc:
                if not is_text_type(dtype):
                    raise _UncastableError(name) from exc
                # Nested values cannot be cast to text; keep them readable as JSON.
                column = json_text(column.to_pylist()).cast(dtype)
        columns.append(column)
    return pa.table(columns, names=list(target))


def _common_type(found: list[pa.DataType]) -> pa.DataType:
    first = found[0]
    if all(t == first for t in found):
        return first
    schemas = [pa.schema([("c", t)]) for t in found]
    try:
        return pa.unify_schemas(schemas, promote_options="permissive").field("c").type
    except (pa.ArrowException, NotImplementedError):
        large = any(pa.types.is_large_string(t) for t in found)
        return pa.large_string() if large else pa.string()


def _unique_ids(table: pa.Table, id_column: str, parts: list[Part], problems: Problems) -> pa.Table:
    """Report empty and repeated ids (the first occurrence stays); drop them when skipping."""
    bad = bad_ids(table.column(id_column).combine_chunks(), id_column, parts, problems)
    if bad.size == 0:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    keep[bad] = False
    return table.filter(pa.array(keep))


def bad_ids(ids: pa.Array, id_column: str, parts: Sequence[Part], problems: Problems) -> np.ndarray:
    """Positions of the empty and repeated ids (not their first occurrence), each reported to
    ``problems`` with its file and line; ``parts`` hold the rows of ``ids`` in order."""
    codes = pc.fill_null(pc.dictionary_encode(ids).indices, -1).to_numpy(zero_copy_only=False)
    _, first_index = np.unique(codes, return_index=True)
    first_of = np.full(int(codes.max(initial=-1)) + 2, -1, dtype=np.int64)
    first_of[codes[first_index] + 1] = first_index
    rows = np.arange(codes.size)
    bad = np.flatnonzero((codes < 0) | (first_of[codes + 1] != rows))
    if bad.size == 0:
        return bad
    starts = np.cumsum([0] + [part.table.num_rows for part in parts]).tolist()

    def locate(row: int) -> tuple[str, int | None, int | None]:
        k = bisect.bisect_right(starts, row) - 1  # empty parts share a start; the last one is right
        return parts[k].where(row - starts[k])

    for row in bad.tolist():
        path, line, record = locate(row)
        code = int(codes[row])
        if code < 0:
            reason = f"id column {id_column!r} is empty"
        else:
            seen, seen_line, seen_record = locate(int(first_of[code + 1]))
            at = f"{seen}:{seen_line}" if seen_line is not None else f"{seen}: record {seen_record}"
            if seen_line is None and seen_record is None:
                at = seen
            reason = f"duplicate id {ids[row].as_py()!r} (first seen at {at})"
        problems.add(InputError(reason, path=path, line=line, record=record))
    return bad
