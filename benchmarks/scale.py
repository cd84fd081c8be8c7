"""Scale benchmark: the external engine on a generated corpus larger than its memory limit.

Generates ``--n`` English-like documents (``corpus.generate_synthetic``, one call per
``--gen-batch`` rows with its own seed, so the generator never holds the corpus; near-
duplicates are planted within each generated batch) into a Parquet file under
``benchmarks/out/`` (kept and reused), then runs ``neardup.engines.dedup_external`` on it
in a fresh subprocess with ``--memory-limit`` and reports seconds per stage, the peak
resident memory of the whole process (``ru_maxrss``) and the peak seen during each stage
(``/proc/self/statm`` sampled every 0.1 s). ``--compare`` also runs the in-memory
``find_duplicates`` on the whole corpus in another subprocess and checks that both made
exactly the same decisions (clusters, representatives, edges).

``--cli`` measures the command line end to end instead: ``neardup dedup CORPUS -o OUT
--id-column id --memory-limit LIMIT`` in a fresh process (which reads a JSON Lines file in
passes, or streams, when the corpus is estimated larger than the limit), with its wall time,
peak resident memory (``ru_maxrss`` of the process) and the stages' seconds from its
``summary.json``; with ``--compare`` the same command with the limit raised to all of RAM (so
it runs in memory) next to it, and a check that both wrote equal output tables (identical
bytes in JSON Lines). ``--jsonl`` runs it on the corpus as JSON Lines, written next to the
Parquet file.

    .venv/bin/python benchmarks/scale.py --n 1000000 --memory-limit 3GiB
    .venv/bin/python benchmarks/scale.py --n 100000 --memory-limit 300MB --cli --compare
    .venv/bin/python benchmarks/scale.py --n 100000 --memory-limit 1GB --cli --jsonl --compare

Sizes take neardup's units (``GB`` = 10^9 bytes, ``GiB`` = 2^30). Results go to
``benchmarks/out/scale-<n>.json`` (``scale-cli-<n>.json`` with ``--cli``); the work
directory is removed afterwards unless ``--keep-work`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from common import machine_info, markdown_table
from corpus import generate_synthetic
from neardup.sizes import parse_size as _parse_size

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out"


def parse_size(text: str) -> int:
    """``--memory-limit`` as neardup reads it (``3GB``, ``3GiB``, ``800M``, bytes)."""
    try:
        return _parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def generate(path: Path, n: int, *, batch: int, seed: int, dup_fraction: float, words: int) -> None:
    """Write ``n`` synthetic documents to ``path`` a generated batch (one row group) at a time."""
    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("id", pa.string()), ("text", pa.large_string())])
    t0 = time.perf_counter()
    with pq.ParquetWriter(tmp, schema) as writer:
        for b, lo in enumerate(range(0, n, batch)):
            recs = generate_synthetic(
                min(batch, n - lo), dup_fraction=dup_fraction, seed=seed + b, words_per_doc=words
            )
            ids = [f"b{b:05d}-{r['id']}" for r in recs]
            writer.write_table(pa.table({"id": ids, "text": [r["text"] for r in recs]}, schema=schema))
            done = lo + len(recs)
            print(f"\rgenerated {done:,}/{n:,} ({time.perf_counter() - t0:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    os.replace(tmp, path)


def replicate(path: Path, base: Path, copies: int) -> None:
    """Write ``copies`` copies of the corpus ``base`` to ``path``, each copy a corpus of its own.

    Copy ``k > 0`` puts two letters naming ``k`` in front of every word but a document's first
    (``"a cat sat"`` -> ``"a bacat basat"``), so no two copies share a shingle while each keeps
    the base's lengths, word frequencies and planted near-duplicates. Arrow's string kernels
    do it, far faster than generating the documents again.
    """
    import pyarrow.compute as pc

    tmp = path.with_suffix(".tmp")
    letters = "abcdefghijklmnopqrstuvwxyz"
    t0 = time.perf_counter()
    done = 0
    with pq.ParquetWriter(tmp, pq.read_schema(base)) as writer:
        for k in range(copies):
            tag = letters[k // 26 % 26] + letters[k % 26]
            reader = pq.ParquetFile(base, pre_buffer=False, buffer_size=1 << 20)
            for batch in reader.iter_batches(batch_size=50_000):
                ids, text = batch.column("id"), batch.column("text")
                if k:
                    ids = pc.binary_join_element_wise(pa.scalar(f"c{k}-"), ids, "")
                    text = pc.replace_substring(text, " ", " " + tag)
                writer.write_table(pa.table({"id": ids, "text": text}, schema=writer.schema))
                done += len(batch)
                print(f"\rreplicated {done:,} ({time.perf_counter() - t0:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    os.replace(tmp, path)


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Sampler:
    """Peak resident memory per stage, sampled every 0.1 s; the stage comes from progress."""

    def __init__(self) -> None:
        self.stage = "start"
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peaks[self.stage] = max(self.peaks.get(self.stage, 0), _rss())

    def progress(self, name: str, done: int, total: int) -> None:
        self.stage = name

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peaks


def _save_decisions(path: Path, result: Any) -> None:
    import numpy as np

    p = result.pairs
    np.savez(
        path,
        cluster=result.clusters.cluster,
        representative=result.clusters.representative,
        left=p.left,
        right=p.right,
        jaccard=p.jaccard,
        estimated=p.estimated,
    )


def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--compare`` child: ``find_duplicates`` on the whole corpus in memory."""
    from neardup import DedupConfig, find_duplicates
    from neardup.pipeline import arrow_to_batch

    sampler = _Sampler()
    t0 = time.perf_counter()
    sampler.stage = "read"
    batch = arrow_to_batch(pq.read_table(args.corpus, columns=["text"]).column("text"))
    read = time.perf_counter() - t0
    result = find_duplicates(batch, DedupConfig(), progress=sampler.progress)
    wall = time.perf_counter() - t0
    peaks = sampler.stop()
    _save_decisions(args.work_dir.with_name(args.work_dir.name + "-memory.npz"), result)
    return {
        "wall_seconds": round(wall, 2),
        "seconds": {"read": round(read, 2), **{k: round(v, 2) for k, v in result.seconds.items()}},
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_rss_by_stage": peaks,
    }


