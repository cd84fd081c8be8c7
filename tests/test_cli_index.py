"""The ``neardup index`` commands and ``dedup --against``: exact messages, exit codes, files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main
from synthetic import planted_corpus

DOCS = [
    {"id": "a", "text": "the quick brown fox jumps over the lazy dog near the river bank"},
    {"id": "b", "text": "an entirely different sentence about cooking pasta with fresh tomatoes"},
    {"id": "c", "text": "MinHash estimates the Jaccard similarity of two sets of shingles quickly"},
]
MORE = [
    {"id": "d", "text": "locality sensitive hashing groups similar signatures into the same buckets"},
    {"id": "a", "text": "the quick brown fox jumps over the lazy dog near the river bank today"},
]


def run(*args: str | Path, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


def jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def build(tmp_path: Path, *extra: str) -> Path:
    idx = tmp_path / "idx.db"
    result = run(
        "index", "build", jsonl(tmp_path / "docs.jsonl", DOCS), "--index", idx, "--id-column", "id", *extra
    )
    assert result.exit_code == 0, result.output
    return idx


def stats(idx: Path) -> dict[str, object]:
    result = run("index", "stats", "--index", idx, "--json")
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_build_add_query_remove_stats(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q")
    assert stats(idx)["documents"] == 3

    added = run("index", "add", jsonl(tmp_path / "more.jsonl", MORE), "--index", idx, "--id-column", "id")
    assert added.exit_code == 0, added.output
    assert added.stdout == f"Added 2 documents to {idx} (1 new, 4 in the index)\n"

    q = run(
        "index", "query", "--index", idx, "--text", "The quick brown fox jumps over the lazy dog!", "--json"
    )
    assert q.exit_code == 0, q.output
    matches = [json.loads(line) for line in q.stdout.splitlines()]
    assert [m["key"] for m in matches] == ["a"]
    assert matches[0]["query"] == 0 and matches[0]["exact"] is False and 0.5 <= matches[0]["similarity"] < 1

    piped = run("index", "query", "--index", idx, stdin=DOCS[2]["text"])  # type: ignore[arg-type]
    assert piped.exit_code == 0
    assert "c" in piped.stdout and "1.0000" in piped.stdout

    queries = jsonl(
        tmp_path / "q.jsonl", [{"qid": "q1", "text": MORE[0]["text"]}, {"qid": "q2", "text": "zzz"}]
    )
    from_file = run("index", "query", "--index", idx, "--file", queries, "--id-column", "qid", "--json")
    assert from_file.exit_code == 0, from_file.output
    assert [json.loads(line) for line in from_file.stdout.splitlines()] == [
        {"query": "q1", "key": "d", "similarity": 1.0, "exact": False}
    ]

    none = run("index", "query", "--index", idx, "--text", "nothing like it at all")
    assert (none.exit_code, none.stdout, none.stderr) == (0, "", "no matches\n")

    removed = run("index", "remove", "a", "zz", "--index", idx)
    assert removed.exit_code == 0
    assert removed.stdout == f"Removed 1 document from {idx} (3 left)\n"
    assert removed.stderr == "neardup: not in the index: zz\n"
    again = run("index", "remove", "a", "--index", idx)
    assert (again.exit_code, again.stderr) == (1, "neardup: not in the index: a\n")

    s = stats(idx)
    assert s["documents"] == 3 and s["backend"] == "sqlite"
    assert (s["bands"], s["rows"]) == (61, 4)  # 32 x 4 and a second layer of 29 bands
    assert isinstance(s["size_bytes"], int) and s["size_bytes"] > 0
    settings = s["settings"]
    assert isinstance(settings, dict) and settings["num_perm"] == 128 and settings["threshold"] == 0.5
    table = run("index", "stats", "--index", idx)
    assert table.exit_code == 0 and "61 bands x 4 rows (128 permutations)" in table.stdout
    assert "Second layer" in table.stdout and "29 of the 61 bands" in table.stdout


def test_build_stores_its_settings_and_add_refuses_others(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q", "--ngram", "3", "--num-perm", "64", "--threshold", "0.7", "--keep-shingles")
    s = stats(idx)["settings"]
    assert isinstance(s, dict)
    assert (s["ngram"], s["num_perm"], s["threshold"], s["keep_shingles"]) == (3, 64, 0.7, True)
    more = jsonl(tmp_path / "more.jsonl", MORE)
    same = run("index", "add", more, "--index", idx, "--id-column", "id", "-q", "--ngram", "3")
    assert same.exit_code == 0, same.output
    other = run("index", "add", more, "--index", idx, "--id-column", "id", "--ngram", "2", "--seed", "7")
    assert other.exit_code == 2
    assert other.stderr == (
        "neardup: error: the index was built with --seed=42 but this config uses --seed=7; "
        "the index was built with --ngram=3 but this config uses --ngram=2\n"
    )
    # "a" now holds the text MORE gave it
    exact = run("index", "query", "--index", idx, "--text", MORE[1]["text"], "--exact", "--json")  # type: ignore[arg-type]
    assert exact.exit_code == 0
    assert json.loads(exact.stdout) == {"query": 0, "key": "a", "similarity": 1.0, "exact": True}


def test_build_refuses_an_index_with_documents_unless_replace(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q")
    docs = tmp_path / "docs.jsonl"
    refused = run("index", "build", docs, "--index", idx, "--id-column", "id", "-q", "--seed", "7")
    assert refused.exit_code == 1
    assert refused.stderr == (
        f"neardup: error: {idx} already holds an index of 3 documents; "
        "add to it with neardup index add, or pass --replace to build it anew\n"
    )
    replaced = run(
        "index", "build", docs, "--index", idx, "--id-column", "id", "-q", "--seed", "7", "--replace"
    )
    assert replaced.exit_code == 0, replaced.output
    s = stats(idx)
    assert s["documents"] == 3 and isinstance(s["settings"], dict) and s["settings"]["seed"] == 7


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["index", "build", "DOCS", "--index", "IDX"],
            2,
            "index build needs --id-column: index keys are the id column's values, "
            "and generated row numbers would clash between runs",
        ),
        (
            ["index", "add", "DOCS", "--index", "IDX", "--id-column", "id"],
            1,
            "no index at IDX; create one with: neardup index build CORPUS... --index IDX",
        ),
        (
            ["index", "stats", "--index", "IDX"],
            1,
            "no index at IDX; create one with: neardup index build CORPUS... --index IDX",
        ),
        (
            ["dedup", "DOCS", "-o", "OUT", "--against", "IDX"],
            1,
            "no index at IDX; create one with: neardup index build CORPUS... --index IDX",
        ),
        (["dedup", "DOCS", "-o", "OUT", "--update-index"], 2, "--update-index needs --against PATH|URL"),
        (
            ["dedup", "DOCS", "-o", "OUT", "--against", "IDX", "--update-index"],
            2,
            "--update-index needs --id-column: index keys are the id column's values, "
            "and generated row numbers would clash between runs",
        ),
        (
            ["index", "query", "--index", "IDX", "--text", "x", "--file", "DOCS"],
            2,
            "give either --text or --file, not both",
        ),
    ],
)
def test_usage_and_missing_index(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    docs = jsonl(tmp_path / "docs.jsonl", DOCS)
    idx = tmp_path / "missing.db"
    names = {"DOCS": str(docs), "IDX": str(idx), "OUT": str(tmp_path / "out")}
    result = run(*[names.get(a, a) for a in args])
    assert result.exit_code == code
    assert result.stderr == "neardup: error: " + message.replace("IDX", str(idx)) + "\n"
    assert not idx.exists()
    assert not (tmp_path / "out").exists()


def test_query_exact_needs_kept_shingles(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q")
    result = run("index", "query", "--index", idx, "--text", "x y z", "--exact")
    assert result.exit_code == 2
    assert result.stderr == (
        "neardup: error: exact similarity needs the documents' shingles, and this index does not keep them; "
        "build it with --keep-shingles (or query without exact)\n"
    )


def test_dedup_against_with_update_twice_removes_everything(tmp_path: Path) -> None:
    new = jsonl(
        tmp_path / "new.jsonl", [{"id": r["id"], "text": r["text"]} for r in planted_corpus(60, seed=5)]
    )
    idx = tmp_path / "idx.db"
    args = [
        "dedup",
        new,
        "--against",
        idx,
        "--update-index",
        "--id-column",
        "id",
        "-q",
        "--json",
        "--output-format",
        "csv",
    ]
    first = run(*args, "-o", tmp_path / "one")
    assert first.exit_code == 0, first.output
    s1 = json.loads(first.stdout)
    assert s1["duplicates_removed"] > 0 and s1["index"]["documents_before"] == 0
    assert s1["index"]["added"] == s1["kept_rows"] == stats(idx)["documents"]
    second = run(*args, "-o", tmp_path / "two")
    assert second.exit_code == 0, second.output
    s2 = json.loads(second.stdout)
    assert (s2["input_rows"], s2["duplicates_removed"], s2["kept_rows"], s2["index"]["added"]) == (
        60,
        60,
        0,
        0,
    )
    assert s2["index"]["rows_matching_index"] == 60
    dups = pacsv.read_csv(tmp_path / "two" / "duplicates.csv").to_pylist()
    kept_first = {r["id"] for r in pacsv.read_csv(tmp_path / "one" / "deduped.csv").to_pylist()}
    assert len(dups) == 60 and all(d["matched_index"] for d in dups)
    assert {d["duplicate_of"] for d in dups} == kept_first
    annotated = pacsv.read_csv(tmp_path / "two" / "annotated.csv").to_pylist()
    assert all(r["is_duplicate"] and r["matched_index"] for r in annotated)


def test_dedup_against_refuses_other_settings(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q")
    out = tmp_path / "out"
    result = run(
        "dedup", tmp_path / "docs.jsonl", "-o", out, "--against", idx, "--threshold", "0.8", "--keep-case"
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "neardup: error: the index was built with lowercase=True but this config uses lowercase=False; "
        "the index was built with --threshold=0.5 but this config uses --threshold=0.8\n"
    )
    assert not out.exists()
    same = run("dedup", tmp_path / "docs.jsonl", "-o", out, "--against", idx, "--threshold", "0.5", "-q")
    assert same.exit_code == 0, same.output


def test_two_halves_through_the_cli_match_one_run(tmp_path: Path) -> None:
    records = [{"id": r["id"], "text": r["text"]} for r in planted_corpus(400)]
    whole = jsonl(tmp_path / "all.jsonl", records)
    halves = [jsonl(tmp_path / "h1.jsonl", records[:200]), jsonl(tmp_path / "h2.jsonl", records[200:])]
    one = run("dedup", whole, "-o", tmp_path / "whole", "--id-column", "id", "-q", "--output-format", "csv")
    assert one.exit_code == 0, one.output
    expected = {r["id"] for r in pacsv.read_csv(tmp_path / "whole" / "duplicates.csv").to_pylist()}
    assert len(expected) > 50
    removed: set[str] = set()
    for k, half in enumerate(halves):
        out = tmp_path / f"half{k}"
        result = run(
            "dedup",
            half,
            "-o",
            out,
            "--against",
            tmp_path / "idx.db",
            "--update-index",
            "--id-column",
            "id",
            "-q",
            "--output-format",
            "csv",
        )
        assert result.exit_code == 0, result.output
        removed |= {r["id"] for r in pacsv.read_csv(out / "duplicates.csv").to_pylist()}
    assert removed == expected
    assert stats(tmp_path / "idx.db")["documents"] == 400 - len(expected)


def test_index_add_help_says_the_settings_come_from_the_index() -> None:
    shown = CliRunner().invoke(main, ["index", "add", "--help"], terminal_width=200).output
    assert "[default: word]" not in shown and "[default: 128]" not in shown
    for flag in ("--shingle", "--ngram", "--num-perm", "--seed", "--threshold", "--keep-case"):
        line = next(line for line in shown.splitlines() if line.strip().startswith(flag))
        assert "[default: the index's" in line, line
    built = CliRunner().invoke(main, ["index", "build", "--help"], terminal_width=200).output
    assert "[default: word]" in built  # a new index shows neardup's own defaults


ESSAY = (
    "students often write long essays about rivers and mountains and the weather of the north "
    "and then they quote the quick brown fox jumps over the lazy dog near the river bank before "
    "going on about harvest festivals markets bread cheese and the songs sung in old villages"
)


def test_query_by_containment(tmp_path: Path) -> None:
    docs = [*DOCS, {"id": "essay", "text": ESSAY}]
    idx = tmp_path / "idx.db"
    built = run(
        "index", "build", jsonl(tmp_path / "docs.jsonl", docs), "--index", idx, "--id-column", "id",
        "--containment", "--keep-shingles", "-q",
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    s = stats(idx)["settings"]
    assert isinstance(s, dict) and s["containment"] is True and s["partitions"]
    fox = "the quick brown fox jumps over the lazy dog near the river bank"
    jaccard = run("index", "query", "--index", idx, "--text", fox, "--json")
    assert [json.loads(line)["key"] for line in jaccard.stdout.splitlines()] == ["a"]  # the essay: J 0.2
    q = run("index", "query", "--index", idx, "--text", fox, "--containment", "0.8", "--json")
    assert q.exit_code == 0, q.output
    assert [json.loads(line) for line in q.stdout.splitlines()] == [
        {"query": 0, "key": "a", "containment": 1.0, "exact": True},
        {"query": 0, "key": "essay", "containment": 1.0, "exact": True},
    ]
    back = run(
        "index", "query", "--index", idx, "--text", ESSAY, "--containment", "0.9",
        "--direction", "doc_in_query", "--json",
    )  # fmt: skip
    assert [json.loads(line)["key"] for line in back.stdout.splitlines()] == ["a", "essay"]
    table = run("index", "query", "--index", idx, "--text", fox, "--containment", "0.8", "--top-k", "1")
    assert table.exit_code == 0 and "containment" in table.stdout and "essay" not in table.stdout
    both = run("index", "query", "--index", idx, "--text", fox, "--containment", "0.8", "--threshold", "0.5")
    assert both.exit_code == 2
    assert "--threshold is a Jaccard similarity; with --containment give only C" in both.stderr
    bad = run("index", "query", "--index", idx, "--text", fox, "--containment", "1.5")
    assert bad.exit_code == 2 and "min_containment must be in (0, 1], got 1.5" in bad.stderr


def test_query_by_containment_needs_a_containment_index(tmp_path: Path) -> None:
    idx = build(tmp_path, "-q")
    assert stats(idx)["settings"]["containment"] is False  # type: ignore[index]
    q = run("index", "query", "--index", idx, "--text", "the quick brown fox", "--containment", "0.8")
    assert q.exit_code == 2
    assert q.stderr == (
        "neardup: error: this index was not built for containment search; build it with containment=True "
        "(neardup index build --containment)\n"
    )
    table = run("index", "stats", "--index", idx)
    assert "not searchable (build with --containment)" in table.stdout


def test_dedup_against_a_containment_index_files_distinct_counts(tmp_path: Path) -> None:
    idx = tmp_path / "idx.db"
    first = jsonl(tmp_path / "first.jsonl", DOCS)
    built = run("index", "build", first, "--index", idx, "--id-column", "id", "--containment", "-q")
    assert built.exit_code == 0, built.output
    repeated = "the essay says the essay says the essay says " + ESSAY
    new = jsonl(tmp_path / "new.jsonl", [{"id": "essay", "text": repeated}])
    done = run(
        "dedup", new, "-o", tmp_path / "out", "--against", idx, "--update-index", "--id-column", "id", "-q"
    )
    assert done.exit_code == 0, done.output
    from neardup import shingle_hashes
    from neardup.index import LSHIndex

    with LSHIndex.open(idx) as index:
        info = index.info("essay")
        assert info is not None and info.shingles == shingle_hashes(repeated).size  # not the repeats
        fox = "the quick brown fox jumps over the lazy dog near the river bank"
        assert [m.key for m in index.query_containment(fox, 0.8)] == ["a", "essay"]


@pytest.mark.parametrize("damage", ["truncated", "zeroed pages"])
def test_index_add_on_a_corrupt_file_is_an_error_naming_it_and_changes_nothing(
    tmp_path: Path, damage: str
) -> None:
    """Damage SQLite sees (damage in pages an add never reads goes unseen, as in any SQLite
    database): add exits 1 with the file named and SQLite's reason, no traceback, and leaves the
    file's bytes as they were."""
    big = [
        {"id": f"d{i}", "text": f"document number {i} about {i % 97} things and {i % 13} more"}
        for i in range(3000)
    ]
    idx = tmp_path / "idx.db"
    assert (
        run(
            "index", "build", jsonl(tmp_path / "big.jsonl", big), "--index", idx, "--id-column", "id"
        ).exit_code
        == 0
    )
    data = bytearray(idx.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 3]
    else:
        data[4096 : 4096 + 40960] = bytes(40960)
    idx.write_bytes(bytes(data))
    more = jsonl(tmp_path / "more.jsonl", [{"id": "new", "text": "a new document to add"}])
    result = run("index", "add", more, "--index", idx, "--id-column", "id")
    assert result.exit_code == 1, result.output
    assert f"neardup: error: {idx}: " in result.stderr
    assert "malformed" in result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert idx.read_bytes() == bytes(data)
