"""Exact Jaccard of candidate pairs over their shingle-hash sets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neardup.core.jit import in_ranges, kernel, njit
from neardup.core.shingles import ShingleSets

_SERIAL_BELOW = 1 << 10  # fewer pairs than this skip the thread pool


@njit(inline="always", cache=True)
def _intersection(a: np.ndarray, b: np.ndarray) -> int:
    i = 0
    j = 0
    same = 0
    while i < a.size and j < b.size:
        if a[i] == b[j]:
            same += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return same


@njit(inline="always", cache=True)
def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted arrays of unique values (0.0 when both are empty)."""
    union = a.size + b.size
    if union == 0:
        return 0.0
    same = _intersection(a, b)
    return same / (union - same)


@kernel
def _pairs_range(
    slot: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    values: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    for p in range(lo, hi):
        ka = slot[left[p]]
        kb = slot[right[p]]
        a = values[starts[ka] : starts[ka] + lengths[ka]]
        b = values[starts[kb] : starts[kb] + lengths[kb]]
        out[p] = sorted_jaccard(a, b)


def exact_jaccard_pairs(sets: ShingleSets, n_docs: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard of each pair; every document in the pairs must be in ``sets``."""
    return _over_pairs(_pairs_range, np.float64, sets, n_docs, left, right)


def _over_pairs(
    kernel: Callable[..., None],
    dtype: type,
    sets: ShingleSets,
    n_docs: int,
    left: np.ndarray,
    right: np.ndarray,
) -> np.ndarray:
    """``kernel``'s value for each pair (``left[k]``, ``right[k]``) of documents in ``sets``,
    in ranges over the kernel threads."""
    slot = np.full(n_docs, -1, dtype=np.int64)
    slot[sets.docs] = np.arange(sets.docs.size)
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    out: np.ndarray = np.empty(left.size, dtype=dtype)
    args = (slot, sets.starts, sets.lengths, sets.values, left, right, out)
    in_ranges(lambda lo, hi: kernel(*args, lo, hi), left.size, _SERIAL_BELOW)
    return out


@kernel
def _intersections_range(
    slot: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    values: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    out: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    for p in range(lo, hi):
        ka = slot[left[p]]
        kb = slot[right[p]]
        a = values[starts[ka] : starts[ka] + lengths[ka]]
        b = values[starts[kb] : starts[kb] + lengths[kb]]
        out[p] = _intersection(a, b)


def intersection_pairs(sets: ShingleSets, n_docs: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """int64: how many shingles each pair shares; every document in the pairs must be in ``sets``."""
    return _over_pairs(_intersections_range, np.int64, sets, n_docs, left, right)
