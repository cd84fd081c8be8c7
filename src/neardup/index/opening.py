"""Opening an index from a URL with settings as a user gives them: what the command, the
service and every engine call.

``settings`` are :meth:`~neardup.config.DedupConfig.create`'s keywords as given (a missing key or
``None``: not given). An existing index keeps its stored settings; a given signature or banding
setting that differs from them is refused, naming it. A missing index is created from them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neardup.config import DedupConfig
from neardup.errors import ConfigError, StorageError
from neardup.index.base import Storage
from neardup.index.lsh_index import LSHIndex
from neardup.index.settings import IndexSettings
from neardup.index.url import open_storage
from neardup.redaction import redact_url

__all__ = [
    "CREATE_SETTINGS",
    "SIGNATURE_SETTINGS",
    "IndexExistsError",
    "IndexNotFoundError",
    "build_index",
    "merged_config",
    "open_index",
]

SIGNATURE_SETTINGS = (
    "shingle",
    "ngram",
    "tokenizer",
    "num_perm",
    "seed",
    "sketch",
    "threshold",
    "bands",
    "rows",
    "nfkc",
    "strip_accents",
    "lowercase",
    "strip_punctuation",
)
"""The settings an index stores: they decide its signatures and its banding."""

CREATE_SETTINGS = (*SIGNATURE_SETTINGS, "fp_weight", "max_bucket_size")
"""The settings a new index is made from (the LSH shape is chosen with ``fp_weight``)."""


class IndexNotFoundError(StorageError):
    """No index at the location, and none was to be created."""

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(f"no index at {redact_url(url)}")


class IndexExistsError(StorageError):
    """An index to be built anew already holds documents."""

    def __init__(self, url: str, count: int) -> None:
        self.url = url
        self.count = count
        super().__init__(f"{redact_url(url)} already holds an index of {count:,} documents")


def _local_file(url: str) -> Path | None:
    """The file an SQLite index location names, or None for a server or memory URL."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return Path(url).expanduser()
    if scheme.lower() == "sqlite" and rest:
        return Path(rest).expanduser()
    return None


def _storage(url: str, *, create: bool, readonly: bool = False) -> Storage:
    local = _local_file(url)
    if not create and local is not None and not local.exists():
        raise IndexNotFoundError(url)
    return open_storage(url, readonly=readonly and not create)


def _given(settings: Mapping[str, Any] | None, names: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(settings or {}) - set(DedupConfig.create.__kwdefaults__ or {}))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}")
    return {k: v for k, v in (settings or {}).items() if k in names and v is not None}


def merged_config(stored: IndexSettings, settings: Mapping[str, Any] | None = None) -> DedupConfig:
    """The index's settings overridden by those ``settings`` give, for checking against the
    index (:class:`LSHIndex` refuses one that differs, naming it)."""
    given = _given(settings, SIGNATURE_SETTINGS)
    merged: dict[str, Any] = {
        "shingle": stored.shingle_mode,
        "ngram": stored.ngram,
        "tokenizer": stored.tokenizer,
        "num_perm": stored.num_perm,
        "seed": stored.seed,
        "sketch": stored.sketch,
        "threshold": stored.threshold,
        "nfkc": stored.nfkc,
        "strip_accents": stored.strip_accents,
        "lowercase": stored.lowercase,
        "strip_punctuation": stored.strip_punctuation,
        **given,
    }
    # The index's shape stands unless a shape, or a signature length it cannot have, is given.
    if "bands" not in given and "rows" not in given and merged["num_perm"] == stored.num_perm:
        merged["bands"], merged["rows"] = stored.bands, stored.rows
    return DedupConfig.create(**merged)


def open_index(
    url: str | os.PathLike[str],
    *,
    settings: Mapping[str, Any] | None = None,
    create: bool = False,
    keep_shingles: bool | None = None,
    containment: bool | None = None,
    readonly: bool = False,
) -> LSHIndex:
    """The index at ``url``, its settings checked against those ``settings`` give; ``readonly``
    opens an SQLite file for reading only, so that a command that only reads never writes to it
    and works on read-only media.

    A missing index is an :class:`IndexNotFoundError` unless ``create``, which makes it from
    ``settings`` (and ``keep_shingles``, ``containment``). Errors of the settings are
    :class:`ConfigError`, of the backend :class:`StorageError`.

    >>> with open_index("memory://", create=True, settings={"threshold": 0.7}) as index:
    ...     index.settings.threshold
    0.7
    """
    location = os.fspath(url)
    storage = _storage(location, create=create, readonly=readonly)
    try:
        stored = storage.read_settings()
        if stored is None:
            if not create:
                raise IndexNotFoundError(location)
            config = DedupConfig.create(**_given(settings, CREATE_SETTINGS))
            return LSHIndex(storage, config, keep_shingles=keep_shingles, containment=containment)
        merged = None if not settings else merged_config(IndexSettings.from_dict(stored), settings)
        return LSHIndex(storage, merged, keep_shingles=keep_shingles, containment=containment)
    except BaseException:
        storage.close()
        raise


def build_index(
    url: str | os.PathLike[str],
    config: DedupConfig,
    *,
    keep_shingles: bool = False,
    containment: bool = False,
    replace: bool = False,
) -> LSHIndex:
    """A new, empty index at ``url`` with ``config``'s settings.

    An index there that holds documents is an :class:`IndexExistsError` unless ``replace``,
    which removes them and their settings first (not atomically: an interrupted replace leaves
    a partly emptied index). An existing empty index takes the new settings.
    """
    location = os.fspath(url)
    storage = _storage(location, create=True)
    try:
        if storage.read_settings() is not None:
            count = storage.count()
            if count and not replace:
                raise IndexExistsError(location, count)
            if count:
                storage.remove(list(storage.keys()))
        settings = IndexSettings.from_config(config, keep_shingles=keep_shingles, containment=containment)
        storage.write_settings(settings.to_dict())
        return LSHIndex(storage)
    except BaseException:
        storage.close()
        raise
