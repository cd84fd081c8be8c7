"""The in-memory backend: plain dicts, for tests and one-off use. Lost when the process ends."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from neardup.index.base import (
    Candidates,
    DocumentInfo,
    ExclusiveSection,
    check_batch,
    check_counts,
    lookup_mask,
)


class MemoryStorage:
    """Documents in dicts; buckets as ``(band index, band key) -> set of keys``."""

    def __init__(self) -> None:
        self._settings: dict[str, Any] | None = None
        self._signatures: dict[str, np.ndarray] = {}  # insertion-ordered, so keys() is too
        self._shingles: dict[str, np.ndarray | None] = {}
        self._doc_buckets: dict[str, list[tuple[int, int]]] = {}
        self._buckets: dict[tuple[int, int], set[str]] = {}
        self._epoch = 0
        self._info: dict[str, tuple[float, int | None]] = {}  # key -> (inserted at, shingle count)
        self._section = ExclusiveSection("memory://")

    @property
    def url(self) -> str:
        return "memory://"

    def read_settings(self) -> dict[str, Any] | None:
        return copy.deepcopy(self._settings)

    def write_settings(self, settings: dict[str, Any]) -> None:
        self._settings = copy.deepcopy(settings)
        self._epoch += 1

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
        mask = check_batch(keys, signatures, band_keys, shingles, eligible)
        counts = [None if c < 0 else c for c in check_counts(shingle_counts, len(keys)).tolist()]
        # everything that can fail happens above; the loop below only mutates dicts
        sigs = np.array(signatures, dtype=np.uint32)  # a copy the caller cannot change
        band_rows = np.asarray(band_keys, dtype=np.uint64).tolist()
        now = time.time()
        self._discard(keys)
        self._epoch += 1
        for i, key in enumerate(keys):
            self._signatures[key] = sigs[i]
            self._info[key] = (now, counts[i])
            self._shingles[key] = None if shingles is None else np.array(shingles[i], dtype=np.uint64)
            buckets = list(enumerate(band_rows[i])) if mask[i] else []
            self._doc_buckets[key] = buckets
            for bucket in buckets:
                self._buckets.setdefault(bucket, set()).add(key)

    def lookup(
        self, band_keys: np.ndarray, *, shingles: bool = False, mask: np.ndarray | None = None
    ) -> Candidates:
        keys = np.asarray(band_keys, dtype=np.uint64)
        wanted = lookup_mask(keys, mask)
        per_row: list[set[str]] = [set() for _ in range(keys.shape[0])]
        cell_rows, cell_bands = np.nonzero(wanted)
        buckets = self._buckets
        for row, bucket in zip(
            cell_rows.tolist(), zip(cell_bands.tolist(), keys[wanted].tolist(), strict=True), strict=True
        ):
            found = buckets.get(bucket)
            if found:
                per_row[row].update(found)
        return Candidates.from_rows(per_row, self.get_signatures, self.get_shingles if shingles else None)

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        if not keys:
            return np.empty((0, 0), dtype=np.uint32)
        return np.stack([self._signatures[k] for k in keys])

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        return [self._shingles[k] for k in keys]

    def info(self, keys: Sequence[str]) -> list[DocumentInfo | None]:
        found = [self._info.get(k) for k in keys]
        return [None if f is None else DocumentInfo(k, *f) for k, f in zip(keys, found, strict=True)]

    def remove(self, keys: Sequence[str]) -> int:
        self._epoch += 1
        return self._discard(keys)

    def _discard(self, keys: Sequence[str]) -> int:
        removed = 0
        for key in keys:
            if self._signatures.pop(key, None) is None:
                continue
            removed += 1
            del self._shingles[key]
            del self._info[key]
            for bucket in self._doc_buckets.pop(key):
                members = self._buckets[bucket]
                members.discard(key)
                if not members:
                    del self._buckets[bucket]
        return removed

    def contains(self, key: str) -> bool:
        return key in self._signatures

    def count(self) -> int:
        return len(self._signatures)

    def keys(self) -> Iterator[str]:
        return iter(list(self._signatures))

    def epoch(self) -> int:
        return self._epoch

    def size_bytes(self) -> int | None:
        return None

    def exclusive(self) -> AbstractContextManager[None]:
        """The exclusive section of this process's threads (a memory index has no other process)."""
        return self._section.hold()

    def close(self) -> None:
        return None
