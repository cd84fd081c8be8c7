"""Rows of a few numbers and a list of ids (``clusters``, ``lsh_buckets``) as JSON Lines text,
by one compiled pass per slice.

The ids' JSON text is made once (:func:`~neardup.io.writers.value_texts`, whatever the id
column's type) and copied into each row that lists them; integers and 64-bit hex keys are
printed by the kernel. The text is byte for byte what the table writer prints for the same
rows, where the table path takes the ids of every list item and escapes them again, slice
by slice (``lsh_buckets`` on 94,000 documents: 0.24 s of the write stage, see
benchmarks/RESULTS.md section 19).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from neardup.core.jit import helper, in_ranges, kernel
from neardup.core.scan import readonly
from neardup.io.spans import copy_bytes
from neardup.io.writers import value_texts

INT = 0
"""A field printed as a decimal integer (int64)."""
HEX = 1
"""A field printed as a 16-digit lower-case hex string (the uint64 bits of its int64)."""
ID = 2
"""A field printed as the JSON text of the id at that row index."""

_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_PARALLEL_FROM_BYTES = 1 << 20  # rows of at least this much text are split between the threads


@dataclass(frozen=True)
class IdTexts:
    """The JSON text of every row's id, back to back: id ``i`` is ``data[offsets[i]:offsets[i + 1]]``."""

    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len + 1

    @classmethod
    def of(cls, ids: pa.Array) -> IdTexts:
        texts = value_texts(ids).cast(pa.large_string())
        _, off_buf, data_buf = texts.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
        return cls(readonly(data), readonly(np.ascontiguousarray(offsets)))


@dataclass(frozen=True)
class ListRows:
    """The shape of a row: ``fields`` (name and kind, in order) then the id list ``items``."""

    fields: tuple[tuple[str, int], ...]
    items: str

    def literals(self) -> tuple[np.ndarray, np.ndarray]:
        """The text before each field and before the list (``{"name": ``, ``, "name": ``; a hex
        field's opening quote included), then the text after the list, as bytes and offsets."""
        pieces = []
        for i, (name, kind) in enumerate(self.fields):
            pieces.append(("{" if i == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": ")
            if kind == HEX:
                pieces[-1] += '"'
        pieces.append(", " + json.dumps(self.items, ensure_ascii=False) + ": [")
        pieces.append("]}\n")
        encoded = [p.encode() for p in pieces]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in encoded], out=offsets[1:])
        return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


