"""Readers and writers of neardup.io, against real files in tmp_path."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ConfigError, InputError, MissingColumnError, OutputError
from neardup.io import (
    INPUT_EXTENSIONS,
    OUTPUT_FORMATS,
    Corpus,
    OutputDir,
    ReadOptions,
    default_output_format,
    expand_inputs,
    html_to_text,
    read_corpus,
    write_table,
)

SKIP = ReadOptions(on_error="skip")


def put(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def rows(corpus: Corpus) -> list[dict[str, object]]:
    return corpus.table.to_pylist()


def texts(corpus: Corpus) -> list[object]:
    return corpus.table.column(corpus.text_column).to_pylist()


def error(exc_info: pytest.ExceptionInfo[InputError]) -> str:
    return str(exc_info.value)


# --- InputError --------------------------------------------------------------------------------


def test_input_error_locations() -> None:
    assert str(InputError("bad", path="a.jsonl", line=3)) == "a.jsonl:3: bad"
    assert str(InputError("bad", path="a.csv", record=2)) == "a.csv: record 2: bad"
    assert str(InputError("bad", path=Path("a.csv"))) == "a.csv: bad"
    assert str(InputError("bad")) == "bad"
    err = InputError("bad", path="a.csv", record=2)
    assert (err.path, err.line, err.record, err.reason) == ("a.csv", None, 2, "bad")


# --- JSON Lines --------------------------------------------------------------------------------


def test_jsonl_reads_records_and_generates_row_id(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.jsonl",
        jsonl({"text": "one", "n": 1}, {"text": None, "n": 2}, {"n": 3}, {"text": "four", "n": 4}),
    )
    corpus = read_corpus([path])
    assert corpus.table.column_names == ["row_id", "text", "n"]
    assert rows(corpus) == [
        {"row_id": 0, "text": "one", "n": 1},
        {"row_id": 1, "text": None, "n": 2},
        {"row_id": 2, "text": None, "n": 3},
        {"row_id": 3, "text": "four", "n": 4},
    ]
    assert corpus.table.schema.field("row_id").type == pa.int64()
    assert (corpus.text_column, corpus.id_column, corpus.family) == ("text", "row_id", "jsonl")
    assert corpus.sources == [str(path)] and corpus.skipped == []


@pytest.mark.parametrize("name", ["a.jsonl.gz", "a.json.gz", "A.JSONL.GZ"])
def test_jsonl_gzip(tmp_path: Path, name: str) -> None:
    path = put(tmp_path / name, gzip.compress(jsonl({"text": "x"}, {"text": "y"}).encode()))
    assert texts(read_corpus([path])) == ["x", "y"]


@pytest.mark.parametrize("name", ["a.ndjson", "a.json"])
def test_jsonl_other_extensions(tmp_path: Path, name: str) -> None:
    assert texts(read_corpus([put(tmp_path / name, jsonl({"text": "x"}))])) == ["x"]


def test_jsonl_blank_lines_crlf_and_bom(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", '\ufeff{"text": "a"}\r\n\r\n   \n{"text": "b"}\r\n')
    assert texts(read_corpus([path])) == ["a", "b"]


def test_jsonl_keeps_date_strings_as_written(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "2020-01-01", "day": "2021-02-03"}))
    table = read_corpus([path]).table
    assert table.column("text").to_pylist() == ["2020-01-01"]
    assert table.column("day").to_pylist() == ["2021-02-03"]


def test_jsonl_heterogeneous_column_becomes_text(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.jsonl",
        jsonl({"text": "a", "meta": 1}, {"text": "b", "meta": "x"}, {"text": "c", "meta": {"k": [1]}}),
    )
    corpus = read_corpus([path])
    assert corpus.table.column("meta").to_pylist() == ["1", "x", '{"k":[1]}']
    assert texts(corpus) == ["a", "b", "c"]


def test_jsonl_nested_columns(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "a", "tags": ["x", "y"], "m": {"k": 1}}))
    assert rows(read_corpus([path])) == [{"row_id": 0, "text": "a", "tags": ["x", "y"], "m": {"k": 1}}]


def test_jsonl_malformed_line(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", '{"text": "a"}\n\n{"text": "a" "b"}\n')
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:3: malformed JSON: Expecting ',' delimiter at column 14"
    assert (exc.value.line, exc.value.path) == (3, str(path))


@pytest.mark.parametrize(
    ("line", "kind"), [("[1, 2]", "array"), ('"s"', "string"), ("3", "number"), ("null", "null")]
)
def test_jsonl_line_not_an_object(tmp_path: Path, line: str, kind: str) -> None:
    path = put(tmp_path / "a.jsonl", '{"text": "a"}\n' + line + "\n")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:2: expected a JSON object, got {kind}"


def test_jsonl_invalid_utf8(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", b'{"text": "ok"}\n{"text": "\xc3\xa9b\xff"}\n')
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:2: invalid UTF-8 (byte 0xff at column 13)"


@pytest.mark.parametrize(("value", "kind"), [(5, "number"), ({"a": 1}, "object"), ([1], "array")])
def test_jsonl_text_not_a_string(tmp_path: Path, value: object, kind: str) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "a"}, {"text": value}))
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:2: field 'text' is not a string (got {kind})"


def test_jsonl_all_numbers_in_text_column(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"body": 1}, {"body": 2}))
    with pytest.raises(InputError) as exc:
        read_corpus([path], ReadOptions(text_column="body"))
    assert error(exc) == f"{path}:1: field 'body' is not a string (got number)"


def test_jsonl_skip_collects_errors_and_keeps_good_rows(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.jsonl",
        b'{"text": "a", "n": 1}\n{bad\n[1]\n{"text": 7}\n{"text": "\xff"}\n{"text": "b", "n": 2}\n',
    )
    corpus = read_corpus([path], SKIP)
    assert rows(corpus) == [{"row_id": 0, "text": "a", "n": 1}, {"row_id": 1, "text": "b", "n": 2}]
    assert [str(e) for e in corpus.skipped] == [
        f"{path}:2: malformed JSON: Expecting property name enclosed in double quotes at column 2",
        f"{path}:3: expected a JSON object, got array",
        f"{path}:4: field 'text' is not a string (got number)",
        f"{path}:5: invalid UTF-8 (byte 0xff at column 11)",
    ]
    assert [e.line for e in corpus.skipped] == [2, 3, 4, 5]


# --- CSV / TSV ---------------------------------------------------------------------------------


def test_csv_quotes_and_embedded_newlines(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", 'id,text\n1,"line one\nline two"\n2,"say ""hi"", ok"\n3,plain\n')
    corpus = read_corpus([path], ReadOptions(id_column="id"))
    assert rows(corpus) == [
        {"id": 1, "text": "line one\nline two"},
        {"id": 2, "text": 'say "hi", ok'},
        {"id": 3, "text": "plain"},
    ]
    assert corpus.id_column == "id" and corpus.family == "csv"


def test_csv_text_column_is_always_text(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", "text,day\n123,2020-01-01\nNA,2020-01-02\n,2020-01-03\n")
    table = read_corpus([path]).table
    assert table.column("text").to_pylist() == ["123", "NA", ""]
    assert table.column("day").to_pylist() == ["2020-01-01", "2020-01-02", "2020-01-03"]


def test_tsv(tmp_path: Path) -> None:
    path = put(tmp_path / "a.tsv", 'text\tn\na, b\t1\n"tab\there"\t2\n')
    assert rows(read_corpus([path])) == [
        {"row_id": 0, "text": "a, b", "n": 1},
        {"row_id": 1, "text": "tab\there", "n": 2},
    ]


@pytest.mark.parametrize("name", ["a.csv.gz", "a.tsv.gz"])
def test_csv_gzip(tmp_path: Path, name: str) -> None:
    sep = "\t" if "tsv" in name else ","
    path = put(tmp_path / name, gzip.compress(f'text{sep}n\n"x\ny"{sep}1\n'.encode()))
    assert texts(read_corpus([path])) == ["x\ny"]


def test_csv_malformed_row(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", 'id,text\n1,"two\nlines"\n2,b,extra\n3,c\n')
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:4: expected 2 fields, got 3"


def test_csv_invalid_utf8(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", b"id,text,other\n1,a,x\n2,b,ab\xffc\n")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:3: invalid UTF-8 (byte 0xff at column 7)"


def test_csv_skip(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.csv",
        b'id,text\n1,"multi\nline"\n2,b,extra\n3,\xfe\n4,"d ""q"""\n',
    )
    corpus = read_corpus([path], ReadOptions(id_column="id", on_error="skip"))
    assert rows(corpus) == [{"id": 1, "text": "multi\nline"}, {"id": 4, "text": 'd "q"'}]
    assert [str(e) for e in corpus.skipped] == [
        f"{path}:4: expected 2 fields, got 3",
        f"{path}:5: invalid UTF-8 (byte 0xfe at column 3)",
    ]


