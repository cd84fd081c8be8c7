"""The ``neardup`` command: parse, call the library, render.

Exit codes: 0 success, 1 an input or output problem, 2 a usage or settings problem.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import itertools
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, NoReturn

import click
import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from neardup import __version__, interrupts
from neardup.config import KEEP_POLICIES, DedupConfig, KeepPolicy, ShingleMode
from neardup.core.jit import set_up_in_background, threads
from neardup.core.malloc_arenas import share_one_arena
from neardup.core.params import lsh_shape, s_curve
from neardup.core.text import TextBatch
from neardup.engines.plan import MIN_MEMORY_LIMIT, default_memory_limit
from neardup.engines.source import prefetched
from neardup.engines.streaming import WORK_DIR_NAME, StreamingRun, fits_in_memory, in_memory_estimate
from neardup.errors import ConfigError, InputError, OutputError, StorageError
from neardup.incremental import AgainstResult, add_kept, dedup_against
from neardup.index import IndexSettings, LSHIndex, Storage, open_storage
from neardup.io import (
    OUTPUT_FORMATS,
    Corpus,
    OutputDir,
    ReadOptions,
    default_output_format,
    expand_inputs,
    read_corpus,
)
from neardup.io._common import WholeReadNeededError
from neardup.io.jsonl_passes import JsonlPasses, least_memory_in_passes, takes
from neardup.io.stream import CorpusStream
from neardup.outputs import against_tables, table_pieces, write_graph_tables, write_outputs
from neardup.pipeline import STAGES as PIPELINE_STAGES
from neardup.pipeline import arrow_to_batch, arrow_to_batches, find_duplicates, find_duplicates_in_passes
from neardup.sizes import format_size, parse_size
from neardup.warm import load_kernels_and_release_compiler, start_if_cold

EXIT_INPUT = 1
EXIT_USAGE = 2
_MAX_SKIP_LINES = 20
_D = DedupConfig()  # the defaults shown in --help
_WRITE_ITEMS = 1 << 20  # ids per slice of clusters / candidate_pairs / lsh_buckets
_PASS_ROWS = 4096  # documents per signatures call in a run that reads its input in passes
_PASS_BYTES = 16 << 20  # and at most about this many bytes of them
_MODES = {"in-memory": "in memory", "passes": "in memory, input read in passes", "streaming": "streaming"}
_PASS_WRITE_ROWS = 2048  # input rows per output piece there: fewer rows in flight
_PASS_WRITE_BYTES = 8 << 20  # and at most about this many bytes of them


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find and remove near-duplicate texts with MinHash and LSH."""
    _choose_memory_pool()


