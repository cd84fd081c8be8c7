"""The text and id fields of JSON Lines records, each record checked whole by a compiled pass.

The first pass of a run in passes whose outputs are the file's own lines needs just the text and
the id of each record, but must see every record as the whole-file reader would: a line that is
not valid JSON is an error, whatever field it is in. :func:`record_fields` checks each line
against the JSON grammar (the file's UTF-8 is checked as its lines are found), finds the two
members at the top level and decodes them, on the calling thread. It answers only for lines it
reads exactly as pyarrow's parser does; for anything else (a number too large for a double, a
repeated text or id member, a null or non-integer id, nesting
deeper than ``MAX_DEPTH``, anything malformed) it gives None, and the caller parses those lines
with pyarrow, which decides and reports. On the 254 MB synthetic corpus it reads the records in
a third of pyarrow's CPU time (benchmarks/RESULTS.md, section 24).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from neardup.core.jit import helper, kernel
from neardup.core.scan import readonly
from neardup.io.json_fields import (
    _NULL,
    _decode,
    _is_null,
    _next_member,
    _skip_space,
    _string_end,
    _write,
    key_bytes,
)

MAX_DEPTH = 64
"""Nesting a line may have for :func:`record_fields` to read it (pyarrow reads deeper ones)."""
_DIGITS_INT = 200  # integer digits of a number surely within a double's range (exponent < 100)
_DIGITS_ID = 18  # digits of an integer id surely within int64


@helper
def _checked_string_end(data: np.ndarray, p: int, end: int, none: np.ndarray) -> int:
    """The closing quote of the string opening at ``p - 1``, its escapes checked, or -1."""
    q, escaped = _string_end(data, p, end)
    if q < 0 or (escaped and _decode(data, p, q, none, 0, False) < 0):
        return -1
    return q


@helper
def _number_end(data: np.ndarray, p: int, end: int) -> int:
    """The index after the JSON number starting at ``p``, or -1 (malformed, or possibly too large
    for a double: more than ``_DIGITS_INT`` integer digits, or an exponent of three digits)."""
    if data[p] == 0x2D:
        p += 1
    if p >= end:
        return -1
    if data[p] == 0x30:
        p += 1
    elif 0x31 <= data[p] <= 0x39:
        first = p
        while p < end and 0x30 <= data[p] <= 0x39:
            p += 1
        if p - first > _DIGITS_INT:
            return -1
    else:
        return -1
    if p < end and data[p] == 0x2E:
        p += 1
        first = p
        while p < end and 0x30 <= data[p] <= 0x39:
            p += 1
        if p == first:
            return -1
    if p < end and (data[p] == 0x65 or data[p] == 0x45):
        p += 1
        if p < end and (data[p] == 0x2B or data[p] == 0x2D):
            p += 1
        first = p
        while p < end and 0x30 <= data[p] <= 0x39:
            p += 1
        if p == first or p - first > 2:
            return -1
    return p


@helper
def _literal_end(data: np.ndarray, p: int, end: int) -> int:
    """The index after ``true``, ``false`` or ``null`` at ``p``, or -1."""
    c = data[p]
    if c == 0x74 and p + 4 <= end and data[p + 1] == 0x72 and data[p + 2] == 0x75 and data[p + 3] == 0x65:
        return p + 4
    if c == 0x6E and p + 4 <= end and data[p + 1] == 0x75 and data[p + 2] == 0x6C and data[p + 3] == 0x6C:
        return p + 4
    if (
        c == 0x66
        and p + 5 <= end
        and data[p + 1] == 0x61
        and data[p + 2] == 0x6C
        and data[p + 3] == 0x73
        and data[p + 4] == 0x65
    ):
        return p + 5
    return -1


@helper
def _member_value(data: np.ndarray, p: int, end: int, none: np.ndarray) -> int:
    """Past the key (a string at ``p``), the colon and the spaces: where the member's value
    starts, or -1."""
    if p >= end or data[p] != 0x22:
        return -1
    q = _checked_string_end(data, p + 1, end, none)
    if q < 0:
        return -1
    p = _skip_space(data, q + 1, end)
    if p >= end or data[p] != 0x3A:
        return -1
    return _skip_space(data, p + 1, end)


@helper
def _value_end(data: np.ndarray, p: int, end: int, stack: np.ndarray, none: np.ndarray) -> int:
    """The index after the JSON value starting at ``p``, checked whole (objects and arrays with
    an explicit stack, at most ``stack.size`` deep), or -1."""
    depth = 0
    while True:
        if p >= end:
            return -1
        c = data[p]
        if c == 0x22:
            q = _checked_string_end(data, p + 1, end, none)
            if q < 0:
                return -1
            p = q + 1
        elif c == 0x7B or c == 0x5B:
            if depth >= stack.size:
                return -1
            stack[depth] = c
            depth += 1
            p = _skip_space(data, p + 1, end)
            if p < end and data[p] == c + 2:  # "}" and "]" are two past "{" and "["
                p += 1
                depth -= 1
            else:
                if c == 0x7B:
                    p = _member_value(data, p, end, none)
                    if p < 0:
                        return -1
                continue  # a value starts at p
        elif c == 0x2D or 0x30 <= c <= 0x39:
            p = _number_end(data, p, end)
            if p < 0:
                return -1
        else:
            p = _literal_end(data, p, end)
            if p < 0:
                return -1
        while depth > 0:  # after a value inside a container: a comma, or its closing bracket
            p = _skip_space(data, p, end)
            if p >= end:
                return -1
            c = data[p]
            opened = stack[depth - 1]
            if c == 0x2C:
                p = _skip_space(data, p + 1, end)
                if opened == 0x7B:
                    p = _member_value(data, p, end, none)
                    if p < 0:
                        return -1
                break
            if c != opened + 2:
                return -1
            depth -= 1
            p += 1
        if depth == 0:
            return p


@helper
def _is_key(data: np.ndarray, p: int, q: int, escaped: bool, key: np.ndarray, scratch: np.ndarray) -> int:
    """Whether the key ``data[p:q]`` (a JSON string's content) is ``key``: 1 if it is, 0 if not,
    -1 for an escape that does not decode. An escaped key is decoded into ``scratch`` (at least
    ``key.size`` bytes) when its decoded size is the key's."""
    if not escaped:
        if q - p != key.size:
            return 0
        for i in range(key.size):
            if data[p + i] != key[i]:
                return 0
        return 1
    size = _decode(data, p, q, scratch, 0, False)  # measures: writes nothing
    if size < 0:
        return -1
    if size != key.size:
        return 0
    _decode(data, p, q, scratch, 0, True)
    for i in range(key.size):
        if scratch[i] != key[i]:
            return 0
    return 1


@helper
def _integer(data: np.ndarray, p: int, q: int) -> tuple[bool, int]:
    """The JSON number ``data[p:q]`` as an integer, if it is one of at most ``_DIGITS_ID`` digits
    (no fraction, exponent or ``-0``)."""
    negative = data[p] == 0x2D
    if negative:
        p += 1
    if q - p < 1 or q - p > _DIGITS_ID or (data[p] == 0x30 and (q - p > 1 or negative)):
        return False, 0
    value = 0
    for i in range(p, q):
        c = data[i]
        if c < 0x30 or c > 0x39:
            return False, 0
        value = value * 10 + (c - 0x30)
    return True, -value if negative else value


@helper
def _record(
    data: np.ndarray,
    start: int,
    end: int,
    text_key: np.ndarray,
    id_key: np.ndarray,
    id_is_int: bool,
    stack: np.ndarray,
    none: np.ndarray,
    scratch: np.ndarray,
    text: np.ndarray,
    ident: np.ndarray,
) -> bool:
    """Check the record ``data[start:end]`` whole and note its text (``text``: first, after,
    escaped, decoded size; ``_NULL`` first for a null or absent one) and its id (``ident``: the same, or with
    ``id_is_int`` the value in ``ident[1]``); an empty ``id_key`` reads no id. False for a record
    :func:`record_fields` does not answer for."""
    text[0], ident[0] = _NULL, _NULL
    p = _skip_space(data, start, end)
    if p >= end or data[p] != 0x7B:
        return False
    p = _skip_space(data, p + 1, end)
    if p < end and data[p] == 0x7D:
        p += 1
    else:
        while True:
            if p >= end or data[p] != 0x22:
                return False
            k_end, k_escaped = _string_end(data, p + 1, end)
            if k_end < 0:
                return False
            text_match = _is_key(data, p + 1, k_end, k_escaped, text_key, scratch)
            id_match = _is_key(data, p + 1, k_end, k_escaped, id_key, scratch) if id_key.size else 0
            if text_match < 0 or id_match < 0:
                return False
            is_text, is_id = text_match == 1, id_match == 1
            p = _skip_space(data, k_end + 1, end)
            if p >= end or data[p] != 0x3A:
                return False
            p = _skip_space(data, p + 1, end)
            if p >= end:
                return False
            held = text if is_text else ident
            if (is_text or is_id) and held[0] != _NULL:
                return False  # the member twice
            if (is_text or (is_id and not id_is_int)) and data[p] == 0x22:  # one scan, one measure
                q, escaped = _string_end(data, p + 1, end)
                size = q - p - 1 if not escaped or q < 0 else _decode(data, p + 1, q, none, 0, False)
                if q < 0 or size < 0:
                    return False
                held[0], held[1], held[2], held[3] = p + 1, q, 1 if escaped else 0, size
                v_end = q + 1
            else:
                v_end = _value_end(data, p, end, stack, none)
                if v_end < 0:
                    return False
            if (is_text or is_id) and held[0] == _NULL:
                if is_id and id_is_int:
                    ok, value = _integer(data, p, v_end)
                    if not ok:
                        return False
                    held[0], held[1], held[2], held[3] = p, value, 0, 0
                elif is_text and _is_null(data, p, v_end):
                    held[0] = _NULL - 1  # null: seen, no text
                else:
                    return False
            p, more = _next_member(data, v_end, end)
            if more < 0:
                return False
            if not more:
                break
    if _skip_space(data, p, end) != end:
        return False
    if text[0] == _NULL - 1:
        text[0] = _NULL
    return id_key.size == 0 or ident[0] != _NULL  # a missing id: pyarrow's null, reported later


@kernel
def _scan(
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    text_key: np.ndarray,
    id_key: np.ndarray,
    id_is_int: bool,
    text_found: np.ndarray,
    id_found: np.ndarray,
) -> int:
    """Read every line (see :func:`_record`): where each text and id is (first, after, escaped,
    decoded size). Returns the first line not answered for, or -1."""
    stack = np.empty(MAX_DEPTH, dtype=np.uint8)
    none = np.empty(0, dtype=np.uint8)
    scratch = np.empty(max(text_key.size, id_key.size), dtype=np.uint8)
    for k in range(starts.size):
        text, ident = text_found[k], id_found[k]
        text[3], ident[3] = 0, 0
        if not _record(
            data, starts[k], ends[k], text_key, id_key, id_is_int, stack, none, scratch, text, ident
        ):
            return k
    return -1


@dataclass(frozen=True)
class RecordFields:
    """The text (strings, null where a record has none) and id of each record read."""

    text: pa.Array
    ids: pa.Array | None


def record_fields(
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    text_key: str,
    id_key: str | None,
    id_type: pa.DataType | None = None,
) -> RecordFields | None:
    """Each record ``data[starts[k]:ends[k]]`` (uint8, valid UTF-8) checked whole, and its member
    ``text_key`` (strings) and ``id_key`` (of ``id_type``: strings or int64) as pyarrow would read
    them; None where any record is one this reader does not answer for (see the module's notes)."""
    if id_key is not None and id_type not in (pa.string(), pa.int64()):
        raise ValueError(f"ids of type {id_type} are not read here")
    data = readonly(np.ascontiguousarray(data, dtype=np.uint8))
    starts = readonly(np.ascontiguousarray(starts, dtype=np.int64))
    ends = readonly(np.ascontiguousarray(ends, dtype=np.int64))
    rows = starts.size
    id_is_int = id_type == pa.int64()
    text_found = np.empty((rows, 4), dtype=np.int64)  # first, after, escaped, decoded size
    id_found = np.empty((rows, 4), dtype=np.int64)
    if (
        _scan(
            data, starts, ends, key_bytes(text_key), key_bytes(id_key or ""), id_is_int, text_found, id_found
        )
        >= 0
    ):
        return None
    text = _strings(data, text_found)
    if text is None:
        return None
    if id_key is None:
        return RecordFields(text, None)
    if id_is_int:
        return RecordFields(text, pa.array(id_found[:, 1].copy()))
    ids = _strings(data, id_found)
    return None if ids is None else RecordFields(text, ids)


def pooled_bytes(size: int) -> np.ndarray:
    """A writable uint8 array of ``size`` bytes from Arrow's memory pool. Buffers of megabytes
    made and dropped a piece at a time stay in glibc's heap once its mmap threshold has risen
    past them (30 MB more at the peak of a run's first pass); Arrow's pool hands them back."""
    return np.frombuffer(pa.allocate_buffer(size), dtype=np.uint8)


def _strings(data: np.ndarray, found: np.ndarray) -> pa.Array | None:
    """The decoded strings at ``found`` (first, after, escaped, size) as a string array (null
    where ``found`` says so), or None where they hold 2 GiB or more."""
    rows = found.shape[0]
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(found[:, 3], out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        return None
    out = pooled_bytes(max(1, int(offsets[-1])))
    _write(data, found, offsets, out, 0, rows)
    valid = found[:, 0] != _NULL
    nulls = rows - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    buffers = [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(out)]
    return pa.Array.from_buffers(pa.string(), rows, buffers, null_count=nulls)
