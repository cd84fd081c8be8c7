"""``neardup report``: the HTML report of a finished run."""

from __future__ import annotations

from pathlib import Path

import click

from neardup.cli import _errors, main


@main.command("report")
@click.argument("out_dir", metavar="OUT_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where the page goes.  [default: OUT_DIR/report.html]",
)
@click.option(
    "--sample",
    "candidate_sample",
    type=click.IntRange(min=1),
    default=None,
    help="Candidate pairs whose Jaccard is recomputed for the histogram and the pairs near the "
    "threshold.  [default: 200,000]",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the samples the report draws.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def report(out_dir: Path, output: Path | None, candidate_sample: int | None, seed: int, quiet: bool) -> None:
    """Write one self-contained HTML page about the run in OUT_DIR (a neardup dedup output folder).

    The page opens from disk and needs no network: the run's settings and figures, the S-curve
    with the threshold, the candidate pairs' Jaccard (linked and dropped), cluster sizes, the
    largest clusters with chains flagged, the pairs near the threshold, side-by-side views of
    pairs with their shared shingles, and search. It samples to stay small on any corpus and
    says what it sampled.
    """
    from dataclasses import replace

    from neardup.report import write_report
    from neardup.report.data import ReportLimits

    limits = ReportLimits(seed=seed)
    if candidate_sample is not None:
        limits = replace(limits, candidate_sample=candidate_sample)
    with _errors():
        path = write_report(out_dir, output, limits=limits)
    if not quiet:
        click.echo(f"Report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
