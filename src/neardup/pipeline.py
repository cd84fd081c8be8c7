"""The dedup pipeline: texts -> signatures -> buckets -> pairs -> clusters -> decisions.

Every stage is a core function over whole batches; this module strings them
together, times them and reports progress through an optional callback.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.config import DedupConfig
from neardup.core.clusters import Clusters, assign_clusters, assign_contained, components
from neardup.core.containment import corpus_candidates, estimate_containment
from neardup.core.jit import in_threads, threads
from neardup.core.lsh import Buckets, band_keys, build_buckets, candidate_pairs
from neardup.core.minhash import MinHasher, estimate_pairs
from neardup.core.params import lsh_shape, s_curve
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.sorting import sorted_unique
from neardup.core.text import TextBatch, encode_texts
from neardup.core.verify import exact_jaccard_pairs, intersection_pairs
from neardup.errors import InputError, MissingColumnError
from neardup.io.frames import arrow_table, is_frame
from neardup.memory import BAND_RECORD_BYTES, PAIR_BYTES, ROW_BYTES, MemoryWatch

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as a stage advances."""

STAGES: tuple[str, ...] = ("signatures", "buckets", "pairs", "verify", "clusters")
_PIECE = 1024  # documents a kernel thread takes at a time for signatures


@dataclass(frozen=True)
class Pairs:
    """Edges of the duplicate graph: ``left[k] < right[k]`` are document indices.

    ``jaccard`` is exact when ``exact`` is true (verification on), else the
    signature estimate; ``estimated`` is always the signature estimate.
    """

    left: np.ndarray
    right: np.ndarray
    jaccard: np.ndarray
    estimated: np.ndarray
    exact: bool
    containment: np.ndarray | None = None
    """In a containment run: the share of the smaller document's shingles found in the larger
    (exact when ``exact``, else estimated)."""

    def __len__(self) -> int:
        return int(self.left.size)


@dataclass
class DedupResult:
    """Everything a dedup run decided, and the evidence for it."""

    config: DedupConfig
    bands: int
    rows: int
    clusters: Clusters
    pairs: Pairs
    buckets: Buckets
    signatures: np.ndarray
    shingle_counts: np.ndarray
    candidate_count: int
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def keep(self) -> np.ndarray:
        """bool per input row: True for the rows a deduplicated corpus keeps."""
        return self.clusters.keep

    @property
    def is_duplicate(self) -> np.ndarray:
        return ~self.clusters.keep

    def groups(self) -> list[list[int]]:
        """Each cluster's member positions (two or more), representative first."""
        out = []
        for members in self.clusters.groups():
            rep = int(self.clusters.representative[members[0]])
            out.append([rep] + [int(m) for m in members if m != rep])
        return out

    def summary(self) -> dict[str, Any]:
        """The run's figures, ready for ``summary.json``."""
        n = int(self.clusters.keep.size)
        kept = int(self.clusters.keep.sum())
        lsh = self.config.lsh
        return {
            "input_rows": n,
            "empty_documents": int(np.count_nonzero(self.shingle_counts == 0)),
            "num_perm": self.config.minhash.num_perm,
            "seed": self.config.minhash.seed,
            "sketch": self.config.minhash.sketch,
            "bands": self.bands,
            "rows": self.rows,
            "threshold": lsh.threshold,
            "s_curve": s_curve(lsh.threshold, self.bands, self.rows),
            "shingle": self.config.shingle.mode,
            "ngram": self.config.shingle.n,
            "buckets_with_collisions": len(self.buckets),
            "candidate_pairs": self.candidate_count,
            "verified_pairs": len(self.pairs) if self.pairs.exact else None,
            "edges": len(self.pairs),
            "jaccard": "exact" if self.pairs.exact else "estimated",
            "clusters": self.clusters.n_clusters,
            "duplicates_removed": n - kept,
            "kept_rows": kept,
            "kept_ratio": round(kept / n, 6) if n else 1.0,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "config": self.config.to_dict(),
            **({} if self.config.containment is None else {"containment": self.config.containment}),
        }


class _Clock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


def _noop(stage: str, done: int, total: int) -> None:
    return None


