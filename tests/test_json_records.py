"""The compiled reader of JSON Lines records (``neardup.io.json_records``): it reads the text and
id of each record as pyarrow's parser does, and answers None (so pyarrow parses, and reports) for
every line it does not read exactly, anywhere in the record."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io.json_records import MAX_DEPTH, RecordFields, record_fields

# no lone surrogates: a JSON Lines file is UTF-8
chars = st.characters(codec="utf-8", exclude_categories=("Cs",))
texts = st.text(alphabet=chars, max_size=20)
floats = st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x == 0 or 1e-90 < abs(x) < 1e90)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), floats, texts)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3)
)
key_chars = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
plain_keys = st.text(alphabet=key_chars, max_size=8).filter(
    lambda k: '"' not in k and "\\" not in k and k not in ("text", "id")
)
INT64 = pa.int64()
ids = st.one_of(st.integers(-(10**18) + 1, 10**18 - 1), texts)


def fields(lines: list[bytes], id_type: pa.DataType | None = INT64) -> RecordFields | None:
    data = np.frombuffer(b"\n".join(lines) + b"\n", dtype=np.uint8)
    lengths = np.array([len(line) for line in lines], dtype=np.int64)
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    return record_fields(data, starts, starts + lengths, "text", None if id_type is None else "id", id_type)


def pyarrow_reads(line: bytes, id_type: pa.DataType) -> list[dict[str, Any]] | None:
    schema = pa.schema([("id", id_type), ("text", pa.string())])
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        return pj.read_json(pa.BufferReader(line + b"\n"), parse_options=parse).to_pylist()
    except pa.ArrowInvalid:
        return None


@st.composite
def records(draw: st.DrawFn, id_kind: str) -> tuple[dict[str, Any], bytes]:
    record = draw(st.dictionaries(plain_keys, values, max_size=4))
    record["text"] = draw(st.one_of(texts, st.none()))
    record["id"] = draw(st.integers(-(10**18) + 1, 10**18 - 1) if id_kind == "int" else texts)
    order = draw(st.permutations(list(record)))
    record = {k: record[k] for k in order}
    separators = draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
    line = json.dumps(record, ensure_ascii=draw(st.booleans()), separators=separators)
    padded = draw(st.sampled_from(["", " ", "\t"])) + line + draw(st.sampled_from(["", " ", "\r"]))
    return record, padded.encode()


@pytest.mark.parametrize("id_kind", ["int", "str"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_good_records_read_as_json_loads_reads_them(id_kind: str, data: st.DataObject) -> None:
    cases = data.draw(st.lists(records(id_kind), min_size=1, max_size=6))
    got = fields([line for _, line in cases], pa.int64() if id_kind == "int" else pa.string())
    assert got is not None
    assert got.text.to_pylist() == [r["text"] for r, _ in cases]
    assert got.ids is not None and got.ids.to_pylist() == [r["id"] for r, _ in cases]
    assert got.text.null_count == sum(r["text"] is None for r, _ in cases)


JSON_BYTES = st.sampled_from([*b'{}[]":,\\ \t0123456789eE.+-tfnulrsabxu', 0x01, 0xC3])


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    _, line = draw(records(draw(st.sampled_from(["int", "str"]))))
    out = bytearray(line)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(out)))
        action = draw(st.integers(0, 2))
        if action == 0 and at < len(out):
            del out[at]
        elif action == 1:
            out.insert(at, draw(JSON_BYTES))
        elif at < len(out):
            out[at] = draw(JSON_BYTES)
    return bytes(out)


@settings(max_examples=1500, deadline=None)
@given(damaged(), st.sampled_from([pa.int64(), pa.string()]))
def test_a_line_it_answers_for_is_one_pyarrow_reads_the_same(line: bytes, id_type: pa.DataType) -> None:
    """Damaged records: where the reader answers, pyarrow's parser reads the line without error
    and gives the same text and id; everything else is left to pyarrow."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return  # the file's UTF-8 is checked before this reader sees it
    if b"\n" in line:
        return
    got = fields([line], id_type)
    if got is None:
        return
    want = pyarrow_reads(line, id_type)
    assert want is not None, line
    assert got.text.to_pylist() == [want[0]["text"]], line
    assert got.ids is not None and got.ids.to_pylist() == [want[0]["id"]], line


@pytest.mark.parametrize(
    "line",
    [
        '{"id": 1, "text": "a", "x": 1e400}',  # too large for a double: pyarrow's error
        '{"id": 1, "text": "a", "x": 1e100}',  # a three-digit exponent: left to pyarrow
        '{"id": 1, "text": "a", "x": "\\ud800"}',  # a lone surrogate, in any field
        '{"id": 1, "text": "a", "x": "a\x01b"}',  # a raw control character
        '{"id": 1, "text": "a", "x": "\\q"}',  # an unknown escape
        '{"id": 1, "text": "a", "x": 01}',
        '{"id": 1, "text": "a", "x": NaN}',  # pyarrow reads it; this reader does not
        '{"id": 1, "text": "a", "x": [1, 2}',
        '{"id": 1, "text": "a", "x": {"y" 1}}',
        '{"id": 1, "text": "a", "x": {"y": 1,}}',
        '{"id": 1, "text": "a", "x": tru}',
        '{"id": 1, "text": "a",}',
        '{"id": 1, "text": "a", "text": "b"}',  # the member twice
        '{"id": 1, "id": 2, "text": "a"}',
        '{"id": 1, "text": "a", "te\\u0078t": "b"}',  # the member twice, once spelled with an escape
        '{"id": 1.0, "text": "a"}',  # not an integer
        '{"id": -0, "text": "a"}',
        '{"id": 1234567890123456789, "text": "a"}',  # may not fit in int64
        '{"id": null, "text": "a"}',  # a null id: pyarrow's null, reported later
        '{"text": "a"}',
        '{"id": 1, "text": 5}',
        '{"id": 1, "text": "a"} {"id": 2, "text": "b"}',  # two records on a line
        '["id", 1]',
        '{"id": 1, "text": "a", "x": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}",
    ],
)
def test_lines_it_does_not_answer_for_give_none(line: str) -> None:
    assert fields([b'{"id": 0, "text": "fine"}', line.encode()]) is None


def test_escapes_nesting_and_string_ids() -> None:
    lines = [
        '{"id": "a\\u00e9", "meta": {"text": "not this", "list": [1, "]", {"a": "}"}, -0.5e-10]}, '
        '"text": "tab\\there \\"q\\" \\u00e9 \\ud83d\\ude00 \\/", "ok": [true, false, null, {}, []]}',
        '{"text": null, "id": "b", "x": "y"}',
        '{"id": "c"}',
        '  {"text":"plain ünicode 自然","id":"自"}  ',
        '{"id": "e", "text": "", "x": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}",
        '{"\\u0069d": "f", "te\\u0078t": "spelled with escapes", "t\\u00e9xt": "another field"}',
    ]
    got = fields([line.encode() for line in lines], pa.string())
    assert got is not None
    want = ['tab\there "q" é 😀 /', None, None, "plain ünicode 自然", "", "spelled with escapes"]
    assert got.text.to_pylist() == want
    assert got.ids is not None and got.ids.to_pylist() == ["aé", "b", "c", "自", "e", "f"]
    assert got.text.type == pa.string() and got.text.null_count == 2


def test_without_an_id_only_the_text_is_read() -> None:
    got = fields([b'{"text": "a", "id": [1]}', b'{"text": "b"}'], None)
    assert got is not None and got.ids is None
    assert got.text.to_pylist() == ["a", "b"]
