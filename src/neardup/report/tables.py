"""Reading back the output folder of a finished ``neardup dedup`` run.

A table is ``NAME.csv``, ``NAME.jsonl`` or ``NAME.parquet``, or a folder ``NAME/`` of parts in
order (the Ray engine's tables, and ``deduped`` kept in the inputs' layout). Ids come back as
strings whatever their type in the input, so that tables, truth files and the browser agree.
In CSV, list cells (``members``) are JSON arrays: :func:`id_lists` reads them.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from neardup.errors import InputError
from neardup.io.commit import finish_commit

FORMATS = ("parquet", "jsonl", "csv")
_TEXT_CELLS = ("members", "bucket_key", "id_a", "id_b", "representative", "duplicate_of")
"""Columns read from CSV as text whatever they look like."""


def read_summary(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The run's ``summary.json``; an :class:`InputError` when the folder holds no finished run.
    A commit that a run killed while moving its files in left pending is finished first
    (:func:`~neardup.io.commit.finish_commit`), so the tables read after it are that run's."""
    finish_commit(Path(out_dir))
    path = Path(out_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "no summary.json: not the output folder of a finished neardup dedup run",
            path=str(out_dir),
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the run's summary: {exc}", path=str(path)) from exc
    if not isinstance(summary, dict):
        raise InputError("not a neardup summary (no JSON object)", path=str(path))
    return summary


def table_files(out_dir: str | Path, name: str) -> list[Path]:
    """The files of table ``name`` in order (one file, or a folder's parts); empty when absent."""
    base = Path(out_dir)
    for fmt in FORMATS:
        one = base / f"{name}.{fmt}"
        if one.is_file():
            return [one]
    folder = base / name
    if folder.is_dir():
        parts = sorted(p for p in folder.rglob("*") if p.is_file() and _format_of(p) is not None)
        return parts
    return []


def _format_of(path: Path) -> str | None:
    for fmt in FORMATS:
        if path.name.endswith(f".{fmt}"):
            return fmt
    return None


def read_table(
    out_dir: str | Path,
    name: str,
    columns: list[str] | None = None,
    *,
    string_columns: tuple[str, ...] = (),
) -> pa.Table | None:
    """Table ``name`` of the run in ``out_dir`` (only ``columns``, when given), or None when the run
    did not write it. ``string_columns`` (those present) are cast to strings: ids."""
    files = table_files(out_dir, name)
    if not files:
        return None
    pieces = [_read_file(path, columns, (*string_columns, *_TEXT_CELLS)) for path in files]
    pieces = [p for p in pieces if p.num_columns] or pieces[:1]
    try:
        table = pa.concat_tables(pieces, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(f"the parts of {name} do not agree: {exc}", path=str(out_dir)) from exc
    for column in string_columns:
        if column in table.column_names:
            table = table.set_column(
                table.column_names.index(column), column, as_strings(table.column(column))
            )
    return table


def _read_file(path: Path, columns: list[str] | None, strings: tuple[str, ...]) -> pa.Table:
    fmt = _format_of(path)
    try:
        if path.stat().st_size == 0:
            return pa.table({})
        if fmt == "parquet":
            present = pq.read_schema(path).names
            wanted = None if columns is None else [c for c in columns if c in present]
            return pq.read_table(path, columns=wanted, pre_buffer=False)  # reads less ahead: a lower peak
        if fmt == "csv":
            with path.open(newline="", encoding="utf-8") as fh:
                present = next(csv.reader(fh), [])
            wanted = None if columns is None else [c for c in columns if c in present]
            return pacsv.read_csv(
                path,
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    include_columns=wanted,
                    column_types={c: pa.string() for c in present if c in strings},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        table = pajson.read_json(path)
    except (OSError, UnicodeDecodeError, csv.Error, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(f"cannot read this output table: {exc}", path=str(path)) from exc
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    return table


def _batches(path: Path, column: str) -> Iterator[pa.Array]:
    """Column ``column`` of one table file, a batch at a time (a file whose format has no
    streaming reader here is read whole)."""
    fmt = _format_of(path)
    try:
        if path.stat().st_size == 0:
            return
        if fmt == "parquet":
            for batch in pq.ParquetFile(path).iter_batches(batch_size=_ROWS_A_BATCH, columns=[column]):
                yield batch.column(0)
            return
        if fmt == "jsonl" and hasattr(pajson, "open_json"):
            for batch in pajson.open_json(path):
                yield batch.column(column)
            return
        if fmt == "csv":
            convert = pacsv.ConvertOptions(include_columns=[column], column_types={column: pa.string()})
            parse = pacsv.ParseOptions(newlines_in_values=True)
            for batch in pacsv.open_csv(path, parse_options=parse, convert_options=convert):
                yield batch.column(0)
            return
        table = _read_file(path, [column], (column,))
    except (OSError, KeyError, csv.Error, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise InputError(f"cannot read this output table: {exc}", path=str(path)) from exc
    yield from table.column(column).chunks


_ROWS_A_BATCH = 16_384


def read_rows(out_dir: str | Path, name: str, column: str, rows: np.ndarray) -> pa.Array:
    """The values of ``column`` at ``rows`` (ascending row positions) of table ``name``, read a
    batch at a time so that only those rows are held: the texts of a few documents of a large
    corpus without the whole corpus in memory."""
    wanted = np.asarray(rows, dtype=np.int64)
    pieces: list[pa.Array] = []
    start = 0
    for path in table_files(out_dir, name):
        for values in _batches(path, column):
            lo, hi = np.searchsorted(wanted, [start, start + len(values)])
            if hi > lo:
                pieces.append(
                    values.take(pa.array(wanted[lo:hi] - start, pa.int64())).cast(pa.large_string())
                )
            start += len(values)
            if hi == wanted.size:
                break
        else:
            continue
        break
    got = sum(len(p) for p in pieces)
    if got != wanted.size:
        raise InputError(
            f"{name} has {start:,} rows, not the row {int(wanted[-1]):,} asked for", path=str(out_dir)
        )
    return pa.concat_arrays(pieces) if pieces else pa.array([], pa.large_string())


def as_strings(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Ids as one string array (integers as their decimal digits)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_string(array.type):
        return array
    if pa.types.is_large_string(array.type):
        return array.cast(pa.string())
    if pa.types.is_floating(array.type):  # JSON read 1.0 for an integral id: keep the digits
        whole = pc.equal(array, pc.floor(array))
        if pc.all(whole).as_py() is not False:
            return pc.cast(pc.cast(array, pa.int64()), pa.string())
    return pc.cast(array, pa.string())


def id_lists(column: pa.ChunkedArray | pa.Array) -> list[list[str]]:
    """A ``members`` column as lists of id strings: Arrow lists, or JSON arrays in CSV."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        return [[str(v) for v in row] for row in array.to_pylist()]
    return [[str(v) for v in json.loads(text)] for text in array.to_pylist()]


@dataclass(frozen=True)
class Assignment:
    """What a run decided for each row: ``ids`` (strings, in input order), ``cluster`` (int64,
    -1 for a row without duplicates), ``representative`` (the kept row's id) and
    ``is_duplicate``."""

    ids: pa.Array
    cluster: np.ndarray
    representative: pa.Array
    is_duplicate: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def read_assignment(out_dir: str | Path, summary: dict[str, Any] | None = None) -> Assignment:
    """Each row's cluster and representative, from the run's ``annotated`` table."""
    info = summary if summary is not None else read_summary(out_dir)
    id_column = str(info.get("id_column") or "row_id")
    wanted = [id_column, "cluster_id", "representative", "is_duplicate"]
    table = read_table(out_dir, "annotated", wanted, string_columns=(id_column, "representative"))
    if table is None:
        raise InputError(
            "the run did not write annotated, which this needs; "
            "run neardup dedup again with annotated in --outputs",
            path=str(out_dir),
        )
    missing = [c for c in wanted if c not in table.column_names]
    if missing:
        raise InputError(f"annotated has no column {missing[0]!r}", path=str(out_dir))
    return assignment_of(table, id_column)


def assignment_of(table: pa.Table, id_column: str) -> Assignment:
    """The :class:`Assignment` in ``annotated``'s columns as read from any format (in CSV the
    cluster id is text, empty for none, and the flag the text ``true`` or ``false``)."""
    cluster = table.column("cluster_id")
    if not pa.types.is_integer(cluster.type):
        text = cluster.cast(pa.string())
        cluster = pc.cast(pc.if_else(pc.equal(text, ""), None, text), pa.int64())
    flags = table.column("is_duplicate")
    if not pa.types.is_boolean(flags.type):
        flags = pc.equal(pc.utf8_lower(flags.cast(pa.string())), "true")
    return Assignment(
        ids=table.column(id_column).combine_chunks(),
        cluster=cluster.combine_chunks().fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64),
        representative=table.column("representative").combine_chunks(),
        is_duplicate=flags.combine_chunks().fill_null(False).to_numpy(zero_copy_only=False).astype(bool),
    )


def positions_in(values: pa.Array | pa.ChunkedArray, among: pa.Array) -> np.ndarray:
    """The position in ``among`` (unique ids) of each of ``values`` (int64; -1 where absent)."""
    found = pc.index_in(values, value_set=among).fill_null(-1)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)
