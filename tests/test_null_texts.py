"""A row whose text is null (JSON ``null``, a missing field, a Parquet null) is deduplicated as an
empty document, and says so: ``summary.json`` counts it in ``null_texts`` and the command prints a
note, whichever engine runs (in memory, in passes, streamed; Ray in test_ray_engine.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main

NOTE = (
    "neardup: 3 rows have a null text (null, or no text field): deduplicated as empty "
    "(null_texts in summary.json)"
)


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _records() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"id": f"r{i}", "text": f"text number {i} with words {i * 7} and {i * 13}"} for i in range(20)
    ]
    rows.append({"id": "r20", "text": rows[4]["text"]})  # a duplicate, to decide something
    rows.insert(3, {"id": "n1", "text": None})
    rows.insert(9, {"id": "n2"})  # no text field at all
    rows.insert(15, {"id": "n3", "text": None})
    return rows


def _jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# every engine the local CLI has: the arguments that choose it, and the mode summary.json names
MODES = {
    "in-memory": (["--output-format", "csv"], "in-memory"),
    "passes": ([], "passes"),
    "streaming": (["--work-dir", "{work}"], "streaming"),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_null_texts_are_counted_and_noted_on_every_engine(tmp_path: Path, mode: str) -> None:
    args, want_mode = MODES[mode]
    corpus = _jsonl(tmp_path / "c.jsonl", _records())
    extra = [a.format(work=tmp_path / "work") for a in args]
    done = _run("dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "--json", *extra)
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["engine"]["mode"] == want_mode
    assert summary["null_texts"] == 3
    assert summary["input_rows"] == 24 and summary["empty_documents"] == 3 and summary["kept_rows"] == 23
    assert list(summary).index("null_texts") == list(summary).index("skipped") + 1
    assert NOTE in done.stderr.splitlines()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["null_texts"] == 3


@pytest.mark.parametrize("mode", ["in-memory", "streaming"])
def test_a_null_text_of_a_skipped_record_is_not_counted(tmp_path: Path, mode: str) -> None:
    records = _records()
    records.append({"id": "r1", "text": None})  # a repeated id: skipped, with its null text
    corpus = _jsonl(tmp_path / "c.jsonl", records)
    extra = ["--work-dir", str(tmp_path / "work")] if mode == "streaming" else []
    done = _run(
        "dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "--json", "--on-error", "skip", *extra
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["engine"]["mode"] == mode
    assert summary["skipped_records"] == 1 and summary["null_texts"] == 3
    assert NOTE in done.stderr.splitlines()


@pytest.mark.parametrize("statistics", [True, False])
@pytest.mark.parametrize("mode", ["in-memory", "streaming"])
def test_parquet_nulls_are_counted(tmp_path: Path, mode: str, statistics: bool) -> None:
    """Streamed, a Parquet file is counted from its row groups' statistics, or read for its text
    column when it has none."""
    records = _records()
    table = pa.table(
        {"id": [r["id"] for r in records], "text": pa.array([r.get("text") for r in records], pa.string())}
    )
    corpus = tmp_path / "c.parquet"
    pq.write_table(table, corpus, row_group_size=7, write_statistics=statistics)
    assert pq.ParquetFile(corpus).metadata.row_group(0).column(1).is_stats_set == statistics
    extra = ["--work-dir", str(tmp_path / "work")] if mode == "streaming" else []
    done = _run("dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "--json", *extra)
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["engine"]["mode"] == mode and summary["null_texts"] == 3
    assert NOTE in done.stderr.splitlines()


def test_no_null_text_no_note(tmp_path: Path) -> None:
    records = [r for r in _records() if r.get("text") is not None]
    done = _run("dedup", _jsonl(tmp_path / "c.jsonl", records), "-o", tmp_path / "out", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["null_texts"] == 0
    assert "null text" not in done.stderr


def test_one_null_text_is_one_row(tmp_path: Path) -> None:
    records = [r for r in _records() if r["id"] not in ("n2", "n3")]
    done = _run("dedup", _jsonl(tmp_path / "c.jsonl", records), "-o", tmp_path / "out", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["null_texts"] == 1
    assert "neardup: 1 row has a null text (null, or no text field)" in done.stderr