def run_engine(args: argparse.Namespace) -> dict[str, Any]:
    """The child: run the engine on the Parquet file and report what it took."""
    from neardup import DedupConfig
    from neardup.engines import dedup_external

    def source() -> Any:
        # pre_buffer=False: with pyarrow's default pre-buffering the reader keeps what it read
        # (about 750 MB after 470,000 rows of this corpus); without it the reader stays ~30 MB
        reader = pq.ParquetFile(args.corpus, pre_buffer=False, buffer_size=1 << 20)
        return reader.iter_batches(batch_size=args.read_batch, columns=["text"])

    sampler = _Sampler()
    t0 = time.perf_counter()
    result = dedup_external(
        source,
        DedupConfig(),
        work_dir=args.work_dir,
        memory_limit=args.memory_limit,
        progress=sampler.progress,
        resume=args.resume,
    )
    wall = time.perf_counter() - t0
    peaks = sampler.stop()
    summary = result.summary()
    disk = sum(f.stat().st_size for f in Path(args.work_dir).rglob("*") if f.is_file())
    if args.save:
        _save_decisions(args.work_dir.with_name(args.work_dir.name + "-engine.npz"), result)
    return {
        "n": int(result.clusters.keep.size),
        "memory_limit": args.memory_limit,
        "wall_seconds": round(wall, 2),
        "seconds": {k: round(v, 2) for k, v in result.seconds.items()},
        "ran": list(result.ran),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_rss_by_stage": peaks,
        "work_dir_bytes": disk,
        "load_average": os.getloadavg(),
        "candidate_pairs": summary["candidate_pairs"],
        "edges": summary["edges"],
        "buckets": summary["buckets_with_collisions"],
        "clusters": summary["clusters"],
        "duplicates_removed": summary["duplicates_removed"],
    }


