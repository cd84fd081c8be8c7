"""``neardup dedup`` on a JSON Lines file read in passes: the same outputs, byte for byte.

A memory limit just below the whole-file run's estimate, and above the estimate of a run
that reads the file in passes, makes the command read the file three times (signatures,
the lines of the documents in candidate pairs, outputs) instead of holding it. Its output
files must be the ones the whole-file run writes. Files it cannot read exactly as the
whole-file reader does stream through the work dir instead, with the same outputs.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import neardup.jobs.modes
import neardup.pipeline
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.engines.streaming import in_memory_estimate
from neardup.errors import InputError
from neardup.io import ReadOptions, read_corpus
from neardup.io._common import WholeReadNeededError
from neardup.io.jsonl_passes import JsonlPasses, record_spans, takes
from synthetic import planted_corpus
from test_cli_streaming import ROW_TABLES, assert_same_outputs


def run(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def whole_run(monkeypatch: pytest.MonkeyPatch, *args: object) -> Result:
    """The run that holds the whole file in memory, for comparison."""
    with monkeypatch.context() as m:
        m.setattr(neardup.jobs.modes, "passes_reader", lambda *a, **k: None)
        return run(*args)


def spliced(line: bytes, first: bytes, last: bytes) -> bytes:
    """A JSON object's line with members ``first`` after its ``{`` and ``last`` before its ``}``."""
    body = line.rstrip(b" \t\r")
    assert body[:1] == b"{" and body[-1:] == b"}"
    inner = body[1:-1]
    has_members = bool(inner.strip(b" \t\r"))
    out = b"{" + first + (b", " if first and has_members else b"") + inner
    out += (b", " if last and (has_members or first) else b"") + last
    return out + b"}" + line[len(body) :]


def assert_rows_are_the_input_lines(got: Path, whole: Path, source: Path, *, generated_ids: bool) -> None:
    """``annotated``, ``deduped`` and ``duplicates`` in ``got`` are the lines of ``source``, each
    with the columns the whole-file run (in ``whole``) gave its row, and nothing else changed."""
    lines = [line for line in source.read_bytes().split(b"\n") if line]
    rows = [json.loads(line) for line in (whole / "annotated.jsonl").read_bytes().splitlines()]
    assert len(rows) == len(lines)

    def members(row: dict[str, Any], names: list[str]) -> bytes:
        return ", ".join(f"{json.dumps(n)}: {json.dumps(row[n], ensure_ascii=False)}" for n in names).encode()

    annotated, deduped, duplicates = [], [], []
    for i, (line, row) in enumerate(zip(lines, rows, strict=True)):
        first = f'"row_id": {i}'.encode() if generated_ids else b""
        annotated.append(spliced(line, first, members(row, ["cluster_id", "representative", "is_duplicate"])))
        if row["is_duplicate"]:
            row["duplicate_of"] = row["representative"]
            duplicates.append(spliced(line, first, members(row, ["duplicate_of", "cluster_id"])))
        else:
            deduped.append(spliced(line, first, b""))
    for name, want in (("annotated", annotated), ("deduped", deduped), ("duplicates", duplicates)):
        assert (got / f"{name}.jsonl").read_bytes() == b"".join(w + b"\n" for w in want), name


def passes_limit(path: Path, options: ReadOptions) -> int:
    """A limit the whole-file run exceeds and the run in passes does not."""
    limit = in_memory_estimate([path]) - 1
    assert JsonlPasses(path, options).memory_estimate(128) < limit
    return limit


