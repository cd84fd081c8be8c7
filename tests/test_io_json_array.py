"""``.json`` files holding a JSON array of records: read exactly as the equivalent JSON Lines."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from neardup.errors import InputError
from neardup.io import ReadOptions, read_corpus
from neardup.io._common import Format
from neardup.io.inputs import detect_format
from neardup.io.json_array import CHUNK_SIZE, array_layout
from neardup.io.jsonl_passes import takes
from neardup.io.stream import scan

RECORDS = [
    {"text": "one two three", "n": 1, "tags": ["a"], "day": "2021-02-03", "m": {"k": 1.5}},
    {"text": None, "n": 2, "tags": [], "day": "2021-02-04", "m": {"k": 2}},
    {"n": 3, "extra": True},
    {"text": 'quotes " and \\ and ] [ } { , inside', "n": 4, "tags": ["b", "c"], "day": "x"},
    {"text": "长 文本 ünïcode\ttab", "n": 5, "m": None},
]


def jsonl(records: list[object]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def put(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def table_of(path: Path, **options: object) -> pa.Table:
    return read_corpus([path], ReadOptions(**options)).table  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "layout",
    [
        lambda r: json.dumps(r, ensure_ascii=False),
        lambda r: json.dumps(r, ensure_ascii=False, indent=2),
        lambda r: "\ufeff \n" + json.dumps(r, indent=4).replace("\n", "\r\n") + "\r\n",
        lambda r: json.dumps({"data": r}, ensure_ascii=False),
        lambda r: json.dumps({"rows": r}, ensure_ascii=False, indent=1),
    ],
    ids=["compact", "pretty", "bom-crlf-ascii", "wrapped", "wrapped-pretty"],
)
def test_array_reads_as_the_equivalent_json_lines(tmp_path: Path, layout: object) -> None:
    expected = table_of(put(tmp_path / "same.jsonl", jsonl(RECORDS)))
    path = put(tmp_path / "a.json", layout(RECORDS))  # type: ignore[operator]
    table = table_of(path)
    assert table.schema == expected.schema
    assert table.equals(expected)


def test_gzipped_array(tmp_path: Path) -> None:
    expected = table_of(put(tmp_path / "same.jsonl", jsonl(RECORDS)))
    path = put(tmp_path / "a.json.gz", gzip.compress(json.dumps(RECORDS, indent=2).encode()))
    assert table_of(path).equals(expected)


def test_large_array_spanning_many_chunks(tmp_path: Path) -> None:
    records = [{"text": f"document {i} " + "word " * (i % 50), "i": i} for i in range(40_000)]
    path = put(tmp_path / "a.json", json.dumps(records, indent=1))
    assert path.stat().st_size > 3 * CHUNK_SIZE
    expected = table_of(put(tmp_path / "same.jsonl", jsonl(records)))  # type: ignore[arg-type]
    assert table_of(path).equals(expected)


def test_json_lines_in_a_json_file_reads_as_before(tmp_path: Path) -> None:
    path = put(tmp_path / "a.json", jsonl(RECORDS))
    assert array_layout(path, detect_format(path)) is None
    assert table_of(path).equals(table_of(put(tmp_path / "same.jsonl", jsonl(RECORDS))))


def test_jsonl_file_is_never_taken_for_an_array(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", json.dumps(RECORDS) + "\n")
    with pytest.raises(InputError, match=r"a.jsonl:1: expected a JSON object, got array"):
        read_corpus([path])


def test_empty_array_has_no_records(tmp_path: Path) -> None:
    path = put(tmp_path / "a.json", " [ \n ] \n")
    with pytest.raises(InputError, match="no records to deduplicate"):
        read_corpus([path])


def test_bad_elements_are_reported_with_their_index_and_line(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.json",
        '[\n  {"text": "a"},\n  5,\n  {"text":\n    oops},\n  {"text": 7},\n  null,\n  {"text": "b"},\n]\n',
    )
    with pytest.raises(InputError) as info:
        read_corpus([path])
    assert str(info.value) == f"{path}:3: element [1]: expected a JSON object, got number"
    corpus = read_corpus([path], ReadOptions(on_error="skip"))
    assert corpus.table.column("text").to_pylist() == ["a", "b"]
    assert [str(e) for e in corpus.skipped] == [
        f"{path}:3: element [1]: expected a JSON object, got number",
        f"{path}:4: element [2]: malformed JSON: Expecting value at character 14 of the element",
        f"{path}:6: element [3]: field 'text' is not a string (got number)",
        f"{path}:7: element [4]: expected a JSON object, got null",
        f"{path}:9: element [6]: empty (a comma with no value before it)",
    ]
    assert [(e.line, e.reason.split(":")[0]) for e in corpus.skipped][:1] == [(3, "element [1]")]


def test_raw_newline_inside_a_string_is_a_bad_element(tmp_path: Path) -> None:
    path = put(tmp_path / "a.json", '[{"text": "a"},\n{"text": "broken\nstring"},\n{"text": "c"}]')
    corpus = read_corpus([path], ReadOptions(on_error="skip"))
    assert corpus.table.column("text").to_pylist() == ["a", "c"]
    assert len(corpus.skipped) == 1
    assert str(corpus.skipped[0]).startswith(
        f"{path}:2: element [1]: malformed JSON: Invalid control character"
    )


def test_repeated_id_names_the_element_line(tmp_path: Path) -> None:
    path = put(tmp_path / "a.json", '[\n{"id": 1, "text": "a"},\n\n{"id": 1, "text": "b"}\n]')
    with pytest.raises(InputError, match=r"a.json:4: duplicate id 1 \(first seen at .*a.json:2\)"):
        read_corpus([path], ReadOptions(id_column="id"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("5\n", r"a.json:1: holds a JSON number, not records: expected a JSON array of objects"),
        ('  "text"', r"a.json:1: holds a JSON string, not records"),
        ("true", r"a.json:1: holds a JSON boolean, not records"),
        ('{\n  "a": 1,\n  "b": 2\n}\n', r"a.json: holds a JSON object without an array first in it"),
        (
            '{\n  "data": [{"text": "a"}],\n  "more": 1\n}',
            r"a.json:2: holds an object with more keys than 'data': expected a JSON array",
        ),
        ('{\n  "data": [{"text": "a"}]\n', r"a.json: the JSON object has no closing '\}'"),
        (
            '[{"text": "a"},\n{"text": "b"',
            r"a.json:2: the JSON array has no closing '\]' \(is the file cut short\?\)",
        ),
        ('[{"text": "a"}]\n[{"text": "b"}]', r"a.json:2: has more after the JSON array's closing '\]'"),
    ],
)
def test_wrong_top_level_is_an_error_of_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = put(tmp_path / "a.json", content)
    for on_error in ("stop", "skip"):
        with pytest.raises(InputError, match=message):
            read_corpus([path], ReadOptions(on_error=on_error))  # type: ignore[arg-type]


def test_array_is_not_read_in_passes(tmp_path: Path) -> None:
    array = put(tmp_path / "a.json", '[{"text": "a"},\n{"text": "b"}]')
    lines = put(tmp_path / "b.json", jsonl(RECORDS))
    scalar = put(tmp_path / "c.json", "5")
    assert not takes([array])
    assert takes([lines])
    assert not takes([scalar])


def test_streamed_scan_reads_the_array_in_blocks(tmp_path: Path) -> None:
    records = [{"text": f"document {i} " + "word " * (i % 30), "i": i} for i in range(20_000)]
    path = put(tmp_path / "a.json", json.dumps(records, indent=2))
    stream = scan([path], ReadOptions(), cache_dir=tmp_path / "work", batch_bytes=1 << 16)
    streamed = pa.concat_tables(list(stream.tables()))
    assert streamed.equals(table_of(path))
    assert stream.rows == len(records)


def test_streamed_scan_of_bad_elements(tmp_path: Path) -> None:
    path = put(tmp_path / "a.json", '[{"text": "a"}, 1, {"text": "b"}]')
    stream = scan([path], ReadOptions(on_error="skip"), cache_dir=tmp_path / "work", batch_bytes=1 << 16)
    assert pa.concat_tables(list(stream.tables())).column("text").to_pylist() == ["a", "b"]
    assert [str(e) for e in stream.skipped] == [f"{path}:1: element [1]: expected a JSON object, got number"]


def test_layout_of_other_formats_is_none(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", "[1]")
    assert array_layout(path, Format("jsonl")) is None
