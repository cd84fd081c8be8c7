"""A Redis URL's password never reaches a message: every command that names its index, on a real
redis-server that requires the password (and the library's own messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import running_redis
from neardup.cli import main
from neardup.errors import StorageError
from neardup.index import open_storage
from neardup.jobs import IndexNotFoundError
from neardup.redaction import redact_url

SECRET = "s3cret-pass-word"


def test_redact_url() -> None:
    assert (
        redact_url(f"redis://:{SECRET}@127.0.0.1:6379/0?prefix=p") == "redis://:***@127.0.0.1:6379/0?prefix=p"
    )
    assert redact_url(f"rediss://user:{SECRET}@host/1") == "rediss://user:***@host/1"
    assert redact_url(f"redis://user:{SECRET}@host:notaport/1") == "redis://user:***@host:notaport/1"
    assert redact_url("redis://host:6379/0") == "redis://host:6379/0"
    assert (
        redact_url(f"redis://host/0?socket_timeout=2&password={SECRET}&prefix=p")
        == "redis://host/0?socket_timeout=2&password=***&prefix=p"
    )
    assert redact_url("some/path@with-at.db") == "some/path@with-at.db"
    assert str(IndexNotFoundError(f"redis://:{SECRET}@h/0")) == "no index at redis://:***@h/0"
    with pytest.raises(StorageError) as err:
        open_storage(f"redsi://:{SECRET}@h/0")
    assert SECRET not in str(err.value) and "redsi://:***@h/0" in str(err.value)


def test_commands_never_print_the_password(tmp_path: Path) -> None:
    with running_redis(tmp_path, "--requirepass", SECRET) as port:
        url = f"redis://:{SECRET}@127.0.0.1:{port}/0?prefix=masked"
        corpus = tmp_path / "c.jsonl"
        corpus.write_text(
            "".join(
                json.dumps({"id": f"d{i}", "text": f"text number {i} about the harbour"}) + "\n"
                for i in range(5)
            )
        )
        runner = CliRunner()
        outputs = []
        for args in (
            ["index", "build", str(corpus), "--index", url, "--id-column", "id"],
            ["index", "add", str(corpus), "--index", url, "--id-column", "id"],
            ["index", "stats", "--index", url],
            ["index", "stats", "--index", url, "--json"],
            ["index", "remove", "d0", "--index", url],
            ["index", "query", "--index", url.replace("masked", "missing"), "--text", "x"],
            ["dedup", str(corpus), "-o", str(tmp_path / "out"), "--against", url, "--json"],
            ["index", "backup", url, str(tmp_path / "b.db")],
        ):
            done = runner.invoke(main, args)
            outputs.append((args, done.exit_code, done.output))
        for args, _, output in outputs:
            assert SECRET not in output, (args, output)
        assert [code for _, code, _ in outputs] == [0, 0, 0, 0, 0, 1, 0, 0]
        assert "into redis://:***@127.0.0.1" in outputs[0][2]
        assert "no index at redis://:***@127.0.0.1" in outputs[5][2]
        summary = (tmp_path / "out" / "summary.json").read_text()
        assert SECRET not in summary and "redis://:***@" in summary
