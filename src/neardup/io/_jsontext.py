"""Arrow columns as JSON text, built with Arrow kernels rather than a Python loop per value.

Strings are escaped by one compiled pass over their UTF-8 bytes (exactly as
``json.dumps(s, ensure_ascii=False)`` does), numbers printed, lists and structs
assembled from their children's text; only rare types (maps, dates, decimals)
go through :func:`json.dumps` value by value.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.core.jit import hot_helper, in_ranges, kernel
from neardup.core.scan import readonly
from neardup.io.spans import copy_bytes

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# the bytes of JSON text for each input byte: 1; 2 for \" \\ \b \f \n \r \t; 6 for \u00XX
_WIDTH = np.ones(256, dtype=np.int64)
_WIDTH[:0x20] = 6
_SHORT = np.zeros(256, dtype=np.uint8)  # the letter after the backslash, 0 where there is none
for _letter, _byte in zip('"\\bfnrt', b'"\\\b\f\n\r\t', strict=True):
    _WIDTH[_byte] = 2
    _SHORT[_byte] = ord(_letter)


COMPILED_FROM_BYTES = 1 << 16
"""Strings of fewer bytes in all are escaped by :func:`json.dumps` until the kernels are loaded:
quicker than compiling them in a fresh cache (a few seconds), and just as exact. Once a larger
column has loaded them, every column goes through them, however small."""


PARALLEL_FROM_BYTES = 1 << 20
"""Columns of at least this many bytes are escaped on all the kernel threads, a range of rows each."""


def _null() -> pa.Scalar:
    return pa.scalar(None, pa.large_string())


def json_default(value: Any) -> Any:
    """``default`` for :func:`json.dumps`: dates as ISO text, decimals as text, bytes decoded."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def text(value: str) -> pa.Scalar:
    return pa.scalar(value, pa.large_string())


def json_values(column: pa.Array, *, compact: bool = False) -> pa.Array:
    """Each value as JSON text (large strings; null where the value is null).

    Ints stay ints and floats floats (``2.0``, not ``2``); NaN and infinities
    become null. ``compact`` drops the spaces after ``,`` and ``:``.
    """
    dtype = column.type
    if pa.types.is_dictionary(dtype):
        column = column.cast(dtype.value_type)
        dtype = column.type
    if pa.types.is_null(dtype):
        return pa.nulls(len(column), pa.large_string())
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return _strings(column)
    if pa.types.is_integer(dtype):
        return column.cast(pa.large_string())
    if pa.types.is_boolean(dtype):
        return pc.if_else(column, text("true"), text("false"))
    if pa.types.is_floating(dtype):
        finite = pc.if_else(pc.is_finite(column), column, pa.scalar(None, dtype))
        printed = finite.cast(pa.float64()).cast(pa.large_string())
        # Arrow prints 2.0 as "2", which JSON readers would take for an integer.
        whole = pc.invert(pc.match_substring_regex(printed, "[.eE]"))
        return pc.if_else(whole, pc.binary_join_element_wise(printed, text(".0"), text("")), printed)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        return _lists(column, compact)
    if pa.types.is_struct(dtype):
        return _structs(column, compact)
    separators = (",", ":") if compact else None
    dumped = [
        None if v is None else json.dumps(v, ensure_ascii=False, separators=separators, default=json_default)
        for v in column.to_pylist()
    ]
    return pa.array(dumped, pa.large_string())


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_ONES = np.uint64(0x0101010101010101)


@hot_helper
def _needs_escape(w: np.uint64) -> np.uint64:
    """0x80 in each byte of the eight bytes ``w`` that JSON escapes (below 0x20, ``"`` or ``\\``),
    0 elsewhere: exact for every byte value, with no carry between bytes."""
    below_space = ~(((w & _LOW7) + _ONES * np.uint64(0x60)) | w)
    quote = w ^ (_ONES * np.uint64(0x22))
    backslash = w ^ (_ONES * np.uint64(0x5C))
    is_quote = ~(((quote & _LOW7) + _LOW7) | quote)
    is_backslash = ~(((backslash & _LOW7) + _LOW7) | backslash)
    return (below_space | is_quote | is_backslash) & _HIGH


@kernel
def _quoted_sizes(
    offsets: np.ndarray, data: np.ndarray, width: np.ndarray, sizes: np.ndarray, lo: int, hi: int
) -> None:
    """``sizes[row]`` for rows ``lo..hi-1``: the bytes of each string as escaped JSON, quotes
    included. Eight bytes at a time; a byte-wise look-up only in the words with a byte to escape."""
    for row in range(lo, hi):
        start = offsets[row]
        end = offsets[row + 1]
        size = end - start + 2
        p = start
        while p + 8 <= end:
            w = np.uint64(0)
            for i in range(8):
                w |= np.uint64(data[np.uint64(p + i)]) << np.uint64(8 * i)
            if _needs_escape(w) != 0:
                for i in range(8):
                    size += width[data[np.uint64(p + i)]] - 1
            p += 8
        while p < end:
            size += width[data[np.uint64(p)]] - 1
            p += 1
        sizes[row] = size


