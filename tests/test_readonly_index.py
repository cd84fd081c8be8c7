"""An index on read-only media answers every command that only reads, and a command that only
reads never writes to the file it is given (an empty file stays empty)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.errors import StorageError
from neardup.index import LSHIndex, SQLiteStorage

DOCS = [
    {"id": "a", "text": "the harbour opens at dawn for the fishing boats"},
    {"id": "b", "text": "bread rises slowly in a cold kitchen overnight"},
]


def run(*args: str | Path) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def readonly_media(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs holding a built index, remounted read-only (needs the right to mount)."""
    where = tmp_path / "media"
    where.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=False
    ).returncode:
        pytest.skip("this machine does not let the tests mount a file system")
    try:
        corpus = tmp_path / "docs.jsonl"
        corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
        built = CliRunner().invoke(
            main, ["index", "build", str(corpus), "--index", str(where / "idx.db"), "--id-column", "id", "-q"]
        )
        assert built.exit_code == 0, built.output
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_every_read_only_command_answers_from_read_only_media(readonly_media: Path, tmp_path: Path) -> None:
    idx = readonly_media / "idx.db"
    before = sorted(os.listdir(readonly_media))
    stats = CliRunner().invoke(main, ["index", "stats", "--index", str(idx), "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["documents"] == 2
    query = CliRunner().invoke(
        main,
        [
            "index",
            "query",
            "--index",
            str(idx),
            "--text",
            "The harbour opens at dawn for the fishing boats!",
            "--json",
        ],
    )
    assert query.exit_code == 0, query.output
    assert [json.loads(line)["key"] for line in query.stdout.splitlines()] == ["a"]
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "n", "text": "the harbour opens at dawn for the fishing boats!"}) + "\n")
    against = CliRunner().invoke(
        main, ["dedup", str(new), "-o", str(tmp_path / "out"), "--against", str(idx), "--json"]
    )
    assert against.exit_code == 0, against.output
    assert json.loads(against.stdout)["duplicates_removed"] == 1
    backup = CliRunner().invoke(main, ["index", "backup", str(idx), str(tmp_path / "copy.db")])
    assert backup.exit_code == 0, backup.output
    with LSHIndex.open(tmp_path / "copy.db") as copy:
        assert len(copy) == 2
    add = CliRunner().invoke(main, ["index", "add", str(new), "--index", str(idx), "--id-column", "id"])
    assert add.exit_code != 0 and "Traceback" not in add.output  # a write on read-only media: an error
    assert sorted(os.listdir(readonly_media)) == before


def test_a_command_that_only_reads_never_writes_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for args in (
        ["index", "stats", "--index", str(empty)],
        ["index", "query", "--index", str(empty), "--text", "x"],
    ):
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 1, done.output
        assert f"{empty} is not a neardup index (it holds no tables)" in done.stderr
    assert empty.stat().st_size == 0 and sorted(os.listdir(tmp_path)) == ["empty.db"]
    with pytest.raises(StorageError, match="no index file there"):
        SQLiteStorage(tmp_path / "missing.db", readonly=True)
    assert not (tmp_path / "missing.db").exists()
    built = tmp_path / "idx.db"
    with LSHIndex.open(built) as index:
        index.insert("a", DOCS[0]["text"])
    mtime = built.stat().st_mtime_ns
    with LSHIndex(SQLiteStorage(built, readonly=True)) as index:
        assert [m.key for m in index.query(DOCS[0]["text"])] == ["a"]
    assert built.stat().st_mtime_ns == mtime and sorted(os.listdir(tmp_path)) == ["empty.db", "idx.db"]
