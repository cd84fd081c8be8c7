"""Band keys, buckets and candidate pairs.

Band j of a signature is its values ``[j*rows, (j+1)*rows)``; its key is XXH64
of those uint32 values as little-endian bytes. Documents that share a key in
the same band share a bucket. A bucket of up to ``max_bucket_size`` members
yields all pairs; a larger one yields a star from its smallest member, so
boilerplate cannot blow up the pair count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from neardup.core.hashing import xxh64_bytes
from neardup.core.jit import in_ranges, kernel
from neardup.core.sorting import sorted_unique, stable_sort_u64
from neardup.errors import ConfigError

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
def _band_keys_range(sig_bytes: np.ndarray, out: np.ndarray, width: int, lo: int, hi: int) -> None:
    """Rows ``lo:hi`` of ``out``: band j's key is XXH64 of bytes ``j*width:(j+1)*width``."""
    seed = np.uint64(0)
    for d in range(lo, hi):
        row = sig_bytes[d]
        for j in range(out.shape[1]):
            out[d, j] = xxh64_bytes(row, j * width, width, seed)


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """uint64[n, bands]: the key of every band of every signature."""
    sigs = np.ascontiguousarray(signatures, dtype=np.uint32)
    if sigs.shape[1] != bands * rows:
        raise ConfigError(
            f"signatures have {sigs.shape[1]} values but bands * rows = {bands} * {rows} = {bands * rows}"
        )
    sig_bytes = sigs.view(np.uint8)
    out = np.empty((sigs.shape[0], bands), dtype=np.uint64)
    in_ranges(lambda lo, hi: _band_keys_range(sig_bytes, out, 4 * rows, lo, hi), sigs.shape[0], _SERIAL_BELOW)
    return out


_PARALLEL_BUCKETS_FROM = 16384
"""Documents from which the bands are grouped on the kernel threads, each taking a range of bands."""


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
        for j in range(lo, hi):  # one vectorised pass per band; numpy's sort releases the GIL
            k = keys[doc_ids, j]
            order, sk = stable_sort_u64(k)
            if sk.size == 0:
                continue
            starts = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
            lengths = np.diff(np.append(starts, sk.size))
            multi = lengths >= 2
            if multi.any():
                keep = np.repeat(multi, lengths)
                found[j] = (doc_ids[order[keep]], lengths[multi], sk[starts[multi]])

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


@njit(cache=True)
def _pairs_kernel(
    offsets: np.ndarray, members: np.ndarray, max_bucket_size: int
) -> tuple[np.ndarray, np.ndarray]:
    total = 0
    for b in range(offsets.size - 1):
        s = offsets[b + 1] - offsets[b]
        total += s * (s - 1) // 2 if s <= max_bucket_size else s - 1
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    w = 0
    for b in range(offsets.size - 1):
        lo = offsets[b]
        hi = offsets[b + 1]
        if hi - lo <= max_bucket_size:
            for i in range(lo, hi):
                for j in range(i + 1, hi):
                    left[w] = members[i]
                    right[w] = members[j]
                    w += 1
        else:
            for j in range(lo + 1, hi):
                left[w] = members[lo]
                right[w] = members[j]
                w += 1
    return left, right


def candidate_pairs(buckets: Buckets, max_bucket_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Unique candidate pairs ``(left, right)`` with ``left < right``, sorted."""
    left, right = _pairs_kernel(buckets.offsets, buckets.members, max_bucket_size)
    if left.size == 0:
        return left, right
    packed = sorted_unique((left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64))
    return (packed >> np.uint64(32)).astype(np.int64), (packed & np.uint64(0xFFFFFFFF)).astype(np.int64)
