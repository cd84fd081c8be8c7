"""The commit record of an output directory: the one decision of which run's files are current.

A run writes its files into a staging folder (:mod:`neardup.io.staging`). To move them in it
first makes them durable, then writes ``<output>/.neardup-commit.json`` (a temporary file, fsync,
rename, fsync of the folder): the staging folder, the entries to move in, in order, completion
markers (``summary.json``) last, each marker with its SHA-256, and the entries of earlier runs to
remove. From that rename on, the run's outputs are the current ones: the record is a redo journal.
Rolling it forward (:func:`roll_forward`) does the rest, and every step can be done again:

1. an earlier run's marker is unlinked (while ours is still staged), so it never vouches for a
   half-replaced folder;
2. the entries move in with a rename each (one already moved is skipped); a folder in the way
   (``deduped`` kept in the inputs' layout) is first renamed aside into the staging folder, never
   deleted in place, so its name holds the old folder, nothing, or the new one;
3. the entries to remove go (a folder is renamed aside), then the markers move in;
4. the record is unlinked, and the staging folder (with what was set aside) removed.

Whoever opens the folder next (the next run's :class:`~neardup.io.OutputDir`, and readers through
:func:`neardup.report.tables.read_summary`: ``neardup report``, ``neardup eval``) calls
:func:`finish_commit` first, so a run killed in the middle of its commit ends as it would have.
The writer holds an exclusive ``flock`` on its staging folder's owner file until its commit is
done; :func:`finish_commit` takes that lock first, so it waits for a live writer and goes ahead
at once for a dead one (the lock dies with its process).

A record whose staging folder is gone (removed by hand) cannot be rolled forward. It is dropped,
and the folder is left holding one run's outputs or none, never a mix: when the record's markers
are in place (same SHA-256), every entry was moved and only the removals are done; when an
earlier run's marker stands, nothing was moved and that run's outputs stay; otherwise part of the
commit was moved and the rest is lost, so every entry the record names is removed (the folder
then has no ``summary.json``: no finished run, as readers say).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from neardup.errors import OutputError
from neardup.faults import stop_point
from neardup.io.staging import OWNER, PREFIX, RECORD

VERSION = 1
ASIDE = ".aside"
"""The folder inside the staging folder that entries in the way are renamed into."""

Outcome = Literal["finished", "kept-earlier", "cleared"]
"""What :func:`finish_commit` left: the recorded run's outputs; the earlier run's (the record's
staging folder was gone before anything moved); no run's (it was gone midway)."""


@dataclass(frozen=True)
class CommitRecord:
    """Which run's files become current in an output folder (see the module docstring)."""

    staging: str
    """The staging folder's name inside the output folder."""
    moves: tuple[str, ...]
    """The entries to move in, in order, markers last."""
    markers: dict[str, str] = field(default_factory=dict)
    """Of ``moves``, the completion markers, each with its SHA-256."""
    removes: tuple[str, ...] = ()
    """Entries of earlier runs to remove."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": VERSION,
                "staging": self.staging,
                "moves": list(self.moves),
                "markers": self.markers,
                "removes": list(self.removes),
            },
            indent=1,
        )


def digest(path: Path) -> str:
    """The SHA-256 of a (small) file, as hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def commit(output: Path, record: CommitRecord) -> None:
    """Make the staged entries durable, write ``record`` and roll it forward (the caller holds
    the staging folder's lock). An error before the record is written leaves ``output`` as it
    was; after it, the next :func:`finish_commit` completes the commit."""
    staging = output / record.staging
    for name in record.moves:  # what would stop the moves is found before anything is decided
        if not _real_dir(staging / name) and _real_dir(output / name):
            raise OutputError(f"{output / name}: cannot write: a folder is in the way")
    try:
        for name in record.moves:
            _sync_tree(staging / name)
        _fsync(staging)
        temporary = staging / ".commit.tmp"
        with open(temporary, "w", encoding="utf-8") as fh:
            fh.write(record.to_json())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, output / RECORD)
        _fsync(output)
    except OSError as exc:
        raise OutputError(f"{output}: cannot write: {exc.strerror or exc}") from exc
    try:
        roll_forward(output, record)
    except OutputError as exc:
        exc.add_note(f"the outputs are finished by the next run into {output}, or neardup report on it")
        raise


