"""The JSON Lines row tables written from the input's own lines (``neardup.io.jsonl_lines``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import neardup.io.jsonl_lines
from neardup.cli import main
from neardup.core.clusters import Clusters
from neardup.errors import InputError
from neardup.io.jsonl_lines import LineWriter, splice_lines
from neardup.io.jsonl_passes import record_spans
from neardup.io.writers import OutputDir
from synthetic import planted_corpus
from test_cli_passes import spliced


def splice(lines: list[bytes], firsts: list[bytes], lasts: list[bytes]) -> bytes | int:
    buf = np.frombuffer(b"\n".join(lines) or b"\0", np.uint8)
    sizes = np.array([len(line) + 1 for line in lines], np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    ends = starts + sizes - 1

    def texts(items: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.zeros(len(items) + 1, np.int64)
        np.cumsum([len(t) for t in items], out=offsets[1:])
        return np.frombuffer(b"".join(items) or b"\0", np.uint8), offsets

    pre, pre_off = texts(firsts)
    suf, suf_off = texts(lasts)
    out = np.empty(int(sizes.sum()) + 5 * len(lines) + int(pre_off[-1]) + int(suf_off[-1]), np.uint8)
    written = splice_lines(buf, starts, ends, pre, pre_off, suf, suf_off, out)
    return out[:written].tobytes() if written >= 0 else written


LINES = [
    b'{"a": 1}',
    b'{"a":1,"b":[2,{"c":"}"}]}',
    b"{}",
    b"{ }",
    b'{"text": "caf\\u00e9 \\"quoted\\" }"}  ',
    b'{"a": 1}\r',
    b'{"a": 1} \t\r',
    b'\t{"a": 1}',  # not a record's first byte: refused
    b'{"a": 1',
    b"[1]",
]


@pytest.mark.parametrize("first", [b"", b'"row_id": 7'])
@pytest.mark.parametrize("last", [b"", b'"cluster_id": null, "is_duplicate": false'])
def test_splicing_puts_members_inside_the_braces_and_keeps_the_rest(first: bytes, last: bytes) -> None:
    for i, line in enumerate(LINES):
        got = splice([line], [first], [last])
        if line[:1] != b"{" or not line.rstrip(b" \t\r").endswith(b"}"):
            assert got == -1, line
            continue
        assert got == spliced(line, first, last) + b"\n", line
        assert isinstance(got, bytes)
        value = json.loads(got)
        assert isinstance(value, dict), i
        if first:
            assert value["row_id"] == 7
        if last:
            assert value["cluster_id"] is None and value["is_duplicate"] is False


def test_splicing_many_lines_reports_the_first_that_is_not_an_object() -> None:
    rng = random.Random(3)
    good = [line for line in LINES if line[:1] == b"{" and line.rstrip(b" \t\r").endswith(b"}")]
    lines = [rng.choice(good) for _ in range(200)]
    firsts = [rng.choice([b"", f'"k": {i}'.encode()]) for i in range(200)]
    lasts = [rng.choice([b"", b'"x": "y"', b'"z": [1, 2]']) for _ in range(200)]
    got = splice(lines, firsts, lasts)
    assert got == b"".join(spliced(a, b, c) + b"\n" for a, b, c in zip(lines, firsts, lasts, strict=True))
    lines[57] = b'{"broken": true'
    assert splice(lines, firsts, lasts) == -1 - 57


def clusters_for(n: int, seed: int) -> Clusters:
    """Every fifth row a duplicate of an earlier kept one."""
    rng = np.random.default_rng(seed)
    cluster = np.full(n, -1, np.int64)
    representative = np.arange(n, dtype=np.int64)
    keep = np.ones(n, dtype=bool)
    dup = np.arange(5, n, 5)
    keep[dup] = False
    representative[dup] = dup - 1 - rng.integers(0, 3, dup.size)
    cluster[dup] = cluster[representative[dup]] = np.arange(dup.size)
    return Clusters(cluster=cluster, representative=representative, keep=keep)


@pytest.mark.parametrize("piece_bytes", [64, 5_000, 1 << 20])
@pytest.mark.parametrize("text_rows", [7, 1 << 15])
def test_pieces_of_any_size_write_the_same_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece_bytes: int, text_rows: int
) -> None:
    """However the rows are cut into pieces (64 bytes: a line each) and into groups whose texts
    are made at once (7 rows: pieces cross no group, and groups hold several pieces or part of
    one), the tables are the same."""
    monkeypatch.setattr(neardup.io.jsonl_lines, "PIECE_BYTES", piece_bytes)
    monkeypatch.setattr(neardup.io.jsonl_lines, "TEXT_ROWS", text_rows)
    lines = [
        json.dumps({"id": f"d{i}", "text": r["text"]}).encode() for i, r in enumerate(planted_corpus(300))
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    ids = pa.array([f"d{i}" for i in range(300)])
    cl = clusters_for(300, seed=1)
    with OutputDir(tmp_path / "out") as out:
        LineWriter(path, record_spans(path), ids, cl, "id", generated=False).write(out)
    deduped = (tmp_path / "out" / "deduped.jsonl").read_bytes().splitlines()
    assert deduped == [line for line, kept in zip(lines, cl.keep, strict=True) if kept]
    duplicates = [
        json.loads(line) for line in (tmp_path / "out" / "duplicates.jsonl").read_bytes().splitlines()
    ]
    dup = np.flatnonzero(~cl.keep)
    assert [d["id"] for d in duplicates] == [f"d{i}" for i in dup]
    assert [d["duplicate_of"] for d in duplicates] == [f"d{i}" for i in cl.representative[dup]]
    assert [d["cluster_id"] for d in duplicates] == cl.cluster[dup].tolist()
    annotated = [
        json.loads(line) for line in (tmp_path / "out" / "annotated.jsonl").read_bytes().splitlines()
    ]
    assert [a["cluster_id"] for a in annotated] == [c if c >= 0 else None for c in cl.cluster.tolist()]
    assert [a["is_duplicate"] for a in annotated] == (~cl.keep).tolist()


@pytest.mark.parametrize("text_rows", [7, 1 << 15])
def test_generated_ids_go_first_in_every_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text_rows: int
) -> None:
    monkeypatch.setattr(neardup.io.jsonl_lines, "PIECE_BYTES", 300)
    monkeypatch.setattr(neardup.io.jsonl_lines, "TEXT_ROWS", text_rows)
    records = [{"text": r["text"], "n": i} for i, r in enumerate(planted_corpus(120))]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    ids = pa.array(list(range(120)), pa.int64())
    cl = clusters_for(120, seed=2)
    with OutputDir(tmp_path / "out") as out:
        LineWriter(path, record_spans(path), ids, cl, "row_id", generated=True).write(out)

    def table(name: str) -> list[dict[str, object]]:
        return [json.loads(line) for line in (tmp_path / "out" / f"{name}.jsonl").read_bytes().splitlines()]

    kept, dup = np.flatnonzero(cl.keep), np.flatnonzero(~cl.keep)
    for name, rows in (("annotated", np.arange(120)), ("deduped", kept), ("duplicates", dup)):
        got = table(name)
        assert [next(iter(r)) for r in got] == ["row_id"] * rows.size, name
        assert [r["row_id"] for r in got] == rows.tolist(), name
        assert [r["n"] for r in got] == rows.tolist(), name
    assert [r["duplicate_of"] for r in table("duplicates")] == cl.representative[dup].tolist()
    assert [r["representative"] for r in table("annotated")] == cl.representative.tolist()


def test_a_line_that_is_no_longer_a_record_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": 1, "text": "a"}\n{"id": 2, "text": "b"}\n')
    spans = record_spans(path)
    path.write_bytes(b'{"id": 1, "text": "a"}\n{"id": 2, "text": "b"]\n')  # the same length
    with (
        pytest.raises(InputError, match="changed while it was being read"),
        OutputDir(tmp_path / "out") as out,
    ):
        LineWriter(path, spans, pa.array([1, 2]), clusters_for(2, seed=0), "id", generated=False).write(out)
    assert not (tmp_path / "out" / "deduped.jsonl").exists()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_deduplicated_corpus_keeps_each_record_as_it_was_written(tmp_path: Path, workers: str) -> None:
    """Compact separators, escaped non-ASCII, fields only some records have, numbers as spelled:
    none of it is rewritten, though the parsed rows would print differently."""
    lines = []
    for i, r in enumerate(planted_corpus(400, seed=4)):
        record = {"id": i, "text": r["text"] + " caf\u00e9"}
        if i % 7 == 0:
            record["extra"] = {"nested": [1.50, None]}
        text = json.dumps(record, separators=(",", ":"))  # \u00e9, no spaces
        lines.append(text.replace('"extra":{"nested":[1.5,', '"extra":{"nested":[1.50,').encode())
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    done = CliRunner().invoke(
        main,
        [
            "dedup",
            str(path),
            "-o",
            str(tmp_path / "out"),
            "--id-column",
            "id",
            "--workers",
            workers,
            "--json",
            "-q",
        ],
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["engine"]["mode"] == "passes" and summary["duplicates_removed"] > 20
    kept = {json.loads(line)["id"] for line in (tmp_path / "out" / "deduped.jsonl").read_bytes().splitlines()}
    assert (tmp_path / "out" / "deduped.jsonl").read_bytes() == b"".join(
        line + b"\n" for line in lines if json.loads(line)["id"] in kept
    )
    assert b"1.50" in (tmp_path / "out" / "annotated.jsonl").read_bytes()
