"""``backup_index`` along each route, at two batch sizes: seconds and documents per second.

    .venv/bin/python benchmarks/backup.py --docs 100000 --redis redis://127.0.0.1:6379/0

The source indexes hold ``--docs`` random signatures (128 permutations, the default settings,
no shingles), built once in an SQLite file and under a Redis prefix of the run's own (deleted
at the end). Prints a Markdown table and writes the figures to benchmarks/out/backup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import neardup.index.backup as backup
from common import machine_info, markdown_table
from neardup.config import DedupConfig
from neardup.index import LSHIndex


def build(url: str, sigs: np.ndarray) -> float:
    """An index of ``sigs`` at ``url``; the seconds it took."""
    started = time.perf_counter()
    with LSHIndex.open(url, DedupConfig()) as index:
        for lo in range(0, len(sigs), 50_000):
            part = sigs[lo : lo + 50_000]
            index.insert_signatures([f"d{i}" for i in range(lo, lo + len(part))], part)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--redis", required=True, help="redis://host:port/db of a server to use")
    parser.add_argument("--batches", default="10000,50000", help="batch sizes of the copy routes")
    args = parser.parse_args()
    sigs = np.random.default_rng(0).integers(0, 2**32, size=(args.docs, 128), dtype=np.uint32)
    prefix = f"bench-backup-{os.getpid()}"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        src_file, src_redis = str(Path(folder) / "src.db"), f"{args.redis}?prefix={prefix}"
        print(f"built SQLite in {build(src_file, sigs):.1f} s, Redis in {build(src_redis, sigs):.1f} s")
        routes = [
            ("SQLite -> SQLite", src_file, str(Path(folder) / "copy.db")),
            ("SQLite -> Redis", src_file, f"{args.redis}?prefix={prefix}-copy"),
            ("Redis -> SQLite", src_redis, str(Path(folder) / "copy.db")),
            ("Redis -> Redis", src_redis, f"{args.redis}?prefix={prefix}-copy"),
        ]
        for batch in [int(b) for b in args.batches.split(",")]:
            backup._BATCH = batch
            for name, src, dest in routes:
                figures = backup.backup_index(src, dest, replace=True)
                rows.append(
                    {
                        "route": name,
                        "method": figures["method"],
                        "batch": "-" if figures["method"] == "sqlite backup" else f"{batch:,}",
                        "documents": figures["documents"],
                        "seconds": figures["seconds"],
                        "docs_per_s": round(figures["documents"] / figures["seconds"]),
                    }
                )
                print(rows[-1])
        import redis

        client = redis.Redis.from_url(args.redis)
        for pattern in (f"{prefix}:*", f"{prefix}-copy:*"):
            keys = list(client.scan_iter(match=pattern, count=10_000))
            for lo in range(0, len(keys), 10_000):
                client.delete(*keys[lo : lo + 10_000])
        client.close()
    unique = {(r["route"], r["batch"]): r for r in rows}  # the SQLite backup once, not per batch
    header = ["route", "method", "batch", "documents", "seconds", "docs_per_s"]
    print(markdown_table(header, [[r[h] for h in header] for r in unique.values()]))
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "backup.json").write_text(json.dumps({"machine": machine_info(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
