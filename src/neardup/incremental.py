"""Incremental dedup: a new batch deduplicated within itself and against a persistent index.

The index stands for everything seen before. Each batch row and each indexed document it matches
are nodes of one duplicate graph: the batch's own verified pairs are edges, and so is every
(row, indexed key) pair whose similarity reaches the index's threshold. A component that holds an
indexed document is represented by it (the indexed document came first, so every batch row in it
is a duplicate); any other component follows the run's keeper policy. Adding the kept rows to the
index afterwards (:func:`add_kept`) makes the next batch see them.

>>> from neardup.index import LSHIndex
>>> from neardup.core.text import encode_texts
>>> index = LSHIndex.open("memory://")
>>> index.insert("old-1", "the cat sat on the mat today")
>>> r = dedup_against(encode_texts(["The cat sat on the mat today!", "dogs bark", "dogs bark"]), index)
>>> r.keep.tolist(), r.matched_index.tolist(), r.representative_keys(["a", "b", "c"])
([False, True, False], [True, False, False], ['old-1', 'b', 'b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.config import DedupConfig
from neardup.core.clusters import Clusters, assign_clusters
from neardup.core.minhash import estimate_pairs
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.sorting import sorted_unique
from neardup.core.text import TextBatch
from neardup.core.verify import exact_jaccard_pairs
from neardup.errors import ConfigError
from neardup.index import IndexSettings, LSHIndex
from neardup.index.base import Candidates
from neardup.memory import MemoryWatch
from neardup.pipeline import DedupResult, Progress, char_lengths, find_duplicates

_KEEP_SCORE = {"longest": np.iinfo(np.int64).max, "shortest": -1}


@dataclass(frozen=True)
class IndexMatches:
    """Pairs (batch row, indexed document) at or above the index's threshold.

    ``row`` holds batch positions (ascending, then best first), ``key`` the indexed keys;
    ``similarity`` is exact Jaccard when ``exact`` (the index keeps shingles and verification
    is on), else the signature estimate; ``estimated`` is always the estimate.
    """

    row: np.ndarray  # int64
    key: list[str]
    similarity: np.ndarray  # float64
    estimated: np.ndarray  # float64
    exact: bool

    def __len__(self) -> int:
        return int(self.row.size)


@dataclass
class AgainstResult:
    """What :func:`dedup_against` decided.

    ``batch`` is the batch's own dedup run (its pairs, buckets and signatures; its ``clusters``
    ignore the index). ``clusters`` covers ``index_keys`` (nodes ``0 .. m-1``, the indexed
    documents that matched some row) followed by the batch rows (nodes ``m ..``).
    """

    batch: DedupResult
    matches: IndexMatches
    index_keys: list[str]
    clusters: Clusters
    index_documents: int
    index_url: str

    @property
    def _m(self) -> int:
        return len(self.index_keys)

    @property
    def keep(self) -> np.ndarray:
        """bool per batch row: True for the rows kept."""
        keep: np.ndarray = self.clusters.keep[self._m :]
        return keep

    @property
    def is_duplicate(self) -> np.ndarray:
        return ~self.keep

    @property
    def matched_index(self) -> np.ndarray:
        """bool per batch row: its cluster is represented by an indexed document."""
        rep: np.ndarray = self.clusters.representative[self._m :] < self._m
        return rep

    def representative_keys(self, ids: Sequence[str]) -> list[str]:
        """Per batch row, the key (indexed key or batch id from ``ids``) of the document kept."""
        names = self.index_keys + list(ids)
        return [names[r] for r in self.clusters.representative[self._m :].tolist()]

    def summary(self) -> dict[str, Any]:
        """The batch's figures (see :meth:`DedupResult.summary`) with the index taken into account."""
        s = self.batch.summary()
        n = int(self.keep.size)
        kept = int(self.keep.sum())
        m = self._m
        s.update(
            clusters=self.clusters.n_clusters,
            duplicates_removed=n - kept,
            kept_rows=kept,
            kept_ratio=round(kept / n, 6) if n else 1.0,
            index={
                "url": self.index_url,
                "documents_before": self.index_documents,
                "matches": len(self.matches),
                "matched_documents": m,
                "rows_matching_index": int(np.count_nonzero(self.matched_index)),
                "jaccard": "exact" if self.matches.exact else "estimated",
            },
        )
        return s


def run_config(index: LSHIndex, config: DedupConfig | None) -> DedupConfig:
    """``config`` checked against the index's settings, or the index's settings with default run
    options; :class:`~neardup.errors.IndexSettingsError` names the setting that differs."""
    if config is None:
        return index.settings.to_config()
    index.settings.check_compatible(IndexSettings.from_config(config), what="config", banding=True)
    return config