@kernel
def _quote_rows(
    offsets: np.ndarray,
    data: np.ndarray,
    out_offsets: np.ndarray,
    out: np.ndarray,
    short: np.ndarray,
    hex_digits: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo..hi-1`` as quoted, escaped JSON text into ``out`` at ``out_offsets``."""
    for row in range(lo, hi):
        start, end = offsets[row], offsets[row + 1]
        q = out_offsets[row]
        out[q] = 0x22
        q += 1
        if out_offsets[row + 1] - out_offsets[row] == end - start + 2:  # nothing to escape
            copy_bytes(out, q, data, start, end - start)
            out[q + end - start] = 0x22
            continue
        for p in range(start, end):
            c = data[p]
            if c >= 0x20 and c != 0x22 and c != 0x5C:
                out[q] = c
                q += 1
            elif short[c] != 0:
                out[q] = 0x5C
                out[q + 1] = short[c]
                q += 2
            else:  # \u00XX
                out[q] = 0x5C
                out[q + 1] = 0x75
                out[q + 2] = 0x30
                out[q + 3] = 0x30
                out[q + 4] = hex_digits[c >> 4]
                out[q + 5] = hex_digits[c & 0xF]
                q += 6
        out[q] = 0x22


def _use_kernels(nbytes: int) -> bool:
    """Whether strings of ``nbytes`` in all are escaped by the kernels (see COMPILED_FROM_BYTES)."""
    dispatcher: Any = _quote_rows  # typed as the Python function
    return nbytes >= COMPILED_FROM_BYTES or bool(dispatcher.signatures)


def _strings(column: pa.Array) -> pa.Array:
    """Each string as ``json.dumps(s, ensure_ascii=False)`` writes it; null stays null."""
    column = column.cast(pa.large_string())
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[column.offset : column.offset + len(column) + 1]
    nbytes = int(offsets[-1] - offsets[0])
    if not _use_kernels(nbytes):
        dumped = [None if v is None else json.dumps(v, ensure_ascii=False) for v in column.to_pylist()]
        return pa.array(dumped, pa.large_string())
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    # read-only whether Arrow's buffer is mutable or not: one compiled version, not two
    data, offsets = readonly(data), readonly(offsets)
    rows = len(column)
    sizes = np.empty(rows, dtype=np.int64)
    serial_below = max(1, rows * PARALLEL_FROM_BYTES // max(nbytes, 1))  # in rows: split past that many bytes
    in_ranges(lambda lo, hi: _quoted_sizes(offsets, data, _WIDTH, sizes, lo, hi), rows, serial_below)
    out_offsets = np.empty(rows + 1, dtype=np.int64)
    out_offsets[0] = 0
    np.cumsum(sizes, out=out_offsets[1:])
    # numpy's allocation, not the kernel's: numpy asks for huge pages, and faulting in 4 KiB pages
    # cost as much as the copying here
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    in_ranges(
        lambda lo, hi: _quote_rows(offsets, data, out_offsets, out, _SHORT, _HEX, lo, hi), rows, serial_below
    )
    quoted = pa.LargeStringArray.from_buffers(rows, pa.py_buffer(out_offsets), pa.py_buffer(out))
    return quoted if column.null_count == 0 else pc.if_else(column.is_valid(), quoted, _null())


def _lists(column: pa.Array, compact: bool) -> pa.Array:
    items = pc.fill_null(json_values(column.flatten(), compact=compact), text("null"))
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items)
    joined = pc.binary_join(lists, text("," if compact else ", "))
    out = pc.binary_join_element_wise(text("["), joined, text("]"), text(""))
    return pc.if_else(column.is_valid(), out, _null())


def _structs(column: pa.Array, compact: bool) -> pa.Array:
    if column.type.num_fields == 0:
        return pc.if_else(column.is_valid(), text("{}"), _null())
    comma, colon = ("," if compact else ", "), (":" if compact else ": ")
    parts: list[pa.Array | pa.Scalar] = []
    for i, (field, child) in enumerate(zip(column.type, column.flatten(), strict=True)):
        key = json.dumps(field.name, ensure_ascii=False)
        parts.append(text(("{" if i == 0 else comma) + key + colon))
        parts.append(pc.fill_null(json_values(child, compact=compact), text("null")))
    parts.append(text("}"))
    out = pc.binary_join_element_wise(*parts, text(""))
    return pc.if_else(column.is_valid(), out, _null())


def string_data(lines: pa.Array) -> memoryview:
    """The characters of a null-free string array, back to back, without copying."""
    offset_type = np.int64 if pa.types.is_large_string(lines.type) else np.int32
    _, offsets_buf, data_buf = lines.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[lines.offset : lines.offset + len(lines) + 1]
    if data_buf is None:
        return memoryview(b"")
    return memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])]
