"""datasketch's ``LeanMinHash``: a frozen MinHash (seed and values only) that is hashable, picklable
and serializable into a caller's buffer.

The byte format is the one datasketch documents for its 32-bit scheme, in the byte order asked
for (``@`` native with native alignment, ``=``, ``<``, ``>``, ``!``)::

    seed                  int64
    -num_perm             int32    (negative: the format that carries a scheme code)
    scheme code           uint8    1 ("affine32")
    (padding to 4 bytes with "@" only)
    hash values           uint32 x num_perm
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

from neardup.compat.minhash import SCHEME, MinHash, _parse_hashvalues, check_scheme

__all__ = ["LeanMinHash"]

_SCHEME_CODE = 1
_BYTEORDERS = {"@": "=", "=": "=", "<": "<", ">": ">", "!": ">"}


def _header(byteorder: str) -> tuple[str, int]:
    """``(struct format of the header, offset of the first hash value)``."""
    if byteorder not in _BYTEORDERS:
        raise ValueError(f"byteorder must be one of {', '.join(_BYTEORDERS)}, got {byteorder!r}")
    return f"{byteorder}qiB", struct.calcsize(f"{byteorder}qiB0I")


def _values_dtype(byteorder: str) -> np.dtype[Any]:
    return np.dtype(_BYTEORDERS[byteorder] + "u4")


class LeanMinHash(MinHash):
    """A MinHash whose state is frozen: ``update``, ``update_batch``, ``merge`` and ``clear``
    raise ``TypeError``, and ``hashvalues`` is a read-only array.

    Made from a MinHash (``LeanMinHash(m)``) or from ``seed`` and ``hashvalues``.

    >>> m = MinHash(num_perm=8)
    >>> m.update(b"x")
    >>> lean = LeanMinHash(m)
    >>> buf = bytearray(lean.bytesize())
    >>> lean.serialize(buf)
    >>> LeanMinHash.deserialize(buf) == lean, len(buf), lean.jaccard(m)
    (True, 48, 1.0)
    """

    def __init__(
        self,
        minhash: MinHash | None = None,
        seed: int | None = None,
        hashvalues: Iterable[int] | np.ndarray | None = None,
        scheme: str | None = None,
    ) -> None:
        if minhash is not None:
            if scheme is not None and scheme != minhash.scheme:
                raise ValueError(
                    f"scheme {scheme!r} conflicts with the scheme {minhash.scheme!r} of the given MinHash"
                )
            seed, hashvalues, scheme = minhash.seed, minhash.hashvalues, minhash.scheme
        elif hashvalues is None or seed is None:
            raise ValueError(
                "Init parameters cannot be None: make sure to set either minhash or both of hash "
                "values and seed"
            )
        self._initialize(int(seed), _parse_hashvalues(hashvalues), check_scheme(scheme))

    def _initialize(self, seed: int, values: np.ndarray, scheme: str) -> None:
        if values.size == 0:
            raise ValueError("hashvalues must not be empty")
        if not 0 <= seed < 1 << 63:
            raise ValueError(f"a LeanMinHash seed must fit in int64 (its byte format), got {seed}")
        values.setflags(write=False)  # every caller passes an array of its own
        self.seed = seed
        self.scheme = scheme
        self.hashfunc = None
        self._gpu_mode = "disable"
        self.hashvalues = values

    @classmethod
    def _from(cls, seed: int, values: np.ndarray) -> LeanMinHash:
        out = cls.__new__(cls)
        out._initialize(seed, values, SCHEME)
        return out

    # -- frozen ----------------------------------------------------------------------------------

    def update(self, b: Any) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def update_batch(self, b: Iterable[Any]) -> None:
        raise TypeError("Cannot update a LeanMinHash")

    def merge(self, other: MinHash) -> None:
        raise TypeError("Cannot merge into a LeanMinHash: it is frozen; use LeanMinHash.union")

    def clear(self) -> None:
        raise TypeError("Cannot clear a LeanMinHash")

    def copy(self) -> LeanMinHash:
        return self._from(self.seed, self.hashvalues)

    @classmethod
    def union(cls, *lmhs: MinHash) -> LeanMinHash:
        """A new LeanMinHash of the union of two or more MinHashes."""
        if len(lmhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        for m in lmhs[1:]:
            lmhs[0]._check_same(m, "union")
        return cls._from(lmhs[0].seed, np.minimum.reduce([m.hashvalues for m in lmhs]).astype(np.uint32))

    def __hash__(self) -> int:  # type: ignore[override]  # frozen, so hashable
        return hash((self.scheme, self.seed, self.hashvalues.tobytes()))

    # -- bytes -----------------------------------------------------------------------------------

    def bytesize(self, byteorder: str = "@") -> int:
        """Bytes that :meth:`serialize` writes."""
        return _header(byteorder)[1] + 4 * len(self)

    def serialize(self, buf: Any, byteorder: str = "@") -> None:
        """Write this LeanMinHash at the start of ``buf`` (a writable buffer, such as a
        ``bytearray`` of :meth:`bytesize` bytes or a ``memoryview`` slice of a larger one)."""
        head, offset = _header(byteorder)
        view = memoryview(buf).cast("B")
        if len(view) < offset + 4 * len(self):
            raise ValueError("The buffer does not have enough space for holding this MinHash.")
        struct.pack_into(head, view, 0, self.seed, -len(self), _SCHEME_CODE)
        out = np.frombuffer(view, dtype=_values_dtype(byteorder), count=len(self), offset=offset)
        out[:] = self.hashvalues

    @classmethod
    def deserialize(cls, buf: Any, byteorder: str = "@") -> LeanMinHash:
        """The LeanMinHash that :meth:`serialize` wrote at the start of ``buf``."""
        head, offset = _header(byteorder)
        view = memoryview(buf).cast("B")
        seed, count, code = struct.unpack_from(head, view, 0)
        if count >= 0:
            raise ValueError(
                "this buffer holds a sketch of datasketch's 'legacy' scheme (before 2.0), which "
                "neardup.compat cannot read; rebuild it from the set"
            )
        if code != _SCHEME_CODE:
            raise ValueError(f"Unknown or unsupported permutation scheme code: {code}")
        values = np.frombuffer(view, dtype=_values_dtype(byteorder), count=-count, offset=offset)
        return cls._from(seed, values.astype(np.uint32))

    def __reduce__(self) -> tuple[Any, ...]:
        buf = bytearray(self.bytesize("<"))
        self.serialize(buf, "<")
        return (_unpickle, (bytes(buf),))


def _unpickle(data: bytes) -> LeanMinHash:
    return LeanMinHash.deserialize(data, "<")