def test_csv_header_only_has_no_records(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", "id,text\n")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}: no records to deduplicate"


# --- Parquet -----------------------------------------------------------------------------------


def test_parquet_with_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(
        pa.table({"doc": ["x", "y"], "text": ["a", None], "tags": [["p"], []], "score": [0.5, 1.5]}), path
    )
    corpus = read_corpus([path], ReadOptions(id_column="doc"))
    assert rows(corpus) == [
        {"doc": "x", "text": "a", "tags": ["p"], "score": 0.5},
        {"doc": "y", "text": None, "tags": [], "score": 1.5},
    ]
    assert corpus.family == "parquet"


def test_parquet_pq_extension_and_large_string(tmp_path: Path) -> None:
    path = tmp_path / "a.pq"
    pq.write_table(pa.table({"text": pa.array(["a"], pa.large_string())}), path)
    assert texts(read_corpus([path])) == ["a"]


def test_parquet_unreadable(tmp_path: Path) -> None:
    path = put(tmp_path / "a.parquet", "not parquet at all")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc).startswith(f"{path}: not a readable Parquet file: ")
    assert exc.value.reason.startswith("not a readable Parquet file: ")


def test_parquet_text_column_not_text(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": [1, 2]}), path)
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == (
        f"{path}: column 'text' holds int64, not text; pass --text-column to choose the text column"
    )


# --- plain text and HTML -----------------------------------------------------------------------


def test_text_one_document_per_file(tmp_path: Path) -> None:
    a = put(tmp_path / "a.txt", "first\n\nsecond para\n")
    b = put(tmp_path / "b.md", "# title\n")
    c = put(tmp_path / "c.text", "")
    corpus = read_corpus([a, b, c])
    assert rows(corpus) == [
        {"row_id": 0, "path": str(a), "text": "first\n\nsecond para\n"},
        {"row_id": 1, "path": str(b), "text": "# title\n"},
        {"row_id": 2, "path": str(c), "text": ""},
    ]
    assert corpus.family == "text"


def test_text_lines(tmp_path: Path) -> None:
    path = put(tmp_path / "a.txt", "one\r\n\n   \ntwo  \nthree")
    corpus = read_corpus([path], ReadOptions(lines=True))
    assert rows(corpus) == [
        {"row_id": 0, "path": str(path), "line": 1, "text": "one"},
        {"row_id": 1, "path": str(path), "line": 4, "text": "two  "},
        {"row_id": 2, "path": str(path), "line": 5, "text": "three"},
    ]
    assert corpus.table.schema.field("line").type == pa.int64()


def test_text_invalid_utf8(tmp_path: Path) -> None:
    path = put(tmp_path / "a.txt", b"fine\nab\xffc\n")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}:2: invalid UTF-8 (byte 0xff at column 3)"
    with pytest.raises(InputError) as exc:
        read_corpus([path], ReadOptions(lines=True))
    assert error(exc) == f"{path}:2: invalid UTF-8 (byte 0xff at column 3)"


