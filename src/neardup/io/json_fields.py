"""One string field of JSON Lines records, decoded by a compiled pass over their bytes.

Verification in passes reads again the lines of the documents in candidate pairs and needs
their text alone. :func:`string_field` finds the field at the top level of each record (other
members are skipped, whatever they hold) and decodes its JSON string into UTF-8, two passes
over the lines on the kernel threads: one measures, one writes. It answers only for lines it
reads exactly as a JSON parser would: anything else (a key or value it cannot vouch for, a
malformed line) gives None, and the caller parses those lines with pyarrow, which decides and
reports. On 35 MB of lines it took 0.03 s where pyarrow's parse of the same lines took 0.14 s
(benchmarks/RESULTS.md, section 19).
"""

from __future__ import annotations

import numpy as np

from neardup.core.jit import helper, in_ranges, kernel
from neardup.core.scan import readonly
from neardup.io._jsontext import _HIGH, _LOW7, _ONES, _needs_escape

_PARALLEL_FROM = 1 << 20  # bytes of lines from which the threads share the work
_BAD = -1  # a line string_field does not answer for
_NULL = -2  # the field is null or absent: no text


@helper
def _skip_space(data: np.ndarray, p: int, end: int) -> int:
    while p < end and (data[p] == 0x20 or data[p] == 0x09 or data[p] == 0x0A or data[p] == 0x0D):
        p += 1
    return p


_U0 = np.uint64(0)


@helper
def _string_end(data: np.ndarray, p: int, end: int) -> tuple[int, bool]:
    """Where the string whose opening quote is at ``p - 1`` closes (the quote's index), or -1
    (no closing quote, or a raw control character in it), and whether it holds an escape.
    Eight bytes at a time up to the first quote, backslash or control byte."""
    escaped = False
    while p < end:
        while p + 8 <= end:
            w = _U0
            for i in range(8):
                w |= np.uint64(data[np.uint64(p + i)]) << np.uint64(8 * i)  # unsigned: no wrap check
            if _needs_escape(w) != 0:  # a quote, backslash or control byte
                break
            p += 8
        if p >= end:
            break
        c = data[p]
        if c == 0x22:
            return p, escaped
        if c == 0x5C:
            escaped = True
            p += 2
            continue
        if c < 0x20:
            return -1, escaped
        p += 1
    return -1, escaped


@helper
def _value_end(data: np.ndarray, p: int, end: int) -> int:
    """Where the value starting at ``p`` ends (the index after it), or -1: strings, objects and
    arrays by their brackets (strings inside them skipped), anything else up to a delimiter."""
    c = data[p]
    if c == 0x22:
        q, _ = _string_end(data, p + 1, end)
        return -1 if q < 0 else q + 1
    if c == 0x7B or c == 0x5B:
        depth = 0
        while p < end:
            c = data[p]
            if c == 0x22:
                q, _ = _string_end(data, p + 1, end)
                if q < 0:
                    return -1
                p = q + 1
                continue
            if c == 0x7B or c == 0x5B:
                depth += 1
            elif c == 0x7D or c == 0x5D:
                depth -= 1
                if depth == 0:
                    return p + 1
            p += 1
        return -1
    start = p
    while p < end:
        c = data[p]
        if c == 0x2C or c == 0x7D or c == 0x5D or c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D:
            break
        p += 1
    return p if p > start else -1


