"""How neardup compiles its kernels, and how it runs them on several threads.

Compile time (a cold start compiles every kernel a run uses): functions that
take arrays and are called from one place are ``inline="always"`` (numba copies
their IR into the caller rather than compiling, linking and re-optimising one
more function); functions of scalars stay plain (``helper``). Helpers only called
from compiled code have no Python or C wrapper (``no_cpython_wrapper``,
``no_cfunc_wrapper``: each wrapper is code that LLVM optimises again in every
caller). Callers pass variables, not integer literals: numba compiles a separate
specialisation for each literal value it sees (``f(x, 0)`` and ``f(x, 1)`` are
two compiles).

Threads: a ``kernel`` releases the GIL (``nogil``), so plain Python threads run
it side by side (``in_threads``, ``in_ranges``) without a ``parallel=True``
kernel, whose compile (parfors) costs seconds. The thread count is numba's
(``numba.set_num_threads``, which ``neardup dedup --workers`` sets).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numba
from numba import njit as njit  # the modules' own njit comes from here: see _prefer_wide_vectors

_F = TypeVar("_F", bound=Callable[..., Any])

WIDE_VECTOR_CPUS = frozenset(
    {
        "icelake-client",
        "icelake-server",
        "tigerlake",
        "rocketlake",
        "sapphirerapids",
        "emeraldrapids",
        "graniterapids",
        "graniterapids-d",
    }
)
"""Intel CPUs (as LLVM names them) with AVX-512 for which LLVM's tuning prefers 256-bit
vectors. Earlier Skylake-based server parts are left out: their clock drops further under
512-bit multiplies."""


def wide_vector_features(cpu_name: str, features: str) -> str | None:
    """The features to compile for on CPU ``cpu_name`` with host features ``features`` (LLVM's
    comma-separated ``+name``/``-name`` list) so that LLVM vectorises with 512-bit registers, or
    None where its own choice stands: the host's plus ``-prefer-256-bit`` on a CPU of
    ``WIDE_VECTOR_CPUS`` with AVX-512. The MinHash kernel, 64-bit products in every lane, folded
    12M shingles in 0.41 s rather than 0.47 s so (benchmarks/RESULTS.md, section 27)."""
    if cpu_name not in WIDE_VECTOR_CPUS or "+avx512f" not in features.split(","):
        return None
    return features + ",-prefer-256-bit"


def _prefer_wide_vectors() -> None:
    """Set numba's CPU features to :func:`wide_vector_features` of this host, unless
    ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES`` (or numba's config file) choose. numba takes them
    for the whole process (and keys its cache by them) when it first compiles or loads a
    function, or rather when the first function is decorated: so every module of neardup takes
    ``njit`` from this one, which makes the choice as it loads, and every process that runs
    neardup's kernels agrees."""
    config: Any = numba.config  # its settings are set at run time, unseen by the type checker
    if config.CPU_NAME is not None or config.CPU_FEATURES is not None:
        return
    from llvmlite import binding  # type: ignore[import-untyped]

    features = wide_vector_features(binding.get_host_cpu_name(), binding.get_host_cpu_features().flatten())
    if features is not None:
        config.CPU_FEATURES = features


_prefer_wide_vectors()

_HELPER: dict[str, Any] = {"cache": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
_KERNEL: dict[str, Any] = {"cache": True, "no_cfunc_wrapper": True, "nogil": True}


def helper(fn: _F) -> _F:
    """``njit`` for a function that only compiled code calls: no Python or C wrapper."""
    return cast(_F, njit(fn, **_HELPER))


def hot_helper(fn: _F) -> _F:
    """``helper`` for a small function called once per byte, token or shingle: LLVM is told to
    inline it (``forceinline``). Left to itself it sometimes does not: the ASCII word reader, one
    call per word, stayed a call, and inlining it made the tokeniser 10% faster."""
    return cast(_F, njit(fn, forceinline=True, **_HELPER))


def kernel(fn: _F) -> _F:
    """``njit`` for a function that Python calls: no C wrapper, and it releases the GIL,
    so Python threads can run it side by side."""
    return cast(_F, njit(fn, **_KERNEL))


def threads() -> int:
    """How many threads a kernel may use: ``numba.get_num_threads()``."""
    return int(numba.get_num_threads())


def set_threads(count: int) -> None:
    """Let the kernels called from this thread use ``count`` threads (at most numba's default).
    numba keeps the count per thread, and a new thread starts with the default, not with the
    count of the thread that started it: a thread that runs kernels for another sets it first."""
    numba.set_num_threads(count)


_pool: tuple[ThreadPoolExecutor, int, int] | None = None  # the pool, its size, its process
_pool_lock = threading.Lock()


def _helpers(count: int) -> ThreadPoolExecutor:
    """A pool of at least ``count`` threads kept for the process: a run makes hundreds of
    parallel calls (one per Arrow chunk of text), and starting threads for each cost a tenth
    of the signature stage. A forked child (whose copy of the pool has no threads) makes its own."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[1] < count or _pool[2] != os.getpid():
            pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="neardup-kernel")
            _pool = (pool, count, os.getpid())
        return _pool[0]


def in_threads(task: Callable[[int], object], parts: int) -> None:
    """``task(0)``, ..., ``task(parts - 1)``, each on a thread of its own when there are several:
    ``task(0)`` on this thread, the others on the process's kernel threads. Tasks must not call
    ``in_threads`` themselves (they run kernels)."""
    if parts <= 1:
        task(0)
        return
    others = [_helpers(parts - 1).submit(task, part) for part in range(1, parts)]
    try:
        task(0)
    finally:
        for done in others:
            done.result()


def in_ranges(task: Callable[[int, int], object], size: int, serial_below: int) -> None:
    """``task(lo, hi)`` over ``range(size)`` cut into one contiguous range per thread
    (a single range, on this thread, when ``size < serial_below``)."""
    parts = 1 if size < serial_below else max(1, min(size, threads()))
    cuts = [size * t // parts for t in range(parts + 1)]
    in_threads(lambda t: task(cuts[t], cuts[t + 1]), parts)


@kernel
def _first_compiled_call() -> int:
    return 0


def load_from_cache_without_registries() -> bool:
    """Let numba load a kernel from its on-disk cache without first loading its registries of
    implementations; returns whether it does (False where numba's cache has changed shape).

    Before loading a cached kernel numba refreshes its target context: it imports about 60 of its
    modules (strings, dictionaries, random generators, linear algebra, ...) and installs their
    typing templates and lowerings, 0.08 s of Python holding the GIL at a run's start, beside the
    line scan and before the first signature. Loading machine code from the cache needs none of
    them, only the runtime (NRT) that allocating kernels call. A kernel that is compiled (a cold
    cache, new argument types) still gets them all: numba's compiler refreshes both contexts
    first, and a lowering it cannot find makes it refresh too. For the command, whose kernels are
    its own; a program that imports neardup keeps numba as it is.
    """
    from numba.core import caching
    from numba.core.runtime.nrt import rtsys

    cache: Any = getattr(caching, "Cache", None)
    shaped = all(
        hasattr(cache, name)
        for name in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
    )
    if cache is None or not shaped or not hasattr(rtsys, "initialize"):
        return False
    if getattr(cache.load_overload, "_without_registries", False):
        return True

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # the guard swallowed an I/O error: compile instead

    load_overload._without_registries = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload
    return True


def set_up_in_background(then: Callable[[], object] | None = None) -> threading.Thread:
    """Start numba's one-time set-up on a thread, followed by ``then()`` when given, and return
    the thread.

    The first compiled function a process calls, even one loaded from the on-disk cache,
    costs about half a second: numba builds its target context (LLVM, the registries of
    its implementations). Started before the input is read, which spends its time in
    pyarrow with the GIL released, that half second overlaps the read.
    """

    def set_up() -> None:
        _first_compiled_call()
        if then is not None:
            then()

    thread = threading.Thread(target=set_up, name="neardup-jit-setup", daemon=True)
    thread.start()
    return thread
