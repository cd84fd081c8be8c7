"""An output file's pages handed back to the system as it grows, rather than left in its page cache.

A run writes its outputs once and never reads them: 0.5 GB for 100,000 documents of ~300 words,
5 GB for a million. Left in the page cache, every page written takes a fresh page of memory, which
costs more than the copy into it where a virtual machine's memory is mapped on first touch (4 GiB
took 9-11 s on the benchmark machine, against 1.1 s into pages just freed and 1.9-2.0 s written
behind), and it pushes out pages worth keeping, such as the input's.

:class:`WriteBehind` asks the kernel to start writing each window of the file to disk once it is
written (``posix_fadvise(DONTNEED)`` on dirty pages starts their writeback without waiting for
it) and, from two windows later on, to drop those pages once they are clean (the same call on
clean pages frees them), so the file reuses a few windows' worth of pages. Nothing waits for the
disk: a page still being written is simply not dropped yet, and is asked for again with the
next windows (``RETRIES`` times), since a page asked for only once stayed cached whenever its
writeback had not finished by then. Where ``posix_fadvise`` is missing (not Linux), it does
nothing.

200 MB written in 2 MiB writes on the benchmark machine, pages new to the process each time
(benchmarks/RESULTS.md, section 25): 0.30-0.50 s left in the page cache, 0.17-0.24 s with 8 MiB
windows each dropped once, 0.06-0.09 s as here.
"""

from __future__ import annotations

import mmap
import os
from contextlib import suppress
from pathlib import Path

import numpy as np

WINDOW = 2 << 20
"""Bytes per window: writeback starts once a window is complete."""
BEHIND = 2
"""Windows between the start of a window's writeback and the first request to drop its pages."""
RETRIES = 16
"""Windows over which a window's pages are asked for again, if still cached."""


class WriteBehind:
    """Writeback and release of ``path``'s pages as it grows; call :meth:`wrote` after each write
    and :meth:`close` at the end (which starts the rest's writeback)."""

    def __init__(self, path: Path) -> None:
        self._fd: int | None = None
        self._started = 0  # bytes whose writeback has been asked for
        self._floor = 0  # bytes before this are no longer asked for
        if hasattr(os, "posix_fadvise"):
            try:
                self._fd = os.open(path, os.O_RDONLY)
            except OSError:
                self._fd = None

    def wrote(self) -> None:
        """The file has grown: start the writeback of its complete windows, and drop the pages
        of those ``BEHIND`` windows back and of the ``RETRIES`` windows before them."""
        if self._fd is None:
            return
        size = os.fstat(self._fd).st_size
        if size - self._started < WINDOW:
            return
        while size - self._started >= WINDOW:
            self._advise(self._started, WINDOW)
            self._started += WINDOW
        end = self._started - BEHIND * WINDOW
        if end > self._floor:
            self._floor = max(self._floor, end - RETRIES * WINDOW)
            self._advise(self._floor, end - self._floor)

    def close(self) -> None:
        """Start the writeback of what is left, and drop what is clean."""
        if self._fd is None:
            return
        self._advise(self._floor, 0)  # 0: to the end of the file
        os.close(self._fd)
        self._fd = None

    def _advise(self, offset: int, length: int) -> None:
        if self._fd is None:
            return
        try:
            os.posix_fadvise(self._fd, offset, length, os.POSIX_FADV_DONTNEED)
        except OSError:  # a file system without it: the pages stay, as they would have
            os.close(self._fd)
            self._fd = None


def release_mapped(*arrays: np.ndarray) -> None:
    """Drop the pages of the files that ``arrays`` map (``numpy.memmap``; others are skipped)
    from this process's resident memory: they stay in the page cache, and a later read maps them
    again. A stage that reads a map slice by slice calls this after each slice, so the pages it
    read do not add up to the file's size."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    for array in arrays:
        mapped = getattr(array, "_mmap", None)  # numpy.memmap's mapping, shared by its slices
        if isinstance(mapped, mmap.mmap):
            with suppress(OSError, ValueError):  # closed, or a platform without it
                mapped.madvise(mmap.MADV_DONTNEED)
