"""``neardup tune``: real sweeps over a planted corpus through the command line, the JSON and text
output, the printed ``neardup dedup`` command (run, then scored with ``neardup eval``), the grid
options, ``--sample``, the precision floor and the errors."""

from __future__ import annotations

import csv
import itertools
import json
import random
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main
from neardup.report.tuning import TuneGrid

Record = dict[str, str]
IGNORED = {"seconds", "signature_seconds", "verify_seconds"}  # timings differ from run to run


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def squash(text: str) -> str:
    """Rich wraps long lines at the console's width: compare the words."""
    return " ".join(text.split())


def planted(n_originals: int = 120, *, seed: int = 7, decoys: int = 0) -> list[Record]:
    """Records {id, text, group}: originals of 60-120 words with 0-3 copies each, light (2-3
    words changed, case and punctuation touched) or heavy (a sixth of the words changed), and
    distractors (four fifths of an earlier original, then other words; a group of their own).
    ``decoys``: that many originals again with only their last word changed, each labelled a
    group of its own, so any setting that finds pairs at all also finds wrong ones."""
    rng = random.Random(seed)
    vocab = sorted(
        {"".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 8))) for _ in range(3000)}
    )
    rows: list[tuple[str, str]] = []
    bodies: list[list[str]] = []
    for g in range(n_originals):
        if bodies and rng.random() < 0.2:
            base = rng.choice(bodies)
            keep = int(len(base) * 0.8)
            words = base[:keep] + rng.choices(vocab, k=len(base) - keep)
        else:
            words = rng.choices(vocab, k=rng.randint(60, 120))
        bodies.append(words)
        rows.append((" ".join(words) + ".", f"g{g}"))
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            copy = list(words)
            heavy = rng.random() < 0.35
            for _ in range(len(copy) // 6 if heavy else rng.randint(2, 3)):
                copy[rng.randrange(len(copy))] = rng.choice(vocab)
            if not heavy:
                copy = [w.capitalize() if rng.random() < 0.15 else w for w in copy]
            rows.append((", ".join(copy) + rng.choice(["!", ".", " ...", ""]), f"g{g}"))
    for k in range(decoys):
        words = [*bodies[k][:-1], "zzdecoy"]
        rows.append((" ".join(words) + ".", f"decoy{k}"))
    rng.shuffle(rows)
    return [{"id": f"doc{i:04d}", "text": text, "group": group} for i, (text, group) in enumerate(rows)]


def triples(n_groups: int = 60, *, seed: int = 3) -> list[Record]:
    """Every true group has exactly three rows: an original and two light copies."""
    rng = random.Random(seed)
    vocab = [f"w{k}" for k in range(2000)]
    rows = []
    for g in range(n_groups):
        words = rng.choices(vocab, k=80)
        for _ in range(3):
            copy = list(words)
            copy[rng.randrange(len(copy))] = rng.choice(vocab)
            rows.append((" ".join(copy), f"t{g}"))
    rng.shuffle(rows)
    return [{"id": f"tri{i:04d}", "text": text, "group": group} for i, (text, group) in enumerate(rows)]


def write_corpus(path: Path, records: list[Record], *, text_column: str = "text") -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"id": r["id"], text_column: r["text"], "group": r["group"]}) + "\n")
    return path


def write_groups(path: Path, records: list[Record], *, ids: str = "id") -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "group"])
        for k, r in enumerate(records):
            out.writerow([r["id"] if ids == "id" else str(k), r["group"]])
    return path


def groups_of(records: list[Record]) -> list[list[str]]:
    by_group: dict[str, list[str]] = {}
    for r in records:
        by_group.setdefault(r["group"], []).append(r["id"])
    return list(by_group.values())


def write_pairs(path: Path, records: list[Record]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["id_a", "id_b"])
        for members in groups_of(records):
            out.writerows(itertools.combinations(members, 2))
    return path


