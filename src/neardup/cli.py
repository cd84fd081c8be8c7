"""The ``neardup`` command: parse, call the library, render.

Exit codes: 0 success, 1 an input or output problem, 2 a usage or settings problem.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click

from neardup import __version__, interrupts
from neardup.cli_console import QuietConsole, new_console
from neardup.config import (
    KEEP_POLICIES,
    SKETCHES,
    TOKENIZERS,
    DedupConfig,
    KeepPolicy,
    ShingleMode,
    Sketch,
    Tokenizer,
)
from neardup.core import collector
from neardup.core.malloc_arenas import share_one_arena
from neardup.redaction import redact_url

if TYPE_CHECKING:
    from rich.console import Console

OUTPUT_FORMATS = ("csv", "jsonl", "parquet")  # neardup.io.OUTPUT_FORMATS, kept light for --help
WORK_DIR_NAME = ".neardup-work"  # neardup.engines.streaming.WORK_DIR_NAME
EXIT_INPUT = 1
EXIT_USAGE = 2
_MAX_SKIP_LINES = 20
_D = DedupConfig()  # the defaults shown in --help
_MODES = {
    "in-memory": "in memory",
    "passes": "in memory, read in passes",
    "streaming": "streamed",
    "ray": "on Ray",
}


def _size(n: int) -> str:
    from neardup.sizes import format_size

    return format_size(n)


def _percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage that never rounds a difference away: 31,251 kept of
    31,252 is ``99.997%``, not ``100.0%``.

    >>> _percent(31_251, 31_252), _percent(1, 3), _percent(5, 5), _percent(1, 10**9)
    ('99.997%', '33.3%', '100.0%', '>0.0001%')
    """
    if whole <= 0:
        return "-"
    exact = 100 * part / whole
    for places in range(1, 5):
        shown = round(exact, places)
        if (shown == 100) == (part == whole) and (shown == 0) == (part == 0):
            return f"{exact:.{places}f}%"
    return ">0.0001%" if part < whole / 2 else "<99.9999%"


def _count(n: int, noun: str) -> str:
    """``1 document``, ``2,000 documents``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find and remove near-duplicate texts with MinHash and LSH."""
    _import_numpy_without_blas_threads()
    _choose_memory_pool()
    if click.get_current_context().invoked_subcommand != "dedup":
        collector.release()  # dedup releases it once its kernels are loaded


def _import_numpy_without_blas_threads() -> None:
    """Import numpy with its OpenBLAS on the calling thread alone, unless
    ``OPENBLAS_NUM_THREADS`` chooses. OpenBLAS starts a thread per further core when numpy
    loads, and each spins for about 0.1 s of CPU waiting for work (0.17 against 0.06 s of CPU
    for ``import numpy``) that never comes, since neardup makes no BLAS calls: CPU saved, not
    wall time, as the imports leave the other core idle then. OpenBLAS reads the variable once,
    as it loads; it is taken out again after, so that no process the command starts inherits it."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def _choose_memory_pool() -> None:
    """Arrow's jemalloc pool, where the wheel has one and ``ARROW_DEFAULT_MEMORY_POOL`` does not
    choose: a run allocates and frees hundreds of MB per stage, and jemalloc hands freed pages
    back out where mimalloc returns them to the system and faults them in afresh (write stage
    1.8 -> 1.2 s on 100k documents, benchmarks/RESULTS.md)."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

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
_TOKENIZER_HELP = (
    "Word tokens: neardup's own (a CJK character is one token) or jieba's Chinese words "
    "(word shingles only; needs pip install 'neardup[zh]')."
)
_tokenizer = click.option(
    "--tokenizer",
    type=click.Choice(list(TOKENIZERS)),
    default=None,
    help=f"{_TOKENIZER_HELP}  [default: {_D.shingle.tokenizer}]",
)
_num_perm = click.option(
    "--num-perm", type=int, default=None, help=f"MinHash permutations.  [default: {_D.minhash.num_perm}]"
)
_seed = click.option(
    "--seed", type=int, default=None, help=f"Seed of the permutations.  [default: {_D.minhash.seed}]"
)
_SKETCH_HELP = (
    "MinHash sketch: stratified (each shingle in a different stratum of every permutation; "
    "a steadier estimate) or classic (independent permutations, as in older indexes)."
)
_sketch = click.option(
    "--sketch",
    type=click.Choice(list(SKETCHES)),
    default=None,
    help=f"{_SKETCH_HELP}  [default: {_D.minhash.sketch}]",
)
_threshold = click.option(
    "--threshold",
    type=float,
    default=None,
    help=f"Jaccard similarity that makes a duplicate, in (0, 1].  [default: {_D.lsh.threshold}]",
)
_bands = click.option(
    "--bands",
    type=int,
    default=None,
    help="LSH bands (with --rows): bands * rows = num_perm, or up to twice that for a second "
    "layer of bands over the same values.",
)
_rows = click.option("--rows", type=int, default=None, help="Rows per LSH band (with --bands).")
_fp_weight = click.option(
    "--fp-weight",
    type=float,
    default=None,
    help="Weight of false positives when choosing bands/rows; false negatives get 1 - W.  "
    f"[default: {_D.lsh.fp_weight}]",
)
_band_layers = click.option(
    "--band-layers",
    "layers",
    type=click.IntRange(1, 2),
    default=None,
    help="Band layers the chosen shape may use: 2 may add bands over the same values in another "
    "grouping, which find pairs near the threshold that one layer misses.  "
    f"[default: {_D.lsh.layers}]",
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
        (
            _shingle,
            _ngram,
            _tokenizer,
            _num_perm,
            _seed,
            _sketch,
            _threshold,
            _bands,
            _rows,
            _nfkc,
            _keep_accents,
        )
    ):
        f = option(f)
    return _keep_case(_keep_punctuation(f))


