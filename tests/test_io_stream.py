"""The inputs as a stream (``neardup.io.stream``) and the output tables in slices (``neardup.outputs``).

A scan yields exactly the table ``read_corpus`` builds (columns, types, values, order,
schema metadata), skips and reports the same records, and raises the same errors; the
slice-wise output tables concatenate to exactly those of ``build_tables``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neardup.io.csv
import neardup.io.jsonl
import neardup.io.stream
from neardup import DedupConfig, InputError, dedup
from neardup.io import ReadOptions, read_corpus
from neardup.io._common import BOM, Format, split_lines
from neardup.io.jsonl import _record_lines
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
    rows = []
    for i, r in enumerate(records):  # columns of every kind the JSON Lines writer formats
        text = r["text"] if i % 7 else r["text"] + ' "quoted"\n\ttab \x01 \\ é 中'
        rows.append(
            {
                "id": r["id"],
                "text": text if i % 11 else None,
                "score": [2.0, 0.5, float("inf"), None, 1e300][i % 5],
                "flag": [True, False, None][i % 3],
                "tags": [["a", str(i)], [], None][i % 3],
                "meta": {"n": i, "s": 'x"y'} if i % 4 else None,
            }
        )
    table = pa.Table.from_pylist(rows)
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
            read = pq.read_table(tmp_path / "t2" / f"{name}.parquet")
            assert read.cast(whole.schema).equals(whole), name  # list items come back as "element"
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


# -- a JSON Lines file copied a block at a time ----------------------------------------------------

LATER = 1201  # of records(1600): a row well past the first 1 MiB block

BLOCK_CASES: dict[str, tuple[object, dict[str, str], bool]] = {
    # (what row LATER becomes, read options, whether the file is copied block by block)
    "every record good": (None, {}, True),
    "ids given": (None, {"id_column": "id"}, True),
    "text as JSON null in the first block": ("text null", {}, True),
    "a missing text column": (None, {"text_column": "body"}, True),
    "a new field after the first block": ("new field", {}, False),
    "a type change after the first block": ("type change", {}, False),
    "a null record after the first block": ("null", {"on_error": "skip"}, False),
    "a bad line after the first block": ("{oops", {"on_error": "skip"}, False),
    "bad UTF-8 after the first block": (b'{"id": "u", "text": "caf\xff"}', {"on_error": "skip"}, False),
    "a text that is a number after the first block": ("text number", {"on_error": "skip"}, False),
}


def _block_file(path: Path, change: object, *, gz: bool = False) -> Path:
    from test_cli_passes import records

    rows: list[object] = list(records(1600, seed=21))
    if change == "text null":
        rows[3] = {"id": "first-null", "text": None}
    elif change == "new field":
        rows[LATER] = {**rows[LATER], "brand_new": 5}  # type: ignore[dict-item]
    elif change == "type change":
        rows[LATER] = {**rows[LATER], "group": "a string"}  # type: ignore[dict-item]
    elif change == "text number":
        rows[LATER] = {**rows[LATER], "text": 12}  # type: ignore[dict-item]
    elif change is not None:
        rows[LATER] = change
    data = b"".join(
        (r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()) + b"\n"
        for r in rows
    )
    return _written(path, data, gz=gz)


def _written(path: Path, data: bytes, *, gz: bool) -> Path:
    """``data`` written to ``path``, or gzipped to ``path`` with ``.gz`` added."""
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def _assert_scanned_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path, options: ReadOptions, *, in_blocks: bool
) -> None:
    """``scan`` gives what ``read_corpus`` gives (or its error), copying ``path`` a block at a
    time (``in_blocks``) or after reading it whole, and leaves no half-written copy."""
    whole_reads: list[list[Path]] = []
    real_read_part = neardup.io.stream.read_part

    def read_part(paths: list[Path], *args: object) -> object:
        whole_reads.append(paths)
        return real_read_part(paths, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(neardup.io.stream, "read_part", read_part)
    cache = tmp_path / "cache"
    try:
        want = read_corpus([path], options)
    except InputError as exc:
        with pytest.raises(type(exc)) as info:
            scan([path], options, cache_dir=cache, batch_bytes=1 << 16)
        assert str(info.value) == str(exc)
    else:
        stream = scan([path], options, cache_dir=cache, batch_bytes=1 << 16)
        got = pa.concat_tables(list(stream.tables()))
        assert got.schema.equals(want.table.schema, check_metadata=True)
        assert got.equals(want.table)
        assert [str(e) for e in stream.skipped] == [str(e) for e in want.skipped]
        assert stream.rows == want.table.num_rows
        assert max(t.num_rows for t in stream.tables()) < want.table.num_rows  # bounded batches
    assert (whole_reads == []) == in_blocks
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("case", list(BLOCK_CASES))
def test_a_json_lines_file_streams_in_blocks_when_it_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, gz: bool
) -> None:
    change, kwargs, in_blocks = BLOCK_CASES[case]
    path = _block_file(tmp_path / "in.jsonl", change, gz=gz)
    assert path.stat().st_size > (1 << 20) or gz
    _assert_scanned_as_read(tmp_path, monkeypatch, path, ReadOptions(**kwargs), in_blocks=in_blocks)


def test_a_repeated_id_in_a_file_copied_in_blocks_names_its_line(tmp_path: Path) -> None:
    path = _block_file(tmp_path / "in.jsonl", None)
    lines = path.read_bytes().split(b"\n")
    lines.insert(LATER, b"   ")  # a blank line before it moves the record down one line
    lines[LATER + 1] = lines[5]  # the id of line 6 again
    path.write_bytes(b"\n".join(lines))
    options = ReadOptions(id_column="id")
    with pytest.raises(InputError) as want:
        read_corpus([path], options)
    with pytest.raises(InputError) as got:
        scan([path], options, cache_dir=tmp_path / "cache", batch_bytes=1 << 16)
    assert str(got.value) == str(want.value)
    assert f"in.jsonl:{LATER + 2}: duplicate id" in str(got.value)


COPY_PEAK = """
import sys
from pathlib import Path
import pyarrow as pa
import neardup.io.csv
import neardup.io.jsonl
from neardup.io import ReadOptions
from neardup.io.stream import scan
# the readers read some 30 blocks ahead
neardup.io.jsonl.STREAM_BLOCK_SIZE = neardup.io.csv.STREAM_BLOCK_SIZE = 64 << 10
stream = scan([sys.argv[1]], ReadOptions(), cache_dir=Path(sys.argv[2]), batch_bytes=1 << 20)
print(pa.default_memory_pool().max_memory(), stream.rows)
"""


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_file_is_copied_without_being_held_whole(tmp_path: Path, suffix: str) -> None:
    if suffix == ".jsonl":
        head, body = b"", _block_file(tmp_path / "one.jsonl", None).read_bytes()
    else:
        head, _, body = _csv_block_file(tmp_path / "one.csv", None).read_bytes().partition(b"\n")
        head += b"\n"
    path = tmp_path / f"big{suffix}"
    path.write_bytes(head + body * 12)  # about 29 MB; generated ids, so repeated records are fine
    out = subprocess.run(
        [sys.executable, "-c", COPY_PEAK, str(path), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    peak, rows = int(out[0]), int(out[1])
    assert rows == 12 * 1600
    assert peak < path.stat().st_size // 4, (peak, path.stat().st_size)  # held whole: above its size


def _lines_of_records(data: bytes) -> list[int]:
    """The definition: the 1-based numbers of the lines that are not blank."""
    return [n for n, raw in enumerate(split_lines(data), 1) if raw.strip()]


@pytest.mark.parametrize("chunk", [3, 5, 64, 1 << 20])
def test_record_lines_read_in_chunks_number_the_non_blank_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(neardup.io.jsonl, "LINE_SCAN_BYTES", chunk)
    rng = random.Random(chunk)
    pieces = [b'{"a": 1}', b"", b"   ", b"\t\x0b\x0c", b'  {"b": 2}  ', b"x", b"\r"]
    for trial in range(40):
        ends = [rng.choice([b"\n", b"\r\n"]) for _ in range(12)]
        data = b"".join(rng.choice(pieces) + end for end in ends)
        if trial % 3 == 0:
            data = data.rstrip(b"\r\n") + rng.choice([b"", b"  ", b"y"])  # no newline at the end
        if trial % 4 == 0:
            data = BOM + data
        fmt = Format("jsonl", gzip=trial % 5 == 0)
        path = tmp_path / f"{trial}.jsonl"
        path.write_bytes(gzip.compress(data) if fmt.gzip else data)
        assert _record_lines(path, fmt).tolist() == _lines_of_records(data), data


CSV_BLOCK_CASES: dict[str, tuple[str | None, dict[str, str], bool]] = {
    # (what row LATER becomes, read options, whether the file is copied block by block)
    "every record good": (None, {}, True),
    "ids given": (None, {"id_column": "id"}, True),
    "a missing text column": (None, {"text_column": "body"}, True),
    "a number column with a word after the first block": ("word", {}, False),
    "a record with a field too many after the first block": ("extra", {"on_error": "skip"}, False),
    "bad UTF-8 after the first block": ("utf8", {"on_error": "skip"}, False),
}


def _csv_block_file(path: Path, change: str | None, *, gz: bool = False) -> Path:
    from test_cli_passes import records

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "text", "group", "score", "when"])
    for i, r in enumerate(records(1600, seed=22)):
        text = r["text"] if i % 9 else f'{r["text"]}\nwith a second line, and a "quote"'
        row = [r["id"], text, r["group"], r.get("score", ""), r.get("when", "")]
        if i == LATER and change == "word":
            row[2] = "not a number"
        elif i == LATER and change == "extra":
            row.append("one too many")
        writer.writerow(row)
    data = out.getvalue().encode()
    if change == "utf8":
        at = data.index(b"\n", len(data) * 3 // 4) + 1
        data = data[:at] + b"x1,caf\xff,1,,\n" + data[at:]
    return _written(path, data, gz=gz)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("case", list(CSV_BLOCK_CASES))
def test_a_csv_file_streams_in_blocks_when_it_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, gz: bool
) -> None:
    monkeypatch.setattr(neardup.io.csv, "STREAM_BLOCK_SIZE", 64 << 10)
    change, kwargs, in_blocks = CSV_BLOCK_CASES[case]
    path = _csv_block_file(tmp_path / "in.csv", change, gz=gz)
    assert path.stat().st_size > (1 << 20) or gz
    if change is None:  # a word in "group" later is a value its type cannot take
        schema = read_corpus([path], ReadOptions()).table.schema
        assert (schema.field("group").type, schema.field("score").type) == (pa.int64(), pa.float64())
    _assert_scanned_as_read(tmp_path, monkeypatch, path, ReadOptions(**kwargs), in_blocks=in_blocks)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_repeated_id_in_a_csv_file_names_its_first_line(tmp_path: Path, gz: bool) -> None:
    path = _csv_block_file(tmp_path / "in.csv", None)
    data = path.read_bytes()
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    rows[LATER + 1][0] = rows[6][0]  # record LATER (after the header) repeats record 5's id
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    data = BOM + out.getvalue().encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    if gz:
        path = path.rename(path.with_suffix(".csv.gz"))
    options = ReadOptions(id_column="id")
    with pytest.raises(InputError) as got:
        scan([path], options, cache_dir=tmp_path / "cache", batch_bytes=1 << 16)
    # records 0, 9, 18, ... span two lines; the header is line 1
    line = 2 + LATER + (LATER + 8) // 9
    first = 2 + 5 + 1
    assert f"{path.name}:{line}: duplicate id" in str(got.value), str(got.value)
    assert f"{path.name}:{first})" in str(got.value)


def test_columns_formatted_once_are_written_as_they_are(tmp_path: Path) -> None:
    from neardup.io.writers import TableWriter, json_texts

    table = pa.table({"a": [1, None], "b": ['x"y', None], "c": [[1.0], None]})
    with TableWriter(tmp_path / "once.jsonl", "jsonl", table.schema) as writer:
        writer.write(json_texts(table), formatted=table.column_names)
    with TableWriter(tmp_path / "plain.jsonl", "jsonl", table.schema) as writer:
        writer.write(table)
    assert (tmp_path / "once.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes()
    assert (
        tmp_path / "plain.jsonl"
    ).read_text() == '{"a": 1, "b": "x\\"y", "c": [1.0]}\n{"a": null, "b": null, "c": null}\n'
    with TableWriter(tmp_path / "t.csv", "csv", table.schema) as writer, pytest.raises(ValueError):
        writer.write(json_texts(table), formatted=["a"])
