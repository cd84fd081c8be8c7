"""Containment search over an index: which stored documents hold most of a query, or are held
in it (see :mod:`neardup.core.containment` for the partitions and band layouts).

A containment index files each document under its Jaccard bands and under the containment
layouts of its size partition, and lists in its settings the partitions that hold documents.
An insert that brings a partition not listed yet adds it to the settings first, inside the
index's exclusive section, so a reader never meets a document in a partition it does not
probe; a partition emptied by removals stays listed (it costs a query a few empty lookups).
Every query reads the list afresh, so it sees what other processes inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from neardup.core.containment import (
    Direction,
    check_containment,
    check_direction,
    estimate_containment,
    filed_keys,
    layout_keys,
    partition_of,
    partition_salts,
    query_plan,
)
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.text import encode_texts
from neardup.core.verify import intersection_pairs
from neardup.errors import ConfigError
from neardup.index.checking import InsertPolicy, checked_keys, require_keys
from neardup.index.settings import IndexSettings

if TYPE_CHECKING:
    from neardup.index.lsh_index import LSHIndex

_QUERY_CHUNK = 256  # queries per storage lookup: bounds the probe matrix


@dataclass(frozen=True)
class ContainmentMatch:
    """A stored document and its containment with the query (as the query's ``direction``
    asks); ``exact`` says whether it is exact (from the stored shingles) or estimated."""

    key: str
    containment: float
    exact: bool


def check_containment_index(index: LSHIndex) -> None:
    """A :class:`ConfigError` unless the index files documents for containment search."""
    if not index.settings.containment:
        raise ConfigError(
            "this index was not built for containment search; build it with containment=True "
            "(neardup index build --containment)"
        )


def containment_columns_of(
    index: LSHIndex, signatures: np.ndarray, sizes: np.ndarray, eligible: np.ndarray
) -> np.ndarray:
    """The containment band keys (:func:`filed_keys`) of documents with these signatures and
    distinct shingle counts, after recording the eligible ones' partitions in the settings."""
    if eligible.any():
        _record_partitions(index, partition_of(np.asarray(sizes)[eligible]))
    return filed_keys(signatures, sizes, eligible)


def _record_partitions(index: LSHIndex, partitions: np.ndarray) -> None:
    new = set(np.unique(partitions).tolist()) - set(index.settings.partitions)
    if not new:
        return
    storage = index.storage
    with storage.exclusive():
        stored = storage.read_settings()
        current = IndexSettings.from_dict(stored) if stored is not None else index.settings
        if not new <= set(current.partitions):
            current = replace(current, partitions=(*current.partitions, *new))
            storage.write_settings(current.to_dict())
    index.settings = current


def _current_partitions(index: LSHIndex) -> list[int]:
    """The partitions the stored settings list now (another process may have added some)."""
    stored = index.storage.read_settings()
    if stored is None:
        return list(index.settings.partitions)
    listed = tuple(stored.get("partitions", ()))
    if listed != index.settings.partitions:
        index.settings = replace(index.settings, partitions=IndexSettings.from_dict(stored).partitions)
    return list(index.settings.partitions)


def query_containment_many(
    index: LSHIndex,
    texts: Sequence[str],
    *,
    min_containment: float = 0.8,
    direction: Direction = "query_in_doc",
    top_k: int | None = None,
    exact: bool | None = None,
) -> list[list[ContainmentMatch]]:
    """For each text, the stored documents whose containment with it is at least
    ``min_containment``, best first (ties by key), at most ``top_k``.

    ``direction="query_in_doc"`` measures how much of the text is in a document (is this text
    copied from somewhere?), ``"doc_in_query"`` how much of a document is in the text (what
    does this text copy?). ``exact`` (default: whether the index keeps shingles) scores by the
    stored shingle sets; otherwise by the estimate from the signatures and set sizes.
    """
    check_containment_index(index)
    threshold = check_containment(min_containment)
    way = check_direction(direction)
    use_exact = index.settings.keep_shingles if exact is None else bool(exact)
    index._check_query(None, top_k, use_exact)
    config = index._config
    batch = encode_texts(list(texts))
    sigs, counts = index._hasher.signatures_with_counts(batch)
    sets = shingle_sets(batch, np.arange(len(texts)), counts, config.text, config.shingle)
    partitions = _current_partitions(index)
    out: list[list[ContainmentMatch]] = []
    for lo in range(0, len(texts), _QUERY_CHUNK):
        hi = min(len(texts), lo + _QUERY_CHUNK)
        out += _query_chunk(
            index, sigs, sets, np.arange(lo, hi), partitions, threshold, way, top_k, use_exact
        )
    return out


