"""Many writers and readers on one Redis index, and replacing stored keys in a large one.

    PYTHONPATH=src .venv/bin/python benchmarks/redis_concurrency.py

Two parts, each on a private ``redis-server`` (no persistence, its defaults: ``BUSY`` for other
clients once a script runs 5 s) on a free port, or on ``--redis-url`` (only the run's own prefix
is written there, and deleted at the end):

* ``concurrency``: ``--writers`` processes each run ``neardup index add`` on a JSON Lines file of
  ``--docs`` documents (``--words`` random words from a 20,000-word vocabulary), the first
  ``--shared`` of them the same keys and texts in every file, so the writers replace each other's;
  the index is built first from the shared documents. Meanwhile ``--readers`` processes query
  ``--queries`` shared texts a round (``LSHIndex.query_many``) until the writers are done; a round
  fails if it raises or misses one of the keys, which are always stored. Reported: the writers'
  exit codes, documents added per second over the writers' wall time (their signatures
  included), reader rounds, failed rounds, queries per second and round latency, the final
  count against the distinct keys, whether every key is found by its own text (``--verify``),
  and the server's slowest commands (its slow log from 50 ms).
* ``replace``: an index of ``--build`` documents (random signatures, 128 permutations, the
  default settings) in batches of 50,000 (``insert_signatures``), then ``--readd`` of its keys
  inserted again with new signatures, in batches of 50,000 as ``index add`` does: the seconds each
  took, and the server's slowest command meanwhile; then the seconds of ``move_to`` of that index
  onto an empty prefix and of ``drop`` (each one script).

Run against another neardup tree with ``PYTHONPATH=/that/tree/src``: the figures name the tree.
Writes the figures to ``benchmarks/out/redis_concurrency.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table
from index import RedisTarget, private_redis

PREFIX = "bench-concurrency"

_READER = """
import json, random, sys, time
from pathlib import Path
from neardup.index import LSHIndex
url, shared_file, stop, seed, per_round = sys.argv[1:6]
shared = json.loads(Path(shared_file).read_text())
rng = random.Random(int(seed))
rounds, failures, latencies = 0, [], []
with LSHIndex.open(url) as index:
    index.query_many([shared[0][1]])  # loads the kernels: not a round
    while rounds == 0 or not Path(stop).exists():
        sample = rng.sample(shared, int(per_round))
        started = time.perf_counter()
        try:
            found = index.query_many([text for _, text in sample])
            lost = [key for (key, _), row in zip(sample, found) if key not in {m.key for m in row}]
            if lost:
                failures.append(f"round {rounds}: {len(lost)} stored keys not found, as {lost[0]}")
        except Exception as exc:
            failures.append(f"round {rounds}: {type(exc).__name__}: {exc}"[:300])
        latencies.append(time.perf_counter() - started)
        rounds += 1
print(json.dumps({"rounds": rounds, "failed": len(failures), "first": failures[:3], "latencies": latencies}))
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="concurrency,replace", help="concurrency, replace or both")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--docs", type=int, default=100_000, help="documents per writer")
    parser.add_argument("--shared", type=int, default=10_000, help="of them, keys every writer adds")
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--queries", type=int, default=20, help="texts per reader round")
    parser.add_argument("--verify", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--build", type=int, default=600_000, help="documents of the replace part's index")
    parser.add_argument("--readd", type=int, default=100_000, help="of them, inserted again")
    parser.add_argument("--redis-url", default=None, help="an existing server instead of a private one")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "out" / "redis_concurrency.json")
    return parser.parse_args()


def texts(rng: np.random.Generator, n: int, words: int) -> list[str]:
    vocab = np.array([f"{chr(97 + i % 26)}{i:x}q" for i in range(20_000)], dtype=object)
    picks = rng.integers(0, len(vocab), size=(n, words))
    return [" ".join(row) for row in vocab[picks].tolist()]


