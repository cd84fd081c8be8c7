"""A drop-in for datasketch's ``MinHash`` and ``MinHashLSH``, on top of :class:`~neardup.index.LSHIndex`.

Switch with one import::

    from neardup.compat import MinHash, MinHashLSH

>>> from neardup.compat import MinHash, MinHashLSH
>>> a, b = MinHash(num_perm=64), MinHash(num_perm=64)
>>> a.update_batch([w.encode() for w in "the cat sat on the mat".split()])
>>> b.update_batch([w.encode() for w in "the cat sat on the mat".split()])
>>> lsh = MinHashLSH(threshold=0.8, num_perm=64)
>>> lsh.insert("a", a)
>>> lsh.query(b)
['a']

Deliberate differences from datasketch (values are not bit-identical to datasketch's):

- ``MinHash.update`` hashes with XXH64 (seed 0) instead of SHA-1, and a ``hashfunc`` must return
  a 64-bit integer (it is masked to 64 bits); the permutations are neardup's multiply-shift ones.
- ``hashvalues`` is ``uint32`` (datasketch stores uint32-range values in a ``uint64`` array); an
  empty MinHash holds ``0xFFFFFFFF`` everywhere.
- ``MinHashLSH.query`` returns only keys whose estimated Jaccard with the query is at least the
  threshold (datasketch returns every band collision, some far below the threshold).
- ``params=(b, r)`` needs ``b * r == num_perm`` (datasketch also accepts ``b * r < num_perm``).
- A MinHash whose seed differs from the index's is refused (``ValueError``), not silently mixed.
- An empty MinHash (nothing added) is stored but never a candidate of any query.
- Keys may be any hashable object in memory; a persistent storage (Redis, SQLite) takes ``str``
  keys only. Inserting an existing key with ``check_duplication=False`` replaces its signature.
- ``storage_config`` also accepts ``{"type": "sqlite", "path": "index.db"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import numpy as np

from neardup.config import DedupConfig, MinHashConfig
from neardup.core.hashing import xxh64_bytes
from neardup.core.minhash import EMPTY_VALUE, permutations
from neardup.core.params import optimal_shape
from neardup.index.base import Storage
from neardup.index.lsh_index import LSHIndex
from neardup.index.url import open_storage

__all__ = ["MinHash", "MinHashLSH", "MinHashLSHInsertionSession"]

_MASK64 = (1 << 64) - 1
_BATCH_ROWS = 4096  # rows of the (n, num_perm) matrix update_batch folds at a time
_SEED0 = np.uint64(0)


def _hash_bytes(b: bytes) -> int:
    data = np.frombuffer(bytes(b), dtype=np.uint8)
    return int(xxh64_bytes(data, 0, data.size, _SEED0))


class MinHash:
    """datasketch's ``MinHash``: a signature of ``num_perm`` uint32 values under ``seed``.

    ``hashfunc`` (bytes -> int) replaces the default XXH64 of the bytes.
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        hashfunc: Callable[[bytes], int] | None = None,
        hashvalues: Iterable[int] | np.ndarray | None = None,
    ) -> None:
        if isinstance(num_perm, bool) or not isinstance(num_perm, int) or num_perm < 1:
            raise ValueError(f"num_perm must be a positive integer, got {num_perm!r}")
        self.seed = int(seed)
        self.hashfunc = hashfunc
        if hashvalues is not None:
            values = np.asarray(hashvalues)
            if values.ndim != 1 or (values.size and (values.min() < 0 or values.max() > 0xFFFFFFFF)):
                raise ValueError("hashvalues must be one row of uint32-range values")
            num_perm = int(values.size)
        self._a, self._b = permutations(MinHashConfig(num_perm=num_perm, seed=self.seed))
        if hashvalues is not None:
            self.hashvalues = np.asarray(hashvalues).astype(np.uint32)
        else:
            self.hashvalues = np.full(num_perm, EMPTY_VALUE, dtype=np.uint32)

    @property
    def num_perm(self) -> int:
        return int(self.hashvalues.size)

    def _hash(self, b: bytes) -> int:
        if self.hashfunc is None:
            return _hash_bytes(b)
        return int(self.hashfunc(b)) & _MASK64

    def update(self, b: bytes) -> None:
        """Add one value (bytes) to the set."""
        h = np.uint64(self._hash(b))
        values = ((self._a * h + self._b) >> np.uint64(32)).astype(np.uint32)
        np.minimum(self.hashvalues, values, out=self.hashvalues)

    def update_batch(self, b: Iterable[bytes]) -> None:
        """Add many values at once: one vectorised minimum over a (n, num_perm) matrix."""
        hashes = np.fromiter((self._hash(x) for x in b), dtype=np.uint64)
        for start in range(0, hashes.size, _BATCH_ROWS):
            h = hashes[start : start + _BATCH_ROWS, None]
            values = ((h * self._a[None, :] + self._b[None, :]) >> np.uint64(32)).astype(np.uint32)
            np.minimum(self.hashvalues, values.min(axis=0), out=self.hashvalues)

    def _check_same(self, other: MinHash, what: str) -> None:
        if self.seed != other.seed:
            raise ValueError(f"cannot {what} MinHash with different seeds ({self.seed} and {other.seed})")
        if self.num_perm != other.num_perm:
            raise ValueError(
                f"cannot {what} MinHash with different numbers of permutation functions "
                f"({self.num_perm} and {other.num_perm})"
            )

    def jaccard(self, other: MinHash) -> float:
        """Estimated Jaccard similarity: the fraction of equal values."""
        self._check_same(other, "compute Jaccard similarity of")
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(self.num_perm)

    def merge(self, other: MinHash) -> None:
        """Make this the MinHash of the union of both sets."""
        self._check_same(other, "merge")
        np.minimum(self.hashvalues, other.hashvalues, out=self.hashvalues)

    def count(self) -> float:
        """Estimated cardinality of the set."""
        return float(self.num_perm / np.sum(self.hashvalues / float(1 << 32)) - 1.0)

    def digest(self) -> np.ndarray:
        """A copy of the hash values."""
        return self.hashvalues.copy()

    def is_empty(self) -> bool:
        """True if nothing was added."""
        return bool(np.all(self.hashvalues == EMPTY_VALUE))

    def clear(self) -> None:
        self.hashvalues[:] = EMPTY_VALUE

    def copy(self) -> MinHash:
        return MinHash(seed=self.seed, hashfunc=self.hashfunc, hashvalues=self.digest())

    def __len__(self) -> int:
        return self.num_perm

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MinHash)
            and self.seed == other.seed
            and np.array_equal(self.hashvalues, other.hashvalues)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like datasketch's


