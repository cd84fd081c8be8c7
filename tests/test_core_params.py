"""Choosing (bands, rows): the S-curve and its error integrals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.config import LSHConfig, MinHashConfig
from neardup.core.params import candidate_probability, error_integrals, lsh_shape, optimal_shape


def _simpson(f: np.ufunc | object, lo: float, hi: float, m: int = 4000) -> float:
    """Composite Simpson's rule with ``m`` (even) intervals."""
    xs = np.linspace(lo, hi, m + 1)
    ys = f(xs)  # type: ignore[operator]
    h = (hi - lo) / m
    return float(h / 3 * (ys[0] + ys[-1] + 4 * ys[1:-1:2].sum() + 2 * ys[2:-1:2].sum()))


def _weighted_errors(threshold: float, num_perm: int, fp_weight: float) -> dict[tuple[int, int], float]:
    """Brute force: every divisor pair, integrated independently of ``params``."""
    out = {}
    for bands in range(1, num_perm + 1):
        if num_perm % bands:
            continue
        rows = num_perm // bands

        def p(s: np.ndarray, b: int = bands, r: int = rows) -> np.ndarray:
            return 1.0 - (1.0 - s**r) ** b

        fp = _simpson(p, 0.0, threshold)
        fn = _simpson(lambda s, p=p: 1.0 - p(s), threshold, 1.0)
        out[(bands, rows)] = fp_weight * fp + (1.0 - fp_weight) * fn
    return out


@pytest.mark.parametrize(
    ("s", "bands", "rows"),
    [(0.5, 20, 5), (0.8, 16, 8), (0.3, 1, 1), (0.9, 128, 1), (0.9, 1, 128), (0.75, 32, 4)],
)
def test_candidate_probability_values(s: float, bands: int, rows: int) -> None:
    want = 1.0 - (1.0 - s**rows) ** bands
    assert float(candidate_probability(s, bands, rows)) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_candidate_probability_ends_and_shape() -> None:
    assert float(candidate_probability(0.0, 16, 8)) == 0.0
    assert float(candidate_probability(1.0, 16, 8)) == 1.0
    assert float(candidate_probability(0.5, 1, 1)) == 0.5
    s = np.linspace(0.0, 1.0, 101)
    p = candidate_probability(s, 16, 8)
    assert p.shape == s.shape
    assert np.all(np.diff(p) >= 0)  # more similar pairs are never less likely to collide


def test_error_integrals_linear_case() -> None:
    # bands = rows = 1: P(s) = s, so FP = t^2 / 2 and FN = (1 - t)^2 / 2 exactly.
    for t in (0.2, 0.5, 0.8, 1.0):
        fp, fn = error_integrals(t, 1, 1)
        assert fp == pytest.approx(t * t / 2, abs=1e-12)
        assert fn == pytest.approx((1 - t) ** 2 / 2, abs=1e-12)


@pytest.mark.parametrize(
    ("threshold", "num_perm", "fp_weight"),
    [(0.8, 128, 0.5), (0.5, 128, 0.5), (0.9, 256, 0.5), (0.7, 64, 0.3), (0.85, 100, 0.8), (0.6, 1, 0.5),
     (0.95, 96, 0.5), (0.4, 13, 0.5)],
)  # fmt: skip
def test_optimal_shape_is_the_brute_force_minimum(threshold: float, num_perm: int, fp_weight: float) -> None:
    bands, rows = optimal_shape(threshold, num_perm, fp_weight)
    assert bands * rows == num_perm
    errors = _weighted_errors(threshold, num_perm, fp_weight)
    best = min(errors.values())
    assert errors[(bands, rows)] <= best + 1e-6
    ranked = sorted(errors.values())
    if len(ranked) == 1 or ranked[1] - ranked[0] > 1e-6:  # a clear winner must be chosen
        assert errors[(bands, rows)] == best


@given(st.floats(0.05, 1.0), st.integers(1, 256), st.floats(0.0, 1.0))
def test_optimal_shape_divides_num_perm(threshold: float, num_perm: int, fp_weight: float) -> None:
    bands, rows = optimal_shape(threshold, num_perm, fp_weight)
    assert bands >= 1 and rows >= 1
    assert bands * rows == num_perm


def test_optimal_shape_extreme_weights() -> None:
    # Only false positives count: one band of every row. Only false negatives: one row per band.
    assert optimal_shape(0.5, 16, fp_weight=1.0) == (1, 16)
    assert optimal_shape(0.5, 16, fp_weight=0.0) == (16, 1)


def test_lsh_shape_uses_the_configured_shape() -> None:
    assert lsh_shape(LSHConfig(bands=4, rows=32), MinHashConfig(num_perm=128)) == (4, 32)
    default = LSHConfig(threshold=0.8)
    assert lsh_shape(default, MinHashConfig(num_perm=128)) == optimal_shape(0.8, 128, default.fp_weight)
