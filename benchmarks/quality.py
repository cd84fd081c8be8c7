"""Choose the dedup defaults by measurement: a sweep over planted near-duplicates.

The benchmark: N English and N Chinese originals from the shared corpus, half of
them given two planted variants each (kinds in ``corpus.ALL_KINDS``; the
negative kinds must *not* be found). Every setting is run through
``neardup.pipeline.find_duplicates`` once per language and scored by pairs
(precision, recall, F1; combined = macro average of the two languages).

The grid is swept in two stages so the full run stays short:

1. every shingle mode and n at a few thresholds (nfkc on, fp_weight 0.5);
2. the best few (mode, n) at every threshold, nfkc on/off and every fp_weight.

Run ``python benchmarks/quality.py --help``; results go to stdout (Markdown
tables) and ``benchmarks/out/quality.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import operator
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from common import machine_info, markdown_table
from corpus import (
    ALL_KINDS,
    NEGATIVE_KINDS,
    ORIGINAL,
    Record,
    default_corpus_path,
    load_originals,
    pair_scores,
    plant,
    true_pairs,
)
from neardup.config import DedupConfig
from neardup.core.params import candidate_probability
from neardup.core.shingles import shingle_sets
from neardup.core.text import TextBatch, encode_texts
from neardup.core.verify import exact_jaccard_pairs
from neardup.pipeline import DedupResult, find_duplicates

LANGS = ("en", "zh")
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
FP_WEIGHTS = (0.5, 0.3, 0.1, 0.03)
WORD_NS = tuple(range(1, 8))
CHAR_NS = tuple(range(2, 10))
COARSE_THRESHOLDS = (0.5, 0.7, 0.85)
TIE = 0.005
SPEC_EXCLUDED = frozenset({"rewording_heavy"})
"""Negative kinds added beyond the brief; "spec-only" scores leave them out."""


@dataclass(frozen=True)
class Setting:
    """One point of the grid (everything else stays at the library default)."""

    mode: str
    n: int
    threshold: float
    nfkc: bool = True
    fp_weight: float = 0.5
    num_perm: int = 128
    seed: int = 42
    layers: int = 2

    def config(self) -> DedupConfig:
        return DedupConfig.create(
            shingle=cast(Any, self.mode),
            ngram=self.n,
            threshold=self.threshold,
            nfkc=self.nfkc,
            fp_weight=self.fp_weight,
            num_perm=self.num_perm,
            seed=self.seed,
            layers=self.layers,
        )

    @property
    def label(self) -> str:
        nf = "nfkc" if self.nfkc else "no-nfkc"
        return (
            f"{self.mode}-{self.n} t={self.threshold} {nf} fp={self.fp_weight} perm={self.num_perm} "
            f"layers={self.layers}"
        )


@dataclass
class Bench:
    """One language's planted corpus, ready to run."""

    lang: str
    records: list[Record]
    batch: TextBatch
    without: dict[str, list[int]]
    """Per kind, the positions of the records of every other kind (leave-one-kind-out scores)."""
    left: np.ndarray
    right: np.ndarray
    """The true pairs, as index arrays."""


# --------------------------------------------------------------------------- building


