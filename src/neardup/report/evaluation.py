"""A finished run measured against labels: pair precision, recall, F1 and the adjusted Rand index
of its clusters, how many of its removals were right, and recall by category.

The truth is a JSON Lines, CSV or Parquet file in one of two forms:

* **groups**: a row per document, its id and its group (columns ``id`` and ``group`` by default);
  documents of one group are duplicates of each other, a group of one is a document without
  duplicates. Run rows whose id is not in the file are left out of the evaluation (and counted),
  and so are truth ids that the run does not have.
* **pairs**: a row per duplicate pair (columns ``id_a`` and ``id_b``), chosen when the file has
  those columns and not the group column. Every run row is evaluated; the true groups are the
  connected components of the pairs, and a run row named in no pair is a group of its own. A
  pair naming an id that the run does not have is left out (and counted).

Ids and groups are compared as strings (an integer as its digits). An optional category column
(``category`` when present, or one named) gives recall by category: see :class:`Evaluation`.

:func:`evaluate` reads a run's output folder; :func:`evaluate_labels` does the arithmetic on
arrays aligned with the run's rows, for callers that already hold them (the tuning sweep).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from neardup.core.clusters import components
from neardup.errors import InputError
from neardup.report.metrics import dense_labels, pair_scores, singletons_apart
from neardup.report.tables import as_strings, positions_in, read_assignment, read_summary

TruthForm = Literal["groups", "pairs"]
PAIR_COLUMNS = ("id_a", "id_b")
DEFAULT_CATEGORY_COLUMN = "category"
_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
_READ_ERRORS = (
    OSError,
    UnicodeDecodeError,
    csv.Error,
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
)


@dataclass(frozen=True)
class Categories:
    """A category for each row of the evaluation or each truth pair.

    ``codes`` index ``names`` (-1: no category). With ``pairs`` None the codes are per run row
    (the groups form); otherwise ``pairs`` holds the run positions of each truth pair's two ids
    and the codes are per pair (the pairs form)."""

    names: tuple[str, ...]
    codes: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class TruthLabels:
    """The truth aligned with a run's rows: ``labels`` (int64, one per run row, equal within a
    true group, -1 for a row left out because the truth does not name it) and what did not
    match."""

    labels: np.ndarray
    form: TruthForm = "groups"
    truth_ids_not_in_run: int = 0
    truth_pairs_not_in_run: int | None = None
    categories: Categories | None = None


@dataclass(frozen=True)
class Truth:
    """A truth file read by :func:`read_truth`.

    Groups form: ``ids`` (unique strings) and ``groups`` (int64, one per id). Pairs form:
    ``ids`` and ``other`` are the two ids of each pair. ``categories`` (strings, null or empty
    for none) are per id or per pair."""

    path: str
    form: TruthForm
    id_column: str
    ids: pa.Array
    groups: np.ndarray | None = None
    other: pa.Array | None = None
    categories: pa.Array | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def labels_for(self, run_ids: pa.Array, *, run_id_column: str | None = None) -> TruthLabels:
        """The truth as labels of the run rows with ids ``run_ids`` (strings, in row order).

        An :class:`InputError` when no truth id is among ``run_ids``: the truth or the run was
        probably read with the wrong id column (``run_id_column`` names the run's, for the
        message)."""
        run_ids = as_strings(run_ids)
        if self.form == "groups":
            return self._group_labels(run_ids, run_id_column)
        return self._pair_labels(run_ids, run_id_column)

    def _group_labels(self, run_ids: pa.Array, run_id_column: str | None) -> TruthLabels:
        if self.groups is None:
            raise ValueError("a Truth of the groups form without groups")
        in_run = pc.is_in(self.ids, value_set=run_ids)
        matched = int(pc.sum(in_run).as_py() or 0)
        if matched == 0:
            raise self._no_overlap(run_ids, run_id_column)
        position = positions_in(run_ids, self.ids)
        found = position >= 0
        labels = np.full(len(run_ids), -1, dtype=np.int64)
        labels[found] = self.groups[position[found]]
        categories = None
        if self.categories is not None:
            names, codes = _category_codes(self.categories)
            row_codes = np.full(len(run_ids), -1, dtype=np.int64)
            row_codes[found] = codes[position[found]]
            categories = Categories(names=names, codes=row_codes)
        return TruthLabels(
            labels=labels,
            form="groups",
            truth_ids_not_in_run=len(self.ids) - matched,
            categories=categories,
        )

    def _pair_labels(self, run_ids: pa.Array, run_id_column: str | None) -> TruthLabels:
        if self.other is None:
            raise ValueError("a Truth of the pairs form without its second ids")
        named = pc.unique(pa.concat_arrays([self.ids, self.other]))
        missing = len(named) - int(pc.sum(pc.is_in(named, value_set=run_ids)).as_py() or 0)
        if missing == len(named):
            raise self._no_overlap(run_ids, run_id_column)
        left = positions_in(self.ids, run_ids)
        right = positions_in(self.other, run_ids)
        known = (left >= 0) & (right >= 0)
        left, right = left[known], right[known]
        labels = components(len(run_ids), left, right)
        categories = None
        if self.categories is not None:
            names, codes = _category_codes(self.categories)
            categories = Categories(names=names, codes=codes[known], pairs=(left, right))
        return TruthLabels(
            labels=labels,
            form="pairs",
            truth_ids_not_in_run=missing,
            truth_pairs_not_in_run=int(known.size - np.count_nonzero(known)),
            categories=categories,
        )

    def _no_overlap(self, run_ids: pa.Array, run_id_column: str | None) -> InputError:
        run_column = f"column {run_id_column!r}" if run_id_column else "its id column"
        truth_column = "columns 'id_a' and 'id_b'" if self.form == "pairs" else f"column {self.id_column!r}"
        example = f" (the run's first: {run_ids[0].as_py()!r}, the truth's: {self.ids[0].as_py()!r})"
        return InputError(
            f"none of the truth's ids ({truth_column}) is an id of the run "
            f"({run_column}){example if len(run_ids) else ''}: probably the wrong id column "
            "was used, for the truth or for the run",
            path=self.path,
        )


def _category_codes(values: pa.Array) -> tuple[tuple[str, ...], np.ndarray]:
    """Category names and a code per value (-1 for null or empty)."""
    encoded = pc.dictionary_encode(values)
    names = [str(name) for name in encoded.dictionary.to_pylist()]
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    if "" in names:  # an empty cell is no category
        empty = names.index("")
        codes = np.where(codes == empty, -1, codes - (codes > empty))
        names.pop(empty)
    return tuple(names), codes


def read_truth(
    path: str | Path,
    *,
    id_column: str = "id",
    group_column: str = "group",
    category_column: str | None = None,
) -> Truth:
    """The truth file at ``path`` (``.jsonl``, ``.csv`` or ``.parquet``), in the groups form
    (``id_column`` and ``group_column``) or the pairs form (``id_a`` and ``id_b``, when the file
    has no ``group_column``). ``category_column`` must exist when given; by default a column
    ``category`` is used when present.

    An :class:`InputError` naming the file (and the record, 1-based, where one is at fault) for
    an unknown file type, a file without either form's columns, an empty or null id or group,
    an id given two different groups, and a file without records."""
    name = str(path)
    path = Path(path)
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            "cannot tell the truth file's format from its name: give a .jsonl, .csv or .parquet file",
            path=name,
        )
    if not path.exists():
        raise InputError("no such file or directory", path=name)
    if path.is_dir():
        raise InputError("a folder, not a truth file", path=name)
    if path.stat().st_size == 0:
        raise InputError("the truth file is empty", path=name)
    table = _read(path, fmt)
    found = table.column_names
    if group_column in found or not any(c in found for c in PAIR_COLUMNS):
        form: TruthForm = "groups"
        wanted = [id_column, group_column]
    else:
        form = "pairs"
        wanted = list(PAIR_COLUMNS)
    missing = [c for c in wanted if c not in found]
    if missing:
        shown = ", ".join(repr(c) for c in found) or "none"
        raise InputError(
            f"no column {missing[0]!r} (columns found: {shown}); a truth file gives a group per row "
            f"(columns {id_column!r} and {group_column!r}) or duplicate pairs (columns 'id_a' and 'id_b')",
            path=name,
        )
    if category_column is not None and category_column not in found:
        shown = ", ".join(repr(c) for c in found)
        raise InputError(f"no category column {category_column!r} (columns found: {shown})", path=name)
    category = category_column or (DEFAULT_CATEGORY_COLUMN if DEFAULT_CATEGORY_COLUMN in found else None)
    if table.num_rows == 0:
        raise InputError("the truth file has no records", path=name)
    columns = {c: _strings(table, c, name) for c in wanted}
    categories = None if category is None else _strings(table, category, name)
    for column, values in columns.items():
        _check_present(values, column, name)
    if form == "pairs":
        return Truth(
            path=name,
            form="pairs",
            id_column="id_a",
            ids=columns["id_a"],
            other=columns["id_b"],
            categories=categories,
        )
    ids, groups = columns[id_column], columns[group_column]
    keep = _one_group_each(ids, groups, name, id_column)
    group_codes = _codes(groups)
    return Truth(
        path=name,
        form="groups",
        id_column=id_column,
        ids=ids.take(pa.array(keep)),
        groups=group_codes[keep],
        categories=None if categories is None else categories.take(pa.array(keep)),
    )


def _read(path: Path, fmt: str) -> pa.Table:
    try:
        if fmt == "parquet":
            return pq.read_table(path)
        if fmt == "csv":
            with path.open(newline="", encoding="utf-8-sig") as fh:  # Arrow skips a BOM too
                header = next(csv.reader(fh), [])
            return pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in header},  # ids as written: 007 stays 007
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        try:
            return pajson.read_json(path)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return _read_json_lines(path)  # ids of mixed types, or a bad line to point at
    except _READ_ERRORS as exc:
        raise InputError(f"cannot read the truth file: {exc}", path=str(path)) from exc


def _read_json_lines(path: Path) -> pa.Table:
    """JSON Lines that Arrow cannot type (an id that is a number on one line and a string on
    another), a line at a time, every value as text; an error names the line."""
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON: {exc.msg}", path=str(path), line=number) from None
            if not isinstance(record, dict):
                raise InputError("not a JSON object", path=str(path), line=number)
            records.append({k: _text(v) for k, v in record.items()})
    names = list(dict.fromkeys(k for r in records for k in r))
    return pa.table({k: pa.array([r.get(k) for r in records], pa.string()) for k in names})


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


def _strings(table: pa.Table, column: str, name: str) -> pa.Array:
    try:
        return as_strings(table.column(column))
    except _READ_ERRORS as exc:
        raise InputError(f"column {column!r} cannot be read as text: {exc}", path=name) from exc


def _check_present(values: pa.Array, column: str, name: str) -> None:
    bad = pc.or_kleene(pc.is_null(values), pc.equal(values, "")).fill_null(True)
    flags = np.asarray(bad.to_numpy(zero_copy_only=False), dtype=bool)
    if flags.any():
        record = int(np.argmax(flags)) + 1
        raise InputError(f"empty {column!r}: every record needs one", path=name, record=record)


def _codes(values: pa.Array) -> np.ndarray:
    """A dense int64 code per value (no nulls): equal values, equal codes."""
    return np.asarray(pc.dictionary_encode(values).indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _one_group_each(ids: pa.Array, groups: pa.Array, name: str, id_column: str) -> np.ndarray:
    """The first record of each id; an :class:`InputError` when an id has two groups."""
    id_codes = _codes(ids)
    group_codes = _codes(groups)
    first = np.unique(id_codes, return_index=True)[1]  # the first record of each id, by id code
    conflict = group_codes != group_codes[first[id_codes]]
    if conflict.any():
        row = int(np.argmax(conflict))
        earlier = int(first[id_codes[row]])
        raise InputError(
            f"{id_column} {ids[row].as_py()!r} is in group {groups[row].as_py()!r} here and in group "
            f"{groups[earlier].as_py()!r} at record {earlier + 1}: an id belongs to one group",
            path=name,
            record=row + 1,
        )
    return np.sort(first)


@dataclass(frozen=True)
class Evaluation:
    """How a run's clusters and removals compare with the truth.

    Pair scores count pairs of evaluated rows: a predicted pair is two rows in one run cluster,
    a true pair two rows of one true group (in the pairs form, of one connected component of the
    truth's pairs, so more than the pairs listed), a true positive both. Precision with nothing
    predicted and recall with nothing to find are 1.0. ``ari`` is the adjusted Rand index of the
    two partitions of the evaluated rows.

    A removal (a row the run dropped) is correct when its kept row is in its true group;
    ``should_remove`` is the evaluated rows less one per true group. A removal whose kept row is
    not evaluated (absent from the truth, or not a row of the run) cannot be judged: it is left
    out of ``removed`` and counted in ``removals_not_judged``.

    ``recall_by_category`` (None without a category column) maps each category to:

    * pairs form: the share of its truth pairs (both ids in the run) whose two rows the run put
      in one cluster;
    * groups form: the share of its evaluated rows that belong to a true group of two or more
      evaluated rows and whose run cluster holds another member of that true group (rows of
      true groups of one are not counted).

    A category with nothing counted has a recall of None. ``category_counts`` gives, per
    category, ``counted`` (pairs or rows) and ``found``.
    """

    truth_form: TruthForm
    run_rows: int
    rows_evaluated: int
    run_rows_without_truth: int
    truth_ids_not_in_run: int
    truth_pairs_not_in_run: int | None
    true_pairs: int
    predicted_pairs: int
    true_positive_pairs: int
    pair_precision: float
    pair_recall: float
    pair_f1: float
    ari: float
    removed: int
    correct_removals: int
    should_remove: int
    removal_precision: float
    removal_recall: float
    removals_not_judged: int
    recall_by_category: Mapping[str, float | None] | None = None
    category_counts: Mapping[str, Mapping[str, int]] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every figure (categories in sorted order)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if self.recall_by_category is not None:
            out["recall_by_category"] = dict(sorted(self.recall_by_category.items()))
        if self.category_counts is not None:
            out["category_counts"] = {k: dict(v) for k, v in sorted(self.category_counts.items())}
        return out


def evaluate(out_dir: str | Path, truth: Truth) -> Evaluation:
    """The run in ``out_dir`` (its ``summary.json`` and ``annotated`` table) against ``truth``."""
    if not Path(out_dir).exists():
        raise InputError("no such file or directory", path=str(out_dir))
    summary = read_summary(out_dir)
    assignment = read_assignment(out_dir, summary)
    labels = truth.labels_for(assignment.ids, run_id_column=str(summary.get("id_column") or "row_id"))
    representative = positions_in(assignment.representative, assignment.ids)
    return evaluate_labels(assignment.cluster, assignment.is_duplicate, representative, labels)


def evaluate_labels(
    cluster: np.ndarray,
    is_duplicate: np.ndarray,
    representative: np.ndarray,
    truth: TruthLabels | np.ndarray,
) -> Evaluation:
    """The scores of one assignment of a run's rows, all arrays aligned with the rows:

    * ``cluster``: the run's cluster id of each row, -1 for a row without duplicates;
    * ``is_duplicate``: True for a row the run removes;
    * ``representative``: the position of each row's kept row (-1 when it is not a run row);
    * ``truth``: :meth:`Truth.labels_for`'s answer, or bare labels (int, equal within a true
      group, -1 for a row left out).

    >>> e = evaluate_labels(
    ...     np.array([0, 0, 0, -1]), np.array([False, True, True, False]),
    ...     np.array([0, 0, 0, 3]), np.array([5, 5, 6, 6]))
    >>> (e.true_positive_pairs, e.predicted_pairs, e.true_pairs, e.correct_removals, e.removed)
    (1, 3, 2, 1, 2)
    """
    labels_of = truth if isinstance(truth, TruthLabels) else TruthLabels(labels=np.asarray(truth))
    labels = np.asarray(labels_of.labels, dtype=np.int64)
    n = int(labels.size)
    given = {"cluster": cluster, "is_duplicate": is_duplicate, "representative": representative}
    for what, array in given.items():
        if array.shape != labels.shape:
            raise ValueError(f"{array.size} values of {what} for {n} truth labels")
    inside = labels >= 0
    rows = np.flatnonzero(inside)
    predicted = singletons_apart(cluster)
    scores = pair_scores(predicted[rows], labels[rows])

    dropped = np.flatnonzero(np.asarray(is_duplicate, dtype=bool) & inside)
    kept = np.asarray(representative, dtype=np.int64)[dropped]
    judged = kept >= 0
    judged[judged] = inside[kept[judged]]
    correct = int(np.count_nonzero(labels[dropped[judged]] == labels[kept[judged]]))
    removed = int(np.count_nonzero(judged))
    should = int(rows.size - np.unique(labels[rows]).size)

    recall, counts = _category_recall(labels_of.categories, predicted, labels, rows)
    return Evaluation(
        truth_form=labels_of.form,
        run_rows=n,
        rows_evaluated=int(rows.size),
        run_rows_without_truth=n - int(rows.size),
        truth_ids_not_in_run=labels_of.truth_ids_not_in_run,
        truth_pairs_not_in_run=labels_of.truth_pairs_not_in_run,
        true_pairs=scores.true_pairs,
        predicted_pairs=scores.predicted_pairs,
        true_positive_pairs=scores.true_positive_pairs,
        pair_precision=scores.pair_precision,
        pair_recall=scores.pair_recall,
        pair_f1=scores.pair_f1,
        ari=scores.ari,
        removed=removed,
        correct_removals=correct,
        should_remove=should,
        removal_precision=correct / removed if removed else 1.0,
        removal_recall=correct / should if should else 1.0,
        removals_not_judged=int(dropped.size) - removed,
        recall_by_category=recall,
        category_counts=counts,
    )


def _category_recall(
    categories: Categories | None, predicted: np.ndarray, labels: np.ndarray, rows: np.ndarray
) -> tuple[dict[str, float | None] | None, dict[str, dict[str, int]] | None]:
    if categories is None:
        return None, None
    width = len(categories.names)
    if categories.pairs is not None:
        left, right = categories.pairs
        codes = categories.codes
        found = predicted[left] == predicted[right]
    else:
        p = dense_labels(predicted[rows])
        t = dense_labels(labels[rows])
        cell = np.unique(p * (int(t.max()) + 1 if t.size else 1) + t, return_inverse=True, return_counts=True)
        in_group = np.bincount(t)[t] >= 2
        codes = np.where(in_group, categories.codes[rows], -1)
        found = cell[2][cell[1]] >= 2
    named = codes >= 0
    counted = np.bincount(codes[named], minlength=width)
    hits = np.bincount(codes[named & found], minlength=width)
    recall: dict[str, float | None] = {}
    counts: dict[str, dict[str, int]] = {}
    for k, name in enumerate(categories.names):
        recall[name] = float(hits[k] / counted[k]) if counted[k] else None
        counts[name] = {"counted": int(counted[k]), "found": int(hits[k])}
    return recall, counts