def pending(output: Path) -> CommitRecord | None:
    """The commit record in ``output``, or None; an unreadable one is an OutputError."""
    path = output / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _bad_record(path, str(exc)) from exc
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise _bad_record(path, f"not a version {VERSION} commit record")
    try:
        record = CommitRecord(
            staging=data["staging"],
            moves=tuple(data["moves"]),
            markers=dict(data["markers"]),
            removes=tuple(data["removes"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad_record(path, f"missing or malformed {exc}") from exc
    names: Sequence[object] = [*record.moves, *record.markers, *record.removes]
    if not (_plain(record.staging) and record.staging.startswith(PREFIX)) or not all(
        _plain(n) and not str(n).startswith(".") for n in names
    ):
        raise _bad_record(path, "it names an entry outside the folder")
    if not all(isinstance(v, str) for v in record.markers.values()):
        raise _bad_record(path, "a marker without its SHA-256")
    if not set(record.markers) <= set(record.moves):
        raise _bad_record(path, "a marker it does not move in")
    return record


def _bad_record(path: Path, why: str) -> OutputError:
    return OutputError(
        f"{path}: not a commit record neardup can read ({why}); remove it and run the command again"
    )


def _plain(name: object) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name


def finish_commit(output: Path) -> Outcome | None:
    """Finish the commit a killed run left in ``output`` (waiting for a live one to end its own);
    None when none is pending. Raises OutputError when the folder cannot be changed."""
    record = pending(output)
    if record is None:
        return None
    with _locked(output / record.staging / OWNER):
        record = pending(output)  # again, now that no writer holds it
        if record is None:
            return None
        return roll_forward(output, record)


@contextmanager
def _locked(owner: Path) -> Iterator[None]:
    try:
        fd = os.open(owner, os.O_RDONLY)
    except OSError:  # no staging folder, or no owner file: no writer to wait for
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def roll_forward(output: Path, record: CommitRecord) -> Outcome:
    """Carry out ``record`` in ``output`` from wherever an earlier attempt stopped (see the module
    docstring); OSErrors become OutputError."""
    staging = output / record.staging
    try:
        if not staging.is_dir():
            return _without_staging(output, record)
        for marker in record.markers:
            if os.path.lexists(staging / marker):  # ours not in yet: the one in place is older
                (output / marker).unlink(missing_ok=True)
        entries = [name for name in record.moves if name not in record.markers]
        for k, name in enumerate(entries):
            _move_in(staging, output, name)
            if k == 0:
                stop_point("outputs-moving")
        for name in record.removes:
            _remove(output / name, staging)
        for marker in record.markers:
            _move_in(staging, output, marker)
        _fsync(output)
        (output / RECORD).unlink(missing_ok=True)
        _fsync(output)
    except OSError as exc:
        where = exc.filename or output
        raise OutputError(f"{where}: cannot finish writing the outputs: {exc.strerror or exc}") from exc
    shutil.rmtree(staging, ignore_errors=True)
    return "finished"


def _move_in(staging: Path, output: Path, name: str) -> None:
    source, target = staging / name, output / name
    if not os.path.lexists(source):
        return  # moved in by an earlier attempt
    if _real_dir(source) and os.path.lexists(target):
        _aside(target, staging)  # one rename cannot replace a folder
        stop_point("outputs-aside")
    os.replace(source, target)


def _remove(path: Path, staging: Path | None) -> None:
    if _real_dir(path):
        if staging is None:
            shutil.rmtree(path)
        else:
            _aside(path, staging)
    else:
        path.unlink(missing_ok=True)


def _aside(path: Path, staging: Path) -> None:
    """Rename ``path`` into the staging folder, which is removed once the commit is done."""
    aside = staging / ASIDE / path.name
    aside.parent.mkdir(exist_ok=True)
    if _real_dir(aside):  # set aside by an attempt that stopped before its rename in
        shutil.rmtree(aside)
    elif os.path.lexists(aside):
        aside.unlink()
    os.replace(path, aside)


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _without_staging(output: Path, record: CommitRecord) -> Outcome:
    """Drop a record whose staging folder is gone, leaving one run's outputs or none."""
    found = {m: digest(output / m) for m in record.markers if (output / m).is_file()}
    outcome: Outcome
    if record.markers and found == record.markers:  # ours in place: every entry was moved
        outcome = "finished"
        gone: Sequence[str] = record.removes
    elif any(found[m] != record.markers[m] for m in found):  # an earlier marker: nothing moved
        outcome, gone = "kept-earlier", ()
    else:
        outcome, gone = "cleared", [*record.moves, *record.removes]
    for name in gone:
        _remove(output / name, None)
    (output / RECORD).unlink(missing_ok=True)
    _fsync(output)
    return outcome


def _sync_tree(path: Path) -> None:
    """fsync a staged file, or every file and folder of a staged folder."""
    if not _real_dir(path):
        _fsync(path)
        return
    for folder, _, files in os.walk(path):
        for name in files:
            _fsync(Path(folder, name))
        _fsync(Path(folder))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
