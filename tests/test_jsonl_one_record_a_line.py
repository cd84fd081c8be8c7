"""A JSON Lines line is one record: ``{...} {...}`` on one line is a bad record naming its file and
line (skipped under ``--on-error skip``), whichever path reads it: pyarrow's fast path (which
took it as two records), the line-by-line path, the block-wise reader of a streamed run, a run in
passes. The same line gets the same verdict in a small file and in one of several blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import ReadOptions, read_corpus
from neardup.io._common import WholeReadNeededError
from neardup.io.inputs import detect_format
from neardup.io.jsonl import STREAM_BLOCK_SIZE, read_blocks

TWO = '{"id": "two-a", "text": "first of two on a line"} {"id": "two-b", "text": "second of two"}'
REASON = "a second JSON value on the line (a JSON Lines line holds one record) at column 51"


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _corpus(path: Path, records: int, at: int, *, blank_lines: bool = False) -> Path:
    """``records`` good records with the two-object line as line ``at`` (1-based)."""
    lines = [
        json.dumps({"id": f"r{i}", "text": f"record {i} says {i * 31 % 977} and {i * 7 % 1013} " * 4})
        for i in range(records)
    ]
    lines.insert(at - 1, TWO)
    if blank_lines:  # a blank line after it: the line count must not be fooled by the pair
        lines.insert(at, "  ")
    path.write_text("\n".join(lines) + "\n")
    return path


SIZES = {"small": (6, 4), "blocks": (30_000, 25_001)}
"""records, and the line the pair is on: a file of one block, and one of several (the pair in a
late block of the block-wise reader)."""
MODES = {
    "in-memory": ["--output-format", "csv"],
    "passes": [],  # one JSON Lines file, JSON Lines out: read in passes, which fall back to a whole read
    "streaming": ["--work-dir", "{work}"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("size", sorted(SIZES))
def test_two_objects_on_a_line_stop_the_run_naming_file_and_line(
    tmp_path: Path, size: str, mode: str
) -> None:
    records, at = SIZES[size]
    corpus = _corpus(tmp_path / "c.jsonl", records, at)
    if size == "blocks":
        assert corpus.stat().st_size > 4 * STREAM_BLOCK_SIZE
    args = [a.format(work=tmp_path / "work") for a in MODES[mode]]
    done = _run("dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "-q", *args)
    assert done.exit_code == 1, done.output
    assert done.stderr.splitlines()[0] == f"neardup: error: {corpus}:{at}: {REASON}"
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("size", sorted(SIZES))
def test_two_objects_on_a_line_are_skipped_as_one_bad_record(tmp_path: Path, size: str, mode: str) -> None:
    records, at = SIZES[size]
    corpus = _corpus(tmp_path / "c.jsonl", records, at, blank_lines=True)
    args = [a.format(work=tmp_path / "work") for a in MODES[mode]]
    done = _run(
        "dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "--on-error", "skip", "--json", *args
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["skipped"] == [f"{corpus}:{at}: {REASON}"]
    assert summary["input_rows"] == records  # neither of the two objects is a row
    assert f"neardup: skipped: {corpus}:{at}: {REASON}" in done.stderr


def test_the_verdict_is_the_same_with_another_bad_line_in_the_file(tmp_path: Path) -> None:
    """The line-by-line path (taken for the malformed line) said so before; now the fast path agrees."""
    corpus = _corpus(tmp_path / "c.jsonl", 6, 4)
    with corpus.open("a") as fh:
        fh.write("not json\n")
    problems = read_corpus([corpus], ReadOptions(id_column="id", on_error="skip")).skipped
    assert [str(p) for p in problems] == [
        f"{corpus}:4: {REASON}",
        f"{corpus}:8: malformed JSON: Expecting value at column 1",
    ]


def test_the_library_raises_an_input_error_naming_the_line(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c.jsonl", 30_000, 25_001)
    with pytest.raises(InputError) as caught:
        read_corpus([corpus], ReadOptions(id_column="id"))
    assert (caught.value.path, caught.value.line) == (str(corpus), 25_001)
    with pytest.raises(WholeReadNeededError, match="more records than lines"):
        for _ in read_blocks(corpus, detect_format(corpus), text_column="text"):
            pass


def test_gzipped_json_lines_count_their_lines_too(tmp_path: Path) -> None:
    import gzip

    plain = _corpus(tmp_path / "c.jsonl", 6, 4)
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(InputError) as caught:
        read_corpus([packed], ReadOptions(id_column="id"))
    assert (caught.value.path, caught.value.line, caught.value.reason) == (str(packed), 4, REASON)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b"{}\n{}\n",
        b"\xef\xbb\xbf{}\n \n\t\r\n{}\r\n\n\n{} {}",
        b"  {}\n\n  \n{}\n \x0b\n",
        b'{"a": 1}\n' * 50 + b"   \n" + b'{"a": 1}\n' * 50,
    ],
    ids=["empty", "one", "two", "bom-blanks-pair", "indented", "one-blank-among-many"],
)
def test_line_count_is_the_record_lines_whatever_the_chunks(tmp_path: Path, data: bytes) -> None:
    from neardup.io.jsonl import LineCount, _record_lines

    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    want = len(_record_lines(path, detect_format(path)))
    for size in (3, 4, 7, 64, 1 << 20):
        count = LineCount()
        for at in range(0, len(data), size):
            count.add(data[at : at + size])
        assert count.lines == want, size


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"{", b"}", b" ", b"\t", b"\n", b"\r", b"\x0b", b"ab", b"\n\n"]), max_size=80
    ),
    bom=st.booleans(),
    size=st.integers(1, 40),
)
def test_line_count_agrees_with_the_lines_that_hold_a_byte(data: list[bytes], bom: bool, size: int) -> None:
    from neardup.io.jsonl import LineCount

    raw = (b"\xef\xbb\xbf" if bom else b"") + b"".join(data) * 3
    want = sum(1 for line in raw.removeprefix(b"\xef\xbb\xbf").split(b"\n") if line.strip())
    count = LineCount()
    for at in range(0, len(raw), size):
        count.add(raw[at : at + size])
    assert count.lines == want