@helper
def _find_field(data: np.ndarray, start: int, end: int, key: np.ndarray) -> tuple[int, int, bool]:
    """``(first, after, escaped)`` of the string value of member ``key`` of the JSON object in
    ``data[start:end]``, its quotes excluded (``escaped``: it holds an escape); ``_NULL`` first
    when the member is null or absent; ``_BAD`` for anything this reader does not vouch for (a
    repeated or escaped key, a value of another type, a malformed object)."""
    p = _skip_space(data, start, end)
    if p >= end or data[p] != 0x7B:
        return _BAD, 0, False
    p = _skip_space(data, p + 1, end)
    first, after = _NULL, 0
    seen = False
    escaped = False
    if p < end and data[p] == 0x7D:
        p += 1
    else:
        while True:
            if p >= end or data[p] != 0x22:
                return _BAD, 0, False
            k_end, k_escaped = _string_end(data, p + 1, end)
            if k_end < 0 or k_escaped:  # an escaped key might spell the field's name
                return _BAD, 0, False
            same = k_end - p - 1 == key.size
            if same:
                for i in range(p + 1, k_end):
                    if data[i] != key[i - p - 1]:
                        same = False
                        break
            p = _skip_space(data, k_end + 1, end)
            if p >= end or data[p] != 0x3A:
                return _BAD, 0, False
            p = _skip_space(data, p + 1, end)
            if p >= end:
                return _BAD, 0, False
            if same and data[p] == 0x22:
                q, escaped = _string_end(data, p + 1, end)
                v_end = q + 1 if q >= 0 else -1
            else:
                v_end = _value_end(data, p, end)
            if v_end < 0:
                return _BAD, 0, False
            if same:
                if seen:
                    return _BAD, 0, False  # the member twice: the parser's choice, not this reader's
                seen = True
                if data[p] == 0x22:
                    first, after = p + 1, v_end - 1
                elif not _is_null(data, p, v_end):
                    return _BAD, 0, False
            p, more = _next_member(data, v_end, end)
            if more < 0:
                return _BAD, 0, False
            if not more:
                break
    if _skip_space(data, p, end) != end:
        return _BAD, 0, False
    if first == _NULL:
        return _NULL, 0, False
    return first, after, escaped


