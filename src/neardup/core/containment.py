"""Containment search with MinHash: size partitions, their band layouts, and the estimate.

The containment of a query set Q in a document set X is ``|Q ∩ X| / |Q|`` (``query_in_doc``);
``doc_in_query`` is ``|Q ∩ X| / |X|``. A containment ``c`` is a Jaccard of
``c * |Q| / (|Q| + |X| - c * |Q|)`` (swap the sizes for ``doc_in_query``), so what a band shape
must find depends on both sizes: a paragraph inside a document ten times its length has a
Jaccard near 0.07 at containment 0.7. This follows LSH Ensemble (Zhu et al., VLDB 2016):

- Documents are kept in **partitions by set size**: partition ``p`` holds the sizes from
  ``2**(p/2)`` up to (not including) ``2**((p+1)/2)``, so a partition's sizes differ by at most
  a factor of 1.42. The partitions are fixed in advance and cover every size, so an index needs
  no size seen before its first insert, and inserts never move a document between partitions.
- Each document is filed under the band keys of every **layout** in :data:`LAYOUT_ROWS`
  (``num_perm // rows`` bands of ``rows`` values each), salted by its partition, so a
  partition's documents share buckets only with each other.
- A query chooses, **per partition**, the layout and how many of its bands to look up
  (:func:`query_plan`): the most selective shape whose chance of finding a document at exactly
  the asked containment is at least :data:`RECALL_AT_THRESHOLD`, judged for the partition's size
  that makes that document hardest to find. Partitions whose sizes cannot reach the containment
  are skipped.

Candidates are then scored by :func:`estimate_containment` from the signatures' Jaccard
estimate and both set sizes, or exactly from stored shingle sets.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from neardup.core.lsh import band_keys
from neardup.core.minhash import estimate_pairs
from neardup.errors import ConfigError

Direction = Literal["query_in_doc", "doc_in_query"]
DIRECTIONS: tuple[Direction, ...] = ("query_in_doc", "doc_in_query")

LAYOUT_ROWS: tuple[int, ...] = (1, 2, 4, 8)
"""The band widths every document is filed under; a query picks one per partition."""
RECALL_AT_THRESHOLD = 0.97
"""The least chance a chosen shape gives a document at exactly the asked containment."""
PARTITIONS_PER_OCTAVE = 2
_GRID = 257


@dataclass(frozen=True)
class Layout:
    """One band layout: ``bands`` bands of ``rows`` signature values, filed in band columns
    ``first_column .. first_column + bands - 1`` of the containment columns."""

    rows: int
    bands: int
    first_column: int


def layouts(num_perm: int) -> list[Layout]:
    """The layouts of :data:`LAYOUT_ROWS` that a ``num_perm`` signature has room for."""
    out: list[Layout] = []
    column = 0
    for rows in LAYOUT_ROWS:
        bands = num_perm // rows
        if bands == 0:
            break
        out.append(Layout(rows, bands, column))
        column += bands
    return out


def containment_columns(num_perm: int) -> int:
    """How many band columns a document takes in a containment index."""
    return sum(layout.bands for layout in layouts(num_perm))


def partition_of(sizes: np.ndarray) -> np.ndarray:
    """int64: each set size's partition (sizes below 1 count as 1)."""
    s = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
    parts: np.ndarray = np.floor(np.log2(s) * PARTITIONS_PER_OCTAVE + 1e-9).astype(np.int64)
    return parts


def partition_bounds(partition: int) -> tuple[int, int]:
    """The least and the greatest set size of ``partition``."""
    lo = math.ceil(2.0 ** (partition / PARTITIONS_PER_OCTAVE) - 1e-9)
    hi = math.ceil(2.0 ** ((partition + 1) / PARTITIONS_PER_OCTAVE) - 1e-9) - 1
    return lo, max(lo, hi)


