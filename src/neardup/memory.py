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

from dataclasses import dataclass

from neardup.errors import ConfigError
from neardup.sizes import format_size, memory_limit_bytes

PROCESS_MEMORY = 320_000_000
"""Peak resident memory of a run on a handful of rows: 287 MB for ``neardup dedup`` and 313 MB
for ``neardup.dedup`` in a fresh interpreter (Linux x86-64, docs/engine.md, "Memory")."""
MIN_WORK_MEMORY = 100_000_000
"""The least work memory a limit may leave: below it the streaming engine's own fixed costs
(the reader's batches, the mapped spill files' pages) outgrow its chunks."""


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
