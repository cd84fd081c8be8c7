"""Spill files: append-only arrays on disk with a commit point, and ways to read them back.

A stage keeps its results in one directory of flat binary files (raw little-endian
arrays, no header; the file name's suffix names the dtype) and a ``progress.json``
that records, at each commit, how many bytes of every file are final and the stage's
own state. Reopening the directory truncates every file to its committed size, so a
crash loses only the work after the last commit. Commits are atomic (temporary name,
then rename) but not fsync'ed: they survive a crashed or killed process, and a file
found shorter than its commit (power loss) restarts the stage.
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from neardup.core.sorting import sorted_unique
from neardup.errors import OutputError

PROGRESS = "progress.json"
FORMAT_VERSION = 1

DTYPES: dict[str, np.dtype[Any]] = {
    "u8": np.dtype(np.uint8),
    "i32": np.dtype("<i4"),
    "u32": np.dtype("<u4"),
    "i64": np.dtype("<i8"),
    "u64": np.dtype("<u8"),
    "f64": np.dtype("<f8"),
    "bool": np.dtype(np.bool_),
}


def dtype_of(name: str) -> np.dtype[Any]:
    """The dtype a spill file holds, from its suffix (``keys.u64`` -> uint64)."""
    return DTYPES[name.rsplit(".", 1)[1]]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` atomically: a reader sees the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None if there is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None


class Journal:
    """Append-only spill files in one directory, with a commit point.

    ``state`` is the stage's own record of how far it got (rows read, partitions
    done, ...); it is saved with the file sizes by :meth:`commit`.
    """

    def __init__(self, directory: Path, files: Iterable[str]) -> None:
        self.directory = directory
        self.names = list(files)
        self.state: dict[str, Any] = {}
        self.done = False
        self.seconds = 0.0
        self.starts = 0
        self._handles: dict[str, IO[bytes]] = {}
        self._sizes: dict[str, int] = dict.fromkeys(self.names, 0)
        directory.mkdir(parents=True, exist_ok=True)
        saved = read_json(directory / PROGRESS)
        if saved is not None and saved.get("version") == FORMAT_VERSION and self._intact(saved):
            self.state = dict(saved["state"])
            self.done = bool(saved["done"])
            self.seconds = float(saved["seconds"])
            self.starts = int(saved["starts"])
            self._sizes = {n: int(saved["sizes"][n]) for n in self.names}
        if not self.done:
            for name in self.names:  # drop whatever was written after the last commit
                with open(self.path(name), "ab") as fh:
                    fh.truncate(self._sizes[name])

    def _intact(self, saved: dict[str, Any]) -> bool:
        sizes = saved.get("sizes", {})
        for name in self.names:
            if name not in sizes:
                return False
            p = self.path(name)
            if (p.stat().st_size if p.exists() else -1) < int(sizes[name]):
                return False
        return True

    def path(self, name: str) -> Path:
        return self.directory / name

    def count(self, name: str) -> int:
        """Committed plus appended values of one file."""
        return self._sizes[name] // dtype_of(name).itemsize

    def append(self, name: str, values: np.ndarray) -> None:
        """Write ``values`` (converted to the file's dtype) at the end of file ``name``."""
        data = np.ascontiguousarray(values, dtype=dtype_of(name))
        try:
            handle = self._handles.get(name)
            if handle is None:
                handle = self._handles[name] = open(self.path(name), "ab")  # noqa: SIM115 (closed in commit)
            handle.write(data.data.cast("B"))
        except OSError as exc:
            raise OutputError(f"cannot write {self.path(name)}: {exc.strerror or exc}") from exc
        self._sizes[name] += data.nbytes

    def commit(self, *, seconds: float = 0.0, done: bool = False, **state: Any) -> None:
        """Make everything appended so far final, with the updated ``state``."""
        self.state.update(state)
        self.seconds += seconds
        self.done = self.done or done
        try:
            for handle in self._handles.values():
                handle.flush()
            write_json(
                self.directory / PROGRESS,
                {
                    "version": FORMAT_VERSION,
                    "done": self.done,
                    "sizes": self._sizes,
                    "state": self.state,
                    "seconds": self.seconds,
                    "starts": self.starts,
                },
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write to the work dir {self.directory}: {exc.strerror or exc}"
            ) from exc
        if done:
            self.close()

    def begin(self) -> None:
        """Count one more (re)start of the stage's work."""
        self.starts += 1
        self.commit()

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # what was not committed is cut off when the directory is opened again


def read_values(path: Path, start: int, count: int) -> np.ndarray:
    """Values ``[start, start + count)`` of a spill file, read (not mapped) into memory."""
    dtype = dtype_of(path.name)
    out = np.empty(count, dtype=dtype)
    if count:
        with open(path, "rb") as fh:
            fh.seek(start * dtype.itemsize)
            got = fh.readinto(out.data.cast("B"))
        if got != out.nbytes:
            raise OutputError(f"{path} is shorter than its record says; start over (resume=False)")
    return out


def load(path: Path, count: int | None = None) -> np.ndarray:
    """A whole spill file (or its first ``count`` values) in memory."""
    if count is None:
        count = path.stat().st_size // dtype_of(path.name).itemsize
    return read_values(path, 0, count)


def memmap(path: Path, count: int, width: int | None = None) -> np.ndarray:
    """A read-only memory map of the first ``count`` values (rows of ``width``) of a spill file."""
    dtype = dtype_of(path.name)
    shape: tuple[int, ...] = (count,) if width is None else (count, width)
    if count == 0:
        return np.empty(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


class Mapped:
    """A read-only map of a spill file whose touched pages can be given back.

    Pages of a mapped file count in the process's resident memory while they are
    mapped; :meth:`release` drops them (they stay in the page cache), so random
    reads of a file larger than memory stay within a chunk's worth of pages.
    """

    def __init__(self, path: Path, count: int, width: int = 1) -> None:
        dtype = dtype_of(path.name)
        self._mm: mmap.mmap | None = None
        if count == 0:
            self.array: np.ndarray = np.empty((0, width), dtype=dtype)
        else:
            with open(path, "rb") as fh:
                self._mm = mmap.mmap(fh.fileno(), count * width * dtype.itemsize, access=mmap.ACCESS_READ)
            self.array = np.frombuffer(self._mm, dtype=dtype).reshape(count, width)
        if width == 1:
            self.array = self.array.reshape(-1)

    def release(self) -> None:
        if self._mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            self._mm.madvise(mmap.MADV_DONTNEED)


def merge_unique(path: Path, bounds: list[int], window: int) -> Iterator[np.ndarray]:
    """The sorted unique values of sorted runs, in ascending pieces.

    Run ``i`` is values ``[bounds[i], bounds[i + 1])`` of the spill file ``path``.
    At most about ``window`` values are held at once: each run is read a window
    at a time, and a piece takes every buffered value up to the smallest last
    value among the runs that still have values on disk, which no later read
    can undercut.
    """
    todo = [[lo, hi] for lo, hi in itertools.pairwise(bounds) if hi > lo]
    dtype = dtype_of(path.name)
    buffers = [np.empty(0, dtype=dtype) for _ in todo]
    per_run = max(1, window // max(1, len(todo)))
    while True:
        for i, run in enumerate(todo):
            need = min(per_run - buffers[i].size, run[1] - run[0])
            if need > 0:
                more = read_values(path, run[0], need)
                run[0] += need
                buffers[i] = np.concatenate((buffers[i], more)) if buffers[i].size else more
        live = [i for i, b in enumerate(buffers) if b.size]
        if not live:
            return
        unread = [buffers[i][-1] for i in live if todo[i][0] < todo[i][1]]
        parts = []
        for i in live:
            k = buffers[i].size if not unread else int(np.searchsorted(buffers[i], min(unread), side="right"))
            parts.append(buffers[i][:k])
            buffers[i] = buffers[i][k:]
        yield sorted_unique(np.concatenate(parts))
