"""The tuning sweep on a planted corpus: real signatures, candidates, verification and scores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neardup import pipeline
from neardup.cli import main
from neardup.core import verify
from neardup.core.minhash import MinHasher
from neardup.errors import ConfigError, InputError
from neardup.pipeline import find_duplicates
from neardup.report import tuning
from neardup.report.metrics import pair_scores, removal_scores, singletons_apart
from neardup.report.tuning import (
    DEFAULT,
    KEEP_CASE_PUNCTUATION,
    RAW,
    Normalisation,
    TuneGrid,
    TunePoint,
    command_args,
    sample_rows,
    tune,
)


def planted(n_originals: int = 150, *, seed: int = 7) -> tuple[list[str], np.ndarray]:
    """Originals of 60-120 words, each with 0-3 copies: light (2-3 words changed, case and
    punctuation touched) or heavy (a sixth of the words changed); and distractors: originals
    that share four fifths of another original (its opening) but end differently (not duplicates)."""
    rng = random.Random(seed)
    vocab = sorted(
        {"".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 8))) for _ in range(3000)}
    )
    texts: list[str] = []
    labels: list[int] = []
    bodies: list[list[str]] = []
    for g in range(n_originals):
        if bodies and rng.random() < 0.2:  # a distractor: the opening of an earlier original
            base = rng.choice(bodies)
            keep = int(len(base) * 0.8)
            words = base[:keep] + rng.choices(vocab, k=len(base) - keep)
        else:
            words = rng.choices(vocab, k=rng.randint(60, 120))
        bodies.append(words)
        texts.append(" ".join(words) + ".")
        labels.append(g)
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            copy = list(words)
            heavy = rng.random() < 0.35
            for _ in range(len(copy) // 6 if heavy else rng.randint(2, 3)):
                copy[rng.randrange(len(copy))] = rng.choice(vocab)
            if not heavy:
                copy = [w.capitalize() if rng.random() < 0.15 else w for w in copy]
            texts.append(", ".join(copy) + rng.choice(["!", ".", " ...", ""]))
            labels.append(g)
    order = list(range(len(texts)))
    rng.shuffle(order)
    return [texts[k] for k in order], np.array([labels[k] for k in order], dtype=np.int64)


SMALL = TuneGrid(
    thresholds=(0.5, 0.6, 0.7, 0.9),
    shingles=("word", "char"),
    word_ngrams=(1, 3),
    char_ngrams=(5,),
    normalisations=(DEFAULT, KEEP_CASE_PUNCTUATION),
)


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], np.ndarray]:
    return planted()


@pytest.fixture(scope="module")
def swept(corpus: tuple[list[str], np.ndarray]) -> tuning.TuneResult:
    texts, truth = corpus
    return tune(texts, truth, grid=SMALL, min_precision=0.9)


def test_the_corpus_is_not_trivial(corpus: tuple[list[str], np.ndarray], swept: tuning.TuneResult) -> None:
    texts, _ = corpus
    assert 250 <= len(texts) <= 400
    assert swept.true_pairs > 100
    f1s = [p.pair_f1 for p in swept.points]
    assert min(f1s) < 0.8 < max(f1s)  # the settings differ, so the choice means something
    assert min(p.pair_precision for p in swept.points) < 0.9  # some fall below the floor


def test_recommends_the_best_f1_above_the_floor(swept: tuning.TuneResult) -> None:
    rec = swept.recommended
    assert rec is not None and swept.fallback is None and swept.reason is None
    assert rec.pair_precision >= 0.9
    above = [p.pair_f1 for p in swept.points if p.pair_precision >= 0.9]
    assert rec.pair_f1 >= max(above) - 0.01
    assert swept.best.pair_f1 == max(p.pair_f1 for p in swept.points)
    assert len(swept.points) == 3 * 2 * 4  # (2 word n + 1 char n) x 2 normalisations x 4 thresholds


def test_ties_go_to_the_higher_threshold_then_word_shingles_then_the_smaller_n(
    swept: tuning.TuneResult,
) -> None:
    rec = swept.recommended
    assert rec is not None
    tied = [p for p in swept.points if p.pair_precision >= 0.9 and p.pair_f1 == rec.pair_f1]
    assert rec.threshold == max(p.threshold for p in tied)
    tied = [p for p in tied if p.threshold == rec.threshold]
    if any(p.shingle == "word" for p in tied):
        assert rec.shingle == "word"
    assert rec.ngram == min(p.ngram for p in tied if p.shingle == rec.shingle)


def test_signatures_are_computed_once_per_feature_setting(
    corpus: tuple[list[str], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    texts, truth = corpus
    calls: list[tuple[str, int]] = []
    original = MinHasher.signatures_with_counts

    def counted(self: MinHasher, batch: object, **kwargs: bool) -> tuple[np.ndarray, np.ndarray]:
        calls.append((self.shingle.mode, self.shingle.n))
        return original(self, batch, **kwargs)  # type: ignore[arg-type]

    verified: list[int] = []
    exact = verify.exact_jaccard_pairs

    def counted_exact(sets: object, n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        verified.append(int(left.size))
        return exact(sets, n, left, right)  # type: ignore[arg-type]

    monkeypatch.setattr(MinHasher, "signatures_with_counts", counted)
    monkeypatch.setattr(pipeline, "exact_jaccard_pairs", counted_exact)
    result = tune(texts, truth, grid=SMALL)
    features = len(SMALL.feature_settings())
    assert len(calls) == features == 6 and result.signature_computations == features
    # exact Jaccard once per unique pair of each feature setting, not once per threshold
    assert sum(verified) == result.jaccard_computations == sum(s.unique_pairs for s in result.settings)
    for s in result.settings:
        assert s.unique_pairs <= sum(p.candidate_pairs for p in s.points)
        assert s.unique_pairs == max(p.candidate_pairs for p in s.points)  # lower thresholds find more
    assert result.jaccard_computations < sum(p.candidate_pairs for p in result.points)


@pytest.mark.parametrize(
    ("shingle", "ngram", "norm", "threshold"),
    [
        ("word", 3, DEFAULT, 0.5),
        ("word", 1, KEEP_CASE_PUNCTUATION, 0.7),
        ("char", 5, DEFAULT, 0.9),
        ("char", 5, KEEP_CASE_PUNCTUATION, 0.5),
    ],
)
def test_a_point_scores_as_find_duplicates_with_its_config(
    corpus: tuple[list[str], np.ndarray],
    swept: tuning.TuneResult,
    shingle: str,
    ngram: int,
    norm: Normalisation,
    threshold: float,
) -> None:
    texts, truth = corpus
    (point,) = [
        p
        for p in swept.points
        if (p.shingle, p.ngram, p.normalisation, p.threshold) == (shingle, ngram, norm, threshold)
    ]
    run = find_duplicates(texts, point.config())
    scores = pair_scores(singletons_apart(run.clusters.cluster), truth)
    removal = removal_scores(truth, run.is_duplicate, run.clusters.representative)
    assert (point.bands, point.rows) == (run.bands, run.rows)
    assert point.candidate_pairs == run.candidate_count
    assert point.verified_pairs == len(run.pairs)
    assert point.predicted_pairs == scores.predicted_pairs
    assert (point.pair_precision, point.pair_recall, point.pair_f1, point.ari) == (
        scores.pair_precision,
        scores.pair_recall,
        scores.pair_f1,
        scores.ari,
    )
    assert (point.removal_precision, point.removal_recall) == (
        removal.removal_precision,
        removal.removal_recall,
    )


def test_no_point_on_the_floor_gives_a_fallback_and_a_reason() -> None:
    # labels that call exact copies different: whatever a setting finds is wrong
    texts = ["the quick brown fox jumps over the lazy dog today"] * 3 + ["a different text entirely here now"]
    truth = np.arange(4)
    grid = TuneGrid(thresholds=(0.6, 0.8), shingles=("word",), word_ngrams=(2,), normalisations=(DEFAULT,))
    result = tune(texts, truth, grid=grid, min_precision=0.5)
    assert result.recommended is None
    assert result.fallback is not None and result.fallback.pair_precision == 0.0
    assert result.fallback.threshold == 0.8  # equal precision and F1: the higher threshold
    assert result.reason is not None
    assert "no setting that finds true pairs reached pair precision 0.5" in result.reason
    out = result.to_dict()
    assert out["recommended"] is None and out["fallback"]["threshold"] == 0.8
    json.dumps(out)


def test_to_dict_is_json_ready(swept: tuning.TuneResult) -> None:
    out = json.loads(json.dumps(swept.to_dict()))
    assert out["signature_computations"] == 6
    assert len(out["settings"]) == 6
    first = out["settings"][0]
    assert (first["shingle"], first["ngram"], first["normalisation"]["name"]) == ("word", 1, "default")
    assert [p["threshold"] for p in first["points"]] == [0.5, 0.6, 0.7, 0.9]
    assert set(first["points"][0]) >= {
        "threshold",
        "bands",
        "rows",
        "candidate_pairs",
        "verified_pairs",
        "pair_precision",
        "pair_recall",
        "pair_f1",
        "ari",
        "removal_precision",
        "removal_recall",
        "seconds",
    }
    rec = out["recommended"]
    assert rec["command"] == command_args(swept.recommended)  # type: ignore[arg-type]
    assert out["best"]["pair_f1"] >= rec["pair_f1"]


def point(norm: Normalisation, **kw: object) -> TunePoint:
    fields: dict[str, object] = dict(
        shingle="char", ngram=5, normalisation=norm, num_perm=128, seed=42, threshold=0.7, bands=0, rows=0,
        candidate_pairs=0, verified_pairs=0, true_pairs=0, predicted_pairs=0, pair_precision=1.0,
        pair_recall=1.0, pair_f1=1.0, ari=1.0, removal_precision=1.0, removal_recall=1.0, seconds=0.0,
    )  # fmt: skip
    fields.update(kw)
    return TunePoint(**fields)  # type: ignore[arg-type]


def test_ties_among_made_up_points() -> None:
    same = {"pair_f1": 0.8, "pair_precision": 0.95}
    points = [
        point(DEFAULT, shingle="char", ngram=3, threshold=0.8, **same),
        point(DEFAULT, shingle="word", ngram=5, threshold=0.8, **same),
        point(DEFAULT, shingle="word", ngram=2, threshold=0.6, **same),
        point(DEFAULT, shingle="word", ngram=3, threshold=0.8, **same),
        point(KEEP_CASE_PUNCTUATION, shingle="word", ngram=3, threshold=0.8, **same),
        point(DEFAULT, shingle="word", ngram=1, threshold=0.9, pair_f1=0.9, pair_precision=0.5),
    ]
    recommended, best, fallback, reason = tuning._choose(points, 0.9)
    assert recommended is points[3] and best is points[5] and fallback is None and reason is None
    recommended, best, fallback, reason = tuning._choose(points, 0.99)
    assert recommended is None and fallback is points[3] and reason is not None


def test_a_point_that_finds_nothing_is_not_recommended() -> None:
    nothing = point(DEFAULT, threshold=0.9, true_pairs=10, pair_recall=0.0, pair_f1=0.0)
    some = point(DEFAULT, threshold=0.5, true_pairs=10, pair_precision=0.5, pair_f1=0.4)
    recommended, _, fallback, reason = tuning._choose([nothing, some], 0.9)
    assert recommended is None and fallback is some and reason is not None
    # two texts called one group that share nothing: no setting finds the pair
    result = tune(["alpha beta gamma delta", "one two three four"], np.array([0, 0]), grid=SMALL)
    assert result.recommended is None and result.fallback is not None
    assert result.reason is not None and result.reason.startswith("no setting found a single true pair")


def test_command_args_name_only_what_differs() -> None:
    assert command_args(point(DEFAULT)) == ["--threshold", "0.7", "--shingle", "char", "--ngram", "5"]
    assert command_args(point(RAW, num_perm=64, seed=3, threshold=0.85)) == [
        "--threshold",
        "0.85",
        "--shingle",
        "char",
        "--ngram",
        "5",
        "--no-nfkc",
        "--keep-accents",
        "--keep-case",
        "--keep-punctuation",
        "--num-perm",
        "64",
        "--seed",
        "3",
    ]


@pytest.mark.parametrize("norm", [DEFAULT, KEEP_CASE_PUNCTUATION, RAW])
def test_the_cli_takes_command_args_and_runs_that_setting(tmp_path: Path, norm: Normalisation) -> None:
    texts = ["The cat sat on the mat, quietly.", "the cat sat on the mat quietly", "Dogs bark at night."]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    p = point(norm, shingle="word", ngram=3, threshold=0.65, num_perm=64, seed=5)
    result = CliRunner().invoke(
        main, ["dedup", str(src), "-o", str(tmp_path / "out"), "-q", *command_args(p)]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["threshold"], summary["shingle"], summary["ngram"]) == (0.65, "word", 3)
    assert (summary["num_perm"], summary["seed"]) == (64, 5)
    assert summary["config"] == p.config().to_dict()


def test_sample_keeps_groups_whole_and_is_seeded() -> None:
    truth = np.repeat(np.arange(300), np.random.default_rng(1).integers(1, 6, 300))
    picked = sample_rows(truth, 200, seed=3)
    assert np.array_equal(picked, sample_rows(truth, 200, seed=3))
    assert not np.array_equal(picked, sample_rows(truth, 200, seed=4))
    assert 200 - 5 < picked.size <= 200 and np.all(np.diff(picked) > 0)
    kept = np.unique(truth[picked])
    assert np.array_equal(np.sort(picked), np.flatnonzero(np.isin(truth, kept)))  # whole groups only
    assert np.array_equal(sample_rows(truth, truth.size + 10, seed=3), np.arange(truth.size))


def test_a_sample_still_tunes(corpus: tuple[list[str], np.ndarray]) -> None:
    texts, truth = corpus
    rows = sample_rows(truth, 120, seed=0)
    grid = TuneGrid(thresholds=(0.7,), shingles=("word",), word_ngrams=(3,), normalisations=(DEFAULT,))
    result = tune([texts[k] for k in rows], truth[rows], grid=grid)
    assert result.rows == rows.size and result.true_pairs > 0


def test_progress_reports_each_stage(corpus: tuple[list[str], np.ndarray]) -> None:
    texts, truth = corpus
    seen: list[tuple[str, int, int]] = []
    grid = TuneGrid(thresholds=(0.6, 0.8), shingles=("word",), word_ngrams=(2, 3), normalisations=(DEFAULT,))
    tune(texts[:50], truth[:50], grid=grid, progress=lambda *a: seen.append(a))
    assert [s for s in seen if s[0] == "signatures"] == [("signatures", 1, 2), ("signatures", 2, 2)]
    assert [s for s in seen if s[0] == "points"][-1] == ("points", 4, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"thresholds": ()}, "at least one threshold"),
        ({"thresholds": (0.5, 1.5)}, "threshold must be in"),
        ({"thresholds": (0.5, 0.5)}, "thresholds repeat"),
        ({"shingles": ("line",)}, "shingle mode must be"),
        ({"char_ngrams": ()}, "no n for it"),
        ({"word_ngrams": (0,)}, "ngram must be"),
        ({"normalisations": (DEFAULT, Normalisation("default", lowercase=False))}, "names repeat"),
    ],
)
def test_a_bad_grid_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TuneGrid(**kwargs)  # type: ignore[arg-type]


def test_bad_labels_and_floor_are_refused() -> None:
    with pytest.raises(InputError, match="one integer per text: 2 texts"):
        tune(["a b c", "a b d"], np.array([0]))
    with pytest.raises(ConfigError, match="min_precision"):
        tune(["a b c"], np.array([0]), min_precision=1.5)
    with pytest.raises(ConfigError, match="sample size"):
        sample_rows(np.array([0, 1]), 0)
