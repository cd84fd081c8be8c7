"""The memory a run may use: the process's own, and what the limit leaves for the data.

``memory_limit`` is the whole process's. A run first needs :data:`PROCESS_MEMORY` for itself
(the interpreter, pyarrow, numba's LLVM and the loaded kernels), then at least
:data:`MIN_WORK_MEMORY` for its data; a limit below the two together cannot be honoured and is
refused up front, with the figure. What is left above the process is the *work memory*: the
in-memory run's estimate must fit in it, and the streaming engine sizes its chunks, bucket
partitions and merge windows from it (:class:`neardup.engines.plan.Plan`).

>>> budget = MemoryBudget.of("1GB")
>>> budget.limit - budget.work == PROCESS_MEMORY
True
>>> MemoryBudget.of("1GB", work_memory="1MiB").work
1048576
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from neardup.errors import ConfigError
from neardup.sizes import format_size, memory_limit_bytes

PROCESS_MEMORY = 320_000_000
"""Peak resident memory of a run on a handful of rows: 287 MB for ``neardup dedup`` and 313 MB
for ``neardup.dedup`` in a fresh interpreter (Linux x86-64, docs/engine.md, "Memory")."""
MIN_WORK_MEMORY = 100_000_000
"""The least work memory a limit may leave: below it the streaming engine's own fixed costs
(the reader's batches, the mapped spill files' pages) outgrow its chunks."""


PAIR_BYTES = 80
"""Bytes one candidate pair holds in a run in memory, from its finding to the end of the write
stage: the pair and its estimate (24), the exact Jaccard and what verification keeps (41), its
share of the output slices (measured: 75 per pair over 4,000,000 pairs, docs/engine.md, "Memory")."""
BAND_RECORD_BYTES = 32
"""Bytes one document's band in a run in memory holds while the buckets are made: its key, the
sort's copy and index, its place in a bucket."""
ROW_BYTES = 96
"""Bytes per document the run in memory holds after its signatures, whatever its text: the
shingle count, length, cluster, representative and keep flag, and the output columns made of
them."""


def least_memory_limit() -> int:
    """The smallest ``memory_limit`` a run takes: the process's own and the least work memory."""
    return PROCESS_MEMORY + MIN_WORK_MEMORY


@dataclass(frozen=True)
class MemoryBudget:
    """A run's memory limit and the part of it for its data, in bytes."""

    limit: int
    """The whole process's."""
    work: int
    """What the data may take: the limit less the process's own, unless given."""
    work_given: bool = False
    """Whether ``work`` was given (``work_memory``) rather than derived from the limit."""

    @classmethod
    def of(cls, memory_limit: int | str | None, work_memory: int | str | None = None) -> MemoryBudget:
        """The budget of a limit (bytes, a size string, ``None`` for a quarter of RAM) and an
        optional work memory; a limit the process cannot keep to, or a work memory that does not
        fit in it, is a :class:`ConfigError` naming the figures."""
        # on a small machine a quarter of RAM may be below the least limit: the default takes that
        limit = (
            max(memory_limit_bytes(None), least_memory_limit())
            if memory_limit is None
            else memory_limit_bytes(memory_limit)
        )
        if limit < least_memory_limit():
            raise ConfigError(
                f"memory_limit {format_size(limit)} is below what a run needs: at least "
                f"{format_size(least_memory_limit())} (the process itself takes about "
                f"{format_size(PROCESS_MEMORY)}, its data at least {format_size(MIN_WORK_MEMORY)}); "
                "raise memory_limit (work_memory sets the streaming engine's share alone)"
            )
        if work_memory is None:
            return cls(limit=limit, work=limit - PROCESS_MEMORY)
        try:
            work = memory_limit_bytes(work_memory)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("memory_limit", "work_memory", 1)) from None
        if work > limit - PROCESS_MEMORY:
            raise ConfigError(
                f"work_memory {format_size(work)} and the process's own (about "
                f"{format_size(PROCESS_MEMORY)}) do not fit in memory_limit {format_size(limit)}"
            )
        return cls(limit=limit, work=work, work_given=True)


class MemoryLimitError(Exception):
    """A run in memory found, before writing anything, that what it would hold passes its memory
    limit; the job runs again streamed (:func:`neardup.jobs.run_dedup`). Not an error a caller
    sees from a job."""

    def __init__(self, what: str, needed: int, limit: int) -> None:
        self.what = what
        self.needed = needed
        self.limit = limit
        super().__init__(
            f"{what} would take the run in memory to about {format_size(needed)}, past memory_limit "
            f"{format_size(limit)}"
        )


def resident_bytes() -> int:
    """This process's resident memory now, in bytes (0 where the platform does not say)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def release_memory() -> None:
    """Give freed memory back to the system: Arrow's pool and glibc's heap (``malloc_trim``)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    try:
        os.confstr("CS_GNU_LIBC_VERSION")  # raises off glibc
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError, ValueError):
        pass


@dataclass(frozen=True)
class MemoryWatch:
    """The limit a run in memory checks what it is about to hold against, as it finds it.

    >>> MemoryWatch(1 << 40).check("nothing", 0)
    >>> MemoryWatch(1).check("a pair", 80)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neardup.memory.MemoryLimitError: a pair would take the run in memory to about ...
    """

    limit: int

    def check(self, what: str, more: int) -> None:
        """Raise :class:`MemoryLimitError` if the resident memory now and ``more`` bytes pass
        the limit."""
        needed = resident_bytes() + more
        if needed > self.limit:
            raise MemoryLimitError(what, needed, self.limit)
