"""Shingles as 64-bit hashes.

A token's hash is XXH64 (seed 0) of its normalised UTF-8 bytes; a shingle's
hash is XXH64 of its n tokens' hashes laid out as little-endian uint64s. A
document with fewer than n tokens (but at least one) has one shingle made of
all its tokens; an empty document has none. No shingle string is ever built.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from neardup.config import ShingleConfig, TextConfig
from neardup.core.hashing import xxh64_bytes, xxh64_lanes
from neardup.core.text import TextBatch, _table_args, encode_texts, tokenize_range, tokenizer_flags


@njit(cache=True)
def token_hashes(buf: np.ndarray, starts: np.ndarray, ntok: int, blen: int) -> np.ndarray:
    """XXH64 of every token the tokeniser wrote."""
    out = np.empty(ntok, dtype=np.uint64)
    for i in range(ntok):
        s = starts[i]
        e = starts[i + 1] if i + 1 < ntok else blen
        out[i] = xxh64_bytes(buf, s, e - s, np.uint64(0))
    return out


@njit(cache=True)
def shingle_count(ntok: int, n: int) -> int:
    """How many shingles a document of ``ntok`` tokens has."""
    if ntok == 0:
        return 0
    if ntok < n:
        return 1
    return ntok - n + 1


@njit(cache=True)
def doc_shingles(
    data: np.ndarray,
    start: int,
    end: int,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
) -> np.ndarray:
    """The shingle hashes of one document, in text order, repeats kept."""
    buf, starts, ntok, blen = tokenize_range(data, start, end, entries, records, pool, flags)
    th = token_hashes(buf, starts, ntok, blen)
    count = shingle_count(ntok, n)
    out = np.empty(count, dtype=np.uint64)
    width = n if ntok >= n else ntok
    for i in range(count):
        out[i] = xxh64_lanes(th, i, width)
    return out


@njit(parallel=True, cache=True)
def shingle_sets_kernel(
    data: np.ndarray,
    offsets: np.ndarray,
    docs: np.ndarray,
    capacity: np.ndarray,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, unique shingle hashes of the documents ``docs``.

    ``capacity[k]`` bounds the shingle count of ``docs[k]`` (its raw count is
    exact). Returns ``(values, lengths)``: the set of ``docs[k]`` is
    ``values[bounds[k]:bounds[k] + lengths[k]]`` with ``bounds`` the running
    sum of ``capacity``.
    """
    m = docs.size
    bounds = np.zeros(m + 1, dtype=np.int64)
    for k in range(m):
        bounds[k + 1] = bounds[k] + capacity[k]
    values = np.empty(bounds[m], dtype=np.uint64)
    lengths = np.zeros(m, dtype=np.int64)
    for k in prange(m):
        d = docs[k]
        sh = doc_shingles(data, offsets[d], offsets[d + 1], entries, records, pool, flags, n)
        sh.sort()
        w = 0
        base = bounds[k]
        limit = min(sh.size, capacity[k])
        for i in range(limit):
            if i == 0 or sh[i] != sh[i - 1]:
                values[base + w] = sh[i]
                w += 1
        lengths[k] = w
    return values, lengths


class ShingleSets:
    """Sorted unique shingle hashes for a subset of a batch, in CSR form."""

    def __init__(self, docs: np.ndarray, starts: np.ndarray, lengths: np.ndarray, values: np.ndarray):
        self.docs = docs
        self.starts = starts
        self.lengths = lengths
        self.values = values

    @classmethod
    def from_sets(cls, sets: Sequence[np.ndarray]) -> ShingleSets:
        """Pack already sorted, unique sets; document k of the result is ``sets[k]``."""
        lengths = np.array([s.size for s in sets], dtype=np.int64)
        starts = np.zeros(len(sets), dtype=np.int64)
        if len(sets):
            np.cumsum(lengths[:-1], out=starts[1:])
        values = np.concatenate(sets).astype(np.uint64, copy=False) if len(sets) else np.empty(0, np.uint64)
        return cls(np.arange(len(sets), dtype=np.int64), starts, lengths, values)

    def get(self, k: int) -> np.ndarray:
        """The set of ``docs[k]``."""
        s = int(self.starts[k])
        return self.values[s : s + int(self.lengths[k])]


def shingle_sets(
    batch: TextBatch,
    docs: np.ndarray,
    raw_counts: np.ndarray,
    text: TextConfig,
    shingle: ShingleConfig,
) -> ShingleSets:
    """Shingle sets of ``batch`` documents ``docs`` (``raw_counts`` from the signature pass)."""
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    capacity = np.ascontiguousarray(raw_counts[docs], dtype=np.int64)
    values, lengths = shingle_sets_kernel(
        batch.data,
        batch.offsets,
        docs,
        capacity,
        *_table_args(),
        tokenizer_flags(text, shingle),
        shingle.n,
    )
    starts = np.zeros(docs.size, dtype=np.int64)
    if docs.size:
        starts[1:] = np.cumsum(capacity)[:-1]
    return ShingleSets(docs, starts, lengths, values)


def shingle_hashes(
    text: str, text_config: TextConfig | None = None, shingle_config: ShingleConfig | None = None
) -> np.ndarray:
    """The sorted, unique shingle hashes of one text."""
    tcfg = text_config or TextConfig()
    scfg = shingle_config or ShingleConfig()
    batch = encode_texts([text])
    sh = doc_shingles(
        batch.data, 0, int(batch.offsets[1]), *_table_args(), tokenizer_flags(tcfg, scfg), scfg.n
    )
    return np.unique(sh)
