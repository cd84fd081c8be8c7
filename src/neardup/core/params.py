"""Choosing the LSH shape: (bands, rows) for a threshold.

A pair with Jaccard ``s`` becomes a candidate with probability about
``1 - (1 - s**rows)**bands``. The chosen shape minimises
``fp_weight * FP + (1 - fp_weight) * FN``, where FP integrates that
probability below the threshold and FN integrates its complement above, over
every shape that bands the ``num_perm`` values once (``bands * rows ==
num_perm``) and, with ``layers=2``, every shape that adds a second layer of up
to as many bands over the same values in another grouping (see
:mod:`neardup.core.lsh`). A second layer is offered only where each of its
bands meets each band of the first in at most one value (``rows * rows <=
num_perm``, ``rows >= 2``), so that its bands fail on other values than the
first layer's; there the formula, which takes the bands as independent, is
close (on a real corpus at t = 0.8, 16 + 16 bands of 8 rows missed 16 times
fewer pairs above the threshold than 16 bands, where independence predicts 19).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from neardup.config import LSHConfig, MinHashConfig, allows_second_layer, check_shape

_GRID = 2001


def candidate_probability(similarity: float | np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Probability that a pair of the given Jaccard shares at least one band."""
    s = np.asarray(similarity, dtype=np.float64)
    return 1.0 - (1.0 - s**rows) ** bands


def error_integrals(threshold: float, bands: int, rows: int) -> tuple[float, float]:
    """(false-positive, false-negative) areas of the S-curve around ``threshold``."""
    lo = np.linspace(0.0, threshold, _GRID)
    hi = np.linspace(threshold, 1.0, _GRID)
    fp = float(np.trapezoid(candidate_probability(lo, bands, rows), lo))
    fn = float(np.trapezoid(1.0 - candidate_probability(hi, bands, rows), hi))
    return fp, fn


def shapes(num_perm: int, layers: int = 1) -> Iterator[tuple[int, int]]:
    """Every (bands, rows) over ``num_perm`` values the search considers (see the module)."""
    for rows in range(num_perm, 0, -1):
        if num_perm % rows:
            continue
        per_layer = num_perm // rows
        second = layers >= 2 and allows_second_layer(rows, num_perm)
        for bands in range(per_layer, (2 * per_layer if second else per_layer) + 1):
            yield bands, rows


@functools.lru_cache(maxsize=64)
def optimal_shape(
    threshold: float, num_perm: int, fp_weight: float = 0.5, layers: int = 1
) -> tuple[int, int]:
    """The shape of least weighted error among :func:`shapes` ``(num_perm, layers)``. Kept per
    argument: the search takes about 0.01 s (125 shapes at 128 permutations with two layers), and
    a run asks for its shape several times."""
    best = (float("inf"), 1, num_perm)
    for bands, rows in shapes(num_perm, layers):
        fp, fn = error_integrals(threshold, bands, rows)
        err = fp_weight * fp + (1.0 - fp_weight) * fn
        if err < best[0] - 1e-15:
            best = (err, bands, rows)
    return best[1], best[2]


def lsh_shape(lsh: LSHConfig, minhash: MinHashConfig) -> tuple[int, int]:
    """The shape to use: the configured one, or the optimal one."""
    if lsh.bands is not None and lsh.rows is not None:
        check_shape(lsh.bands, lsh.rows, minhash.num_perm)
        return lsh.bands, lsh.rows
    return optimal_shape(lsh.threshold, minhash.num_perm, lsh.fp_weight, lsh.layers)


def second_layer_bands(bands: int, rows: int, num_perm: int) -> int:
    """How many of the bands are in the second layer (0 for a one-layer shape)."""
    return max(0, bands - num_perm // rows)


def describe_shape(bands: int, rows: int, num_perm: int) -> str:
    """``"61 bands x 4 rows, 29 of them in a second layer"`` (the layer said only when there is one).

    >>> describe_shape(20, 8, 128)
    '20 bands x 8 rows, 4 of them in a second layer'
    >>> describe_shape(16, 8, 128)
    '16 bands x 8 rows'
    """
    second = second_layer_bands(bands, rows, num_perm)
    return f"{bands} bands x {rows} rows" + (f", {second} of them in a second layer" if second else "")


def s_curve(threshold: float, bands: int, rows: int) -> dict[str, float]:
    """Candidate probability at threshold - 0.1, threshold and threshold + 0.1 (clipped)."""
    points = {
        "below": max(0.0, threshold - 0.1),
        "at": threshold,
        "above": min(1.0, threshold + 0.1),
    }
    out: dict[str, float] = {}
    for name, s in points.items():
        out[f"j_{name}"] = round(s, 6)
        out[f"p_{name}"] = float(candidate_probability(s, bands, rows))
    return out
