"""One malloc arena for all of a run's threads (glibc).

glibc gives each thread that allocates an arena of its own, up to eight per core, and memory
freed into one arena is reused by that arena alone. A run's threads (numba's kernel threads,
Arrow's, the read-ahead and writing threads) each allocate and free tens of MB per stage, so
each arena keeps its own high-water mark resident: three of them held 18-23 MB each at the peak
of a run on 100,000 documents. :func:`share_one_arena` caps the arenas at one, so freed memory
is reused whichever thread asks next: peak RSS 350-369 -> 337-350 MB in four alternating runs,
at the same speed (benchmarks/RESULTS.md, section 4). It is for the command, whose threads all
run neardup's own stages; a program that imports neardup keeps its own malloc settings.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the most arenas (``malloc.h``)."""


def share_one_arena() -> bool:
    """Cap glibc's malloc arenas at one, unless ``MALLOC_ARENA_MAX`` or ``GLIBC_TUNABLES`` chose
    already; call before the threads start. Returns whether the cap was set (never off glibc)."""
    if os.environ.get("MALLOC_ARENA_MAX") or "arena_max" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        os.confstr("CS_GNU_LIBC_VERSION")  # raises off glibc
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, 1))