_FROM_INDEX = "  [default: the index's; another value is refused]"


def _index_settings_options(f: Any) -> Any:
    """The same options for a command on an existing index, whose stored settings are the
    defaults: the help says so instead of showing neardup's own defaults."""
    options: tuple[tuple[str, dict[str, Any], str], ...] = (
        ("--shingle", {"type": click.Choice(["word", "char"])}, "Shingle unit: word or character n-grams."),
        ("--ngram", {"type": int}, "Tokens per shingle."),
        ("--tokenizer", {"type": click.Choice(list(TOKENIZERS))}, _TOKENIZER_HELP),
        ("--num-perm", {"type": int}, "MinHash permutations."),
        ("--seed", {"type": int}, "Seed of the permutations."),
        ("--sketch", {"type": click.Choice(list(SKETCHES))}, _SKETCH_HELP),
        ("--threshold", {"type": float}, "Jaccard similarity that makes a duplicate."),
        ("--bands", {"type": int}, "LSH bands (with --rows)."),
        ("--rows", {"type": int}, "Rows per LSH band (with --bands)."),
        ("--nfkc/--no-nfkc", {}, "Fold full-width forms, ligatures and other compatibility characters."),
    )
    flags = (
        ("--keep-accents", "Do not strip accents."),
        ("--keep-case", "Do not lower-case."),
        ("--keep-punctuation", "Keep punctuation and symbols."),
    )
    for name, text in reversed(flags):
        f = click.option(name, is_flag=True, help=text + "  [default: the index's]")(f)
    for name, kwargs, text in reversed(options):
        f = click.option(name, default=None, help=text + _FROM_INDEX, **kwargs)(f)
    return f