def test_text_skip(tmp_path: Path) -> None:
    bad = put(tmp_path / "a.txt", b"\xff")
    good = put(tmp_path / "b.txt", "ok")
    corpus = read_corpus([bad, good], SKIP)
    assert rows(corpus) == [{"row_id": 0, "path": str(good), "text": "ok"}]
    assert [str(e) for e in corpus.skipped] == [f"{bad}:1: invalid UTF-8 (byte 0xff at column 1)"]
    lines = read_corpus([put(tmp_path / "c.txt", b"x\n\xe9\ny\n")], ReadOptions(lines=True, on_error="skip"))
    assert texts(lines) == ["x", "y"]
    assert [e.line for e in lines.skipped] == [2]


HTML = """<!doctype html>
<html><head><title>  The
 Title </title><style>p { color: red }</style><script>var x = "hidden";</script></head>
<body>
  <nav><ul><li>Home</li><li>About</li></ul></nav>
  <h1>Heading</h1><p>First <b>bold</b>word and   spaces.</p><p>Second</p>
  <div>one<br>two</div><noscript>no js</noscript><template><p>tpl</p></template>
  <svg><text>vector</text></svg><!-- a comment -->
  <table><tr><td>c1</td><td>c2</td></tr></table>
  <script>alert(1)</script>
</body></html>"""


def test_html_to_text() -> None:
    title, text = html_to_text(HTML)
    assert title == "The Title"
    assert text == "Home\nAbout\nHeading\nFirst boldword and spaces.\nSecond\none\ntwo\nc1 c2"
    assert html_to_text("<p>a</p><p>b</p>") == (None, "a\nb")
    assert html_to_text("<div>x</div><div>y</div>")[1] == "x\ny"
    assert html_to_text("<pre>keep\n  lines</pre>")[1] == "keep\nlines"


def test_html_files(tmp_path: Path) -> None:
    a = put(tmp_path / "a.html", HTML)
    b = put(tmp_path / "b.htm", b"<p>caf\xe9</p><p>ok</p>")
    corpus = read_corpus([a, b])
    assert corpus.table.column_names == ["row_id", "path", "title", "text"]
    assert corpus.table.column("title").to_pylist() == ["The Title", None]
    assert texts(corpus)[1] == "caf\ufffd\nok"
    assert "hidden" not in texts(corpus)[0] and corpus.family == "html"


