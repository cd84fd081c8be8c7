"""neardup.compat against datasketch on the calls a datasketch user makes: MinHash.bulk, then
MinHashLSH insert and query, over the same token sets.

    .venv/bin/python benchmarks/compat.py --sets 20000 --tokens 100 --repeat 3

Prints a Markdown table of median seconds per step and the ratio, and writes the raw figures to
benchmarks/out/compat.json. Needs the bench extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table

STEPS = ("bulk", "insert", "query")


def token_sets(n: int, tokens: int, seed: int = 0) -> list[list[bytes]]:
    """``n`` sets of ``tokens`` words from a 5,000-word vocabulary; every other set a near copy of
    the one before it (a tenth of its words replaced), so queries find something."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}".encode() for i in range(5000)]
    out: list[list[bytes]] = []
    for i in range(n):
        if i % 2 and out:
            words = list(out[-1])
            for j in rng.choice(tokens, size=tokens // 10, replace=False):
                words[j] = vocab[int(rng.integers(5000))]
        else:
            words = [vocab[int(k)] for k in rng.integers(0, 5000, size=tokens)]
        out.append(words)
    return out


def run(module: Any, sets: list[list[bytes]], num_perm: int) -> dict[str, float]:
    """Seconds of each step with ``module``'s MinHash and MinHashLSH."""
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    hashes = module.MinHash.bulk(sets, num_perm=num_perm)
    seconds["bulk"] = time.perf_counter() - t0
    lsh = module.MinHashLSH(threshold=0.5, num_perm=num_perm)
    t0 = time.perf_counter()
    with lsh.insertion_session() as session:
        for i, m in enumerate(hashes):
            session.insert(f"k{i}", m)
    seconds["insert"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = sum(len(lsh.query(m)) for m in hashes)
    seconds["query"] = time.perf_counter() - t0
    seconds["found"] = found
    return seconds


def medians(fn: Callable[[], dict[str, float]], repeat: int) -> dict[str, float]:
    runs = [fn() for _ in range(repeat)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", type=int, default=20_000)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--num-perm", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import datasketch

    import neardup.compat

    sets = token_sets(args.sets, args.tokens)
    run(neardup.compat, sets[:100], args.num_perm)  # load the kernels
    ours = medians(lambda: run(neardup.compat, sets, args.num_perm), args.repeat)
    theirs = medians(lambda: run(datasketch, sets, args.num_perm), args.repeat)
    rows = [
        (step, f"{ours[step]:.3f}", f"{theirs[step]:.3f}", f"{theirs[step] / ours[step]:.1f}x")
        for step in STEPS
    ]
    rows.append(("query results", f"{ours['found']:,.0f}", f"{theirs['found']:,.0f}", ""))
    print(f"{args.sets:,} sets x {args.tokens} tokens, {args.num_perm} permutations, median of {args.repeat}")
    print(
        markdown_table(("step", "neardup.compat s", f"datasketch {datasketch.__version__} s", "ratio"), rows)
    )
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    record = {"machine": machine_info(), "args": vars(args), "neardup": ours, "datasketch": theirs}
    (out / "compat.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
