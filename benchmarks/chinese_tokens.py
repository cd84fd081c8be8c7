"""Chinese: character tokens (the builtin word mode) or jieba's words (``--tokenizer jieba``).

The Chinese part of the quality benchmark (``quality.py``): ``--per-lang`` Chinese originals
from the shared corpus, half of them given two planted variants (``corpus.plant``). Each
setting, builtin word n-grams (a CJK character is one token) for n in ``--char-ns`` and
jieba-word n-grams for n in ``--word-ns`` at each of ``--thresholds``, runs
``find_duplicates`` ``--repeats`` times; it is scored by pairs (precision, recall, F1) and
timed (documents per second, the median run).

Then the speed of the two paths alone on the same texts: ``MinHasher.signatures_with_counts``
(signatures per second, median of ``--repeats``), and jieba's segmentation by itself, which is
what the jieba path adds.

    PYTHONPATH=src python benchmarks/chinese_tokens.py            # Markdown to stdout
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import machine_info, markdown_table
from corpus import default_corpus_path, load_originals, pair_scores, plant, true_pairs
from neardup.config import DedupConfig, Tokenizer
from neardup.core.minhash import MinHasher
from neardup.core.text import decode_texts, encode_texts
from neardup.pipeline import find_duplicates
from neardup.segmentation import jieba_tokenizer, segment_jieba


def planted_corpus(path: Path, per_lang: int, seed: int) -> list[dict[str, Any]]:
    """The Chinese records of ``quality.build_benches`` (same originals, donors and variants)."""
    pool = load_originals(path, lang="zh", limit=per_lang + per_lang // 4, seed=seed)
    random.Random(seed).shuffle(pool)
    originals, donors = pool[:per_lang], pool[per_lang:]
    return plant(originals, seed=seed, variants_per_doc=2, dup_fraction=0.5, donors=donors)


def median_seconds(fn: Any, repeats: int) -> tuple[float, Any]:
    """The median wall time of ``repeats`` calls of ``fn``, and the last call's result."""
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def quality_row(
    records: list[dict[str, Any]], tokenizer: Tokenizer, n: int, threshold: float, repeats: int
) -> dict[str, Any]:
    batch = encode_texts([r["text"] for r in records])
    config = DedupConfig.create(ngram=n, threshold=threshold, tokenizer=tokenizer)
    seconds, res = median_seconds(lambda: find_duplicates(batch, config), repeats)
    scores = pair_scores(records, res.clusters.cluster)
    return {
        "tokens": "jieba words" if tokenizer == "jieba" else "characters",
        "n": n,
        "threshold": threshold,
        "precision": scores.precision,
        "recall": scores.recall,
        "f1": scores.f1,
        "docs_per_s": len(records) / seconds,
        "seconds": seconds,
    }


def speed_rows(records: list[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    """Signatures per second of each path on the same texts, and jieba's segmentation alone."""
    batch = encode_texts([r["text"] for r in records])
    chars = sum(len(r["text"]) for r in records)
    rows = []
    for label, tokenizer, n in (("builtin, characters", "builtin", 2), ("jieba words", "jieba", 2)):
        hasher = MinHasher(shingle=DedupConfig.create(ngram=n, tokenizer=tokenizer).shingle)  # type: ignore[arg-type]
        hasher.signatures_with_counts(batch)  # compiled, and jieba's dictionary loaded
        seconds, _ = median_seconds(lambda h=hasher: h.signatures_with_counts(batch), repeats)
        rows.append({"path": f"signatures, {label} (n={n})", "seconds": seconds})
    texts = decode_texts(batch)
    seconds, _ = median_seconds(lambda: segment_jieba(texts), repeats)
    rows.append({"path": "jieba.cut alone (segment_jieba)", "seconds": seconds})
    for row in rows:
        row["docs_per_s"] = len(records) / row["seconds"]
        row["chars_per_s"] = chars / row["seconds"]
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=default_corpus_path())
    ap.add_argument("--per-lang", type=int, default=2000, help="Chinese originals (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--char-ns", default="2,3,4,5,6", help="n of character tokens (default: %(default)s)")
    ap.add_argument("--word-ns", default="1,2,3,4,5", help="n of jieba words (default: %(default)s)")
    ap.add_argument("--thresholds", default="0.5,0.6,0.7,0.8,0.9", help="(default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting, median time (default: 3)")
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "out" / "chinese_tokens.json"
    )
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M")
    records = planted_corpus(args.corpus, args.per_lang, args.seed)
    chars = sum(len(r["text"]) for r in records)
    print(f"{len(records)} Chinese records ({chars:,} characters), {len(true_pairs(records))} true pairs")
    t0 = time.perf_counter()
    jieba_tokenizer()
    print(f"jieba's dictionary loaded in {time.perf_counter() - t0:.2f} s (once a process)\n")
    thresholds = [float(t) for t in args.thresholds.split(",")]
    grid: list[tuple[Tokenizer, int]] = [("builtin", int(n)) for n in args.char_ns.split(",")]
    grid += [("jieba", int(n)) for n in args.word_ns.split(",")]
    find_duplicates(encode_texts(["warm up", "warm up"]))  # compile outside the timings
    rows = []
    for tokenizer, n in grid:
        for t in thresholds:
            row = quality_row(records, tokenizer, n, t, args.repeats)
            rows.append(row)
            print(f"{row['tokens']} n={n} t={t}: F1 {row['f1']:.4f}", file=sys.stderr)
    cells = [
        [r["tokens"], r["n"], r["threshold"], f"{r['precision']:.4f}", f"{r['recall']:.4f}", f"{r['f1']:.4f}",
         f"{r['docs_per_s']:,.0f}"]
        for r in rows
    ]  # fmt: skip
    print(markdown_table(["tokens", "n", "threshold", "precision", "recall", "F1", "docs/s"], cells))
    print()
    for label in ("characters", "jieba words"):
        best = max((r for r in rows if r["tokens"] == label), key=lambda r: r["f1"])
        print(f"best with {label}: n={best['n']} t={best['threshold']} F1 {best['f1']:.4f}")
    speed = speed_rows(records, args.repeats)
    print()
    print(
        markdown_table(
            ["path", "seconds", "docs/s", "characters/s"],
            [
                [s["path"], f"{s['seconds']:.3f}", f"{s['docs_per_s']:,.0f}", f"{s['chars_per_s']:,.0f}"]
                for s in speed
            ],
        )
    )
    print(f"\njieba signatures are {speed[1]['seconds'] / speed[0]['seconds']:.1f}x slower than builtin")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "started": started,
        "machine": machine_info(),
        "records": len(records),
        "quality": rows,
        "speed": speed,
    }
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
