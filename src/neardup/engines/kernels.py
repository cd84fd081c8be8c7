"""The engine's small compiled loops: characters per document, gathering ranges, hashing texts."""

from __future__ import annotations

import numpy as np
from numba import prange

from neardup.core.hashing import xxh64_bytes
from neardup.core.jit import njit
from neardup.io.spans import copy_bytes

_PARALLEL_BYTES = 1 << 20  # less text than this is counted on one thread: no thread start-up


@njit(inline="always", cache=True)
def _count(data: np.ndarray, lo: int, hi: int) -> int:
    c = 0
    for i in range(lo, hi):
        if (data[i] & 0xC0) != 0x80:
            c += 1
    return c


@njit(cache=True)
def _char_counts_serial(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.empty(offsets.size - 1, dtype=np.int64)
    for d in range(out.size):
        out[d] = _count(data, offsets[d], offsets[d + 1])
    return out


@njit(parallel=True, cache=True)
def _char_counts_parallel(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.empty(offsets.size - 1, dtype=np.int64)
    for d in prange(out.size):
        out[d] = _count(data, offsets[d], offsets[d + 1])
    return out


def char_counts(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Characters per document (UTF-8 bytes that do not continue a character).

    The same figures as :func:`neardup.pipeline.char_lengths`, without its
    eight bytes of running sum per byte of text.
    """
    small = offsets[-1] - offsets[0] < _PARALLEL_BYTES
    counts: np.ndarray = (_char_counts_serial if small else _char_counts_parallel)(data, offsets)
    return counts


@njit(cache=True)
def gather_ranges(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``values[starts[k]:starts[k] + lengths[k]]`` for every k, back to back (each range copied
    by :func:`~neardup.io.spans.copy_bytes`, a vectorised loop)."""
    total = 0
    for k in range(lengths.size):
        total += lengths[k]
    out = np.empty(total, dtype=values.dtype)
    w = 0
    for k in range(lengths.size):
        copy_bytes(out, w, values, starts[k], lengths[k])
        w += lengths[k]
    return out


@njit(cache=True)
def text_hashes(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each text ``data[offsets[i]:offsets[i + 1]]``."""
    out = np.empty(offsets.size - 1, dtype=np.uint64)
    seed = np.uint64(0)
    for i in range(out.size):
        out[i] = xxh64_bytes(data, offsets[i], offsets[i + 1] - offsets[i], seed)
    return out
