"""How far each engine's MinHash estimate strays from the exact Jaccard, near the threshold.

Two documents at exact Jaccard J agree in a share of signature positions whose spread
decides how many true pairs just above the threshold an LSH stage misses. Independent
permutations give a binomial spread, ``sqrt(J (1 - J) / num_perm)``; a sketch whose
positions are negatively dependent (each element wins few positions, so the positions'
minima come from different elements, as in sampling without replacement) spreads less.

* random sets: pairs of sets of random 64-bit values with exact Jaccard 0.8, at several
  union sizes; neardup's ``signature_of_hashes`` (both sketches), rensa's
  ``RMinHash.digest_matrix_from_token_hash_sets`` and datasketch's ``MinHash.bulk`` (on the
  values' decimal strings). Printed: the mean and standard deviation of (estimate - J), the
  binomial figure, and the share of pairs that share an LSH band at neardup's shape.
* the duplicate-heavy corpus of ``compare.py``: every planted (parent, variant) pair whose
  exact Jaccard of word 5-gram shingles is within ``--window`` of the threshold, sketched by
  each engine as ``compare.py`` runs it (neardup from the text, the others from the shingle
  strings), for each seed.

Run from the repository root (about two minutes)::

    .venv/bin/python benchmarks/sketch_variance.py
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import compare
from common import markdown_table

Sketcher = Callable[[list[list[str]], list[np.ndarray], list[str]], np.ndarray]
"""(shingle strings, shingle hashes, texts) of some documents -> signatures, one row each."""


def neardup_from_hashes(num_perm: int, seed: int, sketch: str = "stratified") -> Sketcher:
    from neardup.config import MinHashConfig
    from neardup.core.minhash import permutations, signature_of_hashes

    a, b = permutations(MinHashConfig(num_perm=num_perm, seed=seed))
    stratified = sketch == "stratified"

    def sketch_all(_s: list[list[str]], hashes: list[np.ndarray], _t: list[str]) -> np.ndarray:
        return np.array([signature_of_hashes(h, a, b, stratified=stratified) for h in hashes])

    return sketch_all


def neardup_from_texts(num_perm: int, seed: int, ngram: int, sketch: str = "stratified") -> Sketcher:
    from neardup.config import MinHashConfig, ShingleConfig
    from neardup.core.minhash import MinHasher

    config = MinHashConfig(num_perm=num_perm, seed=seed, sketch=sketch)  # type: ignore[arg-type]
    hasher = MinHasher(config, shingle=ShingleConfig(n=ngram))
    return lambda _s, _h, texts: hasher.signatures(texts)


def rensa_from_hashes(num_perm: int, seed: int) -> Sketcher:
    from rensa import RMinHash

    def sketch(_s: list[list[str]], hashes: list[np.ndarray], _t: list[str]) -> np.ndarray:
        sets = [[int(v) for v in h] for h in hashes]
        return np.array(RMinHash.digest_matrix_from_token_hash_sets(sets, num_perm, seed).to_rows())

    return sketch


def rensa_from_strings(num_perm: int, seed: int) -> Sketcher:
    from rensa import RMinHash

    def sketch(strings: list[list[str]], _h: list[np.ndarray], _t: list[str]) -> np.ndarray:
        return np.array([m.digest() for m in RMinHash.from_token_sets(strings, num_perm, seed)])

    return sketch


def datasketch_from_strings(num_perm: int, seed: int) -> Sketcher:
    from datasketch import MinHash

    def sketch(strings: list[list[str]], _h: list[np.ndarray], _t: list[str]) -> np.ndarray:
        encoded = ([s.encode("utf-8") for s in lst] for lst in strings)
        return np.array([m.hashvalues for m in MinHash.bulk(encoded, num_perm=num_perm, seed=seed)])

    return sketch


def spread(left: np.ndarray, right: np.ndarray, exact: np.ndarray, bands: int, rows: int) -> dict[str, float]:
    """Mean and standard deviation of (estimate - exact), and the share of pairs in a shared band."""
    same = left == right
    deviation = same.mean(axis=1) - exact
    banded = same[:, : bands * rows].reshape(len(exact), bands, rows).all(axis=2).any(axis=1)
    return {"mean": float(deviation.mean()), "sd": float(deviation.std()), "candidates": float(banded.mean())}


def random_pairs(
    rng: np.random.Generator, union: int, jaccard: float, count: int
) -> tuple[list[np.ndarray], ...]:
    """``count`` pairs of random-value sets with ``union`` values in all and the given Jaccard."""
    inter = round(jaccard * union)
    only = (union - inter) // 2
    left, right = [], []
    for _ in range(count):
        xs = rng.integers(0, 2**63, inter + 2 * only, dtype=np.uint64)
        left.append(xs[: inter + only])
        right.append(np.concatenate([xs[:inter], xs[inter + only :]]))
    return left, right


def random_table(args: argparse.Namespace, engines: dict[str, Sketcher], bands: int, rows: int) -> str:
    rng = np.random.default_rng(0)
    body = []
    for union in args.unions:
        left, right = random_pairs(rng, union, args.threshold, args.pairs)
        exact = np.full(args.pairs, (left[0].size + right[0].size - union) / union)
        binomial = math.sqrt(exact[0] * (1 - exact[0]) / args.num_perm)
        strings_l = [[str(v) for v in h] for h in left]
        strings_r = [[str(v) for v in h] for h in right]
        for name, sketch in engines.items():
            got = spread(sketch(strings_l, left, []), sketch(strings_r, right, []), exact, bands, rows)
            body.append(
                [
                    union,
                    name,
                    f"{got['mean']:+.4f}",
                    f"{got['sd']:.4f}",
                    f"{binomial:.4f}",
                    f"{got['candidates']:.3f}",
                ]
            )
    header = ["union size", "engine", "mean (estimate - J)", "sd", "binomial sd", "share in a shared band"]
    return markdown_table(header, body)


def corpus_table(args: argparse.Namespace, bands: int, rows: int) -> str:
    records = compare.duplicate_heavy_records(args.docs, seed=0, path=args.corpus_file)
    texts = [r["text"] for r in records]
    index = {r["id"]: i for i, r in enumerate(records)}
    pairs = [(index[r["parent"]], i) for i, r in enumerate(records) if r.get("parent") in index]
    docs = sorted({d for pair in pairs for d in pair})
    strings = {d: compare.shingles(texts[d], "word", args.ngram) for d in docs}
    hashes = {d: compare.hash_set(strings[d]) for d in docs}
    near = []
    for a, b in pairs:
        j = compare.jaccard(hashes[a], hashes[b])
        if abs(j - args.threshold) <= args.window:
            near.append((a, b, j))
    need = sorted({d for a, b, _ in near for d in (a, b)})
    row_of = {d: k for k, d in enumerate(need)}
    exact = np.array([j for _, _, j in near])
    left = [row_of[a] for a, _, _ in near]
    right = [row_of[b] for _, b, _ in near]
    print(f"duplicate-heavy: {len(near):,} planted pairs at exact Jaccard {args.threshold} +- {args.window}")
    makers: dict[str, Callable[[int], Sketcher]] = {
        "neardup": lambda seed: neardup_from_texts(args.num_perm, seed, args.ngram),
        "neardup classic": lambda seed: neardup_from_texts(args.num_perm, seed, args.ngram, "classic"),
        "rensa": lambda seed: rensa_from_strings(args.num_perm, seed),
        "datasketch": lambda seed: datasketch_from_strings(args.num_perm, seed),
    }
    body = []
    for name, make in makers.items():
        found = []
        for seed in args.seeds:
            sketch = make(seed)
            sigs = sketch([strings[d] for d in need], [hashes[d] for d in need], [texts[d] for d in need])
            found.append(spread(sigs[left], sigs[right], exact, bands, rows))
        body.append(
            [
                name,
                len(args.seeds),
                f"{statistics.median(f['mean'] for f in found):+.4f}",
                f"{statistics.median(f['sd'] for f in found):.4f}",
                f"{min(f['candidates'] for f in found):.4f}-{max(f['candidates'] for f in found):.4f}",
            ]
        )
    header = ["engine", "seeds", "median mean (estimate - J)", "median sd", "share in a shared band"]
    return markdown_table(header, body)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-perm", type=int, default=128)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--ngram", type=int, default=5)
    parser.add_argument("--unions", type=int, nargs="+", default=[50, 130, 300, 1000])
    parser.add_argument("--pairs", type=int, default=1000, help="random pairs per union size")
    parser.add_argument("--docs", type=int, default=95_000, help="duplicate-heavy corpus rows")
    parser.add_argument("--window", type=float, default=0.1, help="pairs this near the threshold")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2, 3])
    parser.add_argument("--corpus-file", type=Path, default=compare.parse_args([]).corpus_file)
    parser.add_argument("--no-corpus", action="store_true", help="random sets only")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from neardup.config import DedupConfig
    from neardup.core.params import lsh_shape

    args = parse_args(argv)
    cfg = DedupConfig.create(  # one band layer: the band shape the engines compared here share
        shingle="word", ngram=args.ngram, num_perm=args.num_perm, threshold=args.threshold, layers=1
    )
    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    print(f"{args.num_perm} permutations, threshold {args.threshold}, LSH {bands} bands x {rows} rows\n")
    engines = {
        "neardup": neardup_from_hashes(args.num_perm, 42),
        "neardup classic": neardup_from_hashes(args.num_perm, 42, "classic"),
        "rensa": rensa_from_hashes(args.num_perm, 42),
        "datasketch": datasketch_from_strings(args.num_perm, 42),
    }
    print(random_table(args, engines, bands, rows))
    if not args.no_corpus:
        print()
        print(corpus_table(args, bands, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
