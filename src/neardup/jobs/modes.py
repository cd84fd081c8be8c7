"""The three places a dedup job runs: in memory, one JSON Lines file read in passes, streamed
through a work dir. Each reads, decides, writes into an :class:`~neardup.io.OutputDir` and
returns the figures of ``summary.json``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from neardup.config import DedupConfig
from neardup.core.text import TextBatch
from neardup.errors import InputError, OutputError, StorageError
from neardup.faults import stop_point
from neardup.io import Corpus, OutputDir, ReadOptions, default_output_format
from neardup.io._common import WholeReadNeededError
from neardup.io.jsonl_passes import JsonlPasses, least_memory_in_passes, takes
from neardup.jobs.events import RunEvents
from neardup.jobs.summary import engine_without_work_dir, summary_of
from neardup.memory import release_memory

if TYPE_CHECKING:
    from neardup.index import LSHIndex
    from neardup.jobs.dedup import DedupJob
    from neardup.memory import MemoryBudget, MemoryWatch

WRITE_ITEMS = 1 << 16
"""Ids per slice of clusters / candidate_pairs / lsh_buckets. Small: these tables are written
beside the row tables (:class:`~neardup.outputs.GraphTables`), and each slice's formatting holds
a few hundred bytes per id at once (1 << 20 raised a run's peak RSS by 30-60 MB, 1 << 16 by a
few, at the same speed: benchmarks/RESULTS.md, section 19)."""
PASS_ROWS = 4096
"""Documents per signatures call in a run that reads its input in passes."""
PASS_BYTES = 16 << 20
"""And at most about this many bytes of them."""
PASS_WRITE_ROWS = 2048
"""Input rows per output piece there: fewer rows in flight."""
PASS_WRITE_BYTES = 8 << 20
"""And at most about this many bytes of them."""


def in_memory(
    corpus: Corpus,
    *,
    config: DedupConfig,
    job: DedupJob,
    memory_limit: int,
    events: RunEvents,
    read_seconds: float,
    index: LSHIndex | None = None,
    watch: MemoryWatch | None = None,
) -> dict[str, Any]:
    """The run over a corpus held in memory, read in ``read_seconds`` (against ``index`` when
    given). With ``watch``, raises :class:`~neardup.memory.MemoryLimitError` before writing
    anything when what the run would hold passes the watch's limit."""
    from neardup.incremental import AgainstResult, add_kept, dedup_against
    from neardup.outputs import against_tables, write_outputs
    from neardup.pipeline import arrow_to_batch, arrow_to_batches, find_duplicates

    t0 = time.perf_counter() - read_seconds
    events.shape(config)
    events.skipped(corpus.skipped)
    fmt = job.output_format or default_output_format(corpus.family)
    pa.default_memory_pool().release_unused()  # the reader's blocks
    against: AgainstResult | None = None
    if index is None:  # the text as read, chunk by chunk: never copied
        texts = arrow_to_batches(corpus.table.column(corpus.text_column))
        result = find_duplicates(texts, config, progress=events.progress, keep_signatures=False, watch=watch)
        figures = result.summary()
    else:
        combine_text(corpus)
        batch = arrow_to_batch(corpus.table.column(corpus.text_column))
        against = dedup_against(batch, index, config, progress=events.progress, watch=watch)
        figures = against.summary()
    t_write = time.perf_counter()
    figures["engine"] = engine_without_work_dir("in-memory", memory_limit, figures)
    summary = summary_of(corpus, figures, job, fmt, read_seconds)
    with output_dir(job, corpus.sources, fmt) as target:
        if against is None:  # a slice at a time: no whole output table is held
            write_outputs(
                target,
                fmt,
                inputs=[corpus.table],
                schema=corpus.table.schema,
                ids=corpus.table.column(corpus.id_column).combine_chunks(),
                result=result,
                max_items=WRITE_ITEMS,
                progress=events.progress,
            )
        else:
            tables = against_tables(corpus.table, corpus.id_column, against)
            for done, (name, table) in enumerate(tables.items()):
                events.progress("write", done, len(tables))
                target.write(name, table, fmt)
            events.progress("write", len(tables), len(tables))
        updating = index is not None and against is not None and job.update_index
        if updating and against is not None:  # what the index gets once the outputs are in place
            summary["index"]["added"] = int(np.count_nonzero(against.keep))
        summary["seconds"]["write"] = round(time.perf_counter() - t_write, 4)
        summary["seconds"]["total"] = round(time.perf_counter() - t0, 4)
        target.write_json("summary.json", summary)
        stop_point("outputs-written")
    stop_point("outputs-committed")
    if updating and index is not None and against is not None:
        # After the outputs: a run stopped before this line left the index as it was, so running
        # it again writes the same outputs and then adds the rows
        keys = corpus.table.column(corpus.id_column).cast(pa.string()).to_pylist()
        try:
            add_kept(index, batch, against, keys)
        except StorageError as exc:
            raise StorageError(
                f"{exc}; the outputs in {job.output_dir} are complete, but the index does not hold "
                "their kept rows: run the same command again to add them"
            ) from exc
        stop_point("index-updated")
    return summary


