"""Signature throughput and cold start, one source tree against another.

``speed.py`` measures the installed tree on many stages; this script puts two (or
more) source trees side by side on the signature stage alone, in the same session,
so a change to the compiled tokeniser can be judged against the code it replaces:

* warm: ``MinHasher.signatures_with_counts`` on ``--docs`` generated documents of
  ~``--words`` words (``corpus.generate_synthetic``) and on the real shared corpus,
  for each ``--workers`` count (``numba.set_num_threads``), after a warm-up call.
  Every round runs each tree once in a fresh process, trees alternating, and the
  figure is the median of ``--rounds``; every tree must give the same signatures
  and shingle counts (their SHA-256 is compared);
* cold: the first signature call (200 documents) and ``neardup dedup --demo`` in a
  fresh process with an empty ``NUMBA_CACHE_DIR`` (everything compiled), median of
  ``--cold-rounds``.

A tree is ``label=path`` of a checkout; its ``src`` directory goes first on
``PYTHONPATH``. Example (``HEAD`` checked out in ``/tmp/wt-head``)::

    .venv/bin/python benchmarks/signatures.py --tree head=/tmp/wt-head --tree new=.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table
from corpus import default_corpus_path, generate_synthetic

HERE = Path(__file__).resolve()


def encode(texts: Sequence[str], path: Path) -> None:
    """``texts`` as one UTF-8 buffer and its offsets (``TextBatch``'s layout) in ``path``."""
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    np.savez(path, data=np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets=offsets)


def child_warm(path: Path, workers: Sequence[int]) -> None:
    """In a fresh process: one timed signature call per worker count, after a warm-up."""
    import numba

    from neardup.core.minhash import MinHasher
    from neardup.core.text import TextBatch, encode_texts

    with np.load(path) as npz:
        batch = TextBatch(data=npz["data"], offsets=npz["offsets"])
    batch.data.flags.writeable = False  # as encode_texts and Arrow give it: no second compile
    hasher = MinHasher()
    hasher.signatures_with_counts(encode_texts(["warm up"] * 100))
    out: dict[str, Any] = {}
    for w in workers:
        numba.set_num_threads(w)
        t0, c0 = time.perf_counter(), time.process_time()
        sigs, counts = hasher.signatures_with_counts(batch)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        digest = hashlib.sha256(sigs.tobytes() + counts.astype(np.int64).tobytes()).hexdigest()
        out[str(w)] = {"s": seconds, "cpu_s": cpu, "sha256": digest}
    print(json.dumps(out))


def child_cold() -> None:
    """In a fresh process with an empty numba cache: import, then the first call."""
    t0 = time.perf_counter()
    from neardup.core.minhash import MinHasher
    from neardup.core.text import encode_texts

    t_import = time.perf_counter() - t0
    batch = encode_texts([r["text"] for r in generate_synthetic(200, dup_fraction=0.0, seed=1)])
    t1 = time.perf_counter()
    MinHasher().signatures_with_counts(batch)
    print(json.dumps({"import_s": t_import, "first_call_s": time.perf_counter() - t1}))


def run_child(tree: Path, args: list[str], env_extra: dict[str, str] | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), **(env_extra or {})}
    proc = subprocess.run(
        [sys.executable, str(HERE), *args], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode:
        raise SystemExit(f"child {args} in {tree} failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def demo_seconds(tree: Path, cache: str, out_dir: Path) -> float:
    """Wall-clock of ``neardup dedup --demo`` with the numba cache in ``cache``."""
    code = "import sys; from neardup.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "NUMBA_CACHE_DIR": cache}
    cmd = [sys.executable, "-c", code, "dedup", "--demo", "-o", str(out_dir)]
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    return time.perf_counter() - t0


def bench_warm(
    name: str, path: Path, trees: dict[str, Path], args: argparse.Namespace
) -> list[dict[str, Any]]:
    times: dict[tuple[str, int], list[float]] = {(t, w): [] for t in trees for w in args.workers}
    cpu: dict[tuple[str, int], list[float]] = {(t, w): [] for t in trees for w in args.workers}
    digests: set[str] = set()
    labels = list(trees)
    for r in range(args.rounds):
        order = labels if r % 2 == 0 else labels[::-1]
        for label in order:
            res = run_child(
                trees[label], ["--child-warm", str(path), "--workers", ",".join(map(str, args.workers))]
            )
            for w in args.workers:
                times[label, w].append(res[str(w)]["s"])
                cpu[label, w].append(res[str(w)]["cpu_s"])
                digests.add(res[str(w)]["sha256"])
        print(f"  {name}: round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    if len(digests) != 1:
        raise SystemExit(f"{name}: the trees (or worker counts) disagree on the signatures: {digests}")
    docs = len(np.load(path)["offsets"]) - 1
    return [
        {"corpus": name, "docs": docs, "tree": t, "workers": w, "rounds_s": times[t, w],
         "cpu_s": cpu[t, w], "docs_per_s": docs / statistics.median(times[t, w]),
         "docs_per_cpu_s": docs / statistics.median(cpu[t, w])}
        for t in labels for w in args.workers
    ]  # fmt: skip


def bench_cold(trees: dict[str, Path], rounds: int) -> dict[str, dict[str, float]]:
    cold: dict[str, dict[str, list[float]]] = {
        t: {"import_s": [], "first_call_s": [], "demo_s": []} for t in trees
    }
    with tempfile.TemporaryDirectory(prefix="neardup-cold-") as tmp:
        for r in range(rounds):
            for label, tree in trees.items():
                cache = tempfile.mkdtemp(dir=tmp)
                res = run_child(tree, ["--child-cold"], {"NUMBA_CACHE_DIR": cache})
                cold[label]["import_s"].append(res["import_s"])
                cold[label]["first_call_s"].append(res["first_call_s"])
                demo_cache = tempfile.mkdtemp(dir=tmp)
                out = Path(tmp) / f"demo-{label}-{r}"
                cold[label]["demo_s"].append(demo_seconds(tree, demo_cache, out))
            print(f"  cold: round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return {t: {k: statistics.median(v) for k, v in d.items()} for t, d in cold.items()}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add("--tree", action="append", default=[], help="label=path of a checkout (repeat; default: this one)")
    add("--docs", type=int, default=100_000, help="generated documents (default: %(default)s)")
    add("--words", type=int, default=300, help="mean words per generated document (default: %(default)s)")
    add("--corpus", type=Path, default=default_corpus_path(), help="real corpus (default: %(default)s)")
    add("--workers", default="1,2", help="numba thread counts (default: %(default)s)")
    add("--rounds", type=int, default=5, help="warm rounds; the median is shown (default: %(default)s)")
    add("--cold-rounds", type=int, default=3, help="cold rounds (default: %(default)s)")
    add("--no-real", action="store_true", help="skip the real corpus")
    add("--no-cold", action="store_true", help="skip the cold starts")
    add("--out", type=Path, default=HERE.parent / "out" / "signatures.json", help="JSON results")
    add("--child-warm", type=Path, help=argparse.SUPPRESS)
    add("--child-cold", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.workers = [int(w) for w in str(args.workers).split(",") if w]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_warm:
        child_warm(args.child_warm, args.workers)
        return 0
    if args.child_cold:
        child_cold()
        return 0
    trees = {label: Path(p).resolve() for label, _, p in (t.partition("=") for t in args.tree)}
    trees = trees or {"this": HERE.parents[1]}
    info = machine_info()
    print("## Machine\n")
    print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
    print(f"\ntrees: {', '.join(f'{k} = {v}' for k, v in trees.items())}")
    print(f"load average at start: {os.getloadavg()}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="neardup-sig-") as tmp:
        corpora = []
        recs = generate_synthetic(args.docs, dup_fraction=0.1, seed=0, words_per_doc=args.words)
        synth = Path(tmp) / "synthetic.npz"
        encode([r["text"] for r in recs], synth)
        corpora.append((f"synthetic {args.docs:,} x ~{args.words} words", synth))
        if not args.no_real:
            with gzip.open(args.corpus, "rt", encoding="utf-8") as fh:
                texts = [json.loads(line)["text"] for line in fh]
            real = Path(tmp) / "real.npz"
            encode(texts, real)
            corpora.append((f"real corpus ({len(texts):,} docs, en+zh)", real))
        del recs
        for name, path in corpora:
            rows += bench_warm(name, path, trees, args)
    cold = {} if args.no_cold else bench_cold(trees, args.cold_rounds)
    print(f"\n## Warm signatures (median of {args.rounds} rounds; same signatures in every tree)\n")
    base = next(iter(trees))
    ref = {(r["corpus"], r["workers"]): r["docs_per_s"] for r in rows if r["tree"] == base}
    body = [
        [r["corpus"], r["tree"], r["workers"], f"{r['docs_per_s']:,.0f}",
         f"{r['docs_per_s'] / ref[r['corpus'], r['workers']]:.2f}x", f"{r['docs_per_cpu_s']:,.0f}",
         ", ".join(f"{s:.2f}" for s in r["rounds_s"])]
        for r in rows
    ]  # fmt: skip
    header = ["corpus", "tree", "workers", "docs/s", f"vs {base}", "docs per CPU s", "rounds s"]
    print(markdown_table(header, body))
    if cold:
        print(f"\n## Cold start, empty numba cache (median of {args.cold_rounds})\n")
        body = [
            [t, f"{c['import_s']:.2f}", f"{c['first_call_s']:.2f}", f"{c['demo_s']:.1f}"]
            for t, c in cold.items()
        ]
        print(markdown_table(["tree", "import s", "first signature call s", "dedup --demo s"], body))
    print(f"\nload average at end: {os.getloadavg()}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"command": " ".join(["python", *sys.argv]), "machine": info, "rows": rows, "cold": cold}
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
