"""The Ray engine's driver: it plans the splits and partitions, runs each stage's tasks, keeps a
stage's figures in the work location once it is done, and turns them into ``summary.json``.

Stages, each a set of Ray Data tasks (:mod:`~neardup.engines.ray.tasks`):

``signatures``  per split: read, signatures, band keys; band records shuffled by (band, key)
``buckets``     per bucket partition: buckets, candidate pairs with the star rule
``pairs``       per document range: the candidates made unique; requests for their documents
``documents``   per split: the requested documents' shingle sets, ids and signatures
``verify``      per document range: exact Jaccard of each candidate, the edges kept
``empties``     per split, with ``match_empty``: the edges joining documents without shingles
``large-star-R``, ``small-star-R``  rounds until every component is a star on its smallest node
``members``, ``keepers``, ``ranks``  representatives by the keeper policy, then cluster ids
``bucket-ids``  per split: the ids of the buckets' members
``write``       the output tables, a part per split or partition

A stage whose figures are in the work location is not run again: a run that failed, or whose
driver was killed, resumes from the first unfinished stage when started again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.config import DedupConfig
from neardup.core.params import lsh_shape, s_curve
from neardup.engines.ray import tasks
from neardup.engines.ray.location import Location
from neardup.engines.ray.session import run_tasks
from neardup.engines.ray.splits import Split, list_inputs, plan_splits
from neardup.engines.ray.tasks import Layout, Plan
from neardup.errors import ConfigError, InputError
from neardup.io import ReadOptions
from neardup.io.writers import OUTPUT_FORMATS, OUTPUT_TABLES
from neardup.pipeline import Progress

MANIFEST_VERSION = 1
MIN_SPLIT_BYTES = 1 << 20
"""Splits are cut smaller than asked, to give every CPU two, but not below this."""
PARTITION_BYTES = 256 << 20
"""Bytes of input per document-range partition, when the partitions are not given."""
_I64 = pa.int64()
_ROW_TABLES = ("annotated", "deduped", "duplicates")


def default_partitions(input_bytes: int, cpus: int) -> int:
    """Two partitions per CPU, or one per ``PARTITION_BYTES`` of input if that is more."""
    return max(2 * max(1, cpus), math.ceil(input_bytes / PARTITION_BYTES))


class RayDedup:
    """One run of the Ray engine over ``inputs`` into ``output`` (a folder of one folder of parts
    per table), keeping its stages in ``work``."""

    def __init__(
        self,
        inputs: Sequence[str],
        *,
        options: ReadOptions,
        config: DedupConfig,
        work: Location,
        output: Location,
        output_format: str | None,
        outputs: tuple[str, ...],
        partitions: int | None,
        cpus: int,
        resume: bool = True,
        progress: Progress | None = None,
        split_bytes: int,
    ) -> None:
        if options.on_error != "stop":
            raise ConfigError(
                "the Ray engine stops at the first bad record; on_error='skip' runs on the local engine"
            )
        if partitions is not None and partitions < 1:
            raise ConfigError(f"partitions must be at least 1, not {partitions}")
        self.inputs = [str(i) for i in inputs]
        self.options = options
        self.config = config
        self.work = work
        self.output = output
        self.output_format = output_format
        self.outputs = outputs
        self.partitions = partitions
        self.cpus = cpus
        self.resume = resume
        self.progress = progress or (lambda stage, done, total: None)
        self.split_bytes = split_bytes
        self.ran: list[str] = []
        self.resumed: list[str] = []
        self.stage_seconds: dict[str, float] = {}
        self.shuffled: dict[str, int] = {}
        self.task_seconds: dict[str, float] = {}

    # -- stages -------------------------------------------------------------------------------

    def _stage(
        self, name: str, items: list[Any], work: Callable[[Any], dict[str, Any]], report: str
    ) -> list[dict[str, Any]]:
        """The stage's figures: from the work location when it is done, else from running it."""
        marker = ("stages", f"{name}.json")
        done = self.work.read_json(*marker)
        if done is not None:
            self.resumed.append(name)
            figures: list[dict[str, Any]] = done["figures"]
        else:
            t0 = time.perf_counter()
            self.progress(report, 0, len(items))
            figures = run_tasks(name, items, work, lambda k, total: self.progress(report, k, total))
            self.ran.append(name)
            self.work.write_json({"figures": figures, "seconds": time.perf_counter() - t0}, *marker)
            done = {"seconds": time.perf_counter() - t0}
        self.stage_seconds[name] = round(float(done["seconds"]), 4)
        self.shuffled[name] = sum(int(f.get("shuffled", 0)) for f in figures)
        self.task_seconds[name] = round(sum(float(f.get("task_seconds", 0.0)) for f in figures), 4)
        return figures

    def _manifest(self, files: list[Any]) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "config": self.config.to_dict(),
            "read": asdict(self.options),
            "inputs": [[f.name, f.size, f.mtime] for f in files],  # no credentials kept
            "partitions": self.partitions,
            "split_bytes": self.split_bytes,
        }

    def _open_work(self, files: list[Any]) -> None:
        ours = self._manifest(files)
        theirs = self.work.read_json("manifest.json")
        if theirs is not None and (not self.resume or theirs != ours):
            if self.resume:
                changed = [k for k in ours if theirs.get(k) != ours[k]]
                raise ConfigError(
                    f"the work location {self.work} holds a run with other {', '.join(changed)}; run with "
                    "resume off (--no-resume) to start again there, or give another work location"
                )
            self.work.delete()
        if theirs is None or not self.resume:
            self.work.make_dirs()
            self.work.write_json(ours, "manifest.json")

    def run(self) -> dict[str, Any]:
        """Run (or finish) every stage; returns the figures of ``summary.json`` but the inputs'."""
        t_start = time.perf_counter()
        files = list_inputs(self.inputs)
        self.files = files
        self._open_work(files)
        splits, partitions = self._layout_of(files)
        bands, rows = lsh_shape(self.config.lsh, self.config.minhash)
        bits = 0
        while (bands << bits) < partitions and bits < 16:
            bits += 1
        fmt = self.output_format or ("parquet" if files[0].family == "parquet" else "jsonl")
        if fmt not in ("jsonl", "parquet"):
            raise ConfigError(f"the Ray engine writes jsonl or parquet, not {fmt}")
        plan = Plan(
            work=self.work,
            output=self.output,
            config=self.config,
            options=self.options,
            splits=tuple(splits),
            files=len(files),
            bands=bands,
            rows=rows,
            bucket_bits=bits,
            partitions=partitions,
            output_format=fmt,
            outputs=self.outputs,
        )
        self.plan = plan
        split_ids = list(range(len(splits)))

        signed = self._stage("signatures", split_ids, partial(tasks.sign, plan), "signatures")
        n_of = [int(f["rows"]) for f in signed]
        firsts = tuple(int(x) for x in np.concatenate(([0], np.cumsum(n_of, dtype=np.int64))))
        n = firsts[-1]
        if n == 0:
            raise InputError("no records to deduplicate", path=", ".join(self.inputs))
        layout = self._layout(plan, signed, firsts)
        parts = list(range(partitions))
        found = self._stage(
            "buckets", list(range(plan.bucket_parts)), partial(tasks.buckets, plan, layout), "buckets"
        )
        repeats = [f["repeated_id"] for f in found if f.get("repeated_id")]
        if repeats:  # ids are unique, as the local engine checks: the first repeat is named
            raise tasks.repeated_id_error(plan, layout, min(repeats, key=lambda r: r["doc"]))
        paired = self._stage("pairs", parts, partial(tasks.unique_pairs, plan, layout), "pairs")
        id_type = layout.id_type
        sets_schema = pa.schema(
            [
                ("doc", _I64),
                ("id", id_type),
                ("signature", pa.binary(4 * self.config.minhash.num_perm)),
                ("shingles", pa.large_list(pa.uint64())),
            ]
        )
        self._stage("documents", split_ids, partial(tasks.document_sets, plan, layout), "verify")
        verified = self._stage(
            "verify", parts, partial(tasks.verify, plan, layout, sets_schema=sets_schema), "verify"
        )
        empties: list[dict[str, Any]] = []
        if self.config.match_empty and layout.first_empty >= 0:
            with_empty = [s for s, f in zip(split_ids, signed, strict=True) if f["empty"]]
            empties = self._stage("empties", with_empty, partial(tasks.empty_edges, plan, layout), "verify")

        final, maps = self._components(plan, layout)
        member_schema = pa.schema([("centre", _I64), ("doc", _I64), ("score", _I64), ("id", id_type)])
        cluster_schema = pa.schema(
            [
                ("rep", _I64),
                ("rep_id", id_type),
                ("size", _I64),
                ("members", pa.large_list(_I64)),
                ("member_ids", pa.large_list(id_type)),
            ]
        )
        assign_schema = pa.schema(
            [("doc", _I64), ("rank", _I64), ("part", _I64), ("rep", _I64), ("rep_id", id_type)]
        )
        grouped = self._stage(
            "members", parts, partial(tasks.members, plan, layout, final, maps=maps), "clusters"
        )
        self._stage(
            "keepers", parts, partial(tasks.keepers, plan, layout, member_schema=member_schema), "clusters"
        )
        ranked = self._stage(
            "ranks",
            parts,
            partial(tasks.cluster_ranks, plan, layout, cluster_schema=cluster_schema),
            "clusters",
        )
        counts = [int(f["clusters"]) for f in ranked]
        offsets = tuple(int(x) for x in np.concatenate(([0], np.cumsum(counts, dtype=np.int64))))
        if "lsh_buckets" in self.outputs:
            self._stage("bucket-ids", split_ids, partial(tasks.bucket_ids, plan, layout), "write")
        t_write = time.perf_counter()
        self._write(plan, layout, offsets, assign_schema, cluster_schema)
        write_seconds = time.perf_counter() - t_write

        clustered = sum(int(f["members"]) for f in grouped)
        clusters = offsets[-1]
        removed = clustered - clusters
        edges = sum(int(f["verified"]) for f in verified) + sum(int(f["edges"]) for f in empties)
        lsh = self.config.lsh
        seconds = self._stage_groups()
        seconds["write"] = round(write_seconds, 4)
        return {
            "input_rows": n,
            "null_texts": sum(int(f.get("null_texts", 0)) for f in signed),
            "empty_documents": sum(int(f["empty"]) for f in signed),
            "num_perm": self.config.minhash.num_perm,
            "seed": self.config.minhash.seed,
            "sketch": self.config.minhash.sketch,
            "bands": bands,
            "rows": rows,
            "threshold": lsh.threshold,
            "s_curve": s_curve(lsh.threshold, bands, rows),
            "shingle": self.config.shingle.mode,
            "ngram": self.config.shingle.n,
            "buckets_with_collisions": sum(int(f["buckets"]) for f in found),
            "candidate_pairs": sum(int(f["candidates"]) for f in paired),
            # as the local engine counts them: the edges, with match_empty's among them
            "verified_pairs": edges if self.config.verify else None,
            "edges": edges,
            "jaccard": "exact" if self.config.verify else "estimated",
            "clusters": clusters,
            "duplicates_removed": removed,
            "kept_rows": n - removed,
            "kept_ratio": round((n - removed) / n, 6),
            "seconds": seconds,
            "config": self.config.to_dict(),
            "engine": {
                "mode": "ray",
                "work_dir": str(self.work),
                "splits": len(splits),
                "partitions": partitions,
                "bucket_partitions": plan.bucket_parts,
                "output_format": fmt,
                "stages_run": list(self.ran),
                "stages_resumed": list(self.resumed),
                "stage_seconds": dict(self.stage_seconds),
                "task_seconds": dict(self.task_seconds),
                "bytes_shuffled": {k: v for k, v in self.shuffled.items() if v},
                "total_seconds": round(time.perf_counter() - t_start, 4),
            },
        }

    def _layout_of(self, files: list[Any]) -> tuple[list[Split], int]:
        """The splits and partitions: as a run in this work location first chose them (a cluster
        of another size resumes the same work), else chosen now and kept."""
        kept = self.work.read_json("layout.json")
        if kept is not None:
            return [Split.from_dict(d) for d in kept["splits"]], int(kept["partitions"])
        input_bytes = sum(f.size for f in files)
        # at least two splits per CPU where the input is small (not below 1 MiB, unless asked)
        per_cpu = -(-input_bytes // (2 * max(1, self.cpus)))
        split_bytes = min(self.split_bytes, max(per_cpu, min(self.split_bytes, MIN_SPLIT_BYTES)))
        splits = plan_splits(files, split_bytes)
        partitions = self.partitions or default_partitions(input_bytes, self.cpus)
        self.work.write_json(
            {"splits": [s.to_dict() for s in splits], "partitions": partitions}, "layout.json"
        )
        return splits, partitions

    def _layout(self, plan: Plan, signed: list[dict[str, Any]], firsts: tuple[int, ...]) -> Layout:
        id_type: pa.DataType = _I64
        if self.options.id_column is not None:
            some = next(k for k, f in enumerate(signed) if f["rows"])
            id_type = (
                plan.work.read_parquet("signatures", f"split-{some:06d}.parquet", columns=["id"])
                .schema.field("id")
                .type
            )
        first_empty, first_empty_id = -1, None
        for k, f in enumerate(signed):
            if int(f["first_empty"]) >= 0:
                first_empty = firsts[k] + int(f["first_empty"])
                first_empty_id = f["first_empty_id"] if self.options.id_column is not None else first_empty
                break
        own = frozenset(k for k, f in enumerate(signed) if f.get("own_source"))
        return Layout(
            firsts=firsts,
            id_type=id_type,
            first_empty=first_empty,
            first_empty_id=first_empty_id,
            own_sources=own,
        )

    def _components(self, plan: Plan, layout: Layout) -> tuple[int, int]:
        """Large-star and small-star rounds until no node is unsettled; the round whose
        neighbour lists are stars, and how many map files that round's shuffle has."""
        maps = plan.partitions + len(plan.splits)  # verify's partitions, then empties' splits
        parts = list(range(plan.partitions))
        round_ = 0
        while True:
            large = self._stage(
                f"large-star-{round_}",
                parts,
                partial(tasks.large_star_step, plan, layout, round_, maps=maps),
                "clusters",
            )
            if sum(int(f["unsettled"]) for f in large) == 0:
                return round_, maps
            self._stage(
                f"small-star-{round_}",
                parts,
                partial(tasks.small_star_step, plan, layout, round_),
                "clusters",
            )
            round_ += 1
            maps = plan.partitions

    def _write(
        self,
        plan: Plan,
        layout: Layout,
        offsets: tuple[int, ...],
        assign_schema: pa.Schema,
        cluster_schema: pa.Schema,
    ) -> None:
        # Into a URI, summary.json goes first and comes back last: a folder without it is not a
        # finished run's; the tables not chosen go too, and every table's files of a local run
        # (which readers would take before a folder). Into a staging folder this finds nothing.
        plan.output.delete("summary.json")
        for name in OUTPUT_TABLES:
            plan.output.delete(name)
            for fmt in OUTPUT_FORMATS:
                plan.output.delete(f"{name}.{fmt}")
        id_type = layout.id_type
        edge_schema = pa.schema(
            [
                ("left", _I64),
                ("right", _I64),
                ("id_a", id_type),
                ("id_b", id_type),
                ("jaccard", pa.float64()),
                ("estimated", pa.float64()),
            ]
        )
        items: list[tuple[str, int]] = []
        if any(t in self.outputs for t in _ROW_TABLES):
            items += [("rows", s) for s in range(len(plan.splits))]
        if "clusters" in self.outputs:
            items += [("clusters", p) for p in range(plan.partitions)]
        if "candidate_pairs" in self.outputs:
            items += [("pairs", p) for p in range(plan.partitions)]
            if self.config.match_empty and layout.first_empty >= 0:
                items += [
                    ("pairs", plan.partitions + s)
                    for s in range(len(plan.splits))
                    if plan.work.exists("edges", f"part-{plan.partitions + s:06d}.parquet")
                ]
        if "lsh_buckets" in self.outputs:
            items += [("buckets", p) for p in range(plan.bucket_parts)]
        id_schema = pa.schema([("doc", _I64), ("id", id_type)])

        def write(item: tuple[str, int]) -> dict[str, Any]:
            kind, k = item
            if kind == "rows":
                return tasks.write_rows(plan, layout, k, offsets, assign_schema)
            if kind == "clusters":
                return tasks.write_clusters(plan, layout, k, offsets[k], cluster_schema)
            if kind == "pairs":
                return tasks.write_pairs(plan, layout, k, edge_schema)
            return tasks.write_buckets(plan, layout, k, id_schema)

        self.work.delete("stages", "write.json")  # the output folder was emptied: write it again
        self._stage("write", items, write, "write")

    def _stage_groups(self) -> dict[str, float]:
        """Seconds per stage of the local engine's kind (``summary.json``'s ``seconds``)."""
        groups = {
            "signatures": ("signatures",),
            "buckets": ("buckets",),
            "pairs": ("pairs",),
            "verify": ("documents", "verify", "empties"),
        }
        out: dict[str, float] = {}
        for group, names in groups.items():
            out[group] = round(sum(self.stage_seconds.get(n, 0.0) for n in names), 4)
        out["clusters"] = round(
            sum(
                s
                for n, s in self.stage_seconds.items()
                if n.startswith(("large-star", "small-star")) or n in ("members", "keepers", "ranks")
            ),
            4,
        )
        return out
