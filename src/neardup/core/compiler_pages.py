"""Hand back the compiler's pages once a run has loaded its kernels.

Loading a kernel from numba's on-disk cache goes through LLVM, whose shared library
(llvmlite's ``libllvmlite.so``, about 180 MB) is mapped into the process. Its start-up and each
load touch code all over it, and the kernel maps the file a whole folio at a time: after the
first load about 100 MB of it count in the process's resident set, nearly a third of what a
run on 100,000 documents in passes holds, though the run never calls LLVM again once its
kernels are loaded.

:func:`release` tells the kernel (``madvise(MADV_DONTNEED)``) that the process no longer needs
the library's read-only, unmodified pages. They are clean pages of a file, so nothing is lost:
they stay in the page cache, and a later call into LLVM (a kernel not loaded yet) faults back
in what it touches. Mappings holding modified pages (the relocated data) are left alone.
Linux only; elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from pathlib import Path

LIBRARY_PREFIXES = ("libllvmlite", "libLLVM")
"""llvmlite's library, and LLVM's own where llvmlite links to it rather than holding it (conda)."""


def _regions(prefixes: tuple[str, ...]) -> list[tuple[int, int]]:
    """``(start, end)`` of this process's read-only mappings of a file whose name starts with one
    of ``prefixes`` that hold no modified (anonymous) page, from ``/proc/self/smaps``."""
    regions: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    with open("/proc/self/smaps", encoding="ascii", errors="replace") as smaps:
        for line in smaps:
            head = line.split(maxsplit=5)
            if not head:
                continue
            if "-" in head[0] and len(head) >= 5:  # a mapping's header line
                current = None
                name = head[5].strip() if len(head) > 5 else ""
                if Path(name).name.startswith(prefixes) and "w" not in head[1]:
                    start, end = (int(part, 16) for part in head[0].split("-"))
                    current = (start, end)
            elif current is not None and head[0] == "Anonymous:":
                if int(head[1]) == 0:
                    regions.append(current)
                current = None
    return regions


_known: dict[tuple[str, ...], list[tuple[int, int]]] = {}
"""The regions found by the last :func:`release` of each set of prefixes: a library's read-only
mappings stay as they are once it is loaded, and reading ``/proc/self/smaps`` again costs 13 ms."""


def release(prefixes: tuple[str, ...] = LIBRARY_PREFIXES) -> int:
    """Drop the clean, read-only pages of the libraries whose names start with one of
    ``prefixes`` (LLVM's, by default) from this process; returns the bytes of address space
    advised (0 where not supported)."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_DONTNEED"):
        return 0
    try:
        regions = _known.get(prefixes) or _regions(prefixes)
        _known[prefixes] = regions
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return 0
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    released = 0
    for start, end in regions:
        if madvise(start, end - start, mmap.MADV_DONTNEED) == 0:
            released += end - start
    return released
