"""``dedup --against IDX --update-index`` killed (SIGKILL, at each named point of its commit,
through ``NEARDUP_STOP_AT``) ends as a run that was never stopped once it is run again (or at
once, when only the exit was left): the outputs are in place before the index learns of the kept
rows, so a rerun never finds its own rows in the index."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.faults import STOP_AT
from neardup.index import LSHIndex

NEARDUP = str(Path(sys.executable).with_name("neardup"))


def _text(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(30))


OLD = [_text(i) for i in range(20)]
NEW = [
    *(_text(100 + i) for i in range(10)),
    OLD[3] + "!",  # a copy of an indexed text
    _text(104) + "!",  # a copy within the new rows
]


def _jsonl(path: Path, texts: list[str], prefix: str) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"{prefix}{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


def _run(tmp: Path, index: Path, out: Path, stop: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != STOP_AT}
    if stop is not None:
        env[STOP_AT] = stop
    args = [NEARDUP, "dedup", str(tmp / "new.jsonl"), "-o", str(out), "--against", str(index)]
    return subprocess.run(
        [*args, "--update-index", "--id-column", "id", "-q"], env=env, capture_output=True, text=True
    )


def _state(out: Path, index: Path) -> dict[str, object]:
    tables = {
        name: (out / f"{name}.jsonl").read_text()
        for name in ("annotated", "deduped", "duplicates", "clusters")
    }
    summary = json.loads((out / "summary.json").read_text())
    figures = {k: summary[k] for k in ("input_rows", "duplicates_removed", "kept_rows")}
    with LSHIndex.open(index) as idx:
        keys = sorted(idx.storage.keys())
    leftovers = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    return {
        "tables": tables,
        "figures": figures,
        "added": summary["index"]["added"],
        "keys": keys,
        "hidden": leftovers,
    }


@pytest.fixture
def built(tmp_path: Path) -> Path:
    _jsonl(tmp_path / "old.jsonl", OLD, "old")
    _jsonl(tmp_path / "new.jsonl", NEW, "new")
    index = tmp_path / "base.db"
    done = subprocess.run(
        [
            NEARDUP,
            "index",
            "build",
            str(tmp_path / "old.jsonl"),
            "--index",
            str(index),
            "--id-column",
            "id",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return index


@pytest.mark.parametrize("stop", ["outputs-written", "outputs-committed", "index-updated"])
def test_a_run_killed_at_each_commit_point_then_run_again_equals_one_run(
    tmp_path: Path, built: Path, stop: str
) -> None:
    reference_index = tmp_path / "reference.db"
    shutil.copy(built, reference_index)
    assert _run(tmp_path, reference_index, tmp_path / "reference", None).returncode == 0
    want = _state(tmp_path / "reference", reference_index)
    assert want["figures"] == {"input_rows": 12, "duplicates_removed": 2, "kept_rows": 10}
    assert want["added"] == 10 and len(want["keys"]) == 30

    index, out = tmp_path / "idx.db", tmp_path / "out"
    shutil.copy(built, index)
    killed = _run(tmp_path, index, out, stop)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with LSHIndex.open(index) as idx:  # the index learns of the rows only after the outputs are in place
        assert len(idx) == (30 if stop == "index-updated" else 20)
    assert (out / "summary.json").exists() == (stop != "outputs-written")
    if stop == "index-updated":  # all was done but the exit: the state is the finished run's
        assert _state(out, index) == want
        return
    again = _run(tmp_path, index, out, None)
    assert again.returncode == 0, again.stderr
    assert _state(out, index) == want