def find_duplicates(
    batch: TextBatch | Sequence[TextBatch] | Sequence[str | None],
    config: DedupConfig | None = None,
    *,
    lengths: np.ndarray | None = None,
    progress: Progress | None = None,
    keep_signatures: bool = True,
    watch: MemoryWatch | None = None,
) -> DedupResult:
    """Run the whole pipeline on one batch of documents, or on batches in a row (the chunks of
    an Arrow column, see :func:`arrow_to_batches`: the text is never copied into one buffer), or
    on a list of strings (packed into one batch first; None counts as empty). Without
    ``keep_signatures`` the result's ``signatures`` are empty (no rows): let go once the
    candidate pairs' estimates are taken.

    ``lengths`` (characters per document) is needed by the ``longest`` and
    ``shortest`` keeper policies; it is computed from the batch if omitted. With ``watch``, the
    run checks what it is about to hold (signatures, band records, candidate pairs as they are
    found) against the watch's limit and raises :class:`~neardup.memory.MemoryLimitError` at
    the first that would pass it.
    """
    cfg = config or DedupConfig()
    report = progress or _noop
    clock = _Clock()
    chunks = _as_chunks(batch)
    firsts = _firsts(chunks)
    n = int(firsts[-1])
    hasher = MinHasher(cfg.minhash, cfg.text, cfg.shingle)
    _check_rows(watch, n, cfg)

    with clock.stage("signatures"):
        sigs = np.empty((n, cfg.minhash.num_perm), dtype=np.uint32)
        counts = np.empty(n, dtype=np.int64)
        digests = np.empty(n, dtype=np.uint64)
        report("signatures", 0, n)
        _signatures(hasher, [chunks], sigs, counts, digests, lambda done: report("signatures", done, n))

    def lengths_of() -> np.ndarray | None:
        if cfg.keep == "first" or lengths is not None:
            return lengths
        return np.concatenate([char_lengths(c) for c in chunks]) if n else np.zeros(0, np.int64)

    sets_of = functools.partial(_shingle_sets, chunks, firsts, counts=counts, cfg=cfg)
    if cfg.containment is not None:
        return _by_containment(
            sigs, counts, cfg, sets_of, keep_signatures=keep_signatures, clock=clock, report=report
        )
    found, sigs = _candidates(
        sigs, counts, cfg, keep_signatures=keep_signatures, clock=clock, report=report, watch=watch
    )
    return _decide(
        found, sigs, counts, digests, cfg, sets_of, lengths_of=lengths_of, clock=clock, report=report
    )


def _as_chunks(batch: TextBatch | Sequence[TextBatch] | Sequence[str | None]) -> list[TextBatch]:
    if isinstance(batch, TextBatch):
        return [batch]
    if isinstance(batch, str):
        raise TypeError("find_duplicates takes a batch or a list of texts, not one str")
    items = list(batch)
    if all(isinstance(item, TextBatch) for item in items) and items:
        return cast(list[TextBatch], items)
    if any(isinstance(item, TextBatch) for item in items):
        raise TypeError("find_duplicates takes batches or texts, not a mix of both")
    for k, item in enumerate(items):
        if item is not None and not isinstance(item, str):
            raise TypeError(f"text {k} is a {type(item).__name__}, not a str (or None)")
    return [encode_texts(cast(list[str | None], items))]