@helper
def _next_member(data: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """After an object member's value (ending at ``p``): ``(the next key's start, 1)`` past a
    comma, ``(the index after it, 0)`` past the closing brace, ``(p, -1)`` for anything else."""
    p = _skip_space(data, p, end)
    if p < end and data[p] == 0x2C:
        return _skip_space(data, p + 1, end), 1
    if p < end and data[p] == 0x7D:
        return p + 1, 0
    return p, -1


@helper
def _is_null(data: np.ndarray, p: int, end: int) -> bool:
    if end - p != 4:
        return False
    null: bool = data[p] == 0x6E and data[p + 1] == 0x75 and data[p + 2] == 0x6C and data[p + 3] == 0x6C
    return null


@helper
def _hex(c: int) -> int:
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if 0x61 <= c <= 0x66:
        return c - 0x57
    if 0x41 <= c <= 0x46:
        return c - 0x37
    return -1


@helper
def _unit(data: np.ndarray, p: int, after: int) -> int:
    """The code unit of ``\\uXXXX`` whose ``u`` is at ``p``, or -1."""
    if p + 5 > after:
        return -1
    unit = 0
    for i in range(1, 5):
        h = _hex(int(data[p + i]))
        if h < 0:
            return -1
        unit = unit * 16 + h
    return unit


@helper
def _decode(data: np.ndarray, first: int, after: int, out: np.ndarray, q: int, write: bool) -> int:
    """The JSON string ``data[first:after]`` (no quotes) decoded into UTF-8 at ``out[q:]`` (when
    ``write``); returns the position after it, or -1 for an escape this reader does not vouch for
    (an unknown one, a lone surrogate)."""
    p = first
    while p < after:
        r = p  # the run of bytes up to the next escape, eight at a time, copied whole
        while r + 8 <= after:
            w = _U0
            for i in range(8):
                w |= np.uint64(data[np.uint64(r + i)]) << np.uint64(8 * i)
            b = w ^ (_ONES * np.uint64(0x5C))
            if ~(((b & _LOW7) + _LOW7) | b) & _HIGH:
                break
            r += 8
        while r < after and data[np.uint64(r)] != 0x5C:
            r += 1
        if write:
            for i in range(r - p):
                out[np.uint64(q + i)] = data[np.uint64(p + i)]
        q += r - p
        p = r
        if p >= after:
            break
        if p + 1 >= after:
            return -1
        e = data[p + 1]
        single = -1
        if e == 0x22 or e == 0x5C or e == 0x2F:
            single = int(e)
        elif e == 0x62:
            single = 0x08
        elif e == 0x66:
            single = 0x0C
        elif e == 0x6E:
            single = 0x0A
        elif e == 0x72:
            single = 0x0D
        elif e == 0x74:
            single = 0x09
        if single >= 0:
            if write:
                out[q] = single
            q += 1
            p += 2
            continue
        if e != 0x75:
            return -1
        cp = _unit(data, p + 1, after)
        if cp < 0 or 0xDC00 <= cp <= 0xDFFF:
            return -1
        p += 6
        if 0xD800 <= cp <= 0xDBFF:
            if p + 1 >= after or data[p] != 0x5C or data[p + 1] != 0x75:
                return -1
            low = _unit(data, p + 1, after)
            if low < 0xDC00 or low > 0xDFFF:
                return -1
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            p += 6
        if cp < 0x80:
            if write:
                out[q] = cp
            q += 1
        elif cp < 0x800:
            if write:
                out[q] = 0xC0 | (cp >> 6)
                out[q + 1] = 0x80 | (cp & 0x3F)
            q += 2
        elif cp < 0x10000:
            if write:
                out[q] = 0xE0 | (cp >> 12)
                out[q + 1] = 0x80 | ((cp >> 6) & 0x3F)
                out[q + 2] = 0x80 | (cp & 0x3F)
            q += 3
        else:
            if write:
                out[q] = 0xF0 | (cp >> 18)
                out[q + 1] = 0x80 | ((cp >> 12) & 0x3F)
                out[q + 2] = 0x80 | ((cp >> 6) & 0x3F)
                out[q + 3] = 0x80 | (cp & 0x3F)
            q += 4
    return q


@kernel
def _measure(
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    key: np.ndarray,
    found: np.ndarray,
    sizes: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """For lines ``lo..hi-1``: where the value is (``found[k]``: first, after, escaped) and its
    decoded size (``sizes[k]``, or ``_BAD``)."""
    none = np.empty(0, dtype=np.uint8)
    for k in range(lo, hi):
        first, after, escaped = _find_field(data, starts[k], ends[k], key)
        found[k, 0] = first
        found[k, 1] = after
        found[k, 2] = escaped
        if first == _BAD:
            sizes[k] = _BAD
        elif first == _NULL:
            sizes[k] = 0
        elif not escaped:
            sizes[k] = after - first
        else:
            end = _decode(data, first, after, none, 0, False)
            sizes[k] = _BAD if end < 0 else end


@kernel
def _write(
    data: np.ndarray, found: np.ndarray, offsets: np.ndarray, out: np.ndarray, lo: int, hi: int
) -> None:
    for k in range(lo, hi):
        first, after = found[k, 0], found[k, 1]
        if first < 0:
            continue
        if found[k, 2]:
            _decode(data, first, after, out, offsets[k], True)
        else:
            q = offsets[k]
            for i in range(after - first):
                out[np.uint64(q + i)] = data[np.uint64(first + i)]


def key_bytes(name: str) -> np.ndarray:
    """A member's name as the kernels compare it: its UTF-8 bytes, read-only."""
    return readonly(np.frombuffer(name.encode("utf-8"), dtype=np.uint8).copy())


def string_field(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, key: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """The member ``key`` of each JSON object ``data[starts[k]:ends[k]]`` (uint8) as UTF-8: the
    bytes of all of them and their offsets (a null or absent member is empty); None if any line
    is one this reader does not vouch for (see the module's notes)."""
    data = readonly(np.ascontiguousarray(data, dtype=np.uint8))
    starts = readonly(np.ascontiguousarray(starts, dtype=np.int64))
    ends = readonly(np.ascontiguousarray(ends, dtype=np.int64))
    name = key_bytes(key)
    rows = starts.size
    found = np.empty((rows, 3), dtype=np.int64)
    sizes = np.empty(rows, dtype=np.int64)
    serial_below = max(1, rows * _PARALLEL_FROM // max(1, int(data.size)))
    in_ranges(lambda lo, hi: _measure(data, starts, ends, name, found, sizes, lo, hi), rows, serial_below)
    if rows and int(sizes.min()) < 0:
        return None
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(max(1, int(offsets[-1])), dtype=np.uint8)
    in_ranges(lambda lo, hi: _write(data, found, offsets, out, lo, hi), rows, serial_below)
    return out, offsets