# --- inputs: directories, globs, combining -----------------------------------------------------


def test_directory_input(tmp_path: Path) -> None:
    put(tmp_path / "d" / "b.jsonl", jsonl({"text": "b"}))
    put(tmp_path / "d" / "a.jsonl", jsonl({"text": "a"}))
    put(tmp_path / "d" / "sub" / "c.jsonl", jsonl({"text": "c"}))
    put(tmp_path / "d" / "notes.xml", "<x/>")
    put(tmp_path / "d" / ".hidden.jsonl", jsonl({"text": "h"}))
    put(tmp_path / "d" / ".neardup-tmp-1" / "x.jsonl", jsonl({"text": "h"}))
    d = tmp_path / "d"
    assert expand_inputs([d]) == [d / "a.jsonl", d / "b.jsonl", d / "sub" / "c.jsonl"]
    assert texts(read_corpus([str(d)])) == ["a", "b", "c"]


def test_glob_input(tmp_path: Path) -> None:
    for name in ["b.jsonl", "a.jsonl", "sub/c.jsonl", "x.csv"]:
        put(tmp_path / name, jsonl({"text": name}))
    assert expand_inputs([str(tmp_path / "*.jsonl")]) == [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    found = expand_inputs([str(tmp_path / "**" / "*.jsonl")])
    assert found == [tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "sub" / "c.jsonl"]
    assert texts(read_corpus([str(tmp_path / "?.jsonl")])) == ["a.jsonl", "b.jsonl"]


def test_same_file_twice_is_read_once(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "a"}))
    assert expand_inputs([path, str(tmp_path / "*.jsonl"), tmp_path]) == [path]


def test_multiple_files_union_of_columns(tmp_path: Path) -> None:
    a = put(tmp_path / "a.jsonl", jsonl({"text": "a1", "x": 1}, {"text": "a2", "x": 2}))
    b = put(tmp_path / "b.csv", "y,text\nq,b1\n")
    c = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["c1"], "x": [2.5]}), c)
    corpus = read_corpus([a, b, c])
    assert corpus.table.column_names == ["row_id", "text", "x", "y", "source_file"]
    assert rows(corpus) == [
        {"row_id": 0, "text": "a1", "x": 1.0, "y": None, "source_file": str(a)},
        {"row_id": 1, "text": "a2", "x": 2.0, "y": None, "source_file": str(a)},
        {"row_id": 2, "text": "b1", "x": None, "y": "q", "source_file": str(b)},
        {"row_id": 3, "text": "c1", "x": 2.5, "y": None, "source_file": str(c)},
    ]
    assert corpus.sources == [str(a), str(b), str(c)] and corpus.family == "jsonl"


def test_incompatible_types_across_files_become_text(tmp_path: Path) -> None:
    a = put(tmp_path / "a.jsonl", jsonl({"text": "a", "v": 1, "w": [1, 2]}))
    b = put(tmp_path / "b.jsonl", jsonl({"text": "b", "v": "x", "w": "s"}))
    table = read_corpus([a, b]).table
    assert table.column("v").to_pylist() == ["1", "x"]
    assert table.column("w").to_pylist() == ["[1,2]", "s"]


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_corpus([tmp_path / "nope.jsonl"])
    assert error(exc) == f"{tmp_path / 'nope.jsonl'}: no such file or directory"


def test_glob_without_match(tmp_path: Path) -> None:
    pattern = str(tmp_path / "*.jsonl")
    with pytest.raises(InputError) as exc:
        expand_inputs([pattern])
    assert error(exc) == f"{pattern}: no files match this pattern"


def test_directory_without_supported_files(tmp_path: Path) -> None:
    put(tmp_path / "d" / "a.xml", "<a/>")
    with pytest.raises(InputError) as exc:
        read_corpus([tmp_path / "d"])
    assert error(exc) == f"{tmp_path / 'd'}: no supported files in this directory"


def test_unknown_extension(tmp_path: Path) -> None:
    path = put(tmp_path / "a.xml", "<a/>")
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == f"{path}: unsupported file type (supported: {', '.join(INPUT_EXTENSIONS)})"
    assert ".jsonl.gz" in error(exc) and ".htm" in error(exc)


def test_no_records(tmp_path: Path) -> None:
    a = put(tmp_path / "a.jsonl", "")
    b = put(tmp_path / "b.jsonl", "\n\n")
    with pytest.raises(InputError) as exc:
        read_corpus([str(a), str(b)])
    assert error(exc) == f"{a}, {b}: no records to deduplicate"
    bad = put(tmp_path / "c.jsonl", "oops\n")
    with pytest.raises(InputError) as exc:
        read_corpus([bad], SKIP)
    assert error(exc) == f"{bad}: no records to deduplicate"


