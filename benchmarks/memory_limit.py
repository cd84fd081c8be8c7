"""Memory limits on a duplicate-heavy corpus: one-word documents, millions of candidate pairs.

Writes ``--rows`` JSON Lines documents of one word each, drawn from ``--vocabulary`` words (so
every word's documents are copies of each other: 1,000,000 rows of 50,000 words make about
10,000,000 candidate pairs from a 34 MB file), then runs ``neardup dedup CORPUS -o OUT
--id-column id --memory-limit LIMIT`` once per limit in a fresh process and reports the mode the
run took (and why it streamed, if it switched), its wall time and its peak resident memory
(``ru_maxrss`` of the child), against the limit.

    .venv/bin/python benchmarks/memory_limit.py --rows 1000000 --vocabulary 50000 \\
        --limits 1GB 2GB 4GB 8GB

Results go to ``benchmarks/out/memory-limit-<rows>.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table
from neardup.sizes import parse_size

OUT = Path(__file__).resolve().parent / "out"
_PEAK = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(code)
"""


def write_corpus(path: Path, rows: int, vocabulary: int, seed: int = 7) -> None:
    """``rows`` one-word documents of ``vocabulary`` words, ids 0..rows-1."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{k:06d}x" for k in range(vocabulary)])
    picks = words[rng.integers(0, vocabulary, rows)]
    with path.open("w", encoding="utf-8") as fh:
        for lo in range(0, rows, 100_000):
            part = picks[lo : lo + 100_000]
            fh.writelines(f'{{"id": {lo + i}, "text": "{w}"}}\n' for i, w in enumerate(part.tolist()))


def run_at(corpus: Path, limit: str, out: Path) -> dict[str, Any]:
    """One ``neardup dedup`` under ``limit``: mode, seconds, peak bytes."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "neardup.cli", "dedup", str(corpus), "-o", str(out)]
    cmd += ["--id-column", "id", "--memory-limit", limit]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    summary = json.loads((out / "summary.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    peak = int(done.stdout.split()[-1])
    return {
        "limit": limit,
        "limit_bytes": parse_size(limit),
        "mode": summary["engine"]["mode"],
        "streamed_because": summary["engine"].get("streamed_because"),
        "seconds": round(seconds, 1),
        "peak_bytes": peak,
        "peak_over_limit": round(peak / parse_size(limit), 3),
        "candidate_pairs": summary["candidate_pairs"],
        "kept_rows": summary["kept_rows"],
    }


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--limits", nargs="+", default=["1GB", "2GB", "4GB", "8GB"])
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    corpus = OUT / f"one-word-{args.rows}-{args.vocabulary}.jsonl"
    if not corpus.exists():
        write_corpus(corpus, args.rows, args.vocabulary)
    results = []
    for limit in args.limits:
        results.append(run_at(corpus, limit, OUT / "memory-limit-run"))
        print(json.dumps(results[-1]), flush=True)
    report = {"machine": machine_info(), "rows": args.rows, "vocabulary": args.vocabulary, "runs": results}
    (OUT / f"memory-limit-{args.rows}.json").write_text(json.dumps(report, indent=2) + "\n")
    rows = [
        [
            r["limit"],
            r["mode"] + (" (switched)" if r["streamed_because"] else ""),
            f"{r['peak_bytes'] / 1e9:.2f} GB",
            f"{r['peak_over_limit']:.2f}",
            r["seconds"],
        ]
        for r in results
    ]
    print(markdown_table(["--memory-limit", "mode", "peak RSS", "peak / limit", "seconds"], rows))
    print(f"{results[0]['candidate_pairs']:,} candidate pairs; {corpus.stat().st_size / 1e6:.0f} MB of input")


if __name__ == "__main__":
    main()