def list_lines(
    shape: ListRows, values: np.ndarray, offsets: np.ndarray, members: np.ndarray, ids: IdTexts
) -> np.ndarray:
    """The JSON Lines text (uint8) of ``len(offsets) - 1`` rows: row ``r`` has field ``j`` from
    ``values[j, r]`` (int64) and lists the ids ``members[offsets[r]:offsets[r + 1]]``."""
    rows = offsets.size - 1
    lit_data, lit_offsets = (readonly(a) for a in shape.literals())
    kinds = readonly(np.array([kind for _, kind in shape.fields], dtype=np.int64))
    # read-only, whatever they came as: one compiled version of each kernel
    values = readonly(np.ascontiguousarray(values, dtype=np.int64).reshape(kinds.size, rows))
    offsets = readonly(np.ascontiguousarray(offsets, dtype=np.int64))
    members = readonly(np.ascontiguousarray(members, dtype=np.int64))
    sizes = np.empty(rows, dtype=np.int64)
    args = (lit_data, lit_offsets, kinds, values, offsets, members, ids.data, ids.offsets)
    serial_below = max(1, rows * _PARALLEL_FROM_BYTES // max(1, 16 * (rows + members.size)))
    in_ranges(lambda lo, hi: _measure_rows(*args, sizes, lo, hi), rows, serial_below)
    starts = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    out = np.empty(int(starts[-1]), dtype=np.uint8)
    in_ranges(lambda lo, hi: _write_rows(*args, starts, out, lo, hi), rows, serial_below)
    return out


@helper
def _decimal_width(v: np.int64) -> int:
    width = 1 if v >= 0 else 2
    v = abs(v)
    while v >= 10:
        v //= 10
        width += 1
    return width


@helper
def _put_decimal(out: np.ndarray, q: int, v: np.int64, width: int) -> None:
    """``v`` in its ``width`` bytes from ``out[q]`` on (the last digit first)."""
    m = abs(v)
    i = q + width - 1
    while True:
        out[i] = _DIGITS[m % 10]
        m //= 10
        i -= 1
        if m == 0:
            break
    if v < 0:
        out[q] = 0x2D  # "-"


@helper
def _put_hex(out: np.ndarray, q: int, v: np.int64) -> None:
    bits = np.uint64(v)
    for i in range(16):
        out[q + i] = _DIGITS[(bits >> np.uint64(60 - 4 * i)) & np.uint64(0xF)]


@helper
def _copy(out: np.ndarray, q: int, src: np.ndarray, lo: int, hi: int) -> int:
    copy_bytes(out, q, src, lo, hi - lo)
    return q + hi - lo


@helper
def _field_width(kind: int, v: np.int64, id_offsets: np.ndarray) -> int:
    if kind == 0:
        return _decimal_width(v)
    if kind == 1:
        return 17  # 16 digits and the closing quote
    width: int = id_offsets[v + 1] - id_offsets[v]
    return width


@kernel
def _measure_rows(
    lit_data: np.ndarray,
    lit_offsets: np.ndarray,
    kinds: np.ndarray,
    values: np.ndarray,
    offsets: np.ndarray,
    members: np.ndarray,
    id_data: np.ndarray,
    id_offsets: np.ndarray,
    sizes: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """``sizes[r]``: the bytes of row ``r``'s line, for rows ``lo..hi-1``."""
    literals = lit_offsets[-1] - lit_offsets[0]
    for r in range(lo, hi):
        size = literals
        for j in range(kinds.size):
            size += _field_width(kinds[j], values[j, r], id_offsets)
        first, last = offsets[r], offsets[r + 1]
        if last > first:
            size += 2 * (last - first - 1)  # ", " between items
        for k in range(first, last):
            m = members[k]
            size += id_offsets[m + 1] - id_offsets[m]
        sizes[r] = size


@kernel
def _write_rows(
    lit_data: np.ndarray,
    lit_offsets: np.ndarray,
    kinds: np.ndarray,
    values: np.ndarray,
    offsets: np.ndarray,
    members: np.ndarray,
    id_data: np.ndarray,
    id_offsets: np.ndarray,
    starts: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    """Rows ``lo..hi-1`` into ``out`` from ``starts[r]`` (as measured by :func:`_measure_rows`)."""
    n = kinds.size
    for r in range(lo, hi):
        q = starts[r]
        for j in range(n):
            q = _copy(out, q, lit_data, lit_offsets[j], lit_offsets[j + 1])
            v = values[j, r]
            kind = kinds[j]
            if kind == 0:
                width = _decimal_width(v)
                _put_decimal(out, q, v, width)
                q += width
            elif kind == 1:
                _put_hex(out, q, v)
                out[q + 16] = 0x22  # '"'
                q += 17
            else:
                q = _copy(out, q, id_data, id_offsets[v], id_offsets[v + 1])
        q = _copy(out, q, lit_data, lit_offsets[n], lit_offsets[n + 1])
        for k in range(offsets[r], offsets[r + 1]):
            if k > offsets[r]:
                out[q] = 0x2C  # ","
                out[q + 1] = 0x20
                q += 2
            m = members[k]
            q = _copy(out, q, id_data, id_offsets[m], id_offsets[m + 1])
        _copy(out, q, lit_data, lit_offsets[n + 1], lit_offsets[n + 2])
