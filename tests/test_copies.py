"""The compiled copies every output and verification path relies on: ``copy_bytes`` and
``gather_ranges`` give what numpy's slicing gives, for every range, empty ones included."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.engines.kernels import gather_ranges
from neardup.io.spans import copy_bytes


@numba.njit(cache=False)
def copy_from_compiled_code(out: np.ndarray, at: int, src: np.ndarray, lo: int, n: int) -> None:
    """``copy_bytes`` is a helper without a Python wrapper: compiled code calls it."""
    copy_bytes(out, at, src, lo, n)


ranges = st.lists(st.tuples(st.integers(0, 199), st.integers(0, 60)), max_size=40)


@given(st.integers(0, 120), st.integers(0, 199), st.integers(0, 80))
def test_copy_bytes_is_a_slice_assignment(at: int, lo: int, n: int) -> None:
    src = (np.arange(260) * 7 % 256).astype(np.uint8)
    n = min(n, src.size - lo, 200 - at)
    out = np.zeros(200, dtype=np.uint8)
    expected = out.copy()
    expected[at : at + n] = src[lo : lo + n]
    copy_from_compiled_code(out, at, src, lo, n)
    assert np.array_equal(out, expected)  # nothing before ``at`` or past ``at + n`` touched


@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.int32])
@given(picks=ranges)
def test_gather_ranges_is_the_slices_back_to_back(dtype: type, picks: list[tuple[int, int]]) -> None:
    values: np.ndarray = (np.arange(260, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)).astype(dtype)
    starts = np.array([s for s, _ in picks], dtype=np.int64)
    lengths = np.array([n for _, n in picks], dtype=np.int64)
    got = gather_ranges(values, starts, lengths)
    expected = np.concatenate([values[s : s + n] for s, n in picks] or [values[:0]])
    assert got.dtype == values.dtype
    assert np.array_equal(got, expected)
