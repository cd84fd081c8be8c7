"""The staging folders an output directory's files are written into before they move in.

Each is ``<output>/.neardup-tmp-*``, holding an owner file (``.neardup-owner``: the host, the
process id and that process's start time). A run that is killed (``kill -9``, a power cut, a
second Ctrl-C) cannot remove its own; the next run into the same directory removes every staging
folder whose owner file names a process of this host that no longer runs (or whose id now
belongs to a process started later). Folders without an owner file, or of another host (a
shared file system), are left alone: nothing proves they are neardup's, or dead; so is the one
a pending commit record names (:mod:`neardup.io.commit`), which only finishing it removes.

The run holds an exclusive ``flock`` on its owner file (:func:`hold`) until its commit is done:
whoever finishes a commit takes that lock first, so it never works beside a live writer.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

PREFIX = ".neardup-tmp-"
OWNER = ".neardup-owner"
RECORD = ".neardup-commit.json"
"""The commit record in an output directory while a run moves its files in (:mod:`neardup.io.commit`)."""


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # field 22: the fields after the name start at 3


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        pass
    now = _started(pid)
    return started is None or now is None or now == started


def make_staging(output: Path) -> Path:
    """A new staging folder in ``output``, its owner file naming this process."""
    staging = Path(tempfile.mkdtemp(prefix=PREFIX, dir=output))
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": _started(os.getpid())}
    (staging / OWNER).write_text(json.dumps(owner), encoding="utf-8")
    return staging


def hold(staging: Path) -> int:
    """Take the exclusive lock on ``staging``'s owner file; returns the descriptor to close."""
    fd = os.open(staging / OWNER, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        raise
    return fd


def _recorded(output: Path) -> str | None:
    """The staging folder a commit record in ``output`` names ("" for a record it cannot read)."""
    try:
        record = json.loads((output / RECORD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return ""
    return str(record.get("staging", "")) if isinstance(record, dict) else ""


def remove_dead_staging(output: Path, *, keep: Path | None = None) -> list[Path]:
    """Remove the staging folders in ``output`` of processes of this host that have ended (but
    ``keep``, and the one a commit record names); returns them. A folder it cannot read or
    remove is left as it is."""
    removed: list[Path] = []
    host = socket.gethostname()
    recorded = _recorded(output)
    if recorded == "":  # a record nobody can read: any folder may be the one it names
        return removed
    try:
        candidates = [
            p for p in output.iterdir() if p.name.startswith(PREFIX) and p != keep and p.name != recorded
        ]
    except OSError:
        return removed
    for folder in candidates:
        try:
            owner = json.loads((folder / OWNER).read_text(encoding="utf-8"))
            pid, started = int(owner["pid"]), owner.get("started")
            if owner.get("host") != host or _alive(pid, started):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed
