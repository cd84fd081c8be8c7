"""The ``neardup`` command: parse, call the library, render.

Exit codes: 0 success, 1 an input or output problem, 2 a usage or settings problem.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from neardup import __version__
from neardup.config import KEEP_POLICIES, DedupConfig, KeepPolicy, ShingleMode
from neardup.core.params import lsh_shape, s_curve
from neardup.errors import ConfigError, InputError, OutputError
from neardup.io import OUTPUT_FORMATS, Corpus, OutputDir, ReadOptions, default_output_format, read_corpus
from neardup.outputs import build_tables
from neardup.pipeline import arrow_to_batch, find_duplicates

EXIT_INPUT = 1
EXIT_USAGE = 2
_MAX_SKIP_LINES = 20
_D = DedupConfig()  # the defaults shown in --help


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"neardup: error: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="neardup")
def main() -> None:
    """Find and remove near-duplicate texts with MinHash and LSH."""


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
@click.option("--text-column", default="text", show_default=True, help="Column or field holding the text.")
@click.option(
    "--id-column", default=None, help="Column with a unique id per row [default: a generated row_id]."
)
@click.option("--lines", is_flag=True, help="Plain-text inputs: one document per line, not per file.")
@click.option(
    "--shingle",
    type=click.Choice(["word", "char"]),
    default=None,
    help=f"Shingle unit: word n-grams or character n-grams.  [default: {_D.shingle.mode}]",
)
@click.option("--ngram", type=int, default=None, help=f"Tokens per shingle.  [default: {_D.shingle.n}]")
@click.option(
    "--num-perm", type=int, default=None, help=f"MinHash permutations.  [default: {_D.minhash.num_perm}]"
)
@click.option(
    "--seed", type=int, default=None, help=f"Seed of the permutations.  [default: {_D.minhash.seed}]"
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help=f"Jaccard similarity that makes a duplicate, in (0, 1].  [default: {_D.lsh.threshold}]",
)
@click.option("--bands", type=int, default=None, help="LSH bands (with --rows; bands * rows = num_perm).")
@click.option("--rows", type=int, default=None, help="Rows per LSH band (with --bands).")
@click.option(
    "--fp-weight",
    type=float,
    default=None,
    help="Weight of false positives when choosing bands/rows; false negatives get 1 - W.  "
    f"[default: {_D.lsh.fp_weight}]",
)
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
@click.option(
    "--nfkc/--no-nfkc",
    default=None,
    help="Fold full-width forms, ligatures and other compatibility characters.  "
    f"[default: {'on' if _D.text.nfkc else 'off'}]",
)
@click.option("--keep-accents", is_flag=True, help="Do not strip accents and other combining marks.")
@click.option("--keep-case", is_flag=True, help="Do not lower-case.")
@click.option("--keep-punctuation", is_flag=True, help="Keep punctuation and symbols as word characters.")
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
@click.option(
    "--on-error",
    type=click.Choice(["stop", "skip"]),
    default="stop",
    show_default=True,
    help="On a bad record: stop, or skip it and report it.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Threads for the compiled stages [default: all cores].",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no summary table.")
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
    quiet: bool,
    as_json: bool,
) -> None:
    """Deduplicate INPUT files (JSONL, CSV, Parquet, text, HTML; files, folders or globs).

    Writes annotated, deduped, duplicates, clusters, candidate_pairs and
    lsh_buckets tables plus summary.json into OUTPUT_DIR.
    """
    if demo and inputs:
        _fail("give either INPUT files or --demo, not both", EXIT_USAGE)
    if not demo and not inputs:
        _fail("no INPUT given (try --demo for a built-in sample)", EXIT_USAGE)
    try:
        config = DedupConfig.create(
            threshold=threshold,
            shingle=shingle,
            ngram=ngram,
            num_perm=num_perm,
            seed=seed,
            bands=bands,
            rows=rows,
            fp_weight=fp_weight,
            max_bucket_size=max_bucket_size,
            nfkc=nfkc,
            strip_accents=not keep_accents,
            lowercase=not keep_case,
            strip_punctuation=not keep_punctuation,
            verify=not no_verify,
            keep=keep,
            match_empty=match_empty,
        )
        options = ReadOptions(text_column=text_column, id_column=id_column, lines=lines, on_error=on_error)
    except ConfigError as exc:
        _fail(str(exc), EXIT_USAGE)
    if workers is not None:
        _set_workers(workers)

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
    with _progress(err) as on_progress:
        result = find_duplicates(
            arrow_to_batch(corpus.table.column(corpus.text_column)), config, progress=on_progress
        )
        t_write = time.perf_counter()
        tables = build_tables(corpus.table, corpus.id_column, result)
        summary = _summary(corpus, result.summary(), output_dir, fmt, read_seconds)
        try:
            with OutputDir(output_dir) as target:
                for done, (name, table) in enumerate(tables.items()):
                    on_progress("write", done, len(tables))
                    target.write(name, table, fmt)
                on_progress("write", len(tables), len(tables))
                summary["seconds"]["write"] = round(time.perf_counter() - t_write, 4)
                summary["seconds"]["total"] = round(time.perf_counter() - t0, 4)
                target.write_json("summary.json", summary)
        except (OutputError, OSError) as exc:
            _fail(str(exc), EXIT_INPUT)
    if as_json:
        click.echo(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_summary(Console(quiet=quiet), summary)


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


def _report_skipped(corpus: Corpus) -> None:
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
    corpus: Corpus, figures: dict[str, Any], output_dir: Path, fmt: str, read_seconds: float
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
    labels = {
        "signatures": "MinHash signatures",
        "buckets": "LSH buckets",
        "pairs": "Candidate pairs",
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
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
