"""The SQLite backend: one file, no server, the embedded default.

Layout (``sqlite_schema`` 2 in the ``meta`` table)::

    meta(key TEXT PRIMARY KEY, value TEXT)      'sqlite_schema' -> '2', 'settings' -> JSON
    docs(id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL,
         signature BLOB NOT NULL,               uint32 little-endian, num_perm values
         buckets BLOB,                          int64 little-endian, one per band; NULL if empty doc
         shingles BLOB,                         sorted unique uint64 little-endian; NULL if not kept
         inserted_at REAL,                      Unix time of the insert; NULL if before layout 2
         shingle_count INTEGER)                 see DocumentInfo.shingles; NULL if unknown
    bands(bucket INTEGER, doc INTEGER, PRIMARY KEY (bucket, doc)) WITHOUT ROWID

Layout 1 lacked the last two columns of ``docs``. Opening a layout 1 file adds them (NULL in the old
rows) and records layout 2, in one transaction; a file this process cannot write (read-only
permissions) opens without that step, reads as before, and reports the info of its documents as
unknown (:class:`~neardup.index.base.DocumentInfo` with None). neardup releases before layout 2
refuse a layout 2 file.

``bucket`` follows :func:`~neardup.index.base.bucket_ids`. ``bands`` is one clustered B-tree, so a
lookup by bucket is a range scan and an insert touches one tree; a document's own bucket list in
``docs.buckets`` lets removal delete its band rows by primary key, with no second index on ``doc``.

The database runs in WAL mode with ``synchronous=NORMAL``: readers in other processes read a
consistent snapshot while one writer writes, and every batch is one transaction, so a crash or a
``kill -9`` leaves whole batches only.

:meth:`SQLiteStorage.backup_to` copies the file with SQLite's online backup API, inside one read
transaction: a consistent snapshot, while other processes keep reading and writing.

:meth:`SQLiteStorage.exclusive` holds ``fcntl.flock`` on ``<file>.lock`` next to the database
(created when first needed) and a lock of its own for this process's threads. It excludes the
holders on one machine, and over a network file system only as far as that system's locks are
honoured: the reach SQLite's own locking has. The kernel drops the lock of a process that dies, so
a killed holder never blocks the others.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from neardup.core.sorting import sorted_unique
from neardup.errors import IndexSettingsError, StorageError
from neardup.index.base import (
    Candidates,
    DocumentInfo,
    ExclusiveSection,
    bucket_ids,
    check_batch,
    check_counts,
    lookup_mask,
    settings_diff,
)

SCHEMA_VERSION = 2
_READABLE_SCHEMAS = ("1", "2")  # layout 1 is migrated to 2 on open
_LOCK_POLL_S = 0.005  # the longest sleep between two tries of a held lock file
_NO_ACCESS = (errno.EACCES, errno.EPERM, errno.EROFS)
_CHUNK = 500  # parameters per IN (...) list, well under SQLite's limit
_LOOKUP_CHUNK = 4000  # buckets per lookup statement: one statement (no transaction) for a
# containment query's few hundred probes
_MAX_PARAMS = 32766  # parameters per multi-row INSERT: SQLite's default limit since 3.32
_CACHE_KIB = 131072  # page cache per connection: band-table inserts touch pages all over the B-tree
_MMAP_BYTES = 1 << 30  # reads map the file instead of copying pages in: faster random lookups
_BUSY_TIMEOUT_S = 30.0
_BACKUP_PAGES = 1024  # pages per backup step (4 MiB at the default page size): progress between steps

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY,
    key TEXT UNIQUE NOT NULL,
    signature BLOB NOT NULL,
    buckets BLOB,
    shingles BLOB,
    inserted_at REAL,
    shingle_count INTEGER
);
CREATE TABLE IF NOT EXISTS bands (
    bucket INTEGER NOT NULL,
    doc INTEGER NOT NULL,
    PRIMARY KEY (bucket, doc)
) WITHOUT ROWID;
"""


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for lo in range(0, len(items), size):
        yield items[lo : lo + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _insert_rows(conn: sqlite3.Connection, head: str, columns: int, values: list[Any]) -> None:
    """``head VALUES (?,..),(?,..),...`` over ``values`` (row-major, ``columns`` per row).

    One statement binds thousands of rows: several times faster than ``executemany``, whose
    per-row cost dominates band-table inserts (a document has one row per band).
    """
    limit = min(_MAX_PARAMS, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    per_statement = max(1, limit // columns)
    row = "(" + _marks(columns) + ")"
    full = f"{head} VALUES {','.join([row] * per_statement)}"
    step = per_statement * columns
    for lo in range(0, len(values), step):
        part = values[lo : lo + step]
        sql = full if len(part) == step else f"{head} VALUES {','.join([row] * (len(part) // columns))}"
        conn.execute(sql, part)


def _bucket_order(buckets: np.ndarray) -> np.ndarray:
    """Positions that put ``buckets`` (int64) in ascending order by their top 40 bits.

    A plain sort of ``(bucket >> 24 << 24) | position`` is several times faster than an argsort;
    the order is exact except among buckets sharing their top 40 bits, which is all a B-tree
    insert needs. Batches of more than 2**24 rows fall back to an argsort.
    """
    n = buckets.size
    if n >= 1 << 24:
        order: np.ndarray = np.argsort(buckets)
        return order
    packed = (buckets >> 24 << 24) | np.arange(n, dtype=np.int64)
    packed.sort()
    order = packed & 0xFFFFFF
    return order


def _open_lock_file(path: str) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except PermissionError:
        if not os.path.exists(path):
            raise
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # flock needs no write access to one that exists


class SQLiteStorage:
    """An index in one SQLite file at ``path`` (created if missing).

    ``readonly=True`` opens an existing file for reading only: nothing is written to it (no
    layout, no journal mode, no upgrade), a file that is not an index (an empty one too) is
    refused, and on read-only media it opens with SQLite's ``mode=ro`` (or ``immutable=1``,
    where not even the WAL's shared memory can be made), where every write raises
    :class:`StorageError`.
    """

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.readonly = readonly
        self._seen_settings = False  # a storage that saw no settings creates them, never overwrites
        self._writes = 0  # write transactions this connection committed: PRAGMA data_version omits them
        self._schema = SCHEMA_VERSION  # 1: a layout 1 file this process could not migrate
        self._lock_fd = -1
        self._section = ExclusiveSection(self.path, self._lock_file, self._unlock_file)
        try:
            if readonly:
                self._conn = self._connect_readonly()
            else:
                self._conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: cannot open the index: {exc}") from exc
        try:
            with self._errors("opening the index"):
                if not readonly:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
                self._conn.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
                self._init_schema()
        except BaseException:
            self._conn.close()
            raise

    # -- plumbing ------------------------------------------------------------------------------

    def _connect_readonly(self) -> sqlite3.Connection:
        """A connection for reading only: a plain one (it writes nothing unless asked, and the
        last one to close removes the WAL's files), or where that cannot open the file (read-only
        media: no WAL shared memory can be made), ``mode=ro``, then ``immutable=1`` (where no
        other process can write either)."""
        if not os.path.isfile(self.path):
            raise StorageError(f"{self.path}: no index file there")
        uri = "file:" + urllib.parse.quote(self.path)
        failure = sqlite3.OperationalError("unable to open database file")
        for query in ("", "?mode=ro", "?mode=ro&immutable=1"):
            conn = sqlite3.connect(uri + query, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            try:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                failure = exc
        raise failure

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Translate sqlite3 errors into StorageError naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: {action} failed: {exc}") from exc

    @contextmanager
    def _transaction(self, action: str, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: committed if the block ends, rolled back if it raises."""
        with self._errors(action):
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self._conn
            except BaseException:
                self._conn.rollback()
                raise
            self._conn.execute("COMMIT")
            if write:
                self._writes += 1

    def _init_schema(self) -> None:
        conn = self._conn
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and self.readonly:
            raise StorageError(
                f"{self.path} is not a neardup index (it holds no tables); a command that only "
                "reads never makes one: build it with neardup index build"
            )
        if tables and "meta" not in tables:
            raise StorageError(
                f"{self.path} is an SQLite database but not a neardup index; choose another file"
            )
        if "meta" in tables:
            found = self._stored_schema()
            if found not in _READABLE_SCHEMAS:
                raise StorageError(
                    f"{self.path}: index file layout {found!r} is not readable by this neardup "
                    f"(it reads layouts {' and '.join(_READABLE_SCHEMAS)}); rebuild the index or "
                    "upgrade neardup"
                )
            if found != str(SCHEMA_VERSION):
                self._schema = int(found)
                if not self.readonly:
                    self._migrate(readonly_ok=True)
            return
        with self._transaction("creating the index"):
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('sqlite_schema', ?)", (str(SCHEMA_VERSION),)
            )

    def _stored_schema(self) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key='sqlite_schema'").fetchone()
        return None if row is None else str(row[0])

    def _migrate(self, *, readonly_ok: bool = False) -> None:
        """Bring a layout 1 file to layout 2, once for all processes (the first to take the write
        lock does it). A file this process may not write stays layout 1 if ``readonly_ok``."""
        try:
            with self._transaction("upgrading the file to layout 2") as conn:
                if self._stored_schema() == "1":
                    conn.execute("ALTER TABLE docs ADD COLUMN inserted_at REAL")
                    conn.execute("ALTER TABLE docs ADD COLUMN shingle_count INTEGER")
                    conn.execute("UPDATE meta SET value = '2' WHERE key = 'sqlite_schema'")
        except StorageError as exc:
            cause = exc.__cause__
            name = getattr(cause, "sqlite_errorname", "")
            if readonly_ok and isinstance(name, str) and name.startswith("SQLITE_READONLY"):
                return
            raise
        self._schema = SCHEMA_VERSION

    def _lookup(self, keys: Sequence[str]) -> dict[str, tuple[int, bytes | None]]:
        """``key -> (id, buckets blob)`` of the stored ones among ``keys``."""
        found: dict[str, tuple[int, bytes | None]] = {}
        for part in _chunks(keys):
            sql = f"SELECT key, id, buckets FROM docs WHERE key IN ({_marks(len(part))})"
            for key, doc_id, buckets in self._conn.execute(sql, list(part)):
                found[key] = (doc_id, buckets)
        return found

    def _delete(self, docs: Iterable[tuple[int, bytes | None]]) -> None:
        """Delete documents and their band rows (inside a transaction)."""
        ids: list[int] = []
        band_rows: list[tuple[int, int]] = []
        for doc_id, blob in docs:
            ids.append(doc_id)
            if blob is not None:
                band_rows.extend((b, doc_id) for b in np.frombuffer(blob, dtype="<i8").tolist())
        self._conn.executemany("DELETE FROM bands WHERE bucket = ? AND doc = ?", band_rows)
        for part in _chunks(ids):
            self._conn.execute(f"DELETE FROM docs WHERE id IN ({_marks(len(part))})", list(part))

    # -- the Storage interface -----------------------------------------------------------------

    @property
    def url(self) -> str:
        return "sqlite://" + self.path

    def read_settings(self) -> dict[str, Any] | None:
        with self._errors("reading the settings"):
            row = self._conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
        self._seen_settings = row is not None
        return None if row is None else self._parse_settings(row[0])

    def _parse_settings(self, text: str) -> dict[str, Any]:
        try:
            settings = json.loads(text)
        except ValueError as exc:
            raise StorageError(f"{self.path}: the stored settings are not valid JSON: {exc}") from exc
        if not isinstance(settings, dict):
            raise StorageError(f"{self.path}: the stored settings are not a JSON object")
        return settings

    def write_settings(self, settings: dict[str, Any]) -> None:
        """Create the settings, or replace those this storage has read.

        A storage that last saw no settings is creating the index; if another process created it
        first with other settings, this raises :class:`IndexSettingsError` instead of overwriting.
        """
        text = json.dumps(settings, sort_keys=True)
        with self._transaction("writing the settings") as conn:
            if self._seen_settings:
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('settings', ?)", (text,))
                stored_text = text
            else:
                conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('settings', ?)", (text,))
                stored_text = conn.execute("SELECT value FROM meta WHERE key='settings'").fetchone()[0]
        self._seen_settings = True
        stored = self._parse_settings(stored_text)
        if stored != json.loads(text):
            raise IndexSettingsError(
                f"{self.path}: another process created this index at the same time with other "
                f"settings: {settings_diff(stored, settings)}; open it again to use the stored settings"
            )

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
        n = len(keys)
        counts = [None if c < 0 else c for c in check_counts(shingle_counts, n).tolist()]
        if n == 0:
            return
        if self._schema != SCHEMA_VERSION:
            self._migrate()  # a file opened read-only may be writable now; if not, this says so
        # rows are built before the transaction, so the write lock is held only for SQLite's work
        sig_raw = np.ascontiguousarray(signatures, dtype="<u4").tobytes()
        sig_width = len(sig_raw) // n
        buckets = bucket_ids(band_keys).astype("<i8", copy=False)
        bucket_raw = np.ascontiguousarray(buckets).tobytes()
        bucket_width = len(bucket_raw) // n
        shingle_blobs: list[bytes | None] = (
            [None] * n
            if shingles is None
            else [np.ascontiguousarray(s, dtype="<u8").tobytes() for s in shingles]
        )
        mask_list = mask.tolist()
        now = time.time()

        with self._transaction("inserting documents") as conn:
            existing = self._lookup(keys)
            if existing:
                self._delete(existing.values())
            base = conn.execute("SELECT COALESCE(MAX(id), 0) FROM docs").fetchone()[0]
            ids = np.arange(base + 1, base + 1 + n, dtype=np.int64)
            doc_rows: list[Any] = []
            for i, (doc_id, key) in enumerate(zip(ids.tolist(), keys, strict=True)):
                doc_rows += (
                    doc_id,
                    key,
                    sig_raw[i * sig_width : (i + 1) * sig_width],
                    bucket_raw[i * bucket_width : (i + 1) * bucket_width] if mask_list[i] else None,
                    shingle_blobs[i],
                    now,
                    counts[i],
                )
            _insert_rows(
                conn,
                "INSERT INTO docs (id, key, signature, buckets, shingles, inserted_at, shingle_count)",
                7,
                doc_rows,
            )
            flat_buckets = buckets[mask].ravel()
            order = _bucket_order(flat_buckets)  # B-tree order: fewer pages touched per insert
            band_rows = np.empty((order.size, 2), dtype=np.int64)
            band_rows[:, 0] = flat_buckets[order]
            band_rows[:, 1] = np.repeat(ids[mask], buckets.shape[1])[order]
            # OR IGNORE: two bands of one document landing in one bucket (odds 2**-64) is harmless
            _insert_rows(conn, "INSERT OR IGNORE INTO bands (bucket, doc)", 2, band_rows.ravel().tolist())

    def lookup(
        self, band_keys: np.ndarray, *, shingles: bool = False, mask: np.ndarray | None = None
    ) -> Candidates:
        buckets = bucket_ids(band_keys)
        wanted = lookup_mask(buckets, mask)
        unique = sorted_unique(buckets[wanted]).tolist()
        hits: dict[int, list[str]] = {}
        signature_of: dict[str, bytes] = {}
        shingles_of: dict[str, bytes | None] = {}
        columns = "b.bucket, d.key, d.signature" + (", d.shingles" if shingles else "")
        limit = self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        parts = list(_chunks(unique, min(_LOOKUP_CHUNK, limit)))
        # one statement reads one snapshot by itself; several need a read transaction around them
        # (a BEGIN and COMMIT cost as much as the lookup of a single text)
        snapshot = (
            self._transaction("looking up candidates", write=False) if len(parts) > 1 else self._plain()
        )
        with snapshot as conn:
            for part in parts:
                sql = (
                    f"SELECT {columns} FROM bands AS b JOIN docs AS d ON d.id = b.doc "
                    f"WHERE b.bucket IN ({_marks(len(part))})"
                )
                for row in conn.execute(sql, list(part)):
                    bucket, key, signature = row[0], row[1], row[2]
                    hits.setdefault(bucket, []).append(key)
                    signature_of[key] = signature
                    if shingles:
                        shingles_of[key] = row[3]
        per_row: list[set[str]] = [set() for _ in range(buckets.shape[0])]
        cell_rows = np.repeat(np.arange(buckets.shape[0]), wanted.sum(axis=1)).tolist()
        for row, bucket in zip(cell_rows, buckets[wanted].tolist(), strict=True):
            found = hits.get(bucket)
            if found:
                per_row[row].update(found)
        return Candidates.from_rows(
            per_row,
            lambda keys: self._signatures([signature_of[k] for k in keys]),
            (lambda keys: self._shingles([shingles_of[k] for k in keys])) if shingles else None,
        )

    @contextmanager
    def _plain(self) -> Iterator[sqlite3.Connection]:
        """The connection, for one statement outside a transaction (errors as StorageError)."""
        with self._errors("looking up candidates"):
            yield self._conn

    def _read_blobs(self, keys: Sequence[str], column: str) -> list[bytes | None]:
        """``column`` of each of ``keys``, in order (inside a transaction or not)."""
        found: dict[str, bytes | None] = {}
        for part in _chunks(keys):
            sql = f"SELECT key, {column} FROM docs WHERE key IN ({_marks(len(part))})"
            found.update(self._conn.execute(sql, list(part)))
        try:
            return [found[k] for k in keys]
        except KeyError as exc:
            raise KeyError(f"no document with key {exc.args[0]!r} in {self.path}") from None

    @staticmethod
    def _signatures(blobs: list[bytes | None]) -> np.ndarray:
        flat = np.frombuffer(b"".join(b or b"" for b in blobs), dtype="<u4")
        return flat.reshape(len(blobs), -1).astype(np.uint32)

    @staticmethod
    def _shingles(blobs: list[bytes | None]) -> list[np.ndarray | None]:
        return [None if b is None else np.frombuffer(b, dtype="<u8").astype(np.uint64) for b in blobs]

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        if not keys:
            return np.empty((0, 0), dtype=np.uint32)
        with self._transaction("reading signatures", write=False):
            return self._signatures(self._read_blobs(keys, "signature"))

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        with self._transaction("reading shingles", write=False):
            return self._shingles(self._read_blobs(keys, "shingles"))

    def info(self, keys: Sequence[str]) -> list[DocumentInfo | None]:
        found: dict[str, DocumentInfo] = {}
        with self._transaction("reading document info", write=False) as conn:
            if self._schema < SCHEMA_VERSION and self._stored_schema() == str(SCHEMA_VERSION):
                self._schema = SCHEMA_VERSION  # another process upgraded the file meanwhile
            columns = "inserted_at, shingle_count" if self._schema >= 2 else "NULL, NULL"
            for part in _chunks(list(dict.fromkeys(keys))):
                sql = f"SELECT key, {columns} FROM docs WHERE key IN ({_marks(len(part))})"
                for key, inserted_at, shingle_count in conn.execute(sql, list(part)):
                    found[key] = DocumentInfo(key, inserted_at, shingle_count)
        return [found.get(k) for k in keys]

    def remove(self, keys: Sequence[str]) -> int:
        with self._transaction("removing documents"):
            existing = self._lookup(list(dict.fromkeys(keys)))
            self._delete(existing.values())
        return len(existing)

    def contains(self, key: str) -> bool:
        with self._errors("looking up a key"):
            return self._conn.execute("SELECT 1 FROM docs WHERE key = ?", (key,)).fetchone() is not None

    def count(self) -> int:
        with self._errors("counting documents"):
            return int(self._conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def keys(self) -> Iterator[str]:
        last = 0
        while True:  # pages by id, so no read transaction stays open between pages
            with self._errors("listing keys"):
                rows = self._conn.execute(
                    "SELECT id, key FROM docs WHERE id > ? ORDER BY id LIMIT 1000", (last,)
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            for _, key in rows:
                yield key

    def epoch(self) -> int:
        """``PRAGMA data_version`` (raised by every commit of another connection) plus this
        connection's own commits."""
        with self._errors("reading the write count"):
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0]) + self._writes

    def size_bytes(self) -> int | None:
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    # -- whole files ---------------------------------------------------------------------------

    def backup_to(
        self, path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Copy the index into the new, empty SQLite file ``path`` with SQLite's online backup API,
        ``_BACKUP_PAGES`` pages a step, and return how many documents the copy holds.

        The steps run inside one read transaction, so the copy is the index as it was when the
        transaction began (WAL content included) while other processes go on reading and writing.
        Outside one, a step after another connection's commit starts the copy over, and under
        steady writes it never ends. ``progress(pages copied, pages in all)`` follows each step.
        """
        target_path = os.fspath(path)
        action = f"backing up the index to {target_path}"
        with self._errors(action):
            target = sqlite3.connect(target_path, isolation_level=None)
        try:
            with self._transaction(action, write=False) as conn:
                documents = int(conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0])  # the snapshot
                step = None
                if progress is not None:
                    report = progress

                    def step(status: int, remaining: int, total: int) -> None:
                        report(total - remaining, total)

                conn.backup(target, pages=_BACKUP_PAGES, progress=step)
        finally:
            target.close()
        return documents

    def close_for_replacement(self) -> None:
        """Close the file for another to be renamed onto it: switch it out of WAL mode, which
        needs every other connection closed and leaves no ``-wal`` file (whose pages SQLite would
        otherwise apply to the new file). :class:`StorageError` if another connection has it open.
        """
        try:
            self._conn.execute("PRAGMA busy_timeout=0")
            self._conn.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise StorageError(
                    f"{self.path} is open in another process; stop it before replacing the index"
                ) from exc
            raise StorageError(f"{self.path}: closing the index failed: {exc}") from exc
        finally:
            self.close()

    def exclusive(self) -> AbstractContextManager[None]:
        """The exclusive section of every process on this machine that opens this file (see the
        module docstring); needs write access to the file's folder for ``<file>.lock``."""
        return self._section.hold()

    def _lock_file(self, deadline: float, wait: float) -> None:
        """Take ``<file>.lock``, trying until ``deadline`` (time.monotonic(), ``wait`` s after the
        start): flock has no timeout, and a blocking call could not be given up."""
        lock_path = self.path + ".lock"
        try:
            fd = _open_lock_file(lock_path)
        except OSError as exc:
            hint = "; it needs write access to the index's folder" if exc.errno in _NO_ACCESS else ""
            raise StorageError(
                f"{lock_path}: cannot open the lock file of the index's exclusive section: "
                f"{exc.strerror or exc}{hint}"
            ) from exc
        pause = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StorageError(
                        f"{self.path}: another holder held the index's exclusive section "
                        f"({lock_path}) for more than {wait:g} s; try again later"
                    ) from None
                time.sleep(pause)
                pause = min(2 * pause, _LOCK_POLL_S)
                continue
            except OSError as exc:
                os.close(fd)
                raise StorageError(f"{lock_path}: cannot lock: {exc.strerror or exc}") from exc
            self._lock_fd = fd
            return

    def _unlock_file(self) -> None:
        fd, self._lock_fd = self._lock_fd, -1
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)  # closing alone would not, were the fd shared by a fork
        finally:
            os.close(fd)

    def close(self) -> None:
        with self._errors("closing the index"):
            self._conn.close()