def _query_chunk(
    index: LSHIndex,
    sigs: np.ndarray,
    sets: ShingleSets,
    queries: np.ndarray,
    partitions: list[int],
    threshold: float,
    direction: Direction,
    top_k: int | None,
    exact: bool,
) -> list[list[ContainmentMatch]]:
    """One storage lookup for the probes of ``queries`` (rows of ``sigs`` and ``sets``), then
    every (query, candidate) pair scored in one batch."""
    settings = index.settings
    num_perm = settings.num_perm
    sizes = sets.lengths[queries]
    # the probes, one row each: its query, partition, first column and bands
    plan_rows = [
        (q, probe.partition, probe.layout.first_column, probe.bands)
        for q in range(queries.size)
        for probe in query_plan(int(sizes[q]), partitions, threshold, direction, num_perm)
    ]
    results: list[list[ContainmentMatch]] = [[] for _ in range(queries.size)]
    if not plan_rows:
        return results
    row_query, row_part, row_first, row_bands = (
        np.array(c, dtype=np.int64) for c in zip(*plan_rows, strict=True)
    )
    cell_row = np.repeat(np.arange(row_query.size), row_bands)
    cell_col = np.repeat(row_first, row_bands) + (
        np.arange(cell_row.size) - np.repeat(np.cumsum(row_bands) - row_bands, row_bands)
    )
    keys = layout_keys(sigs[queries])
    salts = partition_salts(row_part)
    probe_keys = np.zeros((row_query.size, settings.band_columns), dtype=np.uint64)
    mask = np.zeros(probe_keys.shape, dtype=bool)
    probe_keys[cell_row, settings.bands + cell_col] = keys[row_query[cell_row], cell_col] ^ salts[cell_row]
    mask[cell_row, settings.bands + cell_col] = True
    found = index.storage.lookup(probe_keys, shingles=exact, mask=mask)
    if not found.keys:
        return results
    # every (query, candidate) pair once
    lengths = np.fromiter(map(len, found.rows), dtype=np.int64, count=len(found.rows))
    hits = np.concatenate(found.rows) if lengths.sum() else np.empty(0, np.int64)
    width = len(found.keys)
    packed = np.unique(np.repeat(row_query, lengths) * width + hits)
    pair_query, pair_cand = packed // width, packed % width
    doc_sizes = _doc_sizes(index, found.keys, found.shingles)
    known = doc_sizes[pair_cand] >= 0
    pair_query, pair_cand = pair_query[known], pair_cand[known]
    scores = np.empty(pair_query.size, dtype=np.float64)
    is_exact = np.zeros(pair_query.size, dtype=bool)
    stored = found.shingles
    if exact and stored is not None:
        has_set = np.array([s is not None for s in stored], dtype=bool)
        is_exact = has_set[pair_cand]
        if is_exact.any():
            scores[is_exact] = _exact_pairs(
                sets, queries, stored, pair_query[is_exact], pair_cand[is_exact], direction
            )
    estimated = ~is_exact
    if estimated.any():
        q_rows, c_rows = pair_query[estimated], pair_cand[estimated]
        jaccard = np.count_nonzero(found.signatures[c_rows] == sigs[queries[q_rows]], axis=1) / num_perm
        scores[estimated] = estimate_containment(jaccard, sizes[q_rows], doc_sizes[c_rows], direction)
    keep = scores >= threshold - 1e-12
    pair_query, pair_cand, scores, is_exact = pair_query[keep], pair_cand[keep], scores[keep], is_exact[keep]
    # by query, best first, ties by key (candidates are sorted by key)
    order = np.lexsort((pair_cand, -scores, pair_query))
    bounds = np.searchsorted(pair_query[order], np.arange(queries.size + 1))
    names = found.keys
    for q in range(queries.size):
        picked = order[bounds[q] : bounds[q + 1]]
        if top_k is not None:
            picked = picked[:top_k]
        results[q] = [
            ContainmentMatch(names[c], min(1.0, s), e)
            for c, s, e in zip(
                pair_cand[picked].tolist(), scores[picked].tolist(), is_exact[picked].tolist(), strict=True
            )
        ]
    return results


