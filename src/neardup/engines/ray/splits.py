"""The Ray engine's inputs: files named by local paths or URIs, cut into splits that tasks read
on their own.

A split is a byte range of a JSON Lines file (the lines that *start* in it, so neighbouring
splits meet at a line boundary whatever bytes they were cut at), a whole gzipped JSON Lines
file, or a run of a Parquet file's row groups. Splits are numbered in input order and read
the same whichever task reads them, which is what gives every document its position in the
corpus: the position the local engine gives it, and on which its keeper and tie-breaks rest.
"""

from __future__ import annotations

import io
import json
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.json as pj
import pyarrow.parquet as pq

from neardup.engines.kernels import gather_ranges
from neardup.engines.ray.location import is_uri, open_uri, shown
from neardup.errors import ConfigError, InputError
from neardup.io import ReadOptions, expand_inputs
from neardup.io.inputs import GENERATED_ID, check_columns, input_ending, text_as_string
from neardup.io.jsonl import SECOND_VALUE, LineCount, is_second_value

_SCAN = 1 << 16
_FAMILIES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class Split:
    """One task's share of the input: ``file`` is its index among the input files, ``path`` the
    file's absolute path or URI, ``name`` the file as the summary and ``source_file`` name it."""

    index: int
    file: int
    path: str
    name: str
    family: str
    start: int = 0
    end: int = 0
    gzip: bool = False
    row_groups: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Split:
        return cls(**{**data, "row_groups": tuple(data.get("row_groups", ()))})


@dataclass(frozen=True)
class InputFile:
    """An input file: ``uri`` reads it from any node, ``name`` is as the local engine names it."""

    uri: str
    name: str
    family: str
    gzip: bool
    size: int
    mtime: float | None


def _family(name: str) -> tuple[str, bool]:
    lower = name.lower()
    gzip = lower.endswith(".gz")
    stem = lower[:-3] if gzip else lower
    for ending, family in _FAMILIES.items():
        if stem.endswith(ending):
            return family, gzip
    ending = input_ending(name) or Path(name).suffix or name
    raise ConfigError(
        f"{name}: the Ray engine reads JSON Lines (.jsonl, .ndjson, optionally .gz) and Parquet, not "
        f"{ending} files; convert it or use the local engine"
    )


def list_inputs(inputs: list[str]) -> list[InputFile]:
    """The input files in order: local paths as the local engine expands them (folders, globs),
    URIs as one file or every JSON Lines and Parquet file under a folder, sorted."""
    out: list[InputFile] = []
    for given in inputs:
        if not is_uri(str(given)):
            for path in expand_inputs([given]):
                family, gzip = _family(path.name)
                stat = path.stat()
                out.append(
                    InputFile(str(path.absolute()), str(path), family, gzip, stat.st_size, stat.st_mtime)
                )
            continue
        fs, root = open_uri(str(given))
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            raise InputError("no such file or folder", path=shown(str(given)))
        if info.type == pafs.FileType.File:
            infos = [info]
        else:
            found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
            infos = sorted(
                (i for i in found if i.type == pafs.FileType.File and _known(i.base_name)),
                key=lambda i: i.path,
            )
            if not infos:
                raise InputError("holds no JSON Lines or Parquet files", path=shown(str(given)))
        base = str(given).split("?", 1)
        for i in infos:
            uri = str(given) if info.type == pafs.FileType.File else _uri_of(base, root, i.path)
            family, gzip = _family(i.base_name)
            mtime = i.mtime.timestamp() if i.mtime is not None else None
            out.append(InputFile(uri, shown(uri), family, gzip, int(i.size or 0), mtime))
    if not out:
        raise InputError("no inputs given")
    return out


def _known(name: str) -> bool:
    try:
        _family(name)
    except ConfigError:
        return False
    return not name.startswith(".")


def _uri_of(base: list[str], root: str, path: str) -> str:
    """The URI of ``path`` found under the folder URI ``base`` (whose path is ``root``): the
    rest of the path percent-encoded, as a URI's path is (a space, ``#``, ``?``, ``%``)."""
    folder = base[0].rstrip("/")
    rest = urllib.parse.quote(path[len(root.rstrip("/")) :].lstrip("/"))
    return f"{folder}/{rest}" + (f"?{base[1]}" if len(base) > 1 else "")


