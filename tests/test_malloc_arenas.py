"""The command's threads share one malloc arena (``neardup.core.malloc_arenas``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(os, "confstr") or "CS_GNU_LIBC_VERSION" not in os.confstr_names, reason="glibc only"
)

THREADS_ALLOCATE = r"""
import ctypes, os, sys, threading
from neardup.core.malloc_arenas import share_one_arena
print(share_one_arena() if sys.argv[1] == "one" else "-", flush=True)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
together = threading.Barrier(4)
def allocate():
    pointer = libc.malloc(4096)
    together.wait()  # all alive at once: none can take over an arena another left
    libc.free(pointer)
libc.malloc_stats()  # the arenas so far (the imports' threads may have made some)
sys.stderr.flush()
libc.fflush(None)
os.write(2, b"-- threads\n")
threads = [threading.Thread(target=allocate) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc.malloc_stats()  # one "Arena N:" section per arena, on standard error
"""


def arenas(mode: str, **env: str) -> tuple[str, int, int]:
    """What ``share_one_arena`` returned, and the arenas before and after four threads allocate."""
    done = subprocess.run(
        [sys.executable, "-c", THREADS_ALLOCATE, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    before, after = done.stderr.split("-- threads\n")
    return done.stdout.strip(), *(
        sum(line.startswith("Arena ") for line in s.splitlines()) for s in (before, after)
    )


def test_threads_share_one_arena_once_it_is_set() -> None:
    printed, before, after = arenas("many")
    assert printed == "-" and after == before + 4  # one more per thread
    printed, before, after = arenas("one")
    assert printed == "True" and after == before


def test_a_users_own_setting_stands() -> None:
    printed, _, after = arenas("one", MALLOC_ARENA_MAX="2")
    assert printed == "False" and after == 2
