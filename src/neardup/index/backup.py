"""Copying an index whole: a backup to an SQLite file or another Redis location, and its restore.

:func:`backup_index` and :func:`restore_index` are one copy between any two backends (memory://
excepted: it holds nothing another process could copy, and keeps nothing). The copy is the source
as it was at one instant, while other processes go on reading and writing it:

- SQLite to an SQLite file: SQLite's online backup API, stepped inside one read transaction
  (:meth:`~neardup.index.sqlite.SQLiteStorage.backup_to`): the pages of one snapshot, WAL
  content included; commits made meanwhile neither enter the copy nor restart it.
- anything else: the documents through the :class:`~neardup.index.base.Storage` protocol,
  ``_BATCH`` keys at a time in insertion order, between two readings of the source's
  :meth:`~neardup.index.base.Storage.epoch` (``P:epoch`` for Redis, ``PRAGMA data_version`` for
  SQLite). Equal readings prove that no write came while the copy read, so it equals the index
  at any instant between them; otherwise the copy is thrown away and made again, at most
  ``_ATTEMPTS`` times, then :class:`StorageError` says that writes kept coming.

The copy stores the source's settings as they are, and each document's key, signature, shingle
count and (when the index keeps them) shingles; its documents' ``inserted_at`` is the copy's time.
Its band keys are computed again from the signatures with the settings' bands and rows (and, in
a containment index, its layouts from the stored distinct shingle counts), as
:class:`~neardup.index.lsh_index.LSHIndex` computes them, and a document enters the band tables
unless its signature is empty, as ``insert_signatures`` decides: both follow from what is copied,
so the protocol needs no reader of band tables, and a backend's own layout of them (SQLite rows,
Redis shards) never crosses to another.

A copy appears at DEST only complete. A file is written beside DEST (``.NAME.TOKEN.partial``) and
renamed onto it at the end; a Redis index is written under a prefix of its own in DEST's database
(``PREFIX.partial-TOKEN``) and moved onto DEST's prefix in one script
(:meth:`~neardup.index.redis.RedisStorage.move_to`), which a service reading DEST sees as one
change. A failure removes the partial copy and leaves DEST as it was (a ``kill -9`` can leave the
partial file or prefix, never a half-written DEST). A DEST that holds documents is refused unless
``replace``; an SQLite DEST that another process has open is refused always, as renaming a file
under an open connection loses that connection's writes and can corrupt the new file.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from neardup.core.containment import filed_keys
from neardup.core.lsh import band_keys
from neardup.core.minhash import EMPTY_VALUE
from neardup.errors import ConfigError, StorageError
from neardup.index.base import Storage
from neardup.index.lsh_index import LSHIndex
from neardup.index.memory import MemoryStorage
from neardup.index.opening import IndexExistsError, IndexNotFoundError, _local_file
from neardup.index.redis import RedisStorage
from neardup.index.settings import IndexSettings
from neardup.index.sqlite import SQLiteStorage
from neardup.index.url import open_storage
from neardup.redaction import redact_url

__all__ = ["BackupNotFoundError", "Progress", "backup_index", "restore_index"]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stage ``"pages"`` (an SQLite backup) or ``"documents"``."""

_BATCH = 50_000  # documents per read and insert: into Redis 1.3-1.8x the rate of 10,000 (RESULTS.md §8)
_ATTEMPTS = 5  # copies made before writes that keep coming are an error

_T = TypeVar("_T", bound=Storage)


class BackupNotFoundError(IndexNotFoundError):
    """No index at the location a restore reads."""

    def __init__(self, url: str) -> None:
        self.url = url
        StorageError.__init__(self, f"no backup at {redact_url(url)}")


