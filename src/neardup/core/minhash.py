"""MinHash signatures over whole batches.

Permutation i maps a 64-bit shingle hash x to
``((a_i * x + b_i) mod 2**64) >> 32`` (multiply-shift hashing), where
``a_i`` (odd) and ``b_i`` are drawn from SplitMix64 seeded with the config's
seed. A signature is the uint32 minimum of each permutation over the
document's shingles; a document without shingles has every value at
``EMPTY_VALUE``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, parallel_chunksize, prange

from neardup.config import MinHashConfig, ShingleConfig, TextConfig
from neardup.core.hashing import splitmix64_stream
from neardup.core.shingles import doc_shingles
from neardup.core.text import TextBatch, _table_args, encode_texts, tokenizer_flags
from neardup.errors import ConfigError

EMPTY_VALUE = np.uint32(0xFFFFFFFF)
_PARALLEL_CHUNK = 64
_SERIAL_BELOW = 64  # batches smaller than this skip the thread pool (single queries)


def permutations(config: MinHashConfig) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) coefficients of ``config.num_perm`` permutations."""
    stream = splitmix64_stream(config.seed, 2 * config.num_perm)
    a = stream[0::2] | np.uint64(1)
    b = stream[1::2]
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


@njit(cache=True)
def _update(sig: np.ndarray, shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    k = a.size
    for x in shingles:
        for i in range(k):
            # min() rather than a branch, so the loop vectorises
            sig[i] = min(sig[i], np.uint32((a[i] * x + b[i]) >> np.uint64(32)))


@njit(cache=True)
def signature_of_hashes(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The signature of a set of 64-bit shingle hashes."""
    sig = np.full(a.size, EMPTY_VALUE, dtype=np.uint32)
    _update(sig, shingles, a, b)
    return sig


@njit(inline="always", cache=True)
def _sign_doc(
    d: int,
    data: np.ndarray,
    offsets: np.ndarray,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    counts: np.ndarray,
) -> None:
    sh = doc_shingles(data, offsets[d], offsets[d + 1], entries, records, pool, flags, n)
    counts[d] = sh.size
    row = out[d]
    row[:] = EMPTY_VALUE
    _update(row, sh, a, b)


@njit(parallel=True, cache=True)
def signatures_kernel(
    data: np.ndarray,
    offsets: np.ndarray,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Fill ``out[i]`` with the signature and ``counts[i]`` with the shingle count of doc i."""
    for d in prange(out.shape[0]):
        _sign_doc(d, data, offsets, entries, records, pool, flags, n, a, b, out, counts)


@njit(cache=True)
def signatures_serial(
    data: np.ndarray,
    offsets: np.ndarray,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    n: int,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    counts: np.ndarray,
) -> None:
    """``signatures_kernel`` on one thread: no thread start-up cost for a few documents."""
    for d in range(out.shape[0]):
        _sign_doc(d, data, offsets, entries, records, pool, flags, n, a, b, out, counts)


class MinHasher:
    """Computes signature matrices for batches of documents under one config."""

    def __init__(
        self,
        minhash: MinHashConfig | None = None,
        text: TextConfig | None = None,
        shingle: ShingleConfig | None = None,
    ) -> None:
        self.minhash = minhash or MinHashConfig()
        self.text = text or TextConfig()
        self.shingle = shingle or ShingleConfig()
        self.a, self.b = permutations(self.minhash)
        self._flags = tokenizer_flags(self.text, self.shingle)

    def signatures_with_counts(self, batch: TextBatch) -> tuple[np.ndarray, np.ndarray]:
        """``(signatures uint32[n, num_perm], shingle counts int64[n])`` of a batch."""
        n_docs = len(batch)
        out = np.empty((n_docs, self.minhash.num_perm), dtype=np.uint32)
        counts = np.empty(n_docs, dtype=np.int64)
        args = (batch.data, batch.offsets, *_table_args(), self._flags, self.shingle.n, self.a, self.b)
        if 0 < n_docs < _SERIAL_BELOW:
            signatures_serial(*args, out, counts)
        elif n_docs:
            # small chunks balance the threads under a dynamic-scheduling threading layer (workqueue,
            # tbb); GNU OpenMP still splits statically (benchmarks/RESULTS.md, thread imbalance)
            with parallel_chunksize(_PARALLEL_CHUNK):
                signatures_kernel(*args, out, counts)
        return out, counts

    def signatures(self, texts: TextBatch | list[str]) -> np.ndarray:
        """The signature matrix (uint32, one row per document)."""
        batch = texts if isinstance(texts, TextBatch) else encode_texts(list(texts))
        return self.signatures_with_counts(batch)[0]


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Estimated Jaccard: the fraction of positions where two signatures agree."""
    if sig_a.shape != sig_b.shape:
        raise ConfigError(
            f"signatures have different lengths ({sig_a.shape[-1]} and {sig_b.shape[-1]}); "
            "they were made with different num_perm"
        )
    return float(np.count_nonzero(sig_a == sig_b)) / float(sig_a.shape[-1])


@njit(parallel=True, cache=True)
def estimate_pairs(sigs: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of each pair ``(left[k], right[k])`` of rows of ``sigs``."""
    out = np.empty(left.size, dtype=np.float64)
    k = sigs.shape[1]
    for p in prange(left.size):
        same = 0
        ra = sigs[left[p]]
        rb = sigs[right[p]]
        for i in range(k):
            if ra[i] == rb[i]:
                same += 1
        out[p] = same / k
    return out