def _storage_from_config(storage_config: dict[str, Any] | None) -> tuple[Storage, bool]:
    """``(storage, persistent)`` for a datasketch-style ``storage_config``."""
    config = storage_config or {"type": "dict"}
    kind = config.get("type", "dict")
    if kind == "dict":
        return open_storage("memory://"), False
    if kind == "redis":
        redis = dict(config.get("redis", {}))
        host = redis.get("host", "localhost")
        port = int(redis.get("port", 6379))
        db = int(redis.get("db", 0))
        password = redis.get("password")
        auth = f":{quote(str(password), safe='')}@" if password else ""
        url = f"redis://{auth}{host}:{port}/{db}"
        basename = config.get("basename")
        if basename:
            name = basename.decode() if isinstance(basename, bytes) else str(basename)
            url += f"?prefix={quote(name, safe='')}"
        return open_storage(url), True
    if kind == "sqlite":
        if "path" not in config:
            raise ValueError('a sqlite storage_config needs a "path"')
        return open_storage(f"sqlite://{config['path']}"), True
    raise ValueError(f"unknown storage_config type {kind!r}; use 'dict', 'redis' or 'sqlite'")


class MinHashLSH:
    """datasketch's ``MinHashLSH`` on a neardup :class:`~neardup.index.LSHIndex`.

    ``query`` returns the keys whose estimated Jaccard is at least ``threshold`` (see the module
    docstring for every difference from datasketch).
    """

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights: tuple[float, float] = (0.5, 0.5),
        params: tuple[int, int] | None = None,
        storage_config: dict[str, Any] | None = None,
        prepickle: bool | None = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        self.threshold = float(threshold)
        self.h = num_perm
        if params is not None:
            b, r = params
            if b * r != num_perm:
                raise ValueError(
                    f"the product of b and r in params is {b} * {r} = {b * r}; neardup needs it to "
                    f"equal num_perm ({num_perm})"
                )
        else:
            b, r = optimal_shape(threshold, num_perm, fp_weight=weights[0] / sum(weights))
        self.b, self.r = int(b), int(r)
        self.prepickle = prepickle
        self._storage, self._persistent = _storage_from_config(storage_config)
        self._index: LSHIndex | None = None
        if self._storage.read_settings() is not None:
            self._index = LSHIndex(self._storage)
            s = self._index.settings
            if (s.num_perm, s.bands, s.rows) != (self.h, self.b, self.r):
                raise ValueError(
                    f"the stored index has num_perm={s.num_perm}, b={s.bands}, r={s.rows}; "
                    f"this MinHashLSH asks for num_perm={self.h}, b={self.b}, r={self.r}"
                )
        # in memory, keys that are not plain str go through these maps
        self._to_internal: dict[Hashable, str] = {}
        self._to_key: dict[str, Hashable] = {}
        self._next_id = 0

    # -- keys ----------------------------------------------------------------------------------

    def _internal(self, key: Hashable, create: bool) -> str | None:
        if isinstance(key, str) and not key.startswith("\x00"):
            return key
        if self._persistent:
            raise TypeError(f"a persistent MinHashLSH takes str keys only, got {key!r}")
        internal = self._to_internal.get(key)
        if internal is None and create:
            internal = f"\x00{self._next_id}"
            self._next_id += 1
            self._to_internal[key] = internal
            self._to_key[internal] = key
        return internal

    def _external(self, internal: str) -> Hashable:
        return self._to_key.get(internal, internal)

    # -- inserting -----------------------------------------------------------------------------

    def _check_minhash(self, minhash: MinHash) -> None:
        if len(minhash) != self.h:
            raise ValueError(f"expecting minhash with length {self.h}, got {len(minhash)}")
        if self._index is not None and self._index.settings.seed != minhash.seed:
            raise ValueError(
                f"the index holds MinHashes made with seed={self._index.settings.seed}, "
                f"this one uses seed={minhash.seed}"
            )

    def _ensure_index(self, seed: int) -> LSHIndex:
        if self._index is None:
            config = DedupConfig.create(
                threshold=max(self.threshold, 1e-9), num_perm=self.h, seed=seed, bands=self.b, rows=self.r
            )
            self._index = LSHIndex(self._storage, config)
        return self._index

    def _insert_many(self, keys: list[Hashable], sigs: list[np.ndarray], seed: int) -> None:
        """Write checked signatures (all made with ``seed``) in one batch."""
        if not keys:
            return
        index = self._ensure_index(seed)
        internal = [self._internal(k, create=True) or "" for k in keys]
        index.insert_signatures(internal, np.stack(sigs))

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """Index ``minhash`` under ``key``; ValueError if the key is already there and
        ``check_duplication``."""
        self._check_minhash(minhash)
        if check_duplication and key in self:
            raise ValueError("The given key already exists")
        self._insert_many([key], [minhash.hashvalues], minhash.seed)

    @contextmanager
    def insertion_session(self, buffer_size: int = 50000) -> Iterator[MinHashLSHInsertionSession]:
        """A session whose ``insert`` buffers and writes ``buffer_size`` MinHashes at a time."""
        session = MinHashLSHInsertionSession(self, buffer_size)
        try:
            yield session
        finally:
            session.close()

    # -- querying ------------------------------------------------------------------------------

    def query(self, minhash: MinHash) -> list[Hashable]:
        """Keys of the indexed MinHashes whose estimated Jaccard with ``minhash`` is at least the
        threshold, best first."""
        self._check_minhash(minhash)
        if self._index is None:
            return []
        matches = self._index.query_signature(minhash.hashvalues, threshold=max(self.threshold, 1e-9))
        return [self._external(m.key) for m in matches]

    def __contains__(self, key: object) -> bool:
        if self._index is None:
            return False
        try:
            internal = self._internal(key, create=False)
        except TypeError:
            return False
        return internal is not None and internal in self._index

    def remove(self, key: Hashable) -> None:
        """Remove ``key``; ValueError if it is not indexed."""
        if key not in self:
            raise ValueError("The given key does not exist")
        internal = self._internal(key, create=False)
        assert self._index is not None and internal is not None
        self._index.remove(internal)
        if internal in self._to_key:
            del self._to_internal[self._to_key.pop(internal)]

    def is_empty(self) -> bool:
        return self._index is None or len(self._index) == 0

    def __len__(self) -> int:
        return 0 if self._index is None else len(self._index)

    def close(self) -> None:
        self._storage.close()


class MinHashLSHInsertionSession:
    """Buffers inserts into a :class:`MinHashLSH` and writes them in batches."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        if buffer_size < 1:
            raise ValueError("buffer_size must be at least 1")
        self.lsh = lsh
        self.buffer_size = buffer_size
        self._keys: list[Hashable] = []
        self._sigs: list[np.ndarray] = []
        self._seed: int | None = None
        self._pending: set[Hashable] = set()

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        self.lsh._check_minhash(minhash)
        if self._seed is not None and minhash.seed != self._seed:
            raise ValueError("every MinHash of a session must use the same seed")
        self._seed = minhash.seed
        if check_duplication and (key in self._pending or key in self.lsh):
            raise ValueError("The given key already exists")
        self._keys.append(key)
        self._sigs.append(minhash.digest())
        self._pending.add(key)
        if len(self._keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        keys, sigs, seed = self._keys, self._sigs, self._seed
        self._keys, self._sigs, self._pending = [], [], set()
        if seed is not None:
            self.lsh._insert_many(keys, sigs, seed)

    def close(self) -> None:
        self.flush()
