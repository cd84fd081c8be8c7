"""Dedup a corpus larger than memory: the four stages over a work directory.

:func:`dedup_external` streams the input, spills what it computes to a work
directory and keeps only bounded chunks (plus a few arrays of one value per
document) in memory. It decides exactly what :func:`find_duplicates` decides on
the same rows: the same signatures, buckets, candidate pairs, verified edges
and clusters. Each stage commits its progress as it goes; calling again with
the same work directory and ``resume=True`` skips the finished stages and
continues an interrupted one from its last commit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from neardup.config import DedupConfig
from neardup.core.clusters import Clusters
from neardup.core.lsh import Buckets
from neardup.core.params import lsh_shape
from neardup.engines import candidates, clusters, signatures, verify
from neardup.engines.context import Context
from neardup.engines.manifest import STAGES, locked, open_work_dir
from neardup.engines.plan import Plan
from neardup.engines.source import Source, fingerprint, table_source
from neardup.engines.spill import PROGRESS, Journal, load, memmap, read_json
from neardup.io.frames import arrow_table, is_frame
from neardup.pipeline import DedupResult, Pairs, Progress
from neardup.sizes import memory_limit_bytes


@dataclass
class ExternalResult(DedupResult):
    """A :class:`DedupResult` whose large arrays are memory maps of the work directory.

    ``signatures``, ``pairs`` and ``buckets`` are read-only ``numpy.memmap``
    views of the spill files (valid while the work directory exists); the
    per-document arrays (clusters, shingle counts) are in memory. ``seconds``
    has ``signatures``, ``candidates``, ``shingles`` (verification's second
    read of the input), ``verify`` and ``clusters``, each summed over resumed
    attempts; ``ran`` names the stages that did work in this call.
    """

    work_dir: Path | None = None
    ran: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    """Stages an earlier, interrupted call finished (or began: this call went on from its last commit)."""
    memory_limit: int = 0

    def summary(self) -> dict[str, Any]:
        """:meth:`DedupResult.summary` plus the engine's own facts under ``"engine"``."""
        out = super().summary()
        out["engine"] = {
            "mode": "streaming",
            "work_dir": None if self.work_dir is None else str(self.work_dir),
            "memory_limit": self.memory_limit,
            "stages_run": list(self.ran),
            "stages_resumed": list(self.resumed),
        }
        return out


def _noop(stage: str, done: int, total: int) -> None:
    return None


def dedup_external(
    source: Source | pa.Table | Any,
    config: DedupConfig | None = None,
    *,
    work_dir: str | os.PathLike[str],
    memory_limit: int | str | None = None,
    text_column: str = "text",
    progress: Progress | None = None,
    resume: bool = True,
    input_identity: Mapping[str, Any] | None = None,
) -> ExternalResult:
    """Find near-duplicates in a stream of Arrow batches, within ``memory_limit`` (bytes, or a size
    such as ``"6GB"``).

    ``source()`` must return a fresh iterable of ``pyarrow.RecordBatch`` or
    ``pyarrow.Table`` with the same rows in the same order every time (it is
    read twice when verification is on); row ``i`` is document ``i``. A table
    may be passed instead, or any frame :func:`neardup.dedup` takes (polars, duckdb, pandas,
    ``datasets.Dataset``: its text column is taken, without copying where Arrow allows).
    ``memory_limit`` (default: a quarter of physical memory) bounds the stages' working sets;
    it sets chunk and partition sizes and never changes the result. ``progress(stage, done, total)`` reports
    ``signatures`` and ``shingles`` (rows; total 0 while unknown),
    ``candidates`` (partitions), ``verify`` (candidate pairs) and ``clusters``.

    With ``resume`` (default) a work directory from an interrupted run with the
    same settings and input is continued; one from other settings or input is
    refused (:class:`ConfigError`, :class:`InputError`). ``resume=False``
    starts over, removing the engine's files from ``work_dir``. The input is
    recognised by a digest of its first rows, and by ``input_identity`` (JSON
    facts such as its files' sizes and times) when given.
    """
    cfg = config or DedupConfig()
    if not isinstance(source, pa.Table) and is_frame(source):
        source = arrow_table(source, columns=[text_column])
    src = table_source(source) if isinstance(source, pa.Table) else source
    bands, _ = lsh_shape(cfg.lsh, cfg.minhash)
    plan = Plan.for_limit(memory_limit_bytes(memory_limit), cfg, bands)
    work = Path(work_dir)
    with locked(work):
        return _run(
            src,
            cfg,
            work=work,
            plan=plan,
            text_column=text_column,
            progress=progress or _noop,
            resume=resume,
            identity=None if input_identity is None else dict(input_identity),
        )