def _choose_memory_pool() -> None:
    """Arrow's jemalloc pool, where the wheel has one and ``ARROW_DEFAULT_MEMORY_POOL`` does not
    choose: a run allocates and frees hundreds of MB per stage, and jemalloc hands freed pages
    back out where mimalloc returns them to the system and faults them in afresh (write stage
    1.8 -> 1.2 s on 100k documents, benchmarks/RESULTS.md)."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    with contextlib.suppress(NotImplementedError):  # no jemalloc (Windows): keep the default
        pa.set_memory_pool(pa.jemalloc_memory_pool())


_text_column = click.option(
    "--text-column", default="text", show_default=True, help="Column or field holding the text."
)
_id_column = click.option(
    "--id-column", default=None, help="Column with a unique id per row [default: a generated row_id]."
)
_key_column = click.option(
    "--id-column",
    default=None,
    help="Column with a unique id per row; its values, as strings, are the index keys (required).",
)
_lines = click.option("--lines", is_flag=True, help="Plain-text inputs: one document per line, not per file.")
_shingle = click.option(
    "--shingle",
    type=click.Choice(["word", "char"]),
    default=None,
    help=f"Shingle unit: word n-grams or character n-grams.  [default: {_D.shingle.mode}]",
)
_ngram = click.option(
    "--ngram", type=int, default=None, help=f"Tokens per shingle.  [default: {_D.shingle.n}]"
)
_num_perm = click.option(
    "--num-perm", type=int, default=None, help=f"MinHash permutations.  [default: {_D.minhash.num_perm}]"
)
_seed = click.option(
    "--seed", type=int, default=None, help=f"Seed of the permutations.  [default: {_D.minhash.seed}]"
)
_threshold = click.option(
    "--threshold",
    type=float,
    default=None,
    help=f"Jaccard similarity that makes a duplicate, in (0, 1].  [default: {_D.lsh.threshold}]",
)
_bands = click.option(
    "--bands", type=int, default=None, help="LSH bands (with --rows; bands * rows = num_perm)."
)
_rows = click.option("--rows", type=int, default=None, help="Rows per LSH band (with --bands).")
_fp_weight = click.option(
    "--fp-weight",
    type=float,
    default=None,
    help="Weight of false positives when choosing bands/rows; false negatives get 1 - W.  "
    f"[default: {_D.lsh.fp_weight}]",
)
_nfkc = click.option(
    "--nfkc/--no-nfkc",
    default=None,
    help="Fold full-width forms, ligatures and other compatibility characters.  "
    f"[default: {'on' if _D.text.nfkc else 'off'}]",
)
_keep_accents = click.option(
    "--keep-accents", is_flag=True, help="Do not strip accents and other combining marks."
)
_keep_case = click.option("--keep-case", is_flag=True, help="Do not lower-case.")
_keep_punctuation = click.option(
    "--keep-punctuation", is_flag=True, help="Keep punctuation and symbols as word characters."
)
_on_error = click.option(
    "--on-error",
    type=click.Choice(["stop", "skip"]),
    default="stop",
    show_default=True,
    help="On a bad record: stop, or skip it and report it.",
)
_quiet = click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary table.")
_index_option = click.option(
    "--index",
    "index_url",
    required=True,
    metavar="PATH|URL",
    help="The index: an SQLite file (idx.db, sqlite:///abs/idx.db) or redis://host:port/db.",
)


def _settings_options(f: Any) -> Any:
    """The options that decide signatures and banding, in the order ``dedup`` shows them."""
    for option in reversed(
        (_shingle, _ngram, _num_perm, _seed, _threshold, _bands, _rows, _nfkc, _keep_accents)
    ):
        f = option(f)
    return _keep_case(_keep_punctuation(f))


@main.command()
@click.argument("inputs", nargs=-1, metavar="INPUT...")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Directory for the deduplicated corpus and the evidence files.",
)
@click.option("--demo", is_flag=True, help="Run on the built-in sample instead of INPUT files.")
@_text_column
@_id_column
@_lines
@_shingle
@_ngram
@_num_perm
@_seed
@_threshold
@_bands
@_rows
@_fp_weight
@click.option(
    "--max-bucket-size",
    type=int,
    default=None,
    help="Buckets larger than this are linked as a star to their first member.  "
    f"[default: {_D.lsh.max_bucket_size}]",
)
@click.option("--no-verify", is_flag=True, help="Skip exact Jaccard; every LSH candidate becomes an edge.")
@click.option(
    "--keep",
    type=click.Choice(list(KEEP_POLICIES)),
    default="first",
    show_default=True,
    help="Which member of a cluster is kept.",
)
@_nfkc
@_keep_accents
@_keep_case
@_keep_punctuation
@click.option(
    "--match-empty",
    is_flag=True,
    help="Treat documents that are empty after normalisation as duplicates of each other.",
)
@click.option(
    "--output-format",
    type=click.Choice(list(OUTPUT_FORMATS)),
    default=None,
    help="Format of the output tables [default: that of the input; csv for text, HTML and the demo].",
)
@_on_error
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Threads for the compiled stages [default: all cores].",
)
@click.option(
    "--against",
    metavar="PATH|URL",
    default=None,
    help="Also drop rows matching a document in this index (an SQLite file or redis:// URL); "
    "the run uses the index's settings.",
)
@click.option(
    "--update-index",
    is_flag=True,
    help="With --against: add the kept rows to the index (keys: --id-column values), creating "
    "the index if it does not exist.",
)
@click.option(
    "--memory-limit",
    metavar="SIZE",
    default=None,
    help="Memory to stay within (6GB, 512MiB, 800M or bytes); inputs estimated larger are streamed "
    "through a work dir.  [default: a quarter of RAM]",
)
@click.option(
    "--work-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    default=None,
    help=f"Directory for a streaming run's spill files; giving it always streams.  "
    f"[default: OUTPUT_DIR/{WORK_DIR_NAME}]",
)
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Streaming: go on from the work of an interrupted run of the same command, or start over.",
)
@_quiet
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to standard output.")
def dedup(
    inputs: tuple[str, ...],
    output_dir: Path,
    demo: bool,
    text_column: str,
    id_column: str | None,
    lines: bool,
    shingle: ShingleMode | None,
    ngram: int | None,
    num_perm: int | None,
    seed: int | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    fp_weight: float | None,
    max_bucket_size: int | None,
    no_verify: bool,
    keep: KeepPolicy,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    match_empty: bool,
    output_format: str | None,
    on_error: Literal["stop", "skip"],
    workers: int | None,
    against: str | None,
    update_index: bool,
    memory_limit: str | None,
    work_dir: Path | None,
    resume: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Deduplicate INPUT files (JSONL, CSV, Parquet, text, HTML; files, folders or globs).

    Writes annotated, deduped, duplicates, clusters, candidate_pairs and
    lsh_buckets tables plus summary.json into OUTPUT_DIR.

    With --against, INPUT is also deduplicated against every document in the
    index: a row matching an indexed document (at the index's threshold; exact
    Jaccard if the index keeps shingles, else the signature estimate) is a
    duplicate of that document's key, and so is every row clustered with it.
    Ids in the tables are then strings, and annotated, duplicates and
    candidate_pairs gain a matched_index column. The run uses the index's
    settings; a differing --shingle, --ngram, --num-perm, --seed, --threshold,
    --bands/--rows or normalisation option is refused. With --update-index the
    kept rows are added to the index (after the outputs are written), so the
    same command run again drops every row.

    Inputs estimated too large for --memory-limit (or any run given --work-dir)
    are streamed: read a batch at a time, their signatures, buckets and pairs
    spilled to the work dir, the outputs written a batch at a time. The results
    are the same. An interrupted streaming run resumes when the same command is
    run again; the work dir is removed when the run succeeds.
    """
    if demo and inputs:
        _fail("give either INPUT files or --demo, not both", EXIT_USAGE)
    if not demo and not inputs:
        _fail("no INPUT given (try --demo for a built-in sample)", EXIT_USAGE)
    if update_index and against is None:
        _fail("--update-index needs --against PATH|URL", EXIT_USAGE)
    if update_index and id_column is None and not demo:
        _fail(_NEED_KEYS.format(what="--update-index"), EXIT_USAGE)
    given = _given_settings(
        shingle=shingle,
        ngram=ngram,
        num_perm=num_perm,
        seed=seed,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    run_options: dict[str, Any] = {
        "fp_weight": fp_weight,
        "max_bucket_size": max_bucket_size,
        "verify": not no_verify,
        "keep": keep,
        "match_empty": match_empty,
    }
    try:
        config = DedupConfig.create(**given, **run_options)
        options = ReadOptions(text_column=text_column, id_column=id_column, lines=lines, on_error=on_error)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    limit = _memory_limit(memory_limit)
    if workers is not None:
        _set_workers(workers)
    # numba's set-up and the kernels' loading overlap reading the input; then LLVM's pages go
    set_up_in_background(then=load_kernels_and_release_compiler)
    if threads() > 1:
        start_if_cold()  # a cold cache: part of the kernels compile on another core

    try:
        with interrupts.DeferredInterrupt():
            _dedup_in_a_mode(
                inputs,
                demo=demo,
                options=options,
                config=config,
                given=given,
                run_options=run_options,
                against=against,
                update_index=update_index,
                output_dir=output_dir,
                output_format=output_format,
                work_dir=work_dir,
                memory_limit=limit,
                resume=resume,
                quiet=quiet,
                as_json=as_json,
            )
    except KeyboardInterrupt:  # a streaming run says where its work is kept
        _fail("interrupted", 130)


def _dedup_in_a_mode(
    inputs: tuple[str, ...],
    *,
    demo: bool,
    options: ReadOptions,
    config: DedupConfig,
    given: dict[str, Any],
    run_options: dict[str, Any],
    against: str | None,
    update_index: bool,
    output_dir: Path,
    output_format: str | None,
    work_dir: Path | None,
    memory_limit: int,
    resume: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """The run in memory, in passes or streaming, whichever ``memory_limit`` and the inputs ask for."""
    streaming = _streaming(inputs, demo=demo, work_dir=work_dir, memory_limit=memory_limit, against=against)
    passes = None
    # One JSON Lines file written as JSON Lines is read in passes even when it would fit in memory:
    # its rows are copied from its lines, which is as fast as writing parsed rows, in less memory.
    lines_out = output_format in (None, "jsonl") and against is None and not demo
    if work_dir is None and (streaming or lines_out):
        passes = _passes(inputs, options, memory_limit, config.minhash.num_perm, lines_out=lines_out)
    if passes is not None:
        try:
            summary = _dedup_in_passes(
                passes,
                config=config,
                output_dir=output_dir,
                output_format=output_format,
                memory_limit=memory_limit,
                quiet=quiet,
            )
        except WholeReadNeededError:
            pass  # nothing decided or written yet: the file is read whole (in memory or streamed)
        else:
            _print_result(summary, quiet=quiet, as_json=as_json)
            return
    if streaming:
        _dedup_streaming(
            inputs,
            options=options,
            config=config,
            output_dir=output_dir,
            output_format=output_format,
            work_dir=work_dir or output_dir / WORK_DIR_NAME,
            memory_limit=memory_limit,
            resume=resume,
            quiet=quiet,
            as_json=as_json,
        )
        return
    index: LSHIndex | None = None
    if against is not None:
        index = _open_index(against, create=update_index, given=given, run_options=run_options)
        config = _with_run_options(index.settings.to_config(), run_options)
    try:
        _dedup(
            inputs,
            demo=demo,
            options=options,
            config=config,
            index=index,
            update_index=update_index,
            output_dir=output_dir,
            output_format=output_format,
            memory_limit=memory_limit,
            quiet=quiet,
            as_json=as_json,
        )
    finally:
        if index is not None:
            index.close()


def _memory_limit(text: str | None) -> int:
    """The --memory-limit in bytes (the engine's default when not given); bad ones exit 2."""
    if text is None:
        return default_memory_limit()
    try:
        limit = parse_size(text)
    except ConfigError as exc:
        _fail(f"--memory-limit: {exc}", EXIT_USAGE)
    if limit < MIN_MEMORY_LIMIT:
        _fail(
            f"--memory-limit must be at least {format_size(MIN_MEMORY_LIMIT)} ({MIN_MEMORY_LIMIT} bytes), "
            f"got {text}",
            EXIT_USAGE,
        )
    return limit


def _streaming(
    inputs: tuple[str, ...], *, demo: bool, work_dir: Path | None, memory_limit: int, against: str | None
) -> bool:
    """Whether this run streams (it does with --work-dir, or when the inputs look too large)."""
    if demo:
        if work_dir is not None:
            _fail("--work-dir streams files; the --demo sample is read in memory", EXIT_USAGE)
        return False
    try:
        paths = expand_inputs(list(inputs))
    except InputError as exc:
        _fail(str(exc), EXIT_INPUT)
    if work_dir is None and fits_in_memory(paths, memory_limit):
        return False
    if against is not None:
        why = (
            "--work-dir streams the inputs"
            if work_dir is not None
            else f"the inputs (about {format_size(in_memory_estimate(paths))} in memory) exceed "
            f"--memory-limit {format_size(memory_limit)}"
        )
        _fail(
            f"--against needs the inputs in memory, but {why}; raise --memory-limit "
            "(or deduplicate the inputs in parts against the index)",
            EXIT_USAGE,
        )
    return True


def _dedup_streaming(
    inputs: tuple[str, ...],
    *,
    options: ReadOptions,
    config: DedupConfig,
    output_dir: Path,
    output_format: str | None,
    work_dir: Path,
    memory_limit: int,
    resume: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """The streaming run: scan, engine, outputs a batch at a time, through a work dir."""
    err = Console(stderr=True, quiet=quiet)
    t0 = time.perf_counter()
    if output_dir.exists() and not output_dir.is_dir():
        _fail(f"{output_dir}: exists and is not a directory", EXIT_INPUT)
    _print_shape(err, config)
    try:
        run = StreamingRun(
            inputs, options, config, work_dir=work_dir, memory_limit=memory_limit, resume=resume
        )
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    try:
        with run:
            with _progress(err) as on_progress:
                stream = run.read(on_progress)
            _report_skipped(stream)
            with _progress(err) as on_progress:
                result = run.dedup(on_progress)
                fmt = output_format or default_output_format(stream.family)
                figures = result.summary()
                figures["engine"].update(
                    stages_run=["read", *result.ran], stages_resumed=run.stages_resumed()
                )
                summary = _summary(stream, figures, output_dir, fmt, run.seconds["read"])
                with OutputDir(output_dir) as target:
                    run.write(target, fmt, on_progress)
                    summary["seconds"]["write"] = round(run.seconds["write"], 4)
                    summary["seconds"]["total"] = round(time.perf_counter() - t0, 4)
                    target.write_json("summary.json", summary)
            run.remove_work_dir()
    except KeyboardInterrupt:
        _fail_streaming(run, "interrupted", 130)
    except ConfigError as exc:
        _fail_streaming(run, str(exc), EXIT_USAGE)
    except (InputError, OutputError, OSError) as exc:
        _fail_streaming(run, str(exc), EXIT_INPUT)
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_summary(Console(quiet=quiet), summary)


def _fail_streaming(run: StreamingRun, message: str, code: int) -> NoReturn:
    click.echo(f"neardup: error: {message}", err=True)
    if run.owned and run.work_dir.exists():
        click.echo(
            f"neardup: the work so far is kept in {run.work_dir}; run the same command again to resume",
            err=True,
        )
    sys.exit(code)


def _dedup(
    inputs: tuple[str, ...],
    *,
    demo: bool,
    options: ReadOptions,
    config: DedupConfig,
    index: LSHIndex | None,
    update_index: bool,
    output_dir: Path,
    output_format: str | None,
    memory_limit: int,
    quiet: bool,
    as_json: bool,
) -> None:
    err = Console(stderr=True, quiet=quiet)
    t0 = time.perf_counter()
    try:
        corpus = _load(inputs, demo, options)
    except InputError as exc:
        _fail(str(exc), EXIT_INPUT)
    read_seconds = time.perf_counter() - t0
    _print_shape(err, config)
    _report_skipped(corpus)

    fmt = output_format or default_output_format(corpus.family)
    pa.default_memory_pool().release_unused()  # the reader's blocks
    with _progress(err) as on_progress:
        against: AgainstResult | None = None
        if index is None:  # the text as read, chunk by chunk: never copied
            texts = arrow_to_batches(corpus.table.column(corpus.text_column))
            result = find_duplicates(texts, config, progress=on_progress, keep_signatures=False)
            figures = result.summary()
            t_write = time.perf_counter()
        else:
            _combine_text(corpus)
            batch = arrow_to_batch(corpus.table.column(corpus.text_column))
            try:
                against = dedup_against(batch, index, config, progress=on_progress)
            except ConfigError as exc:
                _fail(str(exc), EXIT_USAGE)
            except StorageError as exc:
                _fail(str(exc), EXIT_INPUT)
            figures = against.summary()
            t_write = time.perf_counter()
        figures["engine"] = _engine_without_work_dir("in-memory", memory_limit, figures)
        summary = _summary(corpus, figures, output_dir, fmt, read_seconds)
        try:
            with OutputDir(output_dir) as target:
                if against is None:  # a slice at a time: no whole output table is held
                    write_outputs(
                        target,
                        fmt,
                        inputs=[corpus.table],
                        schema=corpus.table.schema,
                        ids=corpus.table.column(corpus.id_column).combine_chunks(),
                        result=result,
                        max_items=_WRITE_ITEMS,
                        progress=on_progress,
                    )
                else:
                    tables = against_tables(corpus.table, corpus.id_column, against)
                    for done, (name, table) in enumerate(tables.items()):
                        on_progress("write", done, len(tables))
                        target.write(name, table, fmt)
                    on_progress("write", len(tables), len(tables))
                if index is not None and against is not None and update_index:
                    keys = _keys(corpus)
                    summary["index"]["added"] = add_kept(index, batch, against, keys)
                summary["seconds"]["write"] = round(time.perf_counter() - t_write, 4)
                summary["seconds"]["total"] = round(time.perf_counter() - t0, 4)
                target.write_json("summary.json", summary)
        except (OutputError, OSError, StorageError) as exc:
            _fail(str(exc), EXIT_INPUT)
    _print_result(summary, quiet=quiet, as_json=as_json)


def _engine_without_work_dir(mode: str, memory_limit: int, figures: dict[str, Any]) -> dict[str, Any]:
    """``summary.json``'s ``engine`` for a run that keeps no work dir (in memory or in passes)."""
    return {
        "mode": mode,
        "work_dir": None,
        "memory_limit": memory_limit,
        "stages_run": [stage for stage in PIPELINE_STAGES if stage in figures["seconds"]],
        "stages_resumed": [],
    }


def _print_result(summary: dict[str, Any], *, quiet: bool, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_summary(Console(quiet=quiet), summary)


def _passes(
    inputs: tuple[str, ...], options: ReadOptions, memory_limit: int, num_perm: int, *, lines_out: bool
) -> JsonlPasses | None:
    """The input read in passes, when it is one JSON Lines file that reads the same that way and
    a run that reads it so fits in ``memory_limit``; with ``lines_out`` (the outputs are its own
    lines), parsed for its text and ids alone."""
    try:
        paths = expand_inputs(list(inputs))
        if not takes(paths) or least_memory_in_passes(paths[0]) > memory_limit:
            return None  # too large before counting its lines, which reads the whole file
        passes = JsonlPasses(paths[0], options, all_columns=not lines_out)
    except (WholeReadNeededError, InputError, OSError):
        return None  # the streaming run reports what is wrong, if anything
    return passes if passes.memory_estimate(num_perm) <= memory_limit else None


def _dedup_in_passes(
    passes: JsonlPasses,
    *,
    config: DedupConfig,
    output_dir: Path,
    output_format: str | None,
    memory_limit: int,
    quiet: bool,
) -> dict[str, Any]:
    """The run on one JSON Lines file read in passes: the signatures from a first pass, the text
    of the documents in candidate pairs by their lines, the outputs from a last pass (in JSON
    Lines, the records' own lines). Raises :class:`WholeReadNeededError` (before writing
    anything) for a file that must be read whole."""
    err = Console(stderr=True, quiet=quiet)
    t0 = time.perf_counter()
    read_seconds = passes.scan_seconds  # finding the lines; parsing counts in the signatures
    blocks = passes.first_pass()
    first = next(blocks, None)  # the columns and the first block are checked before anything is shown
    _print_shape(err, config)
    text = passes.text_column

    def groups() -> Iterator[list[TextBatch]]:
        read = itertools.chain([first] if first is not None else [], blocks)
        for table in table_pieces(read, _PASS_ROWS, _PASS_BYTES):
            yield arrow_to_batches(table.column(text))
            pa.default_memory_pool().release_unused()  # the blocks hashed before this group
        pa.default_memory_pool().release_unused()

    with _progress(err) as on_progress:
        try:
            result = find_duplicates_in_passes(
                prefetched(groups()),  # the next group is parsed while this one is hashed
                passes.rows,
                lambda docs: arrow_to_batch(passes.texts(docs)),
                config,
                progress=on_progress,
                keep_signatures=False,  # no output needs them
            )
        except InputError as exc:
            _fail(str(exc), EXIT_INPUT)
        except WholeReadNeededError as exc:
            err.print(f"neardup: {passes.path} is read again, whole: {exc}", highlight=False, soft_wrap=True)
            raise
        if passes.ids is None or passes.schema is None:
            raise RuntimeError("the first pass did not finish")
        figures = result.summary()
        figures["engine"] = _engine_without_work_dir("passes", memory_limit, figures)
        fmt = output_format or default_output_format(passes.family)
        summary = _summary(passes, figures, output_dir, fmt, read_seconds)
        t_write = time.perf_counter()
        try:
            with OutputDir(output_dir) as target:
                if not passes.all_columns:  # JSON Lines out: the records as spelled, columns spliced in
                    passes.write_rows(target, result.clusters, on_progress)
                    write_graph_tables(target, fmt, ids=passes.ids, result=result, max_items=_WRITE_ITEMS)
                else:
                    write_outputs(
                        target,
                        fmt,
                        inputs=prefetched(table_pieces(passes.tables(), _PASS_WRITE_ROWS, _PASS_WRITE_BYTES)),
                        schema=passes.schema,
                        ids=passes.ids,
                        result=result,
                        max_items=_WRITE_ITEMS,
                        progress=on_progress,
                        piece_rows=_PASS_WRITE_ROWS,
                        piece_bytes=_PASS_WRITE_BYTES,
                    )
                summary["seconds"]["write"] = round(time.perf_counter() - t_write, 4)
                summary["seconds"]["total"] = round(time.perf_counter() - t0 + read_seconds, 4)
                target.write_json("summary.json", summary)
        except (InputError, OutputError, OSError) as exc:
            _fail(str(exc), EXIT_INPUT)
    return summary


def _combine_text(corpus: Corpus) -> None:
    """Make the text column one chunk inside the table, so the text is held once, not twice."""
    pa.default_memory_pool().release_unused()  # the readers' blocks, before the copy
    text = corpus.table.column(corpus.text_column)
    if text.num_chunks > 1:
        at = corpus.table.schema.get_field_index(corpus.text_column)
        corpus.table = corpus.table.set_column(at, corpus.text_column, text.combine_chunks())
    del text
    pa.default_memory_pool().release_unused()  # the readers' and the old chunks' memory


def _print_shape(console: Console, config: DedupConfig) -> None:
    b, r = lsh_shape(config.lsh, config.minhash)
    curve = s_curve(config.lsh.threshold, b, r)
    console.print(
        f"LSH shape: {b} bands x {r} rows. Chance of becoming a candidate: "
        f"{curve['p_below']:.3f} at J={curve['j_below']:.2f}, "
        f"{curve['p_at']:.3f} at J={curve['j_at']:.2f}, "
        f"{curve['p_above']:.3f} at J={curve['j_above']:.2f}",
        highlight=False,
        soft_wrap=True,
    )


def _report_skipped(corpus: Corpus | CorpusStream) -> None:
    for problem in corpus.skipped[:_MAX_SKIP_LINES]:
        click.echo(f"neardup: skipped: {problem}", err=True)
    if len(corpus.skipped) > _MAX_SKIP_LINES:
        click.echo(
            f"neardup: skipped {len(corpus.skipped) - _MAX_SKIP_LINES} more records "
            "(all listed in summary.json)",
            err=True,
        )


def _set_workers(workers: int) -> None:
    import numba

    numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def _load(inputs: tuple[str, ...], demo: bool, options: ReadOptions) -> Corpus:
    if demo:
        from neardup.demo import demo_table

        return Corpus(
            table=demo_table(),
            text_column="text",
            id_column="id",
            sources=["<demo>"],
            skipped=[],
            family="csv",
        )
    return read_corpus(list(inputs), options)


def _summary(
    corpus: Corpus | CorpusStream | JsonlPasses,
    figures: dict[str, Any],
    output_dir: Path,
    fmt: str,
    read_seconds: float,
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "neardup_version": __version__,
        "inputs": corpus.sources,
        "output_dir": str(output_dir),
        "output_format": fmt,
        "text_column": corpus.text_column,
        "id_column": corpus.id_column,
        "skipped_records": len(corpus.skipped),
        "skipped": [str(e) for e in corpus.skipped],
        **figures,
    }
    summary["seconds"] = {"read": round(read_seconds, 4), **figures["seconds"]}
    return summary


@contextmanager
def _progress(console: Console) -> Iterator[Any]:
    """Progress bars for the stages; each report is also where a Ctrl-C is raised (see
    :mod:`neardup.interrupts`)."""
    labels = {
        "read": "Reading inputs",
        "signatures": "MinHash signatures",
        "buckets": "LSH buckets",
        "candidates": "Buckets and pairs",
        "pairs": "Candidate pairs",
        "shingles": "Shingle sets",
        "verify": "Exact verification",
        "clusters": "Clusters",
        "write": "Writing outputs",
    }
    bar = Progress(
        TextColumn("{task.description:<20}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=console.quiet,
    )
    tasks: dict[str, Any] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        interrupts.check()
        if stage not in tasks:
            tasks[stage] = bar.add_task(labels.get(stage, stage), total=max(total, 1))
        bar.update(tasks[stage], completed=done if total else 1, total=max(total, 1))

    with bar:
        yield on_progress


def _print_summary(console: Console, s: dict[str, Any]) -> None:
    table = Table(title="neardup dedup", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    rows = [
        ("Input rows", f"{s['input_rows']:,}"),
        ("Skipped records", f"{s['skipped_records']:,}"),
        ("Empty documents", f"{s['empty_documents']:,}"),
        ("Shingles", f"{s['shingle']} {s['ngram']}-grams"),
        ("LSH shape", f"{s['bands']} bands x {s['rows']} rows ({s['num_perm']} permutations)"),
        ("Threshold", f"{s['threshold']}"),
        ("Buckets with collisions", f"{s['buckets_with_collisions']:,}"),
        ("Candidate pairs", f"{s['candidate_pairs']:,}"),
        ("Verified pairs", "-" if s["verified_pairs"] is None else f"{s['verified_pairs']:,}"),
        ("Clusters", f"{s['clusters']:,}"),
        ("Duplicates removed", f"{s['duplicates_removed']:,}"),
        ("Kept", f"{s['kept_rows']:,} ({100 * s['kept_ratio']:.1f}%)"),
        ("Seconds", f"{s['seconds']['total']:.2f}"),
        ("Output", f"{s['output_dir']} ({s['output_format']})"),
    ]
    engine = s.get("engine")
    if engine is not None:
        mode = _MODES.get(engine["mode"], engine["mode"])
        rows.insert(-2, ("Mode", f"{mode} (memory limit {format_size(engine['memory_limit'])})"))
        if engine["mode"] == "streaming":
            rows.insert(-2, ("Stages resumed", ", ".join(engine["stages_resumed"]) or "none"))
            rows.append(("Work dir", f"{engine['work_dir']} (removed)"))
    if "index" in s:
        ix = s["index"]
        rows.insert(
            -2,
            (
                "Matching the index",
                f"{ix['rows_matching_index']:,} rows ({ix['documents_before']:,} indexed, {ix['jaccard']})",
            ),
        )
        if "added" in ix:
            rows.insert(-2, ("Added to the index", f"{ix['added']:,}"))
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


# -- the index -----------------------------------------------------------------------------------

_NEED_KEYS = (
    "{what} needs --id-column: index keys are the id column's values, and generated row numbers "
    "would clash between runs"
)
_INSERT_CHUNK = 50_000


def _given_settings(
    *,
    shingle: ShingleMode | None,
    ngram: int | None,
    num_perm: int | None,
    seed: int | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
) -> dict[str, Any]:
    """The signature and banding settings given on the command line (None: not given)."""
    return {
        "shingle": shingle,
        "ngram": ngram,
        "num_perm": num_perm,
        "seed": seed,
        "threshold": threshold,
        "bands": bands,
        "rows": rows,
        "nfkc": nfkc,
        "strip_accents": False if keep_accents else None,
        "lowercase": False if keep_case else None,
        "strip_punctuation": False if keep_punctuation else None,
    }


def _merged_config(settings: IndexSettings, given: dict[str, Any]) -> DedupConfig:
    """The index's settings overridden by those given, for checking against the index."""
    stored: dict[str, Any] = {
        "shingle": settings.shingle_mode,
        "ngram": settings.ngram,
        "num_perm": settings.num_perm,
        "seed": settings.seed,
        "threshold": settings.threshold,
        "nfkc": settings.nfkc,
        "strip_accents": settings.strip_accents,
        "lowercase": settings.lowercase,
        "strip_punctuation": settings.strip_punctuation,
    }
    merged = {k: stored.get(k) if v is None else v for k, v in given.items()}
    # The index's shape stands unless a shape, or a signature length it cannot have, is given.
    if given["bands"] is None and given["rows"] is None and merged["num_perm"] == settings.num_perm:
        merged["bands"], merged["rows"] = settings.bands, settings.rows
    return DedupConfig.create(**merged)


def _with_run_options(config: DedupConfig, run_options: dict[str, Any]) -> DedupConfig:
    lsh = config.lsh
    if run_options["max_bucket_size"] is not None:
        lsh = replace(lsh, max_bucket_size=run_options["max_bucket_size"])
    return replace(
        config,
        lsh=lsh,
        verify=run_options["verify"],
        keep=run_options["keep"],
        match_empty=run_options["match_empty"],
    )


def _local_file(url: str) -> Path | None:
    """The file an SQLite index location names, or None for a server or memory URL."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return Path(url).expanduser()
    if scheme.lower() == "sqlite" and rest:
        return Path(rest).expanduser()
    return None


def _no_index(url: str) -> NoReturn:
    _fail(f"no index at {url}; create one with: neardup index build CORPUS... --index {url}", EXIT_INPUT)


def _open_storage(url: str, *, create: bool) -> Storage:
    local = _local_file(url)
    if not create and local is not None and not local.exists():
        _no_index(url)
    try:
        return open_storage(url)
    except StorageError as exc:
        _fail(str(exc), EXIT_INPUT)


def _open_index(
    url: str,
    *,
    create: bool = False,
    given: dict[str, Any] | None = None,
    run_options: dict[str, Any] | None = None,
    keep_shingles: bool | None = None,
) -> LSHIndex:
    """The index at ``url``, its settings checked against those ``given``; a missing index is
    created (with ``given`` and ``run_options``) only when ``create``."""
    storage = _open_storage(url, create=create)
    try:
        stored = storage.read_settings()
        if stored is None:
            if not create:
                _no_index(url)
            config = DedupConfig.create(
                **(given or {}),
                **{k: v for k, v in (run_options or {}).items() if k in ("fp_weight", "max_bucket_size")},
            )
            return LSHIndex(storage, config, keep_shingles=keep_shingles)
        merged = None if given is None else _merged_config(IndexSettings.from_dict(stored), given)
        return LSHIndex(storage, merged, keep_shingles=keep_shingles)
    except ConfigError as exc:
        storage.close()
        _fail(str(exc), EXIT_USAGE)
    except StorageError as exc:
        storage.close()
        _fail(str(exc), EXIT_INPUT)
    except BaseException:
        storage.close()
        raise


def _keys(corpus: Corpus) -> list[str]:
    keys: list[str] = corpus.table.column(corpus.id_column).cast(pa.string()).to_pylist()
    return keys


def _read_for_index(inputs: tuple[str, ...], options: ReadOptions) -> Corpus:
    try:
        corpus = read_corpus(list(inputs), options)
    except InputError as exc:
        _fail(str(exc), EXIT_INPUT)
    _report_skipped(corpus)
    return corpus


def _insert_corpus(index: LSHIndex, corpus: Corpus, console: Console) -> int:
    """Insert every row, in all-or-nothing chunks; return how many."""
    keys = _keys(corpus)
    texts = corpus.table.column(corpus.text_column)
    n = len(keys)
    bar = Progress(
        TextColumn("{task.description:<20}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=console.quiet,
    )
    with bar:
        task = bar.add_task("Indexing", total=max(n, 1))
        for lo in range(0, n, _INSERT_CHUNK):
            hi = min(n, lo + _INSERT_CHUNK)
            chunk = [t or "" for t in texts.slice(lo, hi - lo).to_pylist()]
            try:
                index.insert_many(keys[lo:hi], chunk)
            except StorageError as exc:
                _fail(str(exc), EXIT_INPUT)
            bar.update(task, completed=hi)
    return n


@main.group()
def index() -> None:
    """Build, grow, query and inspect a persistent LSH index.

    An index lives in an SQLite file (idx.db, sqlite:///abs/idx.db) or on a
    Redis server (redis://host:port/db). It stores its settings, and every
    later command uses them.
    """


@index.command("build")
@click.argument("inputs", nargs=-1, required=True, metavar="CORPUS...")
@_index_option
@_text_column
@_key_column
@_lines
@_settings_options
@_fp_weight
@click.option(
    "--keep-shingles", is_flag=True, help="Also store each document's shingles, for exact similarity."
)
@click.option(
    "--replace",
    "replace_existing",
    is_flag=True,
    help="Empty an index that already holds documents and build it anew with these settings.",
)
@_on_error
@_quiet
def index_build(
    inputs: tuple[str, ...],
    index_url: str,
    text_column: str,
    id_column: str | None,
    lines: bool,
    shingle: ShingleMode | None,
    ngram: int | None,
    num_perm: int | None,
    seed: int | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    fp_weight: float | None,
    keep_shingles: bool,
    replace_existing: bool,
    on_error: Literal["stop", "skip"],
    quiet: bool,
) -> None:
    """Create an index of CORPUS files with these settings; keys are --id-column values.

    An index that already holds documents is refused unless --replace is given,
    which removes them and their settings first (not atomically: an interrupted
    --replace leaves a partly built index; run it again). An existing empty
    index takes the new settings. Every chunk of 50,000 rows is added whole or
    not at all.
    """
    if id_column is None:
        _fail(_NEED_KEYS.format(what="index build"), EXIT_USAGE)
    given = _given_settings(
        shingle=shingle,
        ngram=ngram,
        num_perm=num_perm,
        seed=seed,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    try:
        config = DedupConfig.create(**given, fp_weight=fp_weight)
        options = ReadOptions(text_column=text_column, id_column=id_column, lines=lines, on_error=on_error)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    corpus = _read_for_index(inputs, options)
    err = Console(stderr=True, quiet=quiet)
    storage = _open_storage(index_url, create=True)
    try:
        if storage.read_settings() is not None:
            count = storage.count()
            if count and not replace_existing:
                _fail(
                    f"{index_url} already holds an index of {count:,} documents; add to it with "
                    "neardup index add, or pass --replace to build it anew",
                    EXIT_INPUT,
                )
            if count:
                storage.remove(list(storage.keys()))
        settings = IndexSettings.from_config(config, keep_shingles=keep_shingles)
        storage.write_settings(settings.to_dict())
        idx = LSHIndex(storage)
    except StorageError as exc:
        storage.close()
        _fail(str(exc), EXIT_INPUT)
    _print_shape(err, config)
    with idx:
        added = _insert_corpus(idx, corpus, err)
        total = len(idx)
    if not quiet:
        click.echo(f"Indexed {added:,} documents into {index_url} ({total:,} in the index)")


@index.command("add")
@click.argument("inputs", nargs=-1, required=True, metavar="CORPUS...")
@_index_option
@_text_column
@_key_column
@_lines
@_settings_options
@_on_error
@_quiet
def index_add(
    inputs: tuple[str, ...],
    index_url: str,
    text_column: str,
    id_column: str | None,
    lines: bool,
    shingle: ShingleMode | None,
    ngram: int | None,
    num_perm: int | None,
    seed: int | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    on_error: Literal["stop", "skip"],
    quiet: bool,
) -> None:
    """Add CORPUS files to an existing index, with the index's settings.

    Settings options are not needed; one that differs from the index's is
    refused. A key already in the index is replaced by the new text.
    """
    if id_column is None:
        _fail(_NEED_KEYS.format(what="index add"), EXIT_USAGE)
    given = _given_settings(
        shingle=shingle,
        ngram=ngram,
        num_perm=num_perm,
        seed=seed,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    try:
        options = ReadOptions(text_column=text_column, id_column=id_column, lines=lines, on_error=on_error)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    with _open_index(index_url, given=given) as idx:
        corpus = _read_for_index(inputs, options)
        err = Console(stderr=True, quiet=quiet)
        before = len(idx)
        added = _insert_corpus(idx, corpus, err)
        total = len(idx)
    if not quiet:
        click.echo(
            f"Added {added:,} documents to {index_url} ({total - before:,} new, {total:,} in the index)"
        )


@index.command("query")
@_index_option
@click.option("--text", default=None, help="The query text [default: read standard input].")
@click.option(
    "--file",
    "query_file",
    default=None,
    metavar="FILE",
    help="A file of queries (JSONL, CSV, Parquet, text, HTML), one per record.",
)
@click.option("--text-column", default="text", show_default=True, help="With --file: the text column.")
@click.option("--id-column", default=None, help="With --file: the query id column [default: row number].")
@click.option("--lines", is_flag=True, help="With --file: plain text, one query per line.")
@click.option(
    "--threshold", type=float, default=None, help="Lowest similarity returned [default: the index's]."
)
@click.option("--top-k", type=int, default=None, help="At most K matches per query.")
@click.option("--exact", is_flag=True, help="Exact Jaccard (needs an index built with --keep-shingles).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per match on standard output.")
def index_query(
    index_url: str,
    text: str | None,
    query_file: str | None,
    text_column: str,
    id_column: str | None,
    lines: bool,
    threshold: float | None,
    top_k: int | None,
    exact: bool,
    as_json: bool,
) -> None:
    """Print the indexed documents similar to a query, best first.

    The query is --text, or the texts of --file, or else all of standard input
    (one query). Matches are printed as a table (query, key, similarity, exact)
    or, with --json, one line per match: {"query": ..., "key": ...,
    "similarity": ..., "exact": ...}. "query" is the query's id: its
    --id-column value, its row number (from 0) in --file, or 0. No match is not
    an error: the exit code is 0.
    """
    if text is not None and query_file is not None:
        _fail("give either --text or --file, not both", EXIT_USAGE)
    if query_file is not None:
        try:
            options = ReadOptions(text_column=text_column, id_column=id_column, lines=lines)
            corpus = read_corpus([query_file], options)
        except ConfigError as exc:
            _fail(str(exc), EXIT_USAGE)
        except InputError as exc:
            _fail(str(exc), EXIT_INPUT)
        query_ids: list[Any] = corpus.table.column(corpus.id_column).to_pylist()
        texts = [t or "" for t in corpus.table.column(corpus.text_column).to_pylist()]
    else:
        query_ids = [0]
        texts = [text if text is not None else sys.stdin.read()]
    with _open_index(index_url) as idx:
        try:
            found = idx.query_many(texts, threshold=threshold, top_k=top_k, exact=exact)
        except ConfigError as exc:
            _fail(str(exc), EXIT_USAGE)
        except StorageError as exc:
            _fail(str(exc), EXIT_INPUT)
    rows = [(q, m) for q, ms in zip(query_ids, found, strict=True) for m in ms]
    if as_json:
        for q, m in rows:
            record = {"query": q, "key": m.key, "similarity": round(m.similarity, 6), "exact": m.exact}
            click.echo(json.dumps(record, ensure_ascii=False))
        return
    if not rows:
        click.echo("no matches", err=True)
        return
    table = Table(show_header=True, header_style="bold")
    for name, justify in (("query", "left"), ("key", "left"), ("similarity", "right"), ("exact", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for q, m in rows:
        table.add_row(str(q), m.key, f"{m.similarity:.4f}", "yes" if m.exact else "no")
    Console(soft_wrap=True).print(table)


@index.command("remove")
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@_index_option
@_quiet
def index_remove(keys: tuple[str, ...], index_url: str, quiet: bool) -> None:
    """Remove documents by key.

    Keys not in the index are listed on standard error. The exit code is 0 when
    at least one key was removed, and 1 when none of the keys was in the index.
    """
    with _open_index(index_url) as idx:
        try:
            unknown = [k for k in dict.fromkeys(keys) if k not in idx]
            removed = idx.remove_many(list(dict.fromkeys(keys)))
        except StorageError as exc:
            _fail(str(exc), EXIT_INPUT)
        total = len(idx)
    if unknown:
        shown = ", ".join(unknown[:_MAX_SKIP_LINES]) + (" ..." if len(unknown) > _MAX_SKIP_LINES else "")
        click.echo(f"neardup: not in the index: {shown}", err=True)
    if not quiet:
        click.echo(f"Removed {removed:,} documents from {index_url} ({total:,} left)")
    if removed == 0:
        sys.exit(EXIT_INPUT)


@index.command("stats")
@_index_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def index_stats(index_url: str, as_json: bool) -> None:
    """Documents, LSH shape, settings, size on disk and backend of an index."""
    with _open_index(index_url) as idx:
        try:
            stats = idx.stats()
        except StorageError as exc:
            _fail(str(exc), EXIT_INPUT)
    if as_json:
        click.echo(json.dumps(stats, indent=2, ensure_ascii=False))
        return
    s = stats["settings"]
    size = stats["size_bytes"]
    table = Table(title="neardup index", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value")
    for name, value in (
        ("Location", stats["url"]),
        ("Backend", stats["backend"]),
        ("Documents", f"{stats['documents']:,}"),
        ("LSH shape", f"{stats['bands']} bands x {stats['rows']} rows ({s['num_perm']} permutations)"),
        ("Threshold", f"{s['threshold']}"),
        ("Shingles", f"{s['shingle_mode']} {s['ngram']}-grams" + (", kept" if s["keep_shingles"] else "")),
        ("Seed", f"{s['seed']}"),
        (
            "Normalisation",
            ", ".join(
                f"{name}={'on' if s[name] else 'off'}"
                for name in ("nfkc", "strip_accents", "lowercase", "strip_punctuation")
            ),
        ),
        ("Format version", f"{s['format_version']} (hash version {s['hash_version']})"),
        ("Size on disk", "unknown" if size is None else f"{size:,} bytes"),
    ):
        table.add_row(name, value)
    Console(soft_wrap=True).print(table)


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """An import finder for which pandas is not installed."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("the neardup command runs without pandas", name=fullname)


def run() -> NoReturn:
    """The ``neardup`` command: :func:`main`, then out without the interpreter's teardown.

    Tearing down (freeing every object and module one by one) took 0.4-0.5 s after a run on
    100,000 documents, about a tenth of the run. Everything the command does is finished and
    closed by then (outputs committed, work dirs and locks released in ``with`` blocks); only
    standard output and error are left to flush, as ``mypy`` does the same.

    The command never uses pandas, but pyarrow imports it (where installed) at the first
    conversion to numpy, to look for pandas types: 0.37 s and 40 MB. :class:`_WithoutPandas`
    hides it from this process, and pyarrow goes on as where pandas is not installed. Its threads
    share one malloc arena (:mod:`neardup.core.malloc_arenas`).
    """
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _WithoutPandas())
    share_one_arena()  # before any thread starts
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        click.echo(str(code), err=True)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream
            stream.flush()
    os._exit(code or 0)


if __name__ == "__main__":  # pragma: no cover
    run()