@main.command()
@click.argument("inputs", nargs=-1, metavar="INPUT...")
@click.option(
    "-o",
    "--output-dir",
    metavar="DIR|URI",
    required=True,
    help="Directory for the deduplicated corpus and the evidence files (with --engine ray, also a "
    "filesystem URI such as s3://bucket/out).",
)
@click.option("--demo", is_flag=True, help="Run on the built-in sample instead of INPUT files.")
@_text_column
@_id_column
@_lines
@_shingle
@_ngram
@_tokenizer
@_num_perm
@_seed
@_sketch
@_threshold
@_bands
@_rows
@_fp_weight
@_band_layers
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
    "--containment",
    type=float,
    default=None,
    metavar="C",
    help="Decide by containment, not Jaccard: a row goes when at least C of its shingles are in a "
    "larger kept row, which is kept in its place.",
)
@click.option(
    "--output-format",
    type=click.Choice(list(OUTPUT_FORMATS)),
    default=None,
    help="Format of the output tables [default: that of the input; csv for text, HTML and the demo].",
)
@click.option(
    "--outputs",
    metavar="NAMES",
    default=None,
    help="Comma-separated tables to write: annotated, deduped, duplicates, clusters, candidate_pairs, "
    "lsh_buckets (summary.json always)  [default: all]",
)
@click.option(
    "--keep-layout",
    is_flag=True,
    help="Write deduped as a folder of one file per input file, under the same relative names.",
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
    help="Memory for the whole process to stay within (6GB, 512MiB, 800M or bytes; at least 420 "
    "MB); inputs estimated larger are streamed through a work dir.  [default: a quarter of RAM]",
)
@click.option(
    "--work-memory",
    metavar="SIZE",
    default=None,
    help="Streaming: memory for the engine's chunks, buckets and merges; giving it always streams. "
    "Smaller is slower, never different.  [default: --memory-limit less the process's own, about "
    "320 MB]",
)
@click.option(
    "--work-dir",
    metavar="DIR|URI",
    default=None,
    help=f"Directory for a streaming run's spill files; giving it always streams.  "
    f"[default: OUTPUT_DIR/{WORK_DIR_NAME}]",
)
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Streaming and Ray: go on from the work of an interrupted run of the same command, or start over.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the run happens: this process, or Ray (local, or the cluster at --ray-address); "
    "ray needs pip install 'neardup[ray]'.",
)
@click.option(
    "--ray-address",
    metavar="ADDRESS",
    default=None,
    help="With --engine ray: the cluster to run on (auto, host:port or ray://host:port).  "
    "[default: a Ray started in this process]",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    help="With --engine ray: document ranges the shuffled stages work in; more means less memory "
    "per task, never a different result.  [default: 2 per CPU, or one per 256 MB of input]",
)
@click.option(
    "--split-size",
    metavar="SIZE",
    default=None,
    help="With --engine ray: bytes of input one task reads (JSON Lines; Parquet splits by row "
    "groups up to it); never a different result.  [default: 32MiB]",
)
@click.option(
    "--report",
    is_flag=True,
    help="Also write OUTPUT_DIR/report.html, the run's report (needs pip install 'neardup[report]').",
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
    tokenizer: Tokenizer | None,
    num_perm: int | None,
    seed: int | None,
    sketch: Sketch | None,
    threshold: float | None,
    bands: int | None,
    rows: int | None,
    fp_weight: float | None,
    layers: int | None,
    max_bucket_size: int | None,
    no_verify: bool,
    keep: KeepPolicy,
    nfkc: bool | None,
    keep_accents: bool,
    keep_case: bool,
    keep_punctuation: bool,
    match_empty: bool,
    containment: float | None,
    output_format: str | None,
    outputs: str | None,
    keep_layout: bool,
    on_error: Literal["stop", "skip"],
    workers: int | None,
    against: str | None,
    update_index: bool,
    memory_limit: str | None,
    work_memory: str | None,
    work_dir: str | None,
    resume: bool,
    engine: str,
    ray_address: str | None,
    partitions: int | None,
    split_size: str | None,
    report: bool,
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
    settings; a differing --shingle, --ngram, --tokenizer, --num-perm, --seed, --sketch, --threshold,
    --bands/--rows or normalisation option is refused. With --update-index the
    kept rows are added to the index (after the outputs are written), so the
    same command run again drops every row.

    Inputs estimated too large for --memory-limit (or any run given --work-dir
    or --work-memory) are streamed: read a batch at a time, their signatures, buckets and pairs
    spilled to the work dir, the outputs written a batch at a time. The results
    are the same. An interrupted streaming run resumes when the same command is
    run again; the work dir is removed when the run succeeds.

    With --engine ray the stages run on Ray (JSON Lines and Parquet inputs, local
    paths or filesystem URIs), with the same clusters; each table is a folder of
    parts, and an interrupted run resumes from its finished stages.

    With --containment C a row is a duplicate when at least C of its distinct
    shingles are in a larger row that is kept (rows are decided from the largest
    down); candidate_pairs gains a containment column. It runs in memory or in
    passes, not streamed, on Ray, with --against or with --report.
    """
    from neardup.jobs import DedupJob, RayOptions
    from neardup.jobs.on_ray import SPLIT_BYTES
    from neardup.memory import MemoryBudget

    if demo and inputs:
        _fail("give either INPUT files or --demo, not both", EXIT_USAGE)
    if not demo and not inputs:
        _fail("no INPUT given (try --demo for a built-in sample)", EXIT_USAGE)
    if update_index and against is None:
        _fail("--update-index needs --against PATH|URL", EXIT_USAGE)
    if update_index and id_column is None and not demo:
        _fail(_NEED_KEYS.format(what="--update-index"), EXIT_USAGE)
    if demo and (work_dir is not None or work_memory is not None):
        streams = "--work-dir" if work_dir is not None else "--work-memory"
        _fail(f"{streams} streams files; the --demo sample is read in memory", EXIT_USAGE)
    ray_given = {"--ray-address": ray_address, "--partitions": partitions, "--split-size": split_size}
    for flag, value in ray_given.items():
        if engine == "local" and value is not None:
            _fail(f"{flag} is for --engine ray", EXIT_USAGE)
    if engine == "ray" and (memory_limit is not None or work_memory is not None):
        given = "--memory-limit" if memory_limit is not None else "--work-memory"
        _fail(
            f"{given} sizes the local engine; on Ray each task's memory is bounded by --partitions",
            EXIT_USAGE,
        )
    settings = _given_settings(
        shingle=shingle,
        ngram=ngram,
        tokenizer=tokenizer,
        num_perm=num_perm,
        seed=seed,
        sketch=sketch,
        threshold=threshold,
        bands=bands,
        rows=rows,
        nfkc=nfkc,
        keep_accents=keep_accents,
        keep_case=keep_case,
        keep_punctuation=keep_punctuation,
    )
    settings.update(
        fp_weight=fp_weight,
        layers=layers,
        max_bucket_size=max_bucket_size,
        verify=False if no_verify else None,
        keep=keep,
        match_empty=match_empty or None,
        containment=containment,
    )
    with _errors():
        on_ray = engine == "ray"
        job = DedupJob(
            inputs=inputs,
            output_dir=output_dir if on_ray else Path(output_dir),
            settings=settings,
            read=_read_options(text_column, id_column, lines, on_error),
            demo=demo,
            output_format=output_format,
            outputs=outputs,
            keep_layout=keep_layout,
            against=against,
            update_index=update_index,
            memory_limit=memory_limit,
            work_memory=work_memory,
            work_dir=work_dir if on_ray or work_dir is None else Path(work_dir),
            resume=resume,
            engine="ray" if on_ray else "local",
            ray=RayOptions(address=ray_address, partitions=partitions, split_bytes=split_size or SPLIT_BYTES)
            if on_ray
            else None,
            report=report,
        )
        job.config()  # settings are checked before anything is read
        MemoryBudget.of(memory_limit, work_memory)
    if workers is not None:
        _set_workers(workers)
    if engine == "local":
        _prepare_kernels(quiet)
    else:
        collector.release()
        _unhide()  # Ray Data imports pandas
    err = new_console(stderr=True, quiet=quiet)
    # Ray prints its workers' messages (a worker lost and its task run again) on standard output,
    # which is the summary's: they go to standard error instead.
    output = contextlib.redirect_stdout(sys.stderr) if engine == "ray" else contextlib.nullcontext()
    with _errors(), interrupts.DeferredInterrupt(), _progress(err) as on_progress, output:
        summary = _run_job(job, _Events(err, on_progress))
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    elif not quiet:
        _print_summary(new_console(), summary)


def _run_job(job: Any, events: Any) -> dict[str, Any]:
    from neardup.jobs import run_dedup

    summary: dict[str, Any] = run_dedup(job, events)
    return summary


def _prepare_kernels(quiet: bool) -> None:
    """numba's set-up and the kernels' loading overlap reading the input; then LLVM's pages go.
    A cold cache compiles part of the kernels on another core, and says so once."""
    from neardup.core.jit import load_from_cache_without_registries, set_up_in_background, threads
    from neardup.warm import cache_is_cold, load_kernels_and_release_compiler, start_if_cold

    def load_kernels() -> None:
        try:
            load_kernels_and_release_compiler()
        finally:
            collector.release()

    load_from_cache_without_registries()
    set_up_in_background(then=load_kernels)
    if threads() > 1:
        start_if_cold()  # part of the kernels compile on another core
    if not quiet and cache_is_cold():
        click.echo("neardup: compiling kernels (first run only; later runs load them)", err=True)


class _Events:
    """The run's events drawn on standard error: the shape line, progress bars, skipped records."""

    def __init__(self, console: Console | QuietConsole, on_progress: Any) -> None:
        self.console = console
        self.progress = on_progress

    def shape(self, config: DedupConfig) -> None:
        _print_shape(self.console, config)

    def skipped(self, problems: Any) -> None:
        _report_skipped(problems)

    def note(self, message: str) -> None:
        self.console.print(f"neardup: {message}", highlight=False, soft_wrap=True, markup=False)


def _read_options(text_column: str, id_column: str | None, lines: bool, on_error: str) -> Any:
    from neardup.io import ReadOptions

    return ReadOptions(text_column=text_column, id_column=id_column, lines=lines, on_error=on_error)  # type: ignore[arg-type]


@contextmanager
def _errors() -> Iterator[None]:
    """neardup's errors as messages and exit codes: settings 2, inputs, outputs and indexes 1;
    an interrupt 130. Notes on the error (where a streamed run's work is kept) follow it."""
    from neardup.errors import ConfigError, InputError, OutputError, StorageError

    try:
        yield
    except KeyboardInterrupt as exc:
        _fail_with_notes("interrupted", 130, exc)
    except ConfigError as exc:
        _fail_with_notes(_flag_names(str(exc)), EXIT_USAGE, exc)
    except StorageError as exc:
        # imported here: a run without an index loads none of the index code
        from neardup.index.opening import IndexExistsError, IndexNotFoundError

        if isinstance(exc, IndexNotFoundError):
            build = f"neardup index build CORPUS... --index {redact_url(exc.url)}"
            _fail(f"{exc}; create one with: {build}", EXIT_INPUT)
        if isinstance(exc, IndexExistsError):
            _fail(f"{exc}; add to it with neardup index add, or pass --replace to build it anew", EXIT_INPUT)
        _fail_with_notes(str(exc), EXIT_INPUT, exc)
    except (InputError, OutputError, OSError) as exc:
        _fail_with_notes(str(exc), EXIT_INPUT, exc)


def _fail_with_notes(message: str, code: int, exc: BaseException) -> NoReturn:
    click.echo(f"neardup: error: {message}", err=True)
    for note in getattr(exc, "__notes__", ()):
        click.echo(f"neardup: {note}", err=True)
    sys.exit(code)


_FLAGS = {
    "keep_shingles=True": "--keep-shingles",
    "update_index": "--update-index",
    "memory_limit": "--memory-limit",
    "work_memory": "--work-memory",
    "api_keys": "--api-keys",
    "insecure_no_auth": "--insecure-no-auth",
    "ssl_certfile": "--ssl-certfile",
    "ssl_keyfile": "--ssl-keyfile",
    "work_dir": "--work-dir",
    "against needs": "--against needs",
    "unknown output": "unknown --outputs table",
    "keep_layout": "--keep-layout",
    "outputs names": "--outputs names",
    "id_column": "--id-column",
    "text_column": "--text-column",
    "on_error": "--on-error",
    "num_perm": "--num-perm",
    "fp_weight": "--fp-weight",
    "layers": "--band-layers",
    "max_bucket_size": "--max-bucket-size",
    "top_k": "--top-k",
    "ngram": "--ngram",
    "tokenizer": "--tokenizer",
    "threshold": "--threshold",
    "bands": "--bands",
    "rows": "--rows",
    "seed": "--seed",
    "sketch": "--sketch",
}
_FLAG_WORDS = re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in _FLAGS) + r")(?![\w-])")


