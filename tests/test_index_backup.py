"""``backup_index`` / ``restore_index`` and ``neardup index backup|restore`` on real SQLite files and
a real redis-server: copies that answer as the source does, snapshots taken while a process writes,
refusals, failures that leave DEST as it was, and the commands' messages and exit codes."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

import neardup.index.sqlite as sqlite_backend
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.core.containment import DIRECTIONS
from neardup.core.lsh import band_keys
from neardup.errors import ConfigError, StorageError
from neardup.index import LSHIndex, Match, MemoryStorage, RedisStorage, SQLiteStorage, Storage
from neardup.index.backup import BackupNotFoundError, backup_index, restore_index
from neardup.index.opening import IndexExistsError, IndexNotFoundError

SMALL = DedupConfig.create(num_perm=32, bands=8, rows=4, threshold=0.5)
_prefixes = itertools.count()


def text(i: int) -> str:
    """Document ``i``: 30 words, every tenth a near copy of the one before it."""
    base = i - 1 if i % 10 == 1 else i
    rng = np.random.default_rng(base)
    words = [f"w{n}" for n in rng.integers(0, 3000, size=30).tolist()]
    if base != i:
        words[5] = "changed"
    return " ".join(words)


# -- where indexes live ----------------------------------------------------------------------------


@pytest.fixture
def redis_urls(redis_server: str) -> Iterator[Callable[[int], str]]:
    """``url(db)``: a Redis URL in database ``db`` with a key prefix of its own; every key under
    the prefixes handed out (partial copies' too) is deleted afterwards."""
    import redis

    handed: list[tuple[int, str]] = []
    base = redis_server.rpartition("/")[0]

    def url(db: int = 0) -> str:
        prefix = f"b{os.getpid()}.{next(_prefixes)}"
        handed.append((db, prefix))
        return f"{base}/{db}?prefix={prefix}"

    yield url
    for db, prefix in handed:
        client = redis.Redis.from_url(f"{base}/{db}")
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


def _redis_keys(url: str, pattern: str = "*") -> list[bytes]:
    import redis

    base, _, query = url.partition("?")
    client = redis.Redis.from_url(base)
    prefix = query.partition("prefix=")[2]
    keys = sorted(client.scan_iter(match=pattern.replace("PREFIX", prefix), count=1000))
    client.close()
    return keys


def build(url: str | Path, n: int = 60, *, keep_shingles: bool = True, start: int = 0) -> None:
    """An index of documents ``start..start+n`` (keys ``k{i}``), one of them empty and one
    replaced, so that insertion order and band membership both matter."""
    with LSHIndex.open(url, SMALL, keep_shingles=keep_shingles) as index:
        keys = [f"k{i}" for i in range(start, start + n)]
        index.insert_many(keys, [text(i) for i in range(start, start + n)])
        index.insert_many(["empty", f"k{start}"], ["", text(start) + " again"])  # k{start} moves last


def snapshot(url: str | Path) -> dict[str, Any]:
    """Everything an index answers: settings, keys in order, signatures, shingles, queries."""
    with LSHIndex.open(url) as index:
        storage = index.storage
        keys = list(storage.keys())
        texts = [text(i) for i in range(80)] + [""]
        return {
            "settings": storage.read_settings(),
            "keys": keys,
            "signatures": storage.get_signatures(keys).tolist(),
            "shingles": [None if s is None else s.tolist() for s in storage.get_shingles(keys)],
            "estimated": index.query_many(texts),
            "exact": index.query_many(texts, exact=True) if index.settings.keep_shingles else None,
        }


def in_band_tables(url: str | Path, key: str) -> bool:
    """Whether the document is in the band tables, read from the backend's own layout."""
    location = str(url)
    if location.startswith("redis"):
        import redis

        base, _, query = location.partition("?")
        client = redis.Redis.from_url(base)
        prefix = query.partition("prefix=")[2]
        doc_id = int(client.zscore(f"{prefix}:docs", key))
        found = client.hexists(f"{prefix}:bands", doc_id.to_bytes(5, "big"))
        client.close()
        return bool(found)
    import sqlite3

    conn = sqlite3.connect(location)
    (blob,) = conn.execute("SELECT buckets FROM docs WHERE key = ?", (key,)).fetchone()
    conn.close()
    return blob is not None


def locations(tmp_path: Path, redis_urls: Callable[[int], str]) -> dict[str, str]:
    return {
        "sqlite": str(tmp_path / "source.db"),
        "sqlite-dest": str(tmp_path / "dest.db"),
        "redis": redis_urls(0),
        "redis-dest": redis_urls(0),  # another prefix
        "redis-db1": redis_urls(1),  # another database
    }


# -- copies answer as their source -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dest", "method"),
    [
        ("sqlite", "sqlite-dest", "sqlite backup"),
        ("redis", "redis-dest", "copy"),
        ("redis", "redis-db1", "copy"),
        ("redis", "sqlite-dest", "copy"),
        ("sqlite", "redis-dest", "copy"),
    ],
)
def test_round_trip_answers_as_the_source(
    src: str, dest: str, method: str, tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    where = locations(tmp_path, redis_urls)
    build(where[src])
    before = snapshot(where[src])
    assert before["keys"][-2:] == ["empty", "k0"] and before["estimated"][0][0].key == "k0"

    figures = backup_index(where[src], where[dest])
    assert snapshot(where[dest]) == before
    assert not in_band_tables(where[dest], "empty") and in_band_tables(where[dest], "k1")
    assert figures["documents"] == 61 and figures["method"] == method and figures["attempts"] == 1
    assert figures["source_backend"] == src.partition("-")[0]
    assert figures["destination_backend"] == dest.partition("-")[0] and figures["replaced"] == 0
    assert (figures["size_bytes"] is None) == dest.startswith("redis")
    if dest == "sqlite-dest":
        assert figures["size_bytes"] == os.path.getsize(where[dest])
    files = {Path(where[end]).name for end in (src, dest) if end.startswith("sqlite")}
    assert set(os.listdir(tmp_path)) == files  # no partial file, no -wal left
    with LSHIndex.open(where[src]) as source:  # the source is untouched and keeps working
        source.insert("after", text(70))
        assert len(source) == 62

    back = str(tmp_path / "restored.db")
    restored = restore_index(where[dest], back)
    assert restored["documents"] == 61 and snapshot(back) == before


@pytest.mark.parametrize(("src", "dest"), [("sqlite", "redis-dest"), ("redis", "sqlite-dest")])
def test_a_containment_index_copies_its_layouts(
    src: str, dest: str, tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    where = locations(tmp_path, redis_urls)
    with LSHIndex.open(where[src], SMALL, keep_shingles=True, containment=True) as index:
        # documents of one to eight texts: several size partitions, each text in a few of them
        docs = [" ".join(text(j) for j in range(i, i + 1 + i % 8)) for i in range(40)]
        index.insert_many([f"k{i}" for i in range(40)], docs)
        queries = [text(i) for i in range(0, 40, 3)]
        want = [index.query_containment_many(queries, c, direction=d) for c in (0.5, 0.9) for d in DIRECTIONS]
        estimated = index.query_containment_many(queries, 0.7, exact=False)
        partitions = index.settings.partitions
    assert any(want[0]) and len(partitions) > 1
    backup_index(where[src], where[dest])
    with LSHIndex.open(where[dest]) as copy:
        assert copy.settings.containment and copy.settings.partitions == partitions
        assert [
            copy.query_containment_many(queries, c, direction=d) for c in (0.5, 0.9) for d in DIRECTIONS
        ] == want
        assert copy.query_containment_many(queries, 0.7, exact=False) == estimated


def test_a_backup_file_restores_onto_a_used_index(tmp_path: Path, redis_urls: Callable[[int], str]) -> None:
    """The usual recovery: a backup file written back over a Redis index and over an SQLite file."""
    source, backup, redis_dest = tmp_path / "idx.db", tmp_path / "backup.db", redis_urls(0)
    build(source)
    backup_index(source, backup)
    want = snapshot(backup)
    build(redis_dest, 5, start=200)
    with LSHIndex.open(source) as index:
        index.remove_many([f"k{i}" for i in range(10)])

    figures = restore_index(backup, redis_dest, replace=True)
    assert figures["replaced"] == 6 and snapshot(redis_dest) == want
    figures = restore_index(backup, source, replace=True)
    assert figures["replaced"] == 51 and figures["method"] == "sqlite backup" and snapshot(source) == want
    assert not [p for p in os.listdir(tmp_path) if p.endswith((".partial", "-wal", "-shm"))]


def test_an_index_without_shingles_copies_without_them(
    tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    source, dest = redis_urls(0), tmp_path / "copy.db"
    build(source, keep_shingles=False)
    backup_index(source, dest)
    copy = snapshot(dest)
    assert copy == snapshot(source) and copy["exact"] is None and set(map(str, copy["shingles"])) == {"None"}


def test_documents_stored_without_shingles_keep_their_place(
    tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    """An index that keeps shingles may hold documents stored without them (by a storage's own
    insert): the copy keeps both kinds, in order."""
    source, dest = tmp_path / "idx.db", redis_urls(0)
    build(source, 6)

    def stored(url: str | Path) -> tuple[list[str], list[Any], list[list[Match]]]:
        with LSHIndex.open(url) as index:
            keys = list(index.storage.keys())
            sets = [None if s is None else s.tolist() for s in index.storage.get_shingles(keys)]
            return keys, sets, index.query_many([text(i) for i in range(10)])

    with LSHIndex.open(source) as index:
        sigs = index.storage.get_signatures(["k1", "k2"])
        index.storage.insert(["bare1", "bare2"], sigs, band_keys(sigs, 8, 4))  # no shingles
        index.insert("k9", text(9))
    backup_index(source, dest)
    keys, sets, found = stored(dest)
    assert keys[-3:] == ["bare1", "bare2", "k9"] and sets[-3:-1] == [None, None] and sets[-1] is not None
    assert [m.key for m in found[1]][:2] == ["bare1", "k1"]
    assert (keys, sets, found) == stored(source)


def test_large_copies_go_in_batches(
    tmp_path: Path, redis_urls: Callable[[int], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import neardup.index.backup as backup_module

    monkeypatch.setattr(backup_module, "_BATCH", 7)
    source = redis_urls(0)
    build(source, 40)
    seen: list[tuple[str, int, int]] = []
    backup_index(source, tmp_path / "copy.db", progress=lambda *report: seen.append(report))
    assert seen == [("documents", d, 41) for d in [0, 7, 14, 21, 28, 35, 41]]
    assert snapshot(tmp_path / "copy.db") == snapshot(source)


# -- consistent while the source is written ----------------------------------------------------------

_WRITER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from test_index_backup import text
from neardup.index import LSHIndex
path, stop = sys.argv[1], Path(sys.argv[2])
with LSHIndex.open(path) as index:
    batch = 0
    while not stop.exists():
        numbers = range(1000 + batch * 25, 1025 + batch * 25)
        index.insert_many([f"k{i}" for i in numbers], [text(i) for i in numbers])
        batch += 1
    print(batch)
"""


def test_sqlite_backup_while_a_process_inserts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer commits batches of 25 all through the backup; the copy holds a count the source
    had (the 61 first documents and whole batches), every copied document answers its own text,
    and the writer never waits on the backup."""
    monkeypatch.setattr(sqlite_backend, "_BACKUP_PAGES", 4)  # many steps, writes between them
    source, dest, stop = tmp_path / "idx.db", tmp_path / "copy.db", tmp_path / "stop"
    build(source, keep_shingles=False)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(source), str(stop), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = SQLiteStorage(source)
    counts: list[int] = []
    steps: list[int] = []

    def wait_for_writes(stage: str, done: int, total: int) -> None:
        steps.append(done)
        count = watcher.count()
        deadline = time.monotonic() + 30
        while watcher.count() < count + 25 and time.monotonic() < deadline:  # a batch in every step
            time.sleep(0.005)
        counts.append(watcher.count())

    try:
        deadline = time.monotonic() + 60
        while watcher.count() < 61 + 50:  # the writer is under way
            assert writer.poll() is None and time.monotonic() < deadline, "the writer did not start"
            time.sleep(0.01)
        start_count = watcher.count()
        figures = backup_index(source, dest, progress=wait_for_writes)
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert len(steps) > 3 and counts[-1] >= start_count + 25 * len(steps)  # writes went on meanwhile

    copied = figures["documents"]
    assert copied >= start_count and (copied - 61) % 25 == 0 and copied < watcher.count()
    with LSHIndex.open(dest) as copy:
        keys = list(copy.storage.keys())
        assert len(copy) == copied and keys == list(itertools.islice(watcher.keys(), copied))
        texts = {f"k{i}": text(i) for i in range(2000)} | {"k0": text(0) + " again", "empty": ""}
        for key, found in zip(keys, copy.query_many([texts[k] for k in keys]), strict=True):
            assert key == "empty" or any(m.key == key and m.similarity == 1.0 for m in found), key
    watcher.close()
    with LSHIndex.open(source) as index:  # the source is whole and still takes writes
        assert len(index) == 61 + 25 * int(out) and index.query(text(1000))[0].key == "k1000"
        index.insert("later", text(5))


@pytest.mark.parametrize("backend", ["redis", "sqlite"])
def test_a_copy_starts_again_after_a_write(
    backend: str, tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    """A write while the documents are copied (here: from the progress callback, through another
    connection) throws the copy away and makes it again; writes at every try fail the copy."""
    source = redis_urls(0) if backend == "redis" else str(tmp_path / "idx.db")
    dest = redis_urls(1)
    build(source)
    writer = LSHIndex.open(source)
    written: list[str] = []

    def write_once(stage: str, done: int, total: int) -> None:
        if done and not written:  # during the first copy
            writer.insert("late", text(75))
            written.append("late")

    figures = backup_index(source, dest, progress=write_once)
    assert figures["attempts"] == 2 and figures["documents"] == 62
    assert snapshot(dest) == snapshot(source) and "late" in snapshot(dest)["keys"]
    assert not _redis_keys(dest, "*.partial-*")

    def write_always(stage: str, done: int, total: int) -> None:
        if done:
            writer.insert(f"more{time.monotonic_ns()}", text(76))

    with pytest.raises(StorageError, match=r"writes kept coming: each of 5 copies saw the index change"):
        backup_index(source, dest, replace=True, progress=write_always)
    assert snapshot(dest)["keys"][-1] == "late"  # DEST as it was
    assert not _redis_keys(dest, "*.partial-*")
    if backend == "redis":  # (from SQLite to a file, the backup API takes a snapshot instead)
        with pytest.raises(StorageError, match="writes kept coming"):
            backup_index(source, tmp_path / "never.db", progress=write_always)
        assert not os.listdir(tmp_path)
    writer.close()


# -- refusals and failures ---------------------------------------------------------------------------


def test_a_dest_that_holds_documents_is_refused_without_replace(
    tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    source, file_dest, redis_dest = tmp_path / "idx.db", tmp_path / "dest.db", redis_urls(0)
    build(source)
    for dest in (file_dest, redis_dest):
        build(dest, 3, start=300)
        held = snapshot(dest)
        with pytest.raises(
            IndexExistsError, match=f"^{re.escape(str(dest))} already holds an index of 4 documents$"
        ):
            backup_index(source, dest)
        assert snapshot(dest) == held
        assert backup_index(source, dest, replace=True)["replaced"] == 4
        assert snapshot(dest) == snapshot(source)
    empty = tmp_path / "empty.db"
    LSHIndex.open(empty, DedupConfig.create(seed=5)).close()  # an index without documents
    backup_index(source, empty)
    assert snapshot(empty) == snapshot(source)


def test_an_interrupted_backup_leaves_dest_as_it_was(
    tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    sqlite_src, redis_src, redis_dest = tmp_path / "idx.db", redis_urls(0), redis_urls(0)
    build(sqlite_src)
    build(redis_src)

    def interrupt(stage: str, done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    for source in (sqlite_src, redis_src):
        with pytest.raises(KeyboardInterrupt):
            backup_index(source, tmp_path / "new.db", progress=interrupt)
        assert sorted(os.listdir(tmp_path)) == ["idx.db"]
    old = tmp_path / "old.db"
    build(old, 3, start=300)
    old_bytes = old.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        backup_index(sqlite_src, old, replace=True, progress=interrupt)
    assert old.read_bytes() == old_bytes and sorted(os.listdir(tmp_path)) == ["idx.db", "old.db"]
    build(redis_dest, 3, start=300)
    held = snapshot(redis_dest)
    with pytest.raises(KeyboardInterrupt):
        backup_index(sqlite_src, redis_dest, replace=True, progress=interrupt)
    assert snapshot(redis_dest) == held and not _redis_keys(redis_dest, "*.partial-*")


_FULL_DISK = """
import resource, signal, sys
from neardup.index.backup import backup_index
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
try:
    backup_index(sys.argv[1], sys.argv[2], replace=True)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_backup_that_cannot_write_leaves_dest_as_it_was(
    tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    """A process whose files may not grow past 64 KiB (a full disk, as SQLite sees it) fails
    the backup part way: no new DEST, an old DEST unchanged, no partial file left."""
    sqlite_src, redis_src = tmp_path / "idx.db", redis_urls(0)
    build(sqlite_src, 400)
    build(redis_src, 400)
    assert os.path.getsize(sqlite_src) > 4 * 65536
    old = tmp_path / "old.db"
    build(old, 3, start=900)
    old_bytes = old.read_bytes()
    for source, dest in itertools.product((sqlite_src, redis_src), ("new.db", "old.db")):
        done = subprocess.run(
            [sys.executable, "-c", _FULL_DISK, str(source), str(tmp_path / dest), "65536"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert re.match(r"StorageError .*(disk I/O error|database or disk is full)$", done.stdout), (
            done.stdout
        )
        assert sorted(os.listdir(tmp_path)) == ["idx.db", "old.db"]
        assert old.read_bytes() == old_bytes


def test_a_dest_file_in_use_is_refused(tmp_path: Path) -> None:
    source, dest = tmp_path / "idx.db", tmp_path / "dest.db"
    build(source)
    build(dest, 3, start=300)
    reader = LSHIndex.open(dest)
    assert reader.query(text(300))[0].key == "k300"
    with pytest.raises(StorageError, match=r"dest\.db is open in another process; stop it before replacing"):
        backup_index(source, dest, replace=True)
    assert len(reader) == 4 and reader.query(text(300))[0].key == "k300"
    reader.close()

    late: list[LSHIndex] = []

    def open_meanwhile(stage: str, done: int, total: int) -> None:  # after the first check
        if not late:
            late.append(LSHIndex.open(dest))
            late[0].query(text(300))

    with pytest.raises(StorageError, match=r"dest\.db is open in another process"):
        backup_index(source, dest, replace=True, progress=open_meanwhile)
    assert len(late[0]) == 4 and late[0].query(text(300))[0].key == "k300"
    late[0].close()
    assert sorted(os.listdir(tmp_path)) == ["dest.db", "idx.db"]
    backup_index(source, dest, replace=True)
    assert snapshot(dest) == snapshot(source)


def test_refusals(tmp_path: Path, redis_urls: Callable[[int], str]) -> None:
    source, redis_src = tmp_path / "idx.db", redis_urls(0)
    build(source, 3)
    build(redis_src, 3)
    with pytest.raises(ConfigError, match="is the index being copied; give another destination"):
        backup_index(source, f"sqlite://{source}")
    with pytest.raises(ConfigError, match="is the index being copied; give another database or prefix"):
        backup_index(redis_src, redis_src)
    with pytest.raises(ConfigError, match="memory:// would be lost"):
        backup_index(source, "memory://")
    with pytest.raises(ConfigError, match="memory:// holds nothing to copy"):
        backup_index("memory://", tmp_path / "x.db")
    with pytest.raises(IndexNotFoundError, match=r"^no index at .*missing\.db$"):
        backup_index(tmp_path / "missing.db", tmp_path / "x.db")
    with pytest.raises(BackupNotFoundError, match=r"^no backup at .*missing\.db$"):
        restore_index(tmp_path / "missing.db", tmp_path / "x.db")
    with pytest.raises(IndexNotFoundError, match=r"^no index at redis"):
        backup_index(redis_urls(0), tmp_path / "x.db")
    with pytest.raises(StorageError, match=r"the folder .*nowhere does not exist"):
        backup_index(source, tmp_path / "nowhere" / "x.db")
    (tmp_path / "notes.txt").write_text("not an index")
    with pytest.raises(StorageError, match=r"notes\.txt"):
        backup_index(source, tmp_path / "notes.txt", replace=True)
    assert (tmp_path / "notes.txt").read_text() == "not an index"
    (tmp_path / "x.db-wal").write_bytes(b"left over")
    with pytest.raises(StorageError, match=r"x\.db-wal is left from an earlier database of that name"):
        backup_index(source, tmp_path / "x.db")
    assert sorted(os.listdir(tmp_path)) == ["idx.db", "notes.txt", "x.db-wal"]


# -- the pieces the copy stands on -------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis"])
def test_epoch_changes_with_every_write(
    backend: str, tmp_path: Path, redis_urls: Callable[[int], str]
) -> None:
    """Every write changes the epoch, whether this storage or another connection makes it."""
    if backend == "memory":
        shared = MemoryStorage()
        storages: list[Storage] = [shared, shared]
    elif backend == "sqlite":
        storages = [SQLiteStorage(tmp_path / "idx.db"), SQLiteStorage(tmp_path / "idx.db")]
    else:
        url = redis_urls(0)
        storages = [RedisStorage(url), RedisStorage(url)]
    indexes = [LSHIndex(storage, SMALL) for storage in storages]
    seen = [storages[0].epoch()]
    for n, index in enumerate(indexes):
        assert storages[0].epoch() == seen[-1]  # reading changes nothing
        index.insert(f"k{n}", text(n))
        seen.append(storages[0].epoch())
        index.remove(f"k{n}")
        seen.append(storages[0].epoch())
    assert len(set(seen)) == len(seen), seen
    for index in indexes:
        index.close()


def test_redis_move_and_drop_touch_no_other_prefix(redis_urls: Callable[[int], str]) -> None:
    """Indexes whose prefixes start as DEST's does keep every key when DEST is replaced, then
    dropped: what is left under DEST's prefix is exactly their keys."""
    source, dest = redis_urls(0), redis_urls(0)
    neighbours = [dest + suffix for suffix in (":t", "x", ".partial-x")]
    for url in neighbours:
        build(url, 5)
    theirs = _redis_keys(dest, "PREFIX*")
    kept = [snapshot(url) for url in neighbours]
    build(source, 8)
    build(dest, 5, start=100)
    backup_index(source, dest, replace=True)
    assert snapshot(dest) == snapshot(source)
    storage = RedisStorage(dest)
    storage.drop()
    storage.close()
    assert _redis_keys(dest, "PREFIX*") == theirs
    assert [snapshot(url) for url in neighbours] == kept


# -- the commands ------------------------------------------------------------------------------------


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_backup_and_restore(tmp_path: Path, redis_urls: Callable[[int], str]) -> None:
    source, copy, redis_dest = tmp_path / "idx.db", tmp_path / "copy.db", redis_urls(0)
    build(source)
    done = run("index", "backup", source, copy)
    assert done.exit_code == 0, done.output
    summary = rf"Backed up 61 documents from {re.escape(str(source))} to {re.escape(str(copy))} "
    assert re.fullmatch(summary + r"\(sqlite backup, [\d.]+ KiB, [\d.]+ s\)\n", done.stdout), done.stdout
    assert snapshot(copy) == snapshot(source)

    again = run("index", "backup", source, copy)
    assert (again.exit_code, again.stdout) == (1, "")
    assert again.stderr.endswith(
        f"neardup: error: {copy} already holds an index of 61 documents; "
        "pass --replace to overwrite it, or choose another DEST\n"
    )
    replaced = run("index", "backup", source, copy, "--replace", "--json")
    assert replaced.exit_code == 0, replaced.output
    figures = json.loads(replaced.stdout)
    assert figures["documents"] == 61 and figures["replaced"] == 61 and figures["method"] == "sqlite backup"
    assert figures["destination"] == f"sqlite://{copy}" and figures["size_bytes"] == os.path.getsize(copy)

    restored = run("index", "restore", copy, redis_dest)
    assert restored.exit_code == 0, restored.output
    assert re.fullmatch(
        rf"Restored 61 documents from {re.escape(str(copy))} to {re.escape(redis_dest)} \(copy, [\d.]+ s\)\n",
        restored.stdout,
    )
    assert snapshot(redis_dest) == snapshot(source)
    quiet = run("index", "restore", copy, redis_dest, "--replace", "-q")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")


def test_cli_errors_and_exit_codes(tmp_path: Path) -> None:
    source, missing = tmp_path / "idx.db", tmp_path / "missing.db"
    build(source, 3)
    no_backup = run("index", "restore", missing, tmp_path / "x.db")
    assert (no_backup.exit_code, no_backup.stderr) == (1, f"neardup: error: no backup at {missing}\n")
    no_index = run("index", "backup", missing, tmp_path / "x.db")
    assert (no_index.exit_code, no_index.stderr) == (
        1,
        f"neardup: error: no index at {missing}; "
        f"create one with: neardup index build CORPUS... --index {missing}\n",
    )
    same = run("index", "backup", source, source)
    assert (same.exit_code, same.stderr) == (
        2,
        f"neardup: error: {source} is the index being copied; give another destination\n",
    )
    usage = run("index", "backup", source)
    assert usage.exit_code == 2 and "Missing argument 'DEST'" in usage.stderr
    busy_path = tmp_path / "busy.db"
    in_use = LSHIndex.open(busy_path, SMALL)
    busy = run("index", "restore", source, busy_path, "--replace")
    assert (busy.exit_code, busy.stderr) == (
        1,
        f"neardup: error: {busy_path} is open in another process; stop it before replacing the index\n",
    )
    in_use.close()
    assert sorted(os.listdir(tmp_path)) == ["busy.db", "idx.db"]
