"""The report of a finished run as one plain, JSON-ready structure: :func:`build_report`.

Everything comes from the output folder, so a run of any engine can be reported on later:
``summary.json`` for the settings and figures, ``annotated`` for the texts and each row's cluster,
``candidate_pairs`` for the edges the run kept, and ``lsh_buckets`` for every candidate pair the
LSH produced (the candidates are rebuilt from the buckets with the run's own pairing rule, so the
pairs verification dropped are known too). Exact Jaccard is recomputed, with the run's kernels,
for a seeded sample of the candidates and for the members of the largest clusters against their
representative.

The structure stays small whatever the corpus: at most ``ReportLimits.max_docs`` texts (each cut
at ``max_text_chars``), a sample of candidate pairs for the histogram, the largest clusters only;
``sampling`` says what was left out.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup import __version__
from neardup.config import DedupConfig
from neardup.core.lsh import Buckets, candidate_pairs
from neardup.core.minhash import MinHasher
from neardup.core.params import candidate_probability
from neardup.core.shingles import shingle_sets
from neardup.engines.candidates import pack as _pack
from neardup.errors import InputError
from neardup.pipeline import arrow_to_batch, exact_jaccard_in_blocks
from neardup.report.diff import pair_diff, tokens_of
from neardup.report.tables import (
    as_strings,
    assignment_of,
    id_lists,
    positions_in,
    read_rows,
    read_summary,
    read_table,
    table_files,
)

REPORT_VERSION = 1


@dataclass(frozen=True)
class ReportLimits:
    """How much of a run the report holds (the page stays well under 20 MB)."""

    candidate_sample: int = 100_000
    """Candidate pairs whose exact Jaccard is recomputed for the histogram."""
    clusters_listed: int = 300
    """Largest clusters in the clusters table."""
    clusters_detailed: int = 25
    """Largest clusters whose members are compared with their representative."""
    members_compared: int = 200
    """Members per detailed cluster whose Jaccard to the representative is computed."""
    members_shown: int = 12
    """Members per detailed cluster with a side-by-side view."""
    near_threshold: int = 40
    """Pairs just above and just below the threshold."""
    sample_pairs: int = 120
    """Further pairs, drawn at random among the candidates, to browse."""
    max_docs: int = 2_500
    indexed_rows: int = 150_000
    """Rows in clusters whose id, cluster and representative the page's search knows (texts are
    only in it for ``max_docs`` documents)."""
    max_text_chars: int = 4_000
    max_tokens: int = 1_500
    seed: int = 0


def config_of(summary: dict[str, Any]) -> DedupConfig:
    """The run's settings from its summary."""
    c = summary.get("config") or {}
    text, shingle, minhash, lsh = (c.get(k) or {} for k in ("text", "shingle", "minhash", "lsh"))
    return DedupConfig.create(
        threshold=lsh.get("threshold"),
        shingle=shingle.get("mode"),
        ngram=shingle.get("n"),
        tokenizer=shingle.get("tokenizer"),
        num_perm=minhash.get("num_perm"),
        seed=minhash.get("seed"),
        # a run's config leaves the sketch out when it is classic (see DedupConfig.to_dict)
        sketch=minhash.get("sketch", "classic") if minhash else None,
        bands=summary.get("bands"),
        rows=summary.get("rows"),
        max_bucket_size=lsh.get("max_bucket_size"),
        nfkc=text.get("nfkc"),
        strip_accents=text.get("strip_accents"),
        lowercase=text.get("lowercase"),
        strip_punctuation=text.get("strip_punctuation"),
        verify=c.get("verify"),
        keep=c.get("keep"),
        match_empty=c.get("match_empty"),
    )