def build_benches(
    path: Path, *, per_lang: int, seed: int, variants_per_doc: int, dup_fraction: float
) -> list[Bench]:
    """Plant a corpus per language; a quarter as many extra originals serve as filler donors."""
    benches = []
    for lang in LANGS:
        pool = load_originals(path, lang=lang, limit=per_lang + per_lang // 4, seed=seed)
        random.Random(seed).shuffle(pool)
        originals, donors = pool[:per_lang], pool[per_lang:]
        records = plant(
            originals,
            seed=seed,
            variants_per_doc=variants_per_doc,
            dup_fraction=dup_fraction,
            donors=donors,
        )
        without = {k: [i for i, r in enumerate(records) if r["kind"] != k] for k in ALL_KINDS}
        pairs = np.array(sorted(true_pairs(records)), dtype=np.int64).reshape(-1, 2)
        batch = encode_texts([r["text"] for r in records])
        benches.append(Bench(lang, records, batch, without, pairs[:, 0].copy(), pairs[:, 1].copy()))
    return benches


def corpus_summary(benches: Sequence[Bench]) -> list[dict[str, Any]]:
    out = []
    for b in benches:
        kinds = Counter(r["kind"] for r in b.records)
        out.append(
            {
                "lang": b.lang,
                "records": len(b.records),
                "originals": kinds.pop(ORIGINAL, 0),
                "true_pairs": len(true_pairs(b.records)),
                "variants": dict(sorted(kinds.items())),
            }
        )
    return out


# --------------------------------------------------------------------------- running


def run_one(bench: Bench, setting: Setting) -> dict[str, Any]:
    """Run the pipeline on one language and score it."""
    t0 = time.perf_counter()
    res = find_duplicates(bench.batch, setting.config())
    seconds = time.perf_counter() - t0
    labels = res.clusters.cluster
    scores = pair_scores(bench.records, labels)
    cfg = res.config
    prob = float(candidate_probability(cfg.lsh.threshold, res.bands, res.rows))
    loo = {
        k: pair_scores([bench.records[i] for i in idx], labels[idx]).f1 for k, idx in bench.without.items()
    }
    return {
        "precision": scores.precision,
        "recall": scores.recall,
        "f1": scores.f1,
        "spec_f1": statistics.fmean(loo[k] for k in SPEC_EXCLUDED),
        "f1_without": loo,
        "predicted_pairs": scores.predicted_pairs,
        "true_pairs": scores.true_pairs,
        "negative_fp_pairs": scores.negative_fp_pairs,
        "kind_recall": scores.kind_recall,
        "source_match": scores.source_match,
        "bands": res.bands,
        "rows": res.rows,
        "candidates": res.candidate_count,
        "p_candidate_at_t": prob,
        "ceiling": _ceiling(bench, res),
        "seconds": seconds,
    }


def _ceiling(bench: Bench, res: DedupResult) -> float:
    """Share of the true pairs whose exact Jaccard reaches the threshold: the recall
    a perfect LSH stage would give (before transitive merges)."""
    if bench.left.size == 0:
        return 1.0
    cfg = res.config
    docs = np.unique(np.concatenate((bench.left, bench.right)))
    sets = shingle_sets(bench.batch, docs, res.shingle_counts, cfg.text, cfg.shingle)
    jac = exact_jaccard_pairs(sets, len(bench.batch), bench.left, bench.right)
    return float(np.mean(jac >= cfg.lsh.threshold))


def evaluate(benches: Sequence[Bench], setting: Setting) -> dict[str, Any]:
    """A setting's scores per language and combined (macro average)."""
    per = {b.lang: run_one(b, setting) for b in benches}
    row: dict[str, Any] = {"setting": asdict(setting), "label": setting.label, "langs": per}
    for key in ("precision", "recall", "f1", "spec_f1", "ceiling"):
        row[key] = statistics.fmean(p[key] for p in per.values())
    for kind in ALL_KINDS:
        row[f"f1_without_{kind}"] = statistics.fmean(p["f1_without"][kind] for p in per.values())
    row["candidates"] = sum(p["candidates"] for p in per.values())
    row["seconds"] = sum(p["seconds"] for p in per.values())
    return row


def sweep(
    benches: Sequence[Bench],
    settings: Iterable[Setting],
    done: dict[Setting, dict[str, Any]],
    *,
    stage: str,
) -> None:
    """Evaluate the settings not yet in ``done``, with a progress line per setting."""
    todo = [s for s in settings if s not in done]
    t0 = time.perf_counter()
    for k, s in enumerate(todo, 1):
        row = evaluate(benches, s)
        row["stage"] = stage
        done[s] = row
        print(
            f"  [{stage} {k}/{len(todo)} {time.perf_counter() - t0:6.1f}s] {s.label:48s} "
            f"F1 {row['f1']:.4f} (en {row['langs']['en']['f1']:.3f} zh {row['langs']['zh']['f1']:.3f})",
            file=sys.stderr,
            flush=True,
        )


def coarse_grid(
    word_ns: Sequence[int], char_ns: Sequence[int], thresholds: Sequence[float], perm: int
) -> list[Setting]:
    shapes = [("word", n) for n in word_ns] + [("char", n) for n in char_ns]
    return [Setting(m, n, t, num_perm=perm) for m, n in shapes for t in thresholds]


def fine_grid(
    shapes: Sequence[tuple[str, int]], thresholds: Sequence[float], fp_weights: Sequence[float], perm: int
) -> list[Setting]:
    return [
        Setting(m, n, t, nfkc, fp, num_perm=perm)
        for m, n in shapes
        for t in thresholds
        for nfkc in (True, False)
        for fp in fp_weights
    ]


def best_shapes(rows: Iterable[dict[str, Any]], k: int) -> list[tuple[str, int]]:
    """The ``k`` (mode, n) with the best combined F1 at any threshold."""
    best: dict[tuple[str, int], float] = {}
    for r in rows:
        key = (r["setting"]["mode"], r["setting"]["n"])
        best[key] = max(best.get(key, 0.0), r["f1"])
    return sorted(best, key=lambda s: -best[s])[:k]


def pick_winner(rows: Sequence[dict[str, Any]], metric: str = "f1", tie: float = TIE) -> dict[str, Any]:
    """Best ``metric``; among settings within ``tie`` of it, the simpler and cheaper one.

    Differences within ``tie`` are at the noise level of a few thousand true
    pairs, so the order among them is: word shingles before char (fewer
    shingles per document), fewer candidate pairs to verify, nfkc on (the more
    forgiving normalisation), the higher threshold (the fewer false merges as a
    corpus grows, which a benchmark of this size cannot show), the lower
    fp_weight (with verification on it only adds candidates, already counted;
    at other thresholds it never scored worse here), the better score.
    """
    top = max(r[metric] for r in rows)
    near = [r for r in rows if r[metric] >= top - tie]

    def cost(r: dict[str, Any]) -> tuple[Any, ...]:
        s = r["setting"]
        return (
            s["mode"] != "word",
            r["candidates"],
            not s["nfkc"],
            -s["threshold"],
            s["fp_weight"],
            -r[metric],
        )

    return min(near, key=cost)


# --------------------------------------------------------------------------- reporting


def _lang_cells(row: dict[str, Any]) -> list[Any]:
    cells: list[Any] = []
    for lang in LANGS:
        p = row["langs"][lang]
        cells += [p["precision"], p["recall"], p["f1"]]
    return cells


def _shape(row: dict[str, Any]) -> str:
    return f"{row['langs']['en']['bands']}x{row['langs']['en']['rows']}"


def results_table(rows: Sequence[dict[str, Any]]) -> str:
    header = ["mode", "n", "t", "nfkc", "fp_w", "perm", "b x r", "EN P", "EN R", "EN F1", "ZH P", "ZH R"]
    header += ["ZH F1", "F1", "spec F1", "cand.", "s"]
    body = []
    for r in rows:
        s = r["setting"]
        nfkc = "y" if s["nfkc"] else "n"
        head = [s["mode"], s["n"], s["threshold"], nfkc, s["fp_weight"], s["num_perm"], _shape(r)]
        tail = [r["f1"], r["spec_f1"], r["candidates"], round(r["seconds"], 2)]
        body.append([*head, *_lang_cells(r), *tail])
    return markdown_table(header, body)


def kinds_table(named: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Per-kind recall (positives) and source-match rate (negatives) per language."""
    header = ["kind"] + [f"{name} {lang.upper()}" for name, _ in named for lang in LANGS]
    body = []
    for kind in ALL_KINDS:
        cells: list[Any] = [kind + (" (negative: match rate)" if kind in NEGATIVE_KINDS else "")]
        for _, row in named:
            for lang in LANGS:
                p = row["langs"][lang]
                table = p["source_match"] if kind in NEGATIVE_KINDS else p["kind_recall"]
                cells.append(table.get(kind, float("nan")))
        body.append(cells)
    for label, key in (
        ("precision", "precision"),
        ("recall (all pairs)", "recall"),
        ("F1", "f1"),
        ("false pairs with a negative", "negative_fp_pairs"),
        ("predicted pairs", "predicted_pairs"),
        ("ceiling R (exact J >= t)", "ceiling"),
        ("P(candidate at J=t)", "p_candidate_at_t"),
    ):
        body.append([label] + [row["langs"][lang][key] for _, row in named for lang in LANGS])
    body.append(
        ["LSH b x r"]
        + [
            f"{row['langs'][lang]['bands']}x{row['langs'][lang]['rows']}"
            for _, row in named
            for lang in LANGS
        ]
    )
    return markdown_table(header, body)


def false_pairs(benches: Sequence[Bench], setting: Setting, limit: int) -> str:
    """Up to ``limit`` false pairs (edges) per language of a setting, with the texts' openings."""
    lines = []
    for b in benches:
        res = find_duplicates(b.batch, setting.config())
        found = 0
        for left, right, jac in zip(res.pairs.left, res.pairs.right, res.pairs.jaccard, strict=True):
            x, y = b.records[int(left)], b.records[int(right)]
            if x["group"] == y["group"] or found >= limit:
                continue
            found += 1
            lines.append(f"- {b.lang} J={float(jac):.3f} {x['kind']} {x['id']} / {y['kind']} {y['id']}")
            for rec in (x, y):
                lines.append(f"    {' '.join(rec['text'].split())[:110]!r}")
        wrong = sum(
            1
            for a, c in zip(res.pairs.left, res.pairs.right, strict=True)
            if b.records[int(a)]["group"] != b.records[int(c)]["group"]
        )
        lines.append(f"{b.lang}: {wrong} false edges of {len(res.pairs)}")
    return "\n".join(lines)


def coarse_matrix(rows: Sequence[dict[str, Any]], thresholds: Sequence[float]) -> str:
    """Combined F1 by (mode, n) and threshold, for the coarse stage."""
    cell = {(r["setting"]["mode"], r["setting"]["n"], r["setting"]["threshold"]): r["f1"] for r in rows}
    shapes = sorted({(m, n) for m, n, _ in cell}, key=lambda s: (s[0] != "word", s[1]))
    body = [[f"{m}-{n}"] + [cell.get((m, n, t), float("nan")) for t in thresholds] for m, n in shapes]
    return markdown_table(["shingles"] + [f"t={t}" for t in thresholds], body)


def lsh_table(rows: Iterable[dict[str, Any]], win: Setting) -> str:
    """The chosen shingling at every threshold and fp_weight: LSH shape, the
    probability that a pair right at the threshold becomes a candidate, the
    recall a perfect LSH stage would allow (ceiling) and the recall reached."""
    mine = [
        r
        for r in rows
        if (r["setting"]["mode"], r["setting"]["n"], r["setting"]["nfkc"]) == (win.mode, win.n, win.nfkc)
        and r["setting"]["num_perm"] == win.num_perm
    ]
    mine.sort(key=lambda r: (r["setting"]["threshold"], -r["setting"]["fp_weight"]))
    header = ["t", "fp_w", "b x r", "P(cand. at J=t)", "ceiling R", "R", "P", "F1"]
    body = [
        [
            r["setting"]["threshold"],
            r["setting"]["fp_weight"],
            _shape(r),
            r["langs"]["en"]["p_candidate_at_t"],
            r["ceiling"],
            r["recall"],
            r["precision"],
            r["f1"],
        ]
        for r in mine
    ]
    return markdown_table(header, body)


def perm_table(rows: Iterable[dict[str, Any]], win: Setting) -> str:
    """The chosen shingling and threshold at every num_perm and fp_weight that was run."""
    mine = [
        r
        for r in rows
        if (r["setting"]["mode"], r["setting"]["n"], r["setting"]["threshold"], r["setting"]["nfkc"])
        == (win.mode, win.n, win.threshold, win.nfkc)
    ]
    mine.sort(key=lambda r: (r["setting"]["num_perm"], -r["setting"]["fp_weight"]))
    header = ["num_perm", "fp_w", "b x r", "P(cand. at J=t)", "EN R", "ZH R", "F1", "s"]
    body = [
        [
            r["setting"]["num_perm"],
            r["setting"]["fp_weight"],
            _shape(r),
            r["langs"]["en"]["p_candidate_at_t"],
            r["langs"]["en"]["recall"],
            r["langs"]["zh"]["recall"],
            r["f1"],
            round(r["seconds"], 2),
        ]
        for r in mine
    ]
    return markdown_table(header, body)


def fp_weight_table(
    rows: Iterable[dict[str, Any]], shapes: Sequence[tuple[str, int]], fps: Sequence[float]
) -> str:
    """Mean combined F1 (and seconds) per threshold and fp_weight over ``shapes`` (nfkc on),
    and how often the lowest fp_weight scored below the highest."""
    f1: dict[tuple[float, float], list[float]] = {}
    secs: dict[tuple[float, float], list[float]] = {}
    by_key: dict[tuple[str, int, float, float], float] = {}
    for r in rows:
        s = r["setting"]
        if (s["mode"], s["n"]) in shapes and s["nfkc"] and s["threshold"] in THRESHOLDS:
            f1.setdefault((s["threshold"], s["fp_weight"]), []).append(r["f1"])
            secs.setdefault((s["threshold"], s["fp_weight"]), []).append(r["seconds"])
            by_key[(s["mode"], s["n"], s["threshold"], s["fp_weight"])] = r["f1"]
    thresholds = sorted({t for t, _ in f1})
    body = [
        [t]
        + [statistics.fmean(f1.get((t, fp), [float("nan")])) for fp in fps]
        + [statistics.fmean(secs.get((t, fp), [float("nan")])) for fp in fps]
        for t in thresholds
    ]
    header = ["t"] + [f"F1 fp_w={fp}" for fp in fps] + [f"s fp_w={fp}" for fp in fps]
    lo, hi = min(fps), max(fps)
    worse = [
        (m, n, t)
        for (m, n, t, fp), v in by_key.items()
        if fp == lo and (m, n, t, hi) in by_key and v < by_key[(m, n, t, hi)] - 1e-9
    ]
    note = f"\nfp_weight {lo} scored below {hi} in {len(worse)} of {len(thresholds) * len(shapes)} cases"
    return markdown_table(header, body) + note + (f": {worse}" if worse else "")


def ablation(rows: Iterable[dict[str, Any]], win: Setting) -> list[dict[str, Any]]:
    """The chosen setting with exactly one factor changed (those that were run)."""
    out = []
    for row in rows:
        s = Setting(**row["setting"])
        fields = ("mode", "n", "threshold", "nfkc", "fp_weight", "num_perm")
        if sum(getattr(s, f) != getattr(win, f) for f in fields) == 1:
            out.append(row)
    return sorted(out, key=lambda r: -r["f1"])


def loo_table(rows: Sequence[dict[str, Any]], winner: dict[str, Any], tie: float = TIE) -> str:
    """With each kind left out of the scoring: the best setting then, and whether the
    chosen setting is still within ``tie`` of it."""
    body = []
    for kind in ALL_KINDS:
        metric = f"f1_without_{kind}"
        best = max(rows, key=operator.itemgetter(metric))
        still = "yes" if winner[metric] >= best[metric] - tie else "no"
        body.append([kind, best["label"], best[metric], winner[metric], still])
    header = ["kind left out", "best setting then", "its F1", "chosen setting's F1", f"within {tie}"]
    return markdown_table(header, body)


def best_of_mode(rows: Sequence[dict[str, Any]], mode: str) -> dict[str, Any] | None:
    mine = [r for r in rows if r["setting"]["mode"] == mode]
    return pick_winner(mine) if mine else None


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add(
        "--corpus",
        type=Path,
        default=default_corpus_path(),
        help="gzip JSONL of originals (default: %(default)s)",
    )
    add("--per-lang", type=int, default=2000, help="originals per language (default: %(default)s)")
    add("--variants-per-doc", type=int, default=2, help="variants per chosen original (default: %(default)s)")
    add(
        "--dup-fraction",
        type=float,
        default=0.5,
        help="share of originals given variants (default: %(default)s)",
    )
    add("--seed", type=int, default=0, help="seed of the planted corpus (default: %(default)s)")
    add("--num-perm", type=int, default=128, help="permutations for the sweep (default: %(default)s)")
    add("--shapes", default="", help="only these shingle settings, e.g. word-2,word-5,char-4 (default: all)")
    add("--top-shapes", type=int, default=4, help="(mode, n) refined in stage 2 (default: %(default)s)")
    add("--show-false", type=int, default=10, help="false edges listed per language (default: %(default)s)")
    add("--full", action="store_true", help="sweep the whole grid in one stage (slow)")
    add("--quick", action="store_true", help="a tiny run to check that the script works")
    add("--layers", type=int, choices=(1, 2), default=2, help="band layers of every setting (default: 2)")
    default_out = Path(__file__).resolve().parent / "out" / "quality.json"
    add("--out", type=Path, default=default_out, help="JSON results (default: %(default)s)")
    return ap.parse_args(argv)


def _grid(args: argparse.Namespace) -> tuple[list[int], list[int], tuple[float, ...], tuple[float, ...]]:
    word_ns, char_ns = list(WORD_NS), list(CHAR_NS)
    coarse_t: tuple[float, ...] = COARSE_THRESHOLDS
    fps: tuple[float, ...] = FP_WEIGHTS
    if args.quick:
        args.per_lang = min(args.per_lang, 200)
        word_ns, char_ns, coarse_t, fps = [3, 5], [5], (0.7, 0.8), (0.5,)
        args.top_shapes = min(args.top_shapes, 2)
    if args.shapes:
        wanted = {tuple(x.strip().split("-")) for x in args.shapes.split(",") if x.strip()}
        word_ns = [n for n in word_ns if ("word", str(n)) in wanted]
        char_ns = [n for n in char_ns if ("char", str(n)) in wanted]
    return word_ns, char_ns, coarse_t, fps


def _kinds_cell(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def edge_settings(win: Setting, thresholds: Sequence[float], fps: Sequence[float]) -> list[Setting]:
    """If the best threshold is at the edge of the grid, look a little beyond it."""
    if win.threshold == min(thresholds):
        extra = [round(win.threshold - d, 2) for d in (0.05, 0.1)]
    elif win.threshold == max(thresholds):
        extra = [round(win.threshold + d, 2) for d in (0.05,)]
    else:
        return []
    return [
        Setting(win.mode, win.n, t, win.nfkc, fp, win.num_perm) for t in extra if 0 < t <= 1 for fp in fps
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    word_ns, char_ns, coarse_t, fps = _grid(args)
    thresholds = (0.7, 0.8) if args.quick else THRESHOLDS
    t_start = time.perf_counter()
    benches = build_benches(
        args.corpus,
        per_lang=args.per_lang,
        seed=args.seed,
        variants_per_doc=args.variants_per_doc,
        dup_fraction=args.dup_fraction,
    )
    summary = corpus_summary(benches)
    print("## Benchmark corpus\n")
    corpus_rows = [
        [s["lang"], s["records"], s["originals"], s["true_pairs"], _kinds_cell(s["variants"])]
        for s in summary
    ]
    print(markdown_table(["lang", "records", "originals", "true pairs", "variants"], corpus_rows))

    done: dict[Setting, dict[str, Any]] = {}
    perm = args.num_perm
    shapes_all = [("word", n) for n in word_ns] + [("char", n) for n in char_ns]

    def layered(settings: list[Setting]) -> list[Setting]:
        return [dataclasses.replace(s, layers=args.layers) for s in settings]

    if args.full:
        sweep(benches, layered(fine_grid(shapes_all, thresholds, fps, perm)), done, stage="full")
    else:
        sweep(benches, layered(coarse_grid(word_ns, char_ns, coarse_t, perm)), done, stage="coarse")
        shapes = best_shapes(done.values(), args.top_shapes)
        print(f"refining {shapes}", file=sys.stderr)
        sweep(benches, layered(fine_grid(shapes, thresholds, fps, perm)), done, stage="fine")
    coarse_rows = [r for s, r in done.items() if s.nfkc and s.fp_weight == 0.5 and s.threshold in coarse_t]
    win_setting = Setting(**pick_winner(list(done.values()))["setting"])
    sweep(benches, edge_settings(win_setting, thresholds, fps), done, stage="edge")
    rows = list(done.values())
    winner = pick_winner(rows)
    win_setting = Setting(**winner["setting"])
    spec_winner = pick_winner(rows, metric="spec_f1")

    extra: dict[Setting, dict[str, Any]] = {}
    perms = [p for p in (64, 256) if p != perm]
    perm_settings = [dataclasses.replace(win_setting, num_perm=p, fp_weight=fp) for p in perms for fp in fps]
    sweep(benches, perm_settings, extra, stage="perm")
    seed_setting = Setting("word", 5, 0.8, True, 0.5, num_perm=64, seed=42, layers=1)
    sweep(benches, [seed_setting], extra, stage="seed")
    seed_row = extra[seed_setting]
    best_char = best_of_mode(rows, "char")
    best_word = best_of_mode(rows, "word")
    ranked = sorted(rows, key=lambda r: -r["f1"])

    print("\n## Coarse stage: combined F1 (nfkc on, fp_weight 0.5)\n")
    print(coarse_matrix(coarse_rows, coarse_t))
    print("\n## Top 10 of the sweep (by combined F1)\n")
    print(results_table(ranked[:10]))
    print("\n## Chosen, the seed's settings, the best of each shingle mode\n")
    shown = [winner, seed_row] + [r for r in (best_word, best_char, spec_winner) if r and r is not winner]
    print(results_table(shown))
    print(f"\nchosen: {winner['label']}  (best F1 {ranked[0]['f1']:.4f}; within {TIE}: simpler/cheaper)")
    print(f"seed:   {seed_row['label']}")
    print(f"spec-only winner (without {', '.join(sorted(SPEC_EXCLUDED))}): {spec_winner['label']}")
    print("\n## Per-kind recall (negatives: share matched with their source)\n")
    named = [("chosen", winner), ("seed", seed_row)]
    if best_char and best_char is not winner:
        named.append(("best char", best_char))
    print(kinds_table(named))
    print(f"\n## LSH shape and recall: {win_setting.mode}-{win_setting.n}, nfkc {win_setting.nfkc}\n")
    print(lsh_table(rows, win_setting))
    print(f"\n## num_perm: the chosen setting with 64 / {perm} / 256 permutations and each fp_weight\n")
    print(perm_table([*rows, *extra.values()], win_setting))
    print("\n## fp_weight: mean combined F1 over the refined shingle settings (nfkc on)\n")
    refined = sorted({(r["setting"]["mode"], r["setting"]["n"]) for r in rows if r.get("stage") != "coarse"})
    print(fp_weight_table(rows, refined, fps))
    print(f"\n## False edges of the chosen setting (up to {args.show_false} per language)\n")
    print(false_pairs(benches, win_setting, args.show_false))
    print("\n## Sensitivity: the choice with one kind left out of the benchmark\n")
    print(loo_table(rows, winner))
    print("\n## One factor changed from the chosen setting\n")
    print(results_table([winner, *ablation([*rows, *extra.values()], win_setting)]))
    elapsed = time.perf_counter() - t_start
    print(f"\n{len(rows) + len(extra)} settings x {len(benches)} languages in {elapsed:.0f} s")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "date": dt.date.today().isoformat(),
        "command": " ".join(["python", *sys.argv]),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": machine_info(),
        "corpus": summary,
        "tie": TIE,
        "seconds": elapsed,
        "winner": winner,
        "spec_winner": spec_winner,
        "best_char": best_char,
        "seed_settings": seed_row,
        "extra": list(extra.values()),
        "rows": ranked,
    }
    args.out.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
