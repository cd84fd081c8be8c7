"""Stage 4: clusters and keepers from the verified edges.

Edges that fit the plan go to :func:`assign_clusters` as they are. More are
folded a chunk at a time into the components' roots: each pass runs
:func:`components` over the next chunk plus one edge ``(i, root[i])`` per
document not yet its own root, which keeps the connectivity and so the roots
(a root is its component's smallest document). :func:`assign_clusters` then
gets those star edges: the same components, so the same clusters.

Files: ``cluster.i64``, ``representative.i64``, ``keep.bool``.
"""

from __future__ import annotations

import numpy as np

from neardup.core.clusters import assign_clusters, components
from neardup.engines.context import Context, Lap
from neardup.engines.signatures import LENGTHS
from neardup.engines.spill import Journal, load, read_values
from neardup.engines.verify import LEFT, RIGHT

CLUSTER = "cluster.i64"
REPRESENTATIVE = "representative.i64"
KEEP = "keep.bool"
FILES = (CLUSTER, REPRESENTATIVE, KEEP)


def _star_edges(ctx: Context, n: int, edges: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges with the same components as the verified ones, at most one per document."""
    verify_dir = ctx.stage_dir("verify")
    step = ctx.plan.edge_chunk
    idx = np.arange(n, dtype=np.int64)
    root = idx
    for lo in range(0, edges, step):
        left = read_values(verify_dir / LEFT, lo, min(step, edges - lo))
        right = read_values(verify_dir / RIGHT, lo, left.size)
        moved = np.flatnonzero(root != idx)
        root = components(n, np.concatenate((left, moved)), np.concatenate((right, root[moved])))
    moved = np.flatnonzero(root != idx)
    return moved, root[moved]


def run(ctx: Context, n: int, edges: int) -> Journal:
    """Run (or redo) the stage; the clusters are in its files."""
    with Journal(ctx.stage_dir("clusters"), FILES) as journal:
        if not journal.done:
            _run(ctx, journal, n=n, edges=edges)
    return journal


def _run(ctx: Context, journal: Journal, *, n: int, edges: int) -> None:
    ctx.ran.append("clusters")
    journal.begin()
    lap = Lap()
    ctx.progress("clusters", 0, 1)
    cfg = ctx.config
    verify_dir = ctx.stage_dir("verify")
    if edges <= ctx.plan.edge_chunk:
        left, right = load(verify_dir / LEFT, edges), load(verify_dir / RIGHT, edges)
    else:
        left, right = _star_edges(ctx, n, edges)
    lengths = None if cfg.keep == "first" else load(ctx.stage_dir("signatures") / LENGTHS, n)
    clusters = assign_clusters(n, left, right, keep=cfg.keep, lengths=lengths)
    journal.append(CLUSTER, clusters.cluster)
    journal.append(REPRESENTATIVE, clusters.representative)
    journal.append(KEEP, clusters.keep)
    journal.commit(seconds=lap(), done=True)
    ctx.progress("clusters", 1, 1)
