"""What only the SQLite backend promises: WAL readers, atomic batches, survival of kill -9, layout 1
files upgraded on open (or read as they are where they cannot be written), an exclusive section
that a killed holder frees."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neardup.config import DedupConfig
from neardup.errors import StorageError
from neardup.index import DocumentInfo, LSHIndex, SQLiteStorage

SMALL = DedupConfig.create(num_perm=32, bands=8, rows=4)


def _random_sigs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=(n, 32), dtype=np.uint32)


def test_wal_mode_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    LSHIndex.open(path, SMALL).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(conn.execute("SELECT key, value FROM meta"))["sqlite_schema"] == "2"
    columns = [row[1] for row in conn.execute("PRAGMA table_info(docs)")]
    assert columns == ["id", "key", "signature", "buckets", "shingles", "inserted_at", "shingle_count"]
    conn.close()


def test_readers_read_while_a_write_transaction_is_open(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    sigs = _random_sigs(20, 1)
    with LSHIndex.open(path, SMALL) as index:
        index.insert_signatures([f"a{i}" for i in range(10)], sigs[:10])
        before = index.query_signature(sigs[3])
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM bands")
    writer.execute("DELETE FROM docs WHERE key != 'a3'")
    reader = LSHIndex.open(path)  # opening and reading must not wait for the writer
    t0 = time.perf_counter()
    assert len(reader) == 10 and "a5" in reader
    assert reader.query_signature(sigs[3]) == before
    assert time.perf_counter() - t0 < 5
    writer.execute("COMMIT")
    writer.close()
    assert len(reader) == 1 and "a5" not in reader
    assert reader.query_signature(sigs[3]) == []  # its band rows were deleted too
    reader.close()


def test_a_failing_batch_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    sigs = _random_sigs(30, 2)
    index = LSHIndex.open(path, SMALL)
    index.insert_signatures([f"old{i}" for i in range(10)], sigs[:10])
    conn = sqlite3.connect(path)
    # fail the next batch in its last statement: after its docs and some band rows are written
    conn.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON bands WHEN (SELECT COUNT(*) FROM bands) >= 100 "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
    )
    conn.commit()
    batch = ["old0", *(f"new{i}" for i in range(19))]  # replaces old0, adds 19
    with pytest.raises(StorageError, match=r"idx\.db: inserting documents failed: injected failure"):
        index.insert_signatures(batch, sigs[10:30])
    assert len(index) == 10 and "new0" not in index
    assert list(index.storage.keys()) == [f"old{i}" for i in range(10)]
    np.testing.assert_array_equal(index.storage.get_signatures(["old0"]), sigs[:1])
    assert [m.key for m in index.query_signature(sigs[0])] == ["old0"]
    assert conn.execute("SELECT COUNT(*) FROM bands").fetchone()[0] == 10 * 8
    conn.execute("DROP TRIGGER boom")
    conn.commit()
    conn.close()
    index.insert_signatures(batch, sigs[10:30])
    assert len(index) == 29
    index.close()


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from neardup.config import DedupConfig
    from neardup.index import LSHIndex

    path, size = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(0)
    with LSHIndex.open(path, DedupConfig.create(num_perm=32, bands=8, rows=4)) as index:
        for b in range(100_000):
            sigs = rng.integers(0, 2**32, size=(size, 32), dtype=np.uint32)
            print("start", b, flush=True)
            index.insert_signatures([f"{b}-{i}" for i in range(size)], sigs)
    """
)