def true_pairs(records: list[Record]) -> int:
    return sum(len(m) * (len(m) - 1) // 2 for m in groups_of(records))


def points_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every point of the sweep, with its feature setting's label, in the sweep's order."""
    return [
        {
            "label": s["label"],
            "shingle": s["shingle"],
            "ngram": s["ngram"],
            "normalisation": s["normalisation"]["name"],
            **p,
        }
        for s in data["settings"]
        for p in s["points"]
    ]


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def tune_json(*args: str | Path) -> dict[str, Any]:
    result = run("tune", *args, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def reproduce(command: str, out: Path, truth: str) -> dict[str, Any]:
    """Run the printed dedup command with OUT replaced, then neardup eval on its output."""
    argv = shlex.split(command)
    assert argv[:2] == ["neardup", "dedup"] and argv.count("OUT") == 1
    argv = [str(out) if a == "OUT" else a for a in argv[1:]]
    done = run(*argv, "-q")
    assert done.exit_code == 0, done.output
    scored = run("eval", out, "--truth", truth, "--json")
    assert scored.exit_code == 0, scored.output
    figures: dict[str, Any] = json.loads(scored.stdout)
    return figures


SMALL = (
    "--thresholds",
    "0.6,0.8",
    "--shingles",
    "word",
    "--word-ngrams",
    "2,3",
    "--normalisations",
    "default",
)
TRUTHS = {"groups": "groups.csv", "pairs": "pairs.csv"}
RECORDS = planted()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """corpus.jsonl with groups.csv and pairs.csv, the same labels in both forms."""
    root = tmp_path_factory.mktemp("tune")
    write_corpus(root / "corpus.jsonl", RECORDS)
    write_groups(root / "groups.csv", RECORDS)
    write_pairs(root / "pairs.csv", RECORDS)
    return root


@pytest.fixture
def here(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Inside ``folder``, so the corpus is named as a user would (corpus.jsonl)."""
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture(scope="module")
def swept(folder: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The default grid's sweep with each truth form, as printed by --json."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        yield {
            form: tune_json("corpus.jsonl", "--truth", truth, "--id-column", "id", "-o", f"{form}.html")
            for form, truth in TRUTHS.items()
        }


def by_f1(points: list[dict[str, Any]], k: int) -> tuple[float, float, bool, int, int]:
    """The recommendation's order (tuning's module docstring): F1, then the higher threshold,
    word over char, the smaller n, the earlier point."""
    p = points[k]
    return (p["pair_f1"], p["threshold"], p["shingle"] == "word", -p["ngram"], -k)


# -- the sweep and its recommendation ------------------------------------------------------------


def test_the_corpus_makes_the_choice_mean_something(swept: dict[str, dict[str, Any]]) -> None:
    points = points_of(swept["groups"])
    assert 200 <= len(RECORDS) <= 300 and true_pairs(RECORDS) > 100
    assert min(p["pair_precision"] for p in points) < 0.9  # some points are below the floor
    assert min(p["pair_f1"] for p in points) < 0.8 < max(p["pair_f1"] for p in points)


@pytest.mark.parametrize("form", TRUTHS)
def test_json_gives_the_sweep_its_counts_and_the_command(
    swept: dict[str, dict[str, Any]], folder: Path, form: str
) -> None:
    data = swept[form]
    n = len(RECORDS)
    assert (data["corpus_rows"], data["labelled_rows"], data["swept_rows"], data["rows"]) == (n, n, n, n)
    assert data["true_pairs"] == true_pairs(RECORDS)
    assert data["corpus"] == "corpus.jsonl"
    assert data["min_precision"] == 0.9
    features = TuneGrid().feature_settings()
    assert data["signature_computations"] == len(features) == len(data["settings"]) == 10
    assert [(s["shingle"], s["ngram"], s["normalisation"]["name"]) for s in data["settings"]] == [
        (mode, ngram, norm.name) for mode, ngram, norm in features
    ]
    assert all([p["threshold"] for p in s["points"]] == [0.5, 0.6, 0.7, 0.8, 0.9] for s in data["settings"])
    assert data["jaccard_computations"] == sum(s["unique_pairs"] for s in data["settings"])

    rec = data["recommended"]
    assert rec is not None and data["fallback"] is None and data["reason"] is None
    assert data["command"].startswith("neardup dedup corpus.jsonl -o OUT --id-column id --threshold ")
    assert data["command"] == "neardup dedup corpus.jsonl -o OUT --id-column id " + shlex.join(rec["command"])
    assert rec["command"][:6] == [
        "--threshold",
        repr(rec["threshold"]),
        "--shingle",
        rec["shingle"],
        "--ngram",
        str(rec["ngram"]),
    ]
    assert rec["label"] == f"{rec['shingle']} {rec['ngram']}-grams, {rec['normalisation']}"

    page = folder / f"{form}.html"
    assert page.is_file() and rec["label"] in page.read_text(encoding="utf-8")


def test_the_recommendation_is_the_best_f1_on_the_floor(swept: dict[str, dict[str, Any]]) -> None:
    data = swept["groups"]
    points = points_of(data)
    useful = [k for k, p in enumerate(points) if p["pair_f1"] > 0 and p["pair_precision"] >= 0.9]
    chosen = points[max(useful, key=lambda k: by_f1(points, k))]
    rec = data["recommended"]
    assert (rec["label"], rec["threshold"]) == (chosen["label"], chosen["threshold"])
    assert without_timings({k: rec[k] for k in chosen if k != "label"}) == without_timings(
        {k: v for k, v in chosen.items() if k != "label"}
    )
    assert data["best"]["pair_f1"] == max(p["pair_f1"] for p in points) >= rec["pair_f1"]


def test_both_truth_forms_give_the_same_sweep_and_recommendation(swept: dict[str, dict[str, Any]]) -> None:
    groups, pairs = (without_timings(swept[form]) for form in TRUTHS)
    assert groups["recommended"] == pairs["recommended"]
    assert groups["command"] == pairs["command"]
    assert groups["settings"] == pairs["settings"]


@pytest.mark.parametrize("form", TRUTHS)
def test_the_printed_command_reproduces_the_recommended_point(
    swept: dict[str, dict[str, Any]], here: Path, tmp_path: Path, form: str
) -> None:
    rec = swept[form]["recommended"]
    figures = reproduce(swept[form]["command"], tmp_path / "out", TRUTHS[form])
    assert figures["true_pairs"] == rec["true_pairs"]
    assert figures["predicted_pairs"] == rec["predicted_pairs"]
    for key in ("pair_precision", "pair_recall", "pair_f1", "ari", "removal_precision", "removal_recall"):
        assert figures[key] == pytest.approx(rec[key]), key
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert (summary["threshold"], summary["shingle"], summary["ngram"]) == (
        rec["threshold"],
        rec["shingle"],
        rec["ngram"],
    )
    assert (summary["bands"], summary["rows"]) == (rec["bands"], rec["rows"])


@pytest.mark.parametrize(
    ("normalisation", "flags"),
    [
        ("keep-case-punctuation", ["--keep-case", "--keep-punctuation"]),
        ("raw", ["--no-nfkc", "--keep-accents", "--keep-case", "--keep-punctuation"]),
    ],
)
def test_a_normalisation_s_flags_are_in_the_command_and_reproduce_it(
    here: Path, tmp_path: Path, normalisation: str, flags: list[str]
) -> None:
    data = tune_json(
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "-o",
        tmp_path / "t.html",
        "--thresholds",
        "0.5,0.7",
        "--shingles",
        "char",
        "--char-ngrams",
        "3",
        "--normalisations",
        normalisation,
        "--min-precision",
        "0",
    )
    rec = data["recommended"]
    assert rec is not None and rec["normalisation"] == normalisation
    assert data["command"] == (
        f"neardup dedup corpus.jsonl -o OUT --id-column id --threshold {rec['threshold']!r} "
        f"--shingle char --ngram 3 {' '.join(flags)}"
    )
    figures = reproduce(data["command"], tmp_path / "out", "groups.csv")
    for key in ("pair_precision", "pair_recall", "pair_f1"):
        assert figures[key] == pytest.approx(rec[key]), key


def test_the_text_output(swept: dict[str, dict[str, Any]], here: Path) -> None:
    data = swept["groups"]
    rec = data["recommended"]
    result = run("tune", "corpus.jsonl", "--truth", "groups.csv", "--id-column", "id", "-o", "page.html")
    assert result.exit_code == 0, result.output
    text = squash(result.stdout)
    assert text.startswith(
        f"neardup tune: {len(RECORDS)} rows ({true_pairs(RECORDS)} true pairs), 50 points, "
        "10 signature passes, "
    )
    assert (
        f"Recommended: {rec['label']} at threshold {rec['threshold']} (precision "
        f"{rec['pair_precision']:.4f}, recall {rec['pair_recall']:.4f}, F1 {rec['pair_f1']:.4f})"
    ) in text
    lines = result.stdout.splitlines()
    assert data["command"] in lines  # on one line, whatever the width: it is to be copied
    assert lines[-1] == "Precision/recall curves: page.html"
    assert "No recommendation" not in text
    # the ten best points by F1, the first of them the best of all
    best = data["best"]
    rows = [line for line in lines if line.startswith("│")]
    assert len(rows) == 10
    assert re.match(rf"│ {re.escape(best['label'])} +│ +{best['threshold']:g} │", rows[0])
    assert (here / "page.html").is_file()


def test_quiet_prints_nothing_but_writes_the_page(here: Path, tmp_path: Path) -> None:
    result = run(
        "tune",
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "-o",
        tmp_path / "q.html",
        "-q",
        *SMALL,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == ""
    assert (tmp_path / "q.html").is_file()


# -- the grid ------------------------------------------------------------------------------------


def test_grid_options_give_exactly_their_points(here: Path, tmp_path: Path) -> None:
    data = tune_json(
        "corpus.jsonl", "--truth", "groups.csv", "--id-column", "id", "-o", tmp_path / "g.html", *SMALL
    )
    assert data["grid"]["thresholds"] == [0.6, 0.8]
    assert data["grid"]["shingles"] == ["word"] and data["grid"]["word_ngrams"] == [2, 3]
    assert [n["name"] for n in data["grid"]["normalisations"]] == ["default"]
    assert [s["label"] for s in data["settings"]] == ["word 2-grams, default", "word 3-grams, default"]
    assert [(p["label"], p["threshold"]) for p in points_of(data)] == [
        ("word 2-grams, default", 0.6),
        ("word 2-grams, default", 0.8),
        ("word 3-grams, default", 0.6),
        ("word 3-grams, default", 0.8),
    ]
    assert data["signature_computations"] == 2
    rec = data["recommended"]
    assert rec is not None and (rec["shingle"], rec["normalisation"]) == ("word", "default")
    assert rec["ngram"] in (2, 3) and rec["threshold"] in (0.6, 0.8)


def test_the_text_title_counts_the_grid_s_points(here: Path, tmp_path: Path) -> None:
    result = run(
        "tune",
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "-o",
        tmp_path / "g.html",
        *SMALL,
    )
    assert result.exit_code == 0, result.output
    assert squash(result.stdout).startswith(
        f"neardup tune: {len(RECORDS)} rows ({true_pairs(RECORDS)} true pairs), 4 points, "
        "2 signature passes, "
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--thresholds", "a,b"], "--thresholds takes numbers separated by commas, not 'a,b'"),
        (["--word-ngrams", "2,x"], "--word-ngrams takes whole numbers separated by commas, not '2,x'"),
        (["--char-ngrams", "1.5"], "--char-ngrams takes whole numbers separated by commas, not '1.5'"),
        (
            ["--normalisations", "nope"],
            "--normalisations: unknown 'nope' (known: default, keep-case-punctuation, raw)",
        ),
        (
            ["--normalisations", "default,nope"],
            "--normalisations: unknown 'nope' (known: default, keep-case-punctuation, raw)",
        ),
    ],
)
def test_bad_grid_values_are_usage_errors(here: Path, tmp_path: Path, args: list[str], message: str) -> None:
    page = tmp_path / "bad.html"
    result = run("tune", "corpus.jsonl", "--truth", "groups.csv", "--id-column", "id", "-o", page, *args)
    assert result.exit_code == 2
    assert result.stderr == f"neardup: error: {message}\n"
    assert result.stdout == "" and not page.exists()


# Grid values the sweep cannot take: usage errors naming tune's own option.
REFUSED = {
    "--shingles letters": (["--shingles", "letters"], "--shingles takes word or char, not 'letters'"),
    "--word-ngrams 0": (["--word-ngrams", "0"], "--word-ngrams takes whole numbers from 1 to 64, not 0"),
    "--char-ngrams 0": (["--char-ngrams", "0"], "--char-ngrams takes whole numbers from 1 to 64, not 0"),
    "--thresholds 1.5": (["--thresholds", "1.5"], "--thresholds takes numbers in (0, 1], not 1.5"),
    "--thresholds 0.6,0.6": (["--thresholds", "0.6,0.6"], "--thresholds gives 0.6 twice"),
    "--thresholds ,": (["--thresholds", ","], "--thresholds needs at least one value"),
    "--word-ngrams ''": (
        ["--shingles", "word", "--word-ngrams", ""],
        "--word-ngrams needs at least one value",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_grid_values_the_sweep_cannot_take_name_tune_s_option(here: Path, tmp_path: Path, case: str) -> None:
    args, message = REFUSED[case]
    page = tmp_path / "bad.html"
    result = run("tune", "corpus.jsonl", "--truth", "groups.csv", "--id-column", "id", "-o", page, *args)
    assert result.exit_code == 2
    assert result.stderr == f"neardup: error: {message}\n"
    assert result.stdout == "" and not page.exists()


# -- --sample ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def triples_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("triples")
    records = triples()
    write_corpus(root / "corpus.jsonl", records)
    write_groups(root / "groups.csv", records)
    write_pairs(root / "pairs.csv", records)
    return root


@pytest.mark.parametrize("form", TRUTHS)
@pytest.mark.parametrize(("sample", "seed"), [(100, 42), (100, 7), (50, 1), (3, 5)])
def test_a_sample_takes_whole_true_groups(
    triples_folder: Path, monkeypatch: pytest.MonkeyPatch, form: str, sample: int, seed: int
) -> None:
    # every true group has three rows: whole groups make a multiple of 3 rows and 3 pairs a group
    monkeypatch.chdir(triples_folder)
    data = tune_json(
        "corpus.jsonl",
        "--truth",
        TRUTHS[form],
        "--id-column",
        "id",
        "-o",
        "s.html",
        "--sample",
        str(sample),
        "--seed",
        str(seed),
        *SMALL,
    )
    assert (data["corpus_rows"], data["labelled_rows"]) == (180, 180)
    expected = sample // 3 * 3  # at most N rows, fewer only by less than a group
    assert data["swept_rows"] == data["rows"] == expected
    assert data["true_pairs"] == expected
    assert all(p["true_pairs"] == expected for p in points_of(data))


def test_a_sample_that_takes_no_whole_group_is_an_error(
    triples_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(triples_folder)  # every true group has three rows: --sample 2 fits none
    args = ["--id-column", "id", "-o", "z.html", "--sample", "2", *SMALL]
    result = run("tune", "corpus.jsonl", "--truth", "groups.csv", *args)
    assert result.exit_code == 1
    assert result.stderr == (
        "neardup: error: groups.csv: the 0 rows swept hold no two rows of one true group: no "
        "duplicate to score against (true groups are taken whole: give --sample more rows)\n"
    )
    assert not (triples_folder / "z.html").exists()


def test_a_sample_passes_over_a_group_too_large_for_the_room_left(tmp_path: Path) -> None:
    from neardup.report.tuning import sample_rows

    labels = np.array([0] * 5 + [1, 1] + [2, 2] + [3] + [4])  # a group of 5, two pairs, two alone
    for seed in range(20):
        rows = sample_rows(labels, 4, seed=seed)
        assert rows.size == 4  # whatever the order drawn, the 5 is passed over and 4 rows fit
        taken = labels[rows]
        assert all(np.count_nonzero(taken == g) == np.count_nonzero(labels == g) for g in set(taken.tolist()))


def test_a_sample_is_seeded(here: Path, tmp_path: Path) -> None:
    def sampled(seed: int) -> dict[str, Any]:
        data = tune_json(
            "corpus.jsonl",
            "--truth",
            "groups.csv",
            "--id-column",
            "id",
            "-o",
            tmp_path / "s.html",
            "--sample",
            "100",
            "--seed",
            str(seed),
            *SMALL,
        )
        assert data["labelled_rows"] == len(RECORDS) and 90 <= data["swept_rows"] <= 100
        out: dict[str, Any] = without_timings(data)
        return out

    first = sampled(1)
    assert sampled(1) == first
    others = [sampled(seed) for seed in (2, 3, 4)]
    assert any(
        (o["swept_rows"], o["true_pairs"], o["settings"])
        != (first["swept_rows"], first["true_pairs"], first["settings"])
        for o in others
    )


def test_a_sample_larger_than_the_labelled_rows_takes_them_all(here: Path, tmp_path: Path) -> None:
    data = tune_json(
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "-o",
        tmp_path / "s.html",
        "--sample",
        str(len(RECORDS)),
        *SMALL,
    )
    assert data["swept_rows"] == len(RECORDS) and data["true_pairs"] == true_pairs(RECORDS)


@pytest.mark.parametrize("sample", ["1", "0", "-3"])
def test_a_sample_of_fewer_than_two_rows_is_refused(here: Path, tmp_path: Path, sample: str) -> None:
    result = run(
        "tune",
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "-o",
        tmp_path / "s.html",
        "--sample",
        sample,
    )
    assert result.exit_code == 2
    assert f"Invalid value for '--sample': {sample} is not in the range x>=2." in result.stderr


# -- the labelled rows, the id and text columns --------------------------------------------------


def test_only_the_rows_the_truth_labels_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus.jsonl", RECORDS)
    labelled = RECORDS[30:]
    write_groups(tmp_path / "part.csv", labelled)
    data = tune_json("corpus.jsonl", "--truth", "part.csv", "--id-column", "id", "-o", "p.html", *SMALL)
    n = len(RECORDS)
    assert (data["corpus_rows"], data["labelled_rows"], data["swept_rows"]) == (n, n - 30, n - 30)
    assert data["true_pairs"] == true_pairs(labelled)


def test_without_id_column_the_truth_names_row_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus.jsonl", RECORDS)
    write_groups(tmp_path / "rows.csv", RECORDS, ids="row")
    data = tune_json("corpus.jsonl", "--truth", "rows.csv", "-o", "p.html", *SMALL)
    rec = data["recommended"]
    assert data["command"] == "neardup dedup corpus.jsonl -o OUT " + shlex.join(rec["command"])
    figures = reproduce(data["command"], tmp_path / "out", "rows.csv")
    for key in ("pair_precision", "pair_recall", "pair_f1"):
        assert figures[key] == pytest.approx(rec[key]), key


def test_the_command_quotes_paths_and_names_the_text_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = RECORDS[:100], RECORDS[100:]
    write_corpus(tmp_path / "my corpus.jsonl", first, text_column="body")
    write_corpus(tmp_path / "rest.jsonl", second, text_column="body")
    write_groups(tmp_path / "groups.csv", RECORDS)
    data = tune_json(
        "my corpus.jsonl",
        "rest.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "--text-column",
        "body",
        "-o",
        "p.html",
        *SMALL,
    )
    assert data["corpus"] == "my corpus.jsonl rest.jsonl"
    assert data["corpus_rows"] == data["swept_rows"] == len(RECORDS)
    rec = data["recommended"]
    assert data["command"] == (
        "neardup dedup 'my corpus.jsonl' rest.jsonl -o OUT --text-column body --id-column id "
        + shlex.join(rec["command"])
    )
    figures = reproduce(data["command"], tmp_path / "out", "groups.csv")
    for key in ("pair_precision", "pair_recall", "pair_f1"):
        assert figures[key] == pytest.approx(rec[key]), key


# -- no point on the floor -----------------------------------------------------------------------


DECOYS = planted(decoys=10)


@pytest.fixture
def decoys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus.jsonl", DECOYS)
    write_groups(tmp_path / "groups.csv", DECOYS)
    return tmp_path


def test_no_point_perfectly_precise_gives_no_recommendation(decoys: Path) -> None:
    data = tune_json(
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "--min-precision",
        "1.0",
        "-o",
        "page.html",
    )
    points = points_of(data)
    assert all(p["pair_precision"] < 1.0 for p in points if p["pair_f1"] > 0)  # what the decoys do
    assert data["recommended"] is None and data["command"] is None
    fallback = data["fallback"]
    most_precise = max(p["pair_precision"] for p in points if p["pair_f1"] > 0)
    assert fallback is not None and fallback["pair_precision"] == most_precise
    assert data["reason"] == (
        "no setting that finds true pairs reached pair precision 1.0: the most precise, "
        f"{fallback['label']}, threshold {fallback['threshold']}, has {fallback['pair_precision']:.4f} "
        f"(pair F1 {fallback['pair_f1']:.4f}); lower --min-precision or widen the grid (higher "
        "thresholds, longer shingles)"
    )
    assert (decoys / "page.html").is_file()


def test_no_recommendation_in_the_text_output(decoys: Path) -> None:
    data = tune_json(
        "corpus.jsonl", "--truth", "groups.csv", "--id-column", "id", "--min-precision", "1", "-o", "j.html"
    )
    result = run(
        "tune",
        "corpus.jsonl",
        "--truth",
        "groups.csv",
        "--id-column",
        "id",
        "--min-precision",
        "1",
        "-o",
        "page.html",
    )
    assert result.exit_code == 0, result.output
    text = squash(result.stdout)
    assert f"No recommendation: {data['reason']}" in text
    assert "Recommended:" not in text and "neardup dedup" not in text
    assert result.stdout.splitlines()[-1] == "Precision/recall curves: page.html"
    assert "(below floor)" in result.stdout
    assert (decoys / "page.html").is_file()


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("form", "columns"), [("groups", "column 'id'"), ("pairs", "columns 'id_a' and 'id_b'")]
)
def test_truth_ids_that_match_no_corpus_id(here: Path, tmp_path: Path, form: str, columns: str) -> None:
    page = tmp_path / "page.html"
    result = run("tune", "corpus.jsonl", "--truth", TRUTHS[form], "-o", page)  # no --id-column: row_id
    assert result.exit_code == 1
    assert result.stderr == (
        f"neardup: error: {TRUTHS[form]}: none of the truth's ids ({columns}) is an id of the run "
        f"(column 'row_id') (the run's first: '0', the truth's: {RECORDS[0]['id']!r}): probably the "
        "wrong id column was used, for the truth or for the run\n"
    )
    assert result.stdout == "" and not page.exists()


def test_a_missing_corpus_file(here: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    result = run("tune", "nope.jsonl", "--truth", "groups.csv", "--id-column", "id", "-o", page)
    assert result.exit_code == 1
    assert result.stderr == "neardup: error: nope.jsonl: no such file or directory\n"
    assert not page.exists()


def test_a_missing_truth_file(here: Path, tmp_path: Path) -> None:
    result = run(
        "tune", "corpus.jsonl", "--truth", "nope.csv", "--id-column", "id", "-o", tmp_path / "p.html"
    )
    assert result.exit_code == 1
    assert result.stderr == "neardup: error: nope.csv: no such file or directory\n"


def test_truth_is_required(here: Path) -> None:
    result = run("tune", "corpus.jsonl", "--id-column", "id")
    assert result.exit_code == 2
    assert "Error: Missing option '--truth'." in result.stderr


def test_a_corpus_is_required(here: Path) -> None:
    result = run("tune", "--truth", "groups.csv")
    assert result.exit_code == 2
    assert "Error: Missing argument 'CORPUS...'." in result.stderr


@pytest.mark.parametrize("value", ["1.5", "-0.1"])
def test_min_precision_out_of_range_is_refused(here: Path, value: str) -> None:
    result = run("tune", "corpus.jsonl", "--truth", "groups.csv", "--min-precision", value)
    assert result.exit_code == 2
    assert (
        f"Invalid value for '--min-precision': {float(value)} is not in the range 0<=x<=1." in result.stderr
    )
