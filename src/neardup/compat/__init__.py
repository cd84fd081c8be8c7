"""A drop-in for datasketch 2.x's ``MinHash``, ``LeanMinHash`` and ``MinHashLSH``, on top of
:class:`~neardup.index.LSHIndex`.

Switch with one import::

    from neardup.compat import MinHash, MinHashLSH

>>> from neardup.compat import MinHash, MinHashLSH
>>> a, b = MinHash.bulk([[w.encode() for w in "the cat sat on the mat".split()]] * 2, num_perm=64)
>>> lsh = MinHashLSH(threshold=0.8, num_perm=64)
>>> lsh.insert("a", a)
>>> lsh.query(b), lsh.query_scored(b)
(['a'], [('a', 1.0)])

The rooms: :mod:`~neardup.compat.minhash` (hashing and folding in batches),
:mod:`~neardup.compat.lean` (the frozen sketch and its byte format), :mod:`~neardup.compat.lsh`
(the index, its sessions and views), :mod:`~neardup.compat.storage` (``storage_config`` and keys).

Deliberate differences from datasketch (also in ``docs/compat.md``):

- Hash values differ from datasketch's: ``update`` hashes bytes with XXH64 (seed 0), not SHA-1,
  and the permutations are neardup's multiply-shift ones, derived from the seed. A ``hashfunc``'s
  result is masked to 64 bits and mixed with fmix64 first, so structured hashes stay unbiased.
- ``hashvalues`` is ``uint32``; an empty MinHash holds ``0xFFFFFFFF``. ``permutations`` is a
  read-only uint64[2, num_perm] array; one given to the constructor must be the seed's own.
- One permutation scheme, named ``"affine32"`` (datasketch's default); ``scheme`` is optional
  even with ``hashvalues``, and ``"affine64"`` / ``"legacy"`` are refused. ``gpu_mode="always"``
  raises ``RuntimeError`` in ``update_batch`` / ``bulk``: there is no GPU path.
- ``LeanMinHash`` is fully frozen (``merge`` and ``clear`` raise ``TypeError`` too, and
  ``hashvalues`` is read-only); ``deserialize`` refuses the pre-2.0 ``legacy`` byte format.
- ``MinHashLSH`` needs ``b * r == num_perm`` (datasketch also accepts less), and its optimiser
  only considers such shapes, so ``b`` and ``r`` can differ from datasketch's.
- ``query_scored(minhash)``, neardup's own: ``(key, estimated Jaccard)`` at or above the
  threshold, best first. ``query`` returns the LSH candidates, as datasketch does.
- A MinHash whose seed differs from the index's is refused (``ValueError``), not silently mixed.
- An empty MinHash (nothing added) is stored but in no bucket: never a candidate.
- Keys: ``str`` keys are stored as themselves (readable by neardup's CLI), on any storage, with
  or without ``prepickle``; ``prepickle=False`` on Redis or SQLite takes bytes or str (datasketch:
  bytes only); ``prepickle`` defaults to True for SQLite as for Redis. ``lsh.keys`` iterates the
  keys you gave, not their pickled bytes. Inserting an existing key with
  ``check_duplication=False`` (or merging one) replaces its MinHash instead of adding a copy.
- ``keys`` and ``hashtables`` are read-only views; a bucket key is the band's values as
  big-endian uint32 bytes. ``MinHashLSH(hashfunc=...)`` is accepted but changes nothing: band keys
  are always 64-bit hashes.
- ``storage_config`` also takes ``{"type": "sqlite", "path": "index.db"}``; an unknown key or
  Redis option is refused; ``redis_buffer={"transaction": False}`` is accepted but every write is
  still one transaction. Cassandra is not available.
"""

from neardup.compat.lean import LeanMinHash
from neardup.compat.lsh import MinHashLSH, MinHashLSHDeletionSession, MinHashLSHInsertionSession
from neardup.compat.minhash import MinHash

__all__ = [
    "LeanMinHash",
    "MinHash",
    "MinHashLSH",
    "MinHashLSHDeletionSession",
    "MinHashLSHInsertionSession",
]
