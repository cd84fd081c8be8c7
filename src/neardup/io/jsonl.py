"""JSON Lines: one JSON object per line (``.jsonl``, ``.ndjson``, ``.json``, optionally gzipped).

A ``.json`` file may instead hold one JSON array of records: it is read as the JSON Lines
its elements make (:mod:`neardup.io.json_array`), with the same readers.

pyarrow's reader does the work; only when it refuses a file, or the text field
is not a string, or it reads more records than the file has lines that hold one
(two objects on one line, which pyarrow takes as two records and a JSON Lines
line is not), does a line-by-line pass find each bad line and its reason. The
lines are counted as pyarrow reads the bytes (:class:`LineCount`), not read again.
Blank lines are skipped. :func:`read_blocks` gives the same table a block at a
time, for the files that read the same that way.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from neardup.core.jit import kernel
from neardup.errors import InputError
from neardup.io._common import (
    BLOCK_SIZE,
    BOM,
    Format,
    Part,
    Problems,
    WholeReadNeededError,
    block_size_for,
    head,
    is_text_type,
    json_text,
    json_type,
    read_bytes,
    read_chunks,
    read_or_fall_back,
    split_lines,
    temporal_columns,
    utf8_reason,
    wide_encoding,
    wide_encoding_hint,
)
from neardup.io.json_array import EMPTY_ELEMENT, ArrayLines, array_as_lines, array_layout, element_lines

Source = Callable[[], Any]
STREAM_BLOCK_SIZE = 1 << 20
"""Bytes per block of the block-wise reader: it parses ahead, so small blocks hold less at once."""


def read_jsonl(path: Path, fmt: Format, *, text_column: str, problems: Problems) -> Part:
    """Read one JSON Lines file (or a ``.json`` file holding a JSON array of records, see
    :mod:`neardup.io.json_array`); record-level problems go to ``problems``."""
    source = json_source(path, fmt)
    try:
        table = _arrow_read(source, text_column, BLOCK_SIZE)
    except (pa.ArrowException, ValueError, OSError):
        table = None
    if table is not None and not _one_record_a_line(source, table.num_rows):
        table = None  # a line holding two records: the slow path names it
    if table is not None:
        return Part(table, str(path), line_finder=lambda: _record_lines(path, fmt))
    return _read_slowly(path, fmt, text_column=text_column, problems=problems)


def json_source(path: Path, fmt: Format) -> Source:
    """What opens the file as a stream of JSON Lines: the file itself (a :class:`CountedSource`,
    which counts its record lines as they are read), or the JSON Lines that a JSON array file's
    elements make (:class:`~neardup.io.json_array.ArrayLines`)."""
    layout = array_layout(path, fmt)
    if layout is not None:
        return lambda: pa.PythonFile(ArrayLines(path, fmt, layout), mode="r")
    return CountedSource(lambda: pa.input_stream(str(path), compression="gzip" if fmt.gzip else None))


class LineCount:
    """The lines of a byte stream that hold something other than white space (JSON Lines'
    record lines: what :func:`_record_lines` numbers), counted a chunk at a time by a compiled
    kernel (:func:`count_record_lines`)."""

    def __init__(self) -> None:
        self._state = np.zeros(2, dtype=np.int64)  # lines ended that held a byte; the current one does
        self._head: bytes | None = b""  # the first bytes, until they show whether a byte-order mark leads

    def add(self, chunk: bytes) -> None:
        if self._head is not None:
            head = self._head + chunk
            if len(head) < len(BOM) and BOM.startswith(head):
                self._head = head
                return
            self._head = None
            chunk = head.removeprefix(BOM)
        data = np.frombuffer(chunk, dtype=np.uint8)
        if data.size:
            count_record_lines(data, _FILLED, self._state)

    @property
    def lines(self) -> int:
        """Record lines so far, the one in progress among them if it holds a byte."""
        if self._head:  # all a stream held: the start of a byte-order mark, not a whole one
            return 1
        return int(self._state[0] + self._state[1])


@kernel
def count_record_lines(data: np.ndarray, filled: np.ndarray, state: np.ndarray) -> None:
    """Go on counting, over ``data``, the lines holding a byte that ``filled`` marks: ``state``
    is (such lines ended so far, whether the line in progress is one).

    Where no newline is followed by white space and the first byte holds something (JSON Lines
    as written), every line ending here holds a record: one branch-free loop counts the newlines
    and the newlines followed by white space. Otherwise the lines are looked at byte by byte."""
    n = data.size
    newlines = 0
    blank = 0
    for i in range(n - 1):
        nl = data[i] == 10
        w = data[i + 1]
        newlines += nl
        blank += nl & ((w == 32) | (w == 9) | (w == 10) | (w == 13) | (w == 11) | (w == 12))
    last_nl = data[n - 1] == 10
    if blank == 0 and (state[1] != 0 or filled[data[0]]):
        # every line that ends here holds a byte: the one carried over starts with one (or held
        # one), the others start after a newline with one
        state[0] += newlines + last_nl
        state[1] = 0 if last_nl else 1
        return
    full = state[0]
    solid = state[1] != 0
    for i in range(n):
        b = data[i]
        if b == 10:
            if solid:
                full += 1
            solid = False
        elif filled[b]:
            solid = True
    state[0] = full
    state[1] = 1 if solid else 0


class _Counting(io.RawIOBase):
    """A pyarrow stream whose bytes a :class:`LineCount` sees as they are read."""

    def __init__(self, raw: Any, count: LineCount) -> None:
        super().__init__()
        self._raw = raw
        self._count = count

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._raw.read() if size is None or size < 0 else self._raw.read(size)
        self._count.add(bytes(data))
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


class CountedSource:
    """A :data:`Source` whose streams count their record lines: :attr:`last` is the count of the
    stream opened last (the one a read ended with), complete once it was read to its end."""

    def __init__(self, open_raw: Callable[[], Any]) -> None:
        self._open_raw = open_raw
        self.last: LineCount | None = None

    def __call__(self) -> Any:
        self.last = LineCount()
        return pa.PythonFile(_Counting(self._open_raw(), self.last), mode="r")


def _one_record_a_line(source: Source, records: int) -> bool:
    """Whether the stream ``source`` opened last held ``records`` record lines (True for a source
    that does not count them: a JSON array file's elements)."""
    if not isinstance(source, CountedSource) or source.last is None:
        return True
    return source.last.lines == records


def _arrow_read(source: Source, text_column: str, block_size: int) -> pa.Table | None:
    """The file as read by pyarrow, or ``None`` if it needs a closer look line by line."""
    read = pj.ReadOptions(block_size=block_size)
    # pyarrow turns ISO dates into timestamps; keep them as the strings they were. The
    # sample finds most such columns up front, a second read catches the rest.
    table = dates_as_strings(source, lambda parse: _parse(source, read, parse))
    if not _text_typed(table.schema, text_column) or slow_path_reason(table) is not None:
        return None
    return table


def _text_typed(schema: pa.Schema, text_column: str) -> bool:
    """Whether the text column, if any, is text (or all null) as pyarrow read it."""
    if text_column not in schema.names:
        return True
    dtype = schema.field(text_column).type
    return is_text_type(dtype) or pa.types.is_null(dtype)


def slow_path_reason(table: pa.Table) -> str | None:
    """Why the whole-file reader would read a file holding ``table`` line by line (its bad
    UTF-8 or a ``null`` line), or ``None``."""
    try:
        table.validate(full=True)  # pyarrow's JSON reader does not check UTF-8 itself
    except pa.ArrowInvalid:
        return "bad UTF-8"
    if table.num_columns and table.num_rows:
        # pyarrow reads a `null` line as a row of nulls; only the slow path can tell it from `{}`.
        empty = pc.is_null(table.column(0))
        for column in table.columns[1:]:
            empty = pc.and_(empty, pc.is_null(column))
        if pc.any(empty).as_py():
            return "a null record"
    return None


def read_blocks(path: Path, fmt: Format, *, text_column: str) -> Iterator[pa.Table]:
    """The table :func:`read_jsonl` reads from ``path``, a block of ``STREAM_BLOCK_SIZE`` at a
    time, never held whole. Raises :class:`WholeReadNeededError`, possibly after some blocks,
    where the file does not read the same that way: a block the whole-file reader would
    read line by line, a column whose type changes or a field first seen after the first
    block (the whole-file reader unifies those over the file), an empty file."""
    source = json_source(path, fmt)
    reader = open_blocks(source)
    schema = reader.schema
    if not _text_typed(schema, text_column):
        raise WholeReadNeededError(f"field {text_column!r} is not read as text")
    blocks = rows = 0
    while (batch := read_or_fall_back(reader.read_next_batch)) is not None:
        if batch.schema != schema:
            raise WholeReadNeededError("a field first seen, or a type changed, after the first block")
        table = pa.Table.from_batches([batch], schema=schema)
        reason = slow_path_reason(table)
        if reason is not None:
            raise WholeReadNeededError(reason)
        blocks += 1
        rows += table.num_rows
        yield table
    if blocks == 0:
        raise WholeReadNeededError("no records")
    if not _one_record_a_line(source, rows):
        raise WholeReadNeededError("more records than lines that hold one")


def open_blocks(source: Source) -> Any:
    """pyarrow's block-wise reader of ``source`` as the whole-file reader tries it first
    (``STREAM_BLOCK_SIZE`` blocks, dates as strings); a file it cannot open raises
    :class:`WholeReadNeededError`."""
    read = pj.ReadOptions(block_size=STREAM_BLOCK_SIZE)
    return dates_as_strings(
        source,
        lambda parse: read_or_fall_back(
            partial(pj.open_json, source(), read_options=read, parse_options=parse)
        ),
    )


def dates_as_strings(source: Source, read_with: Callable[[pj.ParseOptions], Any]) -> Any:
    """``read_with(parse options)`` (a table, or a reader with a ``schema``) with the columns
    pyarrow would take for dates or times read as the strings they were: a sample of the file
    names most such columns up front, a second read catches the rest."""
    strings = _temporal_in(head(source))
    while True:
        parse = pj.ParseOptions(
            explicit_schema=pa.schema([(name, pa.string()) for name in strings]),
            unexpected_field_behavior="infer",
        )
        result = read_with(parse)
        temporal = temporal_columns(result.schema.empty_table())
        if not temporal:
            return result
        strings += temporal


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
    layout = array_layout(path, fmt)
    starts: np.ndarray | None = None  # of an array's elements: the line each starts on
    if layout is None:
        data = read_bytes(path, fmt)
    else:
        data, starts = array_as_lines(path, fmt, layout)
    if wide_encoding(data) is not None:  # every line would be wrong: say why once
        raise InputError(f"not UTF-8{wide_encoding_hint(data)}", path=where, line=1)

    def report(reason: str, number: int, column: int | None = None) -> None:
        if starts is None:
            at = "" if column is None else f" at column {column}"
            problems.add(InputError(reason + at, path=where, line=number))
        else:
            at = "" if column is None else f" at character {column} of the element"
            element = f"element [{number - 1}]: "
            problems.add(InputError(element + reason + at, path=where, line=int(starts[number - 1])))

    for number, raw in enumerate(split_lines(data), 1):
        if not raw.strip():
            continue
        if starts is not None and raw == EMPTY_ELEMENT:
            report("empty (a comma with no value before it)", number)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            report(utf8_reason(raw, exc, data), number)
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            report(_malformed(exc, in_array=starts is not None), number, exc.colno)
            continue
        if not isinstance(record, dict):
            report(f"expected a JSON object, got {json_type(record)}", number)
            continue
        surrogate = lone_surrogate(record)
        if surrogate is not None:
            report(surrogate, number)
            continue
        text = record.get(text_column)
        if text is not None and not isinstance(text, str):
            report(f"field {text_column!r} is not a string (got {json_type(text)})", number)
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
    lines = np.asarray(numbers, dtype=np.int64)
    return Part(table, where, lines=lines if starts is None else starts[lines - 1])


def _malformed(exc: json.JSONDecodeError, *, in_array: bool) -> str:
    """Why a line is not JSON: a second value after the first is named as such."""
    if not in_array and is_second_value(exc):
        return SECOND_VALUE
    return f"malformed JSON: {exc.msg}"


SECOND_VALUE = "a second JSON value on the line (a JSON Lines line holds one record)"


def is_second_value(exc: json.JSONDecodeError) -> bool:
    """Whether ``exc`` (of ``json.loads``) is for a whole JSON value after the first one."""
    if exc.msg != "Extra data":
        return False
    try:
        _DECODER.raw_decode(exc.doc, exc.pos)
    except json.JSONDecodeError:
        return False
    return True


_DECODER = json.JSONDecoder()
LINE_SCAN_BYTES = 16 << 20
"""Bytes read at a time when numbering the records' lines."""
_WHITE_SPACE = np.zeros(256, dtype=np.bool_)
_WHITE_SPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.strip() strips
_FILLED = ~_WHITE_SPACE


def _record_lines(path: Path, fmt: Format) -> np.ndarray:
    """1-based physical line of each record (blank lines hold none), the file read a block at
    a time; of a JSON array file, the line each element starts on."""
    layout = array_layout(path, fmt)
    if layout is not None:
        return element_lines(path, fmt, layout)
    found: list[np.ndarray] = []
    line = 1  # the line the next byte is on
    solid = False  # whether that line holds a byte other than white space so far
    for k, chunk in enumerate(read_chunks(path, fmt, LINE_SCAN_BYTES)):
        data = np.frombuffer(chunk, dtype=np.uint8)
        filled = ~_WHITE_SPACE[data]
        if k == 0 and chunk.startswith(BOM):
            filled[: len(BOM)] = False
        ends = np.flatnonzero(data == 0x0A)
        before = np.concatenate(([0], np.cumsum(filled)))  # before[i]: filled bytes in data[:i]
        starts = np.concatenate(([0], ends[:-1] + 1))
        full = before[ends] > before[starts]
        if ends.size:
            full[0] |= solid
            solid = False
        found.append(line + np.flatnonzero(full))
        line += ends.size
        tail = ends[-1] + 1 if ends.size else 0
        solid = solid or bool(before[-1] > before[tail])
    if solid:  # a last line without its newline
        found.append(np.array([line]))
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, dtype=np.int64)


def lone_surrogate(record: dict[str, Any]) -> str | None:
    """Why ``record`` cannot be stored as text, if a string in it holds a lone surrogate (JSON
    may escape one, as ``"\\ud800"``, but it is not a character): the field and the position."""
    stack: list[tuple[str, Any]] = list(record.items())
    while stack:
        name, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"field {name!r} holds a lone surrogate (\\u{ord(value[exc.start]):04x} at character "
                    f"{exc.start}), which is not text"
                )
        elif isinstance(value, dict):
            stack.extend((f"{name}.{k}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{name}[{i}]", v) for i, v in enumerate(value))
    return None


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
