"""Byte ranges of a file (its records' lines) read into one buffer, a few large reads at a time."""

from __future__ import annotations

import os

import numpy as np

from neardup.core.jit import hot_helper, kernel

READ_THROUGH = 1 << 13
"""Bytes between two ranges that are read (and dropped) rather than sought over: one read
costs about what copying this much does."""
READ_BYTES = 1 << 24
"""At most this many bytes in one read (more only for one range longer than that)."""


@hot_helper
def copy_bytes(out: np.ndarray, at: int, src: np.ndarray, lo: int, n: int) -> None:
    """``out[at:at + n] = src[lo:lo + n]`` (``n`` >= 0), as a loop over unsigned indices, which
    LLVM makes a vectorised copy: numba's slice assignment copied lines 2.4 times slower."""
    a = np.uint64(at)
    b = np.uint64(lo)
    for k in range(np.uint64(n)):
        out[a + k] = src[b + k]


@kernel
def _runs(starts: np.ndarray, ends: np.ndarray, gap: int, most: int) -> np.ndarray:
    """Where each read begins: ranges in file order, less than ``gap`` bytes apart and
    ``most`` bytes from the first's start to the last's end, share one; the last value is the
    number of ranges."""
    firsts = np.empty(starts.size + 1, dtype=np.int64)
    count = 0
    for k in range(starts.size):
        if (
            k == 0
            or starts[k] < ends[k - 1]
            or starts[k] - ends[k - 1] > gap
            or ends[k] - starts[firsts[count - 1]] > most
        ):
            firsts[count] = k
            count += 1
    firsts[count] = starts.size
    return firsts[: count + 1]


@kernel
def _copy_ranges(
    buf: np.ndarray, base: int, starts: np.ndarray, ends: np.ndarray, out: np.ndarray, pos: int
) -> int:
    """``buf`` holds the file from byte ``base``: copy each range of it, and a newline after
    it, into ``out`` from ``pos``; returns the position after the last."""
    for k in range(starts.size):
        lo = starts[k] - base
        size = ends[k] - starts[k]
        copy_bytes(out, pos, buf, lo, size)
        pos += size
        out[pos] = 10
        pos += 1
    return pos


def read_ranges(fd: int, spans: np.ndarray) -> np.ndarray | None:
    """The bytes ``[start, end)`` of each row of ``spans`` (int64, two columns) of the open file
    ``fd``, each followed by a newline, in the rows' order; None if the file ends before a range
    does. Ranges close together in the file are read together, so a few thousand lines cost a
    few reads, not one each."""
    starts = np.ascontiguousarray(spans[:, 0], dtype=np.int64)
    ends = np.ascontiguousarray(spans[:, 1], dtype=np.int64)
    out = np.empty(int((ends - starts).sum()) + starts.size, dtype=np.uint8)
    if starts.size == 0:
        return out
    firsts = _runs(starts, ends, READ_THROUGH, READ_BYTES)
    longest = int((ends[firsts[1:] - 1] - starts[firsts[:-1]]).max())
    buf = np.empty(longest, dtype=np.uint8)
    pos = 0
    for a, b in zip(firsts[:-1].tolist(), firsts[1:].tolist(), strict=True):
        base = int(starts[a])
        size = int(ends[b - 1]) - base
        one = b == a + 1  # one range: read straight into its place
        if not read_exactly(fd, out[pos : pos + size] if one else buf[:size], base):
            return None
        if one:
            out[pos + size] = 10
            pos += size + 1
        else:
            pos = _copy_ranges(buf, base, starts[a:b], ends[a:b], out, pos)
    return out


def read_exactly(fd: int, into: np.ndarray, offset: int) -> bool:
    """Fill ``into`` from byte ``offset`` of ``fd``; False if the file ends first."""
    done = 0
    while done < into.size:
        got = os.preadv(fd, [into[done:].data], offset + done)
        if got == 0:
            return False
        done += got
    return True
