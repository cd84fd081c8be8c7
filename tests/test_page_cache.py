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
from neardup.io.page_cache import WINDOW, WriteBehind
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


def test_writeback_starts_a_window_at_a_time_and_pages_go_two_windows_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[int, int]] = []
    real = os.posix_fadvise

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        asked.append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(neardup.io.page_cache.os, "posix_fadvise", record)
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
        assert asked == [(0, w), (w, w), (2 * w, w), (0, w), (3 * w, w), (w, w), (4 * w, w), (2 * w, w)]
        asked.clear()
        behind.close()
        assert asked == [(3 * w, 0)]  # the rest: its writeback started, what is clean dropped
