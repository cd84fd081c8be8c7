"""Output files hand their pages back as they grow (``neardup.io.page_cache``)."""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import neardup.io.page_cache
from neardup.io.page_cache import BEHIND, RETRIES, WINDOW, WriteBehind
from neardup.io.writers import TableWriter

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")


def resident_share(path: Path) -> float:
    """The share of ``path``'s pages in the page cache (``mincore`` over a mapping of it)."""
    size = path.stat().st_size
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    pages = -(-size // mmap.PAGESIZE)
    vec = np.zeros(pages, np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value)
        try:
            assert libc.mincore(addr, size, vec.ctypes.data) == 0, os.strerror(ctypes.get_errno())
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return float((vec & 1).mean())


def write_lines(path: Path, megabytes: int, *, behind: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not behind:
        monkeypatch.setattr(neardup.io.page_cache.os, "posix_fadvise", lambda *a: None)
    line = b'{"text": "' + b"x" * 1000 + b'"}\n'
    piece = line * ((1 << 20) // len(line))
    with TableWriter(path, "jsonl", pa.schema([])) as writer:
        for _ in range(megabytes):
            writer.write_lines(piece, piece.count(b"\n"))
        assert writer._fh is not None
        writer._fh.flush()
        os.fsync(writer._fh.fileno())  # every page clean: what close() drops no longer depends on the disk


def test_a_file_written_behind_leaves_its_pages_to_the_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_lines(tmp_path / "kept.jsonl", 48, behind=False, monkeypatch=monkeypatch)
    if resident_share(tmp_path / "kept.jsonl") < 0.9:
        pytest.skip("this file system does not keep written pages cached")
    monkeypatch.undo()
    write_lines(tmp_path / "behind.jsonl", 48, behind=True, monkeypatch=monkeypatch)
    assert resident_share(tmp_path / "behind.jsonl") < 0.1
    assert (tmp_path / "behind.jsonl").read_bytes() == (tmp_path / "kept.jsonl").read_bytes()


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    asked: list[tuple[int, int]] = []
    real = os.posix_fadvise

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        asked.append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(neardup.io.page_cache.os, "posix_fadvise", record)
    return asked


def test_writeback_starts_a_window_at_a_time_and_pages_go_two_windows_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _recorded(monkeypatch)
    path = tmp_path / "out.bin"
    with open(path, "wb") as fh:
        behind = WriteBehind(path)
        fh.write(b"x" * (WINDOW - 1))
        fh.flush()
        behind.wrote()
        assert asked == []  # no window complete yet
        fh.write(b"x" * (4 * WINDOW + 1))
        fh.flush()
        behind.wrote()
        w = WINDOW
        # each complete window's writeback, then the pages of all but the last two
        assert asked == [(0, w), (w, w), (2 * w, w), (3 * w, w), (4 * w, w), (0, 3 * w)]
        asked.clear()
        behind.close()
        assert asked == [(0, 0)]  # the rest: its writeback started, what is clean dropped


def test_pages_still_cached_are_asked_for_again_with_later_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window's pages that were still being written when first asked for are asked for again
    as the file grows (a page asked for once stayed cached if its writeback had not finished),
    for RETRIES windows, and no longer after."""
    asked = _recorded(monkeypatch)
    path = tmp_path / "out.bin"
    w = WINDOW
    drops: list[tuple[int, int]] = []
    with open(path, "wb") as fh:
        behind = WriteBehind(path)
        for k in range(1, BEHIND + RETRIES + 4):
            fh.write(b"x" * w)
            fh.flush()
            asked.clear()
            behind.wrote()
            assert asked[0] == ((k - 1) * w, w)  # this window's writeback
            drops.append(asked[1] if len(asked) > 1 else (-1, -1))
        behind.close()
    for k, (offset, length) in enumerate(drops, start=1):
        end = (k - BEHIND) * w
        if end <= 0:
            assert offset == -1  # nothing two windows back yet
        else:
            assert offset + length == end  # up to two windows back
            assert offset == max(0, end - RETRIES * w)  # and RETRIES windows before that again
