"""Replacing a run's outputs goes through one commit record (``.neardup-commit.json``): a run
killed (SIGKILL, through ``NEARDUP_STOP_AT``) in the middle of moving its files in is finished by
whoever opens the folder next, the next run's ``OutputDir`` or ``neardup report``, and the folder
then holds exactly what the uninterrupted run leaves; no mix of two runs, no stale staging."""

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

from neardup.errors import InputError, OutputError
from neardup.faults import STOP_AT
from neardup.io import OutputDir
from neardup.io.commit import CommitRecord, digest, finish_commit
from neardup.io.staging import PREFIX, RECORD, remove_dead_staging
from neardup.report.tables import read_summary

NEARDUP = str(Path(sys.executable).with_name("neardup"))


def _text(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(3000)}" for _ in range(25))


def _corpus(path: Path, seed: int) -> Path:
    texts = [_text(seed + i) for i in range(30)]
    texts += [texts[2] + " copy", texts[7] + " again"]  # two near-duplicates
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    return path


def _dedup(source: Path, out: Path, *args: str, stop: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != STOP_AT}
    if stop is not None:
        env[STOP_AT] = stop
    command = [NEARDUP, "dedup", str(source), "-o", str(out), "--id-column", "id", "-q", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True)


def _files(out: Path, skip: Path | None = None) -> dict[str, bytes]:
    """Every file below ``out`` (but ``skip``'s) by relative path, with its bytes."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and (skip is None or skip not in p.parents)
    }


def _without_seconds(data: bytes) -> dict[str, object]:
    summary = json.loads(data)
    summary.pop("seconds")
    return summary


# the earlier run, then the run that is killed: (its arguments, the earlier run's, the stop point)
CASES = {
    # CSV with deduped kept in the inputs' layout, replaced by JSON Lines without it: every earlier
    # file is stale, and the deduped/ folder goes
    "moving": (["--output-format", "csv", "--keep-layout"], [], "outputs-moving"),
    # both in the layout: the earlier deduped/ folder is set aside, and the kill comes before the
    # new one is in
    "aside": (["--keep-layout"], ["--keep-layout"], "outputs-aside"),
}


@pytest.mark.parametrize("reader", ["next-run", "report"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_run_killed_while_moving_its_outputs_in_is_finished_by_the_next_opener(
    tmp_path: Path, case: str, reader: str
) -> None:
    earlier_args, args, stop = CASES[case]
    earlier = _corpus(tmp_path / "earlier" / "crawl.jsonl", 1000)
    source = _corpus(tmp_path / "new" / "crawl.jsonl", 0)
    out = tmp_path / "out"
    assert _dedup(earlier, out, *earlier_args).returncode == 0
    done = _dedup(source, out, *args)  # uninterrupted, into the same path: the reference
    assert done.returncode == 0, done.stderr
    want = _files(out)

    shutil.rmtree(out)
    assert _dedup(earlier, out, *earlier_args).returncode == 0
    before = _files(out)
    assert before.keys() != want.keys() or before != want
    killed = _dedup(source, out, *args, stop=stop)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    record = json.loads((out / RECORD).read_text())
    staged = (out / record["staging"] / "summary.json").read_bytes()
    assert not (out / "summary.json").exists()  # the earlier marker went before the first move

    if reader == "next-run":
        with OutputDir(out) as opened:
            got = _files(out, skip=opened.staging)
            hidden = sorted(p.name for p in out.iterdir() if p.name.startswith(".") and p != opened.staging)
    else:
        report = subprocess.run(
            [NEARDUP, "report", str(out), "-o", str(tmp_path / "report.html"), "-q"],
            capture_output=True,
            text=True,
        )
        assert report.returncode == 0, report.stderr
        got = _files(out)
        hidden = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    assert hidden == []  # no commit record, no staging folder
    assert sorted(got) == sorted(want)
    for name in want:
        if name != "summary.json":
            assert got[name] == want[name], name
    assert got["summary.json"] == staged  # the killed run's own summary, byte for byte
    assert _without_seconds(got["summary.json"]) == _without_seconds(want["summary.json"])
    if reader == "next-run":
        assert read_summary(out)["input_rows"] == 32


def _killed_while_moving(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """An output folder whose second run was killed after its first file moved in."""
    out = tmp_path / "out"
    assert _dedup(_corpus(tmp_path / "a.jsonl", 1000), out, "--output-format", "csv").returncode == 0
    killed = _dedup(_corpus(tmp_path / "b.jsonl", 0), out, stop="outputs-moving")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return out, json.loads((out / RECORD).read_text())


def test_the_staging_folder_a_pending_commit_names_is_not_removed_as_dead(tmp_path: Path) -> None:
    out, record = _killed_while_moving(tmp_path)
    assert remove_dead_staging(out) == []  # its process is dead, but the record still needs it
    assert (out / str(record["staging"])).is_dir()


def test_a_pending_commit_whose_staging_folder_is_gone_leaves_no_run(tmp_path: Path) -> None:
    """Half moved in and the rest deleted by hand: no run's outputs are whole, so none are left
    (no mix), the record goes, and readers say the folder holds no finished run."""
    out, record = _killed_while_moving(tmp_path)
    shutil.rmtree(out / str(record["staging"]))
    assert finish_commit(out) == "cleared"
    assert sorted(p.name for p in out.iterdir()) == []
    with pytest.raises(InputError, match=r"no summary\.json"):
        read_summary(out)
    assert finish_commit(out) is None


def _hand_made(out: Path, *, ours: bool) -> None:
    """A finished run's folder, and a commit record naming a staging folder that is not there
    (whose marker is the ``summary.json`` in place, or another)."""
    with OutputDir(out) as opened:
        opened.write_text("annotated.csv", "a\n1\n")
        opened.write_json("summary.json", {"run": 1})
    (out / "deduped.jsonl").write_text("{}\n")
    record = CommitRecord(
        staging=f"{PREFIX}gone",
        moves=("annotated.csv", "summary.json"),
        markers={"summary.json": digest(out / "summary.json") if ours else "0" * 64},
        removes=("deduped.jsonl",),
    )
    (out / RECORD).write_text(record.to_json())


def test_a_pending_commit_whose_staging_is_gone_after_its_markers_moved_in_is_finished(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    _hand_made(out, ours=True)
    assert finish_commit(out) == "finished"  # every entry was moved: the removals are done
    assert sorted(p.name for p in out.iterdir()) == ["annotated.csv", "summary.json"]


def test_a_pending_commit_whose_staging_is_gone_before_anything_moved_keeps_the_earlier_run(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    _hand_made(out, ours=False)  # the summary.json in place is not the record's: an earlier run's
    assert finish_commit(out) == "kept-earlier"
    assert sorted(p.name for p in out.iterdir()) == ["annotated.csv", "deduped.jsonl", "summary.json"]
    assert read_summary(out) == {"run": 1}


def test_an_unreadable_commit_record_is_named_and_nothing_is_touched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _hand_made(out, ours=False)
    (out / RECORD).write_text('{"version": 1, "staging": "../../elsewhere", "moves": [], ')
    with pytest.raises(OutputError, match="not a commit record neardup can read"):
        finish_commit(out)
    (out / RECORD).write_text(
        json.dumps({"version": 1, "staging": "../x", "moves": [], "markers": {}, "removes": []})
    )
    with pytest.raises(OutputError, match="names an entry outside the folder"):
        OutputDir(out).__enter__()
    done = subprocess.run([NEARDUP, "report", str(out)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith(f"neardup: error: {out / RECORD}: not a commit record neardup can read")
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == [RECORD, "annotated.csv", "deduped.jsonl", "summary.json"]
