"""The persistent LSH index: insert, query and remove documents over any :class:`Storage`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

import numpy as np

from neardup.config import HASH_VERSION, DedupConfig
from neardup.core.containment import Direction
from neardup.core.lsh import band_keys
from neardup.core.minhash import EMPTY_VALUE, MinHasher
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.text import encode_texts
from neardup.core.verify import exact_jaccard_pairs
from neardup.errors import ConfigError, IndexSettingsError
from neardup.index.base import Candidates, DocumentInfo, Storage
from neardup.index.checking import CheckResult, InsertPolicy, check_many
from neardup.index.containment import (
    ContainmentCheck,
    ContainmentMatch,
    check_containment_many,
    containment_columns_of,
    query_containment_many,
)
from neardup.index.settings import FORMAT_VERSION, IndexSettings
from neardup.index.url import open_storage


@dataclass(frozen=True)
class Match:
    """A stored document that matches a query; ``exact`` says whether ``similarity`` is exact
    Jaccard of the shingle sets or the signature estimate."""

    key: str
    similarity: float
    exact: bool


class LSHIndex:
    """MinHash signatures and LSH band tables in a :class:`Storage`.

    A new (empty) storage takes its settings from ``config`` (default :class:`DedupConfig`); an
    existing one keeps its stored settings, and an explicit ``config`` or ``keep_shingles`` that
    differs from them raises :class:`IndexSettingsError`.

    >>> with LSHIndex.open("memory://") as index:
    ...     index.insert_many(["a", "b"], ["the cat sat on the mat today", "dogs bark at night"])
    ...     index.query("The cat sat on the mat today!")
    [Match(key='a', similarity=1.0, exact=False)]
    """

    def __init__(
        self,
        storage: Storage,
        config: DedupConfig | None = None,
        *,
        keep_shingles: bool | None = None,
        containment: bool | None = None,
    ) -> None:
        self.storage = storage
        stored = storage.read_settings()
        if stored is None:
            self.settings = IndexSettings.from_config(
                config or DedupConfig(), keep_shingles=bool(keep_shingles), containment=bool(containment)
            )
            storage.write_settings(self.settings.to_dict())
        else:
            self.settings = IndexSettings.from_dict(stored)
            current = replace(self.settings, format_version=FORMAT_VERSION, hash_version=HASH_VERSION)
            self.settings.check_compatible(current, what="version of neardup")
            if config is not None:
                self.settings.check_compatible(IndexSettings.from_config(config), what="config", banding=True)
            if keep_shingles is not None and keep_shingles != self.settings.keep_shingles:
                raise IndexSettingsError(
                    f"the index was built with keep_shingles={self.settings.keep_shingles!r} "
                    f"but this config uses keep_shingles={keep_shingles!r}"
                )
            if containment is not None and containment != self.settings.containment:
                raise IndexSettingsError(
                    f"the index was built with containment={self.settings.containment!r} "
                    f"but this config uses containment={containment!r}"
                )
        self._config = self.settings.to_config()
        self._hasher = MinHasher(self._config.minhash, self._config.text, self._config.shingle)

    @classmethod
    def open(
        cls,
        url_or_path: str | os.PathLike[str],
        config: DedupConfig | None = None,
        *,
        keep_shingles: bool | None = None,
        containment: bool | None = None,
    ) -> LSHIndex:
        """The index at a URL or path (see :func:`~neardup.index.open_storage`)."""
        storage = open_storage(url_or_path)
        try:
            return cls(storage, config, keep_shingles=keep_shingles, containment=containment)
        except BaseException:
            storage.close()
            raise

    # -- inserting -----------------------------------------------------------------------------

    def insert(self, key: str, text: str) -> None:
        """Add (or replace) one document."""
        self.insert_many([key], [text])

    def insert_many(self, keys: Sequence[str], texts: Sequence[str]) -> None:
        """Add (or replace) a batch of documents, all or nothing (on Redis, each piece of a large
        batch: see :meth:`~neardup.index.redis.RedisStorage.insert`); a key repeated in the batch
        keeps its last text.

        Each document's shingle count is stored for :meth:`info`: the distinct shingles in an index
        that keeps shingles or searches by containment, otherwise the signature pass's count (a
        repeated shingle counted each time), as counting distinct ones would take a second pass
        over the texts.
        """
        keys, texts = _last_wins(keys, texts, "texts")
        batch = encode_texts(list(texts))
        sigs, counts = self._hasher.signatures_with_counts(batch)
        shingles = None
        eligible = counts > 0
        if self.settings.keep_shingles or self.settings.containment:
            sets = shingle_sets(batch, np.arange(len(keys)), counts, self._config.text, self._config.shingle)
            if self.settings.keep_shingles:
                shingles = [sets.get(i).copy() for i in range(len(keys))]
            counts = sets.lengths
        self._insert(keys, sigs, shingles, eligible=eligible, shingle_counts=counts)

    def insert_signatures(
        self,
        keys: Sequence[str],
        signatures: np.ndarray,
        *,
        settings: IndexSettings | None = None,
        shingles: Sequence[np.ndarray] | None = None,
        shingle_counts: np.ndarray | None = None,
    ) -> None:
        """Add (or replace) documents by their signatures (uint32[n, num_perm]).

        ``settings`` (those the signatures were made with) are checked against the index's. An
        index that keeps shingles needs each document's sorted unique shingle hashes too. For
        :meth:`info`, each document's shingle count is the size of its shingle set when given,
        else ``shingle_counts`` (int64[n]; as ``signatures_with_counts`` makes them), else unknown.
        A containment index needs each document's distinct shingle count: ``shingles`` or
        ``shingle_counts`` of distinct shingles.
        """
        if settings is not None:
            self.settings.check_compatible(settings, what="signature")
        sigs = self._check_signatures(signatures, "signatures")
        if self.settings.keep_shingles and shingles is None:
            raise ConfigError(
                "this index keeps shingles for exact similarity: pass shingles= with the signatures, "
                "or insert the texts with insert_many"
            )
        if self.settings.containment and shingles is None and shingle_counts is None:
            raise ConfigError(
                "this index searches by containment, which needs each document's distinct shingle "
                "count: pass shingles= or shingle_counts= with the signatures"
            )
        if shingles is not None and len(shingles) != len(keys):
            raise ValueError(f"expected {len(keys)} shingle sets, got {len(shingles)}")
        if shingles is not None:
            shingle_counts = np.fromiter(map(len, shingles), dtype=np.int64, count=len(shingles))
        elif shingle_counts is not None and np.shape(shingle_counts) != (len(keys),):
            raise ValueError(f"expected {len(keys)} shingle counts, got shape {np.shape(shingle_counts)}")
        if not self.settings.keep_shingles:
            shingles = None
        if len(keys) != sigs.shape[0]:
            raise ValueError(f"{len(keys)} keys but {sigs.shape[0]} signatures")
        positions = _last_positions(keys)
        if positions is not None:
            keys = [keys[i] for i in positions]
            sigs = sigs[positions]
            shingles = None if shingles is None else [shingles[i] for i in positions]
            shingle_counts = None if shingle_counts is None else np.asarray(shingle_counts)[positions]
        eligible = ~np.all(sigs == EMPTY_VALUE, axis=1)
        self._insert(keys, sigs, shingles, eligible=eligible, shingle_counts=shingle_counts)

    def _insert(
        self,
        keys: Sequence[str],
        sigs: np.ndarray,
        shingles: Sequence[np.ndarray] | None,
        *,
        eligible: np.ndarray,
        shingle_counts: np.ndarray | None,
    ) -> None:
        bk = band_keys(sigs, self.settings.bands, self.settings.rows)
        if self.settings.containment:
            sizes = (
                np.zeros(len(keys), dtype=np.int64) if shingle_counts is None else np.asarray(shingle_counts)
            )
            bk = np.concatenate([bk, containment_columns_of(self, sigs, sizes, eligible)], axis=1)
        self.storage.insert(keys, sigs, bk, shingles, eligible=eligible, shingle_counts=shingle_counts)

    # -- querying ------------------------------------------------------------------------------

    def query(
        self, text: str, *, threshold: float | None = None, top_k: int | None = None, exact: bool = False
    ) -> list[Match]:
        """The stored documents whose similarity to ``text`` is at least ``threshold`` (default:
        the index's), best first (ties by key), at most ``top_k``. ``exact=True`` ranks by exact
        Jaccard of the shingle sets, which needs an index built with ``keep_shingles=True``."""
        return self.query_many([text], threshold=threshold, top_k=top_k, exact=exact)[0]

    def query_many(
        self,
        texts: Sequence[str],
        *,
        threshold: float | None = None,
        top_k: int | None = None,
        exact: bool = False,
    ) -> list[list[Match]]:
        """:meth:`query` for each of ``texts``, in one batch."""
        self._check_query(threshold, top_k, exact)
        batch = encode_texts(list(texts))
        sigs, counts = self._hasher.signatures_with_counts(batch)
        sets = None
        if exact:
            sets = shingle_sets(batch, np.arange(len(texts)), counts, self._config.text, self._config.shingle)
        return self._query(sigs, counts > 0, threshold=threshold, top_k=top_k, sets=sets)

    def query_containment(
        self,
        text: str,
        min_containment: float = 0.8,
        *,
        direction: Direction = "query_in_doc",
        top_k: int | None = None,
        exact: bool | None = None,
    ) -> list[ContainmentMatch]:
        """The stored documents whose containment with ``text`` is at least ``min_containment``,
        best first (ties by key), at most ``top_k``: with ``direction="query_in_doc"`` the share
        of the text's shingles found in the document, with ``"doc_in_query"`` the share of the
        document's found in the text. Exact with stored shingles (``exact``, default: whether
        the index keeps them), else estimated. Needs an index built with ``containment=True``.

        >>> with LSHIndex.open("memory://", containment=True, keep_shingles=True) as index:
        ...     index.insert("essay", "a long essay that quotes the cat sat on the mat today in it")
        ...     index.query_containment("the cat sat on the mat today", 0.9)
        [ContainmentMatch(key='essay', containment=1.0, exact=True)]
        """
        return self.query_containment_many(
            [text], min_containment, direction=direction, top_k=top_k, exact=exact
        )[0]

    def query_containment_many(
        self,
        texts: Sequence[str],
        min_containment: float = 0.8,
        *,
        direction: Direction = "query_in_doc",
        top_k: int | None = None,
        exact: bool | None = None,
    ) -> list[list[ContainmentMatch]]:
        """:meth:`query_containment` for each of ``texts``, in one batch."""
        return query_containment_many(
            self, texts, min_containment=min_containment, direction=direction, top_k=top_k, exact=exact
        )

    def query_signature(
        self,
        signature: np.ndarray,
        *,
        threshold: float | None = None,
        top_k: int | None = None,
        settings: IndexSettings | None = None,
    ) -> list[Match]:
        """:meth:`query` by a signature (uint32[num_perm]) made with ``settings``; estimated
        similarity only."""
        sig = np.asarray(signature)
        if sig.ndim != 1:
            raise ValueError(f"a signature is one row of num_perm values, got shape {sig.shape}")
        return self.query_signatures(sig[None, :], threshold=threshold, top_k=top_k, settings=settings)[0]

    def query_signatures(
        self,
        signatures: np.ndarray,
        *,
        threshold: float | None = None,
        top_k: int | None = None,
        settings: IndexSettings | None = None,
    ) -> list[list[Match]]:
        """:meth:`query_signature` for each row of uint32[m, num_perm], in one batch."""
        if settings is not None:
            self.settings.check_compatible(settings, what="signature")
        self._check_query(threshold, top_k, exact=False)
        sigs = self._check_signatures(signatures, "signatures")
        eligible = ~np.all(sigs == EMPTY_VALUE, axis=1)
        return self._query(sigs, eligible, threshold=threshold, top_k=top_k, sets=None)

    def _check_query(self, threshold: float | None, top_k: int | None, exact: bool) -> None:
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1
        ):
            raise ConfigError(f"threshold must be in (0, 1], got {threshold!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ConfigError(f"top_k must be a whole number of at least 1, got {top_k!r}")
        if exact and not self.settings.keep_shingles:
            raise ConfigError(
                "exact similarity needs the documents' shingles, and this index does not keep them; "
                "build it with keep_shingles=True (or query without exact)"
            )

    def _check_signatures(self, signatures: np.ndarray, what: str) -> np.ndarray:
        arr = np.asarray(signatures)
        if arr.ndim != 2:
            raise ValueError(f"{what} must be a 2-D array (documents x num_perm), got shape {arr.shape}")
        if arr.shape[1] != self.settings.num_perm:
            raise IndexSettingsError(
                f"the index was built with num_perm={self.settings.num_perm} "
                f"but these {what} have {arr.shape[1]} values each"
            )
        if arr.dtype != np.uint32:
            if not np.issubdtype(arr.dtype, np.integer) or (
                arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF)
            ):
                raise ValueError(f"{what} must hold uint32 values, got dtype {arr.dtype}")
            arr = arr.astype(np.uint32)
        return np.ascontiguousarray(arr)

    def lookup_signatures(self, signatures: np.ndarray, *, shingles: bool = False) -> Candidates:
        """The stored documents sharing a band with each row of uint32[m, num_perm] (empty rows
        get none), with their signatures and, if asked, shingles, read in one snapshot."""
        sigs = self._check_signatures(signatures, "signatures")
        eligible = ~np.all(sigs == EMPTY_VALUE, axis=1)
        return self._lookup(sigs, eligible, shingles=shingles)

    def _lookup(self, sigs: np.ndarray, eligible: np.ndarray, *, shingles: bool) -> Candidates:
        rows = np.flatnonzero(eligible)
        empty = np.empty(0, dtype=np.int64)
        if rows.size == 0:
            no_sigs = np.empty((0, self.settings.num_perm), dtype=np.uint32)
            return Candidates([], no_sigs, [empty] * sigs.shape[0], [] if shingles else None)
        found = self.storage.lookup(
            band_keys(sigs[rows], self.settings.bands, self.settings.rows), shingles=shingles
        )
        if rows.size == sigs.shape[0]:
            return found
        per_row = [empty] * sigs.shape[0]
        for q, cands in zip(rows.tolist(), found.rows, strict=True):
            per_row[q] = cands
        return replace(found, rows=per_row)

    def _query(
        self,
        sigs: np.ndarray,
        eligible: np.ndarray,
        *,
        threshold: float | None,
        top_k: int | None,
        sets: ShingleSets | None,
    ) -> list[list[Match]]:
        limit = self.settings.threshold if threshold is None else float(threshold)
        found = self._lookup(sigs, eligible, shingles=sets is not None)
        out: list[list[Match]] = [[] for _ in range(sigs.shape[0])]
        exact = sets is not None
        for q, idx in enumerate(found.rows):
            if idx.size == 0:
                continue
            cands = [found.keys[i] for i in idx.tolist()]
            if sets is not None and found.shingles is not None:
                sim = _exact_similarities(sets.get(q), [found.shingles[i] for i in idx.tolist()], cands)
            else:
                sim = np.count_nonzero(found.signatures[idx] == sigs[q], axis=1) / sigs.shape[1]
            keep = np.flatnonzero(sim >= limit)
            # best first, ties by key: candidates are sorted by key, so a stable sort keeps that
            order = keep[np.argsort(-sim[keep], kind="stable")]
            if top_k is not None:
                order = order[:top_k]
            out[q] = [Match(cands[i], float(sim[i]), exact) for i in order.tolist()]
        return out

    def check_many(
        self,
        texts: Sequence[str],
        keys: Sequence[str | None] | None = None,
        *,
        insert: InsertPolicy = "never",
        top_k: int | None = None,
        exact: bool | None = None,
    ) -> list[CheckResult]:
        """Check each text against the index and, by ``insert`` (``never``, ``if_new``: only texts
        that match nothing, atomically; ``always``), insert it under its key: see
        :func:`neardup.index.checking.check_many`."""
        return check_many(self, texts, keys, insert=insert, top_k=top_k, exact=exact)

    # -- the rest ------------------------------------------------------------------------------

    def remove(self, key: str) -> bool:
        """Remove one document; False if it was not stored."""
        return self.storage.remove([key]) == 1

    def remove_many(self, keys: Sequence[str]) -> int:
        """Remove documents, all or nothing (on Redis, each piece of a large batch); return how
        many were stored."""
        return self.storage.remove(list(keys))

    def info(self, key: str) -> DocumentInfo | None:
        """When ``key`` was last inserted and how many shingles it has (see
        :class:`~neardup.index.base.DocumentInfo`); None if it is not stored."""
        return self.storage.info([key])[0]

    def info_many(self, keys: Sequence[str]) -> list[DocumentInfo | None]:
        """:meth:`info` for each of ``keys``, in one batch."""
        return self.storage.info(list(keys))

    def check_containment_many(
        self,
        texts: Sequence[str],
        keys: Sequence[str | None] | None = None,
        *,
        insert: InsertPolicy = "never",
        min_containment: float = 0.8,
        direction: Direction = "query_in_doc",
        top_k: int | None = None,
        exact: bool | None = None,
    ) -> list[ContainmentCheck]:
        """:meth:`check_many` by containment: see
        :func:`neardup.index.containment.check_containment_many`."""
        return check_containment_many(
            self,
            texts,
            keys,
            insert=insert,
            min_containment=min_containment,
            direction=direction,
            top_k=top_k,
            exact=exact,
        )

    def exclusive(self) -> AbstractContextManager[None]:
        """A section that one holder at a time is in, across threads and the processes sharing the
        index (see :meth:`Storage.exclusive`), for a check and the insert it decides on:

        >>> index = LSHIndex.open("memory://")
        >>> with index.exclusive():
        ...     if not index.query("a text to add once"):
        ...         index.insert("t1", "a text to add once")
        >>> len(index)
        1
        """
        return self.storage.exclusive()

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.storage.contains(key)

    def __len__(self) -> int:
        return self.storage.count()

    def stats(self) -> dict[str, Any]:
        """Documents, shape, settings, size and backend, JSON-ready."""
        url = self.storage.url
        return {
            "documents": self.storage.count(),
            "bands": self.settings.bands,
            "rows": self.settings.rows,
            "settings": {
                **self.settings.to_dict(),
                "sketch": self.settings.sketch,
                "containment": self.settings.containment,
                "partitions": list(self.settings.partitions),
            },
            "size_bytes": self.storage.size_bytes(),
            "backend": url.partition("://")[0],
            "url": url,
        }

    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> LSHIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _last_positions(keys: Sequence[str]) -> list[int] | None:
    """Positions of each key's last occurrence in order, or None if no key repeats."""
    last = {k: i for i, k in enumerate(keys)}
    if len(last) == len(keys):
        return None
    return sorted(last.values())


def _last_wins(keys: Sequence[str], texts: Sequence[str], what: str) -> tuple[list[str], list[str]]:
    if len(keys) != len(texts):
        raise ValueError(f"{len(keys)} keys but {len(texts)} {what}")
    positions = _last_positions(keys)
    if positions is None:
        return list(keys), list(texts)
    return [keys[i] for i in positions], [texts[i] for i in positions]


def _exact_similarities(query: np.ndarray, stored: list[np.ndarray | None], keys: list[str]) -> np.ndarray:
    """Exact Jaccard of one sorted shingle set against several, with the compiled pair kernel."""
    sets: list[np.ndarray] = [query]
    for key, s in zip(keys, stored, strict=True):
        if s is None:
            raise ConfigError(f"document {key!r} was stored without its shingles; re-insert it")
        sets.append(s)
    csr = ShingleSets.from_sets(sets)
    right = np.arange(1, len(sets), dtype=np.int64)
    sim: np.ndarray = exact_jaccard_pairs(csr, len(sets), np.zeros(right.size, dtype=np.int64), right)
    return sim