def find_duplicates_in_passes(
    batches: Iterable[Sequence[TextBatch]],
    rows: int,
    texts_of: Callable[[np.ndarray], TextBatch],
    config: DedupConfig | None = None,
    *,
    progress: Progress | None = None,
    keep_signatures: bool = True,
    watch: MemoryWatch | None = None,
) -> DedupResult:
    """:func:`find_duplicates` over text it never holds whole: ``batches`` yields the ``rows``
    documents' text once, in order, a group of chunks at a time (their signatures are taken
    and the text let go), and verification asks ``texts_of(docs)`` for the text of the
    documents in candidate pairs only (``docs`` sorted, at most ``GATHER_ROWS`` at a time, fewer
    when they are long: ``GATHER_SHINGLES``).
    The result is the one :func:`find_duplicates` gives on the same documents; without
    ``keep_signatures`` its ``signatures`` are empty (no rows), let go once the candidate
    pairs' estimates are taken, before verification. ``watch`` is as there."""
    cfg = config or DedupConfig()
    report = progress or _noop
    clock = _Clock()
    hasher = MinHasher(cfg.minhash, cfg.text, cfg.shingle)
    _check_rows(watch, rows, cfg)
    sigs = np.empty((rows, cfg.minhash.num_perm), dtype=np.uint32)
    counts = np.empty(rows, dtype=np.int64)
    digests = np.empty(rows, dtype=np.uint64)
    lengths: list[np.ndarray] = []

    def seen(chunks: Sequence[TextBatch]) -> None:
        if cfg.keep != "first":
            lengths.extend(char_lengths(c) for c in chunks)

    with clock.stage("signatures"):
        report("signatures", 0, rows)
        hashed = _signatures(
            hasher,
            batches,
            sigs,
            counts,
            digests,
            lambda done: report("signatures", done, rows),
            seen=seen,
        )
        if hashed != rows:
            raise ValueError(f"the batches held {hashed} documents, not the {rows} announced")

    def sets_of(docs: np.ndarray) -> ShingleSets:
        return _gathered_shingle_sets(texts_of, docs, counts, cfg)

    if cfg.containment is not None:
        return _by_containment(
            sigs, counts, cfg, sets_of, keep_signatures=keep_signatures, clock=clock, report=report
        )
    found, sigs = _candidates(
        sigs, counts, cfg, keep_signatures=keep_signatures, clock=clock, report=report, watch=watch
    )
    return _decide(
        found,
        sigs,
        counts,
        digests,
        cfg,
        sets_of,
        lengths_of=lambda: np.concatenate(lengths) if lengths else None,
        clock=clock,
        report=report,
    )


def _check_rows(watch: MemoryWatch | None, n: int, cfg: DedupConfig) -> None:
    """Before the signatures: what ``n`` documents hold whatever their text and duplicates."""
    if watch is not None:
        bands, _ = lsh_shape(cfg.lsh, cfg.minhash)
        per_row = 4 * cfg.minhash.num_perm + BAND_RECORD_BYTES * bands + ROW_BYTES
        watch.check(f"the signatures and band keys of {n:,} documents", n * per_row)


def _firsts(chunks: Sequence[TextBatch]) -> np.ndarray:
    """Where each chunk's documents start in the row of all of them; the last value is the total."""
    firsts = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=firsts[1:])
    return firsts


@dataclass
class _Candidates:
    """The candidate pairs of a run, with the buckets they came from and their estimates."""

    bands: int
    rows: int
    buckets: Buckets
    left: np.ndarray
    right: np.ndarray
    estimated: np.ndarray


def _candidates(
    sigs: np.ndarray,
    counts: np.ndarray,
    cfg: DedupConfig,
    *,
    keep_signatures: bool,
    clock: _Clock,
    report: Progress,
    watch: MemoryWatch | None = None,
) -> tuple[_Candidates, np.ndarray]:
    """The buckets and pairs stages, the last that need the signatures; returns the candidates
    and the signatures for the result: ``sigs``, or none (no rows) without ``keep_signatures``,
    so that the caller, binding its name to them, lets the matrix go. ``watch`` checks the pairs
    as they are found, each to hold :data:`~neardup.memory.PAIR_BYTES` to the run's end."""
    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    with clock.stage("buckets"):
        report("buckets", 0, bands)
        keys = band_keys(sigs, bands, rows)
        buckets = build_buckets(keys, eligible=counts > 0)
        del keys
        report("buckets", bands, bands)

    def check(found: int) -> None:
        if watch is not None:
            watch.check(f"{found:,} candidate pairs (and counting)", found * PAIR_BYTES)

    with clock.stage("pairs"):
        left, right = candidate_pairs(buckets, cfg.lsh.max_bucket_size, on_piece=check)
        estimated = estimate_pairs(sigs, left, right)
        report("pairs", 1, 1)
    kept = sigs if keep_signatures else np.empty((0, sigs.shape[1]), dtype=np.uint32)
    return _Candidates(bands, rows, buckets, left, right, estimated), kept


