"""``stable_sort_u64`` is exactly numpy's stable argsort, on keys of every shape that matters."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.core.sorting import sorted_unique, stable_sort_u64

U64 = np.uint64


def _keys(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "hashes":
        return rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    if kind == "hashes with repeats":
        keys = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        keys[: n // 3] = keys[rng.integers(0, n, n // 3)]
        return keys
    if kind == "top bits equal, low bits differ":  # every run of equal top bits is mixed
        return (rng.integers(0, 4, n, dtype=np.uint64) << U64(62)) | rng.integers(0, 3, n, dtype=np.uint64)
    if kind == "small numbers":
        return rng.integers(0, 5, n, dtype=np.uint64)
    if kind == "extremes":
        return rng.choice(np.array([0, 1, 2**63, 2**64 - 2, 2**64 - 1], dtype=np.uint64), n)
    raise AssertionError(kind)


KINDS = ["hashes", "hashes with repeats", "top bits equal, low bits differ", "small numbers", "extremes"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000, 65_537])
def test_stable_sort_u64_is_numpys_stable_argsort(kind: str, n: int) -> None:
    rng = np.random.default_rng(n + 7 * KINDS.index(kind))
    keys = _keys(kind, n, rng)
    got, in_order = stable_sort_u64(keys)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(keys, kind="stable"))
    assert np.array_equal(in_order, np.sort(keys))


def test_keys_of_another_dtype_get_numpys_stable_argsort() -> None:
    keys = np.array([3, -1, 3, 0, -1], dtype=np.int64)
    order, in_order = stable_sort_u64(keys)
    assert order.tolist() == [1, 4, 3, 0, 2]
    assert in_order.tolist() == [-1, -1, 0, 3, 3]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.uint32, np.bool_, np.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000])
def test_sorted_unique_is_numpys_unique(dtype: type, n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.integers(0, max(2, n // 3), n).astype(dtype)
    got = sorted_unique(values)
    want = np.unique(values)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_sorted_unique_of_extreme_uint64_and_a_matrix() -> None:
    values = np.array([[2**64 - 1, 0], [2**63, 2**64 - 1]], dtype=np.uint64)
    assert sorted_unique(values).tolist() == [0, 2**63, 2**64 - 1]
