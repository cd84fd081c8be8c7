"""The write stage on two threads: ``clusters``, ``candidate_pairs`` and ``lsh_buckets`` are
written beside the row tables (:class:`neardup.outputs.GraphTables`).

With one worker and with two, every output file holds the same bytes, in passes (the input's
own lines), in memory and in every format. An error in either thread is the error the run
raises, and it leaves the output folder as the earlier run left it: nothing committed, no
staging folder, no thread still writing.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

import neardup.io.jsonl_lines
import neardup.jobs.modes
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import InputError, OutputError
from neardup.io.writers import OutputDir, TableWriter
from neardup.outputs import build_tables, cluster_lists, write_outputs
from neardup.pipeline import dedup
from synthetic import planted_corpus

two_threads = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2,  # type: ignore[attr-defined]
    reason="needs two kernel threads",
)
GRAPH_TABLES = ("clusters", "candidate_pairs", "lsh_buckets")


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many pieces of row tables and many slices of the others, so the two threads interleave."""
    monkeypatch.setattr(neardup.jobs.modes, "WRITE_ITEMS", 40)
    monkeypatch.setattr(neardup.jobs.modes, "PASS_WRITE_ROWS", 16)
    monkeypatch.setattr(neardup.jobs.modes, "PASS_WRITE_BYTES", 4096)
    monkeypatch.setattr(neardup.io.jsonl_lines, "PIECE_BYTES", 4096)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    records = planted_corpus(300, dup_fraction=0.5, seed=11)
    rows = [{"id": r["id"], "text": r["text"], "n": i} for i, r in enumerate(records)]
    jsonl = folder / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    parquet = folder / "corpus.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    return {"jsonl": jsonl, "parquet": parquet}


def run(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def dedup_into(source: Path, out: Path, *extra: object) -> dict[str, Any]:
    result = run("dedup", source, "-o", out, "-q", "--id-column", "id", "--seed", "7", *extra)
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "summary.json"}


@two_threads
@pytest.mark.parametrize(
    ("source", "fmt", "mode"),
    [
        ("jsonl", "jsonl", "passes"),
        ("jsonl", "parquet", "in-memory"),
        ("jsonl", "csv", "in-memory"),
        ("parquet", "parquet", "in-memory"),
        ("parquet", "jsonl", "in-memory"),
    ],
)
def test_one_and_two_workers_write_the_same_bytes(
    inputs: dict[str, Path], tmp_path: Path, small_pieces: None, source: str, fmt: str, mode: str
) -> None:
    written = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        summary = dedup_into(inputs[source], out, "--output-format", fmt, "--workers", workers)
        assert summary["engine"]["mode"] == mode
        assert summary["clusters"] > 10 and summary["candidate_pairs"] > 10
        written[workers] = files(out)
    assert sorted(written[1]) == sorted(f"{name}.{fmt}" for name in (*GRAPH_TABLES, *ROW_TABLES))
    assert written[1] == written[2]


ROW_TABLES = ("annotated", "deduped", "duplicates")


@two_threads
def test_the_graph_tables_alone_on_two_workers(
    inputs: dict[str, Path], tmp_path: Path, small_pieces: None
) -> None:
    """No row table chosen: the input is not read again, and the three are written all the same."""
    written = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        dedup_into(inputs["jsonl"], out, "--outputs", ",".join(GRAPH_TABLES), "--workers", workers)
        written[workers] = files(out)
    assert sorted(written[2]) == sorted(f"{name}.jsonl" for name in GRAPH_TABLES)
    assert written[1] == written[2]


def fail_in(monkeypatch: pytest.MonkeyPatch, table: str, after: int = 1) -> list[str]:
    """Make the writes of ``table`` fail with an OutputError from its ``after``-th piece on; the
    names of the threads that failed are appended to the returned list."""
    failed: list[str] = []
    seen = {"pieces": 0}
    real_write, real_lines = TableWriter.write, TableWriter.write_lines

    def check(writer: TableWriter) -> None:
        if writer.path.name.startswith(table + "."):
            seen["pieces"] += 1
            if seen["pieces"] >= after:
                failed.append(threading.current_thread().name)
                raise OutputError(f"{writer.path}: cannot write: No space left on device")

    def write(self: TableWriter, *args: Any, **kwargs: Any) -> None:
        check(self)
        real_write(self, *args, **kwargs)

    def write_lines(self: TableWriter, *args: Any, **kwargs: Any) -> None:
        check(self)
        real_lines(self, *args, **kwargs)

    monkeypatch.setattr(TableWriter, "write", write)
    monkeypatch.setattr(TableWriter, "write_lines", write_lines)
    return failed