def test_kill_9_mid_batch_leaves_whole_batches(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    size = 500
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(size)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        # kill it just after it starts batch 3, while that batch is being written
        while (line := proc.stdout.readline()) != "start 3\n":
            assert line, f"the writer died early (exit {proc.poll()})"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    docs = conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    assert conn.execute("SELECT COUNT(*) FROM bands").fetchone()[0] == docs * 8
    conn.close()
    with LSHIndex.open(path) as index:
        n = len(index)
        assert n in (3 * size, 4 * size)
        keys = list(index.storage.keys())
        per_batch = Counter(key.split("-")[0] for key in keys)
        assert set(per_batch.values()) == {size}
        assert sorted(int(b) for b in per_batch) == list(range(n // size))


def test_not_an_index_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(StorageError, match=r"other\.db is an SQLite database but not a neardup index"):
        SQLiteStorage(other)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StorageError, match=r"garbage\.db: opening the index failed: file is not a database"):
        SQLiteStorage(garbage)
    with pytest.raises(StorageError, match=r"missing-dir.*cannot open the index|missing-dir.*failed"):
        SQLiteStorage(tmp_path / "missing-dir" / "idx.db")


def test_newer_layout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    SQLiteStorage(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'sqlite_schema'")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError) as err:
        SQLiteStorage(path)
    assert str(err.value) == (
        f"{path}: index file layout '3' is not readable by this neardup (it reads layouts 1 and 2); "
        "rebuild the index or upgrade neardup"
    )


# -- layout 1 files: the golden one, written by neardup before layout 2 -------------------------------

LAYOUT_1 = Path(__file__).parent / "golden" / "index" / "index-v1.db"
LAYOUT_1_KEYS = ["en-1", "en-2", "en-3", "zh-1", "zh-2", "empty"]


def _meta_and_columns(path: Path) -> tuple[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute("SELECT value FROM meta WHERE key = 'sqlite_schema'").fetchone()[0]
        return schema, [row[1] for row in conn.execute("PRAGMA table_info(docs)")]
    finally:
        conn.close()


def test_a_layout_1_file_is_upgraded_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(LAYOUT_1, path)
    columns = ["id", "key", "signature", "buckets", "shingles"]
    assert _meta_and_columns(path) == ("1", columns)
    with LSHIndex.open(path) as index:
        assert _meta_and_columns(path) == ("2", [*columns, "inserted_at", "shingle_count"])
        assert list(index.storage.keys()) == LAYOUT_1_KEYS
        # documents stored before layout 2: no time, no count; but found as before
        assert index.info_many(["en-1", "nope"]) == [DocumentInfo("en-1", None, None), None]
        found = index.query("The quick brown fox jumps over the lazy dog near the river bank")
        assert [m.key for m in found] == ["en-1", "en-2"]
        index.insert("new", "A new sentence about lighthouses.")
        info = index.info("new")
        assert info is not None and info.inserted_at is not None and info.shingles is not None
    with LSHIndex.open(path) as again:  # opened again: layout 2 as it is
        assert again.info("new") == info and again.info("en-1") == DocumentInfo("en-1", None, None)
    assert _meta_and_columns(path)[0] == "2"


def _unprivileged(action: Callable[[], Any]) -> Any:
    """``action()`` with file permissions enforced: as user nobody in a forked child when the tests
    run as root (root may write any file), its result (or exception) coming back pickled."""
    if os.geteuid() != 0:
        return action()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(reader)
            os.setgid(65534)
            os.setuid(65534)
            try:
                out: Any = ("ok", action())
            except Exception as exc:
                out = ("raised", exc)
            with os.fdopen(writer, "wb") as pipe:
                pickle.dump(out, pipe)
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    if kind == "raised":
        raise value
    return value


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder that user nobody may create files in (a test's tmp_path is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="neardup-ro-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def test_a_layout_1_file_that_cannot_be_written_is_read_as_it_is(shared_folder: Path) -> None:
    path = shared_folder / "old.db"
    shutil.copy(LAYOUT_1, path)

    def read() -> tuple[Any, ...]:
        storage = SQLiteStorage(path)
        try:
            found = (storage.count(), list(storage.keys()), storage.info(["en-1", "nope"]))
            try:
                storage.insert(["x"], np.zeros((1, 128), dtype=np.uint32), np.zeros((1, 32), dtype=np.uint64))
            except StorageError as exc:
                return (*found, str(exc))
            return (*found, "inserted")
        finally:
            storage.close()

    path.chmod(0o444)
    count, keys, info, insert = _unprivileged(read)
    assert (count, keys) == (6, LAYOUT_1_KEYS)
    assert info == [DocumentInfo("en-1", None, None), None]
    assert insert == f"{path}: upgrading the file to layout 2 failed: attempt to write a readonly database"
    assert _meta_and_columns(path)[0] == "1"  # left as it was


# -- the exclusive section -----------------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from neardup.index import SQLiteStorage
    storage = SQLiteStorage(sys.argv[1])
    with storage.exclusive():
        print("holding", flush=True)
        time.sleep(600)
    """
)


def test_the_section_locks_a_file_next_to_the_index_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    SQLiteStorage(path).close()
    assert not (tmp_path / "idx.db.lock").exists()  # made when first needed
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
        assert (tmp_path / "idx.db.lock").exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    storage = SQLiteStorage(path)
    t0 = time.monotonic()
    with storage.exclusive():  # the kernel dropped the dead holder's lock
        assert time.monotonic() - t0 < 5
    storage.close()


def test_the_section_needs_a_lock_file_it_can_make(shared_folder: Path) -> None:
    path = shared_folder / "idx.db"
    SQLiteStorage(path).close()
    keeper = sqlite3.connect(path)  # keeps the -wal and -shm files, which a reader must open
    keeper.execute("SELECT COUNT(*) FROM docs").fetchone()
    for name in os.listdir(shared_folder):
        (shared_folder / name).chmod(0o666)
    shared_folder.chmod(0o555)  # no new files: the lock file cannot be made

    def enter() -> str:
        storage = SQLiteStorage(path)
        try:
            with storage.exclusive():
                return "entered"
        except StorageError as exc:
            return str(exc)
        finally:
            storage.close()

    try:
        message = _unprivileged(enter)
    finally:
        shared_folder.chmod(0o777)
        keeper.close()
    assert message == (
        f"{path}.lock: cannot open the lock file of the index's exclusive section: Permission denied; "
        "it needs write access to the index's folder"
    )


def test_a_lock_file_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    storage = SQLiteStorage(path)
    (tmp_path / "idx.db.lock").mkdir()  # something else has the lock file's name
    with pytest.raises(StorageError) as err, storage.exclusive():
        pass
    assert str(err.value) == (
        f"{path}.lock: cannot open the lock file of the index's exclusive section: Is a directory"
    )
    storage.close()
