"""What only the SQLite backend promises: WAL readers, atomic batches, survival of kill -9."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from neardup.config import DedupConfig
from neardup.errors import StorageError
from neardup.index import LSHIndex, SQLiteStorage

SMALL = DedupConfig.create(num_perm=32, bands=8, rows=4)


def _random_sigs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=(n, 32), dtype=np.uint32)


def test_wal_mode_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    LSHIndex.open(path, SMALL).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(conn.execute("SELECT key, value FROM meta"))["sqlite_schema"] == "1"
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
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'sqlite_schema'")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="index file layout '2' is not readable by this neardup"):
        SQLiteStorage(path)
