"""Connected components of the duplicate graph and the keeper policy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup.config import KeepPolicy
from neardup.core.jit import njit
from neardup.core.sorting import sorted_unique


@dataclass(frozen=True)
class Clusters:
    """Per-document cluster facts.

    ``cluster`` is a dense id (0, 1, ... ordered by representative position)
    for documents in a cluster of two or more, and -1 for singletons;
    ``representative`` is the index of the document kept for each document
    (itself for singletons and representatives).
    """

    cluster: np.ndarray  # int64
    representative: np.ndarray  # int64
    keep: np.ndarray  # bool

    @property
    def n_clusters(self) -> int:
        return int(self.cluster.max()) + 1 if self.cluster.size else 0

    def groups(self) -> list[np.ndarray]:
        """Member indices of each cluster, in cluster-id order."""
        members = np.flatnonzero(self.cluster >= 0)
        order = np.argsort(self.cluster[members], kind="stable")
        members = members[order]
        bounds = np.flatnonzero(np.diff(self.cluster[members])) + 1
        return np.split(members, bounds) if members.size else []


@njit(cache=True)
def _find(parent: np.ndarray, x: int) -> int:
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:  # path compression
        nxt = parent[x]
        parent[x] = root
        x = nxt
    return root


@njit(cache=True)
def components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Root of each document's component; a root is its component's smallest index."""
    parent = np.arange(n, dtype=np.int64)
    for k in range(left.size):
        a = _find(parent, left[k])
        b = _find(parent, right[k])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for i in range(n):
        parent[i] = _find(parent, i)
    return parent


def assign_clusters(
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    *,
    keep: KeepPolicy = "first",
    lengths: np.ndarray | None = None,
) -> Clusters:
    """Clusters from the edges ``(left[k], right[k])`` and a keeper policy.

    ``first`` keeps the smallest input position; ``longest``/``shortest``
    keep the member with the largest/smallest ``lengths`` (ties: first).
    """
    root = components(n, np.asarray(left, np.int64), np.asarray(right, np.int64))
    idx = np.arange(n, dtype=np.int64)
    size = np.bincount(root, minlength=n)
    in_cluster = size[root] >= 2
    if keep == "first" or lengths is None:
        rep_of_root = idx.copy()
    else:
        score = np.asarray(lengths, dtype=np.int64)
        score = -score if keep == "longest" else score
        order = np.lexsort((idx, score, root))  # by root, then score, then position
        first = np.ones(n, dtype=bool)
        first[1:] = root[order][1:] != root[order][:-1]
        rep_of_root = np.empty(n, dtype=np.int64)
        rep_of_root[root[order][first]] = order[first]
    representative = rep_of_root[root]
    cluster = np.full(n, -1, dtype=np.int64)
    reps = sorted_unique(representative[in_cluster])  # ascending positions
    cluster[in_cluster] = np.searchsorted(reps, representative[in_cluster])
    keep_mask = representative == idx
    return Clusters(cluster=cluster, representative=representative, keep=keep_mask)


@njit(cache=True)
def _contained_representatives(
    order: np.ndarray, starts: np.ndarray, outer: np.ndarray, representative: np.ndarray, keep: np.ndarray
) -> None:
    for d in order:
        for k in range(starts[d], starts[d + 1]):
            if keep[outer[k]]:
                keep[d] = False
                representative[d] = outer[k]
                break


def assign_contained(
    n: int, inner: np.ndarray, outer: np.ndarray, containment: np.ndarray, sizes: np.ndarray
) -> Clusters:
    """Clusters from containment edges: ``inner[k]`` holds ``containment[k]`` of its shingles in
    the at least as large ``outer[k]`` (``sizes``: shingles per document).

    Documents are decided from the largest down (ties: the earliest first): one goes when it is
    in an edge with a document already kept, and that document (the edge of highest containment,
    ties: the earliest) becomes its representative. A document only ever points to a kept one,
    so, unlike components, two unrelated documents that each hold a third are never linked.
    """
    inner = np.asarray(inner, np.int64)
    outer = np.asarray(outer, np.int64)
    idx = np.arange(n, dtype=np.int64)
    by_edge = np.lexsort((outer, -np.asarray(containment, np.float64), inner))
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(inner, minlength=n), out=starts[1:])
    order = np.lexsort((idx, -np.asarray(sizes, np.int64)))
    representative = idx.copy()
    keep = np.ones(n, dtype=bool)
    _contained_representatives(order, starts, outer[by_edge], representative, keep)
    in_cluster = ~keep
    in_cluster[representative[~keep]] = True
    cluster = np.full(n, -1, dtype=np.int64)
    reps = sorted_unique(representative[in_cluster])
    cluster[in_cluster] = np.searchsorted(reps, representative[in_cluster])
    return Clusters(cluster=cluster, representative=representative, keep=keep)
