"""Staging folders of runs killed in their write stage are removed by the next run into the same
output directory; folders that are not provably a dead neardup run's are left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from neardup.cli import main
from neardup.io.staging import OWNER, PREFIX

KILLED_IN_WRITE = """
import os, signal, sys
import pyarrow as pa
from neardup.io.writers import OutputDir
with OutputDir(sys.argv[1]) as out:
    out.write("annotated", pa.table({"text": ["a" * 1000] * 1000}), "csv")
    print(out.staging, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_staging_is_removed_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_WRITE, str(out)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    dead = Path(killed.stdout.strip())
    assert dead.is_dir() and (dead / "annotated.csv").is_file() and dead.name.startswith(PREFIX)
    unowned = out / f"{PREFIX}not-ours"  # no owner file: nothing proves it is neardup's
    unowned.mkdir()
    elsewhere = out / f"{PREFIX}other-host"  # another host's, on a shared file system
    elsewhere.mkdir()
    (elsewhere / OWNER).write_text(json.dumps({"host": "another-machine", "pid": 1, "started": "0"}))
    reused = out / f"{PREFIX}pid-reused"  # a live pid, but started after the folder's owner
    reused.mkdir()
    (reused / OWNER).write_text(json.dumps({"host": os.uname().nodename, "pid": os.getpid(), "started": "1"}))
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "one text"}\n{"text": "one text"}\n')
    done = CliRunner().invoke(main, ["dedup", str(source), "-o", str(out), "-q"])
    assert done.exit_code == 0, done.output
    left = sorted(p.name for p in out.iterdir() if p.name.startswith(PREFIX))
    assert left == [f"{PREFIX}not-ours", f"{PREFIX}other-host"]
    assert (out / "summary.json").is_file()


def test_a_live_runs_staging_is_left_alone(tmp_path: Path) -> None:
    from neardup.io.writers import OutputDir

    out = tmp_path / "out"
    with OutputDir(out) as first:
        live = first.staging
        with OutputDir(out) as second:  # another run into the same folder, while the first writes
            assert live.is_dir() and second.staging != live
        assert live.is_dir()
    assert not live.exists()
