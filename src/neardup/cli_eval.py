"""``neardup eval``: a finished run scored against labels."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from neardup.cli import _errors, main

if TYPE_CHECKING:
    from rich.table import Table

_F = TypeVar("_F", bound=Callable[..., Any])


def truth_options(*, required: bool) -> Callable[[_F], _F]:
    """``--truth`` and the options that say how to read it (eval, report and tune share them)."""
    options = (
        click.option(
            "--truth",
            "truth_file",
            required=required,
            metavar="FILE",
            help="The labels: JSONL, CSV or Parquet, a group per row (id, group) or duplicate pairs "
            "(id_a, id_b).",
        ),
        click.option(
            "--truth-id-column", default="id", show_default=True, help="The truth's id column (groups form)."
        ),
        click.option(
            "--truth-group-column", default="group", show_default=True, help="The truth's group column."
        ),
        click.option(
            "--truth-category-column",
            default=None,
            metavar="C",
            help="Column of categories to give recall by.  [default: 'category' when present]",
        ),
    )

    def apply(f: _F) -> _F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def read_truth_options(
    truth_file: str, truth_id_column: str, truth_group_column: str, truth_category_column: str | None
) -> Any:
    """The truth file the options name (errors are the library's: wrap in ``_errors()``)."""
    from neardup.report.evaluation import read_truth

    return read_truth(
        truth_file,
        id_column=truth_id_column,
        group_column=truth_group_column,
        category_column=truth_category_column,
    )


@main.command("eval")
@click.argument("out_dir", metavar="OUT_DIR")
@truth_options(required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def eval_command(
    out_dir: str,
    truth_file: str,
    truth_id_column: str,
    truth_group_column: str,
    truth_category_column: str | None,
    as_json: bool,
) -> None:
    """Score the run in OUT_DIR (written by neardup dedup) against the labels in --truth.

    Pair precision, recall and F1 count pairs of rows in one cluster against pairs in one true
    group; ARI is the adjusted Rand index; a removal is right when its kept row is in its true
    group. With a group per row, run rows absent from the truth are left out; with pairs, every
    run row counts and the true groups are the pairs' connected components.
    """
    from neardup.report.evaluation import evaluate

    with _errors():
        truth = read_truth_options(truth_file, truth_id_column, truth_group_column, truth_category_column)
        figures = evaluate(out_dir, truth).to_dict()
    if as_json:
        click.echo(json.dumps(figures, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    console = Console()
    console.print(_scores_table(figures, truth_file))
    if figures["recall_by_category"] is not None:
        console.print(_category_table(figures))


def _scores_table(e: dict[str, Any], truth_file: str) -> Table:
    from rich.table import Table

    table = Table(title="neardup eval", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right", overflow="fold")
    evaluated = f"{e['rows_evaluated']:,} of {e['run_rows']:,}"
    rows = [
        ("Truth", truth_file),
        ("Truth form", "a group per row" if e["truth_form"] == "groups" else "duplicate pairs"),
        ("Rows evaluated", evaluated),
        ("Run rows without truth", f"{e['run_rows_without_truth']:,}"),
        ("Truth ids not in the run", f"{e['truth_ids_not_in_run']:,}"),
    ]
    if e["truth_pairs_not_in_run"] is not None:
        rows.append(("Truth pairs not in the run", f"{e['truth_pairs_not_in_run']:,}"))
    rows += [
        ("True pairs", f"{e['true_pairs']:,}"),
        ("Predicted pairs", f"{e['predicted_pairs']:,}"),
        ("True positive pairs", f"{e['true_positive_pairs']:,}"),
        ("Pair precision", f"{e['pair_precision']:.4f}"),
        ("Pair recall", f"{e['pair_recall']:.4f}"),
        ("Pair F1", f"{e['pair_f1']:.4f}"),
        ("ARI", f"{e['ari']:.4f}"),
        ("Removed", f"{e['removed']:,}"),
        ("Correct removals", f"{e['correct_removals']:,}"),
        ("Should remove", f"{e['should_remove']:,}"),
        ("Removal precision", f"{e['removal_precision']:.4f}"),
        ("Removal recall", f"{e['removal_recall']:.4f}"),
    ]
    if e["removals_not_judged"]:
        rows.append(("Removals not judged", f"{e['removals_not_judged']:,}"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def _category_table(e: dict[str, Any]) -> Table:
    from rich.table import Table

    unit = "Pairs" if e["truth_form"] == "pairs" else "Rows"
    table = Table(title="Recall by category", title_justify="left")
    table.add_column("Category", style="bold", overflow="fold")
    table.add_column(unit, justify="right")
    table.add_column("Found", justify="right")
    table.add_column("Recall", justify="right")
    for name, recall in e["recall_by_category"].items():
        counts = e["category_counts"][name]
        shown = "-" if recall is None else f"{recall:.4f}"
        table.add_row(name, f"{counts['counted']:,}", f"{counts['found']:,}", shown)
    return table