def _exact_pairs(
    sets: ShingleSets,
    queries: np.ndarray,
    stored: list[np.ndarray | None],
    pair_query: np.ndarray,
    pair_cand: np.ndarray,
    direction: Direction,
) -> np.ndarray:
    """Exact containment of each (query, stored set) pair, in one compiled pass."""
    used = np.unique(pair_cand)
    packed = ShingleSets.from_sets([sets.get(int(q)) for q in queries] + [stored[int(c)] for c in used])  # type: ignore[misc]
    right = queries.size + np.searchsorted(used, pair_cand)
    shared = intersection_pairs(packed, int(packed.docs.size), pair_query, right)
    denominator = packed.lengths[right] if direction == "doc_in_query" else packed.lengths[pair_query]
    out: np.ndarray = np.where(denominator > 0, shared / np.maximum(denominator, 1), 0.0)
    return out


def _doc_sizes(index: LSHIndex, keys: list[str], shingles: list[np.ndarray | None] | None) -> np.ndarray:
    """int64: each candidate's distinct shingle count (-1 where unknown): from the shingles read
    with it when there are any, else from the stored count."""
    sizes = np.full(len(keys), -1, dtype=np.int64)
    missing = list(range(len(keys)))
    if shingles is not None:
        missing = []
        for i, s in enumerate(shingles):
            if s is None:
                missing.append(i)
            else:
                sizes[i] = s.size
    if missing:
        infos = index.storage.info([keys[i] for i in missing])
        for i, info in zip(missing, infos, strict=True):
            if info is not None and info.shingles is not None:
                sizes[i] = info.shingles
    return sizes


@dataclass(frozen=True)
class ContainmentCheck:
    """One text checked by containment: its key, its matches best first, whether it is a
    duplicate (it matched something) and whether it was inserted."""

    key: str | None
    matches: list[ContainmentMatch]
    is_duplicate: bool
    inserted: bool


def check_containment_many(
    index: LSHIndex,
    texts: Sequence[str],
    keys: Sequence[str | None] | None = None,
    *,
    insert: InsertPolicy = "never",
    min_containment: float = 0.8,
    direction: Direction = "query_in_doc",
    top_k: int | None = None,
    exact: bool | None = None,
) -> list[ContainmentCheck]:
    """:func:`~neardup.index.checking.check_many` by containment: each text's matches as
    :func:`query_containment_many` finds them, and by ``insert`` (``never``; ``if_new``: the
    texts that match nothing, atomically across processes; ``always``) the texts inserted under
    their keys. The texts of one batch are checked against the index, not against each other."""
    key_list = checked_keys(texts, keys, insert)
    require_keys(key_list, insert)

    def run() -> list[ContainmentCheck]:
        found = query_containment_many(
            index, texts, min_containment=min_containment, direction=direction, top_k=top_k, exact=exact
        )
        chosen = [i for i, m in enumerate(found) if insert == "always" or (insert == "if_new" and not m)]
        if chosen:
            index.insert_many([str(key_list[i]) for i in chosen], [texts[i] for i in chosen])
        picked = set(chosen)
        return [
            ContainmentCheck(k, m, bool(m), i in picked)
            for i, (k, m) in enumerate(zip(key_list, found, strict=True))
        ]

    if insert == "if_new":
        with index.exclusive():
            return run()
    return run()
