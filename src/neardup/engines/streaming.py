"""Dedup input files larger than memory: read as a stream, decided by the external engine,
written a batch at a time.

A :class:`StreamingRun` holds a work directory for one run of ``neardup dedup``:

1. :meth:`~StreamingRun.read` scans the inputs (:func:`neardup.io.stream.scan`: the
   same checks, skipped records and errors as reading them into memory) and copies
   every file but Parquet into ``input/`` under the work dir;
2. :meth:`~StreamingRun.dedup` runs :func:`~neardup.engines.dedup_external` over the
   text column, resumably;
3. :meth:`~StreamingRun.write` writes the six output tables into an
   :class:`~neardup.io.OutputDir`: ``annotated``, ``deduped`` and ``duplicates`` in a
   last pass over the input, the others from the engine's spill files in slices. They
   hold exactly the rows and values the in-memory run writes.

Held in memory per document: its id (when an id column is given), the engine's arrays
(shingle count, cluster, representative, keep flag) and a keep flag of the id check.

:func:`fits_in_memory` is the rule that decides between this and the in-memory run.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from types import TracebackType
from typing import Any

from neardup.config import DedupConfig
from neardup.engines import manifest
from neardup.engines.external import ExternalResult, dedup_external
from neardup.engines.manifest import check_input_identity, locked, manifest_for
from neardup.engines.plan import MIN_MEMORY_LIMIT, Plan
from neardup.engines.source import fingerprint, prefetched
from neardup.errors import ConfigError, InputError
from neardup.io import OutputDir, ReadOptions, expand_inputs
from neardup.io.inputs import detect_format
from neardup.io.stream import CorpusStream, file_stamps, read_options_facts, scan
from neardup.memory import least_memory_limit
from neardup.outputs import write_outputs
from neardup.pipeline import Progress
from neardup.sizes import format_size

WORK_DIR_NAME = ".neardup-work"
"""The default work directory's name, inside the output directory."""
INPUT_DIR = "input"

HELD_PER_DOCUMENT = 128
"""Bytes held per document whatever the chunks (the engine's arrays, the id check's flag; an id
column's values come on top): a work memory derived from the limit leaves this out of the
engine's share."""
IN_MEMORY_FACTOR = 7
"""Peak memory of the in-memory run per byte of (uncompressed) input, above the process's own:
the table, its text as one batch, signatures, the output tables and the writers' buffers.
Measured with the CLI (``benchmarks/RESULTS.md``, "Corpora larger than memory"): 6.1 on JSON
Lines, 6.5 on Parquet (per byte of the same records as JSON Lines)."""
IN_MEMORY_BASE = least_memory_limit()
"""What a run holds before its data counts: the process's own and the least work memory (the
readers' blocks, the writers' buffers); see :mod:`neardup.memory`."""
EXPANSION = {"gzip": 4, "parquet": 2}
"""Bytes of input per byte of file: gzip and Parquet files are compressed (Parquet with snappy
held 1.7 bytes of JSON Lines per byte in the measurement above)."""


def input_bytes(paths: Sequence[Path]) -> int:
    """Estimated bytes of the inputs once decompressed: gzip files count 4x, Parquet files 2x."""
    total = 0
    for path in paths:
        fmt = detect_format(path)
        factor = EXPANSION["gzip"] if fmt.gzip else EXPANSION["parquet"] if fmt.family == "parquet" else 1
        with suppress(OSError):  # reading reports it
            total += path.stat().st_size * factor
    return total


def in_memory_estimate(paths: Sequence[Path]) -> int:
    """Estimated peak memory of deduplicating ``paths`` in memory."""
    return IN_MEMORY_BASE + IN_MEMORY_FACTOR * input_bytes(paths)


def fits_in_memory(paths: Sequence[Path], memory_limit: int) -> bool:
    """Whether the in-memory run should stay within ``memory_limit`` bytes on these files."""
    return in_memory_estimate(paths) <= memory_limit


