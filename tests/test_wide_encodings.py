"""A UTF-16 or UTF-32 file is named as one, with the conversion to make, not only "invalid UTF-8"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.io._common import wide_encoding

ROWS = [{"id": str(i), "text": f"hello world number {i}"} for i in range(3)]


@pytest.mark.parametrize(
    ("name", "content", "encoding"),
    [
        ("rows.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS), "utf-16"),
        ("rows.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS), "utf-16-le"),
        ("rows.csv", "id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in ROWS), "utf-16-le"),
        ("rows.csv", "id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in ROWS), "utf-32"),
        ("page.txt", "hello world\nanother line\n", "utf-16-be"),
    ],
)
def test_the_message_names_the_encoding(tmp_path: Path, name: str, content: str, encoding: str) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode(encoding))
    done = CliRunner().invoke(main, ["dedup", str(path), "-o", str(tmp_path / "out")])
    assert done.exit_code == 1
    family = "UTF-32" if "32" in encoding else "UTF-16"
    assert (
        f"the file looks like {family}, and neardup reads UTF-8: convert it (iconv -f {family} -t UTF-8)"
        in done.stderr
    )
    assert f"{path}:1: " in done.stderr


def test_utf8_and_latin1_are_not_taken_for_wide_encodings() -> None:
    assert wide_encoding("plain text, and 中文".encode()) is None
    assert wide_encoding("café".encode("latin-1")) is None
    assert wide_encoding(b"") is None