def records(n: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(planted_corpus(n, seed=seed)):
        rec: dict[str, Any] = {"id": f"d{r['id']}", "text": r["text"], "group": r["group"]}
        if i % 3 == 0:
            rec["when"] = f"2024-01-{1 + i % 28:02d}"  # pyarrow would read these as dates
        if i % 4 == 1:
            rec["score"] = i / 7
            rec["tags"] = ["x", str(i)]
        if i % 50 == 7:
            rec["text"] = None
        out.append(rec)
    return out


def write_jsonl(path: Path, rows: list[Any], *, end: str = "\n") -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + end for r in rows))
    return path


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several signature groups, verification slices and output pieces, even on a small file."""
    monkeypatch.setattr(neardup.jobs.modes, "PASS_ROWS", 300)
    monkeypatch.setattr(neardup.jobs.modes, "PASS_WRITE_ROWS", 70)
    monkeypatch.setattr(neardup.pipeline, "GATHER_ROWS", 45)
    monkeypatch.setattr(neardup.pipeline, "VERIFY_PAIRS", 25)
    # and bounded in bytes and shingles as well, which cuts most of them before their rows
    monkeypatch.setattr(neardup.jobs.modes, "PASS_BYTES", 150_000)
    monkeypatch.setattr(neardup.jobs.modes, "PASS_WRITE_BYTES", 40_000)
    monkeypatch.setattr(neardup.pipeline, "GATHER_SHINGLES", 4_000)
    monkeypatch.setattr(neardup.pipeline, "VERIFY_SHINGLES", 9_000)


CASES = [
    ["--id-column", "id"],
    [],  # generated ids
    ["--id-column", "id", "--keep", "longest", "--match-empty"],
    ["--id-column", "id", "--no-verify", "--output-format", "parquet"],
    ["--shingle", "char", "--ngram", "4", "--output-format", "csv", "--keep", "shortest"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(a) or "generated-ids" for a in CASES])
def test_a_run_in_passes_writes_what_the_whole_file_run_writes(
    tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    # about 2.4 MB: the reader's first block (1 MiB) fixes the types, later blocks follow them
    path = write_jsonl(tmp_path / "in.jsonl", records(1600, seed=11))
    whole = whole_run(monkeypatch, "dedup", path, "-o", tmp_path / "whole", "-q", *args)
    assert whole.exit_code == 0, whole.output
    options = ReadOptions(id_column="id" if "--id-column" in args else None)
    limit = passes_limit(path, options)
    passes = run("dedup", path, "-o", tmp_path / "passes", "--memory-limit", limit, *args)
    assert passes.exit_code == 0, passes.output
    as_lines = "--output-format" not in args  # JSON Lines: the rows are the file's own lines
    summary = assert_same_outputs(
        tmp_path / "passes", tmp_path / "whole", parsed_only=ROW_TABLES if as_lines else ()
    )
    if as_lines:
        assert_rows_are_the_input_lines(
            tmp_path / "passes", tmp_path / "whole", path, generated_ids="--id-column" not in args
        )
    assert summary["duplicates_removed"] > 100 and summary["candidate_pairs"] > 100
    assert summary["engine"]["mode"] == "passes"
    assert summary["engine"]["memory_limit"] == limit
    assert json.loads((tmp_path / "whole" / "summary.json").read_text())["engine"]["mode"] == "in-memory"
    assert "in memory, read in passes" in passes.stdout
    assert not (tmp_path / "passes" / ".neardup-work").exists()


ODD_FILES: dict[str, tuple[list[Any], str, str]] = {
    "a bad line": (["{oops"], "\n", "streaming"),
    "a repeated id": ([{"id": "REPEATED", "text": "the repeated id's text"}], "\n", "streaming"),
    "a blank line of spaces": (["   "], "\n", "streaming"),
    "two records on a line": (['{"id": "x1", "text": "one"} {"id": "x2", "text": "two"}'], "\n", "streaming"),
    "a null record": (["null"], "\n", "streaming"),
    "a blank line in windows line ends": ([""], "\r\n", "streaming"),
    "windows line ends": ([], "\r\n", "passes"),
    "blank lines": (["", ""], "\n", "passes"),
}


@pytest.mark.parametrize("case", list(ODD_FILES))
def test_a_file_the_passes_cannot_read_exactly_streams_with_the_same_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    extra, end, mode = ODD_FILES[case]
    rows = records(300, seed=5)
    rows[3]["id"] = "REPEATED"
    path = write_jsonl(tmp_path / "in.jsonl", rows[:150] + extra + rows[150:], end=end)
    args = ["--id-column", "id", "--on-error", "skip"]
    whole = whole_run(monkeypatch, "dedup", path, "-o", tmp_path / "whole", "-q", *args)
    assert whole.exit_code == 0, whole.output
    limit = in_memory_estimate([path]) - 1
    fallback = run("dedup", path, "-o", tmp_path / "out", "-q", "--memory-limit", limit, *args)
    assert fallback.exit_code == 0, fallback.output
    as_lines = ROW_TABLES if mode == "passes" else ()
    summary = assert_same_outputs(tmp_path / "out", tmp_path / "whole", parsed_only=as_lines)
    if as_lines:
        assert_rows_are_the_input_lines(tmp_path / "out", tmp_path / "whole", path, generated_ids=False)
    default = run("dedup", path, "-o", tmp_path / "default", "-q", *args)  # the same, whatever the limit
    assert default.exit_code == 0, default.output
    assert_same_outputs(tmp_path / "default", tmp_path / "out")
    assert summary["engine"]["mode"] == mode


def test_a_limit_below_the_passes_estimate_streams(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", records(300, seed=6))
    limit = JsonlPasses(path, ReadOptions()).memory_estimate(128) - 1
    result = run("dedup", path, "-o", tmp_path / "out", "-q", "--json", "--memory-limit", limit)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["engine"]["mode"] == "streaming"


def test_only_one_plain_json_lines_file_is_read_in_passes(tmp_path: Path) -> None:
    assert takes([tmp_path / "a.jsonl"]) and takes([tmp_path / "a.ndjson"])
    assert not takes([tmp_path / "a.jsonl.gz"])
    assert not takes([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert not takes([tmp_path / "a.csv"]) and not takes([tmp_path / "a.parquet"])


def test_record_spans_are_the_non_empty_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 22}\n\n\n{"c": 3}')  # no newline at the end
    spans = record_spans(path)
    data = path.read_bytes()
    assert [data[s:e] for s, e in spans.tolist()] == [b'{"a": 1}', b'{"b": 22}', b'{"c": 3}']
    path.write_bytes(b"")
    assert record_spans(path).shape == (0, 2)
    for bad in (b'{"a": 1}\n {"b": 2}\n', b'\xef\xbb\xbf{"a": 1}\n', b'{"a": 1}\r\n\r\n', b"[1]\n"):
        path.write_bytes(bad)
        with pytest.raises(WholeReadNeededError):
            record_spans(path)


def test_record_spans_across_read_buffers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import neardup.io.jsonl_passes as passes_module

    monkeypatch.setattr(passes_module, "SCAN_BYTES", 7)  # lines and newlines on buffer edges
    rng = np.random.default_rng(3)
    lines = [b'{"k": "' + b"x" * int(n) + b'"}' for n in rng.integers(0, 20, 200)]
    blob = b"".join(line + b"\n" * int(k) for line, k in zip(lines, rng.integers(1, 4, 200), strict=True))
    path = tmp_path / "x.jsonl"
    path.write_bytes(blob)
    assert [blob[s:e] for s, e in record_spans(path).tolist()] == lines
    path.write_bytes(blob + b"   \n")
    with pytest.raises(WholeReadNeededError):
        record_spans(path)


@pytest.mark.parametrize("scan_bytes", [5, 16, 64, 1 << 20])
def test_record_spans_check_utf8_across_read_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_bytes: int
) -> None:
    """Characters cut by a read's edge are checked whole, and a bad byte anywhere is found."""
    import neardup.io.jsonl_passes as passes_module

    monkeypatch.setattr(passes_module, "SCAN_BYTES", scan_bytes)
    rng = np.random.default_rng(5)
    words = ["x", "自然语言", "é", "\U0001f600", "ab"]
    lines = [
        ('{"k": "' + "".join(rng.choice(words) for _ in range(int(n))) + '"}').encode()
        for n in rng.integers(0, 12, 300)
    ]
    lines[100] = b'{"k": "' + "长".encode() * 40 + b'"}'  # longer than a read
    blob = b"".join(line + b"\n" * int(k) for line, k in zip(lines, rng.integers(1, 3, 300), strict=True))
    path = tmp_path / "x.jsonl"
    path.write_bytes(blob[:-1])  # the last line without its newline
    assert [blob[s:e] for s, e in record_spans(path, check_utf8=True).tolist()] == lines
    wide = [i for i, byte in enumerate(blob) if byte >= 0x80]
    edges = [i for i in wide if i % scan_bytes in (0, scan_bytes - 1)][:6]  # on a read's edge
    for at in [*edges, *rng.choice(wide, 6, replace=False)]:
        bad = bytearray(blob)
        bad[at] = 0xFF  # never in UTF-8
        path.write_bytes(bytes(bad))
        assert record_spans(path).shape[0] == len(lines)  # unchecked, the lines are still found
        with pytest.raises(WholeReadNeededError, match="UTF-8"):
            record_spans(path, check_utf8=True)


