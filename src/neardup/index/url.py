"""Choosing a backend from a URL or a path."""

from __future__ import annotations

import os

from neardup.errors import StorageError
from neardup.index.base import Storage
from neardup.index.memory import MemoryStorage
from neardup.index.redis import RedisStorage
from neardup.index.sqlite import SQLiteStorage
from neardup.redaction import redact_url

URL_FORMS = (
    "memory://, sqlite:///abs/path.db, sqlite://relative.db, a bare path, "
    "or redis://host:port/db[?prefix=name] (also rediss://, unix://)"
)


def open_storage(url_or_path: str | os.PathLike[str], *, readonly: bool = False) -> Storage:
    """The storage a URL or path names.

    ``memory://`` is a new in-memory store; ``sqlite://`` followed by a path (``sqlite:///abs/x.db``
    or ``sqlite://x.db``) and a bare path (``idx.db``) are an SQLite file, created if missing;
    ``redis://host:port/db``, ``rediss://...`` and ``unix:///path.sock`` are a Redis database, with
    an optional ``?prefix=name`` for the keys (default ``neardup``; see :mod:`neardup.index.redis`).
    ``readonly`` opens an SQLite file for reading only (see :class:`SQLiteStorage`).
    """
    target = os.fspath(url_or_path)
    scheme, sep, rest = target.partition("://")
    if not sep:
        if not target:
            raise StorageError(f"an index location is required: {URL_FORMS}")
        return SQLiteStorage(os.path.expanduser(target), readonly=readonly)
    scheme = scheme.lower()
    if scheme == "memory":
        if rest:
            raise StorageError(f"memory:// takes no path, got {redact_url(target)!r}")
        return MemoryStorage()
    if scheme == "sqlite":
        if not rest:
            raise StorageError(f"{target!r} names no file; use sqlite:///abs/path.db or sqlite://relative.db")
        return SQLiteStorage(os.path.expanduser(rest), readonly=readonly)
    if scheme in ("redis", "rediss", "unix"):
        return RedisStorage(f"{scheme}://{rest}")
    raise StorageError(f"unknown index URL scheme {scheme!r} in {redact_url(target)!r}; use {URL_FORMS}")