def write_jsonl(path: Path, keys: list[str], bodies: list[str]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for key, body in zip(keys, bodies, strict=True):
            fh.write(json.dumps({"id": key, "text": body}) + "\n")
    return path


def slowest(target: RedisTarget, n: int = 5) -> list[tuple[float, str]]:
    """The server's slowest logged commands: (milliseconds, the command's start)."""
    log = target.client.slowlog_get(1000)
    top = sorted(log, key=lambda e: -e["duration"])[:n]
    return [(e["duration"] / 1000, e["command"][:40].decode("latin-1").replace("\n", " ")) for e in top]


def concurrency(args: argparse.Namespace, target: RedisTarget, work: Path) -> dict[str, Any]:
    from neardup.index import LSHIndex

    rng = np.random.default_rng(15)
    url = f"{target.url}?prefix={PREFIX}"
    shared_keys = [f"shared-{j}" for j in range(args.shared)]
    shared_texts = texts(rng, args.shared, args.words)
    (work / "shared.json").write_text(
        json.dumps([list(p) for p in zip(shared_keys, shared_texts, strict=True)])
    )
    files, all_keys, all_texts = [], list(shared_keys), list(shared_texts)
    for i in range(args.writers):
        keys = [f"w{i}-{j}" for j in range(args.docs - args.shared)]
        bodies = texts(rng, len(keys), args.words)
        files.append(write_jsonl(work / f"w{i}.jsonl", shared_keys + keys, shared_texts + bodies))
        all_keys += keys
        all_texts += bodies
    import neardup

    tree = str(Path(neardup.__file__).parents[1])  # the writers and readers run this neardup
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")])}
    cli = [sys.executable, "-c", "from neardup.cli import run; run()"]
    build = [*cli, "index", "build", str(write_jsonl(work / "s.jsonl", shared_keys, shared_texts))]
    subprocess.run([*build, "--index", url, "--id-column", "id", "-q"], env=env, check=True)
    target.client.config_set("slowlog-log-slower-than", 50_000)
    target.client.slowlog_reset()
    stop = work / "stop"
    readers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _READER,
                url,
                str(work / "shared.json"),
                str(stop),
                str(s),
                str(args.queries),
            ],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for s in range(args.readers)
    ]
    time.sleep(1.0)  # the readers under way
    started = time.perf_counter()
    writers = [
        subprocess.Popen(
            [*cli, "index", "add", str(f), "--index", url, "--id-column", "id", "-q"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    codes, errors = [], []
    for w in writers:
        _, err = w.communicate()
        codes.append(w.returncode)
        if w.returncode:
            errors.append(err.strip().splitlines()[-1][:300])
    wall = time.perf_counter() - started
    stop.touch()
    reads = [json.loads(r.communicate()[0]) for r in readers]
    slow = slowest(target)
    latencies = [x for r in reads for x in r["latencies"]]
    rounds = sum(r["rounds"] for r in reads)
    with LSHIndex.open(url) as index:
        count = len(index)
        missing = None
        if args.verify:
            found = index.query_many(all_texts)
            missing = sum(k not in {m.key for m in row} for k, row in zip(all_keys, found, strict=True))
    return {
        "writers": args.writers,
        "docs_per_writer": args.docs,
        "shared_keys": args.shared,
        "writer_exit_codes": codes,
        "writer_errors": errors,
        "wall_s": wall,
        "docs_per_s": args.writers * args.docs / wall,
        "readers": args.readers,
        "reader_rounds": rounds,
        "reader_failed_rounds": sum(r["failed"] for r in reads),
        "reader_first_failures": [f for r in reads for f in r["first"]][:3],
        "queries_per_s": rounds * args.queries / wall,
        "round_ms_p50": 1000 * statistics.median(latencies),
        "round_ms_p99": 1000 * float(np.quantile(latencies, 0.99)),
        "round_ms_max": 1000 * max(latencies),
        "count": count,
        "expected_count": len(all_keys),
        "keys_not_found_by_their_text": missing,
        "slowest_commands_ms": slow,
    }


def replace(args: argparse.Namespace, target: RedisTarget) -> dict[str, Any]:
    from neardup.config import DedupConfig
    from neardup.index import LSHIndex, RedisStorage

    rng = np.random.default_rng(16)
    url = f"{target.url}?prefix={PREFIX}-replace"
    batch = 50_000
    with LSHIndex.open(url, DedupConfig()) as index:
        perm = index.settings.num_perm
        started = time.perf_counter()
        for lo in range(0, args.build, batch):
            part = rng.integers(0, 2**32, size=(min(batch, args.build - lo), perm), dtype=np.uint32)
            index.insert_signatures([f"d{i}" for i in range(lo, lo + len(part))], part)
        built = time.perf_counter() - started
        target.client.config_set("slowlog-log-slower-than", 50_000)
        target.client.slowlog_reset()
        started = time.perf_counter()
        for lo in range(0, args.readd, batch):
            part = rng.integers(0, 2**32, size=(min(batch, args.readd - lo), perm), dtype=np.uint32)
            index.insert_signatures([f"d{i}" for i in range(lo, lo + len(part))], part)
        readded = time.perf_counter() - started
        count = len(index)
        slow = slowest(target)
        moved_to = RedisStorage(f"{target.url}?prefix={PREFIX}-moved")
        storage = index.storage
        assert isinstance(storage, RedisStorage)
        started = time.perf_counter()
        storage.move_to(moved_to)
        moved = time.perf_counter() - started
        started = time.perf_counter()
        moved_to.drop()
        dropped = time.perf_counter() - started
        moved_to.close()
    return {
        "build_docs": args.build,
        "build_s": built,
        "build_docs_per_s": args.build / built,
        "readd_docs": args.readd,
        "readd_s": readded,
        "readd_docs_per_s": args.readd / readded,
        "count_after": count,
        "slowest_commands_ms": slow,
        "move_to_s": moved,
        "drop_s": dropped,
    }


def report(result: dict[str, Any]) -> None:
    if "concurrency" in result:
        c = result["concurrency"]
        print(f"\n## {c['writers']} writers x {c['docs_per_writer']:,} documents, {c['readers']} readers\n")
        rows = [
            ["writers' exit codes", " ".join(map(str, c["writer_exit_codes"]))],
            ["documents added / s (all writers, wall time)", f"{c['docs_per_s']:,.0f} ({c['wall_s']:.1f} s)"],
            ["reader rounds (failed)", f"{c['reader_rounds']:,} ({c['reader_failed_rounds']:,})"],
            ["queries / s (all readers)", f"{c['queries_per_s']:,.0f}"],
            [
                "round latency p50 / p99 / max, ms",
                f"{c['round_ms_p50']:.0f} / {c['round_ms_p99']:.0f} / {c['round_ms_max']:.0f}",
            ],
            ["count / distinct keys", f"{c['count']:,} / {c['expected_count']:,}"],
            ["keys not found by their own text", str(c["keys_not_found_by_their_text"])],
            [
                "slowest server commands, ms",
                ", ".join(f"{ms:.0f}" for ms, _ in c["slowest_commands_ms"]) or "none >= 50",
            ],
        ]
        print(markdown_table(["", ""], rows))
        for line in c["writer_errors"] + c["reader_first_failures"]:
            print(f"- {line}")
    if "replace" in result:
        r = result["replace"]
        print(f"\n## Re-adding {r['readd_docs']:,} stored keys into {r['build_docs']:,}\n")
        rows = [
            ["build", f"{r['build_s']:.1f}", f"{r['build_docs_per_s']:,.0f}"],
            ["re-add", f"{r['readd_s']:.1f}", f"{r['readd_docs_per_s']:,.0f}"],
        ]
        print(markdown_table(["step", "s", "docs/s"], rows))
        slow = ", ".join(f"{ms:.0f}" for ms, _ in r["slowest_commands_ms"]) or "none >= 50"
        print(f"\ncount after: {r['count_after']:,}; slowest server commands while re-adding, ms: {slow}")
        print(f"move_to onto an empty prefix: {r['move_to_s']:.2f} s; drop: {r['drop_s']:.2f} s")


def main() -> int:
    args = parse_args()
    import neardup

    parts = set(args.parts.split(","))
    info = machine_info()
    command = shlex.join(["python", *sys.argv])
    print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
    print(f"\ncommand: `{command}`; neardup from {Path(neardup.__file__).parent}")
    print(f"load average at start: {os.getloadavg()}")
    result: dict[str, Any] = {
        "command": command,
        "machine": info,
        "neardup": str(Path(neardup.__file__).parent),
    }
    with tempfile.TemporaryDirectory(prefix="neardup-redis-bench-") as tmp:
        if args.redis_url:
            import redis

            target = RedisTarget(args.redis_url, redis.Redis.from_url(args.redis_url), private=False)
            result.update(run_parts(args, parts, target, Path(tmp)))
            for key in target.client.scan_iter(match=f"{PREFIX}*", count=10_000):
                target.client.unlink(key)
        else:
            with private_redis(Path(tmp)) as target:
                if target is None:
                    print("no redis-server found: install it or pass --redis-url")
                    return 1
                result.update(run_parts(args, parts, target, Path(tmp)))
    print(f"load average at end: {os.getloadavg()}")
    report(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0


def run_parts(args: argparse.Namespace, parts: set[str], target: RedisTarget, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"redis": target.version()}
    if "concurrency" in parts:
        out["concurrency"] = concurrency(args, target, work)
        if target.private:
            target.client.flushdb()
    if "replace" in parts:
        out["replace"] = replace(args, target)
    return out


if __name__ == "__main__":
    sys.exit(main())