def _run(
    src: Source,
    cfg: DedupConfig,
    *,
    work: Path,
    plan: Plan,
    text_column: str,
    progress: Progress,
    resume: bool,
    identity: dict[str, Any] | None,
) -> ExternalResult:
    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    input_print = fingerprint(src, text_column)
    if identity is not None:
        input_print["identity"] = identity
    open_work_dir(work, config=cfg, text_column=text_column, input_print=input_print, resume=resume)
    ctx = Context(
        config=cfg,
        bands=bands,
        rows=rows,
        plan=plan,
        work_dir=work,
        source=src,
        text_column=text_column,
        progress=progress,
    )
    n = signatures.run(ctx)
    cand = candidates.run(ctx, n)
    candidate_count = int(cand.state["candidates"])
    edges = verify.run(ctx, n, candidate_count)
    edge_count = int(edges.state["edges"])
    clusters.run(ctx, n, edge_count)
    return _result(ctx, n, cand, edge_count)


def _result(ctx: Context, n: int, cand: Journal, edge_count: int) -> ExternalResult:
    cfg = ctx.config
    sig_dir, cand_dir = ctx.stage_dir("signatures"), ctx.stage_dir("candidates")
    ver_dir, clu_dir = ctx.stage_dir("verify"), ctx.stage_dir("clusters")
    n_buckets = cand.count(candidates.BAND)
    n_members = cand.count(candidates.MEMBERS)
    candidate_count = int(cand.state["candidates"])
    seconds = {}
    resumed = []
    for stage in STAGES:
        saved = read_json(ctx.stage_dir(stage) / PROGRESS) or {}
        seconds[stage] = float(saved.get("seconds", 0.0))
        if stage not in ctx.ran or int(saved.get("starts", 1)) > 1:
            resumed.append(stage)
        if stage == "verify":  # its first pass (re-reading the input) on its own
            seconds["shingles"] = float(saved.get("state", {}).get("shingle_seconds", 0.0))
            seconds["verify"] -= seconds["shingles"]
    return ExternalResult(
        config=cfg,
        bands=ctx.bands,
        rows=ctx.rows,
        clusters=Clusters(
            cluster=load(clu_dir / clusters.CLUSTER, n),
            representative=load(clu_dir / clusters.REPRESENTATIVE, n),
            keep=load(clu_dir / clusters.KEEP, n),
        ),
        pairs=Pairs(
            left=memmap(ver_dir / verify.LEFT, edge_count),
            right=memmap(ver_dir / verify.RIGHT, edge_count),
            jaccard=memmap(ver_dir / verify.JACCARD, edge_count),
            estimated=memmap(ver_dir / verify.ESTIMATED, edge_count),
            exact=cfg.verify,
        ),
        buckets=Buckets(
            band=memmap(cand_dir / candidates.BAND, n_buckets),
            key=memmap(cand_dir / candidates.KEY, n_buckets),
            offsets=memmap(cand_dir / candidates.OFFSETS, n_buckets + 1),
            members=memmap(cand_dir / candidates.MEMBERS, n_members),
        ),
        signatures=memmap(sig_dir / signatures.SIGNATURES, n, cfg.minhash.num_perm),
        shingle_counts=load(sig_dir / signatures.COUNTS, n),
        candidate_count=candidate_count,
        seconds=seconds,
        work_dir=ctx.work_dir,
        ran=tuple(ctx.ran),
        resumed=tuple(resumed),
        memory_limit=ctx.plan.memory_limit,
    )