def _decide(
    found: _Candidates,
    sigs: np.ndarray,
    counts: np.ndarray,
    digests: np.ndarray,
    cfg: DedupConfig,
    shingle_sets_of: Callable[[np.ndarray], ShingleSets],
    *,
    lengths_of: Callable[[], np.ndarray | None],
    clock: _Clock,
    report: Progress,
) -> DedupResult:
    """The stages after the candidates: verification (with the shingle sets of the documents
    in candidate pairs from ``shingle_sets_of``, but for pairs of the same shingles:
    :func:`same_shingles`) and clusters (with the documents' lengths from ``lengths_of``,
    which the ``longest`` and ``shortest`` keepers need); ``sigs`` go into the result as they
    are."""
    n = int(counts.size)
    left, right, estimated = found.left, found.right, found.estimated
    candidate_count = int(left.size)

    if cfg.verify:
        with clock.stage("verify"):
            report("verify", 0, candidate_count)
            same = same_shingles(left, right, counts, digests, estimated)
            jaccard = exact_jaccard_in_blocks(left, right, counts, shingle_sets_of, known=same)
            ok = jaccard >= cfg.lsh.threshold
            left, right, jaccard, estimated = left[ok], right[ok], jaccard[ok], estimated[ok]
            report("verify", candidate_count, candidate_count)
    else:
        jaccard = estimated

    if cfg.match_empty:
        empty = np.flatnonzero(counts == 0)
        if empty.size >= 2:
            extra = empty[1:]
            left = np.concatenate((left, np.full(extra.size, empty[0], dtype=np.int64)))
            right = np.concatenate((right, extra))
            ones = np.ones(extra.size, dtype=np.float64)
            jaccard = np.concatenate((jaccard, ones))
            estimated = np.concatenate((estimated, ones))

    with clock.stage("clusters"):
        clusters = assign_clusters(n, left, right, keep=cfg.keep, lengths=lengths_of())
        report("clusters", 1, 1)

    return DedupResult(
        config=cfg,
        bands=found.bands,
        rows=found.rows,
        clusters=clusters,
        pairs=Pairs(left=left, right=right, jaccard=jaccard, estimated=estimated, exact=cfg.verify),
        buckets=found.buckets,
        signatures=sigs,
        shingle_counts=counts,
        candidate_count=candidate_count,
        seconds=clock.seconds,
    )


def _by_containment(
    sigs: np.ndarray,
    counts: np.ndarray,
    cfg: DedupConfig,
    shingle_sets_of: Callable[[np.ndarray], ShingleSets],
    *,
    keep_signatures: bool,
    clock: _Clock,
    report: Progress,
) -> DedupResult:
    """The stages after the signatures in a containment run (``cfg.containment``): each
    document's distinct shingle count, the candidates of :func:`corpus_candidates`, their exact
    (or, without verification, estimated) containment, and :func:`assign_contained`."""
    n = int(counts.size)
    threshold = float(cfg.containment or 1.0)
    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    held: ShingleSets | None = None
    with clock.stage("buckets"):
        report("buckets", 0, 1)
        if int(counts.sum()) <= HELD_SHINGLES:  # every set made once, and kept for verification
            held = shingle_sets_of(np.flatnonzero(counts > 0))
            sizes = np.zeros(n, dtype=np.int64)
            sizes[held.docs] = held.lengths
        else:
            sizes = distinct_counts(counts, shingle_sets_of)
        found = corpus_candidates(sigs, sizes, threshold, max_bucket_size=cfg.lsh.max_bucket_size)
        report("buckets", 1, 1)
    with clock.stage("pairs"):
        inner, outer = found.inner, found.outer
        estimated = estimate_pairs(sigs, np.minimum(inner, outer), np.maximum(inner, outer))
        report("pairs", 1, 1)
    candidate_count = int(inner.size)
    if cfg.verify:
        with clock.stage("verify"):
            report("verify", 0, candidate_count)
            shared = (
                intersection_pairs(held, n, inner, outer)
                if held is not None
                else shared_in_blocks(inner, outer, counts, shingle_sets_of)
            ).astype(np.float64)
            contained = shared / np.maximum(sizes[inner], 1)
            jaccard = shared / np.maximum(sizes[inner] + sizes[outer] - shared, 1)
            report("verify", candidate_count, candidate_count)
    else:
        contained = estimate_containment(estimated, sizes[inner], sizes[outer], "query_in_doc")
        jaccard = estimated
    ok = contained >= threshold - 1e-12
    inner, outer, contained, jaccard, estimated = (
        inner[ok],
        outer[ok],
        contained[ok],
        jaccard[ok],
        estimated[ok],
    )
    if cfg.match_empty:
        empty = np.flatnonzero(counts == 0)
        if empty.size >= 2:  # every empty document after the first is held in the first
            ones = np.ones(empty.size - 1, dtype=np.float64)
            inner = np.concatenate((inner, empty[1:]))
            outer = np.concatenate((outer, np.full(empty.size - 1, empty[0], dtype=np.int64)))
            contained, jaccard, estimated = (
                np.concatenate((a, ones)) for a in (contained, jaccard, estimated)
            )
    with clock.stage("clusters"):
        clusters = assign_contained(n, inner, outer, contained, sizes)
        report("clusters", 1, 1)
    order = np.lexsort((np.maximum(inner, outer), np.minimum(inner, outer)))
    pairs = Pairs(
        left=np.minimum(inner, outer)[order],
        right=np.maximum(inner, outer)[order],
        jaccard=jaccard[order],
        estimated=estimated[order],
        exact=cfg.verify,
        containment=contained[order],
    )
    buckets = Buckets(
        band=(bands + found.column).astype(np.int32),  # after the Jaccard bands, as an index files them
        key=found.key,
        offsets=found.offsets,
        members=found.members,
    )
    return DedupResult(
        config=cfg,
        bands=bands,
        rows=rows,
        clusters=clusters,
        pairs=pairs,
        buckets=buckets,
        signatures=sigs if keep_signatures else np.empty((0, sigs.shape[1]), dtype=np.uint32),
        shingle_counts=counts,
        candidate_count=candidate_count,
        seconds=clock.seconds,
    )