# --- columns and ids ---------------------------------------------------------------------------


def test_missing_text_column(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"body": "x", "id": 1}))
    with pytest.raises(MissingColumnError) as exc:
        read_corpus([path])
    assert error(exc) == (
        f"{path}: no column 'text' (columns: body, id); pass --text-column to choose the text column"
    )


def test_missing_text_column_in_second_file(tmp_path: Path) -> None:
    a = put(tmp_path / "a.csv", "text\nx\n")
    b = put(tmp_path / "b.csv", "body\ny\n")
    with pytest.raises(MissingColumnError) as exc:
        read_corpus([a, b])
    assert exc.value.path == str(b)


def test_missing_id_column(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "x"}))
    with pytest.raises(MissingColumnError) as exc:
        read_corpus([path], ReadOptions(id_column="doc_id"))
    assert error(exc) == (
        f"{path}: no column 'doc_id' (columns: text); pass --id-column to choose the id column"
    )


def test_existing_row_id_column(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", jsonl({"text": "x", "row_id": 5}))
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert error(exc) == (
        f"{path}: the input already has a column 'row_id'; "
        "pass --id-column row_id to use it as the id, or rename it"
    )
    assert rows(read_corpus([path], ReadOptions(id_column="row_id"))) == [{"text": "x", "row_id": 5}]


def test_ids_keep_their_type(tmp_path: Path) -> None:
    ints = put(tmp_path / "a.jsonl", jsonl({"id": 10, "text": "a"}, {"id": 3, "text": "b"}))
    strs = put(tmp_path / "b.jsonl", jsonl({"id": "x", "text": "a"}, {"id": "y", "text": "b"}))
    assert read_corpus([ints], ReadOptions(id_column="id")).table.column("id").to_pylist() == [10, 3]
    assert read_corpus([strs], ReadOptions(id_column="id")).table.column("id").to_pylist() == ["x", "y"]


def test_duplicate_id_in_jsonl(tmp_path: Path) -> None:
    path = put(
        tmp_path / "a.jsonl", '{"id": 1, "text": "a"}\n\n{"id": 2, "text": "b"}\n{"id": 1, "text": "c"}\n'
    )
    with pytest.raises(InputError) as exc:
        read_corpus([path], ReadOptions(id_column="id"))
    assert error(exc) == f"{path}:4: duplicate id 1 (first seen at {path}:1)"


def test_duplicate_id_across_files_and_formats(tmp_path: Path) -> None:
    a = put(tmp_path / "a.csv", 'id,text\nx,"multi\nline"\ny,b\n')
    b = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": ["z", "y"], "text": ["c", "d"]}), b)
    with pytest.raises(InputError) as exc:
        read_corpus([a, b], ReadOptions(id_column="id"))
    assert error(exc) == f"{b}: record 2: duplicate id 'y' (first seen at {a}:4)"
    assert exc.value.record == 2


def test_duplicate_and_empty_ids_skipped(tmp_path: Path) -> None:
    path = put(tmp_path / "a.csv", "id,text\n1,a\n,b\n1,c\n2,d\n")
    corpus = read_corpus([path], ReadOptions(id_column="id", on_error="skip"))
    assert rows(corpus) == [{"id": 1, "text": "a"}, {"id": 2, "text": "d"}]
    assert [str(e) for e in corpus.skipped] == [
        f"{path}:3: id column 'id' is empty",
        f"{path}:4: duplicate id 1 (first seen at {path}:2)",
    ]


def test_stop_raises_the_first_error(tmp_path: Path) -> None:
    path = put(tmp_path / "a.jsonl", '{"text": "a"}\n[1]\n{bad\n')
    with pytest.raises(InputError) as exc:
        read_corpus([path])
    assert exc.value.line == 2


def test_skip_mode_row_ids_are_contiguous(tmp_path: Path) -> None:
    a = put(tmp_path / "a.jsonl", '{"text": "a"}\n{bad\n{"text": "b"}\n')
    b = put(tmp_path / "b.jsonl", '[]\n{"text": "c"}\n')
    corpus = read_corpus([a, b], SKIP)
    files = [str(a), str(a), str(b)]
    assert rows(corpus) == [
        {"row_id": i, "text": t, "source_file": f} for i, (t, f) in enumerate(zip("abc", files, strict=True))
    ]
    assert [(e.path, e.line) for e in corpus.skipped] == [(str(a), 2), (str(b), 1)]


# --- writers -----------------------------------------------------------------------------------

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "text": ['héllo, "world"', "line\nbreak", None],
        "score": [0.5, None, 2.0],
        "members": [["a", "b"], [], None],
        "nums": [[1, 5], [2], [3]],
    }
)


