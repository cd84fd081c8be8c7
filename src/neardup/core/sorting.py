"""Sorting integers faster than numpy's general functions do it.

:func:`sorted_unique` is ``np.unique`` of a 1-D integer array by one sort and one comparison:
numpy 2.4's ``np.unique`` took 0.6 s for 1,000,000 uint64 values, where ``np.sort`` takes 0.015 s.

A stable argsort of 64-bit keys built on numpy's value sort, which is several times faster.

``np.argsort(kind="stable")`` on uint64 is a merge sort of indices (0.85 s for 5,000,000
keys here); ``np.sort`` of values is a vectorised sort (0.13 s). :func:`stable_sort_u64`
sorts the keys' top bits with each key's index packed into the low bits, then puts in order
the rare runs whose top bits are equal but whose keys are not (none, for hash keys, in all
but a few runs per million): the same order as the stable argsort, in about a third of its
time.
"""

from __future__ import annotations

import numpy as np


def stable_sort_u64(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, keys[order])``: the indices that sort ``keys``, equal keys in index order
    (int64), exactly ``np.argsort(keys, kind="stable")`` (which keys of another dtype than
    uint64 get), and the sorted keys."""
    if keys.dtype != np.uint64:
        by_numpy: np.ndarray = np.argsort(keys, kind="stable")
        return by_numpy, keys[by_numpy]
    n = int(keys.size)
    if n < 2:
        return np.arange(n, dtype=np.int64), keys.copy()
    bits = np.uint64((n - 1).bit_length())
    low = (np.uint64(1) << bits) - np.uint64(1)
    packed = ((keys >> bits) << bits) | np.arange(n, dtype=np.uint64)
    packed.sort()
    order: np.ndarray = (packed & low).astype(np.int64)
    top = packed >> bits
    del packed
    sorted_keys = keys[order]
    mixed = np.flatnonzero((top[1:] == top[:-1]) & (sorted_keys[1:] != sorted_keys[:-1]))
    if mixed.size:  # runs of equal top bits holding more than one key: by (key, index)
        starts = np.flatnonzero(np.concatenate(([True], top[1:] != top[:-1])))
        ends = np.append(starts[1:], n)
        for run in sorted_unique(np.searchsorted(starts, mixed, side="right") - 1).tolist():
            part = order[starts[run] : ends[run]]
            part[:] = part[np.lexsort((part, keys[part]))]
        sorted_keys = keys[order]
    return order, sorted_keys


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` (the distinct values, ascending) of a 1-D integer or bool array;
    other dtypes go to ``np.unique`` itself."""
    if values.dtype.kind not in "iub":
        return np.unique(values)
    out = np.sort(values, axis=None)
    if out.size < 2:
        return out
    keep = np.empty(out.size, dtype=np.bool_)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    distinct: np.ndarray = out[keep]
    return distinct
