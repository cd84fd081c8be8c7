"""MinHash signatures over whole batches.

Permutation i maps a 64-bit shingle hash x to
``((a_i * x + b_i) mod 2**64) >> 32`` (multiply-shift hashing), where
``a_i`` (odd) and ``b_i`` are drawn from SplitMix64 seeded with the config's
seed. A signature is the uint32 minimum of each permutation over the
document's shingles; a document without shingles has every value at
``EMPTY_VALUE``.

The default ``stratified`` sketch puts each shingle's value in a different one of
``2**t >= num_perm`` strata in each permutation (the value's top ``t`` bits), so that the
permutations share the work of sampling the set rather than each sampling it alone: the
estimate stays unbiased and varies less (see ``update_signature`` and docs/how-it-decides.md).
``classic`` is the independent multiply-shift sketch, which indexes built before the
stratified one use.

A document is read once: the tokeniser (``neardup.core.scan``) hashes tokens
and shingles as it goes and folds every few hundred shingle hashes into the
signature, so no per-document array is allocated.
"""

from __future__ import annotations

import numpy as np

from neardup.config import MinHashConfig, ShingleConfig, TextConfig
from neardup.core.hashing import pack_permutations, splitmix64_stream, update_signature
from neardup.core.jit import in_ranges, kernel
from neardup.core.scan import EMPTY_VALUE as EMPTY_VALUE
from neardup.core.scan import SIGNATURES, scan_batch
from neardup.core.text import TextBatch, _table_args, encode_texts, segmented, tokenizer_flags
from neardup.errors import ConfigError

_PAIRS_SERIAL_BELOW = 1 << 14  # fewer pairs than this skip the thread pool


def permutations(config: MinHashConfig) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) coefficients of ``config.num_perm`` permutations."""
    stream = splitmix64_stream(config.seed, 2 * config.num_perm)
    a = stream[0::2] | np.uint64(1)
    b = stream[1::2]
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def signature_of_hashes(
    shingles: np.ndarray, a: np.ndarray, b: np.ndarray, *, stratified: bool = True
) -> np.ndarray:
    """The signature of a set of 64-bit shingle hashes (stratified sketch unless not
    ``stratified``)."""
    xs = np.ascontiguousarray(shingles, dtype=np.uint64)
    perms = pack_permutations(a, b, stratified=stratified)
    sig = np.full(perms.a_lo.size, EMPTY_VALUE, dtype=np.uint32)
    update_signature(sig, xs, 0, xs.size, perms, np.empty(perms.a_lo.size, dtype=np.uint64))
    return sig[: a.size].copy()


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
        self._perms = pack_permutations(self.a, self.b, stratified=self.minhash.sketch == "stratified")
        self._flags = tokenizer_flags(self.text, self.shingle)

    def signatures_with_counts(
        self,
        batch: TextBatch,
        *,
        parallel: bool = True,
        digests: np.ndarray | None = None,
        into: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(signatures uint32[n, num_perm], shingle counts int64[n])`` of a batch, on the
        kernel threads (on this thread only, when not ``parallel``). ``digests`` (uint64[n]),
        if given, takes each document's shingle digest: equal for two documents whose shingles
        are the same, repeats included (see :func:`~neardup.core.scan.scan_part`). ``into``,
        if given, is the two arrays to fill (C-contiguous, of those types and shapes), and is
        what is returned."""
        batch = segmented(batch, self.text, self.shingle)
        n_docs = len(batch)
        if into is None:
            out = np.empty((n_docs, self.minhash.num_perm), dtype=np.uint32)
            counts = np.empty(n_docs, dtype=np.int64)
        else:
            out, counts = into
            if out.shape != (n_docs, self.minhash.num_perm) or counts.shape != (n_docs,):
                raise ValueError(f"into has shapes {out.shape} and {counts.shape} for {n_docs} documents")
        scan_batch(
            batch.data,
            batch.offsets,
            np.arange(n_docs, dtype=np.int64),
            _table_args(),
            self._flags,
            self.shingle.n,
            self._perms,
            mode=SIGNATURES,
            sigs=out,
            counts=counts,
            values=np.empty(0, dtype=np.uint64),
            bounds=np.zeros(1, dtype=np.int64),
            lengths=np.empty(0, dtype=np.int64),
            digests=digests,
            parallel=parallel,
        )
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


@kernel
def _estimate_range(
    sigs: np.ndarray, left: np.ndarray, right: np.ndarray, out: np.ndarray, lo: int, hi: int
) -> None:
    k = sigs.shape[1]
    for p in range(lo, hi):
        same = 0
        ra = sigs[left[p]]
        rb = sigs[right[p]]
        for i in range(k):
            if ra[i] == rb[i]:
                same += 1
        out[p] = same / k


def estimate_pairs(sigs: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of each pair ``(left[k], right[k])`` of rows of ``sigs``."""
    sigs = np.ascontiguousarray(sigs, dtype=np.uint32)
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    out = np.empty(left.size, dtype=np.float64)
    in_ranges(lambda lo, hi: _estimate_range(sigs, left, right, out, lo, hi), left.size, _PAIRS_SERIAL_BELOW)
    return out
