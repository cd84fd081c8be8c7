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
from numba import njit

from neardup.core.scan import readonly

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


@njit(cache=True, nogil=True)
def _quoted_offsets(offsets: np.ndarray, data: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Where each string starts in the output: its escaped bytes plus two quotes."""
    out = np.empty(offsets.size, dtype=np.int64)
    out[0] = 0
    for row in range(offsets.size - 1):
        size = 2
        for p in range(offsets[row], offsets[row + 1]):
            size += width[data[p]]
        out[row + 1] = out[row] + size
    return out


@njit(cache=True, nogil=True)
def _quote_into(
    offsets: np.ndarray, data: np.ndarray, out_offsets: np.ndarray, short: np.ndarray, hex_digits: np.ndarray
) -> np.ndarray:
    """The strings as quoted, escaped JSON text, back to back."""
    out = np.empty(out_offsets[-1], dtype=np.uint8)
    q = 0
    for row in range(offsets.size - 1):
        lo, hi = offsets[row], offsets[row + 1]
        out[q] = 0x22
        q += 1
        if out_offsets[row + 1] - out_offsets[row] == hi - lo + 2:  # nothing to escape
            out[q : q + hi - lo] = data[lo:hi]
            q += hi - lo + 1
            out[q - 1] = 0x22
            continue
        for p in range(lo, hi):
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
        q += 1
    return out


def _use_kernels(nbytes: int) -> bool:
    """Whether strings of ``nbytes`` in all are escaped by the kernels (see COMPILED_FROM_BYTES)."""
    return nbytes >= COMPILED_FROM_BYTES or bool(_quote_into.signatures)


def _strings(column: pa.Array) -> pa.Array:
    """Each string as ``json.dumps(s, ensure_ascii=False)`` writes it; null stays null."""
    column = column.cast(pa.large_string())
    _, offsets_buf, data_buf = column.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[column.offset : column.offset + len(column) + 1]
    if not _use_kernels(int(offsets[-1] - offsets[0])):
        dumped = [None if v is None else json.dumps(v, ensure_ascii=False) for v in column.to_pylist()]
        return pa.array(dumped, pa.large_string())
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    # read-only whether Arrow's buffer is mutable or not: one compiled version, not two
    data, offsets = readonly(data), readonly(offsets)
    out_offsets = _quoted_offsets(offsets, data, _WIDTH)
    out = _quote_into(offsets, data, out_offsets, _SHORT, _HEX)
    quoted = pa.LargeStringArray.from_buffers(len(column), pa.py_buffer(out_offsets), pa.py_buffer(out))
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
