"""``neardup eval``: a real run scored against labels, figures worked out by hand."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.report.evaluation import (
    Categories,
    Evaluation,
    TruthLabels,
    evaluate,
    evaluate_labels,
    read_truth,
)
from neardup.report.metrics import pair_scores

TEXT_A = "the quick brown fox jumps over the lazy dog while the farmer sleeps in the warm afternoon sun"
TEXT_B = "a ship of many sails left the harbour at dawn carrying wool and salt to the islands far south"
TEXT_C = "seven lanterns burned along the quiet canal and nobody could say who had lit them that night"
TEXT_D = "numbers written in chalk on the old school board were still there when the summer holiday ended"

# The corpus: d1, d2, d3 share TEXT_A and d4, d5, d6 share TEXT_B, so the run finds the clusters
#   predicted  {d1, d2, d3} (kept d1)  {d4, d5, d6} (kept d4)       labels [0, 0, 0, 1, 1, 1]
# and the truth (the classic example) says
#   truth      {d1, d2}  {d3, d4}  {d5, d6}                           labels [0, 0, 1, 1, 2, 2]
#
# Pairs: predicted C(3,2) + C(3,2) = 6; true 1 + 1 + 1 = 3.
# Contingency table (rows predicted, columns truth):
#              g0  g1  g2
#   cluster 0   2   1   0
#   cluster 1   0   1   2
# True positive pairs = sum C(n_ij, 2) = C(2,2) + C(2,2) = 2.
# Pair precision 2/6 = 1/3, recall 2/3, F1 = 2 (1/3)(2/3) / (1/3 + 2/3) = 4/9.
# ARI: index = 2, expected = 6 * 3 / C(6,2) = 18/15 = 1.2, max = (6 + 3) / 2 = 4.5,
#      ARI = (2 - 1.2) / (4.5 - 1.2) = 0.8 / 3.3 = 8/33 = 0.242424...
# Removals: d2, d3 (kept d1) and d5, d6 (kept d4) = 4. Right: d2 (d1 is in its group g0);
# wrong: d3 (g1, d1 is g0), d5 and d6 (g2, d4 is g1). Correct 1: precision 1/4.
# Should remove: 6 rows - 3 groups = 3: recall 1/3.
CORPUS = [("d1", TEXT_A), ("d2", TEXT_A), ("d3", TEXT_A), ("d4", TEXT_B), ("d5", TEXT_B), ("d6", TEXT_B)]
GROUPS = {"d1": "g0", "d2": "g0", "d3": "g1", "d4": "g1", "d5": "g2", "d6": "g2"}
PAIRS = [("d1", "d2"), ("d3", "d4"), ("d5", "d6")]
EXPECTED = {
    "rows_evaluated": 6,
    "true_pairs": 3,
    "predicted_pairs": 6,
    "true_positive_pairs": 2,
    "pair_precision": pytest.approx(1 / 3),
    "pair_recall": pytest.approx(2 / 3),
    "pair_f1": pytest.approx(4 / 9),
    "ari": pytest.approx(8 / 33),
    "removed": 4,
    "correct_removals": 1,
    "should_remove": 3,
    "removal_precision": pytest.approx(1 / 4),
    "removal_recall": pytest.approx(1 / 3),
}


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def dedup(tmp_path: Path, rows: list[tuple[Any, str]], *args: str, name: str = "out") -> Path:
    corpus = tmp_path / f"{name}.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    out = tmp_path / name
    result = run("dedup", corpus, "-o", out, "--id-column", "id", "-q", *args)
    assert result.exit_code == 0, result.output
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def figures(e: Evaluation) -> dict[str, Any]:
    return {k: v for k, v in e.to_dict().items() if k in EXPECTED}


@pytest.fixture(scope="module")
def classic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dedup(tmp_path_factory.mktemp("classic"), CORPUS)


def test_classic_example_groups_form(classic: Path, tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "truth.csv", "id,group\n" + "".join(f"{i},{g}\n" for i, g in GROUPS.items()))
    e = evaluate(classic, read_truth(truth))
    assert figures(e) == EXPECTED
    assert (e.truth_form, e.run_rows_without_truth, e.truth_ids_not_in_run) == ("groups", 0, 0)
    assert e.truth_pairs_not_in_run is None and e.recall_by_category is None


def test_classic_example_pairs_form(classic: Path, tmp_path: Path) -> None:
    truth = write_jsonl(tmp_path / "pairs.jsonl", [{"id_a": a, "id_b": b} for a, b in PAIRS])
    e = evaluate(classic, read_truth(truth))
    assert figures(e) == EXPECTED
    assert (e.truth_form, e.truth_pairs_not_in_run, e.truth_ids_not_in_run) == ("pairs", 0, 0)


def test_classic_ari_from_the_labels_alone() -> None:
    s = pair_scores(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2]))
    assert s.ari == pytest.approx(0.2424242424)
    assert (s.true_positive_pairs, s.predicted_pairs, s.true_pairs) == (2, 6, 3)


def test_the_demo_against_its_notes(tmp_path: Path) -> None:
    """The demo's notes say which rows copy which: the run finds every one of them."""
    assert run("dedup", "--demo", "-o", tmp_path / "demo", "-q").exit_code == 0
    groups = {"doc-02": "doc-01", "doc-03": "doc-01", "doc-05": "doc-04", "doc-10": "doc-09"}
    groups |= {"doc-12": "doc-11", "doc-14": "doc-06"}
    ids = [f"doc-{k:02}" for k in range(1, 15)]
    truth = write_jsonl(tmp_path / "t.jsonl", [{"id": i, "group": groups.get(i, i)} for i in ids])
    e = evaluate(tmp_path / "demo", read_truth(truth))
    assert (e.pair_precision, e.pair_recall, e.ari, e.removal_precision, e.removal_recall) == (1, 1, 1, 1, 1)
    assert (e.true_pairs, e.removed, e.should_remove) == (7, 6, 6)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_output_format_evaluates_alike(tmp_path: Path, fmt: str) -> None:
    rows = [(k + 1, text) for k, text in enumerate([TEXT_A] * 3 + [TEXT_B] * 3)]  # integer ids
    out = dedup(tmp_path, rows, "--output-format", fmt)
    assert (out / f"annotated.{fmt}").is_file()
    truth = write_csv(tmp_path / "truth.csv", "id,group\n1,a\n2,a\n3,b\n4,b\n5,c\n6,c\n")
    assert figures(evaluate(out, read_truth(truth))) == EXPECTED


