"""datasketch's ``MinHash``: hashing byte strings in batches, and folding them into signatures.

A value goes through three steps: a 64-bit hash (XXH64 of its bytes, seed 0, or the user's
``hashfunc`` followed by the MurmurHash3 64-bit finaliser ``fmix64``), then each of the
``num_perm`` multiply-shift permutations of :mod:`neardup.core.minhash`, whose uint32 minimum
over the set is the signature. A user's hash is mixed because multiply-shift keeps the structure
of inputs like consecutive integers (an identity ``hashfunc``), which biases the estimates;
XXH64 is already mixed. Both steps run on whole batches: one compiled kernel hashes every byte
string of a batch, another folds every hash of every set.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from neardup.config import MinHashConfig
from neardup.core.hashing import Permutations, pack_permutations, update_signature, xxh64_bytes
from neardup.core.jit import in_ranges, kernel
from neardup.core.minhash import EMPTY_VALUE, permutations

__all__ = ["MinHash"]

SCHEME = "affine32"
"""The one permutation scheme: the name datasketch gives its default (32-bit values from a
pre-mixed hash), so code that passes ``scheme=`` explicitly keeps working."""

GPU_MODES = ("disable", "detect", "always")
_MASK64 = (1 << 64) - 1
_SEED0 = np.uint64(0)
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S32 = np.uint64(32)
_BULK_SETS = 4096  # sets that generator() hashes and folds per batch
_SERIAL_BELOW = 64  # fewer sets than this skip the thread pool

_M = TypeVar("_M", bound="MinHash")


@kernel
def _xxh64_range(data: np.ndarray, offsets: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    """``out[i]`` = XXH64 (seed 0) of ``data[offsets[i]:offsets[i + 1]]`` for i in ``lo:hi``."""
    seed = np.uint64(0)
    for i in range(lo, hi):
        out[i] = xxh64_bytes(data, offsets[i], offsets[i + 1] - offsets[i], seed)


@kernel
def _fold_range(
    sigs: np.ndarray, hashes: np.ndarray, bounds: np.ndarray, perms: Permutations, lo: int, hi: int
) -> None:
    """Fold ``hashes[bounds[i]:bounds[i + 1]]`` into row i of ``sigs`` for i in ``lo:hi``."""
    work = np.empty(perms.a_lo.size, dtype=np.uint64)
    for i in range(lo, hi):
        update_signature(sigs[i], hashes, bounds[i], bounds[i + 1], perms, work)


def fmix64(hashes: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser of each value: a bijection that spreads every input bit
    over every output bit.

    >>> fmix64(np.array([0, 1], dtype=np.uint64)).tolist()
    [0, 12994781566227106604]
    """
    h = np.array(hashes, dtype=np.uint64)  # a copy: the finaliser works in place
    h ^= h >> _S33
    h *= _FMIX1
    h ^= h >> _S33
    h *= _FMIX2
    h ^= h >> _S33
    return h


@functools.lru_cache(maxsize=64)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, Permutations]:
    """``(uint64[2, num_perm] (a, b), packed for the kernel)`` for a seed, shared and read-only."""
    a, b = permutations(MinHashConfig(num_perm=num_perm, seed=seed))
    pair = np.stack([a, b])
    pair.setflags(write=False)
    return pair, pack_permutations(a, b)


