"""``neardup dedup --containment C`` on planted partial copies, against the exact answer.

The corpus of one language is ``benchmarks/containment.py``'s planting put in one list: 400
sources, their excerpts (25%, 50% or 75% of a source), the planted copies (an excerpt inside
other text of 1x to 10x its length) and 2,600 unrelated documents. The exact answer comes from
every pair sharing a shingle (``containment.exact_intersections``, neardup's own shingle sets):
the pairs where the smaller document holds at least C of its shingles in the larger, decided by
neardup's own rule (``assign_contained``: from the largest document down). Figures per language
and C: the contained pairs the run found (its candidate recall), the rows it removes against the
rows the exact answer removes, and seconds (median of ``--rounds``) beside a Jaccard run at
threshold C on the same corpus.

    .venv/bin/python benchmarks/containment_dedup.py [--langs en,zh] [--thresholds 0.5,0.7,0.9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import neardup
from common import machine_info, markdown_table
from containment import exact_intersections, neardup_config, parse_args, plant_lang, sketch
from neardup.config import DedupConfig
from neardup.core.clusters import assign_contained


def truth(
    texts: Sequence[str], config: DedupConfig, threshold: float
) -> tuple[np.ndarray, np.ndarray, set[int], np.ndarray]:
    """The exact answer: (keep mask, representatives, contained pair codes ``inner * n + outer``,
    distinct shingle counts)."""
    sk = sketch(texts, config)
    n = len(texts)
    codes, shared = exact_intersections(sk, sk)
    a, b = codes // n, codes % n
    sizes = sk.sizes
    inner_is_a = (sizes[a] < sizes[b]) | ((sizes[a] == sizes[b]) & (a > b))
    keep = (a != b) & inner_is_a
    inner, outer, shared = a[keep], b[keep], shared[keep]
    held = shared / np.maximum(sizes[inner], 1)
    ok = held >= threshold - 1e-12
    inner, outer, held = inner[ok], outer[ok], held[ok]
    clusters = assign_contained(n, inner, outer, held, sizes)
    return clusters.keep, clusters.representative, set((inner * n + outer).tolist()), sizes


def run(lang: str, args: argparse.Namespace) -> list[dict[str, object]]:
    planted = plant_lang(lang, args)
    texts = planted.sources + planted.excerpts + planted.planted + planted.negatives
    base = neardup_config(lang, args)
    rows = []
    for c in args.thresholds:
        cfg = DedupConfig.create(
            shingle=base.shingle.mode, ngram=base.shingle.n, num_perm=base.minhash.num_perm, containment=c
        )
        jac = DedupConfig.create(shingle=base.shingle.mode, ngram=base.shingle.n, threshold=c)
        keep, rep, pairs, sizes = truth(texts, cfg, c)
        neardup.dedup(texts[:200], cfg)  # compiled kernels loaded before timing
        times, jtimes = [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            result = neardup.dedup(texts, cfg)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            plain = neardup.dedup(texts, jac)
            jtimes.append(time.perf_counter() - t)
        n = len(texts)
        p = result.pairs
        # orient each found pair by the distinct sizes: the smaller row is the one held
        left_inner = (sizes[p.left] < sizes[p.right]) | (
            (sizes[p.left] == sizes[p.right]) & (p.left > p.right)
        )
        small = np.where(left_inner, p.left, p.right)
        large = np.where(left_inner, p.right, p.left)
        found = set((small * n + large).tolist())
        removed_truth = set(np.flatnonzero(~keep).tolist())
        removed = set(np.flatnonzero(~result.keep).tolist())
        removed_jaccard = set(np.flatnonzero(~plain.keep).tolist())
        rows.append(
            {
                "lang": lang,
                "C": c,
                "rows": n,
                "contained pairs": len(pairs),
                "pairs found": len(found & pairs),
                "pair recall": len(found & pairs) / max(1, len(pairs)),
                "rows to remove": len(removed_truth),
                "removed": len(removed),
                "removed as the exact answer": len(removed & removed_truth),
                "same representatives": bool(np.array_equal(result.clusters.representative, rep)),
                "candidates": result.candidate_count,
                "seconds": statistics.median(times),
                "Jaccard run removed (of those)": f"{len(removed_jaccard & removed_truth):,}",
                "Jaccard run seconds": statistics.median(jtimes),
            }
        )
        print(f"{lang} C={c}: {rows[-1]}", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = [row for lang in args.langs for row in run(lang, args)]
    print(markdown_table(["", ""], list(machine_info().items())))
    print()
    print(markdown_table(list(rows[0]), [list(r.values()) for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
