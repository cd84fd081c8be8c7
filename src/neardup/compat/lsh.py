"""datasketch's ``MinHashLSH``, its insertion and deletion sessions, and read-only views of its
``keys`` and ``hashtables``, over a neardup :class:`~neardup.index.LSHIndex`.

The index is looked up again while none exists yet, so a handle opened on an empty shared index
sees what another handle (another process) inserts. A bucket key ``H``, as the views show it, is
what datasketch uses: the band's ``r`` hash values as big-endian uint32 bytes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from neardup.compat.minhash import MinHash
from neardup.compat.storage import KeyCodec, normalize, open_config
from neardup.config import DedupConfig
from neardup.core.lsh import band_keys
from neardup.core.minhash import EMPTY_VALUE
from neardup.core.params import optimal_shape, second_layer_bands
from neardup.errors import IndexSettingsError
from neardup.index.base import Candidates
from neardup.index.lsh_index import LSHIndex

__all__ = ["MinHashLSH", "MinHashLSHDeletionSession", "MinHashLSHInsertionSession"]

_PAGE = 10_000  # documents read per round trip when a whole index is scanned


class MinHashLSH:
    """datasketch's ``MinHashLSH``: ``query`` returns every key sharing a band bucket with the
    query, as datasketch does; :meth:`query_scored` keeps those whose estimated Jaccard reaches
    the threshold, best first.

    See :mod:`neardup.compat` for every difference from datasketch.
    """

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights: tuple[float, float] = (0.5, 0.5),
        params: tuple[int, int] | None = None,
        storage_config: dict[str, Any] | None = None,
        prepickle: bool | None = None,
        hashfunc: Any = None,
    ) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        if params is not None:
            b, r = params
            if b * r != num_perm:
                raise ValueError(
                    f"the product of b and r in params is {b} * {r} = {b * r}; neardup needs it to "
                    f"equal num_perm ({num_perm})"
                )
        else:
            b, r = optimal_shape(threshold, num_perm, fp_weight=weights[0])
        config = normalize(storage_config)
        self.threshold = float(threshold)
        self.h = int(num_perm)
        self.b, self.r = int(b), int(r)
        self.weights = tuple(weights)
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self.prepickle = config["type"] == "redis" if prepickle is None else bool(prepickle)
        self.hashfunc = hashfunc
        self.storage_config = config
        self._buffer_size = 50000
        self._open()

    def _open(self) -> None:
        self._persistent = self.storage_config["type"] != "dict"
        self._codec = KeyCodec(prepickle=self.prepickle, persistent=self._persistent)
        self._storage = open_config(self.storage_config)
        self._index: LSHIndex | None = None
        self._query_buffer: list[np.ndarray] = []
        self._current()

    # -- the index -----------------------------------------------------------------------------

    def _current(self) -> LSHIndex | None:
        """The index, or None while the storage holds none; never remembers "none", because
        another handle may create it at any time."""
        if self._index is None and self._storage.read_settings() is not None:
            index = LSHIndex(self._storage)
            s = index.settings
            if (s.num_perm, s.bands, s.rows) != (self.h, self.b, self.r):
                two_layers = second_layer_bands(s.bands, s.rows, s.num_perm) > 0
                raise ValueError(
                    f"the stored index has num_perm={s.num_perm}, b={s.bands}, r={s.rows}; "
                    f"this MinHashLSH asks for num_perm={self.h}, b={self.b}, r={self.r}"
                    + (
                        " (its second layer of bands is neardup's own: build it with --band-layers 1 "
                        "to share it with neardup.compat)"
                        if two_layers
                        else ""
                    )
                )
            if s.sketch != "classic":
                raise ValueError(
                    f"the stored index holds {s.sketch} signatures, and MinHash makes classic "
                    "ones; build it with --sketch classic to share it with neardup.compat"
                )
            self._index = index
        return self._index

    def _create(self, seed: int) -> LSHIndex:
        index = self._current()
        if index is None:
            config = DedupConfig.create(
                threshold=max(self.threshold, 1e-9),
                num_perm=self.h,
                seed=seed,
                sketch="classic",  # MinHash's signatures
                bands=self.b,
                rows=self.r,
            )
            try:
                index = self._index = LSHIndex(self._storage, config)
            except IndexSettingsError:  # another handle created it meanwhile: use its settings
                self._storage.read_settings()
                index = self._current()
                if index is None:
                    raise
        return index

    def _check(self, minhash: MinHash, index: LSHIndex | None) -> np.ndarray:
        if len(minhash) != self.h:
            raise ValueError(f"Expecting minhash with length {self.h}, got {len(minhash)}")
        if getattr(minhash, "scheme", None) not in (None, "affine32"):
            raise ValueError(f"MinHash scheme {minhash.scheme!r} cannot be used with neardup.compat")
        if index is not None and index.settings.seed != minhash.seed:
            raise ValueError(
                f"the index holds MinHashes made with seed={index.settings.seed}, "
                f"this one uses seed={minhash.seed}"
            )
        return np.asarray(minhash.hashvalues, dtype=np.uint32)

    def _insert_many(self, keys: Sequence[Hashable], sigs: np.ndarray, seed: int) -> None:
        """Write signatures (all made with ``seed``) under ``keys`` in one batch."""
        if not len(keys):
            return
        index = self._create(seed)
        if index.settings.seed != seed:
            raise ValueError(
                f"the index holds MinHashes made with seed={index.settings.seed}, these use seed={seed}"
            )
        internal = [self._codec.encode(k, create=True) or "" for k in keys]
        index.insert_signatures(internal, sigs)

    # -- inserting and removing ----------------------------------------------------------------

    @property
    def buffer_size(self) -> int:
        return self._buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"buffer_size must be a positive integer, got {value!r}")
        self._buffer_size = value

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        """Index ``minhash`` under ``key``; ValueError if the key is already there and
        ``check_duplication`` (without it, the key's MinHash is replaced)."""
        sig = self._check(minhash, self._current())
        self._codec.encode(key)  # a key of the wrong type fails before the duplicate check
        if check_duplication and key in self:
            raise ValueError("The given key already exists")
        self._insert_many([key], sig[None, :], minhash.seed)

    def insertion_session(self, buffer_size: int = 50000) -> MinHashLSHInsertionSession:
        """A context manager whose ``insert`` buffers MinHashes and writes ``buffer_size`` of
        them in one batch (and the rest when it closes)."""
        self.buffer_size = buffer_size
        return MinHashLSHInsertionSession(self, buffer_size=buffer_size)

    def deletion_session(self, buffer_size: int = 50000) -> MinHashLSHDeletionSession:
        """A context manager whose ``remove`` buffers keys and removes ``buffer_size`` of them in
        one batch (and the rest when it closes)."""
        self.buffer_size = buffer_size
        return MinHashLSHDeletionSession(self, buffer_size=buffer_size)

    def remove(self, key: Hashable) -> None:
        """Remove ``key``; ValueError if it is not indexed."""
        if key not in self:
            raise ValueError("The given key does not exist")
        self._remove_many([key])

    def _remove_many(self, keys: Sequence[Hashable]) -> None:
        index = self._current()
        internal = [self._codec.encode(k) for k in keys]
        present = [k for k in internal if k is not None]
        if index is not None and present:
            index.remove_many(present)
        for k in present:
            self._codec.forget(k)

    def merge(self, other: MinHashLSH, check_overlap: bool = False) -> None:
        """Add every key of ``other`` (same num_perm, b and r) to this index; a key in both gets
        ``other``'s MinHash. ``check_overlap`` raises ValueError first if a key is in both."""
        if type(other) is not type(self):
            raise ValueError(f"Cannot merge type MinHashLSH and type {type(other).__name__}.")
        if (self.h, self.b, self.r) != (other.h, other.b, other.r):
            raise ValueError("Cannot merge MinHashLSH with different initialization parameters.")
        theirs = other._current()
        if theirs is None or len(theirs) == 0:
            return
        mine = self._current()
        if mine is not None and mine.settings.seed != theirs.settings.seed:
            raise ValueError(
                f"Cannot merge a MinHashLSH of seed={theirs.settings.seed} MinHashes into one of "
                f"seed={mine.settings.seed}"
            )
        if check_overlap and mine is not None and len(mine):
            own = set(self.keys)
            if any(k in own for k in other.keys):
                raise ValueError("The keys are overlapping, duplicate key exists.")
        for keys, sigs in other._pages():
            self._insert_many(keys, sigs, theirs.settings.seed)

    # -- querying ------------------------------------------------------------------------------

    def _lookup(self, sigs: np.ndarray) -> tuple[Candidates, list[np.ndarray]] | None:
        """Candidates of each query row, keeping only those with a band exactly equal to the
        query's (a band key is a 64-bit hash of the band: this drops the odd collision)."""
        index = self._current()
        if index is None:
            return None
        found = index.lookup_signatures(sigs)
        rows = []
        for q, idx in enumerate(found.rows):
            if idx.size:
                theirs = found.signatures[idx].reshape(idx.size, self.b, self.r)
                same = np.all(theirs == sigs[q].reshape(1, self.b, self.r), axis=2).any(axis=1)
                idx = idx[same]
            rows.append(idx)
        return found, rows

    def query(self, minhash: MinHash) -> list[Hashable]:
        """Every indexed key that shares at least one band bucket with ``minhash``: the LSH
        candidates, some of them below the threshold (see :meth:`query_scored`)."""
        sig = self._check(minhash, self._current())
        got = self._lookup(sig[None, :])
        if got is None:
            return []
        found, rows = got
        return [self._codec.decode(found.keys[i]) for i in rows[0].tolist()]

    def query_scored(self, minhash: MinHash) -> list[tuple[Hashable, float]]:
        """``(key, estimated Jaccard)`` of the candidates whose estimate is at least the
        threshold, best first (ties in key order). neardup's own, not datasketch's."""
        sig = self._check(minhash, self._current())
        got = self._lookup(sig[None, :])
        if got is None:
            return []
        found, rows = got
        idx = rows[0]
        sim = np.count_nonzero(found.signatures[idx] == sig, axis=1) / float(self.h)
        keep = np.flatnonzero(sim >= self.threshold)
        order = keep[np.argsort(-sim[keep], kind="stable")]
        return [(self._codec.decode(found.keys[idx[i]]), float(sim[i])) for i in order.tolist()]

    def add_to_query_buffer(self, minhash: MinHash) -> None:
        """Buffer a query for :meth:`collect_query_buffer`."""
        self._query_buffer.append(self._check(minhash, self._current()).copy())

    def collect_query_buffer(self) -> list[Hashable]:
        """Run the buffered queries in one lookup and empty the buffer: the keys that are
        candidates of every buffered query (the intersection of their :meth:`query` results)."""
        buffered, self._query_buffer = self._query_buffer, []
        if not buffered:
            return []
        got = self._lookup(np.stack(buffered))
        if got is None:
            return []
        found, rows = got
        common = set(rows[0].tolist()).intersection(*(r.tolist() for r in rows[1:]))
        return [self._codec.decode(found.keys[i]) for i in sorted(common)]

    def __contains__(self, key: object) -> bool:
        index = self._current()
        if index is None:
            return False
        try:
            internal = self._codec.encode(key)
        except TypeError:
            return False
        return internal is not None and internal in index

    def is_empty(self) -> bool:
        index = self._current()
        return index is None or len(index) == 0

    def __len__(self) -> int:
        index = self._current()
        return 0 if index is None else len(index)

    # -- views and counts ----------------------------------------------------------------------

    def _pages(self) -> Iterator[tuple[list[Hashable], np.ndarray]]:
        """Every ``(keys, signatures)`` in pages, in insertion order."""
        index = self._current()
        if index is None:
            return
        internal = list(self._storage.keys())
        for lo in range(0, len(internal), _PAGE):
            part = internal[lo : lo + _PAGE]
            yield [self._codec.decode(k) for k in part], self._storage.get_signatures(part)

    def _bands(self, sig: np.ndarray) -> list[bytes]:
        if np.all(sig == EMPTY_VALUE):
            return []  # an empty MinHash is in no bucket
        raw = np.ascontiguousarray(sig, dtype=">u4").tobytes()
        width = 4 * self.r
        return [raw[i * width : (i + 1) * width] for i in range(self.b)]

    def _counts(self, sigs: np.ndarray) -> list[dict[bytes, int]]:
        sigs = sigs[~np.all(sigs == EMPTY_VALUE, axis=1)]
        raw = np.ascontiguousarray(sigs.reshape(-1, self.b, self.r), dtype=">u4").view(f"V{4 * self.r}")
        out = []
        for band in range(self.b):
            values, counts = np.unique(raw[:, band, 0], return_counts=True)
            out.append({v.tobytes(): int(c) for v, c in zip(values, counts.tolist(), strict=True)})
        return out

    @property
    def keys(self) -> KeysView:
        """Read-only: each key's bucket keys, one per band (datasketch's ``lsh.keys``)."""
        return KeysView(self)

    @property
    def hashtables(self) -> list[HashtableView]:
        """Read-only: one view per band of its buckets (datasketch's ``lsh.hashtables``)."""
        return [HashtableView(self, band) for band in range(self.b)]

    def get_counts(self) -> list[dict[bytes, int]]:
        """Per band, a dict of bucket key -> how many keys are in that bucket."""
        pages = [sigs for _, sigs in self._pages()]
        if not pages:
            return [{} for _ in range(self.b)]
        return self._counts(np.concatenate(pages))

    def get_subset_counts(self, *keys: Hashable) -> list[dict[bytes, int]]:
        """:meth:`get_counts` over the given keys only (keys not indexed are left out)."""
        present = [k for k in dict.fromkeys(keys) if k in self]
        if not present:
            return [{} for _ in range(self.b)]
        internal = [self._codec.encode(k) or "" for k in present]
        return self._counts(self._storage.get_signatures(internal))

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        self._storage.close()

    def __getstate__(self) -> dict[str, Any]:
        """The parameters and storage config; for a memory index also its MinHashes. Unpickling
        a Redis or SQLite index reconnects to the same index (the basename is kept)."""
        state = {
            name: getattr(self, name)
            for name in ("threshold", "h", "b", "r", "weights", "hashranges", "prepickle", "hashfunc")
        }
        state["storage_config"] = self.storage_config
        state["buffer_size"] = self._buffer_size
        if not self._persistent:
            index = self._current()
            pages = list(self._pages())
            keys = [k for page, _ in pages for k in page]
            sigs = np.concatenate([s for _, s in pages]) if pages else None
            state["docs"] = None if index is None else (index.settings.seed, keys, sigs)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        docs = state.pop("docs", None)
        self._buffer_size = state.pop("buffer_size")
        self.__dict__.update(state)
        self._open()
        if docs is not None:
            seed, keys, sigs = docs
            self._create(seed)
            if keys:
                self._insert_many(keys, sigs, seed)


class KeysView:
    """``lsh.keys``: iterate the keys (in insertion order), ``key in``, ``len``, and ``get(key)``
    (or ``[key]``): the key's bucket keys, one per band (``[]`` for a key not indexed or an
    empty MinHash)."""

    def __init__(self, lsh: MinHashLSH) -> None:
        self._lsh = lsh

    def __iter__(self) -> Iterator[Hashable]:
        for keys, _ in self._lsh._pages():
            yield from keys

    def keys(self) -> list[Hashable]:
        return list(self)

    def __len__(self) -> int:
        return len(self._lsh)

    def size(self) -> int:
        return len(self._lsh)

    def __contains__(self, key: object) -> bool:
        return key in self._lsh

    def get(self, key: Hashable) -> list[bytes]:
        return self.getmany(key)[0]

    def __getitem__(self, key: Hashable) -> list[bytes]:
        return self.get(key)

    def getmany(self, *keys: Hashable) -> list[list[bytes]]:
        present = [k in self._lsh for k in keys]
        internal = [self._lsh._codec.encode(k) or "" for k, p in zip(keys, present, strict=True) if p]
        sigs = iter(self._lsh._storage.get_signatures(internal)) if internal else iter(())
        return [self._lsh._bands(next(sigs)) if p else [] for p in present]

    def itemcounts(self) -> dict[Hashable, int]:
        return {k: self._lsh.b for k in self}


class HashtableView:
    """``lsh.hashtables[i]``: band i's buckets. ``get(H)`` (or ``[H]``) is the set of keys in
    bucket ``H``; ``H in``, ``keys()`` (the bucket keys), ``size()`` / ``len`` (how many
    buckets), ``itemcounts()`` (bucket key -> how many keys)."""

    def __init__(self, lsh: MinHashLSH, band: int) -> None:
        self._lsh = lsh
        self._band = band

    def get(self, H: bytes) -> set[Hashable]:
        lsh = self._lsh
        index = lsh._current()
        if index is None or len(H) != 4 * lsh.r:
            return set()
        values = np.frombuffer(H, dtype=">u4").astype(np.uint32)
        # the band's key, in every band: a bucket of another band with the same key (odds 2**-64)
        # is dropped by the exact comparison below
        key = band_keys(values[None, :], 1, lsh.r)[0, 0]
        found = lsh._storage.lookup(np.full((1, lsh.b), key, dtype=np.uint64))
        lo, hi = lsh.hashranges[self._band]
        idx = found.rows[0]
        if idx.size == 0:
            return set()
        same = np.all(found.signatures[idx, lo:hi] == values, axis=1)
        return {lsh._codec.decode(found.keys[i]) for i in idx[same].tolist()}

    def __getitem__(self, H: bytes) -> set[Hashable]:
        return self.get(H)

    def __contains__(self, H: object) -> bool:
        return isinstance(H, bytes) and bool(self.get(H))

    def itemcounts(self) -> dict[bytes, int]:
        return self._lsh.get_counts()[self._band]

    def keys(self) -> list[bytes]:
        return list(self.itemcounts())

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.keys())

    def size(self) -> int:
        return len(self.itemcounts())

    def __len__(self) -> int:
        return self.size()