def backup_index(
    src_url: str | os.PathLike[str],
    dest_url: str | os.PathLike[str],
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Copy the index at ``src_url`` to ``dest_url`` (an SQLite file or a Redis location) as it
    was at one instant, while it stays in use; return the figures.

    The figures: ``documents`` copied, ``source`` and ``destination`` (URLs, passwords hidden)
    with their ``*_backend``, ``method`` (``"sqlite backup"`` or ``"copy"``), ``attempts``,
    ``replaced`` (documents DEST held before), ``seconds`` and ``size_bytes`` (of the copy, None
    when unknown).

    A missing source is :class:`IndexNotFoundError`; a DEST that holds documents is
    :class:`IndexExistsError` unless ``replace``; DEST the source itself, or memory://, is
    :class:`ConfigError`. Other failures are :class:`StorageError`, and leave DEST as it was.
    """
    return _copy(os.fspath(src_url), os.fspath(dest_url), replace=replace, progress=progress, restore=False)


def restore_index(
    backup_url: str | os.PathLike[str],
    dest_url: str | os.PathLike[str],
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Copy the backup at ``backup_url`` (usually an SQLite file) to ``dest_url``, as
    :func:`backup_index` does, with the same figures and errors; a missing backup is
    :class:`BackupNotFoundError`."""
    return _copy(os.fspath(backup_url), os.fspath(dest_url), replace=replace, progress=progress, restore=True)


def _copy(
    src_url: str, dest_url: str, *, replace: bool, progress: Progress | None, restore: bool
) -> dict[str, Any]:
    started = time.perf_counter()
    source, stored = _open_source(src_url, restore=restore)
    try:
        replaced = _check_destination(dest_url, source, replace=replace)
        local = _local_file(dest_url)
        if local is not None:
            documents, attempts, method = _to_file(source, stored, local, replace=replace, progress=progress)
            dest_shown, size = "sqlite://" + os.path.abspath(local), os.path.getsize(local)
        else:
            documents, attempts, dest_shown = _to_redis(
                source, stored, dest_url, replace=replace, progress=progress
            )
            method, size = "copy", None
        source_shown = source.url
    finally:
        source.close()
    return {
        "documents": documents,
        "source": source_shown,
        "source_backend": source_shown.partition("://")[0],
        "destination": dest_shown,
        "destination_backend": dest_shown.partition("://")[0],
        "method": method,
        "attempts": attempts,
        "replaced": replaced,
        "seconds": round(time.perf_counter() - started, 3),
        "size_bytes": size,
    }


# -- the two ends ----------------------------------------------------------------------------------


def _open_source(url: str, *, restore: bool) -> tuple[Storage, dict[str, Any]]:
    """The source's storage and its stored settings."""
    missing = BackupNotFoundError(url) if restore else IndexNotFoundError(url)
    local = _local_file(url)
    if local is not None and not local.is_file():  # opening would create it
        raise missing
    storage = open_storage(url, readonly=True)  # a copy only reads its source
    try:
        if isinstance(storage, MemoryStorage):
            raise ConfigError("memory:// holds nothing to copy: give an SQLite file or a Redis location")
        stored = storage.read_settings()
        if stored is None:
            raise missing
    except BaseException:
        storage.close()
        raise
    return storage, stored


def _check_destination(url: str, source: Storage, *, replace: bool) -> int:
    """How many documents DEST holds (0 if none, or no DEST yet); refuse one that holds some
    unless ``replace``, the source itself, memory://, and an SQLite file in use."""
    local = _local_file(url)
    if local is not None:
        if not local.parent.is_dir():
            raise StorageError(f"{url}: the folder {local.parent} does not exist")
        if isinstance(source, SQLiteStorage) and local.exists() and os.path.samefile(local, source.path):
            raise ConfigError(f"{redact_url(url)} is the index being copied; give another destination")
        if not local.exists():
            _check_no_wal(local)
            return 0
    dest = open_storage(url)
    try:
        if isinstance(dest, MemoryStorage):
            raise ConfigError(
                "a copy to memory:// would be lost at once: give an SQLite file or a Redis location"
            )
        if (
            isinstance(dest, RedisStorage)
            and isinstance(source, RedisStorage)
            and (dest.database, dest.prefix) == (source.database, source.prefix)
        ):
            raise ConfigError(f"{dest.url} is the index being copied; give another database or prefix")
        count = dest.count() if dest.read_settings() is not None else 0
        if count and not replace:
            raise IndexExistsError(url, count)
    except BaseException:
        dest.close()
        raise
    dest.close()
    if isinstance(dest, SQLiteStorage) and Path(dest.path + "-wal").exists():
        # the last connection to close deletes the -wal file: another is open (checked for
        # certain, and without changing the file, before the rename)
        raise StorageError(f"{dest.path} is open in another process; stop it before replacing the index")
    return count


def _check_no_wal(path: Path) -> None:
    """Refuse a ``-wal`` file without its database: SQLite would apply its pages to a new file."""
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        raise StorageError(f"{wal} is left from an earlier database of that name; remove it first")


def _to_file(
    source: Storage, stored: dict[str, Any], dest: Path, *, replace: bool, progress: Progress | None
) -> tuple[int, int, str]:
    """Copy into a file beside ``dest``, then rename it onto ``dest``: (documents, attempts, method)."""
    partial = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.partial")
    try:
        if isinstance(source, SQLiteStorage):
            documents, attempts, method = _backup_file(source, partial, progress), 1, "sqlite backup"
        else:

            def start() -> SQLiteStorage:
                _remove_file(partial)
                return SQLiteStorage(partial)

            def discard(target: SQLiteStorage) -> None:
                target.close()
                _remove_file(partial)

            target, documents, attempts = _consistent_copy(source, stored, start, discard, progress)
            target.close()
            method = "copy"
        _install(partial, dest, replace=replace)
    except BaseException:
        _remove_file(partial)
        raise
    return documents, attempts, method


def _backup_file(source: SQLiteStorage, partial: Path, progress: Progress | None) -> int:
    """SQLite's backup of ``source`` into ``partial``, checked to open as the same index."""

    def pages(done: int, total: int) -> None:
        if progress is not None:
            progress("pages", done, total)

    documents = source.backup_to(partial, progress=pages)
    copy = SQLiteStorage(partial)  # puts the copy back in WAL mode as it opens
    try:
        found = copy.count()
    finally:
        copy.close()
    if found != documents:
        raise StorageError(f"{partial}: the backup holds {found:,} documents, not {documents:,}")
    return documents


def _install(partial: Path, dest: Path, *, replace: bool) -> None:
    """Rename the finished copy onto ``dest``, durably, after checking ``dest`` again."""
    with open(partial, "rb+") as f:
        os.fsync(f.fileno())
    if dest.exists():
        held = SQLiteStorage(dest)  # a process may have opened or filled it meanwhile
        try:
            count = held.count() if held.read_settings() is not None else 0
            if count and not replace:
                raise IndexExistsError(os.fspath(dest), count)
        except BaseException:
            held.close()
            raise
        held.close_for_replacement()
        shutil.copymode(dest, partial)
    else:
        _check_no_wal(dest)
    os.replace(partial, dest)
    folder = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _remove_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _to_redis(
    source: Storage, stored: dict[str, Any], dest_url: str, *, replace: bool, progress: Progress | None
) -> tuple[int, int, str]:
    """Copy under a prefix of its own in DEST's database, then move it onto DEST's prefix:
    (documents, attempts, DEST's URL)."""
    dest = open_storage(dest_url)
    try:
        if not isinstance(dest, RedisStorage):
            raise StorageError(f"{dest_url}: an index can be copied to an SQLite file or to Redis only")
        partial = f"{dest.prefix.rstrip(':')}.partial-{secrets.token_hex(4)}"

        def discard(target: RedisStorage) -> None:
            try:
                target.drop()
            finally:
                target.close()

        target, documents, attempts = _consistent_copy(
            source, stored, lambda: dest.sibling(partial), discard, progress
        )
        try:
            held = target.move_to(dest, replace=replace)  # refuses, in the same step, a DEST filled meanwhile
            if held:
                raise IndexExistsError(dest_url, held)
        finally:
            discard(target)  # empty after a move: the drop deletes nothing
        return documents, attempts, dest.url
    finally:
        dest.close()


# -- the copy --------------------------------------------------------------------------------------


def _consistent_copy(
    source: Storage,
    stored: dict[str, Any],
    start: Callable[[], _T],
    discard: Callable[[_T], None],
    progress: Progress | None,
) -> tuple[_T, int, int]:
    """Copy ``source`` into a new target from ``start()`` until no write came while it read:
    return the target, the documents copied and the attempts made. A target not returned is
    ``discard``-ed."""
    settings = LSHIndex(source).settings  # refuses an index this neardup cannot compute band keys for
    for attempt in range(1, _ATTEMPTS + 1):
        target = start()
        try:
            target.write_settings(stored)
            before = source.epoch()
            try:
                documents = _copy_documents(source, target, settings, progress)
            except KeyError:  # a listed document was removed before its batch was read
                unchanged = False
            else:
                unchanged = source.epoch() == before
        except BaseException:
            discard(target)
            raise
        if unchanged:
            return target, documents, attempt
        discard(target)
    raise StorageError(
        f"{source.url}: writes kept coming: each of {_ATTEMPTS} copies saw the index change while "
        "reading it; copy it when writes pause"
    )


def _copy_documents(
    source: Storage, target: Storage, settings: IndexSettings, progress: Progress | None
) -> int:
    """Every document of ``source``, in insertion order, ``_BATCH`` at a time; how many."""
    total = source.count()
    done = 0
    if progress is not None:
        progress("documents", 0, total)
    listed = source.keys()
    while keys := list(itertools.islice(listed, _BATCH)):
        sigs = source.get_signatures(keys)
        shingles = source.get_shingles(keys) if settings.keep_shingles else None
        bands = band_keys(sigs, settings.bands, settings.rows)
        eligible = ~np.all(sigs == EMPTY_VALUE, axis=1)
        counts = [None if info is None else info.shingles for info in source.info(keys)]
        known = None if None in counts else np.array(counts, dtype=np.int64)
        if settings.containment:  # the containment layouts, from the stored distinct counts
            sizes = np.array([c or 0 for c in counts], dtype=np.int64)
            bands = np.concatenate([bands, filed_keys(sigs, sizes, eligible)], axis=1)
        _insert(target, keys, sigs, bands, shingles, eligible, known)
        done += len(keys)
        if progress is not None:
            progress("documents", done, max(total, done))
    return done


def _insert(
    target: Storage,
    keys: list[str],
    sigs: np.ndarray,
    bands: np.ndarray,
    shingles: Sequence[np.ndarray | None] | None,
    eligible: np.ndarray,
    counts: np.ndarray | None,
) -> None:
    """One insert, or one per run of documents with and without shingles (a storage may hold
    both), in order; ``counts``, the shingle counts, where every one of the batch is known."""
    if shingles is None or all(s is not None for s in shingles):
        some = cast("Sequence[np.ndarray] | None", shingles)
        target.insert(keys, sigs, bands, some, eligible=eligible, shingle_counts=counts)
        return
    kept = np.array([s is not None for s in shingles])
    edges = [0, *(np.flatnonzero(np.diff(kept)) + 1).tolist(), len(keys)]
    for lo, hi in itertools.pairwise(edges):
        run = cast("Sequence[np.ndarray]", shingles[lo:hi]) if kept[lo] else None
        part = None if counts is None else counts[lo:hi]
        target.insert(
            keys[lo:hi], sigs[lo:hi], bands[lo:hi], run, eligible=eligible[lo:hi], shingle_counts=part
        )