def output_dir(job: DedupJob, sources: list[str], fmt: str) -> OutputDir:
    """The job's output folder: its chosen tables, and ``deduped`` one file per input with
    ``keep_layout``."""
    from neardup.io.layout import layout_names

    return OutputDir(
        Path(job.output_dir), job.outputs, layout=layout_names(sources, fmt) if job.keep_layout else None
    )


def combine_text(corpus: Corpus) -> None:
    """Make the text column one chunk inside the table, so the text is held once, not twice."""
    pa.default_memory_pool().release_unused()  # the readers' blocks, before the copy
    text = corpus.table.column(corpus.text_column)
    if text.num_chunks > 1:
        at = corpus.table.schema.get_field_index(corpus.text_column)
        corpus.table = corpus.table.set_column(at, corpus.text_column, text.combine_chunks())
    del text
    pa.default_memory_pool().release_unused()  # the readers' and the old chunks' memory


def passes_reader(
    paths: Sequence[Path], options: ReadOptions, memory_limit: int, num_perm: int, *, lines_out: bool
) -> JsonlPasses | None:
    """The input read in passes, when it is one JSON Lines file that reads the same that way and
    a run that reads it so fits in ``memory_limit``; with ``lines_out`` (the outputs are its own
    lines), parsed for its text and ids alone."""
    try:
        if not takes(list(paths)) or least_memory_in_passes(paths[0]) > memory_limit:
            return None  # too large before counting its lines, which reads the whole file
        passes = JsonlPasses(paths[0], options, all_columns=not lines_out)
    except (WholeReadNeededError, InputError, OSError):
        return None  # the other readers report what is wrong, if anything
    return passes if passes.memory_estimate(num_perm) <= memory_limit else None