def _salts(partitions: np.ndarray) -> np.ndarray:
    """A 64-bit salt per partition (splitmix64 of the partition number)."""
    z = (np.asarray(partitions, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def layout_keys(signatures: np.ndarray) -> np.ndarray:
    """uint64[n, containment_columns]: every layout's band keys of each signature, unsalted."""
    sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
    pieces = [
        band_keys(sigs[:, : lay.bands * lay.rows], lay.bands, lay.rows) for lay in layouts(sigs.shape[1])
    ]
    out: np.ndarray = np.concatenate(pieces, axis=1) if pieces else np.empty((sigs.shape[0], 0), np.uint64)
    return out


def containment_band_keys(signatures: np.ndarray, partitions: np.ndarray) -> np.ndarray:
    """uint64[n, containment_columns]: every layout's band keys of each signature, salted by
    the document's partition: what a containment index files a document under."""
    out: np.ndarray = layout_keys(signatures) ^ _salts(np.asarray(partitions, dtype=np.int64))[:, None]
    return out


def partition_salts(partitions: np.ndarray) -> np.ndarray:
    """uint64: each partition's salt, as :func:`containment_band_keys` applies it."""
    return _salts(np.asarray(partitions, dtype=np.int64))


def filed_keys(signatures: np.ndarray, sizes: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """uint64[n, containment_columns]: what a containment index files each document under, by its
    signature and distinct shingle count; zeros for a document not ``eligible`` (an empty one,
    in no band table)."""
    sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
    out = np.zeros((sigs.shape[0], containment_columns(sigs.shape[1])), dtype=np.uint64)
    if eligible.any():
        sizes = np.asarray(sizes, dtype=np.int64)
        out[eligible] = containment_band_keys(sigs[eligible], partition_of(sizes[eligible]))
    return out


@dataclass(frozen=True)
class Probe:
    """Where one query looks in one partition: the first ``bands`` bands of ``layout``."""

    partition: int
    layout: Layout
    bands: int


def reachable(partition: int, query_size: int, threshold: float, direction: Direction) -> bool:
    """Whether a document of ``partition`` can have containment ``threshold`` with the query."""
    lo, hi = partition_bounds(partition)
    if direction == "query_in_doc":  # |Q ∩ X| / |Q| <= |X| / |Q|
        return hi >= threshold * query_size - 1e-9
    return lo * threshold <= query_size + 1e-9  # |Q ∩ X| / |X| <= |Q| / |X|


def jaccard_at(
    containment: np.ndarray, query_size: float, doc_size: float, direction: Direction
) -> np.ndarray:
    """The Jaccard that ``containment`` means for these two set sizes."""
    c = np.asarray(containment, dtype=np.float64)
    inner, other = (query_size, doc_size) if direction == "query_in_doc" else (doc_size, query_size)
    shared = c * inner
    out: np.ndarray = shared / np.maximum(inner + other - shared, 1e-12)
    return out


def query_plan(
    query_size: int, partitions: list[int], threshold: float, direction: Direction, num_perm: int
) -> list[Probe]:
    """The probe of each partition a document at ``threshold`` could be in (see the module
    docstring); a query of no shingles probes nothing."""
    if query_size <= 0:
        return []
    probes: list[Probe] = []
    for p in partitions:
        if not reachable(p, query_size, threshold, direction):
            continue
        lo, hi = partition_bounds(p)
        # the size that gives the least Jaccard at a given containment: the largest document for
        # query_in_doc, the smallest one for doc_in_query. The Jaccard depends on the sizes only
        # through their ratio: rounded up (a lower Jaccard, so no fewer bands), shapes repeat
        ratio = hi / query_size if direction == "query_in_doc" else query_size / max(lo, 1)
        step = math.ceil(math.log(max(ratio, 1e-9)) / _RATIO_STEP - 1e-9)
        probes.append(Probe(p, *_shape_at(threshold, step, num_perm)))
    return probes


_RATIO_STEP = math.log(1.01)
"""Size ratios are rounded up to a power of 1.01 before a shape is chosen for them."""


@functools.lru_cache(maxsize=65536)
def _shape_at(threshold: float, step: int, num_perm: int) -> tuple[Layout, int]:
    """The shape for ``threshold`` where the other set is ``1.01**step`` times the one whose
    share is asked (see :func:`_best_shape`)."""
    ratio = math.exp(step * _RATIO_STEP)
    grid = np.linspace(0.0, threshold, _GRID)
    s_at = float(jaccard_at(np.array(threshold), 1.0, ratio, "query_in_doc"))
    return _best_shape(s_at, jaccard_at(grid, 1.0, ratio, "query_in_doc"), num_perm)


def _best_shape(s_at: float, s_below: np.ndarray, num_perm: int) -> tuple[Layout, int]:
    """The (layout, bands) of least false-candidate area below the threshold among those finding
    Jaccard ``s_at`` with at least RECALL_AT_THRESHOLD; else the one most likely to find it."""
    best: tuple[float, Layout, int] | None = None
    fallback: tuple[float, Layout, int] | None = None
    for layout in layouts(num_perm):
        p_band = s_at**layout.rows
        if p_band >= 1.0:
            need = 1
        elif p_band <= 0.0:
            need = layout.bands + 1
        else:  # least b with 1 - (1 - p)^b >= R
            need = math.ceil(math.log1p(-RECALL_AT_THRESHOLD) / math.log1p(-p_band) - 1e-12)
        if need <= layout.bands:
            area = float(np.trapezoid(1.0 - (1.0 - s_below**layout.rows) ** need))
            if best is None or area < best[0]:
                best = (area, layout, max(1, need))
        found = 1.0 - (1.0 - p_band) ** layout.bands
        if fallback is None or found > fallback[0]:
            fallback = (found, layout, layout.bands)
    chosen = best or fallback
    if chosen is None:
        raise ConfigError(f"num_perm {num_perm} leaves no band layout for containment search")
    return chosen[1], chosen[2]


def estimate_containment(
    jaccard: np.ndarray, query_sizes: np.ndarray, doc_sizes: np.ndarray, direction: Direction
) -> np.ndarray:
    """Containment from a Jaccard (estimate) and both set sizes: the shared count is
    ``J * (|Q| + |X|) / (1 + J)``, clipped to the smaller set, over the direction's denominator."""
    j = np.asarray(jaccard, dtype=np.float64)
    q = np.asarray(query_sizes, dtype=np.float64)
    x = np.asarray(doc_sizes, dtype=np.float64)
    shared = np.minimum(j * (q + x) / (1.0 + j), np.minimum(q, x))
    denominator = q if direction == "query_in_doc" else x
    out: np.ndarray = np.where(denominator > 0, shared / np.maximum(denominator, 1.0), 0.0)
    return out


def containment_sigma(
    containment: np.ndarray,
    query_sizes: np.ndarray,
    doc_sizes: np.ndarray,
    direction: Direction,
    num_perm: int,
) -> np.ndarray:
    """The standard deviation of :func:`estimate_containment` at a true ``containment`` (delta
    method over the binomial Jaccard estimate of ``num_perm`` values)."""
    c = np.asarray(containment, dtype=np.float64)
    q = np.asarray(query_sizes, dtype=np.float64)
    x = np.asarray(doc_sizes, dtype=np.float64)
    inner = q if direction == "query_in_doc" else x
    shared = c * inner
    j = shared / np.maximum(q + x - shared, 1e-12)
    slope = (q + x) / (inner * (1.0 + j) ** 2)  # d containment / d J
    out: np.ndarray = slope * np.sqrt(j * (1.0 - j) / num_perm)
    return out


def check_direction(direction: object) -> Direction:
    """``direction`` if it is one of :data:`DIRECTIONS`, else a :class:`ConfigError`."""
    if direction not in DIRECTIONS:
        raise ConfigError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    return direction


def check_containment(value: object, name: str = "min_containment") -> float:
    """``value`` as a float in (0, 1], else a :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{name} must be in (0, 1], got {value!r}")
    return float(value)


# -- containment within one corpus (dedup --containment) ------------------------------------------


@dataclass(frozen=True)
class ContainedPairs:
    """Candidate pairs of a corpus for containment: document ``inner[k]`` may be contained in
    the at least as large document ``outer[k]`` (equal sizes: ``outer[k]`` comes first), and the
    buckets that made them candidates: bucket ``i`` is containment column ``column[i]`` (see
    :func:`layouts`) with salted band key ``key[i]``, holding ``members[offsets[i]:offsets[i+1]]``."""

    inner: np.ndarray
    outer: np.ndarray
    column: np.ndarray
    key: np.ndarray
    offsets: np.ndarray
    members: np.ndarray


_STRIDE = np.uint64(0x9E3779B97F4A7C15)


def corpus_candidates(
    signatures: np.ndarray, sizes: np.ndarray, threshold: float, *, max_bucket_size: int
) -> ContainedPairs:
    """The pairs of documents (``sizes``: distinct shingle counts, 0 for an empty document, which
    is never a candidate) where the smaller one may hold ``threshold`` of its shingles in the
    larger, by the partitions and layouts of an index: every document is filed under its
    partition's layouts and probes each partition of its size or larger as a query of its
    partition's least size would (:func:`query_plan`). A bucket holding more than
    ``max_bucket_size`` filed documents pairs each probe with its largest one only."""
    sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
    sizes = np.asarray(sizes, dtype=np.int64)
    num_perm = sigs.shape[1]
    docs = np.flatnonzero(sizes > 0)
    empty = np.empty(0, dtype=np.int64)
    if docs.size < 2:
        return ContainedPairs(empty, empty, empty, np.empty(0, np.uint64), np.zeros(1, np.int64), empty)
    keys = layout_keys(sigs[docs])
    parts = partition_of(sizes[docs])
    present = np.unique(parts).tolist()
    members_of = {p: np.flatnonzero(parts == p) for p in present}  # places in ``docs``
    probes_into: dict[int, list[tuple[int, Probe]]] = {p: [] for p in present}
    for p_query in present:
        lo, _ = partition_bounds(p_query)
        larger = [p for p in present if p >= p_query]
        for probe in query_plan(lo, larger, threshold, "query_in_doc", num_perm):
            probes_into[probe.partition].append((p_query, probe))
    found_inner: list[np.ndarray] = []
    found_outer: list[np.ndarray] = []
    bucket_parts: list[tuple[np.ndarray, ...]] = []  # (bucket, column, inner, outer) per hit
    for p_doc in present:
        plans = probes_into[p_doc]
        if not plans:
            continue
        filed_docs = members_of[p_doc]
        columns = np.unique(np.concatenate([pr.layout.first_column + np.arange(pr.bands) for _, pr in plans]))
        salt = _salts(np.array([p_doc]))[0]
        filed = (keys[np.ix_(filed_docs, columns)] ^ salt) + columns.astype(np.uint64) * _STRIDE
        filed_doc = np.broadcast_to(filed_docs[:, None], filed.shape).ravel()
        filed = filed.ravel()
        # by bucket, then the largest documents first (then the earliest): the ones a capped
        # bucket keeps
        order = np.lexsort((filed_doc, -sizes[docs[filed_doc]], filed))
        filed, filed_doc = filed[order], filed_doc[order]
        for p_query, probe in plans:
            query_docs = members_of[p_query]
            cols = probe.layout.first_column + np.arange(probe.bands)
            asked = ((keys[np.ix_(query_docs, cols)] ^ salt) + cols.astype(np.uint64) * _STRIDE).ravel()
            asker = np.repeat(query_docs, cols.size)
            asked_column = np.tile(cols, query_docs.size)
            start = np.searchsorted(filed, asked, side="left")
            stop = np.searchsorted(filed, asked, side="right")
            # a crowded bucket (a value many rows share, or many copies of one row) pairs the
            # probe with its largest row only: a star, as a Jaccard run links a crowded bucket
            stop = np.where(stop - start > max_bucket_size, start + 1, stop)
            hits = stop - start
            if not hits.any():
                continue
            at = np.repeat(start - (np.cumsum(hits) - hits), hits) + np.arange(int(hits.sum()))
            inner, outer = np.repeat(asker, hits), filed_doc[at]
            a, b = docs[inner], docs[outer]
            ok = (sizes[a] < sizes[b]) | ((sizes[a] == sizes[b]) & (a > b))
            if not ok.any():
                continue
            ok[ok] = _may_hold(sigs, a[ok], b[ok], sizes, threshold)
            found_inner.append(a[ok])
            found_outer.append(b[ok])
            bucket_parts.append((filed[at[ok]], np.repeat(asked_column, hits)[ok], a[ok], b[ok]))
    return _contained_pairs(found_inner, found_outer, bucket_parts, sizes.size)


SIGMAS = 4.0
"""A candidate whose signature estimate is this many standard deviations below the Jaccard its
sizes need at the threshold is dropped before verification."""


def _may_hold(
    sigs: np.ndarray, inner: np.ndarray, outer: np.ndarray, sizes: np.ndarray, threshold: float
) -> np.ndarray:
    """bool: whether each pair's estimated Jaccard is within :data:`SIGMAS` of the Jaccard that
    ``inner`` holding ``threshold`` of itself in ``outer`` means (an estimate from ``num_perm``
    values is binomial: a true pair falls that far below with odds under 1 in 30,000)."""
    need = threshold * sizes[inner] / (sizes[inner] + sizes[outer] - threshold * sizes[inner])
    sigma = np.sqrt(need * (1.0 - need) / sigs.shape[1])
    out: np.ndarray = estimate_pairs(sigs, inner, outer) >= need - SIGMAS * sigma - 1e-12
    return out


def _contained_pairs(
    found_inner: list[np.ndarray],
    found_outer: list[np.ndarray],
    bucket_parts: list[tuple[np.ndarray, ...]],
    n: int,
) -> ContainedPairs:
    """The pairs found, each once, and the buckets that found them with their members."""
    empty = np.empty(0, dtype=np.int64)
    if not found_inner:
        return ContainedPairs(empty, empty, empty, np.empty(0, np.uint64), np.zeros(1, np.int64), empty)
    packed = np.unique(np.concatenate(found_inner) * n + np.concatenate(found_outer))
    inner, outer = packed // n, packed % n
    bucket = np.concatenate([np.concatenate([v, v]) for v, _, _, _ in bucket_parts])
    column = np.concatenate([np.concatenate([c, c]) for _, c, _, _ in bucket_parts])
    member = np.concatenate([np.concatenate([i, o]) for _, _, i, o in bucket_parts])
    values, first, slot = np.unique(bucket, return_index=True, return_inverse=True)
    rows = np.unique(slot.astype(np.int64) * n + member)
    group = rows // n
    offsets = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(group, minlength=values.size), out=offsets[1:])
    columns = column[first]
    keys = values - columns.astype(np.uint64) * _STRIDE  # the salted band key
    return ContainedPairs(inner, outer, columns.astype(np.int64), keys, offsets, rows % n)
