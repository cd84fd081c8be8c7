"""A ``.json`` file holding a JSON array of records, read as the JSON Lines it is equivalent to.

A ``.json`` file is JSON Lines (one object per line) unless its first byte other than
white space is ``[``: then it is one JSON array whose elements are the records, laid
out in any way (all on one line, or pretty-printed over many). An object with a single
key holding such an array (``{"data": [...]}``) reads as that array.

The array is never parsed whole in Python: one compiled pass over the bytes, a chunk
at a time, finds the elements (by their brackets and commas outside strings, without
checking them) and writes each on a line of its own, white space between its tokens
made spaces. pyarrow's JSON Lines reader then reads that stream exactly as it reads
the equivalent ``.jsonl`` file: the same rows, columns and types, and the same checks
of each element, which is reported as ``element [i]`` (0-based) at its first line.
The element boundaries are all that is checked here: a missing ``]``, anything after
it, or a top level that is neither an array nor an object holding one are errors of
the file; a bad element is an error of its record.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from neardup.core.jit import kernel
from neardup.errors import InputError
from neardup.io._common import BOM, SAMPLE_SIZE, Format, json_type, read_chunks

CHUNK_SIZE = 1 << 20
"""Bytes of the file converted at a time."""
EMPTY_ELEMENT = b","
"""The line written for an element with nothing in it (``[1,,2]``, ``[{...},]``): pyarrow
refuses it, and the line-by-line pass reports it."""
EXPECTED = (
    "expected a JSON array of objects, JSON Lines (one object per line) "
    "or an object with one key holding the array"
)

# phases of the scan
_IN_ARRAY = 1  # between elements: the next byte other than white space starts one, or is ']'
_IN_ELEMENT = 2
_AFTER_ARRAY = 3
_AFTER_OBJECT = 4
# state slots
_PHASE, _DEPTH, _STRING, _ESCAPE, _LINE, _ELEMENTS, _ERROR, _ERROR_LINE, _WRAPPED = range(9)
# errors
_CONTENT_AFTER = 1
_MORE_KEYS = 2


@dataclass(frozen=True)
class ArrayLayout:
    """Where a file's array starts: ``skip`` bytes (its opening ``[`` included) on ``line``;
    ``key`` names the key that holds it in a wrapping object, ``None`` for a bare array."""

    skip: int
    line: int
    key: str | None = None


_WRAPPED_ARRAY = re.compile(rb'\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*\[')


def array_layout(path: Path, fmt: Format) -> ArrayLayout | None:
    """The layout of a ``.json`` file holding a JSON array (bare or in an object of one key),
    ``None`` for JSON Lines (and for every file not named ``.json``). A file holding one
    JSON value that is not such an array is an :class:`~neardup.errors.InputError`."""
    if not fmt.json_document:
        return None
    chunks = read_chunks(path, fmt, SAMPLE_SIZE)
    head = next(chunks, b"")
    chunks.close()
    whole = len(head) < SAMPLE_SIZE
    start = len(BOM) if head.startswith(BOM) else 0
    body = head[start:]
    stripped = body.lstrip()
    if not stripped:
        return None
    at = start + len(body) - len(stripped)
    line = 1 + head.count(b"\n", 0, at)
    first = stripped[:1]
    if first == b"[":
        return ArrayLayout(at + 1, line)
    first_line, newline, rest = stripped.partition(b"\n")
    if first == b"{":
        wrapped = _WRAPPED_ARRAY.match(stripped)
        if newline and first_line.strip() == b"{":  # an object over many lines: no JSON Lines
            if wrapped is None:
                raise InputError(f"holds a JSON object without an array first in it: {EXPECTED}", path=path)
            return _wrapped(path, head, at, wrapped)
        if wrapped is not None and _one_array(
            first_line, whole and not rest.strip(), complete=bool(newline) or whole
        ):
            return _wrapped(path, head, at, wrapped)
        return None
    if not rest.strip() and (whole or not newline):  # one value alone, and not an object
        try:
            kind = json_type(json.loads(stripped))
        except (ValueError, RecursionError):
            return None  # the JSON Lines reader reports the malformed line
        raise InputError(f"holds a JSON {kind}, not records: {EXPECTED}", path=path, line=line)
    return None


def _one_array(first_line: bytes, alone: bool, *, complete: bool) -> bool:
    """Whether a first line ``{"key": [...`` is an object of one array (read as that array)
    rather than a JSON Lines record: it is when it is the whole file and nothing else, or too
    long to see whole (the scan then checks that one key is all)."""
    if not complete:
        return True
    if not alone:
        return False
    try:
        value = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), list)


def _wrapped(path: Path, head: bytes, at: int, match: re.Match[bytes]) -> ArrayLayout:
    try:
        key = json.loads(b'"' + match.group(1) + b'"')
    except ValueError as exc:
        raise InputError(f"holds a JSON object whose first key is malformed: {EXPECTED}", path=path) from exc
    skip = at + match.end()
    return ArrayLayout(skip, 1 + head.count(b"\n", 0, skip), key)


@kernel
def _convert(
    data: np.ndarray, out: np.ndarray, state: np.ndarray, lines: np.ndarray, want_lines: bool
) -> tuple[int, int]:
    """Write the elements in ``data`` (the next bytes of the array) into ``out`` a line each,
    carrying the scan's ``state`` from chunk to chunk; with ``want_lines``, the line each
    element starts on into ``lines``. ``(bytes written, elements started)``."""
    phase = state[_PHASE]
    depth = state[_DEPTH]
    in_string = state[_STRING]
    escape = state[_ESCAPE]
    line = state[_LINE]
    elements = state[_ELEMENTS]
    q = 0
    found = 0
    for p in range(data.size):
        c = data[p]
        if in_string == 1:  # (only ever in an element)
            if c > 0x0D and c != 0x22 and c != 0x5C and escape == 0:  # most bytes: copied as they are
                out[q] = c
                q += 1
                continue
            if escape == 1:
                escape = 0
            elif c == 0x5C:
                escape = 1
            elif c == 0x22:
                in_string = 0
            if c == 0x0A or c == 0x0D:  # not allowed in a JSON string: kept invalid, on its line
                out[q] = 0x01
                if c == 0x0A:
                    line += 1
            else:
                out[q] = c
            q += 1
            continue
        white = c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D
        if c == 0x0A:
            line += 1
        if phase < _AFTER_ARRAY:  # in the array
            if white:
                if phase == _IN_ELEMENT:
                    out[q] = 0x20
                    q += 1
                continue
            if depth == 0 and (c == 0x2C or c == 0x5D):  # ',' or ']' ends an element
                if phase == _IN_ELEMENT:
                    out[q] = 0x0A
                    q += 1
                    elements += 1
                elif c == 0x2C or elements > 0:  # nothing before ',' or after ',': a hole
                    out[q] = 0x2C
                    out[q + 1] = 0x0A
                    q += 2
                    if want_lines:
                        lines[found] = line
                    found += 1
                    elements += 1
                phase = _AFTER_ARRAY if c == 0x5D else _IN_ARRAY
                continue
            if phase == _IN_ARRAY:
                phase = _IN_ELEMENT
                if want_lines:
                    lines[found] = line
                found += 1
            if c == 0x22:
                in_string = 1
            elif c == 0x7B or c == 0x5B:
                depth += 1
            elif (c == 0x7D or c == 0x5D) and depth > 0:
                depth -= 1
            out[q] = c
            q += 1
            continue
        if white:
            continue
        if phase == _AFTER_ARRAY and state[_WRAPPED] == 1 and c == 0x7D:
            phase = _AFTER_OBJECT
            continue
        state[_ERROR] = (
            _MORE_KEYS if phase == _AFTER_ARRAY and state[_WRAPPED] == 1 and c == 0x2C else _CONTENT_AFTER
        )
        state[_ERROR_LINE] = line
        break
    state[_PHASE] = phase
    state[_DEPTH] = depth
    state[_STRING] = in_string
    state[_ESCAPE] = escape
    state[_LINE] = line
    state[_ELEMENTS] = elements
    return q, found


class ArrayScan:
    """One pass over a JSON array file: its elements as JSON Lines, a chunk at a time."""

    def __init__(self, path: Path, fmt: Format, layout: ArrayLayout, *, want_lines: bool = False) -> None:
        self.path = path
        self.fmt = fmt
        self.layout = layout
        self.want_lines = want_lines
        self.state = np.zeros(9, dtype=np.int64)
        self.state[_PHASE] = _IN_ARRAY
        self.state[_LINE] = layout.line
        self.state[_WRAPPED] = layout.key is not None

    def pieces(self) -> Iterator[tuple[bytes, np.ndarray]]:
        """``(JSON Lines, the start line of each element begun in them)`` chunk by chunk; raises
        :class:`~neardup.errors.InputError` where the file is not one whole array."""
        skip = self.layout.skip
        no_lines = np.zeros(0, dtype=np.int64)
        for chunk in read_chunks(self.path, self.fmt, CHUNK_SIZE):
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            data = np.frombuffer(chunk, dtype=np.uint8)[skip:]
            skip = 0
            out = np.empty(2 * data.size + 2, dtype=np.uint8)
            lines = np.empty(data.size + 1, dtype=np.int64) if self.want_lines else no_lines
            written, found = _convert(data, out, self.state, lines, self.want_lines)
            self._check_error()
            yield out[:written].tobytes(), lines[:found] if self.want_lines else no_lines
        self._check_end()

    def _check_error(self) -> None:
        error = int(self.state[_ERROR])
        if not error:
            return
        line = int(self.state[_ERROR_LINE])
        if error == _MORE_KEYS:
            reason = f"holds an object with more keys than {self.layout.key!r}: {EXPECTED}"
        else:
            reason = "has more after the JSON array's closing ']'; a .json file holds one array"
        raise InputError(reason, path=self.path, line=line)

    def _check_end(self) -> None:
        phase = int(self.state[_PHASE])
        if phase in (_IN_ARRAY, _IN_ELEMENT):
            raise InputError(
                "the JSON array has no closing ']' (is the file cut short?)",
                path=self.path,
                line=int(self.state[_LINE]),
            )
        if phase == _AFTER_ARRAY and self.layout.key is not None:
            raise InputError("the JSON object has no closing '}' (is the file cut short?)", path=self.path)


class ArrayLines(io.RawIOBase):
    """A JSON array file read as JSON Lines (see :class:`ArrayScan`), for pyarrow's readers."""

    def __init__(self, path: Path, fmt: Format, layout: ArrayLayout) -> None:
        super().__init__()
        self._pieces = ArrayScan(path, fmt, layout).pieces()
        self._pending = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(target):
            if not self._pending:
                if self._done:
                    break
                piece = next(self._pieces, None)
                if piece is None:
                    self._done = True
                    break
                self._pending = memoryview(piece[0])
                continue
            n = min(len(target) - filled, len(self._pending))
            target[filled : filled + n] = self._pending[:n]
            self._pending = self._pending[n:]
            filled += n
        return filled


def element_lines(path: Path, fmt: Format, layout: ArrayLayout) -> np.ndarray:
    """The line each element of the array starts on, in order."""
    found = [lines for _, lines in ArrayScan(path, fmt, layout, want_lines=True).pieces()]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def array_as_lines(path: Path, fmt: Format, layout: ArrayLayout) -> tuple[bytes, np.ndarray]:
    """The whole array as JSON Lines (an element a line), and the line each element starts on."""
    data: list[bytes] = []
    found: list[np.ndarray] = []
    for piece, lines in ArrayScan(path, fmt, layout, want_lines=True).pieces():
        data.append(piece)
        found.append(lines)
    return b"".join(data), np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