MEASURE = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({
    "returncode": done.returncode,
    "wall_seconds": round(time.perf_counter() - t0, 2),
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    "stdout": done.stdout,
    "stderr": done.stderr[-4000:],
}))
"""


def run_cli(args: argparse.Namespace, out: Path, memory_limit: int) -> dict[str, Any]:
    """``neardup dedup`` on the corpus in a process of its own; wall time, peak RSS, its summary."""
    cmd = [sys.executable, "-m", "neardup.cli", "dedup", str(args.corpus), "-o", str(out)]
    cmd += ["--id-column", "id", "--memory-limit", str(memory_limit), "--json", "-q"]
    if args.work_dir_given:
        cmd += ["--work-dir", str(args.work_dir)]
    measured = _child([sys.executable, "-c", MEASURE, *cmd])
    if measured["returncode"]:
        sys.exit(f"{' '.join(cmd)} failed:\n{measured['stderr']}")
    summary = json.loads(measured["stdout"])
    return {
        "command": " ".join(["neardup", *cmd[3:]]),
        "mode": summary["engine"]["mode"],
        "memory_limit": memory_limit,
        "wall_seconds": measured["wall_seconds"],
        "peak_rss_bytes": measured["peak_rss_bytes"],
        "seconds": summary["seconds"],
        "input_rows": summary["input_rows"],
        "candidate_pairs": summary["candidate_pairs"],
        "clusters": summary["clusters"],
        "duplicates_removed": summary["duplicates_removed"],
    }


def _same_outputs(a: Path, b: Path) -> bool:
    """Both runs wrote the same six tables: equal Parquet tables, or identical bytes."""
    tables = {".parquet", ".jsonl", ".csv"}
    names = sorted(p.name for p in a.iterdir() if p.suffix in tables)
    if len(names) != 6 or names != sorted(p.name for p in b.iterdir() if p.suffix in tables):
        return False
    for name in names:
        if name.endswith(".parquet"):
            if not pq.read_table(a / name).equals(pq.read_table(b / name)):
                return False
        elif not _same_bytes(a / name, b / name):
            return False
    return True


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while chunk := fa.read(1 << 24):
            if chunk != fb.read(1 << 24):
                return False
    return True


def to_jsonl(parquet: Path, jsonl: Path) -> None:
    """The Parquet corpus as JSON Lines (``{"id": ..., "text": ...}`` per line), as neardup
    writes JSON text, a batch at a time."""
    import numpy as np
    import pyarrow.compute as pc

    from neardup.io._jsontext import json_values, text

    tmp = jsonl.with_name(jsonl.name + ".tmp")
    with open(tmp, "wb") as out:
        for batch in pq.ParquetFile(parquet).iter_batches(batch_size=20_000):
            parts: list[Any] = []
            for i, name in enumerate(batch.schema.names):
                parts.append(text(("{" if i == 0 else ", ") + json.dumps(name) + ": "))
                parts.append(pc.fill_null(json_values(batch.column(name)), text("null")))
            lines = pc.binary_join_element_wise(*parts, text("}\n"), text(""))
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset :]
            out.write(memoryview(lines.buffers()[2])[int(offsets[0]) : int(offsets[len(lines)])])
    os.replace(tmp, jsonl)


def main_cli(args: argparse.Namespace) -> None:
    """The ``--cli`` runs: streaming (or whatever the limit picks), and in memory with ``--compare``."""
    from neardup.engines.plan import physical_memory

    out = OUT / f"scale-cli-out-{args.n}"
    res: dict[str, Any] = {"cli": run_cli(args, out, args.memory_limit)}
    if args.compare:
        mem_out = out.with_name(out.name + "-memory")
        res["in_memory"] = run_cli(args, mem_out, physical_memory())
        res["same_as_in_memory"] = _same_outputs(out, mem_out)
        shutil.rmtree(mem_out, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    res["corpus"] = str(args.corpus)
    res["corpus_bytes"] = args.corpus.stat().st_size
    res["command"] = " ".join(["benchmarks/scale.py", *sys.argv[1:]])
    res["machine"] = machine_info()
    path = args.out or OUT / f"scale-cli-{args.n}.json"
    path.write_text(json.dumps(res, indent=1))
    gib = 2**30
    rows = []
    for key in ("cli", "in_memory"):
        if key in res:
            r = res[key]
            stages = ", ".join(f"{k} {v:.1f}" for k, v in r["seconds"].items() if k != "total")
            rows.append(
                [
                    r["mode"],
                    r["memory_limit"] / gib,
                    r["wall_seconds"],
                    round(r["peak_rss_bytes"] / gib, 2),
                    stages,
                ]
            )
    print(markdown_table(["mode", "limit GiB", "wall s", "peak RSS GiB", "stage seconds"], rows))
    if args.compare:
        print(f"\nsame output tables: {res['same_as_in_memory']}")


def _child(cmd: list[str]) -> dict[str, Any]:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _same(work_dir: Path) -> bool:
    import numpy as np

    paths = [work_dir.with_name(work_dir.name + s) for s in ("-engine.npz", "-memory.npz")]
    with np.load(paths[0]) as a, np.load(paths[1]) as b:
        same = all(np.array_equal(a[k], b[k]) for k in a.files)
    for p in paths:
        p.unlink()
    return same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="documents (default 100,000)")
    ap.add_argument("--memory-limit", type=parse_size, default=parse_size("3GiB"), help="e.g. 3GiB (default)")
    ap.add_argument("--words", type=int, default=300, help="mean words per document (default 300)")
    ap.add_argument("--dup-fraction", type=float, default=0.1, help="planted near-duplicates (default 0.1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-batch", type=int, default=50_000, help="documents per generator call")
    ap.add_argument(
        "--replicate",
        type=int,
        default=1,
        help="generate n / R documents and make the corpus of R disjoint copies of them (see replicate())",
    )
    ap.add_argument(
        "--read-batch",
        type=int,
        default=8192,
        help="rows per Parquet read batch (default 8192: the reader's own buffers grow with it)",
    )
    ap.add_argument("--corpus", type=Path, help="Parquet file (default benchmarks/out/synthetic-<n>.parquet)")
    ap.add_argument("--work-dir", type=Path, help="default benchmarks/out/scale-work-<n>")
    ap.add_argument("--keep-work", action="store_true", help="keep the work directory afterwards")
    ap.add_argument("--resume", action="store_true", help="resume the work dir, not start over")
    ap.add_argument("--generate-only", action="store_true", help="write the corpus file and stop")
    ap.add_argument("--compare", action="store_true", help="also run find_duplicates in memory and compare")
    ap.add_argument("--cli", action="store_true", help="run the neardup dedup command end to end instead")
    ap.add_argument("--jsonl", action="store_true", help="--cli on the corpus as JSON Lines, next to it")
    ap.add_argument("--child", choices=("engine", "memory"), help=argparse.SUPPRESS)
    ap.add_argument("--save", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help="JSON results (default benchmarks/out/scale-<n>.json)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    def corpus_path(n: int, copies: int) -> Path:
        rep = f"-x{copies}" if copies > 1 else ""
        return OUT / f"synthetic-{n}-w{args.words}-s{args.seed}{rep}.parquet"

    args.corpus = args.corpus or corpus_path(args.n, args.replicate)
    args.work_dir_given = args.work_dir is not None
    args.work_dir = args.work_dir or OUT / f"scale-work-{args.n}"
    if args.child:
        print(json.dumps(run_engine(args) if args.child == "engine" else run_memory(args)))
        return

    if not args.corpus.exists() and args.replicate > 1:
        if args.n % args.replicate:
            sys.exit(f"--n {args.n} is not a multiple of --replicate {args.replicate}")
        base = corpus_path(args.n // args.replicate, 1)
        if not base.exists():
            generate(
                base,
                args.n // args.replicate,
                batch=args.gen_batch,
                seed=args.seed,
                dup_fraction=args.dup_fraction,
                words=args.words,
            )
        replicate(args.corpus, base, args.replicate)
    if not args.corpus.exists():
        generate(
            args.corpus,
            args.n,
            batch=args.gen_batch,
            seed=args.seed,
            dup_fraction=args.dup_fraction,
            words=args.words,
        )
    if args.jsonl:
        jsonl = args.corpus.with_suffix(".jsonl")
        if not jsonl.exists():
            to_jsonl(args.corpus, jsonl)
        args.corpus = jsonl
    if args.generate_only:
        return
    if args.cli:
        main_cli(args)
        return
    cmd = [sys.executable, __file__, "--n", str(args.n), "--memory-limit", str(args.memory_limit)]
    cmd += ["--corpus", str(args.corpus), "--work-dir", str(args.work_dir)]
    cmd += ["--read-batch", str(args.read_batch)]
    cmd += ["--resume"] if args.resume else []
    cmd += ["--save"] if args.compare else []
    res = _child([*cmd, "--child", "engine"])
    if args.compare:
        res["in_memory"] = _child([*cmd, "--child", "memory"])
        res["same_as_in_memory"] = _same(args.work_dir)
    res["corpus"] = str(args.corpus)
    res["corpus_bytes"] = args.corpus.stat().st_size
    res["command"] = " ".join(["benchmarks/scale.py", *sys.argv[1:]])
    res["machine"] = machine_info()
    if not args.keep_work:
        shutil.rmtree(args.work_dir, ignore_errors=True)
    out = args.out or OUT / f"scale-{args.n}.json"
    out.write_text(json.dumps(res, indent=1))
    gib = 2**30
    peaks = res["peak_rss_by_stage"]
    rows = [[k, res["seconds"].get(k, ""), round(v / gib, 2)] for k, v in peaks.items()]
    print(markdown_table(["stage", "seconds", "peak RSS GiB (sampled)"], rows))
    print(
        f"\n{res['n']:,} documents, memory limit {res['memory_limit'] / gib:.2f} GiB: "
        f"{res['wall_seconds']} s wall, peak RSS {res['peak_rss_bytes'] / gib:.2f} GiB, "
        f"work dir {res['work_dir_bytes'] / gib:.2f} GiB; {res['candidate_pairs']:,} candidates, "
        f"{res['edges']:,} edges, {res['duplicates_removed']:,} duplicates removed"
    )
    if args.compare:
        mem = res["in_memory"]
        print(
            f"in memory (find_duplicates): {mem['wall_seconds']} s wall, "
            f"peak RSS {mem['peak_rss_bytes'] / gib:.2f} GiB, stages {mem['seconds']}; "
            f"same decisions: {res['same_as_in_memory']}"
        )


if __name__ == "__main__":
    main()
