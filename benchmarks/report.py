"""Report benchmark: ``neardup report`` on the output folder of a run of ``--n`` documents.

Generates the synthetic corpus of ``benchmarks/scale.py`` (Parquet under ``benchmarks/out/``, kept
and reused), runs ``neardup dedup CORPUS -o OUT --id-column id -q`` once, then ``neardup report
OUT -o PAGE`` ``--repeat`` times, each a process of its own, and records the wall seconds, the
peak resident memory (psutil, sampled every 0.05 s) and the page's size. The page must stay under
about 20 MB whatever ``--n`` is.

    .venv/bin/python benchmarks/report.py --n 100000 --repeat 3
    .venv/bin/python benchmarks/report.py --n 1000000 --repeat 3

Results go to ``benchmarks/out/report-<n>.json``; a Markdown table for RESULTS.md is printed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from common import machine_info, markdown_table
from scale import generate

OUT = Path(__file__).resolve().parent / "out"
NEARDUP = str(Path(sys.executable).with_name("neardup"))


def timed(command: list[str]) -> dict[str, float]:
    """Wall seconds and peak RSS (MB) of one command."""
    start = time.perf_counter()
    proc = psutil.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr.read().decode() if proc.stderr else ''}")
    return {"seconds": seconds, "peak_rss_mb": peak / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    corpus = OUT / f"scale-{args.n}.parquet"
    if not corpus.exists():
        generate(corpus, args.n, batch=50_000, seed=args.seed, dup_fraction=0.3, words=200)
    out = OUT / f"report-out-{args.n}"
    shutil.rmtree(out, ignore_errors=True)
    dedup = timed([NEARDUP, "dedup", str(corpus), "-o", str(out), "--id-column", "id", "-q"])
    page = out / "report.html"
    runs = [timed([NEARDUP, "report", str(out), "-o", str(page), "-q"]) for _ in range(args.repeat)]
    summary = json.loads((out / "summary.json").read_text())
    result: dict[str, Any] = {
        "machine": machine_info(),
        "n": args.n,
        "candidate_pairs": summary["candidate_pairs"],
        "clusters": summary["clusters"],
        "dedup_seconds": dedup["seconds"],
        "report_seconds": [r["seconds"] for r in runs],
        "report_seconds_median": statistics.median(r["seconds"] for r in runs),
        "report_peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "dedup_peak_rss_mb": dedup["peak_rss_mb"],
        "page_mb": page.stat().st_size / 1e6,
    }
    (OUT / f"report-{args.n}.json").write_text(json.dumps(result, indent=2))
    print(
        markdown_table(
            ["documents", "candidate pairs", "dedup s", "report s (median)", "report peak RSS MB", "page MB"],
            [
                [
                    f"{args.n:,}",
                    f"{result['candidate_pairs']:,}",
                    f"{result['dedup_seconds']:.1f}",
                    f"{result['report_seconds_median']:.1f}",
                    f"{result['report_peak_rss_mb']:.0f}",
                    f"{result['page_mb']:.1f}",
                ]
            ],
        )
    )
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