def plan_splits(files: list[InputFile], split_bytes: int) -> list[Split]:
    """Every file's splits of about ``split_bytes`` of JSON Lines (or of a Parquet file's row
    groups), in input order (an empty file has none)."""
    splits: list[Split] = []
    for k, f in enumerate(files):
        if f.family == "parquet":
            fs, path = open_uri(f.uri)
            with fs.open_input_file(path) as source:
                meta = pq.ParquetFile(source).metadata
            group: list[int] = []
            size = 0
            for g in range(meta.num_row_groups):
                group.append(g)
                size += meta.row_group(g).total_byte_size
                if size >= split_bytes or g == meta.num_row_groups - 1:
                    splits.append(Split(len(splits), k, f.uri, f.name, "parquet", row_groups=tuple(group)))
                    group, size = [], 0
        elif f.gzip:
            splits.append(Split(len(splits), k, f.uri, f.name, "jsonl", 0, f.size, gzip=True))
        else:
            for start in range(0, f.size, split_bytes):
                end = min(f.size, start + split_bytes)
                splits.append(Split(len(splits), k, f.uri, f.name, "jsonl", start, end))
    return splits


def _line_start(source: Any, pos: int, size: int) -> int:
    """Where the first line starting at or after ``pos`` starts."""
    if pos <= 0:
        return 0
    p = pos - 1
    while p < size:
        chunk = source.read_at(min(_SCAN, size - p), p)
        at = chunk.find(b"\n")
        if at >= 0:
            return int(p + at + 1)
        p += len(chunk)
    return size


def split_bytes(split: Split) -> tuple[bytes, int]:
    """The split's lines as bytes, and the offset of its first byte in the file."""
    fs, path = open_uri(split.path)
    if split.gzip:
        with fs.open_input_stream(path, compression="gzip") as source:
            return source.read(), 0
    with fs.open_input_file(path) as source:
        size = source.size()
        lo = _line_start(source, split.start, size)
        hi = _line_start(source, split.end, size) if split.end < size else size
        return (source.read_at(hi - lo, lo) if hi > lo else b""), lo


def _lines_before(split: Split, offset: int) -> int:
    """Lines of the file before byte ``offset`` (read again only to name a bad line)."""
    fs, path = open_uri(split.path)
    with fs.open_input_file(path) as source:
        return int(source.read_at(offset, 0).count(b"\n")) if offset else 0


def read_split(split: Split, options: ReadOptions) -> pa.Table:
    """The split's records, every column, the text as strings; a record that cannot be read is
    an InputError naming the file and line."""
    try:
        return _read(split, options)
    except OSError as exc:
        raise InputError(f"cannot read: {shown(str(exc))}", path=split.name) from exc


def _read(split: Split, options: ReadOptions) -> pa.Table:
    if split.family == "parquet":
        fs, path = open_uri(split.path)
        with fs.open_input_file(path) as source:
            table = pq.ParquetFile(source).read_row_groups(list(split.row_groups))
    else:
        data, offset = split_bytes(split)
        if offset == 0 and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
            offset = 3
        table = _parse_jsonl(data, split, offset)
    if table.num_columns == 0 and table.num_rows == 0:
        return table
    if check_columns(table.schema, split.name, options):
        table = text_as_string(table, options.text_column)
    return table


def _parse_jsonl(data: bytes, split: Split, offset: int) -> pa.Table:
    if not data or data.isspace():  # isspace stops at the first other byte
        return pa.table({})
    try:
        table = pj.read_json(
            io.BytesIO(data), read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) // 8 + 1))
        )
    except (pa.ArrowInvalid, ValueError) as exc:
        line, reason = _bad_line(data, exc)
        before = 0 if split.gzip else _lines_before(split, offset)
        raise InputError(reason, path=split.name, line=before + line) from exc
    count = LineCount()
    count.add(data)
    if count.lines != table.num_rows:  # pyarrow took a line of two objects as two records
        line, reason = _bad_line(data, None)
        before = 0 if split.gzip else _lines_before(split, offset)
        raise InputError(reason, path=split.name, line=before + line)
    return table


