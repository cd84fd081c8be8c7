"""Choosing (bands, rows): the S-curve and its error integrals."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.config import DedupConfig, LSHConfig, MinHashConfig
from neardup.core.params import (
    candidate_probability,
    error_integrals,
    lsh_shape,
    optimal_shape,
    shapes,
)
from neardup.errors import ConfigError


def _simpson(f: np.ufunc | object, lo: float, hi: float, m: int = 4000) -> float:
    """Composite Simpson's rule with ``m`` (even) intervals."""
    xs = np.linspace(lo, hi, m + 1)
    ys = f(xs)  # type: ignore[operator]
    h = (hi - lo) / m
    return float(h / 3 * (ys[0] + ys[-1] + 4 * ys[1:-1:2].sum() + 2 * ys[2:-1:2].sum()))


def _brute_shapes(num_perm: int, layers: int) -> list[tuple[int, int]]:
    """Every divisor pair, and with two layers every second layer whose bands meet each first-layer
    band in at most one value (rows >= 2, rows * rows <= num_perm)."""
    out = []
    for per_layer in range(1, num_perm + 1):
        if num_perm % per_layer:
            continue
        rows = num_perm // per_layer
        top = 2 * per_layer if layers == 2 and 2 <= rows <= per_layer else per_layer
        out += [(bands, rows) for bands in range(per_layer, top + 1)]
    return out


def _weighted_errors(
    threshold: float, num_perm: int, fp_weight: float, layers: int = 1
) -> dict[tuple[int, int], float]:
    """Brute force: every shape, integrated independently of ``params``."""
    out = {}
    for bands, rows in _brute_shapes(num_perm, layers):

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
@pytest.mark.parametrize("layers", [1, 2])
def test_optimal_shape_is_the_brute_force_minimum(
    threshold: float, num_perm: int, fp_weight: float, layers: int
) -> None:
    bands, rows = optimal_shape(threshold, num_perm, fp_weight, layers)
    assert bands * rows == num_perm or layers == 2
    errors = _weighted_errors(threshold, num_perm, fp_weight, layers)
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
    want = optimal_shape(0.8, 128, default.fp_weight, default.layers)
    assert lsh_shape(default, MinHashConfig(num_perm=128)) == want


def test_shapes_offer_a_second_layer_only_where_its_bands_meet_each_first_band_once() -> None:
    assert sorted(shapes(16, layers=2)) == sorted(_brute_shapes(16, 2))
    assert (16, 8) in set(shapes(128, layers=2)) and (32, 8) in set(shapes(128, layers=2))
    assert (33, 8) not in set(shapes(128, layers=2))  # at most as many again
    assert (9, 16) not in set(shapes(128, layers=2))  # 16 * 16 > 128
    assert (129, 1) not in set(shapes(128, layers=2))  # one row: the same bands again
    assert set(shapes(128, layers=1)) == {(128 // r, r) for r in range(1, 129) if 128 % r == 0}


def test_default_shape_at_0_8_adds_a_second_layer_that_raises_the_chance_at_the_threshold() -> None:
    two, one = LSHConfig(threshold=0.8), LSHConfig(threshold=0.8, layers=1)
    assert lsh_shape(one, MinHashConfig(num_perm=128)) == (16, 8)
    assert lsh_shape(two, MinHashConfig(num_perm=128)) == (20, 8)
    at = float(candidate_probability(0.8, 20, 8))
    assert at > 0.97 > float(candidate_probability(0.8, 16, 8))


@pytest.mark.parametrize(
    ("bands", "rows", "message"),
    [
        (16, 7, "16 * 7 = 112, num_perm = 128"),  # 7 does not divide 128
        (33, 8, "33 * 8 = 264, num_perm = 128"),  # past twice num_perm
        (15, 8, "15 * 8 = 120, num_perm = 128"),  # short of num_perm
        (9, 16, "9 * 16 = 144, num_perm = 128"),  # 16 * 16 > 128
        (200, 1, "200 * 1 = 200, num_perm = 128"),  # one row: the same bands again
    ],
)
def test_configured_shape_is_checked(bands: int, rows: int, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        DedupConfig.create(bands=bands, rows=rows, num_perm=128)
    assert lsh_shape(LSHConfig(bands=24, rows=8), MinHashConfig(num_perm=128)) == (24, 8)