def test_default_output_format() -> None:
    assert {f: default_output_format(f) for f in ["jsonl", "csv", "parquet", "text", "html"]} == {
        "jsonl": "jsonl",
        "csv": "csv",
        "parquet": "parquet",
        "text": "csv",
        "html": "csv",
    }
    assert OUTPUT_FORMATS == ("csv", "jsonl", "parquet")
    with pytest.raises(ConfigError):
        default_output_format("xml")


def test_write_parquet_round_trip(tmp_path: Path) -> None:
    write_table(TABLE, tmp_path / "t.parquet", "parquet")
    assert pq.read_table(tmp_path / "t.parquet").equals(TABLE)


def test_write_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_table(TABLE, path, "jsonl")
    raw = path.read_text(encoding="utf-8")
    assert raw.splitlines()[0] == (
        '{"id": 1, "text": "héllo, \\"world\\"", "score": 0.5, "members": ["a", "b"], "nums": [1, 5]}'
    )
    assert [json.loads(line) for line in raw.splitlines()] == TABLE.to_pylist()
    back = read_corpus([path], ReadOptions(id_column="id")).table
    assert back.to_pylist() == TABLE.to_pylist()


def test_write_csv_round_trip_with_lists_as_json(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_table(TABLE, path, "csv")
    back = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(newlines_in_values=True))
    assert back.column("members").to_pylist() == ['["a","b"]', "[]", ""]
    assert back.column("nums").to_pylist() == ["[1,5]", "[2]", "[3]"]
    corpus = read_corpus([path], ReadOptions(id_column="id"))
    assert corpus.table.column("text").to_pylist() == ['héllo, "world"', "line\nbreak", ""]
    assert corpus.table.column("score").to_pylist() == [0.5, None, 2.0]


def test_write_table_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        write_table(TABLE, tmp_path / "t.xml", "xml")
    with pytest.raises(OutputError) as exc:
        write_table(TABLE, tmp_path / "missing" / "t.csv", "csv")
    assert str(exc.value).startswith(f"{tmp_path / 'missing' / 't.csv'}: cannot write: ")


# --- OutputDir ---------------------------------------------------------------------------------


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def test_output_dir_commits_files_and_marker(tmp_path: Path) -> None:
    out_dir = tmp_path / "new" / "out"
    with OutputDir(out_dir) as out:
        staged = out.write("annotated", TABLE, "jsonl")
        out.write_json("summary.json", {"rows": 3})
        out.write_text("report.html", "<p>r</p>")
        assert staged == out_dir / "annotated.jsonl" and not staged.exists()
        assert out.staging.parent == out_dir and out.staging.name.startswith(".neardup-tmp-")
    assert sorted(os.listdir(out_dir)) == ["annotated.jsonl", "report.html", "summary.json"]
    assert json.loads((out_dir / "summary.json").read_text()) == {"rows": 3}


def test_output_dir_commit_that_cannot_move_in_changes_nothing(tmp_path: Path) -> None:
    with OutputDir(tmp_path) as out:
        out.write_json("summary.json", {"run": 1})
    put(tmp_path / "annotated.csv" / "blocker", "a directory where a file should go")
    with pytest.raises(OutputError) as exc, OutputDir(tmp_path) as out:
        out.write_json("summary.json", {"run": 2})
        out.write("annotated", TABLE, "csv")
    assert str(exc.value) == f"{tmp_path / 'annotated.csv'}: cannot write: a folder is in the way"
    # Found before the commit record: the earlier run's files stand, and nothing of this one.
    assert sorted(os.listdir(tmp_path)) == ["annotated.csv", "summary.json"]
    assert json.loads((tmp_path / "summary.json").read_text()) == {"run": 1}


def test_output_dir_removes_stale_formats(tmp_path: Path) -> None:
    with OutputDir(tmp_path) as out:
        out.write("annotated", TABLE, "csv")
        out.write("duplicates", TABLE, "csv")
        out.write_json("summary.json", {"run": 1})
    with OutputDir(tmp_path) as out:
        out.write("annotated", TABLE, "parquet")
        out.write_json("summary.json", {"run": 2})
    assert sorted(os.listdir(tmp_path)) == ["annotated.parquet", "duplicates.csv", "summary.json"]


def test_output_dir_exception_leaves_directory_as_it_was(tmp_path: Path) -> None:
    with OutputDir(tmp_path) as out:
        out.write("annotated", TABLE, "csv")
        out.write_json("summary.json", {"run": 1})
    before = snapshot(tmp_path)
    with pytest.raises(RuntimeError, match="boom"), OutputDir(tmp_path) as out:
        out.write("annotated", TABLE.slice(0, 1), "csv")
        out.write("annotated", TABLE, "jsonl")
        out.write_json("summary.json", {"run": 2})
        raise RuntimeError("boom")
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["annotated.csv", "summary.json"]