def test_rows_and_ids_missing_on_either_side(tmp_path: Path) -> None:
    """d7 and d8 (a cluster of the run) have no truth: left out, and the figures are the classic
    ones; x9 of the truth is not in the run."""
    out = dedup(tmp_path, [*CORPUS, ("d7", TEXT_C), ("d8", TEXT_C)])
    lines = [f"{i},{g}\n" for i, g in GROUPS.items()]
    truth = write_csv(tmp_path / "truth.csv", "id,group\n" + "".join(lines) + "x9,g2\n")
    e = evaluate(out, read_truth(truth))
    assert figures(e) == EXPECTED
    assert (e.run_rows, e.run_rows_without_truth, e.truth_ids_not_in_run) == (8, 2, 1)


def test_a_removal_whose_kept_row_has_no_truth_is_not_judged() -> None:
    # rows 0-2 one cluster kept at row 0, which the truth does not name: rows 1 and 2 are
    # removed, but of a row that is not evaluated; they still make a true positive pair
    e = evaluate_labels(
        np.array([0, 0, 0]), np.array([False, True, True]), np.array([0, 0, 0]), np.array([-1, 4, 4])
    )
    assert (e.removed, e.removals_not_judged, e.correct_removals, e.should_remove) == (0, 2, 0, 1)
    assert (e.true_positive_pairs, e.removal_precision, e.removal_recall) == (1, 1.0, 0.0)


def test_pairs_naming_ids_not_in_the_run(classic: Path, tmp_path: Path) -> None:
    records = [{"id_a": a, "id_b": b} for a, b in PAIRS] + [
        {"id_a": "d5", "id_b": "zz"},
        {"id_a": "zz", "id_b": "yy"},
    ]
    e = evaluate(classic, read_truth(write_jsonl(tmp_path / "p.jsonl", records)))
    assert figures(e) == EXPECTED
    assert (e.truth_pairs_not_in_run, e.truth_ids_not_in_run, e.run_rows_without_truth) == (2, 2, 0)


