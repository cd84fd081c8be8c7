"""Frames of other libraries as input to ``neardup.dedup``: real polars, duckdb, datasets and pandas
objects give the results of the same texts as a list, and Arrow text is not copied on the way."""

from __future__ import annotations

import datasets
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import neardup
from neardup.io.frames import arrow_table, is_frame
from neardup.pipeline import DedupResult, arrow_to_batches

BASE = "the quick brown fox jumps over the lazy dog beside the river bank at dawn"
TEXTS: list[str | None] = [
    BASE,
    "A completely different sentence about ships and harbours.",
    BASE.upper() + "!",
    None,
    "",
    BASE + " again",
    "Rain fell over the quiet town all night long.",
    "rain fell over the quiet town all night long",
]


def same(a: DedupResult, b: DedupResult) -> None:
    assert a.keep.tolist() == b.keep.tolist()
    assert a.clusters.representative.tolist() == b.clusters.representative.tolist()
    assert (a.pairs.left.tolist(), a.pairs.right.tolist()) == (b.pairs.left.tolist(), b.pairs.right.tolist())
    assert np.array_equal(a.signatures, b.signatures)


@pytest.fixture(scope="module")
def expected() -> DedupResult:
    return neardup.dedup(TEXTS)


def _duckdb_relation() -> duckdb.DuckDBPyRelation:
    con = duckdb.connect()
    con.execute("create table docs (id integer, text varchar)")
    con.executemany("insert into docs values (?, ?)", list(enumerate(TEXTS)))
    return con.sql("select id, text from docs order by id")


FRAMES = {
    "pyarrow-table": lambda: pa.table({"id": range(len(TEXTS)), "text": TEXTS}),
    "pyarrow-batch": lambda: pa.record_batch({"text": pa.array(TEXTS, pa.large_string())}),
    "pyarrow-reader": lambda: pa.RecordBatchReader.from_batches(
        pa.schema([("text", pa.string())]),
        [pa.record_batch({"text": TEXTS[:3]}), pa.record_batch({"text": TEXTS[3:]})],
    ),
    "polars": lambda: pl.DataFrame({"id": list(range(len(TEXTS))), "text": TEXTS}),
    "duckdb": _duckdb_relation,
    "datasets": lambda: datasets.Dataset.from_dict({"id": list(range(len(TEXTS))), "text": TEXTS}),
    "pandas-object": lambda: pd.DataFrame({"id": range(len(TEXTS)), "text": TEXTS}),
    "pandas-arrow": lambda: pd.DataFrame({"text": pd.array(TEXTS, dtype="string[pyarrow]")}),
    "pandas-categorical": lambda: pd.DataFrame({"text": pd.Categorical(TEXTS)}),
}


@pytest.mark.parametrize("name", list(FRAMES))
def test_frames_give_the_results_of_the_texts(name: str, expected: DedupResult) -> None:
    frame = FRAMES[name]()
    assert is_frame(frame)
    same(neardup.dedup(frame), expected)


