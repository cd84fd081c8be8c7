"""Inputs that used to end in a traceback or a wrong message: a lone surrogate in a JSON string
(``"\\ud800"``, valid JSON but not text: every reader names the file, line and field, and
``--on-error skip`` skips the record) and a truncated gzip file read through a work dir (named as
the input's fault, not the work dir's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main

MESSAGE = ":2: field 'text' holds a lone surrogate (\\ud800 at character 6), which is not text"


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"id": "a", "text": "fine text number one"}\n'
        '{"id": "b", "text": "hello \\ud800 world"}\n'
        '{"id": "c", "text": "fine text number one!"}\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "extra",
    [[], ["--work-dir", "WORK"], ["--output-format", "parquet"]],
    ids=["in-memory", "streamed", "parquet-out"],
)
def test_dedup_names_the_record_and_skips_it_when_asked(bad: Path, tmp_path: Path, extra: list[str]) -> None:
    args = [a.replace("WORK", str(tmp_path / "work")) for a in extra]
    runner = CliRunner()
    stop = runner.invoke(main, ["dedup", str(bad), "-o", str(tmp_path / "out"), "--id-column", "id", *args])
    assert stop.exit_code == 1
    assert f"neardup: error: {bad}{MESSAGE}" in stop.stderr.splitlines()
    assert "Traceback" not in stop.output and not (tmp_path / "out" / "summary.json").exists()
    skip = runner.invoke(
        main,
        [
            "dedup",
            str(bad),
            "-o",
            str(tmp_path / "kept"),
            "--id-column",
            "id",
            "--on-error",
            "skip",
            "--json",
            *args,
        ],
    )
    assert skip.exit_code == 0, skip.output
    summary = json.loads(skip.stdout)
    assert (
        summary["input_rows"] == 2 and summary["skipped_records"] == 1 and summary["duplicates_removed"] == 1
    )


def test_index_build_names_the_record(bad: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(
        main, ["index", "build", str(bad), "--index", str(tmp_path / "i.db"), "--id-column", "id"]
    )
    assert done.exit_code == 1 and f"{bad}{MESSAGE}" in done.stderr and "Traceback" not in done.output
    nested = tmp_path / "nested.jsonl"
    nested.write_text(
        '{"id": "x", "text": "ok", "meta": {"tags": ["fine", "bad \\udfff"]}}\n', encoding="utf-8"
    )
    done = CliRunner().invoke(main, ["dedup", str(nested), "-o", str(tmp_path / "n")])
    assert done.exit_code == 1
    assert "field 'meta.tags[1]' holds a lone surrogate (\\udfff at character 4)" in done.stderr


def test_a_truncated_gzip_streamed_names_the_input_not_the_work_dir(tmp_path: Path) -> None:
    import gzip

    rows = "".join(
        json.dumps({"id": str(i), "text": f"some text number {i} with words"}) + "\n" for i in range(20000)
    )
    packed = gzip.compress(rows.encode())
    source = tmp_path / "cut.jsonl.gz"
    source.write_bytes(packed[: len(packed) // 2])
    done = CliRunner().invoke(
        main, ["dedup", str(source), "-o", str(tmp_path / "out"), "--work-dir", str(tmp_path / "w")]
    )
    assert done.exit_code == 1
    assert f"neardup: error: {source}: not a readable gzip file: " in done.stderr
    assert "cannot write" not in done.stderr and not (tmp_path / "out" / "summary.json").exists()