def _flag_names(message: str) -> str:
    """A library message about settings with the command's flags in place of keyword names."""
    return _FLAG_WORDS.sub(lambda m: _FLAGS[m.group(1)], message)


def _print_shape(console: Console | QuietConsole, config: DedupConfig) -> None:
    from neardup.core.params import describe_shape, lsh_shape, s_curve

    b, r = lsh_shape(config.lsh, config.minhash)
    curve = s_curve(config.lsh.threshold, b, r)
    console.print(
        f"LSH shape: {describe_shape(b, r, config.minhash.num_perm)}. Chance of becoming a candidate: "
        f"{curve['p_below']:.3f} at J={curve['j_below']:.2f}, "
        f"{curve['p_at']:.3f} at J={curve['j_at']:.2f}, "
        f"{curve['p_above']:.3f} at J={curve['j_above']:.2f}",
        highlight=False,
        soft_wrap=True,
    )


def _report_skipped(skipped: Any) -> None:
    for problem in skipped[:_MAX_SKIP_LINES]:
        click.echo(f"neardup: skipped: {problem}", err=True)
    if len(skipped) > _MAX_SKIP_LINES:
        click.echo(
            f"neardup: skipped {len(skipped) - _MAX_SKIP_LINES} more records (all listed in summary.json)",
            err=True,
        )