HELD_SHINGLES = 1 << 26
"""A containment run of at most this many shingles (8 bytes each: 512 MiB) makes every set once
and holds them all; a larger one makes them in blocks, twice."""


def distinct_counts(counts: np.ndarray, shingle_sets_of: Callable[[np.ndarray], ShingleSets]) -> np.ndarray:
    """int64: each document's distinct shingles, its sets made a block of ``VERIFY_SHINGLES`` at
    a time (``counts``: the signature pass's, repeats counted)."""
    out = np.zeros(counts.size, dtype=np.int64)
    docs = np.flatnonzero(counts > 0)
    for lo, hi in budgeted_blocks(counts[docs], VERIFY_PAIRS * 4, VERIFY_SHINGLES):
        some = docs[lo:hi]
        out[some] = shingle_sets_of(some).lengths
    return out


def shared_in_blocks(
    left: np.ndarray,
    right: np.ndarray,
    counts: np.ndarray,
    shingle_sets_of: Callable[[np.ndarray], ShingleSets],
) -> np.ndarray:
    """How many shingles each pair shares, in the blocks of :func:`exact_jaccard_in_blocks`."""
    return _in_blocks(left, right, counts, shingle_sets_of, intersection_pairs)


VERIFY_PAIRS = 1 << 16
"""Candidate pairs verified at a time: only their documents' shingle sets are held. Large, so
that a block is bounded by ``VERIFY_SHINGLES`` and its documents' text is read in few calls
(a JSON parse of a few thousand lines costs several times more per byte than one of tens of
thousands, and a component cut by a block end has documents made twice)."""
VERIFY_SHINGLES = 1 << 22
"""At most this many shingles (8 bytes each) in the documents of one verification block,
however long the documents are (a pair heavier than this is a block of its own)."""


def exact_jaccard_in_blocks(
    left: np.ndarray,
    right: np.ndarray,
    counts: np.ndarray,
    shingle_sets_of: Callable[[np.ndarray], ShingleSets],
    *,
    known: np.ndarray | None = None,
) -> np.ndarray:
    """Exact Jaccard of each candidate pair, in blocks of at most ``VERIFY_PAIRS`` pairs and
    ``VERIFY_SHINGLES`` shingles (``counts`` per document), with the pairs of a component of
    the candidate graph together: a document's shingle set is made once (twice where a block
    ends inside its component), and one block's sets are held at a time. The pairs ``known``
    (bool per pair, :func:`same_shingles`) are 1.0 without their sets: a document in none but
    those is never read again."""
    if known is None or not known.any():
        return _in_blocks(left, right, counts, shingle_sets_of, exact_jaccard_pairs)
    out = np.ones(left.size, dtype=np.float64)
    rest = np.flatnonzero(~known)
    if rest.size:
        out[rest] = _in_blocks(left[rest], right[rest], counts, shingle_sets_of, exact_jaccard_pairs)
    return out


