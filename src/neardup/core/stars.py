"""Connected components by large-star and small-star rounds, one partition of nodes at a time.

The two operations of Kiveris et al., "Connected Components in MapReduce and Beyond" (2014),
over edge arrays: each takes the edges grouped by one endpoint (every edge of each node in the
partition), so a distributed engine runs them on partitions of the nodes side by side, with a
shuffle between. Alternated, they turn any graph into stars whose centres are their
components' smallest nodes: the roots :func:`~neardup.core.clusters.components` gives.

A round is over when :func:`large_star` finds no *unsettled* node: a node with both a smaller and
a larger neighbour, or with two smaller ones. A graph with none is a set of stars centred on
their components' smallest nodes, and large-star leaves it as it is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Edges(NamedTuple):
    """``a[k] < b[k]``: the edges a star operation emits (no self-loops, maybe repeated)."""

    a: np.ndarray
    b: np.ndarray


def _grouped(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(u, v)`` sorted by ``u`` then ``v`` with repeats dropped, each group's start, and its length."""
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    if u.size:
        fresh = np.ones(u.size, dtype=bool)
        fresh[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
        u, v = u[fresh], v[fresh]
    starts = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1]))) if u.size else np.empty(0, np.int64)
    lengths = np.diff(np.append(starts, u.size))
    return u, v, starts, lengths


def large_star(u: np.ndarray, v: np.ndarray) -> tuple[Edges, int]:
    """Large-star over the neighbours ``v[k]`` of nodes ``u[k]`` (every neighbour of each node
    given, both directions of each edge): each larger neighbour of a node is joined to the
    node's smallest neighbour-or-self. Returns the new edges and the number of unsettled nodes."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    u, v, starts, lengths = _grouped(u, v)
    if u.size == 0:
        return Edges(np.empty(0, np.int64), np.empty(0, np.int64)), 0
    nodes = u[starts]
    least = np.minimum(v[starts], nodes)  # v is sorted within each group
    below = np.add.reduceat((v < u).astype(np.int64), starts)
    above = lengths - below
    unsettled = int(np.count_nonzero(((below > 0) & (above > 0)) | (below >= 2)))
    up = v > u
    return Edges(np.repeat(least, lengths)[up], v[up]), unsettled


def small_star(a: np.ndarray, b: np.ndarray) -> Edges:
    """Small-star over the edges ``a[k] < b[k]`` grouped by their larger end ``b``: each node and
    its smaller neighbours are joined to the smallest of them."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    node, smaller, starts, lengths = _grouped(b, a)
    if node.size == 0:
        return Edges(np.empty(0, np.int64), np.empty(0, np.int64))
    least = smaller[starts]
    centre = np.repeat(least, lengths)
    others = smaller != centre  # the smaller neighbours other than the least one
    return Edges(
        np.concatenate((centre[others], least)),
        np.concatenate((smaller[others], node[starts])),
    )