def _set_workers(workers: int) -> None:
    import numba

    numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


@contextmanager
def _progress(console: Console | QuietConsole) -> Iterator[Any]:
    """Progress bars for the stages; each report is also where a Ctrl-C is raised (see
    :mod:`neardup.interrupts`)."""
    if isinstance(console, QuietConsole):  # no bars, and rich's not imported
        yield lambda stage, done, total: interrupts.check()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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
        "pages": "Copying pages",
        "documents": "Copying documents",
        "points": "Settings scored",
    }
    bar = Progress(
        TextColumn("{task.description:<20}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, Any] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        interrupts.check()
        if not tasks:
            bar.start()  # at the first report: an error before it prints no empty display
        if stage not in tasks:
            tasks[stage] = bar.add_task(labels.get(stage, stage), total=max(total, 1))
        bar.update(tasks[stage], completed=done if total else 1, total=max(total, 1))

    try:
        yield on_progress
    finally:
        if tasks:
            bar.stop()


def _words_of(summary: dict[str, Any]) -> str:
    """`` of jieba words`` when the run's words came from a segmenter, else nothing."""
    tokenizer = summary.get("config", {}).get("shingle", {}).get("tokenizer", "builtin")
    return "" if tokenizer == "builtin" else f" of {tokenizer} words"


def _print_summary(console: Console | QuietConsole, s: dict[str, Any]) -> None:
    from rich.table import Table

    from neardup.core.params import second_layer_bands

    table = Table(title="neardup dedup", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right", overflow="fold")  # a long path folds, never cut
    second = second_layer_bands(s["bands"], s["rows"], s["num_perm"])
    rows = [
        ("Input rows", f"{s['input_rows']:,}"),
        ("Skipped records", f"{s['skipped_records']:,}"),
        ("Empty documents", f"{s['empty_documents']:,}"),
        ("Shingles", f"{s['shingle']} {s['ngram']}-grams" + _words_of(s)),
        ("LSH shape", f"{s['bands']} bands x {s['rows']} rows ({s['num_perm']} permutations)"),
        *([("Second layer", f"{second} of the {s['bands']} bands")] if second else []),
        ("Threshold", f"{s['threshold']}")
        if s.get("containment") is None
        else ("Containment", f"at least {s['containment']} of a row in a larger kept row"),
        ("Buckets with collisions", f"{s['buckets_with_collisions']:,}"),
        ("Candidate pairs", f"{s['candidate_pairs']:,}"),
        ("Verified pairs", "-" if s["verified_pairs"] is None else f"{s['verified_pairs']:,}"),
        ("Clusters", f"{s['clusters']:,}"),
        ("Duplicates removed", f"{s['duplicates_removed']:,}"),
        ("Kept", f"{s['kept_rows']:,} ({_percent(s['kept_rows'], s['input_rows'])})"),
        ("Seconds", f"{s['seconds']['total']:.2f}"),
        ("Output", f"{s['output_dir']} ({s['output_format']})"),
    ]
    engine = s.get("engine")
    if engine is not None:
        mode = _MODES.get(engine["mode"], engine["mode"])
        rows.insert(-2, ("Mode", mode))
        if engine["mode"] == "ray":
            ray = engine["ray"]
            cpus = f"{ray['nodes']} node{'s' if ray['nodes'] != 1 else ''}, {ray['cpus']} CPUs"
            rows.insert(-2, ("Ray", f"{ray['address']} ({cpus})"))
            rows.insert(-2, ("Splits, partitions", f"{engine['splits']:,}, {engine['partitions']:,}"))
            rows.insert(-2, ("Bytes shuffled", _size(sum(engine["bytes_shuffled"].values()))))
            rows.insert(-2, ("Stages resumed", ", ".join(engine["stages_resumed"]) or "none"))
        else:
            limit = _size(engine["memory_limit"])
            if "work_memory" in engine:
                limit += f" (work {_size(engine['work_memory'])})"
            rows.insert(-2, ("Memory limit", limit))
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


_NEED_KEYS = (
    "{what} needs --id-column: index keys are the id column's values, and generated row numbers "
    "would clash between runs"
)


def _given_settings(
    *,
    shingle: ShingleMode | None,
    ngram: int | None,
    tokenizer: Tokenizer | None,
    num_perm: int | None,
    seed: int | None,
    sketch: Sketch | None,
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
        "tokenizer": tokenizer,
        "num_perm": num_perm,
        "seed": seed,
        "sketch": sketch,
        "threshold": threshold,
        "bands": bands,
        "rows": rows,
        "nfkc": nfkc,
        "strip_accents": False if keep_accents else None,
        "lowercase": False if keep_case else None,
        "strip_punctuation": False if keep_punctuation else None,
    }


class _WithoutUnused:
    """An import finder (``importlib.abc.MetaPathFinder``'s protocol; not its subclass, as
    ``importlib.abc`` alone imports 12 ms of modules) for which the packages in ``hidden`` are
    not installed, and those in ``hidden_from`` are not for the one module named with each
    (others import them as usual)."""

    def __init__(self, hidden: frozenset[str], hidden_from: dict[str, str]) -> None:
        self.hidden = hidden
        self.hidden_from = hidden_from

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        top = fullname.partition(".")[0]
        if top in self.hidden or (top in self.hidden_from and _importer() == self.hidden_from[top]):
            raise ModuleNotFoundError(f"the neardup command runs without {top}", name=fullname)


def _importer() -> str | None:
    """The module whose import statement is being carried out (the first frame outside the
    import machinery and this finder)."""
    frame: FrameType | None = sys._getframe(2)  # _importer's caller is find_spec
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(("importlib", "_frozen_importlib")):
            return str(name)
        frame = frame.f_back
    return None


def _hide_unused() -> None:
    """Hide pandas, scipy and dateutil from this process (those of them not imported yet), and
    from numba the two packages it imports only for features the command never uses: cffi
    (kernels that call cffi functions) and, when the working folder has no ``.numba_config.yaml``,
    PyYAML. pyarrow imports dateutil at its first numpy conversion (8.6 ms), to read
    ``relativedelta`` objects, which the command never makes."""
    hidden = frozenset(name for name in ("pandas", "scipy", "dateutil") if name not in sys.modules)
    hidden_from = {"cffi": "numba.core.typing.cffi_utils"}
    if not os.path.exists(".numba_config.yaml"):
        hidden_from["yaml"] = "numba.core.config"
    hidden_from = {name: importer for name, importer in hidden_from.items() if name not in sys.modules}
    sys.meta_path.insert(0, _WithoutUnused(hidden, hidden_from))


def _unhide() -> None:
    """Undo :func:`_hide_unused`."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _WithoutUnused)]


def run() -> NoReturn:
    """The ``neardup`` command: :func:`main`, then out without the interpreter's teardown.

    Tearing down (freeing every object and module one by one) took 0.4-0.5 s after a run on
    100,000 documents, about a tenth of the run. Everything the command does is finished and
    closed by then (outputs committed, work dirs and locks released in ``with`` blocks); only
    standard output and error are left to flush, as ``mypy`` does the same.

    The command uses neither pandas nor scipy, but pyarrow imports pandas (where installed) at
    the first conversion to numpy, to look for pandas types (0.37 s and 40 MB), and numba's
    set-up imports ``scipy.linalg`` (where installed) to see whether its kernels may call BLAS,
    which neardup's never do (0.19-0.21 s of the 0.37-0.42 s set-up, before the first kernel can
    load). :func:`_hide_unused` hides both from this process (and dateutil, which pyarrow imports
    beside pandas), and cffi and PyYAML from numba (0.07 s of imports), and pyarrow and numba go
    on as where they are not installed. Its
    threads share one malloc arena (:mod:`neardup.core.malloc_arenas`).
    """
    _hide_unused()
    share_one_arena()  # before any thread starts
    collector.hold()  # until the modules and kernels are loaded
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


from neardup import cli_eval as _cli_eval  # noqa: E402, F401  (registers eval)
from neardup import cli_index as _cli_index  # noqa: E402, F401  (registers the index commands)
from neardup import cli_report as _cli_report  # noqa: E402, F401  (registers report)
from neardup import cli_service as _cli_service  # noqa: E402, F401  (registers serve and check)
