"""The storage interface every index backend implements, and the bucket rule they share.

A backend stores, per document key (a ``str``): its signature, its band keys (as buckets) unless
the document is empty, optionally its sorted unique shingle hashes, and when it was inserted and
how many shingles it has (:class:`DocumentInfo`). Every method works on a batch, so a networked
backend can send one round trip per call. The backend knows nothing of MinHash;
:class:`~neardup.index.lsh_index.LSHIndex` computes signatures and band keys.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from neardup.errors import StorageError

_BAND_STRIDE = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio, odd
EXCLUSIVE_WAIT_S = 30.0  # how long Storage.exclusive() waits for another holder before it gives up


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


def lookup_mask(band_keys: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """``mask`` checked against ``band_keys`` (bool of its shape; all True when None)."""
    if mask is None:
        return np.ones(np.shape(band_keys), dtype=bool)
    out = np.asarray(mask, dtype=bool)
    if out.shape != np.shape(band_keys):
        raise ValueError(
            f"a lookup mask must have the band keys' shape {np.shape(band_keys)}, got {out.shape}"
        )
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


def check_counts(shingle_counts: np.ndarray | None, n: int) -> np.ndarray:
    """Validate an insert batch's shingle counts; return them as int64[n], -1 where unknown (all of
    them when None)."""
    if shingle_counts is None:
        return np.full(n, -1, dtype=np.int64)
    counts = np.asarray(shingle_counts)
    if counts.shape != (n,):
        raise ValueError(f"expected {n} shingle counts, got shape {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer) or (counts.size and counts.min() < 0):
        raise ValueError(f"shingle counts must be whole numbers of at least 0, got dtype {counts.dtype}")
    return counts.astype(np.int64)


@dataclass(frozen=True)
class DocumentInfo:
    """What a storage knows of one stored document besides its signature.

    ``inserted_at`` is the Unix time in seconds of the key's last insert (None for a document
    stored before neardup recorded it). ``shingles`` is how many shingles the document has: the
    distinct ones when its shingle set was known at insert (an index that keeps shingles, or
    ``shingles=`` given with the signatures), otherwise the signature pass's count, which counts
    a repeated shingle each time; None where unknown.
    """

    key: str
    inserted_at: float | None
    shingles: int | None


_sections: weakref.WeakSet[ExclusiveSection] = weakref.WeakSet()


class ExclusiveSection:
    """The in-process half of :meth:`Storage.exclusive`: a re-entrant lock for the threads of one
    process, and around the outermost hold of a thread the backend's cross-process lock
    (``enter(deadline, wait)``, ``leave()``), both given up after :data:`EXCLUSIVE_WAIT_S` (read
    when the section is entered: ``wait``) seconds.

    A forked child starts with the section free: its parent's holder is not one of its threads.
    """

    def __init__(
        self,
        what: str,
        enter: Callable[[float, float], None] | None = None,
        leave: Callable[[], None] | None = None,
    ) -> None:
        self._what = what
        self._enter = enter
        self._leave = leave
        self._reset()
        _sections.add(self)

    def _reset(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # holds by the thread that owns _lock; only that thread touches it

    @contextmanager
    def hold(self) -> Iterator[None]:
        wait = EXCLUSIVE_WAIT_S
        deadline = time.monotonic() + wait
        if not self._lock.acquire(timeout=wait):
            raise StorageError(
                f"{self._what}: another thread held the index's exclusive section for more than "
                f"{wait:g} s; try again later"
            )
        try:
            if self._depth == 0 and self._enter is not None:
                self._enter(deadline, wait)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._leave is not None:
                    self._leave()
        finally:
            self._lock.release()


def _reset_sections_after_fork() -> None:
    for section in list(_sections):
        section._reset()


os.register_at_fork(after_in_child=_reset_sections_after_fork)


@dataclass(frozen=True)
class Candidates:
    """What :meth:`Storage.lookup` found for a batch of query rows, read in one snapshot (on
    Redis, a large lookup that met a write keeps each document whole only: see its module).

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
        shingle_counts: np.ndarray | None = None,
    ) -> None:
        """Add a batch, all or nothing (Redis: each piece of a large batch, see
        :meth:`~neardup.index.redis.RedisStorage.insert`); a key already stored is replaced.

        ``signatures`` is uint32[n, num_perm], ``band_keys`` uint64[n, bands], ``shingles`` (if
        kept) each document's sorted unique uint64 shingle hashes. ``eligible`` (bool[n]) marks
        the documents that go into the band tables; the others (empty documents) are stored but
        never become candidates. ``shingle_counts`` (int64[n], None if unknown) is stored for
        :meth:`info`, with the time of the insert (one per batch). The batch's keys must be unique
        (``ValueError`` otherwise).
        """
        ...

    def lookup(
        self, band_keys: np.ndarray, *, shingles: bool = False, mask: np.ndarray | None = None
    ) -> Candidates:
        """For each row of uint64[m, bands], the stored documents sharing at least one
        (band, key) with it, with their signatures (and shingles if asked), in one consistent
        read: a document removed or replaced meanwhile is either wholly there or absent.
        ``mask`` (bool[m, bands]) limits each row to the bands where it is True."""
        ...

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        """uint32[len(keys), num_perm] in the order of ``keys`` (shape (0, 0) when empty);
        ``KeyError`` names a key that is not stored."""
        ...

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """Each key's shingle hashes, or None where they were not kept; ``KeyError`` as above."""
        ...

    def info(self, keys: Sequence[str]) -> list[DocumentInfo | None]:
        """Each key's :class:`DocumentInfo`, None for a key that is not stored; one batch read."""
        ...

    def remove(self, keys: Sequence[str]) -> int:
        """Remove the keys that are stored (all or nothing; Redis: in pieces, see
        :meth:`~neardup.index.redis.RedisStorage.remove`); return how many were."""
        ...

    def exclusive(self) -> AbstractContextManager[None]:
        """A section that one holder at a time is in, across threads and processes: ``with
        storage.exclusive(): ...`` makes a check and the insert it decides on one step for every
        other holder. Inside, the holder uses this storage's other methods as usual.

        It is re-entrant for the thread holding it on this storage object (a second storage object
        on the same index is another holder, even in the same thread). Readers and writers outside
        the section do not take it: it excludes only other holders. Waiting more than
        :data:`EXCLUSIVE_WAIT_S` for it raises :class:`~neardup.errors.StorageError`. Each backend
        says how far across processes it reaches.
        """
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