def test_pairs_form_every_run_row_counts(tmp_path: Path) -> None:
    """d7 (TEXT_C) and d8 (TEXT_D) are named in no pair: groups of one, still evaluated; the run
    keeps both, so they add no pairs and nothing to remove."""
    out = dedup(tmp_path, [*CORPUS, ("d7", TEXT_C), ("d8", TEXT_D)])
    e = evaluate(
        out, read_truth(write_jsonl(tmp_path / "p.jsonl", [{"id_a": a, "id_b": b} for a, b in PAIRS]))
    )
    assert (e.pair_precision, e.pair_recall, e.removal_precision) == pytest.approx((1 / 3, 2 / 3, 1 / 4))
    assert (e.rows_evaluated, e.run_rows_without_truth, e.true_pairs, e.true_positive_pairs) == (8, 0, 3, 2)
    assert (e.removed, e.correct_removals, e.should_remove) == (4, 1, 3)
    # ARI over 8 rows: expected = 6 * 3 / C(8,2) = 18/28, max = 4.5: (2 - 9/14) / (4.5 - 9/14) = 19/54
    assert e.ari == pytest.approx(19 / 54)


def test_recall_by_category_groups_form(tmp_path: Path) -> None:
    """Counted rows are those of true groups of two or more: d1, d2 (x) and d3..d6 (y); d7 (z)
    is alone. Found: d1, d2 (their cluster holds the other), d5, d6; not d3 (cluster 0, its
    partner d4 in cluster 1) nor d4. x: 2/2, y: 2/4, z: nothing counted."""
    out = dedup(tmp_path, [*CORPUS, ("d7", TEXT_C)])
    cats = {"d1": "x", "d2": "x", "d3": "y", "d4": "y", "d5": "y", "d6": "y", "d7": "z"}
    groups = {**GROUPS, "d7": "g3"}
    truth = write_csv(
        tmp_path / "t.csv", "id,group,kind\n" + "".join(f"{i},{groups[i]},{c}\n" for i, c in cats.items())
    )
    e = evaluate(out, read_truth(truth, category_column="kind"))
    assert e.recall_by_category == {"x": 1.0, "y": 0.5, "z": None}
    assert e.category_counts == {
        "x": {"counted": 2, "found": 2},
        "y": {"counted": 4, "found": 2},
        "z": {"counted": 0, "found": 0},
    }


def test_recall_by_category_pairs_form(classic: Path, tmp_path: Path) -> None:
    """(d1, d2) x: one cluster; (d3, d4) y: two clusters; (d5, d6) y: one; (d2, d3) z: one;
    (d6, zz) y: zz is not in the run, so the pair is not counted; no category: not counted."""
    records = [
        {"id_a": "d1", "id_b": "d2", "category": "x"},
        {"id_a": "d3", "id_b": "d4", "category": "y"},
        {"id_a": "d5", "id_b": "d6", "category": "y"},
        {"id_a": "d2", "id_b": "d3", "category": "z"},
        {"id_a": "d6", "id_b": "zz", "category": "y"},
        {"id_a": "d4", "id_b": "d5", "category": None},
    ]
    e = evaluate(classic, read_truth(write_jsonl(tmp_path / "p.jsonl", records)))
    assert e.recall_by_category == {"x": 1.0, "y": 0.5, "z": 1.0}
    assert e.category_counts == {
        "x": {"counted": 1, "found": 1},
        "y": {"counted": 2, "found": 1},
        "z": {"counted": 1, "found": 1},
    }


def test_a_category_column_is_used_when_present_and_required_when_named(
    classic: Path, tmp_path: Path
) -> None:
    truth = write_csv(tmp_path / "t.csv", "id,group,category\nd1,a,p\nd2,a,p\n")
    assert evaluate(classic, read_truth(truth)).recall_by_category == {"p": 1.0}
    with pytest.raises(
        InputError, match=r"t\.csv: no category column 'kind' \(columns found: 'id', 'group', 'category'\)"
    ):
        read_truth(truth, category_column="kind")


