"""The storage interface every index backend implements, and the bucket rule they share.

A backend stores, per document key (a ``str``): its signature, its band keys (as buckets) unless
the document is empty, and optionally its sorted unique shingle hashes. Every method works on a
batch, so a networked backend can send one round trip per call. The backend knows nothing of
MinHash; :class:`~neardup.index.lsh_index.LSHIndex` computes signatures and band keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

_BAND_STRIDE = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio, odd


def bucket_ids(band_keys: np.ndarray) -> np.ndarray:
    """int64[n, bands]: one integer per (band index, band key).

    The rule: ``bucket = (band_key + band * 0x9E3779B97F4A7C15) mod 2**64``, read as a signed
    64-bit integer (what SQLite stores). Band keys are uniform 64-bit hashes, so two different
    (band, key) pairs share a bucket with probability 2**-64; a shared bucket only adds a candidate,
    and every candidate's similarity is checked, so a collision cannot produce a wrong answer.

    >>> bucket_ids(np.array([[0, 0]], dtype=np.uint64)).tolist()
    [[0, -7046029254386353131]]
    """
    keys = np.asarray(band_keys, dtype=np.uint64)
    if keys.ndim != 2:
        raise ValueError(f"band keys must be a 2-D array (documents x bands), got shape {keys.shape}")
    offsets = np.arange(keys.shape[1], dtype=np.uint64) * _BAND_STRIDE  # wraps mod 2**64
    out: np.ndarray = (keys + offsets).view(np.int64)
    return out


def settings_diff(stored: dict[str, Any], wanted: dict[str, Any]) -> str:
    """``name=stored (not wanted), ...`` for each setting that differs."""
    return ", ".join(
        f"{name}={stored.get(name)!r} (not {wanted.get(name)!r})"
        for name in sorted(set(stored) | set(wanted))
        if stored.get(name) != wanted.get(name)
    )


def check_batch(
    keys: Sequence[str],
    signatures: np.ndarray,
    band_keys: np.ndarray,
    shingles: Sequence[np.ndarray] | None,
    eligible: np.ndarray | None,
) -> np.ndarray:
    """Validate an insert batch's shapes and key uniqueness; return ``eligible`` as bool[n]."""
    n = len(keys)
    if signatures.ndim != 2 or signatures.shape[0] != n:
        raise ValueError(f"expected {n} signature rows, got an array of shape {signatures.shape}")
    if band_keys.ndim != 2 or band_keys.shape[0] != n:
        raise ValueError(f"expected {n} rows of band keys, got an array of shape {band_keys.shape}")
    if shingles is not None and len(shingles) != n:
        raise ValueError(f"expected {n} shingle sets, got {len(shingles)}")
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"index keys must be str, got {type(key).__name__}: {key!r}")
    if len(set(keys)) != n:
        seen: set[str] = set()
        for key in keys:
            if key in seen:
                raise ValueError(f"key {key!r} occurs twice in one batch; a batch's keys must be unique")
            seen.add(key)
    if eligible is None:
        return np.ones(n, dtype=bool)
    mask = np.asarray(eligible, dtype=bool)
    if mask.shape != (n,):
        raise ValueError(f"expected {n} eligible flags, got shape {mask.shape}")
    return mask


@dataclass(frozen=True)
class Candidates:
    """What :meth:`Storage.lookup` found for a batch of query rows, read in one snapshot.

    ``keys`` are the distinct candidate keys, sorted; ``signatures`` (uint32[len(keys), num_perm])
    and ``shingles`` (when asked for; None where a document was stored without them) follow that
    order; ``rows[q]`` holds the ascending positions in ``keys`` of query row ``q``'s candidates.
    """

    keys: list[str]
    signatures: np.ndarray
    rows: list[np.ndarray]
    shingles: list[np.ndarray | None] | None = None

    @classmethod
    def from_rows(
        cls,
        per_row: Sequence[set[str]],
        signatures_of: Callable[[list[str]], np.ndarray],
        shingles_of: Callable[[list[str]], list[np.ndarray | None]] | None = None,
    ) -> Candidates:
        """Build from each query row's set of candidate keys and readers of the distinct keys'
        signatures and (optionally) shingles."""
        keys = sorted(set().union(*per_row)) if per_row else []
        slot = {k: i for i, k in enumerate(keys)}
        rows = [np.sort(np.fromiter((slot[k] for k in r), np.int64, len(r))) for r in per_row]
        sigs = signatures_of(keys) if keys else np.empty((0, 0), dtype=np.uint32)
        sets = None if shingles_of is None else (shingles_of(keys) if keys else [])
        return cls(keys, sigs, rows, sets)


@runtime_checkable
class Storage(Protocol):
    """Where an index keeps its documents. Keys are ``str``; every call is one batch.

    Reads may interleave with another process's writes; each write call is atomic (all or
    nothing), and a reader never sees half of one.
    """

    @property
    def url(self) -> str:
        """Where the storage lives, as a URL that :func:`~neardup.index.open_storage` accepts."""
        ...

    def read_settings(self) -> dict[str, Any] | None:
        """The stored settings, or None for a new, empty storage."""
        ...

    def write_settings(self, settings: dict[str, Any]) -> None:
        """Store the settings (a JSON-ready dict)."""
        ...

    def insert(
        self,
        keys: Sequence[str],
        signatures: np.ndarray,
        band_keys: np.ndarray,
        shingles: Sequence[np.ndarray] | None = None,
        *,
        eligible: np.ndarray | None = None,
    ) -> None:
        """Add a batch, all or nothing; a key already stored is replaced.

        ``signatures`` is uint32[n, num_perm], ``band_keys`` uint64[n, bands], ``shingles`` (if
        kept) each document's sorted unique uint64 shingle hashes. ``eligible`` (bool[n]) marks
        the documents that go into the band tables; the others (empty documents) are stored but
        never become candidates. The batch's keys must be unique (``ValueError`` otherwise).
        """
        ...

    def lookup(self, band_keys: np.ndarray, *, shingles: bool = False) -> Candidates:
        """For each row of uint64[m, bands], the stored documents sharing at least one
        (band, key) with it, with their signatures (and shingles if asked), in one consistent
        read: a document removed or replaced meanwhile is either wholly there or absent."""
        ...

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        """uint32[len(keys), num_perm] in the order of ``keys`` (shape (0, 0) when empty);
        ``KeyError`` names a key that is not stored."""
        ...

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """Each key's shingle hashes, or None where they were not kept; ``KeyError`` as above."""
        ...

    def remove(self, keys: Sequence[str]) -> int:
        """Remove the keys that are stored (all or nothing); return how many were."""
        ...

    def contains(self, key: str) -> bool: ...

    def count(self) -> int: ...

    def keys(self) -> Iterator[str]:
        """Every stored key, in insertion order."""
        ...

    def epoch(self) -> int:
        """A number that changes with every committed write, by this storage or any other
        process: two equal readings prove that no write came between them."""
        ...

    def size_bytes(self) -> int | None:
        """Bytes on disk (or on the server), None when unknown."""
        ...

    def close(self) -> None: ...