def _pack(items: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(uint8 data, int64 offsets[n + 1])``: the bytes of each item, end to end."""
    try:
        joined = b"".join(items)
    except TypeError as exc:
        bad = next(x for x in items if not isinstance(x, (bytes, bytearray, memoryview)))
        raise TypeError(
            f"MinHash hashes bytes by default, got {type(bad).__name__}: {bad!r:.60}; encode text "
            "first (s.encode('utf-8')) or pass a hashfunc"
        ) from exc
    try:
        lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    except TypeError:  # numpy scalars: bytes-like, without a len()
        lengths = np.zeros(0, dtype=np.int64)
    if int(lengths.sum()) != len(joined) or lengths.size != len(items):  # len() counting elements
        lengths = np.fromiter((memoryview(x).nbytes for x in items), dtype=np.int64, count=len(items))
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(joined, dtype=np.uint8), offsets


def _xxh64_many(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.empty(offsets.size - 1, dtype=np.uint64)
    in_ranges(lambda lo, hi: _xxh64_range(data, offsets, out, lo, hi), out.size, 1 << 14)
    return out


def _numeric(values: Any) -> np.ndarray | None:
    """``values`` as a numeric numpy array whose elements are the values, or None."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf" and values.ndim >= 1:
        return np.ascontiguousarray(values)
    return None


def check_scheme(scheme: str | None) -> str:
    if scheme is None or scheme == SCHEME:
        return SCHEME
    raise ValueError(
        f"scheme {scheme!r} is not available: neardup.compat has one permutation scheme, 32-bit "
        f"values from a pre-mixed 64-bit hash, and calls it {SCHEME!r} (datasketch's default); "
        "sketches made by datasketch cannot be read, rebuild them from the sets"
    )


class MinHash:
    """datasketch's ``MinHash``: a signature of ``num_perm`` uint32 values under ``seed``.

    ``hashfunc`` (value -> int) replaces the default XXH64 of the value's bytes; its result is
    masked to 64 bits and mixed, so any hash gives unbiased estimates. ``permutations`` may be
    those of another MinHash of the same seed (they are derived from the seed). ``gpu_mode``
    ``"disable"`` and ``"detect"`` run on the CPU; ``"always"`` makes :meth:`update_batch`
    raise ``RuntimeError``, as datasketch does without a GPU.

    >>> m = MinHash(num_perm=16)
    >>> m.update_batch([b"a", b"b", b"c"])
    >>> m.jaccard(MinHash.union(m, m.copy())), len(m), m.hashvalues.dtype.name
    (1.0, 16, 'uint32')
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        gpu_mode: str = "disable",
        hashfunc: Callable[[Any], int] | None = None,
        hashobj: object | None = None,
        hashvalues: Iterable[int] | np.ndarray | None = None,
        permutations: tuple[Iterable[int], Iterable[int]] | np.ndarray | None = None,
        scheme: str | None = None,
    ) -> None:
        self.scheme = check_scheme(scheme)
        if gpu_mode not in GPU_MODES:
            raise ValueError(f"gpu_mode must be one of {', '.join(map(repr, GPU_MODES))}, got {gpu_mode!r}")
        if hashfunc is not None and not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        if hashobj is not None:
            warnings.warn("hashobj is deprecated, use hashfunc instead.", DeprecationWarning, stacklevel=2)
        values = None if hashvalues is None else _parse_hashvalues(hashvalues)
        if values is not None:
            num_perm = int(values.size)
        if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)) or num_perm < 1:
            raise ValueError(f"num_perm must be a positive integer, got {num_perm!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self.seed = int(seed)
        self.hashfunc = hashfunc
        self._gpu_mode = gpu_mode
        pair, _ = _permutations(int(num_perm), self.seed)
        if permutations is not None:
            _check_permutations(permutations, pair, self.seed)
        self.hashvalues: np.ndarray = (
            values if values is not None else np.full(int(num_perm), EMPTY_VALUE, dtype=np.uint32)
        )

    @classmethod
    def _make(cls: type[_M], proto: MinHash, values: np.ndarray) -> _M:
        """A MinHash like ``proto`` with ``values``, without checking them again."""
        out = cls.__new__(cls)
        out.scheme = proto.scheme
        out.seed = proto.seed
        out.hashfunc = proto.hashfunc
        out._gpu_mode = proto._gpu_mode
        out.hashvalues = values
        return out

    @property
    def num_perm(self) -> int:
        return int(self.hashvalues.size)

    @property
    def permutations(self) -> np.ndarray:
        """The permutations' (a, b) coefficients, uint64[2, num_perm], read-only: what the seed
        makes (``((a * h + b) mod 2**64) >> 32``)."""
        return _permutations(self.num_perm, self.seed)[0]

    @property
    def gpu_mode(self) -> str:
        return self._gpu_mode

    # -- hashing -------------------------------------------------------------------------------

    def _hashes(self, values: Any) -> np.ndarray:
        """uint64 hashes of an iterable of values (or of a numeric array's elements)."""
        array = _numeric(values)
        if self.hashfunc is None:
            if array is not None:
                flat = array.reshape(-1)
                width = flat.dtype.itemsize
                offsets = np.arange(0, (flat.size + 1) * width, width, dtype=np.int64)
                return _xxh64_many(flat.view(np.uint8), offsets)
            items = values if isinstance(values, list) else list(values)
            if not items:
                return np.empty(0, dtype=np.uint64)
            return _xxh64_many(*_pack(items))
        hf = self.hashfunc
        items = list(array.reshape(-1)) if array is not None else values
        raw = np.fromiter((int(hf(x)) & _MASK64 for x in items), dtype=np.uint64)
        return fmix64(raw)

    def _check_gpu(self) -> None:
        if self._gpu_mode == "always":
            raise RuntimeError(
                "GPU mode 'always' requested but neardup.compat has no GPU path; use "
                "gpu_mode='disable' or 'detect' (both run on the CPU)"
            )

    def _fold(self, hashes: np.ndarray) -> None:
        if hashes.size == 0:
            return
        if hashes.size == 1:  # one value: numpy beats a kernel call
            a, b = self.permutations
            values = ((a * hashes[0] + b) >> _S32).astype(np.uint32)
            self.hashvalues = np.minimum(self.hashvalues, values)
            return
        _, perms = _permutations(self.num_perm, self.seed)
        sig = np.full((1, perms.a_lo.size), EMPTY_VALUE, dtype=np.uint32)
        sig[0, : self.num_perm] = self.hashvalues
        bounds = np.array([0, hashes.size], dtype=np.int64)
        _fold_range(sig, hashes, bounds, perms, 0, 1)
        self.hashvalues = sig[0, : self.num_perm].copy()

    def update(self, b: Any) -> None:
        """Add one value (bytes, unless a ``hashfunc`` takes something else) to the set."""
        if self.hashfunc is None:
            self._fold(self._hashes([b]))
        else:
            self._fold(fmix64(np.array([int(self.hashfunc(b)) & _MASK64], dtype=np.uint64)))

    def update_batch(self, b: Iterable[Any]) -> None:
        """Add many values at once: hashed by one kernel call, folded by another."""
        self._check_gpu()
        self._fold(self._hashes(b))

    # -- comparing and combining ---------------------------------------------------------------

    def _check_same(self, other: MinHash, what: str) -> None:
        if getattr(other, "scheme", None) != self.scheme:
            raise ValueError(f"Cannot {what} MinHash with different permutation schemes")
        if self.seed != other.seed:
            raise ValueError(f"Cannot {what} MinHash with different seeds ({self.seed} and {other.seed})")
        if len(self) != len(other):
            raise ValueError(
                f"Cannot {what} MinHash with different numbers of permutation functions "
                f"({len(self)} and {len(other)})"
            )

    def jaccard(self, other: MinHash) -> float:
        """Estimated Jaccard similarity: the fraction of equal values."""
        self._check_same(other, "compute Jaccard similarity of")
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(len(self))

    def merge(self, other: MinHash) -> None:
        """Make this the MinHash of the union of both sets."""
        self._check_same(other, "merge")
        self.hashvalues = np.minimum(self.hashvalues, other.hashvalues)

    @classmethod
    def union(cls, *mhs: MinHash) -> MinHash:
        """A new MinHash of the union of the sets of two or more MinHashes (same seed and
        num_perm); it takes the first one's hashfunc and gpu_mode."""
        if len(mhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        for m in mhs[1:]:
            mhs[0]._check_same(m, "union")
        values = np.minimum.reduce([m.hashvalues for m in mhs]).astype(np.uint32)
        return MinHash._make(mhs[0], values)

    def count(self) -> float:
        """Estimated cardinality of the set."""
        return float(len(self) / np.sum(self.hashvalues / float(EMPTY_VALUE)) - 1.0)

    def digest(self) -> np.ndarray:
        """A copy of the hash values."""
        return self.hashvalues.copy()

    def is_empty(self) -> bool:
        """True if nothing was added."""
        return bool(np.all(self.hashvalues == EMPTY_VALUE))

    def clear(self) -> None:
        self.hashvalues = np.full(len(self), EMPTY_VALUE, dtype=np.uint32)

    def copy(self) -> MinHash:
        return MinHash._make(self, self.digest())

    def __len__(self) -> int:
        return int(self.hashvalues.size)

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and isinstance(other, MinHash)
            and self.scheme == other.scheme
            and self.seed == other.seed
            and np.array_equal(self.hashvalues, other.hashvalues)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like datasketch's

    # -- many at once --------------------------------------------------------------------------

    @classmethod
    def bulk(cls, b: Iterable[Iterable[Any]], **minhash_kwargs: Any) -> list[MinHash]:
        """One MinHash per set of ``b`` (an iterable of iterables of bytes, or a 2-D numeric
        array, one set per row), all made with ``minhash_kwargs``."""
        return list(cls.generator(b, **minhash_kwargs))

    @classmethod
    def generator(cls, b: Iterable[Iterable[Any]], **minhash_kwargs: Any) -> Iterator[MinHash]:
        """:meth:`bulk` as a generator: sets are hashed and folded a few thousand at a time."""
        proto = cls(**minhash_kwargs)
        proto._check_gpu()
        array = _numeric(b)
        if array is not None and array.ndim == 2:
            for lo in range(0, array.shape[0], _BULK_SETS):
                rows = array[lo : lo + _BULK_SETS]
                bounds = np.arange(rows.shape[0] + 1, dtype=np.int64) * rows.shape[1]
                yield from proto._fold_many(proto._hashes(rows), bounds)
            return
        it = iter(b)
        while True:
            sets = [s if isinstance(s, (list, tuple)) else list(s) for s in itertools.islice(it, _BULK_SETS)]
            if not sets:
                return
            bounds = np.zeros(len(sets) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, sets), dtype=np.int64, count=len(sets)), out=bounds[1:])
            yield from proto._fold_many(proto._hashes(list(itertools.chain.from_iterable(sets))), bounds)

    def _fold_many(self, hashes: np.ndarray, bounds: np.ndarray) -> Iterator[MinHash]:
        """MinHashes like this one, each folded with its slice of ``hashes``."""
        _, perms = _permutations(self.num_perm, self.seed)
        n = bounds.size - 1
        sigs = np.full((n, perms.a_lo.size), EMPTY_VALUE, dtype=np.uint32)
        sigs[:, : self.num_perm] = self.hashvalues
        in_ranges(lambda lo, hi: _fold_range(sigs, hashes, bounds, perms, lo, hi), n, _SERIAL_BELOW)
        values = np.ascontiguousarray(sigs[:, : self.num_perm])
        cls = type(self)
        for i in range(n):
            yield cls._make(self, values[i])


def _parse_hashvalues(hashvalues: Iterable[int] | np.ndarray) -> np.ndarray:
    values = np.asarray(hashvalues if isinstance(hashvalues, np.ndarray) else list(hashvalues))
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValueError("hashvalues must be one row of integers in the uint32 range")
    if values.size and (int(values.min()) < 0 or int(values.max()) > int(EMPTY_VALUE)):
        raise ValueError("hashvalues out of range for scheme 'affine32' (uint32)")
    return values.astype(np.uint32)


def _check_permutations(
    given: tuple[Iterable[int], Iterable[int]] | np.ndarray, expected: np.ndarray, seed: int
) -> None:
    try:
        a = np.asarray(given[0], dtype=np.uint64)
        b = np.asarray(given[1], dtype=np.uint64)
    except (TypeError, ValueError, OverflowError, IndexError) as exc:
        raise ValueError("permutations must be an (a, b) pair of uint64 arrays") from exc
    if a.shape != expected[0].shape or b.shape != expected[1].shape:
        raise ValueError("Numbers of hash values and permutations mismatch")
    if not (np.array_equal(a, expected[0]) and np.array_equal(b, expected[1])):
        raise ValueError(
            f"these permutations are not those of seed={seed}: neardup derives a MinHash's "
            "permutations from its seed; pass the seed of the MinHash they came from"
        )
