"""``neardup report`` and ``neardup tune``: the HTML report of a finished run, and the tuning
sweep over a labelled corpus."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neardup.cli import EXIT_USAGE, _errors, _fail, _progress, _quiet, _text_column, main
from neardup.cli_console import new_console
from neardup.cli_eval import read_truth_options, truth_options

if TYPE_CHECKING:
    from rich.table import Table


@main.command("report")
@click.argument("out_dir", metavar="OUT_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where the page goes.  [default: OUT_DIR/report.html]",
)
@truth_options(required=False)
@click.option(
    "--sample",
    "candidate_sample",
    type=click.IntRange(min=1),
    default=None,
    help="Candidate pairs whose Jaccard is recomputed for the histogram and the pairs near the "
    "threshold.  [default: 100,000]",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the samples the report draws.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def report(
    out_dir: Path,
    output: Path | None,
    truth_file: str | None,
    truth_id_column: str,
    truth_group_column: str,
    truth_category_column: str | None,
    candidate_sample: int | None,
    seed: int,
    quiet: bool,
) -> None:
    """Write one self-contained HTML page about the run in OUT_DIR (a neardup dedup output folder).

    The page opens from disk and needs no network: the run's settings and figures, the S-curve
    with the threshold, the candidate pairs' Jaccard (linked and dropped), cluster sizes, the
    largest clusters with chains flagged, the pairs near the threshold, side-by-side views of
    pairs with their shared shingles, and search. It samples to stay small on any corpus and
    says what it sampled. With --truth it adds the run's scores against those labels
    (as neardup eval gives them).
    """
    from dataclasses import replace

    from neardup.report import write_report
    from neardup.report.data import ReportLimits
    from neardup.report.evaluation import evaluate

    limits = ReportLimits(seed=seed)
    if candidate_sample is not None:
        limits = replace(limits, candidate_sample=candidate_sample)
    with _errors():
        evaluation = None
        if truth_file is not None:
            truth = read_truth_options(truth_file, truth_id_column, truth_group_column, truth_category_column)
            evaluation = evaluate(out_dir, truth).to_dict()
        path = write_report(out_dir, output, limits=limits, evaluation=evaluation)
    if not quiet:
        click.echo(f"Report: {path} ({path.stat().st_size / 1e6:.1f} MB)")


def _floats(text: str | None, name: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        _fail(f"{name} takes numbers separated by commas, not {text!r}", EXIT_USAGE)


def _ints(text: str | None, name: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        _fail(f"{name} takes whole numbers separated by commas, not {text!r}", EXIT_USAGE)


def _check_list(flag: str, values: tuple[Any, ...], ok: Callable[[Any], bool], wanted: str) -> None:
    """A grid option's values: at least one, each ``ok``, none twice; else a usage error naming it."""
    if not values:
        _fail(f"{flag} needs at least one value", EXIT_USAGE)
    bad = [v for v in values if not ok(v)]
    if bad:
        _fail(f"{flag} takes {wanted}, not {bad[0]!r}", EXIT_USAGE)
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        _fail(f"{flag} gives {twice[0]!r} twice", EXIT_USAGE)


def _grid(
    thresholds: str | None,
    shingles: str | None,
    word_ngrams: str | None,
    char_ngrams: str | None,
    normalisations: str | None,
) -> Any:
    from neardup.report.tuning import NORMALISATIONS, TuneGrid

    given: dict[str, Any] = {}
    if (t := _floats(thresholds, "--thresholds")) is not None:
        _check_list("--thresholds", t, lambda v: 0 < v <= 1, "numbers in (0, 1]")
        given["thresholds"] = t
    if shingles is not None:
        modes = tuple(s.strip() for s in shingles.split(",") if s.strip())
        _check_list("--shingles", modes, lambda v: v in ("word", "char"), "word or char")
        given["shingles"] = modes
    for flag, text, key in (
        ("--word-ngrams", word_ngrams, "word_ngrams"),
        ("--char-ngrams", char_ngrams, "char_ngrams"),
    ):
        if (ns := _ints(text, flag)) is not None:
            _check_list(flag, ns, lambda v: 1 <= v <= 64, "whole numbers from 1 to 64")
            given[key] = ns
    if normalisations is not None:
        names = [n.strip() for n in normalisations.split(",") if n.strip()]
        unknown = [n for n in names if n not in NORMALISATIONS]
        if unknown:
            known = ", ".join(NORMALISATIONS)
            _fail(f"--normalisations: unknown {unknown[0]!r} (known: {known})", EXIT_USAGE)
        given["normalisations"] = tuple(NORMALISATIONS[n] for n in names)
    return TuneGrid(**given)