def batch_bytes_for(memory_limit: int) -> int:
    """Bytes of input per batch read: a 32nd of the limit, between 16 KiB and 64 MiB."""
    return min(64 << 20, max(16 << 10, memory_limit // 32))


class StreamingRun:
    """One streaming run of ``neardup dedup`` in a work directory, held for the run (``with``).

    On success call :meth:`remove_work_dir`; after a failure the work dir stays,
    and the same run started again resumes: the cached inputs whose files did not
    change are kept, the engine goes on from its last commit.
    """

    def __init__(
        self,
        inputs: Sequence[str | Path],
        options: ReadOptions,
        config: DedupConfig,
        *,
        work_dir: Path,
        memory_limit: int,
        resume: bool = True,
        held_per_document: int = 0,
    ) -> None:
        self.inputs = list(inputs)
        self.options = options
        self.config = config
        self.work_dir = work_dir
        self.memory_limit = memory_limit
        self.resume = resume
        self.held_per_document = held_per_document
        self.batch_bytes = batch_bytes_for(memory_limit)
        self.seconds: dict[str, float] = {}
        self.stream: CorpusStream | None = None
        self.result: ExternalResult | None = None
        self.owned = False
        """True once the work dir is known to hold this run's work (or none): what a failure after
        that leaves there, the same run started again takes up."""
        self._stack = ExitStack()
        self._identity: dict[str, Any] = {}
        Plan.for_limit(memory_limit, config, 1)  # a limit the engine refuses is refused first

    def __enter__(self) -> StreamingRun:
        self._stack.enter_context(locked(self.work_dir))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stack.close()

    def read(self, progress: Progress | None = None) -> CorpusStream:
        """Scan the inputs (reusing what an interrupted run cached); their rows as a stream."""
        t0 = time.perf_counter()
        cache = self.work_dir / INPUT_DIR
        paths = expand_inputs(self.inputs)
        self._identity = {"files": file_stamps(paths), "read": read_options_facts(self.options)}
        if self.resume:
            check_input_identity(self.work_dir, self._identity)
        else:
            manifest.clear(self.work_dir)
            shutil.rmtree(cache, ignore_errors=True)
        self.owned = True
        stream = scan(
            self.inputs, self.options, cache_dir=cache, batch_bytes=self.batch_bytes, progress=progress
        )
        if self.resume:
            input_print = {**fingerprint(stream.texts, stream.text_column), "identity": self._identity}
            ours = manifest_for(config=self.config, text_column=stream.text_column, input_print=input_print)
            try:
                manifest.check(self.work_dir, ours)
            except (ConfigError, InputError):
                self.owned = False
                raise
        self.stream = stream
        self.seconds["read"] = time.perf_counter() - t0
        return stream

    @property
    def read_resumed(self) -> bool:
        """Whether the scan took cached inputs from an interrupted run."""
        return self.stream is not None and self.stream.reused > 0

    def dedup(self, progress: Progress | None = None) -> ExternalResult:
        """Run the engine over the text column (going on from an interrupted run's last commit)."""
        stream = self._stream()
        report = progress or (lambda stage, done, total: None)

        def on_progress(stage: str, done: int, total: int) -> None:
            # the engine does not know the row count while it reads; the scan does
            report(stage, done, (total or stream.rows) if stage in ("signatures", "shingles") else total)

        self.result = dedup_external(
            stream.texts,
            self.config,
            work_dir=self.work_dir,
            memory_limit=self._engine_memory(stream.rows),
            text_column=stream.text_column,
            progress=on_progress,
            resume=self.resume,
            input_identity=self._identity,
        )
        return self.result

    def _engine_memory(self, rows: int) -> int:
        """The engine's share: the work memory less what ``rows`` documents hold whatever the
        chunks (with ``held_per_document``); too little left is a ConfigError with the figure."""
        held = self.held_per_document * rows
        if self.memory_limit - held >= MIN_MEMORY_LIMIT:
            return self.memory_limit - held
        raise ConfigError(
            f"{rows:,} documents hold about {format_size(held)} in memory whatever the chunks, more "
            f"than the work memory ({format_size(self.memory_limit)}: memory_limit less the process's "
            "own) leaves the engine; raise memory_limit"
        )

    def write(self, target: OutputDir, fmt: str, progress: Progress | None = None) -> None:
        """Write the six output tables into ``target`` (open), as the in-memory run writes them."""
        stream, result = self._stream(), self.result
        if result is None:
            raise RuntimeError("call dedup() before write()")
        t0 = time.perf_counter()
        write_outputs(
            target,
            fmt,
            inputs=prefetched(stream.tables()),
            schema=stream.schema,
            ids=stream.ids(),
            result=result,
            max_items=max(1024, self.memory_limit // 256),
            progress=progress,
        )
        self.seconds["write"] = time.perf_counter() - t0

    def _stream(self) -> CorpusStream:
        if self.stream is None:
            raise RuntimeError("call read() first")
        return self.stream

    def stages_resumed(self) -> list[str]:
        """The stages (``read`` and the engine's) that took work from an interrupted run."""
        out = ["read"] if self.read_resumed else []
        return out + (list(self.result.resumed) if self.result is not None else [])

    def remove_work_dir(self) -> None:
        """Remove the run's files from the work dir, and the directory itself once empty."""
        manifest.clear(self.work_dir)
        shutil.rmtree(self.work_dir / INPUT_DIR, ignore_errors=True)
        (self.work_dir / manifest.LOCK).unlink(missing_ok=True)
        with suppress(OSError):  # it holds files of the user's own
            self.work_dir.rmdir()