def test_ids_of_mixed_types_compare_as_text(classic: Path, tmp_path: Path) -> None:
    records = [{"id": "d1", "group": 1}, {"id": "d2", "group": 1.0}, {"id": 7, "group": "1"}]
    truth = read_truth(write_jsonl(tmp_path / "t.jsonl", records))
    assert truth.ids.to_pylist() == ["d1", "d2", "7"]
    e = evaluate(classic, truth)
    assert (e.rows_evaluated, e.true_pairs, e.truth_ids_not_in_run) == (2, 1, 1)


def test_csv_ids_are_read_as_written(tmp_path: Path) -> None:
    """007 stays 007 (not the number 7), past a byte-order mark and Windows line ends."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbfid,group\r\n007,1\r\n7,1\r\n")
    truth = read_truth(path)
    assert truth.ids.to_pylist() == ["007", "7"] and truth.groups is not None
    assert truth.groups.tolist() == [0, 0]


def test_parquet_truth(classic: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"doc": list(GROUPS), "label": list(GROUPS.values())}), path)
    e = evaluate(classic, read_truth(path, id_column="doc", group_column="label"))
    assert figures(e) == EXPECTED


def test_no_overlap_blames_the_id_column(classic: Path, tmp_path: Path) -> None:
    truth = read_truth(write_csv(tmp_path / "t.csv", "id,group\n1,a\n2,a\n"))
    with pytest.raises(InputError) as caught:
        evaluate(classic, truth)
    assert str(caught.value) == (
        f"{tmp_path / 't.csv'}: none of the truth's ids (column 'id') is an id of the run "
        "(column 'id') (the run's first: 'd1', the truth's: '1'): probably the wrong id column "
        "was used, for the truth or for the run"
    )


# -- the scores against brute force ----------------------------------------------------------

labelings = st.integers(min_value=0, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
    )
)


@given(labelings)
def test_pair_scores_count_every_pair(labels: tuple[list[int], list[int]]) -> None:
    predicted, truth = labels
    both = same_p = same_t = 0
    for i, j in itertools.combinations(range(len(predicted)), 2):
        p, t = predicted[i] == predicted[j], truth[i] == truth[j]
        same_p += p
        same_t += t
        both += p and t
    s = pair_scores(np.array(predicted, dtype=np.int64), np.array(truth, dtype=np.int64))
    assert (s.predicted_pairs, s.true_pairs, s.true_positive_pairs) == (same_p, same_t, both)
    assert s.pair_precision == (both / same_p if same_p else 1.0)
    assert s.pair_recall == (both / same_t if same_t else 1.0)
    pairs = len(predicted) * (len(predicted) - 1) // 2
    expected = same_p * same_t / pairs if pairs else 0.0
    top = (same_p + same_t) / 2
    if top != expected:
        assert s.ari == pytest.approx((both - expected) / (top - expected))


@given(st.lists(st.integers(0, 6), max_size=30), st.integers(0, 1000))
def test_ari_of_one_partition_twice_is_one(labels: list[int], shift: int) -> None:
    a = np.array(labels, dtype=np.int64)
    renamed = (a * 7 + shift) % 1009  # the same partition under other names
    s = pair_scores(a, renamed)
    assert (s.ari, s.pair_precision, s.pair_recall) == (1.0, 1.0, 1.0)


@given(labelings, st.randoms(use_true_random=False))
def test_group_recall_by_category_against_brute_force(
    labels: tuple[list[int], list[int]], rnd: random.Random
) -> None:
    predicted, truth = labels
    n = len(predicted)
    codes = np.array([rnd.randrange(-1, 3) for _ in range(n)], dtype=np.int64)
    e = evaluate_labels(
        np.array(predicted, dtype=np.int64),
        np.zeros(n, dtype=bool),
        np.arange(n),
        TruthLabels(labels=np.array(truth, dtype=np.int64), categories=Categories(("a", "b", "c"), codes)),
    )
    assert e.category_counts is not None
    for k, name in enumerate("abc"):
        mine = [i for i in range(n) if codes[i] == k and sum(t == truth[i] for t in truth) >= 2]
        found = [
            i
            for i in mine
            if any(j != i and truth[j] == truth[i] and predicted[j] == predicted[i] for j in range(n))
        ]
        assert e.category_counts[name] == {"counted": len(mine), "found": len(found)}


# -- read_truth's errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "t.csv",
            "id,label\nd1,a\n",
            "no column 'group' (columns found: 'id', 'label'); a truth file gives a group per row "
            "(columns 'id' and 'group') or duplicate pairs (columns 'id_a' and 'id_b')",
        ),
        (
            "t.jsonl",
            '{"id_a": "d1", "other": "d2"}\n',
            "no column 'id_b' (columns found: 'id_a', 'other'); a truth file gives a group per row "
            "(columns 'id' and 'group') or duplicate pairs (columns 'id_a' and 'id_b')",
        ),
        (
            "t.csv",
            "id,group\nd1,a\nd2,a\nd1,b\n",
            "record 3: id 'd1' is in group 'b' here and in group 'a' at record 1: an id belongs to one group",
        ),
        ("t.csv", "id,group\nd1,a\n,a\n", "record 2: empty 'id': every record needs one"),
        (
            "t.jsonl",
            '{"id": "d1", "group": "a"}\n{"id": null, "group": "a"}\n',
            "record 2: empty 'id': every record needs one",
        ),
        ("t.jsonl", '{"id_a": "d1", "id_b": ""}\n', "record 1: empty 'id_b': every record needs one"),
        ("t.csv", "", "the truth file is empty"),
        ("t.csv", "id,group\n", "the truth file has no records"),
        ("t.jsonl", '{"id": "d1", "group": "a"}\nnot json\n', "2: not JSON: Expecting value"),
        (
            "t.txt",
            "id,group\n",
            "cannot tell the truth file's format from its name: give a .jsonl, .csv or .parquet file",
        ),
    ],
)
def test_bad_truth_files(tmp_path: Path, name: str, data: str, message: str) -> None:
    path = write_csv(tmp_path / name, data)
    with pytest.raises(InputError) as caught:
        read_truth(path)
    where = f"{path}: " if not message[0].isdigit() else f"{path}:"
    assert str(caught.value) == where + message


# -- the command -----------------------------------------------------------------------------


def test_json_prints_every_figure(classic: Path, tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "truth.csv", "id,group\n" + "".join(f"{i},{g}\n" for i, g in GROUPS.items()))
    result = run("eval", classic, "--truth", truth, "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures == {
        **EXPECTED,
        "truth_form": "groups",
        "run_rows": 6,
        "run_rows_without_truth": 0,
        "truth_ids_not_in_run": 0,
        "truth_pairs_not_in_run": None,
        "removals_not_judged": 0,
        "recall_by_category": None,
        "category_counts": None,
    }


def test_json_with_pairs_and_categories(classic: Path, tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "p.csv", "id_a,id_b,kind\nd1,d2,x\nd3,d4,y\nd5,d6,y\n")
    result = run("eval", classic, "--truth", truth, "--truth-category-column", "kind", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert {k: figures[k] for k in EXPECTED} == EXPECTED
    assert figures["truth_form"] == "pairs" and figures["truth_pairs_not_in_run"] == 0
    assert figures["recall_by_category"] == {"x": 1.0, "y": 0.5}
    assert figures["category_counts"] == {"x": {"counted": 1, "found": 1}, "y": {"counted": 2, "found": 1}}


def test_the_table_shows_the_figures(classic: Path, tmp_path: Path) -> None:
    truth = write_csv(
        tmp_path / "truth.csv", "id,group,category\n" + "".join(f"{i},{g},c{g}\n" for i, g in GROUPS.items())
    )
    result = run("eval", classic, "--truth", truth)
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.strip("│┃ ").split()) for line in result.stdout.splitlines()]
    for expected in (
        "Truth form │ a group per row",
        "Rows evaluated │ 6 of 6",
        "True pairs │ 3",
        "Predicted pairs │ 6",
        "True positive pairs │ 2",
        "Pair precision │ 0.3333",
        "Pair recall │ 0.6667",
        "Pair F1 │ 0.4444",
        "ARI │ 0.2424",
        "Removed │ 4",
        "Correct removals │ 1",
        "Should remove │ 3",
        "Removal precision │ 0.2500",
        "Removal recall │ 0.3333",
        "cg0 │ 2 │ 2 │ 1.0000",
        "cg1 │ 2 │ 0 │ 0.0000",
        "cg2 │ 2 │ 2 │ 1.0000",
    ):
        assert expected in lines, result.stdout
    assert "Recall by category" in result.stdout


def test_the_table_counts_with_thousands_separators(tmp_path: Path) -> None:
    rnd = random.Random(7)
    words = [f"w{k}" for k in range(3000)]
    texts = [" ".join(rnd.choices(words, k=25)) for _ in range(550)]
    rows = [(f"r{k}", texts[k // 2]) for k in range(1100)]  # each text twice
    out = dedup(tmp_path, rows)
    truth = write_csv(tmp_path / "t.csv", "id,group\n" + "".join(f"r{k},{k // 2}\n" for k in range(1100)))
    result = run("eval", out, "--truth", truth)
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.strip("│ ").split()) for line in result.stdout.splitlines()]
    assert "Rows evaluated │ 1,100 of 1,100" in lines
    assert "Pair precision │ 1.0000" in lines and "True pairs │ 550" in lines


def test_out_dir_without_a_run(tmp_path: Path) -> None:
    truth = write_csv(tmp_path / "t.csv", "id,group\nd1,a\n")
    result = run("eval", tmp_path, "--truth", truth)
    assert (result.exit_code, result.stderr) == (
        1,
        f"neardup: error: {tmp_path}: no summary.json: "
        "not the output folder of a finished neardup dedup run\n",
    )


def test_missing_paths(tmp_path: Path, classic: Path) -> None:
    truth = write_csv(tmp_path / "t.csv", "id,group\nd1,a\n")
    result = run("eval", tmp_path / "nowhere", "--truth", truth)
    assert (result.exit_code, result.stderr) == (
        1,
        f"neardup: error: {tmp_path / 'nowhere'}: no such file or directory\n",
    )
    result = run("eval", classic, "--truth", tmp_path / "none.csv")
    assert (result.exit_code, result.stderr) == (
        1,
        f"neardup: error: {tmp_path / 'none.csv'}: no such file or directory\n",
    )
    result = run("eval", classic)
    assert result.exit_code == 2 and "Missing option '--truth'" in result.stderr


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("t.csv", "id,label\nd1,a\n", "no column 'group' (columns found: 'id', 'label')"),
        ("t.csv", "id,group\nd1,a\nd1,b\n", "record 2: id 'd1' is in group 'b' here"),
        ("t.tsv", "id\tgroup\nd1\ta\n", "cannot tell the truth file's format from its name"),
        ("t.jsonl", "", "the truth file is empty"),
    ],
)
def test_bad_truth_files_exit_1(classic: Path, tmp_path: Path, name: str, data: str, message: str) -> None:
    path = write_csv(tmp_path / name, data)
    result = run("eval", classic, "--truth", path)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"neardup: error: {path}: {message}")
    assert result.stdout == ""


def test_help_names_the_options() -> None:
    result = run("eval", "--help")
    assert result.exit_code == 0
    for option in (
        "--truth FILE",
        "--truth-id-column",
        "--truth-group-column",
        "--truth-category-column",
        "--json",
    ):
        assert option in result.stdout


def test_the_tables_fit_80_columns(classic: Path, tmp_path: Path) -> None:
    """A long truth path folds rather than being cut, and no line passes 80 columns."""
    folder = tmp_path / ("a-rather-long-folder-name-" * 3)
    folder.mkdir()
    truth = write_csv(folder / "pairs.csv", "id_a,id_b,category\nd1,d2,a-category-name\nd3,d4,b\nd1,zz,b\n")
    done = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["eval", str(classic), "--truth", str(truth)])
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert "…" not in done.stdout
    shown = "".join(line.split("│")[2].strip() for line in lines if line.startswith("│"))
    assert str(truth) in shown
    assert "Truth pairs not in the run" in done.stdout and "duplicate pairs" in done.stdout