def test_output_dir_exception_removes_a_directory_it_created(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), OutputDir(tmp_path / "a" / "b") as out:
        out.write_json("summary.json", {})
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_output_dir_path_is_a_file(tmp_path: Path) -> None:
    path = put(tmp_path / "out", "x")
    with pytest.raises(OutputError) as exc, OutputDir(path):
        pass
    assert str(exc.value) == f"{path}: exists and is not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_output_dir_permission_denied(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(OutputError) as exc, OutputDir(locked / "out"):
            pass
        assert str(exc.value) == f"{locked / 'out'}: cannot create output directory: Permission denied"
    finally:
        locked.chmod(0o700)


def test_read_options_are_validated() -> None:
    with pytest.raises(ConfigError):
        ReadOptions(on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ReadOptions(text_column="")


# --- JSON text of every column type ------------------------------------------------------------


def test_write_jsonl_types(tmp_path: Path) -> None:
    import datetime as dt

    table = pa.table(
        {
            "b": [True, None],
            "f": [2.0, float("nan")],
            "f32": pa.array([1.5, float("inf")], pa.float32()),
            "d": pa.array(["x", "y"]).dictionary_encode(),
            "day": pa.array([dt.date(2020, 1, 2), None]),
            "st": [{"k": 1, "v": ["a"]}, None],
            "ll": [[[1], [2, 3]], [None]],
            "m": pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int64())),
            "ctl": ["a\x01b\x1f", '\\"\n\r\t'],
        }
    )
    path = tmp_path / "t.jsonl"
    write_table(table, path, "jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith('{"b": true, "f": 2.0, "f32": 1.5, "d": "x", "day": "2020-01-02", ')
    assert [json.loads(line) for line in lines] == [
        {
            "b": True, "f": 2.0, "f32": 1.5, "d": "x", "day": "2020-01-02",
            "st": {"k": 1, "v": ["a"]}, "ll": [[1], [2, 3]], "m": [["a", 1]], "ctl": "a\x01b\x1f",
        },
        {
            "b": None, "f": None, "f32": None, "d": "y", "day": None,
            "st": None, "ll": [None], "m": [], "ctl": "\\\"\n\r\t",
        },
    ]  # fmt: skip


def test_write_csv_nested_as_compact_json(tmp_path: Path) -> None:
    table = pa.table({"st": [{"k": 1, "v": ["a", "b"]}], "empty": pa.array([[]], pa.list_(pa.int64()))})
    path = tmp_path / "t.csv"
    write_table(table, path, "csv")
    assert path.read_text().splitlines() == ['"st","empty"', '"{""k"":1,""v"":[""a"",""b""]}","[]"']


def test_write_jsonl_sliced_and_chunked(tmp_path: Path) -> None:
    big = pa.concat_tables([TABLE, TABLE]).slice(1, 4)
    path = tmp_path / "t.jsonl"
    write_table(big, path, "jsonl")
    assert [json.loads(line) for line in path.read_text().splitlines()] == big.to_pylist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.text(st.characters(exclude_categories=["Cs"])),
            st.none() | st.integers(-(2**63), 2**63 - 1),
            st.none() | st.floats(allow_nan=False, allow_infinity=False),
            st.none() | st.lists(st.none() | st.text(max_size=5), max_size=3),
        ),
        max_size=8,
    )
)
def test_write_jsonl_matches_json_loads(rows_: list[tuple[object, ...]]) -> None:
    import tempfile

    schema = pa.schema(
        [("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("l", pa.list_(pa.string()))]
    )
    table = pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows_], schema=schema)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        write_table(table, path, "jsonl")
        assert [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
        ] == table.to_pylist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | st.text(st.characters(exclude_categories=["Cs"]), max_size=30), max_size=20))
def test_json_strings_are_exactly_json_dumps(values: list[str | None]) -> None:
    import neardup.io._jsontext
    from neardup.io._jsontext import json_values

    column = pa.array(values, pa.string())
    expected = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
    with pytest.MonkeyPatch.context() as patch:  # the compiled kernels, as large outputs use them
        patch.setattr(neardup.io._jsontext, "COMPILED_FROM_BYTES", 0)
        assert json_values(column).to_pylist() == expected
        if len(values) > 2:  # a slice starts inside the buffers
            assert json_values(column.slice(1, len(values) - 2)).to_pylist() == expected[1:-1]