def assert_left_as_before(out: Path, before: dict[str, bytes]) -> None:
    """The earlier run's files, and nothing of this one's: no commit record, no staging folder,
    no thread still writing."""
    assert files(out) == before
    assert sorted(p.name for p in out.iterdir()) == sorted([*before, "summary.json"])
    assert not any(t.name.startswith("neardup-write-") for t in threading.enumerate())


@two_threads
@pytest.mark.parametrize(("source", "fmt"), [("jsonl", "jsonl"), ("parquet", "parquet")])
@pytest.mark.parametrize("table", ["lsh_buckets", "clusters"])
def test_an_error_in_the_graph_thread_is_the_runs_error(
    inputs: dict[str, Path],
    tmp_path: Path,
    small_pieces: None,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    fmt: str,
    table: str,
) -> None:
    out = tmp_path / "out"
    dedup_into(inputs[source], out, "--output-format", fmt, "--seed", "1")
    before = files(out)
    failed = fail_in(monkeypatch, table, after=2)
    result = run(
        "dedup", inputs[source], "-o", out, "-q", "--id-column", "id", "--output-format", fmt, "--workers", 2
    )
    assert result.exit_code != 0
    assert "No space left on device" in result.output and f"{table}.{fmt}" in result.output
    assert failed and failed[0] != "MainThread"  # it was written beside the row tables
    assert_left_as_before(out, before)


@two_threads
@pytest.mark.parametrize(
    ("source", "fmt", "table", "after"),
    [
        # the input's own lines, each table on its own writing thread, failing midway
        ("jsonl", "jsonl", "deduped", 3),
        ("jsonl", "jsonl", "annotated", 3),
        ("parquet", "parquet", "deduped", 1),
        ("parquet", "jsonl", "deduped", 1),
    ],
)
def test_an_error_in_the_row_tables_stops_the_graph_thread(
    inputs: dict[str, Path],
    tmp_path: Path,
    small_pieces: None,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    fmt: str,
    table: str,
    after: int,
) -> None:
    out = tmp_path / "out"
    dedup_into(inputs[source], out, "--output-format", fmt, "--seed", "1")
    before = files(out)
    fail_in(monkeypatch, table, after=after)
    result = run(
        "dedup", inputs[source], "-o", out, "-q", "--id-column", "id", "--output-format", fmt, "--workers", 2
    )
    assert result.exit_code != 0
    assert "No space left on device" in result.output and f"{table}.{fmt}" in result.output
    assert_left_as_before(out, before)