def dedup_against(
    batch: TextBatch,
    index: LSHIndex,
    config: DedupConfig | None = None,
    *,
    lengths: np.ndarray | None = None,
    progress: Progress | None = None,
    watch: MemoryWatch | None = None,
) -> AgainstResult:
    """Deduplicate ``batch`` within itself and against every document in ``index``.

    ``config`` supplies the run options (verification, keeper policy, empty documents, bucket
    cap); its signature and banding settings must be the index's (default: the index's settings).
    Documents empty after normalisation never match the index. The index is not changed; see
    :func:`add_kept`. ``watch`` is :func:`~neardup.pipeline.find_duplicates`'s.
    """
    cfg = run_config(index, config)
    documents = len(index)
    result = find_duplicates(batch, cfg, lengths=lengths, progress=progress, watch=watch)
    matches = _index_matches(batch, index, cfg, result)
    index_keys = sorted(set(matches.key))
    m = len(index_keys)
    n = len(result.keep)
    # Order the indexed nodes best match first, so the first-position rule picks, in each
    # component, the indexed document most similar to some row (ties by key).
    best: dict[str, float] = {}
    for key, sim in zip(matches.key, matches.similarity.tolist(), strict=True):
        best[key] = max(sim, best.get(key, 0.0))
    index_keys.sort(key=lambda k: -best[k])  # stable: ties keep key order
    slot = {k: i for i, k in enumerate(index_keys)}
    left = np.concatenate(
        (result.pairs.left + m, np.fromiter((slot[k] for k in matches.key), np.int64, len(matches)))
    )
    right = np.concatenate((result.pairs.right + m, matches.row + m))
    node_lengths = None
    if cfg.keep != "first":
        if lengths is None:
            lengths = char_lengths(batch)
        node_lengths = np.concatenate((np.full(m, _KEEP_SCORE[cfg.keep], np.int64), lengths))
    clusters = assign_clusters(m + n, left, right, keep=cfg.keep, lengths=node_lengths)
    return AgainstResult(
        batch=result,
        matches=matches,
        index_keys=index_keys,
        clusters=clusters,
        index_documents=documents,
        index_url=index.storage.url,
    )


def _index_matches(batch: TextBatch, index: LSHIndex, cfg: DedupConfig, result: DedupResult) -> IndexMatches:
    exact = index.settings.keep_shingles and cfg.verify
    found = index.lookup_signatures(result.signatures, shingles=exact)
    rows = np.repeat(np.arange(len(found.rows), dtype=np.int64), [r.size for r in found.rows])
    slots = np.concatenate(found.rows) if found.rows else np.empty(0, dtype=np.int64)
    keys = [found.keys[i] for i in slots.tolist()]
    n = rows.size
    if n:  # both signature sets stacked: batch rows first, then the candidates
        stacked = np.concatenate([result.signatures, found.signatures])
        estimated = estimate_pairs(stacked, rows, slots + result.signatures.shape[0])
    else:
        estimated = np.empty(0, dtype=np.float64)
    similarity = estimated
    if exact and n:
        similarity = _exact_to_index(batch, cfg, result, found, rows, slots)
    ok = np.flatnonzero(similarity >= index.settings.threshold)
    # best first within each row (candidates come in key order, which breaks ties)
    ok = ok[np.lexsort((-similarity[ok], rows[ok]))]
    return IndexMatches(
        row=rows[ok],
        key=[keys[i] for i in ok.tolist()],
        similarity=similarity[ok],
        estimated=estimated[ok],
        exact=exact,
    )


def _exact_to_index(
    batch: TextBatch,
    cfg: DedupConfig,
    result: DedupResult,
    found: Candidates,
    rows: np.ndarray,
    slots: np.ndarray,
) -> np.ndarray:
    """Exact Jaccard of each (batch row, candidate slot) with the compiled pair kernel."""
    distinct_rows = sorted_unique(rows)
    ours = shingle_sets(batch, distinct_rows, result.shingle_counts, cfg.text, cfg.shingle)
    sets: list[np.ndarray] = [ours.get(i) for i in range(distinct_rows.size)]
    for key, s in zip(found.keys, found.shingles or [], strict=True):
        if s is None:
            raise ConfigError(f"document {key!r} was stored without its shingles; re-insert it")
        sets.append(s)
    csr = ShingleSets.from_sets(sets)
    left = np.searchsorted(distinct_rows, rows)
    right = slots + distinct_rows.size
    sim: np.ndarray = exact_jaccard_pairs(csr, len(sets), left, right)
    return sim


def add_kept(index: LSHIndex, batch: TextBatch, result: AgainstResult, keys: Sequence[str]) -> int:
    """Insert the batch rows ``result`` kept into ``index`` under ``keys`` (one per batch row),
    reusing their signatures, in one all-or-nothing batch; a key already stored is replaced.
    Returns how many were added."""
    if len(keys) != len(result.keep):
        raise ValueError(f"{len(keys)} keys for a batch of {len(result.keep)} rows")
    kept = np.flatnonzero(result.keep)
    if kept.size == 0:
        return 0
    shingles = None
    counts = result.batch.shingle_counts[kept]
    if index.settings.keep_shingles or index.settings.containment:  # distinct counts: containment's sizes
        cfg = result.batch.config
        sets = shingle_sets(batch, kept, result.batch.shingle_counts, cfg.text, cfg.shingle)
        counts = sets.lengths
        if index.settings.keep_shingles:
            shingles = [sets.get(i).copy() for i in range(kept.size)]
    index.insert_signatures(
        [keys[i] for i in kept.tolist()],
        result.batch.signatures[kept],
        settings=IndexSettings.from_config(result.batch.config),
        shingles=shingles,
        shingle_counts=counts,
    )
    return int(kept.size)