class CapsuleOnly:
    """An object known only by its Arrow C stream (as nanoarrow's or a new library's would be)."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._table.__arrow_c_stream__(requested_schema)


def test_any_arrow_c_stream_is_taken(expected: DedupResult) -> None:
    same(neardup.dedup(CapsuleOnly(pa.table({"body": TEXTS})), text_column="body"), expected)


def test_dataset_rows_in_the_datasets_order() -> None:
    ds = datasets.Dataset.from_dict({"text": TEXTS})
    order = [7, 2, 0, 5, 1]
    picked = ds.select(order)  # an indices mapping over the same Arrow table
    same(neardup.dedup(picked), neardup.dedup([TEXTS[i] for i in order]))
    assert arrow_table(picked, columns=["text"]).column("text").to_pylist() == [TEXTS[i] for i in order]


def _data_address(chunk: pa.Array) -> int:
    offsets = chunk.buffers()[1]
    width = 8 if pa.types.is_large_string(chunk.type) else 4
    first = int(np.frombuffer(offsets, dtype=np.int64 if width == 8 else np.int32)[chunk.offset])
    return int(chunk.buffers()[2].address) + first


def _batch_address(column: pa.ChunkedArray) -> list[int]:
    return [int(batch.data.ctypes.data) for batch in arrow_to_batches(column)]


def test_table_chunks_are_not_copied() -> None:
    chunks = [pa.array(part, pa.large_string()) for part in (TEXTS[:3], TEXTS[3:6], TEXTS[6:])]
    table = pa.table({"text": pa.chunked_array(chunks)})
    column = arrow_table(table, columns=["text"]).column("text")
    assert column.num_chunks == 3
    assert _batch_address(column) == [_data_address(c) for c in table.column("text").chunks]


def test_string_column_with_nulls_is_not_copied() -> None:
    column = pa.chunked_array([pa.array(TEXTS)])  # int32 offsets, nulls with empty slots
    (batch,) = arrow_to_batches(column)
    assert int(batch.data.ctypes.data) == _data_address(column.chunk(0))
    assert batch.offsets.tolist()[3:5] == [batch.offsets[3]] * 2  # the null counts as empty


def test_null_slot_holding_bytes_counts_as_empty() -> None:
    full = pa.array(["abc", "def", "ghi"])
    offsets, data = full.buffers()[1], full.buffers()[2]
    validity = pa.array([True, False, True]).buffers()[1]
    holey = pa.StringArray.from_buffers(3, offsets, data, validity, null_count=1)
    (batch,) = arrow_to_batches(pa.chunked_array([holey]))
    lengths = np.diff(batch.offsets).tolist()
    assert lengths == [3, 0, 3]


def test_dataset_and_duckdb_text_is_not_copied() -> None:
    ds = FRAMES["datasets"]()
    held = ds.data.table.column("text")
    assert _batch_address(arrow_table(ds, columns=["text"]).column("text")) == [
        _data_address(c) for c in held.chunks
    ]
    imported = arrow_table(_duckdb_relation(), columns=["text"]).column("text")
    assert _batch_address(imported) == [_data_address(c) for c in imported.chunks]


def test_pandas_arrow_strings_are_not_copied() -> None:
    frame = FRAMES["pandas-arrow"]()
    column = arrow_table(frame, columns=["text"]).column("text")
    held = pa.chunked_array(pa.array(frame["text"].array))  # the frame's own Arrow array
    assert _batch_address(column) == [_data_address(c) for c in held.chunks]


def test_only_the_text_column_is_kept() -> None:
    table = arrow_table(FRAMES["polars"](), columns=["text"])
    assert table.column_names == ["text"]
    assert arrow_table(FRAMES["pyarrow-reader"]()).num_rows == len(TEXTS)


@pytest.mark.parametrize("name", ["pyarrow-table", "polars", "duckdb", "datasets", "pandas-object"])
def test_missing_column_names_the_columns(name: str) -> None:
    with pytest.raises(neardup.MissingColumnError, match=r"no column 'body'; the table has: .*text"):
        neardup.dedup(FRAMES[name](), text_column="body")


def test_non_text_column_is_an_input_error() -> None:
    with pytest.raises(neardup.InputError, match=r"column 'id' holds int64, not text"):
        neardup.dedup(pl.DataFrame({"id": [1, 2]}), text_column="id")


def test_unsupported_objects_name_what_is_accepted() -> None:
    with pytest.raises(TypeError, match=r"cannot read a polars.*LazyFrame as a table; pass a pyarrow Table"):
        arrow_table(pl.DataFrame({"text": ["a"]}).lazy())
    with pytest.raises(TypeError, match=r"a DatasetDict holds several splits \('train'\); pass one"):
        neardup.dedup(datasets.DatasetDict({"train": FRAMES["datasets"]()}))
    with pytest.raises(TypeError, match=r"cannot read a int as a table"):
        arrow_table(5)
