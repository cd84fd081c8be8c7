"""The inputs as a stream (``neardup.io.stream``) and the output tables in slices (``neardup.outputs``).

A scan yields exactly the table ``read_corpus`` builds (columns, types, values, order,
schema metadata), skips and reports the same records, and raises the same errors; the
slice-wise output tables concatenate to exactly those of ``build_tables``.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup import DedupConfig, InputError, dedup
from neardup.io import ReadOptions, read_corpus
from neardup.io.stream import scan
from neardup.outputs import annotate, bucket_tables, build_tables, cluster_tables, pair_tables
from synthetic import planted_corpus

SMALL = 200  # bytes per batch: one or two rows each


def _jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """Inputs whose combination exercises every rule of ``read_corpus``."""
    d = tmp_path / "in"
    d.mkdir()
    rows = [
        {"id": i, "text": f"document {i} about things", "x": i * 1.5 if i % 3 else None} for i in range(30)
    ]
    _jsonl(d / "a.jsonl", rows)
    _jsonl(
        d / "b.jsonl",
        [
            {"id": 100, "text": "b one", "x": "a string", "d": "2024-01-01"},
            {"id": 101, "text": "b two", "y": [1, 2]},
            "not json",
            {"id": 100, "text": "a repeated id"},
            {"id": 102, "text": 7},
        ],
    )
    (d / "c.csv").write_text('id,text,x\n200,hello there,1\n201,"two\nlines",2\n202,bad,row,extra\n')
    with gzip.open(d / "e.jsonl.gz", "wt") as fh:  # ints too large for float64, lists against strings
        fh.write(json.dumps({"id": 300, "text": "e1", "x": 2**60 + 1, "y": "plain"}) + "\n")
        fh.write(json.dumps({"id": 301, "text": "e2", "x": 3, "y": None, "n": None}) + "\n")
    text = pa.array(["p1", "p2", None]).dictionary_encode()
    meta = {b"origin": b"test"}
    pq.write_table(
        pa.table({"id": [400, 401, 402], "text": text, "z": [True, False, None]}).replace_schema_metadata(
            meta
        ),
        d / "f.parquet",
    )
    (d / "t").mkdir()
    for i in range(5):
        (d / "t" / f"{i}.txt").write_text(f"text file {i} " * 20)
    (d / "t" / "9.txt").write_bytes(b"caf\xff")
    return d


CASES = {
    "one-jsonl": (["a.jsonl"], {}),
    "jsonl-skip": (["a.jsonl", "b.jsonl"], {"on_error": "skip"}),
    "jsonl-ids": (["a.jsonl", "b.jsonl"], {"on_error": "skip", "id_column": "id"}),
    "mixed-ids": (
        ["a.jsonl", "b.jsonl", "c.csv", "f.parquet", "e.jsonl.gz"],
        {"on_error": "skip", "id_column": "id"},
    ),
    "mixed": (["e.jsonl.gz", "f.parquet", "t", "a.jsonl"], {"on_error": "skip"}),
    "parquet": (["f.parquet"], {}),
    "text-run": (["t"], {"on_error": "skip"}),
    "text-run-ids": (["t"], {"on_error": "skip", "id_column": "path"}),
    "text-lines": (["t/0.txt", "t/1.txt"], {"lines": True}),
    "stop-at-bad-record": (["a.jsonl", "b.jsonl"], {}),
    "repeated-ids-skipped": (
        ["a.jsonl", "c.csv", "a.jsonl.copy.jsonl"],
        {"id_column": "id", "on_error": "skip"},
    ),
    "stop-at-repeated-id": (["a.jsonl", "a.jsonl.copy.jsonl"], {"id_column": "id"}),
    "missing-column": (["a.jsonl"], {"text_column": "body"}),
    "no-records": (["t/9.txt"], {"on_error": "skip"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_scan_yields_what_read_corpus_reads(files: Path, tmp_path: Path, case: str) -> None:
    names, kwargs = CASES[case]
    if "a.jsonl.copy.jsonl" in names:
        (files / "a.jsonl.copy.jsonl").write_bytes((files / "a.jsonl").read_bytes())
    options = ReadOptions(**kwargs)
    inputs = [str(files / n) for n in names]
    try:
        want = read_corpus(inputs, options)
    except InputError as exc:
        with pytest.raises(type(exc)) as info:
            scan(inputs, options, cache_dir=tmp_path / "cache", batch_bytes=SMALL)
        assert str(info.value) == str(exc)
        return
    for attempt in range(2):  # the second scan takes every part from the cache
        stream = scan(inputs, options, cache_dir=tmp_path / "cache", batch_bytes=SMALL)
        got = pa.concat_tables(list(stream.tables()))
        assert got.schema.equals(want.table.schema, check_metadata=True), (got.schema, want.table.schema)
        assert got.equals(want.table)
        assert stream.schema.equals(want.table.schema, check_metadata=True)
        assert [str(e) for e in stream.skipped] == [str(e) for e in want.skipped]
        assert stream.ids().equals(want.table.column(want.id_column).combine_chunks())
        texts = pa.concat_tables(list(stream.texts())).column(0)
        assert texts.equals(want.table.column(options.text_column))
        assert (stream.rows, stream.sources, stream.family) == (
            want.table.num_rows,
            want.sources,
            want.family,
        )
        assert (stream.text_column, stream.id_column) == (want.text_column, want.id_column)
        cached = sum(1 for n in names if not n.endswith(".parquet"))
        assert (stream.reused > 0) == (attempt == 1 and cached > 0)


def test_a_changed_file_is_read_again(files: Path, tmp_path: Path) -> None:
    options = ReadOptions(on_error="skip")
    inputs = [str(files / "a.jsonl"), str(files / "b.jsonl")]
    scan(inputs, options, cache_dir=tmp_path / "cache", batch_bytes=SMALL)
    with open(files / "b.jsonl", "a") as fh:
        fh.write(json.dumps({"text": "one more"}) + "\n")
    stream = scan(inputs, options, cache_dir=tmp_path / "cache", batch_bytes=SMALL)
    assert stream.reused == 1  # a.jsonl only
    assert pa.concat_tables(list(stream.tables())).equals(read_corpus(inputs, options).table)
    # other read options read everything again
    stream = scan(
        inputs, ReadOptions(on_error="skip", id_column="id"), cache_dir=tmp_path / "cache", batch_bytes=SMALL
    )
    assert stream.reused == 0


def test_batches_stay_small(files: Path, tmp_path: Path) -> None:
    stream = scan(
        [str(files / "a.jsonl"), str(files / "f.parquet")],
        ReadOptions(),
        cache_dir=tmp_path,
        batch_bytes=SMALL,
    )
    sizes = [t.num_rows for t in stream.tables()]
    assert len(sizes) >= 9 and max(sizes) <= 4


def test_output_tables_in_slices_equal_build_tables(tmp_path: Path) -> None:
    records = planted_corpus(300, dup_fraction=0.4, seed=3)
    boiler = "subscribe to our newsletter for the latest news"
    records += [{"id": f"b{i}", "text": boiler, "group": -1} for i in range(12)]
    table = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in records])
    result = dedup(table, DedupConfig.create(keep="longest", max_bucket_size=5))
    want = build_tables(table, "id", result)
    assert len(want["clusters"]) > 10 and len(want["lsh_buckets"]) > 10
    ids = table.column("id").combine_chunks()
    pieces: dict[str, list[pa.Table]] = {}
    start = 0
    for batch in table.to_batches(max_chunksize=7):
        for name, piece in annotate(pa.Table.from_batches([batch]), ids, result.clusters, start).items():
            pieces.setdefault(name, []).append(piece)
        start += batch.num_rows
    for max_items in (1, 5, 10_000):
        pieces["clusters"] = list(cluster_tables(ids, result.clusters, max_items=max_items))
        pieces["candidate_pairs"] = list(pair_tables(ids, result.pairs, max_items=max_items))
        pieces["lsh_buckets"] = list(bucket_tables(ids, result.buckets, max_items=max_items))
        if max_items == 1:
            assert len(pieces["clusters"]) == len(want["clusters"])
        for name, table_ in want.items():
            got = pa.concat_tables(pieces[name])
            assert got.schema == table_.schema and got.equals(table_), name


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_write_outputs_on_threads_writes_what_build_tables_holds(tmp_path: Path, fmt: str) -> None:
    """Many slices, one and two threads: each file holds the whole table, rows in input order."""
    import numba

    from neardup.io.writers import OutputDir
    from neardup.outputs import write_outputs

    records = planted_corpus(400, dup_fraction=0.4, seed=5)
    table = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in records])
    result = dedup(table)
    want = build_tables(table, "id", result)
    assert want["duplicates"].num_rows > 50
    ids = table.column("id").combine_chunks()
    written: dict[int, dict[str, bytes]] = {}
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            with OutputDir(tmp_path / f"t{threads}") as target:
                write_outputs(
                    target,
                    fmt,
                    inputs=(table.slice(lo, 9) for lo in range(0, table.num_rows, 9)),
                    schema=table.schema,
                    ids=ids,
                    result=result,
                    max_items=50,
                )
            written[threads] = {p.name: p.read_bytes() for p in (tmp_path / f"t{threads}").iterdir()}
    finally:
        numba.set_num_threads(before)
    with OutputDir(tmp_path / "whole") as target:
        for name, whole in want.items():
            target.write(name, whole, fmt)
    assert written[1] == written[2]
    if fmt == "parquet":  # row groups differ; the tables must not
        for name, whole in want.items():
            assert pq.read_table(tmp_path / "t2" / f"{name}.parquet").equals(whole), name
    else:
        assert written[2] == {p.name: p.read_bytes() for p in (tmp_path / "whole").iterdir()}


def test_output_tables_in_slices_when_nothing_matches() -> None:
    table = pa.table({"id": ["a", "b"], "text": ["one text here", "something else entirely"]})
    result = dedup(table)
    want = build_tables(table, "id", result)
    ids = table.column("id").combine_chunks()
    for name, pieces in (
        ("clusters", cluster_tables(ids, result.clusters, max_items=3)),
        ("candidate_pairs", pair_tables(ids, result.pairs, max_items=3)),
        ("lsh_buckets", bucket_tables(ids, result.buckets, max_items=3)),
    ):
        got = list(pieces)
        assert len(got) == 1 and got[0].schema == want[name].schema and got[0].num_rows == 0


def test_file_stamps_name_an_unreadable_file(tmp_path: Path) -> None:
    from neardup.io.stream import file_stamps

    path = tmp_path / "gone.jsonl"
    with pytest.raises(InputError, match=f"{path}: cannot read: No such file or directory"):
        file_stamps([path])
    path.write_text("{}\n")
    ((_, size, mtime),) = file_stamps([path])
    assert size == 3 and mtime == os.stat(path).st_mtime_ns


def test_hex_strings_are_sixteen_lower_case_digits() -> None:
    import numpy as np

    from neardup.outputs import hex_strings

    values = np.random.default_rng(7).integers(0, 2**64 - 1, 5000, dtype=np.uint64, endpoint=True)
    values[:4] = [0, 1, 2**63, 2**64 - 1]
    assert hex_strings(values).to_pylist() == [f"{int(v):016x}" for v in values]
    assert hex_strings(values[:0]).to_pylist() == []