@main.command("tune")
@click.argument("inputs", nargs=-1, required=True, metavar="CORPUS...")
@truth_options(required=True)
@_text_column
@click.option(
    "--id-column",
    default=None,
    help="The corpus's id column, matched with the truth's ids.  [default: a generated row_id]",
)
@click.option(
    "--sample",
    type=click.IntRange(min=2),
    default=None,
    help="Sweep at most N labelled rows, whole true groups at a time.  [default: every labelled row]",
)
@click.option(
    "--min-precision",
    type=click.FloatRange(0, 1),
    default=0.9,
    show_default=True,
    help="The pair precision a recommended setting must reach.",
)
@click.option("--thresholds", default=None, help="Thresholds to try.  [default: 0.5,0.6,0.7,0.8,0.9]")
@click.option("--shingles", default=None, help="Shingle modes to try.  [default: word,char]")
@click.option("--word-ngrams", default=None, help="n of the word mode.  [default: 2,3,5]")
@click.option("--char-ngrams", default=None, help="n of the char mode.  [default: 3,5]")
@click.option(
    "--normalisations",
    default=None,
    help="Normalisations to try: default (all on), keep-case-punctuation, raw (none).  "
    "[default: default,keep-case-punctuation]",
)
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the sample.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("tune.html"),
    show_default=True,
    help="The sweep's page: precision/recall curves and every point.",
)
@_quiet
@click.option("--json", "as_json", is_flag=True, help="Print the sweep as one JSON object.")
def tune_command(
    inputs: tuple[str, ...],
    truth_file: str,
    truth_id_column: str,
    truth_group_column: str,
    truth_category_column: str | None,
    text_column: str,
    id_column: str | None,
    sample: int | None,
    min_precision: float,
    thresholds: str | None,
    shingles: str | None,
    word_ngrams: str | None,
    char_ngrams: str | None,
    normalisations: str | None,
    seed: int,
    output: Path,
    quiet: bool,
    as_json: bool,
) -> None:
    """Sweep threshold x shingle mode and n x normalisation over the labelled rows of CORPUS and
    recommend the setting with the best pair F1 whose precision reaches --min-precision.

    Signatures are computed once per shingle setting and normalisation, and each candidate pair's
    exact Jaccard once, whatever the number of thresholds. Prints the best points and the
    neardup dedup command of the recommended one, and writes the precision/recall curves to
    --output.
    """
    from neardup.io import ReadOptions
    from neardup.report.html import render_tune, write_html
    from neardup.report.tune_files import TuneJob, run_tune

    with _errors():
        grid = _grid(thresholds, shingles, word_ngrams, char_ngrams, normalisations)
        truth = read_truth_options(truth_file, truth_id_column, truth_group_column, truth_category_column)
        job = TuneJob(
            inputs=inputs,
            truth=truth,
            read=ReadOptions(text_column=text_column, id_column=id_column),
            sample=sample,
            grid=grid,
            min_precision=min_precision,
            seed=seed,
        )
        err = new_console(stderr=True, quiet=quiet or as_json)
        with _progress(err) as on_progress:
            outcome = run_tune(job, on_progress)
        data = outcome.to_dict()
        data["corpus"] = " ".join(inputs)
        write_html(render_tune(data), output)
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if quiet:
        return
    out = new_console()
    out.print(_points_table(data))
    rec = data["recommended"]
    if rec is None:
        out.print(f"No recommendation: {data['reason']}", highlight=False)
    else:
        out.print(
            f"Recommended: {rec['label']} at threshold {rec['threshold']} "
            f"(precision {rec['pair_precision']:.4f}, recall {rec['pair_recall']:.4f}, "
            f"F1 {rec['pair_f1']:.4f})",
            highlight=False,
        )
        out.print(data["command"], highlight=False, markup=False, soft_wrap=True)
    out.print(f"Precision/recall curves: {output}", highlight=False)


def _points_table(data: dict[str, Any], shown: int = 10) -> Table:
    points = [{"label": s["label"], **p} for s in data["settings"] for p in s["points"]]
    points.sort(key=lambda p: (-p["pair_f1"], -p["threshold"]))
    title = (
        f"neardup tune: {data['swept_rows']:,} rows ({data['true_pairs']:,} true pairs), "
        f"{len(points)} points, {data['signature_computations']} signature passes, "
        f"{data['seconds']:.2f} s"
    )
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in ("Setting", "Threshold", "Precision", "Recall", "F1"):
        table.add_column(name, justify="left" if name == "Setting" else "right")
    floor = data["min_precision"]
    for p in points[:shown]:
        mark = "" if p["pair_precision"] >= floor else " (below floor)"
        table.add_row(
            p["label"],
            f"{p['threshold']:g}",
            f"{p['pair_precision']:.4f}{mark}",
            f"{p['pair_recall']:.4f}",
            f"{p['pair_f1']:.4f}",
        )
    return table
