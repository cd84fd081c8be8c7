"""The work directory's identity: which settings and which input its spill files belong to.

``manifest.json`` records the engine's format version, the hash version, the
dedup config, the text column and a fingerprint of the input's first rows. A
run that finds a manifest resumes only if all of these are the same, and
refuses otherwise, so a work directory never mixes two runs' files.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from neardup.config import HASH_VERSION, DedupConfig
from neardup.engines.spill import read_json, write_json
from neardup.errors import ConfigError, InputError, OutputError

MANIFEST = "manifest.json"
LOCK = "lock"
FORMAT = "neardup-external"
VERSION = 1
STAGES: tuple[str, ...] = ("signatures", "candidates", "verify", "clusters")
"""The engine's stages, in order; each keeps its spill files in a directory of that name."""


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


_LEFT_OUT = {"shingle.tokenizer": "builtin", "minhash.sketch": "classic", "lsh.layers": 1}
"""Settings ``DedupConfig.to_dict`` leaves out at these values (those of earlier versions)."""


def _settings_diff(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    a, b = _flatten(theirs), _flatten(ours)
    if "minhash.num_perm" in a:  # a config (not read options): fill in what it left out
        a = {**_LEFT_OUT, **a}
        b = {**_LEFT_OUT, **b}
    return [
        f"{k}: {json.dumps(a.get(k))} there, {json.dumps(b.get(k))} here"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


_HELD: dict[Path, int] = {}
"""Work directories this process holds, and how many ``locked`` blocks hold each."""


@contextmanager
def locked(work_dir: Path) -> Iterator[None]:
    """Hold the work directory for one run; a second run on it fails at once instead of mixing files.

    A block inside another one on the same directory (in this process) shares its lock.
    """
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
        key = work_dir.resolve()
    except OSError as exc:
        raise OutputError(f"cannot use {work_dir} as a work dir: {exc.strerror or exc}") from exc
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    try:
        fd = os.open(work_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot use {work_dir} as a work dir: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"work dir {work_dir} is in use by another run") from None
        _HELD[key] = 1
        try:
            yield
        finally:
            del _HELD[key]
    finally:
        os.close(fd)  # releases the lock


def clear(work_dir: Path) -> None:
    """Remove the engine's files (and nothing else) from a work directory."""
    for stage in STAGES:
        shutil.rmtree(work_dir / stage, ignore_errors=True)
    (work_dir / MANIFEST).unlink(missing_ok=True)


def manifest_for(*, config: DedupConfig, text_column: str, input_print: dict[str, Any]) -> dict[str, Any]:
    """The manifest of a run with these settings on this input."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "hash_version": HASH_VERSION,
        "config": config.to_dict(),
        "text_column": text_column,
        "input": input_print,
    }


_FIX = "use another work dir, or start over in this one (resume=False; on the command line --no-resume)"


def check_input_identity(work_dir: Path, identity: dict[str, Any]) -> None:
    """Refuse (:class:`InputError`) a work dir whose manifest names other input files or read options.

    A cheap check before the input is read; :func:`check` does the whole one.
    """
    theirs = read_json(work_dir / MANIFEST)
    if theirs is None:
        return
    was = theirs.get("input", {})
    if "identity" in was and was["identity"] != identity:
        raise InputError(
            f"work dir {work_dir} was made from other input ({_input_diff(was, identity)}); {_FIX}"
        )


def _input_diff(theirs: dict[str, Any], identity: dict[str, Any] | None) -> str:
    """What differs between the input a work dir was made from and this one, in words."""
    was = theirs.get("identity")
    if isinstance(was, dict) and isinstance(identity, dict) and was != identity:
        then = {f[0]: f for f in was.get("files", [])}
        now = {f[0]: f for f in identity.get("files", [])}
        found = []
        for label, names in (
            ("changed since", [p for p in now if p in then and then[p] != now[p]]),
            ("new", [p for p in now if p not in then]),
            ("gone", [p for p in then if p not in now]),
        ):
            if names:
                shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                found.append(f"{label}: {shown}")
        found += _settings_diff(was.get("read", {}), identity.get("read", {}))
        if found:
            return "; ".join(found)
    return f"its first {theirs.get('rows')} rows differ from this input's"


def check(work_dir: Path, ours: dict[str, Any]) -> bool:
    """True if ``work_dir`` holds a run of the manifest ``ours`` to resume, False if it holds none.

    Raises :class:`ConfigError` (other settings) or :class:`InputError` (other
    input) when it belongs to another run.
    """
    theirs = read_json(work_dir / MANIFEST)
    if theirs is None:
        return False
    where = f"work dir {work_dir}"
    if (theirs.get("format"), theirs.get("version")) != (FORMAT, VERSION):
        raise ConfigError(
            f"{where} was written by another version of the engine "
            f"({theirs.get('format')} {theirs.get('version')}); {_FIX}"
        )
    if theirs.get("hash_version") != HASH_VERSION:
        raise ConfigError(
            f"{where} was made with hash version {theirs.get('hash_version')}, "
            f"this neardup uses {HASH_VERSION}; {_FIX}"
        )
    diff = _settings_diff(theirs.get("config", {}), ours["config"])
    if theirs.get("text_column") != ours["text_column"]:
        was = json.dumps(theirs.get("text_column"))
        diff.append(f"text_column: {was} there, {json.dumps(ours['text_column'])} here")
    if diff:
        raise ConfigError(f"{where} was made with other settings ({'; '.join(diff)}); {_FIX}")
    was_input = theirs.get("input", {})
    if was_input != ours["input"]:
        detail = _input_diff(was_input, ours["input"].get("identity"))
        raise InputError(f"{where} was made from other input ({detail}); {_FIX}")
    return True


def open_work_dir(
    work_dir: Path,
    *,
    config: DedupConfig,
    text_column: str,
    input_print: dict[str, Any],
    resume: bool,
) -> bool:
    """Make ``work_dir`` ready for this run; True if it holds an earlier run's work to resume.

    Raises :class:`ConfigError` (other settings) or :class:`InputError` (other
    input) when ``resume`` is on and the directory belongs to another run.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    ours = manifest_for(config=config, text_column=text_column, input_print=input_print)
    if resume and check(work_dir, ours):
        return True
    clear(work_dir)
    write_json(work_dir / MANIFEST, ours)
    return False