def test_texts_are_the_records_text_in_the_order_asked(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", records(400, seed=8))
    options = ReadOptions(id_column="id")
    passes = JsonlPasses(path, options)
    rows = sum(t.num_rows for t in passes.first_pass())
    assert rows == passes.rows == 400
    whole = read_corpus([path], options).table.column("text").to_pylist()
    picked = np.array([0, 7, 8, 57, 150, 399])
    assert passes.texts(picked).to_pylist() == [whole[i] for i in picked]
    assert passes.texts(np.zeros(0, np.int64)).to_pylist() == []


def test_a_file_changed_between_passes_is_an_input_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", records(200, seed=9))
    passes = JsonlPasses(path, ReadOptions(id_column="id"))
    for _ in passes.first_pass():
        pass
    with open(path, "a") as fh:
        fh.write(json.dumps({"id": "late", "text": "added after the first pass"}) + "\n")
    os.utime(path, ns=(0, 12345))
    with pytest.raises(InputError, match="changed while it was being read"):
        passes.texts(np.array([1]))
    with pytest.raises(InputError, match="changed while it was being read"):
        next(passes.tables())


def test_find_duplicates_in_passes_decides_what_find_duplicates_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neardup.config import DedupConfig
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates, find_duplicates_in_passes

    monkeypatch.setattr(neardup.pipeline, "GATHER_ROWS", 16)
    texts = [str(r["text"]) for r in planted_corpus(300, seed=21)] + ["", ""]
    config = DedupConfig.create(keep="longest", match_empty=True)
    want = find_duplicates(encode_texts(texts), config)
    groups = [
        [encode_texts(texts[lo : lo + 37]), encode_texts(texts[lo + 37 : lo + 90])]
        for lo in range(0, 302, 90)
    ]
    asked: list[np.ndarray] = []

    def texts_of(docs: np.ndarray) -> Any:
        asked.append(docs)
        return encode_texts([texts[i] for i in docs])

    got = find_duplicates_in_passes(iter(groups), len(texts), texts_of, config)
    assert np.array_equal(got.signatures, want.signatures)
    assert np.array_equal(got.clusters.cluster, want.clusters.cluster)
    assert np.array_equal(got.clusters.keep, want.clusters.keep)
    assert np.array_equal(got.pairs.left, want.pairs.left) and np.array_equal(
        got.pairs.jaccard, want.pairs.jaccard
    )
    assert want.candidate_count > 50 and len(asked) > 3 and max(a.size for a in asked) == 16
    lean = find_duplicates_in_passes(iter(groups), len(texts), texts_of, config, keep_signatures=False)
    assert lean.signatures.shape == (0, 128)
    assert np.array_equal(lean.clusters.cluster, want.clusters.cluster)
    assert np.array_equal(lean.pairs.estimated, want.pairs.estimated)
    with pytest.raises(ValueError, match="not the 303 announced"):
        find_duplicates_in_passes(iter(groups), len(texts) + 1, texts_of, config)


def test_signature_pieces_run_on_across_groups_and_a_failing_group_stops_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel threads take pieces of the next group without waiting for each other at the
    end of a group: the signatures are those of one batch, the groups are read once each, in
    order, and an error from the reader of the groups reaches the caller, with nothing read past it."""
    from neardup.config import DedupConfig
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates, find_duplicates_in_passes

    monkeypatch.setattr(neardup.pipeline, "_PIECE", 5)
    texts = [str(r["text"]) for r in planted_corpus(400, seed=5)]
    config = DedupConfig.create(keep="shortest")
    want = find_duplicates(encode_texts(texts), config)
    cuts = [0, 3, 3, 50, 51, 120, 200, 333, 400]  # an empty group, groups of one and of many pieces
    read: list[int] = []

    def groups(fail_at: int | None = None) -> Any:
        for k, (lo, hi) in enumerate(itertools.pairwise(cuts)):
            if k == fail_at:
                raise WholeReadNeededError("a block that does not parse")
            read.append(k)
            yield [encode_texts(texts[lo:hi])]

    def texts_of(docs: np.ndarray) -> Any:
        return encode_texts([texts[i] for i in docs])

    got = find_duplicates_in_passes(groups(), len(texts), texts_of, config)
    assert read == list(range(len(cuts) - 1))
    assert np.array_equal(got.signatures, want.signatures)
    assert np.array_equal(got.clusters.keep, want.clusters.keep)  # the lengths, in row order
    assert int(np.count_nonzero(want.is_duplicate)) > 20
    read.clear()
    with pytest.raises(WholeReadNeededError, match="does not parse"):
        find_duplicates_in_passes(groups(fail_at=5), len(texts), texts_of, config)
    assert read == [0, 1, 2, 3, 4]


def test_a_file_too_large_for_passes_by_its_size_is_not_scanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import neardup.io.jsonl_passes as passes_module
    from neardup.io.jsonl_passes import least_memory_in_passes

    path = write_jsonl(tmp_path / "in.jsonl", records(100, seed=4))
    passes = JsonlPasses(path, ReadOptions())
    assert least_memory_in_passes(path) < passes.memory_estimate(128)
    # the first lines suggest the records (all 100 here); the guess takes half of them
    per_record = passes_module.PER_RECORD
    assert least_memory_in_passes(path) == passes.memory_estimate(128) - 100 * (4 * 128 + per_record // 2)

    def scanned(path: Path) -> np.ndarray:
        raise AssertionError(f"{path} was read for its lines")

    monkeypatch.setattr(passes_module, "record_spans", scanned)
    limit = least_memory_in_passes(path) - 1  # streams without reading the file for its lines
    done = run("dedup", path, "-o", tmp_path / "out", "-q", "--json", "--memory-limit", limit)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["engine"]["mode"] == "streaming"


def test_verification_gathers_the_text_of_many_chunks_a_slice_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neardup.config import DedupConfig
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates

    texts = [str(r["text"]) for r in planted_corpus(300, seed=22)]
    config = DedupConfig.create()
    want = find_duplicates(encode_texts(texts), config)  # one chunk: no gathering
    monkeypatch.setattr(neardup.pipeline, "GATHER_ROWS", 16)
    chunks = [encode_texts(texts[lo : lo + 41]) for lo in range(0, len(texts), 41)]
    got = find_duplicates(chunks, config)
    assert want.candidate_count > 50
    assert np.array_equal(got.pairs.left, want.pairs.left)
    assert np.array_equal(got.pairs.jaccard, want.pairs.jaccard)
    assert np.array_equal(got.clusters.cluster, want.clusters.cluster)


def test_verification_in_blocks_of_pairs_gives_theexact_jaccard_in_blocks_of_every_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from neardup.config import DedupConfig
    from neardup.core.shingles import shingle_sets
    from neardup.core.text import encode_texts
    from neardup.core.verify import exact_jaccard_pairs
    from neardup.pipeline import exact_jaccard_in_blocks

    texts = [str(r["text"]) for r in planted_corpus(400, dup_fraction=0.5, seed=23)]
    config = DedupConfig.create(threshold=0.5)
    candidates = neardup.find_duplicates(encode_texts(texts), DedupConfig.create(threshold=0.5, verify=False))
    left, right = candidates.pairs.left, candidates.pairs.right
    batch = encode_texts(texts)
    n = len(texts)

    def sets_of(docs: np.ndarray) -> Any:
        asked.append(docs)
        return shingle_sets(batch, docs, candidates.shingle_counts, config.text, config.shingle)

    asked: list[np.ndarray] = []
    counts = candidates.shingle_counts
    want = exact_jaccard_in_blocks(left, right, counts, sets_of)  # one block: every pair at once
    assert len(asked) == 1 and left.size > 60
    monkeypatch.setattr(neardup.pipeline, "VERIFY_PAIRS", 7)
    asked = []
    got = exact_jaccard_in_blocks(left, right, counts, sets_of)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, exact_jaccard_pairs(sets_of(np.arange(n)), n, left, right))
    asked.pop()
    assert len(asked) == -(-left.size // 7) and max(a.size for a in asked) <= 14
    # the pairs of a component go together: few documents have their set made twice
    made = np.concatenate(asked)
    assert made.size < 1.25 * np.unique(made).size
    # and at most VERIFY_SHINGLES shingles to a block, however few the pairs
    budget = int(counts[left].max() + counts[right].max()) * 3
    monkeypatch.setattr(neardup.pipeline, "VERIFY_PAIRS", 1000)
    monkeypatch.setattr(neardup.pipeline, "VERIFY_SHINGLES", budget)
    asked = []
    np.testing.assert_array_equal(exact_jaccard_in_blocks(left, right, counts, sets_of), want)
    assert len(asked) > 10 and max(int(counts[a].sum()) for a in asked) <= budget


@pytest.mark.parametrize(
    ("weights", "max_items", "budget", "blocks"),
    [
        ([], 3, 10, []),
        ([1, 1, 1, 1, 1, 1, 1], 3, 10, [(0, 3), (3, 6), (6, 7)]),
        ([4, 4, 4, 4], 3, 9, [(0, 2), (2, 4)]),
        ([2, 20, 2, 2, 30], 5, 10, [(0, 1), (1, 2), (2, 4), (4, 5)]),
        ([5, 5], 4, 10, [(0, 2)]),
    ],
)
def test_budgeted_blocks(
    weights: list[int], max_items: int, budget: int, blocks: list[tuple[int, int]]
) -> None:
    from neardup.pipeline import budgeted_blocks

    assert list(budgeted_blocks(np.array(weights, dtype=np.int64), max_items, budget)) == blocks


def test_long_documents_are_gathered_fewer_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from neardup.config import DedupConfig
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates_in_passes

    texts = [str(r["text"]) * (1 + i % 5) for i, r in enumerate(planted_corpus(200, seed=24))]
    config = DedupConfig.create()
    want = neardup.find_duplicates(encode_texts(texts), config)
    monkeypatch.setattr(neardup.pipeline, "GATHER_SHINGLES", 2000)
    asked: list[np.ndarray] = []

    def texts_of(docs: np.ndarray) -> Any:
        asked.append(docs)
        return encode_texts([texts[i] for i in docs])

    got = find_duplicates_in_passes(iter([[encode_texts(texts)]]), len(texts), texts_of, config)
    np.testing.assert_array_equal(got.pairs.jaccard, want.pairs.jaccard)
    np.testing.assert_array_equal(got.clusters.cluster, want.clusters.cluster)
    counts = want.shingle_counts
    assert len(asked) > 5
    assert all(int(counts[a].sum()) <= 2000 or a.size == 1 for a in asked)


def test_output_pieces_gathered_from_a_readers_batches_are_one_chunk_a_column() -> None:
    from neardup.outputs import table_pieces

    batches = [pa.table({"id": [i, i + 1, i + 2], "text": ["a", None, "c"]}) for i in range(0, 30, 3)]
    pieces = list(table_pieces(iter(batches), 7))
    assert [p.num_rows for p in pieces] == [7, 7, 7, 7, 2]
    assert all(column.num_chunks == 1 for piece in pieces for column in piece.columns)
    assert pa.concat_tables(pieces).equals(pa.concat_tables(batches))
    # a piece also ends once it holds max_bytes: here at a batch of 3 rows, or the 7 rows
    small = list(table_pieces(iter(batches), 7, batches[0].nbytes))
    assert [p.num_rows for p in small] == [3] * 10
    assert pa.concat_tables(small).equals(pa.concat_tables(batches))
    assert [p.num_rows for p in table_pieces(iter(batches), 7, 2 * batches[0].nbytes)] == [6] * 5


@pytest.mark.parametrize("change", ["a new field", "a type change"])
def test_a_column_that_changes_after_the_first_block_streams_with_the_same_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """...where the outputs need every column (CSV here); JSON Lines outputs, the file's own
    lines, never parse the other fields, and stay in passes."""
    rows = records(1600, seed=12)  # about 2.4 MB: row 1201 is well past the first 1 MiB block
    if change == "a new field":
        rows[1201]["brand_new"] = 5
    else:
        rows[1201]["score"] = "high"
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(WholeReadNeededError):
        for _ in JsonlPasses(path, ReadOptions(id_column="id")).first_pass():
            pass
    narrow = JsonlPasses(path, ReadOptions(id_column="id"), all_columns=False)
    assert sum(t.num_rows for t in narrow.first_pass()) == 1600
    limit = in_memory_estimate([path]) - 1
    for fmt, mode in (("csv", "streaming"), ("jsonl", "passes")):
        args = ["--id-column", "id", "--output-format", fmt]
        whole = whole_run(monkeypatch, "dedup", path, "-o", tmp_path / f"whole-{fmt}", "-q", *args)
        assert whole.exit_code == 0, whole.output
        out = tmp_path / f"out-{fmt}"
        done = run("dedup", path, "-o", out, "-q", "--memory-limit", limit, *args)
        assert done.exit_code == 0, done.output
        # in JSON Lines the rows are the input's lines, whose score changes type (unreadable to pyarrow)
        checks = (
            {"parsed_only" if change == "a new field" else "unread": ROW_TABLES} if fmt == "jsonl" else {}
        )
        assert assert_same_outputs(out, tmp_path / f"whole-{fmt}", **checks)["engine"]["mode"] == mode
    assert_rows_are_the_input_lines(
        tmp_path / "out-jsonl", tmp_path / "whole-jsonl", path, generated_ids=False
    )


@pytest.mark.parametrize("where", ["text", "another field"])
def test_bad_utf8_anywhere_sends_a_file_written_as_its_lines_to_the_whole_file_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    import neardup.io.jsonl_passes as passes_module

    lines = [
        json.dumps({"id": i, "text": f"caf\u00e9 number {i}", "note": "\u00fc" * (i % 5)}, ensure_ascii=False)
        for i in range(300)
    ]
    good = "".join(line + "\n" for line in lines).encode()
    monkeypatch.setattr(passes_module, "SCAN_BYTES", 13)  # characters and lines across buffer edges
    path = tmp_path / "in.jsonl"
    path.write_bytes(good)
    assert JsonlPasses(path, ReadOptions(id_column="id"), all_columns=False).rows == 300
    bad = good.replace(b'"text": "caf\xc3\xa9 number 7"', b'"text": "caf\xff number 7"', 1)
    if where == "another field":
        bad = good.replace(
            b'"id": 8, "text": "caf\xc3\xa9 number 8", "note": "\xc3\xbc\xc3\xbc\xc3\xbc"',
            b'"id": 8, "text": "caf\xc3\xa9 number 8", "note": "\xc3\xbc\xbc\xc3\xbc"',
            1,
        )
    assert bad != good
    path.write_bytes(bad)
    with pytest.raises(WholeReadNeededError, match="UTF-8"):
        JsonlPasses(path, ReadOptions(id_column="id"), all_columns=False)
    monkeypatch.undo()
    done = run("dedup", path, "-o", tmp_path / "out", "--id-column", "id")  # read whole, which reports it
    assert done.exit_code == 1
    assert f"in.jsonl:{8 if where == 'text' else 9}: invalid UTF-8" in done.stderr
    assert not (tmp_path / "out").exists()


def test_verification_never_reads_documents_whose_only_pairs_share_every_shingle() -> None:
    """Copies that normalise to the same shingles are decided by their digests from the first
    pass: their text is not asked for again, and their Jaccard is exactly 1.0."""
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates, find_duplicates_in_passes

    texts = [
        "the quick brown fox jumps over the lazy dog near the old river bank today",
        "the quick brown fox jumps over the lazy dog near the old river bank tonight",
        "a completely different sentence about the weather and the sea in winter time",
        "A completely different sentence, about the WEATHER and the sea in winter time!",
    ]
    asked: set[int] = set()

    def texts_of(docs: np.ndarray) -> Any:
        asked.update(docs.tolist())
        return encode_texts([texts[i] for i in docs])

    config = DedupConfig.create(threshold=0.5, ngram=3)
    got = find_duplicates_in_passes(iter([[encode_texts(texts)]]), len(texts), texts_of, config)
    pairs = {(a, b): j for a, b, j in zip(got.pairs.left, got.pairs.right, got.pairs.jaccard, strict=True)}
    assert set(pairs) == {(0, 1), (2, 3)}
    assert 0.5 <= pairs[(0, 1)] < 1.0 and pairs[(2, 3)] == 1.0
    assert asked == {0, 1}  # 2 and 3 only pair with each other, shingle for shingle
    want = find_duplicates(encode_texts(texts), config)
    assert np.array_equal(want.pairs.jaccard, got.pairs.jaccard)


def test_the_copies_digest_is_the_shingles_with_their_repeats() -> None:
    from neardup.config import MinHashConfig, ShingleConfig, TextConfig
    from neardup.core.minhash import MinHasher
    from neardup.core.text import encode_texts

    hasher = MinHasher(MinHashConfig(), TextConfig(), ShingleConfig(mode="word", n=2))
    texts = [
        "one two three four",
        "One, TWO  three four.",  # the same shingles once normalised
        "one two three four one two",  # "one two" twice: a repeat
        "four three two one",
        "自然语言处理",
        "自然语言处理",
        "自然语言处理和",
    ]
    digests = np.zeros(len(texts), dtype=np.uint64)
    _, counts = hasher.signatures_with_counts(encode_texts(texts), digests=digests)
    assert digests[0] == digests[1] and digests[4] == digests[5]
    assert len(set(digests[[0, 2, 3, 4, 6]].tolist())) == 5
    assert counts[2] == counts[0] + 2


@pytest.mark.parametrize("ids", ["strings", "integers", "generated"])
def test_the_compiled_first_pass_reads_what_pyarrow_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ids: str
) -> None:
    """Past the first block, a run with JSON Lines outputs reads text and ids with the compiled
    reader: the same tables pyarrow's parse gives, pieces it leaves to pyarrow included."""
    import neardup.io.jsonl_passes as passes_module
    from neardup.warm import compile_input_kernels

    compile_input_kernels()  # into numba's cache: else the first pass reads with pyarrow alone
    rows = records(1600, seed=14)  # about 2.4 MB: most pieces past the first 1 MiB block
    for i, row in enumerate(rows):
        if ids == "integers":
            row["id"] = 10_000 - 3 * i
        if i % 9 == 4:
            row["nested"] = {"a": [1, -2.5e-3, None], "text": "not this", "b": "\u00e9\\"}
    lines = [json.dumps(row, ensure_ascii=i % 2 == 0) for i, row in enumerate(rows)]
    lines[1400] = lines[1400][:-1] + ', "x": NaN}'  # pyarrow reads it; the compiled reader leaves it
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    options = ReadOptions(id_column=None if ids == "generated" else "id")
    answered: list[bool] = []
    compiled = passes_module.record_fields

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = compiled(*args, **kwargs)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(passes_module, "record_fields", counted)
    passes = JsonlPasses(path, options, all_columns=False)
    got = pa.concat_tables(passes.first_pass(piece_rows=300))
    assert answered.count(False) == 1 and answered.count(True) >= 3  # the NaN's piece alone
    monkeypatch.setattr(JsonlPasses, "_compiled_id_type", lambda self: None)
    parsed = JsonlPasses(path, options, all_columns=False)
    want = pa.concat_tables(parsed.first_pass())
    assert got.equals(want)
    assert got.column("text").to_pylist() == [r["text"] for r in rows]
    assert passes.null_texts == parsed.null_texts == sum(r["text"] is None for r in rows) > 0
    assert passes.ids is not None and parsed.ids is not None and passes.ids.equals(parsed.ids)


@pytest.mark.parametrize("damage", ['"n": 01', '"n": "\\ud800"', '"n": [1, 2}'])
def test_a_malformed_record_past_the_first_block_is_reported_by_the_whole_file_reader(
    tmp_path: Path, damage: str
) -> None:
    rows = records(1600, seed=15)
    lines = [json.dumps(row) for row in rows]
    lines[1500] = lines[1500][:-1] + ", " + damage + "}"
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(WholeReadNeededError):
        for _ in JsonlPasses(path, ReadOptions(id_column="id"), all_columns=False).first_pass():
            pass
    done = run("dedup", path, "-o", tmp_path / "out", "--id-column", "id")
    assert done.exit_code == 1
    assert "in.jsonl:1501" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