def _bad_line(data: bytes, exc: Exception | None) -> tuple[int, str]:
    """The first line pyarrow's reader refuses, or that holds two records (1-based within
    ``data``), and why."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as err:
            if is_second_value(err):
                return number, f"{SECOND_VALUE} at column {err.colno}"
            return number, f"not valid JSON: {err}"
        except UnicodeDecodeError as err:
            return number, f"not valid JSON: {err}"
        if not isinstance(value, dict):
            return number, f"a JSON {type(value).__name__}, not an object"
    return 1, f"cannot be read as JSON Lines: {exc}"


class Lines(NamedTuple):
    """A JSON Lines split's bytes and its records' lines, ``buf[starts[i]:ends[i]]``."""

    buf: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def record_lines(split: Split) -> Lines | None:
    """The split's bytes and each record's line: its non-empty lines, when each starts with
    ``{`` (as JSON Lines records do), so that record ``i`` is line ``i``; else None."""
    data, offset = split_bytes(split)
    buf = np.frombuffer(data, np.uint8)
    if offset == 0 and data.startswith(b"\xef\xbb\xbf"):
        buf = buf[3:]
    ends = np.append(np.flatnonzero(buf == 0x0A), buf.size).astype(np.int64)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    filled = ends > starts
    starts, ends = starts[filled], ends[filled]
    if starts.size and not np.all(buf[starts] == 0x7B):
        return None
    return Lines(np.ascontiguousarray(buf), starts, ends)


def read_rows(split: Split, options: ReadOptions, rows: np.ndarray) -> pa.Table | None:
    """Records ``rows`` (ascending) of a JSON Lines split, parsing only their lines; None where
    the split's lines are not one record each (read the split whole instead)."""
    if split.family != "jsonl":
        return None
    lines = record_lines(split)
    if lines is None or (rows.size and int(rows[-1]) >= lines.starts.size):
        return None
    starts = lines.starts[rows]
    lengths = lines.ends[rows] - starts + (lines.ends[rows] < lines.buf.size)  # with its newline
    picked = gather_ranges(lines.buf, starts, lengths)
    table = _parse_jsonl(picked.tobytes(), split, 0) if picked.size else pa.table({})
    if table.num_rows != rows.size:
        return None
    if check_columns(table.schema, split.name, options):
        table = text_as_string(table, options.text_column)
    return table


def where(split: Split, row: int) -> tuple[str, int | None, int | None]:
    """The file, line and record number (1-based) of a split's record ``row``, to name it in an
    error (read again for that alone)."""
    if split.family == "parquet":
        fs, path = open_uri(split.path)
        with fs.open_input_file(path) as source:
            meta = pq.ParquetFile(source).metadata
        before = (
            sum(meta.row_group(g).num_rows for g in range(split.row_groups[0])) if split.row_groups else 0
        )
        return split.name, None, before + row + 1
    data, offset = split_bytes(split)
    lines = record_lines(split)
    if lines is None or row >= lines.starts.size:
        return split.name, None, None
    skipped = len(data) - lines.buf.size  # a byte-order mark
    start = int(lines.starts[row]) + skipped
    before = 0 if split.gzip else _lines_before(split, offset)
    return split.name, before + data.count(b"\n", 0, start) + 1, None


def ids_of(table: pa.Table, options: ReadOptions, first: int) -> pa.Array:
    """The split's ids: its id column, or the generated ``row_id`` from position ``first``."""
    if options.id_column is None:
        return pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    return table.column(options.id_column).combine_chunks()


def with_generated_id(table: pa.Table, options: ReadOptions, first: int) -> pa.Table:
    """The table as the local engine shows it: ``row_id`` first when no id column is given."""
    if options.id_column is not None:
        return table
    return table.add_column(0, GENERATED_ID, ids_of(table, options, first))