@two_threads
def test_the_input_lines_row_tables_are_written_on_two_threads(
    inputs: dict[str, Path], tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two kernel threads, ``annotated`` is written on one thread and ``deduped`` and
    ``duplicates`` on another, beside it, each file's pieces in order."""
    writers: dict[str, set[str]] = {}
    real_lines = TableWriter.write_lines

    def write_lines(self: TableWriter, *args: Any, **kwargs: Any) -> None:
        name = self.path.name.split(".")[0]
        if name in ROW_TABLES:
            writers.setdefault(name, set()).add(threading.current_thread().name)
        real_lines(self, *args, **kwargs)

    monkeypatch.setattr(TableWriter, "write_lines", write_lines)
    out = tmp_path / "out"
    dedup_into(inputs["jsonl"], out, "--workers", 2)
    assert sorted(writers) == sorted(ROW_TABLES)
    assert writers["deduped"] == writers["duplicates"]
    assert not writers["annotated"] & writers["deduped"]
    assert "MainThread" not in writers["annotated"] | writers["deduped"]
    monkeypatch.setattr(TableWriter, "write_lines", real_lines)
    one = tmp_path / "one"
    dedup_into(inputs["jsonl"], one, "--workers", 1)
    assert files(out) == files(one)


@two_threads
def test_a_file_changed_in_the_last_pass_stops_the_graph_thread(
    inputs: dict[str, Path], tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row tables' own error (not an output's) wins over the graph thread's work."""
    out = tmp_path / "out"
    dedup_into(inputs["jsonl"], out)
    before = files(out)
    real = neardup.io.jsonl_lines.LineWriter._piece
    calls = {"n": 0}

    def piece(self: Any, fd: int, lo: int, hi: int, texts: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise InputError("the file changed while it was being read; run again", path=self.path)
        return real(self, fd, lo, hi, texts)

    monkeypatch.setattr(neardup.io.jsonl_lines.LineWriter, "_piece", piece)
    result = run("dedup", inputs["jsonl"], "-o", out, "-q", "--id-column", "id", "--workers", 2)
    assert result.exit_code != 0 and "the file changed" in result.output
    assert_left_as_before(out, before)


@two_threads
def test_write_outputs_raises_the_graph_threads_error_after_the_row_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library call: the error comes out of write_outputs itself, and the OutputDir block
    then commits nothing."""
    table = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in planted_corpus(120, seed=2)])
    result = dedup(table)
    failed = fail_in(monkeypatch, "candidate_pairs")
    numba.set_num_threads(2)
    with pytest.raises(OutputError, match=r"candidate_pairs\.jsonl"), OutputDir(tmp_path / "out") as target:
        write_outputs(
            target,
            "jsonl",
            inputs=[table],
            schema=table.schema,
            ids=table.column("id").combine_chunks(),
            result=result,
            max_items=20,
            piece_rows=10,
        )
    assert failed and failed[0] != "MainThread"
    assert not (tmp_path / "out").exists()  # the block made it, and took it away again


def test_cluster_lists_are_the_groups_of_the_result() -> None:
    """The clusters table's members without a loop per cluster: as DedupResult.groups() lists
    them, representative first."""
    records = planted_corpus(400, dup_fraction=0.5, seed=4)
    table = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in records])
    for keep in ("first", "longest"):
        result = dedup(table, DedupConfig.create(keep=keep))
        groups = result.groups()
        members, offsets = cluster_lists(result.clusters)
        assert len(groups) > 20 and offsets.size == len(groups) + 1
        assert [members[a:b].tolist() for a, b in itertools.pairwise(offsets)] == groups
        clusters = build_tables(table, "id", result)["clusters"]
        ids = table.column("id").to_pylist()
        assert clusters.column("members").to_pylist() == [[ids[i] for i in g] for g in groups]
        assert clusters.column("size").to_pylist() == [len(g) for g in groups]
        assert clusters.column("representative").to_pylist() == [ids[g[0]] for g in groups]
        assert np.array_equal(clusters.column("cluster_id").to_numpy(), np.arange(len(groups)))


def test_against_tables_build_clusters_and_pairs_without_a_loop_per_row() -> None:
    """The tables of a run against an index, as the loops per cluster and per match built them."""
    from neardup.core.text import encode_texts
    from neardup.incremental import dedup_against
    from neardup.index import LSHIndex
    from neardup.outputs import against_tables

    records = planted_corpus(300, dup_fraction=0.5, seed=6)
    texts, ids = [str(r["text"]) for r in records], [str(r["id"]) for r in records]
    with LSHIndex.open("memory://") as index:
        index.insert_many(ids[:150], texts[:150])
        result = dedup_against(encode_texts(texts[150:]), index)
    table = pa.table({"id": ids[150:], "text": texts[150:]})
    tables = against_tables(table, "id", result)
    nodes = [*result.index_keys, *ids[150:]]
    cl = result.clusters
    groups = []
    for members in cl.groups():
        r = int(cl.representative[members[0]])
        groups.append([r] + [int(x) for x in members if x != r])
    assert len(groups) > 10 and len(result.matches) > 10
    assert tables["clusters"].to_pylist() == [
        {"cluster_id": c, "size": len(g), "representative": nodes[g[0]], "members": [nodes[i] for i in g]}
        for c, g in enumerate(groups)
    ]
    pairs = tables["candidate_pairs"]
    batch_pairs, im = result.batch.pairs, result.matches
    assert pairs.column("id_b").to_pylist() == [ids[150 + i] for i in batch_pairs.right] + list(im.key)
    kind = "exact" if im.exact else "estimated"
    assert pairs.column("jaccard_kind").to_pylist() == ["exact"] * len(batch_pairs) + [kind] * len(im)
    assert pairs.schema.field("jaccard_kind").type == pa.string()
