"""Choosing the LSH shape: (bands, rows) for a threshold.

A pair with Jaccard ``s`` becomes a candidate with probability
``1 - (1 - s**rows)**bands``. The chosen shape minimises
``fp_weight * FP + (1 - fp_weight) * FN``, where FP integrates that
probability below the threshold and FN integrates its complement above,
over every (bands, rows) with ``bands * rows == num_perm``.
"""

from __future__ import annotations

import numpy as np

from neardup.config import LSHConfig, MinHashConfig
from neardup.errors import ConfigError

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


def optimal_shape(threshold: float, num_perm: int, fp_weight: float = 0.5) -> tuple[int, int]:
    """The (bands, rows) with ``bands * rows == num_perm`` of least weighted error."""
    best = (float("inf"), 1, num_perm)
    for bands in range(1, num_perm + 1):
        if num_perm % bands:
            continue
        rows = num_perm // bands
        fp, fn = error_integrals(threshold, bands, rows)
        err = fp_weight * fp + (1.0 - fp_weight) * fn
        if err < best[0] - 1e-15:
            best = (err, bands, rows)
    return best[1], best[2]


def lsh_shape(lsh: LSHConfig, minhash: MinHashConfig) -> tuple[int, int]:
    """The shape to use: the configured one, or the optimal one."""
    if lsh.bands is not None and lsh.rows is not None:
        if lsh.bands * lsh.rows != minhash.num_perm:
            raise ConfigError(
                f"bands * rows must equal num_perm: {lsh.bands} * {lsh.rows} = "
                f"{lsh.bands * lsh.rows}, num_perm = {minhash.num_perm}"
            )
        return lsh.bands, lsh.rows
    return optimal_shape(lsh.threshold, minhash.num_perm, lsh.fp_weight)


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