def in_passes(
    passes: JsonlPasses,
    *,
    config: DedupConfig,
    job: DedupJob,
    memory_limit: int,
    events: RunEvents,
    watch: MemoryWatch | None = None,
) -> dict[str, Any]:
    """The run on one JSON Lines file read in passes: the signatures from a first pass, the text
    of the documents in candidate pairs by their lines, the outputs from a last pass (in JSON
    Lines, the records' own lines). Raises :class:`WholeReadNeededError` (before writing
    anything) for a file that must be read whole, and with ``watch``
    :class:`~neardup.memory.MemoryLimitError` as :func:`in_memory` does."""
    from neardup.engines.source import prefetched
    from neardup.outputs import GraphTables, table_pieces, write_outputs
    from neardup.pipeline import arrow_to_batches, find_duplicates_in_passes

    t0 = time.perf_counter()
    read_seconds = passes.scan_seconds  # finding the lines; parsing counts in the signatures
    blocks = passes.first_pass()
    first = next(blocks, None)  # the columns and the first block are checked before anything is shown
    events.shape(config)
    text = passes.text_column

    def groups() -> Iterator[list[TextBatch]]:
        read = itertools.chain([first] if first is not None else [], blocks)
        for table in table_pieces(read, PASS_ROWS, PASS_BYTES):
            yield arrow_to_batches(table.column(text))
            pa.default_memory_pool().release_unused()  # the blocks hashed before this group
        pa.default_memory_pool().release_unused()

    try:
        result = find_duplicates_in_passes(
            prefetched(groups()),  # the next group is parsed while this one is hashed
            passes.rows,
            passes.text_batch,
            config,
            progress=events.progress,
            keep_signatures=False,  # no output needs them
            watch=watch,
        )
    except WholeReadNeededError as exc:
        events.note(f"{passes.path} is read again, whole: {exc}")
        raise
    if passes.ids is None or passes.schema is None:
        raise RuntimeError("the first pass did not finish")
    # the verification blocks' buffers, freed but kept by the allocators, go back before the
    # write stage adds its own (its peak 30-50 MB lower: benchmarks/RESULTS.md, section 19)
    release_memory()
    figures = result.summary()
    figures["engine"] = engine_without_work_dir("passes", memory_limit, figures)
    fmt = job.output_format or default_output_format(passes.family)
    summary = summary_of(passes, figures, job, fmt, read_seconds)
    t_write = time.perf_counter()
    with output_dir(job, passes.sources, fmt) as target:
        if not passes.all_columns:  # JSON Lines out: the records as spelled, columns spliced in
            # the other three tables are written beside them, once their files are open
            with GraphTables(target, fmt, ids=passes.ids, result=result, max_items=WRITE_ITEMS) as graph:
                passes.write_rows(target, result.clusters, events.progress, opened=graph.start)
        else:
            write_outputs(
                target,
                fmt,
                inputs=prefetched(table_pieces(passes.tables(), PASS_WRITE_ROWS, PASS_WRITE_BYTES)),
                schema=passes.schema,
                ids=passes.ids,
                result=result,
                max_items=WRITE_ITEMS,
                progress=events.progress,
                piece_rows=PASS_WRITE_ROWS,
                piece_bytes=PASS_WRITE_BYTES,
            )
        summary["seconds"]["write"] = round(time.perf_counter() - t_write, 4)
        summary["seconds"]["total"] = round(time.perf_counter() - t0 + read_seconds, 4)
        target.write_json("summary.json", summary)
    return summary


def streamed(
    inputs: Sequence[str | Path],
    *,
    config: DedupConfig,
    job: DedupJob,
    budget: MemoryBudget,
    events: RunEvents,
    reason: str | None = None,
) -> dict[str, Any]:
    """The streaming run: scan, engine, outputs a batch at a time, through a work dir. A failure
    keeps the work dir, and the exception's note says so. ``reason``: why a run in memory of the
    same job stopped at the memory limit, for the summary's engine figures."""
    from neardup.engines.streaming import HELD_PER_DOCUMENT, WORK_DIR_NAME, StreamingRun

    t0 = time.perf_counter()
    output = Path(job.output_dir)
    if output.exists() and not output.is_dir():
        raise OutputError(f"{output}: exists and is not a directory")
    events.shape(config)
    run = StreamingRun(
        inputs,
        job.read,
        config,
        work_dir=Path(job.work_dir) if job.work_dir is not None else output / WORK_DIR_NAME,
        memory_limit=budget.work,
        resume=job.resume,
        held_per_document=0 if budget.work_given else HELD_PER_DOCUMENT,
    )
    try:
        with run:
            stream = run.read(events.progress)
            events.skipped(stream.skipped)
            result = run.dedup(events.progress)
            fmt = job.output_format or default_output_format(stream.family)
            figures = result.summary()
            figures["engine"].update(
                memory_limit=budget.limit,
                work_memory=budget.work,
                stages_run=["read", *result.ran],
                stages_resumed=run.stages_resumed(),
                **({} if reason is None else {"streamed_because": reason}),
            )
            summary = summary_of(stream, figures, job, fmt, run.seconds["read"])
            with output_dir(job, stream.sources, fmt) as target:
                run.write(target, fmt, events.progress)
                summary["seconds"]["write"] = round(run.seconds["write"], 4)
                summary["seconds"]["total"] = round(time.perf_counter() - t0, 4)
                target.write_json("summary.json", summary)
        run.remove_work_dir()
    except BaseException as exc:
        if run.owned and run.work_dir.exists():
            exc.add_note(f"the work so far is kept in {run.work_dir}; run the same command again to resume")
        raise
    return summary