@pytest.mark.parametrize("compiled", [True, False])
def test_json_strings_escape_every_control_character(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    import neardup.io._jsontext
    from neardup.io._jsontext import json_values

    monkeypatch.setattr(neardup.io._jsontext, "_use_kernels", lambda nbytes: compiled)
    every = "".join(map(chr, range(0x80))) + "\u2028\x7f\u00e9\u4e2d\U0001f600"
    column = pa.array([every, None, "plain", ""])
    expected = [json.dumps(every, ensure_ascii=False), None, '"plain"', '""']
    assert json_values(column).to_pylist() == expected


@pytest.mark.parametrize("parallel_from", [1, 1 << 30])
def test_json_strings_escape_at_every_position_in_a_word(
    monkeypatch: pytest.MonkeyPatch, parallel_from: int
) -> None:
    """The escaping kernels read eight bytes at a time: a character to escape at each offset of
    a word, in strings of every length around a word's, with a string starting anywhere in the
    buffer, on one thread or split into ranges of rows across the kernel threads."""
    import neardup.io._jsontext
    from neardup.io._jsontext import json_values

    monkeypatch.setattr(neardup.io._jsontext, "_use_kernels", lambda nbytes: True)
    monkeypatch.setattr(neardup.io._jsontext, "PARALLEL_FROM_BYTES", parallel_from)
    specials = ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u00e9", "\u2028", "\U0001f600", " ", "\b"]
    values = [
        "x" * before + special + "y" * after
        for special in specials
        for before in range(10)
        for after in (0, 1, 6, 7, 8, 9, 17)
    ]
    values.append("".join(map(chr, range(0x100))) * 3)
    column = pa.array(values, pa.string())
    expected = [json.dumps(v, ensure_ascii=False) for v in values]
    assert json_values(column).to_pylist() == expected
    assert json_values(column.slice(3, len(values) - 5)).to_pylist() == expected[3:-2]


def test_json_strings_small_columns_use_loaded_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a large column has loaded the kernels, small columns (the ids of a slice) use them
    too: json.dumps per value over every small slice of a 100k-row run cost a second."""
    import neardup.io._jsontext
    from neardup.io._jsontext import COMPILED_FROM_BYTES, json_values

    large = pa.array(["x" * COMPILED_FROM_BYTES])
    assert json_values(large).to_pylist() == [json.dumps(large[0].as_py())]

    small = ['a"b', None, "tab\there"]
    expected = [None if v is None else json.dumps(v) for v in small]

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("json.dumps called for a string column")

    monkeypatch.setattr(neardup.io._jsontext.json, "dumps", refuse)
    assert json_values(pa.array(small)).to_pylist() == expected


def test_jsonl_block_wise_reader_matches_whole_file_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block-wise reader fixes column types from its first block; where a later block
    disagrees (null, then text; ints, then floats) the whole-file reader takes over."""
    import neardup.io.jsonl

    monkeypatch.setattr(neardup.io.jsonl, "STREAM_BLOCK_SIZE", 512)
    records = [{"id": i, "text": f"document {i} " * 5, "x": None, "n": i} for i in range(40)]
    records += [
        {"id": 40 + i, "text": None if i % 3 else "tail", "x": "late", "n": i + 0.5} for i in range(40)
    ]
    path = put(tmp_path / "a.jsonl", jsonl(*records))
    table = read_corpus([path]).table
    assert table.column("x").to_pylist() == [r["x"] for r in records]
    assert table.column("n").to_pylist() == [float(r["n"]) for r in records]
    assert texts(read_corpus([path])) == [r["text"] for r in records]


def test_jsonl_text_read_block_by_block_keeps_its_nulls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text read in many small blocks: still strings, nulls and non-ASCII text kept."""
    import neardup.io.jsonl

    monkeypatch.setattr(neardup.io.jsonl, "STREAM_BLOCK_SIZE", 256)
    records = [
        {"id": i, "text": None if i % 7 == 3 else f"text {i} \u00e9\u4e2d" * (i % 5)} for i in range(300)
    ]
    path = put(tmp_path / "a.jsonl", jsonl(*records))
    column = read_corpus([path]).table.column("text")
    assert column.num_chunks > 10 and column.type == pa.string()
    assert column.to_pylist() == [r["text"] for r in records]


def test_jsonl_record_longer_than_a_stream_block(tmp_path: Path) -> None:
    long = "word " * 400_000  # 2 MB: more than the block-wise reader's block, less than read_json's
    path = put(tmp_path / "a.jsonl", jsonl({"text": "short"}, {"text": long}, {"text": "end"}))
    assert texts(read_corpus([path])) == ["short", long, "end"]


def test_jsonl_record_larger_than_a_block(tmp_path: Path) -> None:
    long = "word " * 1_800_000  # 9 MB, more than pyarrow's block
    path = put(tmp_path / "a.jsonl", jsonl({"text": "short"}, {"text": long}))
    assert texts(read_corpus([path])) == ["short", long]
