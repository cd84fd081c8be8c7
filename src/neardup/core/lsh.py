"""Band keys, buckets and candidate pairs.

Band j of a signature is its values ``[j*rows, (j+1)*rows)``; its key is XXH64
of those uint32 values as little-endian bytes. A shape may have a second layer
of bands over the same values (``num_perm < bands * rows <= 2 * num_perm``):
with ``per_layer = num_perm // rows``, band ``per_layer + k`` holds the values
``k, k + per_layer, k + 2 * per_layer, ...``, one from each of ``rows``
different bands of the first layer when ``per_layer >= rows``, so the two layers
miss different pairs. Documents that share a key in the same band share a
bucket. A bucket of up to ``max_bucket_size`` members yields all pairs; a
larger one yields a star from its smallest member, so boilerplate cannot blow
up the pair count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from neardup.config import check_shape
from neardup.core.hashing import xxh64_bytes, xxh64_lanes
from neardup.core.jit import in_ranges, kernel, njit
from neardup.core.sorting import sorted_unique, stable_sort_u64

_SERIAL_BELOW = 64  # fewer signatures than this skip the thread pool


class Buckets(NamedTuple):
    """Buckets with two or more members; bucket i holds
    ``members[offsets[i]:offsets[i+1]]`` (ascending document indices)."""

    band: np.ndarray  # int32
    key: np.ndarray  # uint64
    offsets: np.ndarray  # int64, len + 1
    members: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.band)

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


@kernel
def _band_keys_range(sigs: np.ndarray, out: np.ndarray, rows: int, lo: int, hi: int) -> None:
    """Rows ``lo:hi`` of ``out``: band j's key is XXH64 of its ``rows`` values as little-endian
    bytes, the first layer's read in place, the second layer's gathered (see the module)."""
    seed = np.uint64(0)
    per_layer = sigs.shape[1] // rows
    first = min(out.shape[1], per_layer)
    gathered = np.empty(rows, dtype=np.uint32)
    gathered_bytes = gathered.view(np.uint8)
    for d in range(lo, hi):
        row = sigs[d]
        row_bytes = row.view(np.uint8)
        for j in range(first):
            out[d, j] = xxh64_bytes(row_bytes, 4 * j * rows, 4 * rows, seed)
        for j in range(first, out.shape[1]):
            for i in range(rows):
                gathered[i] = row[j - per_layer + i * per_layer]
            out[d, j] = xxh64_bytes(gathered_bytes, 0, 4 * rows, seed)


@kernel
def _band_keys_lanes(sigs: np.ndarray, out: np.ndarray, rows: int, lo: int, hi: int) -> None:
    """:func:`_band_keys_range` for bands of whole 8-byte lanes (an even ``rows``): the same
    XXH64, read a lane at a time."""
    lanes = rows // 2
    per_layer = sigs.shape[1] // rows
    first = min(out.shape[1], per_layer)
    gathered = np.empty(rows, dtype=np.uint32)
    gathered_lanes = gathered.view(np.uint64)
    for d in range(lo, hi):
        row = sigs[d]
        row_lanes = row.view(np.uint64)
        for j in range(first):
            out[d, j] = xxh64_lanes(row_lanes, j * lanes, lanes)
        for j in range(first, out.shape[1]):
            for i in range(rows):
                gathered[i] = row[j - per_layer + i * per_layer]
            out[d, j] = xxh64_lanes(gathered_lanes, 0, lanes)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """uint64[n, bands]: the key of every band of every signature (bands past
    ``num_perm // rows`` are the second layer's, see the module docstring)."""
    sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
    check_shape(bands, rows, sigs.shape[1])
    n = sigs.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    task = _band_keys_lanes if rows % 2 == 0 else _band_keys_range
    in_ranges(lambda lo, hi: task(sigs, out, rows, lo, hi), n, _SERIAL_BELOW)
    return out


_PARALLEL_BUCKETS_FROM = 16384
"""Documents from which the bands are grouped on the kernel threads, each taking a range of bands."""


@kernel
def _shared_runs(
    sorted_keys: np.ndarray, order: np.ndarray, doc_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of two or more equal keys in ``sorted_keys``: their documents
    (``doc_ids[order[i]]`` for each ``i`` in a run, in run order), run lengths and keys."""
    n = sorted_keys.size
    members = np.empty(n, dtype=np.int64)
    sizes = np.empty(n // 2, dtype=np.int64)
    first_keys = np.empty(n // 2, dtype=np.uint64)
    runs = 0
    held = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and sorted_keys[j] == sorted_keys[i]:
            j += 1
        if j - i >= 2:
            sizes[runs] = j - i
            first_keys[runs] = sorted_keys[i]
            runs += 1
            for k in range(i, j):
                members[held] = doc_ids[order[k]]
                held += 1
        i = j
    return members[:held].copy(), sizes[:runs].copy(), first_keys[:runs].copy()


def build_buckets(keys: np.ndarray, eligible: np.ndarray | None = None) -> Buckets:
    """Group documents by (band, key), keeping groups of two or more.

    ``eligible`` (bool per document) leaves out documents that must never
    collide, such as empty ones.
    """
    n, n_bands = keys.shape
    doc_ids = np.arange(n, dtype=np.int64)
    if eligible is not None:
        doc_ids = doc_ids[eligible]
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None] = [None] * n_bands

    def group(lo: int, hi: int) -> None:
        for j in range(lo, hi):  # one pass per band; numpy's sort and the kernel release the GIL
            order, sk = stable_sort_u64(keys[doc_ids, j])
            members, sizes, first_keys = _shared_runs(sk, order, doc_ids)
            if sizes.size:
                found[j] = (members, sizes, first_keys)

    in_ranges(group, n_bands, 2 if doc_ids.size >= _PARALLEL_BUCKETS_FROM else n_bands + 1)
    grouped = [(j, f) for j, f in enumerate(found) if f is not None]
    bands_out = [np.full(sizes.size, j, dtype=np.int32) for j, (_, sizes, _) in grouped]
    members_out = [members for _, (members, _, _) in grouped]
    sizes_out = [sizes for _, (_, sizes, _) in grouped]
    keys_out = [first_keys for _, (_, _, first_keys) in grouped]
    if not bands_out:
        return Buckets(
            band=np.empty(0, np.int32),
            key=np.empty(0, np.uint64),
            offsets=np.zeros(1, np.int64),
            members=np.empty(0, np.int64),
        )
    sizes = np.concatenate(sizes_out)
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return Buckets(
        band=np.concatenate(bands_out),
        key=np.concatenate(keys_out),
        offsets=offsets,
        members=np.concatenate(members_out),
    )


PIECE_PAIRS = 1 << 22
"""Pairs (with repeats) one piece of :func:`candidate_pair_pieces` enumerates at most, unless one
document alone leads more: 32 MB of packed pairs, sorted and made unique before the next piece."""


@njit(cache=True)
def _distinct_buckets(offsets: np.ndarray, members: np.ndarray) -> np.ndarray:
    """bool per bucket: False for a bucket whose members equal an earlier bucket's (another
    band's, say: exact copies share every band), whose pairs that bucket gives already. One
    pass in bucket order over an open-addressing table of the distinct buckets so far, keyed by
    the hash of their members (no sort: 342,000 buckets in 0.01 s where a merge sort of their
    hashes took 0.1)."""
    nb = offsets.size - 1
    distinct = np.ones(nb, dtype=np.bool_)
    lanes = members.view(np.uint64)
    size = 16
    while size < 2 * nb:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.full(size, -1, dtype=np.int64)  # a distinct bucket, or -1
    hashes = np.empty(nb, dtype=np.uint64)
    for b in range(nb):
        lo, hi = offsets[b], offsets[b + 1]
        h = xxh64_lanes(lanes, lo, hi - lo)
        hashes[b] = h
        i = h & mask
        while True:
            a = slots[i]
            if a < 0:
                slots[i] = b
                break
            if hashes[a] == h and offsets[a + 1] - offsets[a] == hi - lo:
                same = True
                for k in range(hi - lo):
                    if members[offsets[a] + k] != members[lo + k]:
                        same = False
                        break
                if same:
                    distinct[b] = False
                    break
            i = (i + np.uint64(1)) & mask
    return distinct


@njit(cache=True)
def _pairs_led(
    offsets: np.ndarray, members: np.ndarray, distinct: np.ndarray, max_bucket_size: int, n: int
) -> np.ndarray:
    """int64[n]: the pairs (with repeats) each document leads, as the smaller of the two."""
    led = np.zeros(n, dtype=np.int64)
    for b in range(offsets.size - 1):
        if not distinct[b]:
            continue
        lo, hi = offsets[b], offsets[b + 1]
        if hi - lo <= max_bucket_size:
            for i in range(lo, hi - 1):
                led[members[i]] += hi - 1 - i
        else:
            led[members[lo]] += hi - lo - 1
    return led


@njit(cache=True)
def _pairs_between(
    offsets: np.ndarray,
    members: np.ndarray,
    distinct: np.ndarray,
    max_bucket_size: int,
    first: int,
    last: int,
    total: int,
) -> np.ndarray:
    """The ``total`` pairs (with repeats) led by documents ``first <= d < last``, packed as
    ``left << 32 | right``; a bucket's members are ascending, so its leaders there are a run."""
    out = np.empty(total, dtype=np.uint64)
    w = 0
    for b in range(offsets.size - 1):
        if not distinct[b]:
            continue
        lo, hi = offsets[b], offsets[b + 1]
        if members[lo] >= last or members[hi - 1] < first:
            continue
        if hi - lo <= max_bucket_size:
            i0 = lo + np.searchsorted(members[lo:hi], first)
            i1 = lo + np.searchsorted(members[lo:hi], last)
            for i in range(i0, min(i1, hi - 1)):
                high = np.uint64(members[i]) << np.uint64(32)
                for j in range(i + 1, hi):
                    out[w] = high | np.uint64(members[j])
                    w += 1
        elif members[lo] >= first:
            high = np.uint64(members[lo]) << np.uint64(32)
            for j in range(lo + 1, hi):
                out[w] = high | np.uint64(members[j])
                w += 1
    return out[:w]


def candidate_pair_pieces(
    buckets: Buckets, max_bucket_size: int, piece_pairs: int = PIECE_PAIRS
) -> Iterator[np.ndarray]:
    """The unique candidate pairs, packed as ``left << 32 | right`` (uint64), in ascending pieces:
    their concatenation is sorted and unique. A piece holds the pairs of a range of smaller
    members, enumerated (about ``piece_pairs`` with repeats) and made unique on its own, so memory
    holds one piece's repeats at a time whatever the buckets; a bucket equal to an earlier one
    (exact copies fill the same bucket in every band) is skipped."""
    if len(buckets) == 0:
        return
    offsets, members = buckets.offsets, buckets.members
    distinct = _distinct_buckets(offsets, members)
    led = _pairs_led(offsets, members, distinct, max_bucket_size, int(members.max()) + 1)
    ends = np.cumsum(led)
    del led
    total = int(ends[-1])
    first = 0
    while first < ends.size:
        done = int(ends[first - 1]) if first else 0
        if done == total:
            return
        # the documents whose pairs fit in one piece (at least one document)
        last = max(first + 1, int(np.searchsorted(ends, done + piece_pairs, side="right")))
        count = int(ends[last - 1]) - done
        yield sorted_unique(_pairs_between(offsets, members, distinct, max_bucket_size, first, last, count))
        first = last


def unpack_pairs(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(left, right)`` (int64) of pairs packed as ``left << 32 | right``."""
    return (packed >> np.uint64(32)).astype(np.int64), (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)


def candidate_pairs(
    buckets: Buckets,
    max_bucket_size: int,
    *,
    piece_pairs: int = PIECE_PAIRS,
    on_piece: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Unique candidate pairs ``(left, right)`` with ``left < right``, sorted: every pair of a
    bucket of up to ``max_bucket_size`` members, a star from the smallest member of a larger one.
    ``on_piece(found)`` is called with the unique pairs found so far after each piece
    (:func:`candidate_pair_pieces`); what it raises ends the enumeration."""
    pieces = []
    found = 0
    for piece in candidate_pair_pieces(buckets, max_bucket_size, piece_pairs):
        pieces.append(piece)
        found += piece.size
        if on_piece is not None:
            on_piece(found)
    if not pieces:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    packed = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    del pieces
    return unpack_pairs(packed)
