"""The report's data, charts and page, and the report command (the browser tests are apart)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main
from neardup.report import write_report
from neardup.report.charts import report_charts
from neardup.report.data import ReportLimits, build_report
from neardup.report.diff import pair_diff, runs
from neardup.report.html import render_report
from neardup.report.tables import read_table
from report_helpers import CHAIN_FLAGS, EDITED, WORDS, chain_records, write_jsonl


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("chain")
    corpus = write_jsonl(base / "corpus.jsonl", chain_records())
    done = run("dedup", corpus, "-o", base / "out", *CHAIN_FLAGS)
    assert done.exit_code == 0, done.output
    return base / "out"


def _pair(data: dict, a: str, b: str) -> dict:
    (found,) = [p for p in data["pairs"] if {p["a"], p["b"]} == {a, b}]
    return found


def test_candidates_rebuilt_from_the_buckets_with_the_dropped_ones(chain_run: Path) -> None:
    data = build_report(chain_run)
    cand = data["candidates"]
    assert cand["source"] == "lsh_buckets" and cand["candidates"] == cand["sampled"] == 4
    assert sum(cand["linked"]) == 2 and sum(cand["dropped"]) == 2  # origin-far and the twins
    below = [_pair_by_key(data, k) for k in data["near_threshold"]["below"]]
    assert [(p["a"], p["b"], p["jaccard"]) for p in below] == [
        ("twin-a", "twin-b", round(25 / 53, 4)),
        ("origin", "far", round(19 / 59, 4)),
    ]
    above = [_pair_by_key(data, k) for k in data["near_threshold"]["above"]]
    assert [p["jaccard"] for p in above] == [0.56, round(29 / 49, 4)]
    assert all(p["linked"] for p in above) and not any(p["linked"] for p in below)


def _pair_by_key(data: dict, key: str) -> dict:
    return next(p for p in data["pairs"] if p["key"] == key)


def test_a_chain_is_flagged_with_its_farthest_member_and_weakest_links(chain_run: Path) -> None:
    data = build_report(chain_run)
    (cluster,) = data["clusters"]["largest"]
    assert cluster["size"] == 3 and cluster["representative"] == "origin"
    assert cluster["chain"] is True
    assert cluster["farthest"][0] == {"id": "far", "jaccard": round(19 / 59, 4)}
    assert cluster["min_jaccard_to_representative"] == pytest.approx(19 / 59)
    weakest = [_pair_by_key(data, k) for k in cluster["weakest_edges"]]
    assert [(p["a"], p["b"]) for p in weakest] == [("light", "far"), ("origin", "light")]
    assert data["clusters"]["size_values"] == [3] and data["clusters"]["size_counts"] == [1]


def test_why_a_pair_was_a_candidate_names_a_bucket_holding_both(chain_run: Path) -> None:
    data = build_report(chain_run)
    buckets = read_table(chain_run, "lsh_buckets")
    assert buckets is not None
    rows = buckets.to_pylist()
    for pair in data["pairs"]:
        holding = [r for r in rows if r["band"] == pair["band"] and r["bucket_key"] == pair["bucket_key"]]
        assert len(holding) == 1 and {pair["a"], pair["b"]} <= set(holding[0]["members"])
        assert pair["bucket_size"] == holding[0]["member_count"]
        shared = sum(1 for r in rows if {pair["a"], pair["b"]} <= set(r["members"]))
        assert pair["shared_buckets"] == shared


def test_the_diff_of_the_light_edit_shows_the_replaced_words(chain_run: Path) -> None:
    data = build_report(chain_run)
    pair = _pair(data, "origin", "light")
    a, b = data["docs"][pair["a"]]["tokens"], data["docs"][pair["b"]]["tokens"]
    assert a == WORDS and b == WORDS[:30] + EDITED
    changed = [op for op in pair["diff"]["ops"] if op[0] != "equal"]
    assert changed == [["replace", 30, 40, 30, 40]]
    # shared 2-grams cover words 0-29 of both; the replaced words are in no shared shingle
    assert pair["diff"]["shared_a"] == [0, 30, 10] and pair["diff"]["shared_b"] == [0, 30, 10]
    assert data["docs"]["light"]["is_duplicate"] and data["docs"]["light"]["representative"] == "origin"


def test_pair_diff_marks_tokens_inside_shared_ngrams() -> None:
    d = pair_diff(["a", "b", "c", "d", "e"], ["a", "b", "x", "d", "e"], 2)
    assert d.ops == [("equal", 0, 2, 0, 2), ("replace", 2, 3, 2, 3), ("equal", 3, 5, 3, 5)]
    assert d.shared_a.tolist() == [True, True, False, True, True]
    moved = pair_diff(["a", "b", "c", "d"], ["c", "d", "a", "b"], 2)  # shared shingles need no alignment
    assert moved.shared_a.all() and moved.shared_b.all()
    assert pair_diff([], ["a"], 3).to_dict() == {
        "ops": [["insert", 0, 0, 0, 1]],
        "shared_a": [],
        "shared_b": [1],
    }
    assert runs(pair_diff(["a"], ["a"], 3).shared_a) == [0, 1]  # shorter than n: the text is its shingle


def test_small_limits_sample_and_say_so(chain_run: Path) -> None:
    data = build_report(chain_run, limits=ReportLimits(candidate_sample=2, max_docs=3, max_text_chars=20))
    assert data["candidates"]["sampled"] == 2 and data["candidates"]["candidates"] == 4
    assert any("Jaccard recomputed for 2 of 4 candidate pairs" in s for s in data["sampling"])
    assert len(data["docs"]) <= 3
    assert all(len(doc.get("text", "")) <= 20 for doc in data["docs"].values())
    assert any(doc.get("truncated") for doc in data["docs"].values())
    json.dumps(data, allow_nan=False)


def test_every_output_format_and_parts_folders_give_one_report(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", chain_records())
    reports = []
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / fmt
        assert run("dedup", corpus, "-o", out, "--output-format", fmt, *CHAIN_FLAGS).exit_code == 0
        reports.append(build_report(out))
    # the Ray engine's shape: each table a folder of parts
    parted = tmp_path / "parted"
    shutil.copytree(tmp_path / "parquet", parted)
    for name in ("annotated", "candidate_pairs", "lsh_buckets"):
        table = pq.read_table(parted / f"{name}.parquet")
        (parted / f"{name}.parquet").unlink()
        (parted / name).mkdir()
        half = table.num_rows // 2
        pq.write_table(table.slice(0, half), parted / name / "part-000000.parquet")
        pq.write_table(table.slice(half), parted / name / "part-000001.parquet")
    reports.append(build_report(parted))
    for r in reports:  # what differs between the runs: where, in what format, how fast, what mode
        for key in ("output_dir", "output_format", "seconds", "engine"):
            del r["run"][key]
    for r in reports[1:]:
        assert {k: v for k, v in r.items() if v != reports[0][k]} == {}


def test_without_annotated_the_report_says_what_it_lacks(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", chain_records())
    out = tmp_path / "out"
    flags = ("--outputs", "clusters,candidate_pairs,lsh_buckets")
    assert run("dedup", corpus, "-o", out, *CHAIN_FLAGS, *flags).exit_code == 0
    data = build_report(out)
    assert data["docs"] == {} and not data["candidates"]["recomputed"]
    assert any("did not write annotated" in s for s in data["sampling"])
    render_report(data)  # the page is still made


def test_charts_have_traces_for_every_chart(chain_run: Path) -> None:
    data = build_report(chain_run)
    charts = report_charts(data)
    assert set(charts) == {"s-curve", "jaccard", "sizes", "stages"}
    s_curve = charts["s-curve"]
    line = s_curve["data"][1]
    assert len(line["x"]) == len(line["y"]) == 201 and line["y"][-1] == 1.0
    assert s_curve["layout"]["shapes"][0]["x0"] == 0.5
    assert sorted(s_curve["data"][0]["x"]) == [0.56, round(29 / 49, 4)]
    assert sum(charts["jaccard"]["data"][1]["y"]) == 2
    assert charts["sizes"]["layout"]["yaxis"]["type"] == "log"


def test_the_page_is_self_contained_and_escapes_the_corpus(tmp_path: Path) -> None:
    records = [{"id": "a", "text": "</script><script>alert(1)</script> same words here"}] * 1
    records.append({"id": "b", "text": "</script><script>alert(1)</script> same words here"})
    corpus = write_jsonl(tmp_path / "c.jsonl", records)
    assert run("dedup", corpus, "-o", tmp_path / "out", "--id-column", "id", "-q").exit_code == 0
    page = render_report(build_report(tmp_path / "out"))
    assert "alert(1)" in page and "<script>alert(1)" not in page
    assert (
        "http://" not in page.split("<script>")[0]
        and "src=" not in page.split("<body>")[1].split("<script")[0]
    )
    assert "default-src 'none'" in page


def test_report_command_writes_the_page(chain_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    done = run("report", chain_run, "-o", target)
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"Report: {target} (") and target.stat().st_size < 20e6
    assert "neardup report" in target.read_text(encoding="utf-8")
    assert not list(tmp_path.glob(".neardup-report-*"))


def test_report_command_errors(tmp_path: Path) -> None:
    done = run("report", tmp_path / "missing")
    assert done.exit_code == 1
    assert (
        f"{tmp_path / 'missing'}: no summary.json: not the output folder of a finished neardup" in done.output
    )
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "summary.json").write_text("{not json")
    done = run("report", tmp_path / "bad")
    assert done.exit_code == 1 and "summary.json: cannot read the run's summary" in done.output


def test_dedup_report_flag_writes_report_html(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["dedup", "--demo", "-o", str(tmp_path / "out"), "--report"])
    assert done.exit_code == 0, done.output
    page = tmp_path / "out" / "report.html"
    assert page.is_file() and f"report written to {page}" in done.output
    assert write_report(tmp_path / "out", tmp_path / "again.html").stat().st_size == page.stat().st_size


def test_a_run_against_an_index_is_reported_with_the_index_keys_kept(tmp_path: Path) -> None:
    records = chain_records()
    old = write_jsonl(tmp_path / "old.jsonl", records[:1])  # origin goes into the index
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": f"new-{r['id']}", "text": r["text"]} for r in records])
    flags = ("--threshold", "0.5", "--bands", "64", "--rows", "2")
    assert (
        run("index", "build", old, "--index", tmp_path / "idx.db", "--id-column", "id", *flags).exit_code == 0
    )
    done = run(
        "dedup", new, "-o", tmp_path / "out", "--against", tmp_path / "idx.db", "--id-column", "id", "-q"
    )
    assert done.exit_code == 0, done.output
    data = build_report(tmp_path / "out")
    (cluster,) = data["clusters"]["largest"]
    assert cluster["representative"] == "origin" and cluster["representative_in_index"]
    assert data["docs"]["new-light"]["representative"] == "origin"
    assert "origin" in data["index"]["representative"]
    assert all(p["a"].startswith("new-") and p["b"].startswith("new-") for p in data["pairs"])
    render_report(data)
