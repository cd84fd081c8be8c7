"""Shingles as 64-bit hashes.

A token's hash is XXH64 (seed 0) of its normalised UTF-8 bytes; a shingle's
hash is XXH64 of its n tokens' hashes laid out as little-endian uint64s. A
document with fewer than n tokens (but at least one) has one shingle made of
all its tokens; an empty document has none. No shingle string is ever built:
the tokeniser (``neardup.core.scan``) hashes each token as it reads it and
makes the shingle hashes from the last n token hashes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.config import ShingleConfig, TextConfig
from neardup.core.hashing import no_permutations
from neardup.core.scan import SETS, no_sigs, scan_batch, scan_shingles
from neardup.core.sorting import sorted_unique
from neardup.core.text import TextBatch, _table_args, encode_texts, segmented, tokenizer_flags


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
    """The shingle hashes of ``data[start:end]``, in text order, repeats kept."""
    return scan_shingles(data, start, end, (entries, records, pool), flags, n)


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
    *,
    values: np.ndarray | None = None,
) -> ShingleSets:
    """Shingle sets of ``batch`` documents ``docs``.

    ``raw_counts`` (per document of the batch, from the signature pass) are the
    documents' shingle counts, repeats included: they size each set's room. ``values``
    (uint64, that many in all) is where the sets go, if given.
    """
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    bounds = np.zeros(docs.size + 1, dtype=np.int64)
    np.cumsum(raw_counts[docs], out=bounds[1:])
    if values is None:
        values = np.empty(int(bounds[-1]), dtype=np.uint64)
    elif values.dtype != np.uint64 or values.shape != (bounds[-1],) or not values.flags.c_contiguous:
        raise ValueError(f"values must be {bounds[-1]} contiguous uint64s, got {values.shape} {values.dtype}")
    lengths = np.zeros(docs.size, dtype=np.int64)
    read = docs
    if shingle.tokenizer != "builtin":  # only these documents are segmented, into a batch of their own
        batch = segmented(batch, text, shingle, docs)
        read = np.arange(docs.size, dtype=np.int64)
    scan_batch(
        batch.data,
        batch.offsets,
        read,
        _table_args(),
        tokenizer_flags(text, shingle),
        shingle.n,
        no_permutations(),
        mode=SETS,
        sigs=no_sigs(),
        counts=np.empty(docs.size, dtype=np.int64),
        values=values,
        bounds=bounds,
        lengths=lengths,
    )
    return ShingleSets(docs, bounds[:-1], lengths, values)


def shingle_hashes(
    text: str, text_config: TextConfig | None = None, shingle_config: ShingleConfig | None = None
) -> np.ndarray:
    """The sorted, unique shingle hashes of one text."""
    tcfg = text_config or TextConfig()
    scfg = shingle_config or ShingleConfig()
    batch = segmented(encode_texts([text]), tcfg, scfg)
    sh = doc_shingles(
        batch.data, 0, int(batch.offsets[1]), *_table_args(), tokenizer_flags(tcfg, scfg), scfg.n
    )
    return sorted_unique(sh)
