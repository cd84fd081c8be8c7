"""How close a clustering is to the truth, from label arrays: pair precision, recall and F1,
the adjusted Rand index, and how many removals were right.

Labels are one integer per row, equal for rows of one group (a row alone has a label of its own).
Everything comes from the contingency table of (predicted, true) label pairs, so the cost is one
sort of the rows, never a loop over pairs: a pair of rows is a true positive when both labels
agree, and there are ``sum C(n_ij, 2)`` of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class PairScores:
    """Pair counts and the scores made of them.

    With no predicted pairs precision is 1.0 (nothing claimed, nothing wrong); with no true pairs
    recall is 1.0 (nothing to find); F1 is 0.0 when precision and recall are both 0."""

    rows: int
    true_pairs: int
    predicted_pairs: int
    true_positive_pairs: int
    pair_precision: float
    pair_recall: float
    pair_f1: float
    ari: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _pairs(counts: np.ndarray) -> int:
    c = counts.astype(np.int64)
    return int((c * (c - 1) // 2).sum())


def dense_labels(labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered 0, 1, ... (in sorted order of the labels)."""
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def singletons_apart(cluster: np.ndarray) -> np.ndarray:
    """Cluster ids where -1 means "alone" turned into labels: each such row gets its own label."""
    out = cluster.astype(np.int64).copy()
    alone = np.flatnonzero(out < 0)
    top = int(out.max()) + 1 if out.size else 0
    out[alone] = top + np.arange(alone.size, dtype=np.int64)
    return out


def f1(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall`` (0.0 when both are 0)."""
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def pair_scores(predicted: np.ndarray, truth: np.ndarray) -> PairScores:
    """Pair precision, recall, F1 and the adjusted Rand index of ``predicted`` against ``truth``
    (label arrays of one length).

    >>> s = pair_scores(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, 1]))
    >>> (s.true_positive_pairs, s.predicted_pairs, s.true_pairs, round(s.ari, 4))
    (2, 4, 4, 0.1667)
    """
    if predicted.shape != truth.shape:
        raise ValueError(f"{predicted.size} predicted labels for {truth.size} true ones")
    n = int(predicted.size)
    p = dense_labels(predicted)
    t = dense_labels(truth)
    pred_pairs = _pairs(np.bincount(p)) if n else 0
    true_pairs = _pairs(np.bincount(t)) if n else 0
    width = int(t.max()) + 1 if n else 1
    cells = np.unique(p * width + t, return_counts=True)[1] if n else np.zeros(0, np.int64)
    tp = _pairs(cells)
    precision = tp / pred_pairs if pred_pairs else 1.0
    recall = tp / true_pairs if true_pairs else 1.0
    all_pairs = n * (n - 1) // 2
    expected = pred_pairs * true_pairs / all_pairs if all_pairs else 0.0
    best = (pred_pairs + true_pairs) / 2
    ari = 1.0 if best == expected else (tp - expected) / (best - expected)
    return PairScores(
        rows=n,
        true_pairs=true_pairs,
        predicted_pairs=pred_pairs,
        true_positive_pairs=tp,
        pair_precision=precision,
        pair_recall=recall,
        pair_f1=f1(precision, recall),
        ari=float(ari),
    )


@dataclass(frozen=True)
class RemovalScores:
    """Rows removed, how many of them duplicate their kept row in truth, and how many rows the
    truth would remove (one per true group is kept)."""

    removed: int
    correct_removals: int
    should_remove: int
    removal_precision: float
    removal_recall: float

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def removal_scores(truth: np.ndarray, is_duplicate: np.ndarray, representative: np.ndarray) -> RemovalScores:
    """Removal precision and recall: a removed row (``is_duplicate``) is right when its kept row
    (``representative``, a row position) is in its true group.

    >>> removal_scores(np.array([0, 0, 1, 1]), np.array([False, True, False, True]), np.array([0, 0, 2, 0]))
    RemovalScores(removed=2, correct_removals=1, should_remove=2, removal_precision=0.5, removal_recall=0.5)
    """
    removed = np.flatnonzero(is_duplicate)
    correct = int(np.count_nonzero(truth[removed] == truth[representative[removed]]))
    should = int(truth.size - np.unique(truth).size) if truth.size else 0
    return RemovalScores(
        removed=int(removed.size),
        correct_removals=correct,
        should_remove=should,
        removal_precision=correct / removed.size if removed.size else 1.0,
        removal_recall=correct / should if should else 1.0,
    )