class _Session:
    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"buffer_size must be a positive integer, got {buffer_size!r}")
        self.lsh = lsh
        self.buffer_size = buffer_size

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def flush(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.flush()


class MinHashLSHInsertionSession(_Session):
    """Buffers inserts into a :class:`MinHashLSH` and writes them in batches."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        super().__init__(lsh, buffer_size)
        self._keys: list[Hashable] = []
        self._sigs: list[np.ndarray] = []
        self._seed: int | None = None
        self._pending: set[str] = set()

    def __enter__(self) -> MinHashLSHInsertionSession:
        return self

    def insert(self, key: Hashable, minhash: MinHash, check_duplication: bool = True) -> None:
        sig = self.lsh._check(minhash, self.lsh._current())
        if self._seed is not None and minhash.seed != self._seed:
            raise ValueError("every MinHash of a session must use the same seed")
        internal = self.lsh._codec.encode(key, create=True) or ""
        if check_duplication and (internal in self._pending or key in self.lsh):
            raise ValueError("The given key already exists")
        self._seed = minhash.seed
        self._keys.append(key)
        self._sigs.append(sig.copy())
        self._pending.add(internal)
        if len(self._keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        keys, sigs, seed = self._keys, self._sigs, self._seed
        self._keys, self._sigs, self._pending = [], [], set()
        if seed is not None and keys:
            self.lsh._insert_many(keys, np.stack(sigs), seed)


class MinHashLSHDeletionSession(_Session):
    """Buffers removals from a :class:`MinHashLSH` and makes them in batches."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        super().__init__(lsh, buffer_size)
        self._keys: list[Hashable] = []
        self._pending: set[str] = set()

    def __enter__(self) -> MinHashLSHDeletionSession:
        return self

    def remove(self, key: Hashable) -> None:
        """Remove ``key`` (when the buffer is written); ValueError if it is not indexed."""
        internal = self.lsh._codec.encode(key) if key in self.lsh else None
        if internal is None or internal in self._pending:
            raise ValueError("The given key does not exist")
        self._keys.append(key)
        self._pending.add(internal)
        if len(self._keys) >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        keys, self._keys, self._pending = self._keys, [], set()
        if keys:
            self.lsh._remove_many(keys)
