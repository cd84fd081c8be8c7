"""``neardup dedup data.json`` on a JSON array: the same outputs as for the same records as JSON
Lines, in memory, streamed under a small memory limit and with a work dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from neardup.cli import main

TABLES = ("annotated", "deduped", "duplicates", "clusters", "candidate_pairs")
BASE = "the quick brown fox jumps over the lazy dog while the cat watches from the old wooden fence"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def records(n: int = 60) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        text = f"{BASE} story {i // 3}" if i % 3 else f"{BASE.upper()} story {i // 3}!"
        out.append({"id": f"doc-{i}", "text": text if i % 10 else f"unique text number {i} " * 4, "n": i})
    return out


def outputs(folder: Path) -> dict[str, str]:
    return {name: (folder / f"{name}.jsonl").read_text(encoding="utf-8") for name in TABLES}


@pytest.mark.parametrize(
    "mode", [(), ("--work-memory", "1MiB"), ("--work-dir", "WORK")], ids=["memory", "limit", "work-dir"]
)
def test_array_gives_the_outputs_of_json_lines(tmp_path: Path, mode: tuple[str, ...]) -> None:
    rows = records()
    array = tmp_path / "data.json"
    array.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    lines = tmp_path / "data.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    extra = [str(tmp_path / "work") if a == "WORK" else a for a in mode]
    expected = run("dedup", lines, "-o", tmp_path / "want", "--id-column", "id", "-q")
    assert expected.exit_code == 0, expected.output
    result = run("dedup", array, "-o", tmp_path / "out", "--id-column", "id", "-q", "--json", *extra)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["input_rows"] == len(rows)
    assert summary["duplicates_removed"] > 0
    if mode:
        assert summary["engine"]["mode"] == "streaming"
    assert outputs(tmp_path / "out") == outputs(tmp_path / "want")


@pytest.mark.parametrize("mode", [(), ("--work-memory", "1MiB")], ids=["memory", "limit"])
def test_skip_drops_bad_elements(tmp_path: Path, mode: tuple[str, ...]) -> None:
    src = tmp_path / "data.json"
    src.write_text(
        f'[\n  {{"text": "{BASE}"}},\n  42,\n  {{"text": "{BASE}!"}},\n  {{"text": oops}}\n]\n',
        encoding="utf-8",
    )
    stopped = run("dedup", src, "-o", tmp_path / "stop", "-q", *mode)
    assert stopped.exit_code == 1
    assert stopped.stderr.startswith(
        f"neardup: error: {src}:3: element [1]: expected a JSON object, got number\n"
    )
    result = run("dedup", src, "-o", tmp_path / "out", "--on-error", "skip", "--json", *mode)
    assert result.exit_code == 0, result.output
    assert f"neardup: skipped: {src}:3: element [1]: expected a JSON object, got number" in result.stderr
    assert f"neardup: skipped: {src}:5: element [3]: malformed JSON: Expecting value" in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["input_rows"], summary["skipped_records"], summary["duplicates_removed"]) == (2, 2, 1)


@pytest.mark.parametrize("mode", [(), ("--work-memory", "1MiB")], ids=["memory", "limit"])
def test_not_records_is_an_input_error(tmp_path: Path, mode: tuple[str, ...]) -> None:
    src = tmp_path / "data.json"
    src.write_text("3.5\n", encoding="utf-8")
    result = run("dedup", src, "-o", tmp_path / "out", "-q", *mode)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"neardup: error: {src}:1: holds a JSON number, not records: expected a JSON array of objects, "
        "JSON Lines (one object per line) or an object with one key holding the array\n"
    )  # a streamed run then says where its work is kept