def same_shingles(
    left: np.ndarray, right: np.ndarray, counts: np.ndarray, digests: np.ndarray, estimated: np.ndarray
) -> np.ndarray:
    """bool per pair: both documents have the same shingles the same number of times, by their
    digests and counts from the signature pass (a chance match of 64-bit digests, 2**-64, must
    also agree on every signature value), so their Jaccard is exactly 1.0. Exact copies, and
    copies that normalise to the same text, are most of the candidate pairs of a crawl."""
    same: np.ndarray = (digests[left] == digests[right]) & (counts[left] == counts[right])
    same &= estimated == 1.0
    return same


def _in_blocks(
    left: np.ndarray,
    right: np.ndarray,
    counts: np.ndarray,
    shingle_sets_of: Callable[[np.ndarray], ShingleSets],
    kernel: Callable[[ShingleSets, int, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    n = int(counts.size)
    out: np.ndarray | None = None
    order = np.argsort(components(n, left, right)[left], kind="stable")
    weights = counts[left[order]] + counts[right[order]]
    for lo, hi in budgeted_blocks(weights, VERIFY_PAIRS, VERIFY_SHINGLES):
        block = order[lo:hi]
        some_left, some_right = left[block], right[block]
        docs = sorted_unique(np.concatenate((some_left, some_right)))
        found = kernel(shingle_sets_of(docs), n, some_left, some_right)
        if out is None:
            out = np.empty(left.size, dtype=found.dtype)
        out[block] = found
    return out if out is not None else np.empty(0, dtype=np.float64)


def budgeted_blocks(weights: np.ndarray, max_items: int, budget: int) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` runs of consecutive items, in order, each of at most ``max_items`` items
    whose ``weights`` sum to at most ``budget`` (an item heavier than that alone)."""
    ends = np.cumsum(weights, dtype=np.int64)
    lo = 0
    while lo < weights.size:
        before = int(ends[lo - 1]) if lo else 0
        hi = int(np.searchsorted(ends, before + budget, side="right"))
        hi = max(lo + 1, min(hi, lo + max_items))
        yield lo, hi
        lo = hi


def _signatures(
    hasher: MinHasher,
    groups: Iterable[Sequence[TextBatch]],
    sigs: np.ndarray,
    counts: np.ndarray,
    digests: np.ndarray,
    report: Callable[[int], None],
    *,
    seen: Callable[[Sequence[TextBatch]], object] | None = None,
) -> int:
    """Signatures, shingle counts and shingle digests of the documents of ``groups`` (each a
    group of chunks, the documents in order from row 0) into ``sigs``, ``counts`` and
    ``digests``; returns how many documents there were. ``seen(chunks)`` is called with each
    group as it is taken.

    The documents are cut into pieces of at most ``_PIECE`` (never across chunks), and the
    kernel threads take the next piece as they finish one, across groups: the thread that
    finds a group used up takes the next group from ``groups`` (a reader may still be making
    it) while the other finishes its piece. Chunks of a few hundred documents (an Arrow column
    as read) keep both threads busy to the end; waiting for both at the end of each group of
    a pass left one idle 0.13-0.4 s of the 1.0-1.2 s the signatures took. Groups given as a
    list (all in memory) use no more threads than they have pieces, so a piece alone is split
    between the threads. Only this thread reports progress.
    """
    total = [0]

    def pieces() -> Iterator[tuple[TextBatch, int, int, int]]:
        start = 0
        for group in groups:
            chunks = list(group)
            if seen is not None:
                seen(chunks)
            firsts = _firsts(chunks)
            if start + int(firsts[-1]) > sigs.shape[0]:
                raise ValueError(f"the batches hold more than the {sigs.shape[0]} documents announced")
            for k, chunk in enumerate(chunks):
                for lo in range(0, len(chunk), _PIECE):
                    yield chunk, start + int(firsts[k]) + lo, lo, min(len(chunk), lo + _PIECE)
            start += int(firsts[-1])
            total[0] = start

    source = pieces()
    lock = threading.Lock()  # one thread at a time runs the generator (and reads the next group)
    workers = threads()
    if isinstance(groups, Sequence):
        workers = max(1, min(workers, sum(-(-len(c) // _PIECE) for group in groups for c in group)))
    done = [0]

    def take() -> tuple[TextBatch, int, int, int] | None:
        with lock:
            return next(source, None)

    def work(worker: int) -> None:
        while (piece := take()) is not None:
            chunk, row, lo, hi = piece
            sub = TextBatch(chunk.data, chunk.offsets[lo : hi + 1])
            rows = slice(row, row + hi - lo)
            hasher.signatures_with_counts(
                sub, parallel=workers <= 1, digests=digests[rows], into=(sigs[rows], counts[rows])
            )
            done[0] += hi - lo
            if worker == 0:
                report(done[0])

    in_threads(work, workers)
    report(total[0])
    return total[0]


def _shingle_sets(
    chunks: list[TextBatch], firsts: np.ndarray, docs: np.ndarray, *, counts: np.ndarray, cfg: DedupConfig
) -> ShingleSets:
    """Shingle sets of documents ``docs`` (sorted) of ``chunks`` (chunk k holds the documents
    from ``firsts[k]``); across chunks, the documents' text is gathered ``GATHER_ROWS`` at a time."""
    if len(chunks) == 1 or docs.size == 0:
        return shingle_sets(chunks[0], docs, counts, cfg.text, cfg.shingle)
    return _gathered_shingle_sets(functools.partial(_gather, chunks, firsts), docs, counts, cfg)


def _gather(chunks: list[TextBatch], firsts: np.ndarray, docs: np.ndarray) -> TextBatch:
    """The text of documents ``docs`` (sorted) of ``chunks``, copied into one batch in that order."""
    owner = np.searchsorted(firsts, docs, side="right") - 1
    picked: list[pa.Array] = []
    for k in sorted_unique(owner).tolist():
        chunk = chunks[k]
        buffers = [None, pa.py_buffer(chunk.offsets), pa.py_buffer(chunk.data)]
        texts = pa.Array.from_buffers(pa.large_binary(), len(chunk), buffers)
        picked.append(texts.take(pa.array(docs[owner == k] - firsts[k], pa.int64())))
    texts = pa.concat_arrays(picked)
    _, off_buf, data_buf = texts.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None and data_buf.size
        else np.zeros(1, np.uint8)
    )
    return TextBatch(data, np.ascontiguousarray(offsets))


GATHER_ROWS = 1 << 15
"""Documents whose text verification gathers at a time (from the chunks of a column, or from
``texts_of`` in :func:`find_duplicates_in_passes`)."""
GATHER_SHINGLES = 1 << 21
"""At most this many shingles in the documents gathered at a time (a few bytes of text each),
so that long documents are gathered fewer at a time. Their lines, the parsed text and the sets
are held at once: 1 << 22 added 20-30 MB to verification's peak for no speed measured
(benchmarks/RESULTS.md, section 19)."""


def _gathered_shingle_sets(
    texts_of: Callable[[np.ndarray], TextBatch], docs: np.ndarray, counts: np.ndarray, cfg: DedupConfig
) -> ShingleSets:
    """Shingle sets of documents ``docs`` (sorted), their text asked of ``texts_of`` a slice of
    at most ``GATHER_ROWS`` documents and ``GATHER_SHINGLES`` shingles at a time: only one
    slice's text is held, and each slice's sets go straight into the one buffer of all of them."""
    bounds = np.zeros(docs.size + 1, dtype=np.int64)
    np.cumsum(counts[docs], out=bounds[1:])
    values = np.empty(int(bounds[-1]), dtype=np.uint64)
    lengths = np.zeros(docs.size, dtype=np.int64)
    for lo, hi in budgeted_blocks(counts[docs], GATHER_ROWS, GATHER_SHINGLES):
        some = docs[lo:hi]
        gathered = texts_of(some)
        if len(gathered) != some.size:
            raise ValueError(f"asked for the text of {some.size} documents, got {len(gathered)}")
        room = values[bounds[lo] : bounds[hi]]
        sets = shingle_sets(gathered, np.arange(some.size), counts[some], cfg.text, cfg.shingle, values=room)
        lengths[lo:hi] = sets.lengths
    return ShingleSets(docs, bounds[:-1], lengths, values)


def char_lengths(batch: TextBatch) -> np.ndarray:
    """Characters per document: UTF-8 bytes that do not continue a character."""
    starts = (batch.data & 0xC0) != 0x80
    cum = np.concatenate(([0], np.cumsum(starts[: int(batch.offsets[-1])], dtype=np.int64)))
    lengths: np.ndarray = cum[batch.offsets[1:]] - cum[batch.offsets[:-1]]
    return lengths


def arrow_to_batches(column: pa.Array | pa.ChunkedArray) -> list[TextBatch]:
    """A string column as one :class:`TextBatch` per chunk, without copying the text."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return [arrow_to_batch(chunk) for chunk in chunks if len(chunk)] or [arrow_to_batch(column)]


def arrow_to_batch(column: pa.Array | pa.ChunkedArray) -> TextBatch:
    """A string column as a :class:`TextBatch`, without copying text per row: a ``large_string``
    array's own buffers, a ``string`` array's text with its offsets widened. Nulls count as
    empty; only when a null's slot holds bytes is the text copied to drop them."""
    if isinstance(column, pa.ChunkedArray):  # combine_chunks copies even a single chunk
        if column.num_chunks == 1:
            column = column.chunk(0)
        else:
            column = column.combine_chunks() if column.num_chunks else pa.array([], pa.large_string())
    arr = column if pa.types.is_large_string(column.type) else column.cast(pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    if arr.null_count:
        nulls = pc.is_null(arr).to_numpy(zero_copy_only=False)
        if np.any(np.diff(offsets)[nulls]):
            return arrow_to_batch(pc.fill_null(arr, ""))
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)
        if data_buf is not None and data_buf.size
        else np.zeros(1, np.uint8)
    )
    return TextBatch(data=data, offsets=np.ascontiguousarray(offsets))


def dedup(
    data: Sequence[str] | Sequence[Mapping[str, Any]] | pa.Table | Any,
    config: DedupConfig | None = None,
    *,
    text_column: str = "text",
    progress: Progress | None = None,
) -> DedupResult:
    """Find near-duplicates in a list of strings, a list of records, or a table.

    ``data`` may be a list of strings, a list of dicts (``text_column`` holds the text), or a
    table: anything with Arrow's C stream interface (a ``pyarrow.Table`` or
    ``RecordBatchReader``, a polars ``DataFrame``, a duckdb relation, a pandas ``DataFrame``),
    or a Hugging Face ``datasets.Dataset`` (see :func:`neardup.io.frames.arrow_table`). Of a
    table only the text column is read, and its text is not copied where it is Arrow strings.

    >>> r = dedup(["The cat sat on the mat.", "the cat sat on the mat", "Dogs bark."])
    >>> r.keep.tolist()
    [True, False, True]
    """
    if is_frame(data):
        column = arrow_table(data, columns=[text_column]).column(text_column)
        if not is_text_column(column.type):
            raise InputError(f"column {text_column!r} holds {column.type}, not text")
        return find_duplicates(arrow_to_batches(column), config, progress=progress)
    items = list(data)
    if items and isinstance(items[0], Mapping):
        texts = []
        for i, rec in enumerate(items):
            if text_column not in rec:
                raise MissingColumnError(f"record {i} has no field {text_column!r}")
            texts.append(rec[text_column] or "")
    else:
        texts = [t or "" for t in items]
    return find_duplicates(encode_texts(texts), config, progress=progress)


def is_text_column(dtype: pa.DataType) -> bool:
    """Whether a column of ``dtype`` holds text (strings of any layout, dictionary-encoded or not,
    or nulls alone)."""
    value = dtype.value_type if pa.types.is_dictionary(dtype) else dtype
    return bool(
        pa.types.is_null(value)
        or pa.types.is_string(value)
        or pa.types.is_large_string(value)
        or pa.types.is_string_view(value)
    )