class _Run:
    """The run's tables, with every id turned into a row position."""

    def __init__(self, out_dir: Path, summary: dict[str, Any]) -> None:
        self.summary = summary
        self.config = config_of(summary)
        self.id_column = str(summary.get("id_column") or "row_id")
        self.text_column = str(summary.get("text_column") or "text")
        self.out_dir = out_dir
        # the texts are read later, only those of the documents the report needs
        wanted = [self.id_column, "cluster_id", "representative", "is_duplicate"]
        ann = read_table(out_dir, "annotated", wanted, string_columns=(self.id_column, "representative"))
        self.notes: list[str] = []
        if ann is None or self.id_column not in ann.column_names:
            ann = None
            self.notes.append("the run did not write annotated: no texts, no diffs, no recomputed Jaccard")
        self.ids: pa.Array = ann.column(self.id_column).combine_chunks() if ann else pa.array([], pa.string())
        self.has_texts = ann is not None and self._has_text_column(out_dir)
        n = len(self.ids)
        self.cluster = np.full(n, -1, np.int64)
        self.duplicate = np.zeros(n, bool)
        self.representative = np.arange(n, dtype=np.int64)
        """Each row's kept row, -1 when that is a document of the index (a run ``--against``)."""
        self.representative_ids: pa.Array = self.ids
        if ann is not None:
            assignment = assignment_of(ann, self.id_column)
            self.cluster, self.duplicate = assignment.cluster, assignment.is_duplicate
            self.representative_ids = assignment.representative
            self.representative = self.positions(self.representative_ids)
        edges = read_table(out_dir, "candidate_pairs", string_columns=("id_a", "id_b"))
        if edges is None:
            self.notes.append("the run did not write candidate_pairs: the kept edges are unknown")
            edges = pa.table({"id_a": pa.array([], pa.string()), "id_b": pa.array([], pa.string())})
        a, b = self.positions(edges.column("id_a")), self.positions(edges.column("id_b"))
        ok = (a >= 0) & (b >= 0)
        self.edge_left, self.edge_right = np.minimum(a, b)[ok], np.maximum(a, b)[ok]
        jac = edges.column("jaccard") if "jaccard" in edges.column_names else pa.array(np.ones(len(a)))
        self.edge_jaccard = pc.cast(jac, pa.float64()).to_numpy(zero_copy_only=False)[ok]
        self.buckets = self._buckets(out_dir)

    def _has_text_column(self, out_dir: Path) -> bool:
        files = table_files(out_dir, "annotated")
        if not files:
            return False
        try:
            probe = read_rows(
                out_dir, "annotated", self.text_column, np.zeros(1 if len(self.ids) else 0, np.int64)
            )
        except (InputError, KeyError):
            return False
        return len(probe) == min(1, len(self.ids))

    def text_of(self, rows: np.ndarray) -> pa.Array:
        """The texts of ``rows`` (ascending), read from ``annotated`` a batch at a time."""
        return read_rows(self.out_dir, "annotated", self.text_column, rows)

    def positions(self, ids: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Row positions of ``ids`` (-1 for an id not among the run's rows)."""
        return positions_in(as_strings(ids), self.ids)

    def _buckets(self, out_dir: Path) -> Buckets | None:
        table = read_table(out_dir, "lsh_buckets", ["band", "bucket_key", "members"])
        if table is None or not len(self.ids):
            self.notes.append("the run did not write lsh_buckets: the pairs verification dropped are unknown")
            return None
        members = table.column("members").combine_chunks()
        if not (pa.types.is_list(members.type) or pa.types.is_large_list(members.type)):
            members = pa.array(id_lists(members), pa.list_(pa.string()))  # CSV: JSON arrays as text
        members = members.cast(pa.large_list(pa.string()))
        offsets = members.offsets.to_numpy().astype(np.int64)
        offsets = offsets - offsets[0]
        flat = self.positions(members.flatten())
        known = flat >= 0
        if not known.all():  # a run --against an index: members that are index keys, not rows
            kept = np.add.reduceat(known.astype(np.int64), offsets[:-1]) if flat.size else offsets[:-1]
            kept[offsets[:-1] == offsets[1:]] = 0  # reduceat reads one value for an empty bucket
            offsets = np.concatenate(([0], np.cumsum(kept)))
            flat = flat[known]
        keys = pc.cast(table.column("bucket_key"), pa.string()).combine_chunks()
        self.bucket_keys = keys
        band = pc.cast(table.column("band"), pa.int32()).to_numpy(zero_copy_only=False)
        return Buckets(band=band, key=np.arange(len(band), dtype=np.uint64), offsets=offsets, members=flat)


def _exact(run: _Run, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard of pairs of rows, from their texts with the run's settings (in the
    pipeline's verification blocks: one block's shingle sets held at a time)."""
    if left.size == 0 or not run.has_texts:
        return np.full(left.size, np.nan)
    docs, inverse = np.unique(np.concatenate((left, right)), return_inverse=True)
    batch = arrow_to_batch(run.text_of(docs))
    cfg = run.config
    _, counts = MinHasher(cfg.minhash, cfg.text, cfg.shingle).signatures_with_counts(batch)
    return exact_jaccard_in_blocks(
        inverse[: left.size],
        inverse[left.size :],
        counts,
        lambda some: shingle_sets(batch, some, counts, cfg.text, cfg.shingle),
    )


class _Builder:
    def __init__(self, run: _Run, limits: ReportLimits) -> None:
        self.run = run
        self.limits = limits
        self.rng = np.random.default_rng(limits.seed)
        self.threshold = run.config.lsh.threshold
        self.docs: set[int] = set()
        self.pairs: dict[tuple[int, int], dict[str, Any]] = {}
        self.edge_keys = np.sort(_pack(run.edge_left, run.edge_right))
        self._texts: dict[int, dict[str, Any]] = {}

    # -- the candidates and their Jaccard --------------------------------------------------
    def candidates(self) -> dict[str, Any]:
        run, lim = self.run, self.limits
        if run.buckets is not None:
            valid = run.buckets
            left, right = candidate_pairs(valid, run.config.lsh.max_bucket_size)
            source = "lsh_buckets"
        else:
            left, right = run.edge_left, run.edge_right
            source = "candidate_pairs"
        total = int(left.size)
        if total > lim.candidate_sample:
            pick = np.sort(self.rng.choice(total, lim.candidate_sample, replace=False))
            left, right = left[pick], right[pick]
        jaccard = _exact(run, left, right)
        linked = np.isin(_pack(left, right), self.edge_keys)
        self.cand_left, self.cand_right, self.cand_jaccard, self.cand_linked = left, right, jaccard, linked
        edges = np.linspace(0.0, 1.0, 51)
        known = ~np.isnan(jaccard)
        hist_linked = np.histogram(jaccard[known & linked], bins=edges)[0]
        hist_dropped = np.histogram(jaccard[known & ~linked], bins=edges)[0]
        return {
            "source": source,
            "candidates": total,
            "sampled": int(left.size),
            "recomputed": bool(known.any()),
            "bin_edges": edges.round(4).tolist(),
            "linked": hist_linked.tolist(),
            "dropped": hist_dropped.tolist(),
            "linked_jaccard_sample": np.round(
                self.rng.permutation(jaccard[known & linked])[:3000], 4
            ).tolist(),
        }

    def s_curve(self) -> dict[str, Any]:
        bands, rows = int(self.run.summary.get("bands") or 0), int(self.run.summary.get("rows") or 0)
        x = np.linspace(0.0, 1.0, 201)
        p = candidate_probability(x, bands, rows) if bands and rows else np.zeros_like(x)
        return {
            "bands": bands,
            "rows": rows,
            "threshold": self.threshold,
            "x": x.round(4).tolist(),
            "p": np.round(p, 5).tolist(),
            "at_threshold": float(candidate_probability(self.threshold, bands, rows)) if bands else None,
        }

    # -- clusters ------------------------------------------------------------------------
    def clusters(self) -> dict[str, Any]:
        run, lim = self.run, self.limits
        labels = run.cluster[run.cluster >= 0]
        sizes = np.bincount(labels) if labels.size else np.zeros(0, np.int64)
        size_values, size_counts = np.unique(sizes, return_counts=True)
        order = np.lexsort((np.arange(sizes.size), -sizes))[: lim.clusters_listed]
        members_of = self._members(order[: lim.clusters_detailed])
        weakest = self._weakest_edges(order[: lim.clusters_detailed])
        compared: dict[int, tuple[int, np.ndarray]] = {}  # cluster -> (representative, others)
        if run.has_texts:
            for cid, members in members_of.items():
                rep = int(run.representative[members[0]])
                if rep >= 0:  # else the row kept is a document of the index: nothing to compare with
                    compared[cid] = (rep, members[members != rep][: lim.members_compared])
        # every comparison in one pass over the texts
        lefts = [np.full(others.size, rep) for rep, others in compared.values()]
        rights = [others for _, others in compared.values()]
        all_jac = _exact(
            run,
            np.concatenate(lefts or [np.zeros(0, np.int64)]),
            np.concatenate(rights or [np.zeros(0, np.int64)]),
        )
        bounds = np.cumsum([0, *(r.size for r in rights)])
        jaccard_of = {cid: all_jac[bounds[k] : bounds[k + 1]] for k, cid in enumerate(compared)}
        labels_seen, first_rows = np.unique(run.cluster, return_index=True)
        first_of = dict(zip(labels_seen.tolist(), first_rows.tolist(), strict=True))
        listed: list[dict[str, Any]] = []
        for cid in order.tolist():
            entry: dict[str, Any] = {"cluster_id": cid, "size": int(sizes[cid])}
            if cid not in compared:
                first = first_of[cid]
                entry["representative"] = str(run.representative_ids[first].as_py())
                entry["representative_in_index"] = bool(run.representative[first] < 0)
                listed.append(entry)
                continue
            rep, others = compared[cid]
            jac = jaccard_of[cid]
            sort = np.argsort(jac, kind="stable")
            entry["representative"] = self._id(rep)
            entry["members_compared"] = int(others.size)
            entry["min_jaccard_to_representative"] = (
                float(np.nanmin(jac)) if others.size and not np.isnan(jac).all() else None
            )
            entry["chain"] = bool(others.size and np.nanmin(jac) < self.threshold)
            entry["farthest"] = [
                {"id": self._id(int(others[k])), "jaccard": round(float(jac[k]), 4)}
                for k in sort[:8].tolist()
            ]
            entry["weakest_edges"] = weakest.get(cid, [])
            shown = others[sort][: lim.members_shown]
            entry["shown"] = [
                self.pair(rep, int(m), float(j)) for m, j in zip(shown, jac[sort][: shown.size], strict=True)
            ]
            self.docs.add(rep)
            listed.append(entry)
        return {
            "count": int(sizes.size),
            "size_values": size_values.tolist(),
            "size_counts": size_counts.tolist(),
            "largest": listed,
            "in_clusters": int(labels.size),
        }

    def _members(self, cids: np.ndarray) -> dict[int, np.ndarray]:
        run = self.run
        rows = np.flatnonzero(np.isin(run.cluster, cids))
        order = np.argsort(run.cluster[rows], kind="stable")
        rows = rows[order]
        bounds = np.flatnonzero(np.diff(run.cluster[rows])) + 1
        groups = np.split(rows, bounds) if rows.size else []
        return {int(run.cluster[g[0]]): g for g in groups}

    def _weakest_edges(self, cids: np.ndarray, per: int = 5) -> dict[int, list[str]]:
        run = self.run
        if not run.edge_left.size:
            return {}
        owner = run.cluster[run.edge_left]
        pick = np.flatnonzero(np.isin(owner, cids))
        pick = pick[np.lexsort((run.edge_jaccard[pick], owner[pick]))]
        out: dict[int, list[str]] = {}
        for k in pick.tolist():
            cid = int(owner[k])
            got = out.setdefault(cid, [])
            if len(got) < per:
                got.append(
                    self.pair(int(run.edge_left[k]), int(run.edge_right[k]), float(run.edge_jaccard[k]))
                )
        return out

    # -- pairs ---------------------------------------------------------------------------
    def near_threshold(self) -> dict[str, list[str]]:
        j = self.cand_jaccard
        known = np.flatnonzero(~np.isnan(j))
        above = known[j[known] >= self.threshold]
        below = known[j[known] < self.threshold]
        k = self.limits.near_threshold
        above = above[np.argsort(j[above], kind="stable")[:k]]
        below = below[np.argsort(-j[below], kind="stable")[:k]]
        return {
            "above": [self.pair(int(self.cand_left[i]), int(self.cand_right[i]), float(j[i])) for i in above],
            "below": [self.pair(int(self.cand_left[i]), int(self.cand_right[i]), float(j[i])) for i in below],
        }

    def sample(self) -> list[str]:
        n = self.cand_left.size
        pick = self.rng.choice(n, min(n, self.limits.sample_pairs), replace=False) if n else np.zeros(0, int)
        j = self.cand_jaccard
        return [
            self.pair(int(self.cand_left[i]), int(self.cand_right[i]), float(j[i])) for i in np.sort(pick)
        ]

    def pair(self, a: int, b: int, jaccard: float) -> str:
        """Register pair (a, b) for the page; returns its key."""
        a, b = (a, b) if a <= b else (b, a)
        key = f"{a}:{b}"
        if (a, b) not in self.pairs:
            linked = self._is_edge(a, b)
            self.pairs[(a, b)] = {
                "key": key,
                "a": self._id(a),
                "b": self._id(b),
                "jaccard": None if np.isnan(jaccard) else round(jaccard, 4),
                "linked": linked,
                "same_cluster": bool(self.run.cluster[a] >= 0 and self.run.cluster[a] == self.run.cluster[b]),
            }
            self.docs.update((a, b))
        return key

    def _is_edge(self, a: int, b: int) -> bool:
        """Whether (a, b), a <= b, is an edge the run kept (a binary search in the sorted keys)."""
        key = _pack(np.array([a]), np.array([b]))[0]
        at = int(np.searchsorted(self.edge_keys, key))
        return at < self.edge_keys.size and bool(self.edge_keys[at] == key)

    def finish_pairs(self) -> list[dict[str, Any]]:
        """Why each registered pair was a candidate, and its side-by-side diff."""
        run = self.run
        keys = list(self.pairs)
        reasons = self._reasons(keys)
        texts = self._doc_texts()
        n = run.config.shingle.n
        for (a, b), reason in zip(keys, reasons, strict=True):
            entry = self.pairs[(a, b)]
            entry.update(reason)
            if a in texts and b in texts:
                entry["diff"] = pair_diff(texts[a]["tokens"], texts[b]["tokens"], n).to_dict()
        return [self.pairs[k] for k in keys]

    def _reasons(self, keys: list[tuple[int, int]]) -> list[dict[str, Any]]:
        """The first band and bucket that made each pair a candidate (the run's pairing rule: all
        pairs in a bucket, or each member with the first in a bucket past max_bucket_size)."""
        bk = self.run.buckets
        if bk is None or not keys:
            return [{} for _ in keys]
        docs = np.array(sorted({d for pair in keys for d in pair}), dtype=np.int64)
        sizes = np.diff(bk.offsets)
        owner = np.repeat(np.arange(sizes.size), sizes)
        first = bk.members[bk.offsets[:-1]][owner]
        keep = np.isin(bk.members, docs)
        member, owner, first = bk.members[keep], owner[keep], first[keep]
        order = np.lexsort((owner, member))
        member, owner, first = member[order], owner[order], first[order]
        starts = np.searchsorted(member, docs)
        ends = np.searchsorted(member, docs, side="right")
        span = {int(d): (int(s), int(e)) for d, s, e in zip(docs, starts, ends, strict=True)}
        big = self.run.config.lsh.max_bucket_size
        out = []
        for a, b in keys:
            sa, ea = span[a]
            sb, eb = span[b]
            shared = np.intersect1d(owner[sa:ea], owner[sb:eb])
            found: dict[str, Any] = {}
            for bucket in shared.tolist():
                if sizes[bucket] <= big or bk.members[bk.offsets[bucket]] in (a, b):
                    found = {
                        "band": int(bk.band[bucket]),
                        "bucket_key": self.run.bucket_keys[bucket].as_py(),
                        "bucket_size": int(sizes[bucket]),
                        "shared_buckets": int(shared.size),
                    }
                    break
            out.append(found)
        return out

    def _doc_texts(self) -> dict[int, dict[str, Any]]:
        run, lim = self.run, self.limits
        chosen = sorted(self.docs)[: lim.max_docs]
        if not run.has_texts or not chosen:
            self._texts = {}
            return self._texts
        cfg = run.config
        texts = run.text_of(np.array(chosen, dtype=np.int64)).to_pylist()
        out: dict[int, dict[str, Any]] = {}
        for pos, text in zip(chosen, texts, strict=True):
            body = text or ""
            out[pos] = {
                "text": body[: lim.max_text_chars],
                "truncated": len(body) > lim.max_text_chars,
                "tokens": tokens_of(body[: lim.max_text_chars], cfg.text, cfg.shingle, lim.max_tokens),
            }
        self._texts = out
        return out

    def documents(self) -> dict[str, dict[str, Any]]:
        run = self.run
        out: dict[str, dict[str, Any]] = {}
        for pos in sorted(self.docs)[: self.limits.max_docs]:
            entry = {
                "row": pos,
                "cluster_id": int(run.cluster[pos]) if run.cluster[pos] >= 0 else None,
                "representative": str(run.representative_ids[pos].as_py()),
                "is_duplicate": bool(run.duplicate[pos]),
            }
            entry.update(self._texts.get(pos, {}))
            out[self._id(pos)] = entry
        return out

    def id_index(self) -> dict[str, Any]:
        """Id, cluster and representative of the rows in clusters (a seeded sample past
        ``indexed_rows``), so that search answers "why was this removed" for any of them."""
        run = self.run
        rows = np.flatnonzero(run.cluster >= 0)
        total = int(rows.size)
        if total > self.limits.indexed_rows:
            rows = np.sort(self.rng.choice(rows, self.limits.indexed_rows, replace=False))
        take = pa.array(rows, pa.int64())
        return {
            "rows_in_clusters": total,
            "ids": run.ids.take(take).to_pylist(),
            "cluster": run.cluster[rows].tolist(),
            "representative": run.representative_ids.take(pa.array(rows, pa.int64())).to_pylist(),
        }

    def _id(self, pos: int) -> str:
        return str(self.run.ids[pos].as_py())


def _run_info(summary: dict[str, Any]) -> dict[str, Any]:
    figures = {
        k: summary.get(k)
        for k in (
            "input_rows",
            "skipped_records",
            "empty_documents",
            "buckets_with_collisions",
            "candidate_pairs",
            "verified_pairs",
            "clusters",
            "duplicates_removed",
            "kept_rows",
            "kept_ratio",
        )
        if k in summary
    }
    return {
        "neardup_version": summary.get("neardup_version"),
        "inputs": summary.get("inputs", []),
        "output_dir": summary.get("output_dir"),
        "output_format": summary.get("output_format"),
        "text_column": summary.get("text_column"),
        "id_column": summary.get("id_column"),
        "figures": figures,
        "shape": {
            "num_perm": summary.get("num_perm"),
            "bands": summary.get("bands"),
            "rows": summary.get("rows"),
            "threshold": summary.get("threshold"),
            "shingle": summary.get("shingle"),
            "ngram": summary.get("ngram"),
            "jaccard": summary.get("jaccard"),
        },
        "config": summary.get("config", {}),
        "seconds": summary.get("seconds", {}),
        "engine": summary.get("engine", {}),
    }


def build_report(
    out_dir: str | os.PathLike[str],
    *,
    limits: ReportLimits | None = None,
    evaluation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report of the run in ``out_dir`` as plain data (see the module docstring); the
    ``evaluation`` against labels, when given, becomes a section of its own."""
    lim = limits or ReportLimits()
    summary = read_summary(Path(out_dir))
    run = _Run(Path(out_dir), summary)
    builder = _Builder(run, lim)
    candidates = builder.candidates()
    clusters = builder.clusters()
    near = builder.near_threshold()
    sampled_pairs = builder.sample()
    pairs = builder.finish_pairs()
    docs = builder.documents()
    index = builder.id_index()
    n = len(run.ids)
    sampling = list(run.notes)
    if candidates["sampled"] < candidates["candidates"]:
        sampling.append(
            f"Jaccard recomputed for {candidates['sampled']:,} of {candidates['candidates']:,} "
            f"candidate pairs (a uniform sample, seed {lim.seed})"
        )
    if clusters["count"] > len(clusters["largest"]):
        sampling.append(
            f"the {len(clusters['largest']):,} largest of {clusters['count']:,} clusters are listed"
        )
    sampling.append(
        f"texts of {len(docs):,} of {n:,} documents are included (those of the pairs and clusters "
        f"shown), each cut at {lim.max_text_chars:,} characters; search looks through their text"
    )
    if len(index["ids"]) < index["rows_in_clusters"]:
        sampling.append(
            f"search knows the ids of {len(index['ids']):,} of the {index['rows_in_clusters']:,} rows "
            f"in clusters (a uniform sample, seed {lim.seed})"
        )
    else:
        sampling.append(
            f"search knows the id of every one of the {index['rows_in_clusters']:,} rows in clusters"
        )
    return {
        "report_version": REPORT_VERSION,
        "made_by": __version__,
        "run": _run_info(summary),
        "s_curve": builder.s_curve(),
        "candidates": candidates,
        "clusters": clusters,
        "near_threshold": near,
        "sample_pairs": sampled_pairs,
        "pairs": pairs,
        "docs": docs,
        "index": index,
        "evaluation": evaluation,
        "sampling": sampling,
        "limits": asdict(lim),
    }
