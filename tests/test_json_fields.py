"""The compiled reader of one string field of JSON Lines records decodes what ``json.loads``
decodes, and answers None (so pyarrow parses) for every line it does not read exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io import ReadOptions
from neardup.io.json_fields import string_field
from neardup.io.jsonl_passes import JsonlPasses
from neardup.pipeline import arrow_to_batch

# no lone surrogates: a JSON Lines file is UTF-8
chars = st.characters(codec="utf-8", exclude_categories=("Cs",))
texts = st.text(alphabet=chars, max_size=30)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), texts)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3)
)
records = st.dictionaries(
    st.one_of(texts, st.sampled_from(["text", "id", "tex", "texts"])), values, max_size=5
)


@st.composite
def lines(draw: st.DrawFn) -> tuple[dict[str, Any], str, bool]:
    record = draw(records)
    choice = draw(st.integers(0, 2))
    if choice == 0:
        record["text"] = draw(texts)
    elif choice == 1:
        record.pop("text", None)
    else:
        record["text"] = None
    ascii_only = draw(st.booleans())
    separators = draw(st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]))
    line = json.dumps(record, ensure_ascii=ascii_only, separators=separators)
    padded = draw(st.sampled_from(["", " ", "\t", "\r"])) + line + draw(st.sampled_from(["", " ", "\r"]))
    return record, padded, ascii_only


def read(lines: list[str], key: str = "text") -> tuple[np.ndarray, np.ndarray] | None:
    encoded = [line.encode() for line in lines]
    data = np.frombuffer(b"\n".join(encoded) + b"\n", dtype=np.uint8)
    lengths = np.array([len(e) for e in encoded], dtype=np.int64)
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    return string_field(data, starts, starts + lengths, key)


def escaped_keys(record: Any, ascii_only: bool) -> bool:
    """Whether the top level has a key json.dumps writes with an escape."""
    return any("\\" in json.dumps(k, ensure_ascii=ascii_only) for k in record)


@settings(max_examples=400, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=8))
def test_the_field_is_what_json_loads_reads(cases: list[tuple[dict[str, Any], str, bool]]) -> None:
    got = read([line for _, line, _ in cases])
    if any(escaped_keys(record, ascii_only) for record, _, ascii_only in cases):
        assert got is None  # a key written with an escape might spell the field's name
        return
    assert got is not None
    data, offsets = got
    for k, (_, line, _) in enumerate(cases):
        want = json.loads(line).get("text")
        assert bytes(data[offsets[k] : offsets[k + 1]]) == (want or "").encode()


def test_lines_it_does_not_vouch_for_give_none() -> None:
    for line in [
        '{"text": "a", "text": "b"}',  # the member twice
        '{"te\\u0078t": "a"}',  # an escaped key that spells it
        '{"text": 5}',  # not a string
        '{"text": "lone \\ud800 surrogate"}',
        '{"text": "a"} trailing',
        '["text", "a"]',
        '{"text": "unterminated}',
        '{"text": "bad \\x escape"}',
        '{"text" "a"}',
        '{"text": "a",}',
    ]:
        assert read([line]) is None, line


def test_escapes_and_nesting() -> None:
    lines = [
        '{"id": 1, "meta": {"text": "not this", "list": [1, "]", {"a": "}"}]}, '
        '"text": "tab\\there \\"q\\" \\u00e9 \\ud83d\\ude00 \\/"}',
        '{"text": null, "x": "y"}',
        "{}",
        '  {"text":"plain ünicode 自然"}  ',
    ]
    got = read(lines)
    assert got is not None
    data, offsets = got
    decoded = [bytes(data[offsets[k] : offsets[k + 1]]).decode() for k in range(len(lines))]
    assert decoded == ['tab\there "q" é 😀 /', "", "", "plain ünicode 自然"]


@settings(max_examples=40, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=6), st.booleans())
def test_the_passes_read_the_same_text_either_way(
    tmp_path_factory: Any, cases: list[tuple[dict[str, Any], str, bool]], ascii_only: bool
) -> None:
    """What verification reads of a file's records is what pyarrow's parse gives, whichever
    reader decided: a line it does not vouch for sends the block to pyarrow."""
    path = Path(tmp_path_factory.mktemp("passes")) / "records.jsonl"
    rows = [
        {
            "id": f"r{k}",
            "meta": {"text": "decoy"},
            "text": record.get("text") or "",
            "extra": json.dumps(record),
        }
        for k, (record, _, _) in enumerate(cases)
    ]
    # in ASCII, the key "café" is written with an escape: pyarrow reads those lines
    path.write_text("".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows), encoding="utf-8")
    passes = JsonlPasses(path, ReadOptions(text_column="text", id_column="id"), all_columns=False)
    for _ in passes.first_pass():
        pass
    wanted = np.arange(len(rows))
    batch = passes.text_batch(wanted)
    want = arrow_to_batch(passes.texts(wanted))
    got_texts = [bytes(batch.data[batch.offsets[k] : batch.offsets[k + 1]]) for k in range(len(rows))]
    want_texts = [bytes(want.data[want.offsets[k] : want.offsets[k + 1]]) for k in range(len(rows))]
    assert got_texts == want_texts == [r["text"].encode() for r in rows]
