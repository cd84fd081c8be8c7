"""The tuning sweep's time on a planted sample: ``neardup.report.tuning.tune`` with the default
grid (10 feature settings x 5 thresholds) over ``--originals`` real documents of the shared
corpus plus their planted variants (``corpus.plant``, every kind, two variants for half of the
originals), labelled by planted group.

The first sweep in the process includes loading (or compiling) the kernels; the warm figure is the
median of ``--rounds`` sweeps after it. Per feature setting: signature and verification seconds,
unique pairs verified; the recommendation and its flags. Writes ``benchmarks/out/tune.json``.

    .venv/bin/python benchmarks/tune.py --originals 1000
    .venv/bin/python benchmarks/tune.py --originals 2000 --write planted.jsonl   # the sample only
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from common import machine_info, markdown_table
from corpus import load_originals, plant
from neardup.report.tuning import command_args, tune


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=None, help="gzip JSONL corpus [default: the shared one]")
    ap.add_argument("--originals", type=int, default=1000, help="originals sampled from the corpus")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample and the planting")
    ap.add_argument("--rounds", type=int, default=3, help="warm sweeps (the median is reported)")
    ap.add_argument("--min-precision", type=float, default=0.9)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "tune.json")
    ap.add_argument(
        "--write",
        type=Path,
        default=None,
        metavar="FILE",
        help="only write the labelled sample (id, text, lang, group, kind, parent) to FILE as JSON Lines",
    )
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    records = plant(load_originals(args.corpus, limit=args.originals, seed=args.seed), seed=args.seed)
    if args.write is not None:  # a corpus that is its own truth file, for neardup tune and eval
        with args.write.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        print(f"wrote {len(records):,} labelled texts to {args.write}")
        return
    texts = [str(r["text"]) for r in records]
    truth = np.unique([str(r["group"]) for r in records], return_inverse=True)[1]
    t0 = time.perf_counter()
    result = tune(texts, truth, min_precision=args.min_precision)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        result = tune(texts, truth, min_precision=args.min_precision)
        warm.append(time.perf_counter() - t0)
    rows = [
        (
            s.shingle,
            s.ngram,
            s.normalisation.name,
            f"{s.signature_seconds:.3f}",
            f"{s.verify_seconds:.3f}",
            s.unique_pairs,
            f"{max(p.pair_f1 for p in s.points):.4f}",
        )
        for s in result.settings
    ]
    print(f"{len(texts)} texts, {result.true_pairs} true pairs, {len(result.points)} points")
    print(f"first sweep {cold:.2f} s; warm median {statistics.median(warm):.2f} s of {args.rounds}")
    print(
        markdown_table(
            ["shingle", "n", "normalisation", "signatures s", "verify s", "unique pairs", "best F1"], rows
        )
    )
    chosen = result.recommended or result.fallback
    print("recommended:" if result.recommended else f"none ({result.reason}); fallback:", end=" ")
    if chosen is not None:
        print(chosen.describe(), f"P {chosen.pair_precision:.4f} R {chosen.pair_recall:.4f}", end=" ")
        print(f"F1 {chosen.pair_f1:.4f}:", " ".join(command_args(chosen)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": machine_info(),
                "texts": len(texts),
                "first_seconds": cold,
                "warm_seconds": warm,
                "result": result.to_dict(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
