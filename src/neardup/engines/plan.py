"""From a memory limit to the sizes the stages work in.

Each stage's working set (a chunk of text and its signatures, one bucket
partition, the merge windows, a verification chunk) is held to a quarter of
the limit; the rest is left for the interpreter, the compiled kernels, the
source's own batches and the few arrays of one value per document (shingle
counts, lengths, clusters), which no limit can shrink.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from neardup.config import DedupConfig
from neardup.errors import ConfigError

MIN_MEMORY_LIMIT = 64 * 1024
"""Below this the plan's chunks would be single documents; tiny limits only make a run slower."""
PAGE = 4096


def physical_memory() -> int:
    """Bytes of physical memory (0 where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def default_memory_limit() -> int:
    """A quarter of physical memory (1 GiB where it is unknown)."""
    total = physical_memory()
    return total // 4 if total else 1 << 30


@dataclass(frozen=True)
class Plan:
    """Sizes derived from one memory limit; results never depend on them."""

    memory_limit: int
    chunk_rows: int
    """Documents per signature / shingle chunk (at most)."""
    chunk_bytes: int
    """Bytes of UTF-8 text per chunk (at most, but at least one document)."""
    bucket_rows: int
    """Band records (key + document) per bucket partition."""
    merge_values: int
    """Packed pairs held at once while merging the per-partition pair runs."""
    verify_bytes: int
    """Shingle sets and signatures gathered for one verification chunk."""
    read_values: int
    """Values per read when a stage streams a spill file."""
    edge_chunk: int
    """Edges per union-find pass in the clusters stage."""

    @classmethod
    def for_limit(cls, memory_limit: int, config: DedupConfig, bands: int) -> Plan:
        if not isinstance(memory_limit, int) or isinstance(memory_limit, bool):
            raise ConfigError(f"memory_limit must be a whole number of bytes, got {memory_limit!r}")
        if memory_limit < MIN_MEMORY_LIMIT:
            raise ConfigError(
                f"memory_limit must be at least {MIN_MEMORY_LIMIT} bytes (64 KiB), got {memory_limit}"
            )
        stage = memory_limit // 4
        # a chunk row: its signature, band keys (and their transpose), count, length, offsets
        row_bytes = 4 * config.minhash.num_perm + 16 * bands + 64
        return cls(
            memory_limit=memory_limit,
            chunk_rows=max(1, min(1 << 18, stage // row_bytes)),
            # the text is held twice (the source's batch and the combined chunk), next to the
            # source's next batch, read ahead (``source.prefetched``), and the shingle
            # capacity of the verification pass is up to one uint64 per byte
            chunk_bytes=max(1, stage // 12),
            # build_buckets holds about a dozen values of 8 bytes per record at its peak
            bucket_rows=max(16, stage // 112),
            merge_values=max(1024, stage // 24),
            verify_bytes=max(PAGE, stage),
            read_values=max(1024, stage // 32),
            edge_chunk=max(1024, stage // 48),
        )
