"""Arrow columns as JSON text, built with Arrow kernels rather than a Python loop per value.

Strings are escaped, numbers printed, lists and structs assembled from their
children's text; only rare cases (control characters other than tab, CR and
LF, maps, dates, decimals) go through :func:`json.dumps` value by value.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_RARE_CONTROLS = "[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]"
_NULL = pa.scalar(None, pa.large_string())


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
        return _strings(column.cast(pa.large_string()))
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


def _strings(column: pa.Array) -> pa.Array:
    if pc.any(pc.match_substring_regex(column, _RARE_CONTROLS)).as_py():
        dumped = [None if v is None else json.dumps(v, ensure_ascii=False) for v in column.to_pylist()]
        return pa.array(dumped, pa.large_string())
    escaped = column
    for plain, escape in _ESCAPES:
        escaped = pc.replace_substring(escaped, plain, escape)
    return pc.binary_join_element_wise(text('"'), escaped, text('"'), text(""))


def _lists(column: pa.Array, compact: bool) -> pa.Array:
    items = pc.fill_null(json_values(column.flatten(), compact=compact), text("null"))
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items)
    joined = pc.binary_join(lists, text("," if compact else ", "))
    out = pc.binary_join_element_wise(text("["), joined, text("]"), text(""))
    return pc.if_else(column.is_valid(), out, _NULL)


def _structs(column: pa.Array, compact: bool) -> pa.Array:
    if column.type.num_fields == 0:
        return pc.if_else(column.is_valid(), text("{}"), _NULL)
    comma, colon = ("," if compact else ", "), (":" if compact else ": ")
    parts: list[pa.Array | pa.Scalar] = []
    for i, (field, child) in enumerate(zip(column.type, column.flatten(), strict=True)):
        key = json.dumps(field.name, ensure_ascii=False)
        parts.append(text(("{" if i == 0 else comma) + key + colon))
        parts.append(pc.fill_null(json_values(child, compact=compact), text("null")))
    parts.append(text("}"))
    out = pc.binary_join_element_wise(*parts, text(""))
    return pc.if_else(column.is_valid(), out, _NULL)


def string_data(lines: pa.Array) -> memoryview:
    """The characters of a null-free string array, back to back, without copying."""
    offset_type = np.int64 if pa.types.is_large_string(lines.type) else np.int32
    _, offsets_buf, data_buf = lines.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[lines.offset : lines.offset + len(lines) + 1]
    if data_buf is None:
        return memoryview(b"")
    return memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])]
