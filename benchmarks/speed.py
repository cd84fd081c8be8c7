"""Speed benchmark: signatures per second and end-to-end documents per second.

Corpora: generated English-like text (``corpus.generate_synthetic``, default
20,000 and 100,000 documents of ~300 words) and the real shared corpus. For each
corpus and each worker count (``numba.set_num_threads``):

* ``signatures``: ``MinHasher.signatures_with_counts`` on the whole batch, after a
  warm-up call (so JIT compilation is excluded);
* ``find_duplicates``: the whole in-memory pipeline on the batch;
* ``jsonl -> outputs``: read a JSONL file, dedup, build and write the output
  tables (only if ``neardup.io`` and ``neardup.outputs`` are importable).

Each figure is the median of ``--rounds`` rounds. The cold first call (JIT
compile, or loading numba's on-disk cache) is timed in fresh subprocesses.

Run ``python benchmarks/speed.py --help``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import gzip
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import machine_info, markdown_table
from corpus import default_corpus_path, generate_synthetic

REPO = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Corpus:
    name: str
    texts: list[str]
    ids: list[str]

    @property
    def mb(self) -> float:
        return sum(len(t.encode("utf-8")) for t in self.texts) / 1e6


def synthetic(n: int, words: int, seed: int) -> Corpus:
    recs = generate_synthetic(n, dup_fraction=0.1, seed=seed, words_per_doc=words)
    return Corpus(f"synthetic {n:,} x ~{words} words", [r["text"] for r in recs], [r["id"] for r in recs])


def real(path: Path) -> Corpus:
    texts, ids = [], []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            texts.append(d["text"])
            ids.append(d["id"])
    return Corpus(f"real corpus ({len(texts):,} docs, en+zh)", texts, ids)


def median_time(fn: Callable[[], object], rounds: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def make_config(args: argparse.Namespace) -> Any:
    from neardup.config import DedupConfig

    return DedupConfig.create(
        shingle=args.shingle,
        ngram=args.ngram,
        threshold=args.threshold,
        num_perm=args.num_perm,
        fp_weight=args.fp_weight,
    )


def describe(cfg: Any) -> str:
    from neardup.core.params import lsh_shape

    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    return (
        f"{cfg.shingle.mode} {cfg.shingle.n}-grams, num_perm {cfg.minhash.num_perm}, threshold "
        f"{cfg.lsh.threshold}, fp_weight {cfg.lsh.fp_weight} -> {bands} bands x {rows} rows"
    )


# --------------------------------------------------------------------------- cold start


def cold_child(args: argparse.Namespace) -> None:
    """In a fresh process: time the first signature call on a small batch."""
    t0 = time.perf_counter()
    from neardup.core.minhash import MinHasher
    from neardup.core.text import encode_texts

    t_import = time.perf_counter() - t0
    cfg = make_config(args)
    batch = encode_texts([r["text"] for r in generate_synthetic(200, dup_fraction=0.0, seed=1)])
    hasher = MinHasher(cfg.minhash, cfg.text, cfg.shingle)
    t1 = time.perf_counter()
    hasher.signatures_with_counts(batch)
    first = time.perf_counter() - t1
    t2 = time.perf_counter()
    hasher.signatures_with_counts(batch)
    second = time.perf_counter() - t2
    print(json.dumps({"import_s": t_import, "first_call_s": first, "second_call_s": second}))


def cold_start(args: argparse.Namespace) -> dict[str, Any]:
    """First-call times with numba's cache as it is, and with an empty cache dir (full compile)."""
    out: dict[str, Any] = {}
    base = [sys.executable, str(Path(__file__).resolve()), "--cold-child"]
    for flag in ("shingle", "ngram", "threshold", "num_perm", "fp_weight"):
        if getattr(args, flag) is not None:
            base += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    with tempfile.TemporaryDirectory(prefix="neardup-numba-") as empty:
        for label, extra in (("on-disk cache", {}), ("empty cache (compile)", {"NUMBA_CACHE_DIR": empty})):
            env = {**os.environ, **extra}
            proc = subprocess.run(base, capture_output=True, text=True, env=env, check=True)
            out[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


# --------------------------------------------------------------------------- runs


def io_pipeline() -> Callable[[Path, Path, Any], None] | None:
    """read JSONL -> dedup -> write the output tables, if the I/O layer is there."""
    try:
        from neardup.io import OutputDir, ReadOptions, read_corpus
        from neardup.outputs import build_tables
        from neardup.pipeline import arrow_to_batch, find_duplicates
    except ImportError:
        return None

    def run(src: Path, out_dir: Path, cfg: Any) -> None:
        corpus = read_corpus([src], ReadOptions(id_column="id"))
        result = find_duplicates(arrow_to_batch(corpus.table.column(corpus.text_column)), cfg)
        tables = build_tables(corpus.table, corpus.id_column, result)
        with OutputDir(out_dir) as target:
            for name, table in tables.items():
                target.write(name, table, "jsonl")

    return run


def write_jsonl(corpus: Corpus, path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, t in zip(corpus.ids, corpus.texts, strict=True):
            fh.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def bench_corpus(corpus: Corpus, args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Every figure for one corpus, once per worker count."""
    import numba

    from neardup.core.text import encode_texts

    batch = encode_texts(corpus.texts)
    io_run = None if args.no_io else io_pipeline()
    src = workdir / "input.jsonl"
    if io_run is not None:
        write_jsonl(corpus, src)
    rows = []
    for workers in args.workers:
        numba.set_num_threads(workers)
        row = measure(corpus, batch, args, workers=workers)
        if io_run is not None:
            row.update(measure_io(io_run, src, workdir / f"out-{workers}", make_config(args), args.rounds))
            row["io_docs_per_s"] = row["docs"] / row["io_s"]
        rows.append(row)
        io_note = f", jsonl->outputs {row['io_docs_per_s']:,.0f} docs/s" if "io_s" in row else ""
        print(
            f"  {corpus.name}, {workers} worker(s): signatures {row['signatures_docs_per_s']:,.0f} docs/s, "
            f"find_duplicates {row['find_duplicates_docs_per_s']:,.0f} docs/s{io_note}",
            file=sys.stderr,
            flush=True,
        )
    return rows


def measure(corpus: Corpus, batch: Any, args: argparse.Namespace, *, workers: int) -> dict[str, Any]:
    """Warm signatures and the in-memory pipeline, median of ``args.rounds``."""
    from neardup.core.minhash import MinHasher
    from neardup.core.text import encode_texts
    from neardup.pipeline import find_duplicates

    cfg = make_config(args)
    hasher = MinHasher(cfg.minhash, cfg.text, cfg.shingle)
    hasher.signatures_with_counts(encode_texts(corpus.texts[:64]))  # warm-up: JIT excluded
    n = len(corpus.texts)
    sig_s, sig_all = median_time(lambda: hasher.signatures_with_counts(batch), args.rounds)
    # The same documents in a shuffled order: a file sorted by language (long English first,
    # short Chinese last) shows whether the parallel loop balances its threads.
    shuffled = encode_texts(random.Random(0).sample(corpus.texts, n))
    shuf_s, shuf_all = median_time(lambda: hasher.signatures_with_counts(shuffled), args.rounds)
    runs: list[dict[str, float]] = []
    e2e_s, e2e_all = median_time(lambda: runs.append(find_duplicates(batch, cfg).seconds), args.rounds)
    return {
        "corpus": corpus.name,
        "docs": n,
        "mb": round(corpus.mb, 1),
        "workers": workers,
        "signatures_s": sig_s,
        "signatures_docs_per_s": n / sig_s,
        "signatures_mb_per_s": corpus.mb / sig_s,
        "signatures_shuffled_s": shuf_s,
        "signatures_shuffled_docs_per_s": n / shuf_s,
        "find_duplicates_s": e2e_s,
        "find_duplicates_docs_per_s": n / e2e_s,
        "stages_last_round_s": {k: round(v, 3) for k, v in runs[-1].items()},
        "rounds": {"signatures": sig_all, "signatures_shuffled": shuf_all, "find_duplicates": e2e_all},
    }


def measure_io(
    run: Callable[[Path, Path, Any], None], src: Path, out_base: Path, cfg: Any, rounds: int
) -> dict[str, Any]:
    """JSONL in -> dedup -> output tables written, median of ``rounds`` (fresh output dir each)."""
    counter = iter(range(rounds))
    io_s, io_all = median_time(
        lambda: run(src, out_base.with_name(f"{out_base.name}-{next(counter)}"), cfg), rounds
    )
    return {"io_s": io_s, "io_rounds": io_all}


# --------------------------------------------------------------------------- output


def speed_table(rows: Sequence[dict[str, Any]]) -> str:
    header = ["corpus", "docs", "MB", "workers", "signatures docs/s", "signatures MB/s", "shuffled docs/s"]
    header += ["find_duplicates s", "find_duplicates docs/s", "jsonl->outputs s", "jsonl->outputs docs/s"]
    body = []
    for r in rows:
        body.append(
            [
                r["corpus"],
                f"{r['docs']:,}",
                f"{r['mb']:.1f}",
                r["workers"],
                f"{r['signatures_docs_per_s']:,.0f}",
                f"{r['signatures_mb_per_s']:.1f}",
                f"{r['signatures_shuffled_docs_per_s']:,.0f}",
                f"{r['find_duplicates_s']:.2f}",
                f"{r['find_duplicates_docs_per_s']:,.0f}",
                f"{r['io_s']:.2f}" if "io_s" in r else "-",
                f"{r['io_docs_per_s']:,.0f}" if "io_s" in r else "-",
            ]
        )
    return markdown_table(header, body)


def stages_table(rows: Sequence[dict[str, Any]]) -> str:
    names = ["signatures", "buckets", "pairs", "verify", "clusters"]
    body = [
        [r["corpus"], r["workers"]] + [f"{r['stages_last_round_s'].get(s, 0.0):.3f}" for s in names]
        for r in rows
    ]
    return markdown_table(["corpus", "workers", *names], body)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add("--corpus", type=Path, default=default_corpus_path(), help="real corpus (default: %(default)s)")
    add("--sizes", default="20000,100000", help="synthetic corpus sizes (default: %(default)s)")
    add("--words", type=int, default=300, help="mean words per synthetic document (default: %(default)s)")
    add("--workers", default="1,2", help="numba thread counts (default: %(default)s)")
    add("--rounds", type=int, default=3, help="rounds per figure; the median is shown (default: %(default)s)")
    add("--no-real", action="store_true", help="skip the real corpus")
    add("--no-io", action="store_true", help="skip the JSONL -> outputs runs")
    add("--no-cold", action="store_true", help="skip the cold-start subprocesses")
    add("--shingle", choices=("word", "char"), help="shingle mode (default: the library's)")
    add("--ngram", type=int, help="shingle size (default: the library's)")
    add("--threshold", type=float, help="Jaccard threshold (default: the library's)")
    add("--num-perm", type=int, help="permutations (default: the library's)")
    add("--fp-weight", type=float, help="LSH shape weighting (default: the library's)")
    add("--quick", action="store_true", help="tiny sizes and one round, to check the script works")
    default_out = Path(__file__).resolve().parent / "out" / "speed.json"
    add("--out", type=Path, default=default_out, help="JSON results (default: %(default)s)")
    add("--cold-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.workers = [int(w) for w in str(args.workers).split(",") if w]
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s]
    if args.quick:
        args.sizes, args.rounds, args.no_real = [2000], 1, True
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cold_child:
        cold_child(args)
        return 0
    info = machine_info()
    cfg = make_config(args)
    print("## Machine\n")
    print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
    print(f"\nconfig: {describe(cfg)}")
    print(f"load average at start: {os.getloadavg()}")
    cold = {} if args.no_cold else cold_start(args)
    corpora: list[Callable[[], Corpus]] = [
        functools.partial(synthetic, n, args.words, seed=0) for n in args.sizes
    ]
    if not args.no_real:
        corpora.append(functools.partial(real, args.corpus))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="neardup-speed-") as tmp:
        for make in corpora:
            t0 = time.perf_counter()
            corpus = make()
            print(f"built {corpus.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            rows += bench_corpus(corpus, args, Path(tmp))
    if cold:
        print("\n## Cold first call (200 synthetic docs, fresh process)\n")
        body = [
            [k, f"{v['import_s']:.2f}", f"{v['first_call_s']:.2f}", f"{v['second_call_s']:.4f}"]
            for k, v in cold.items()
        ]
        print(markdown_table(["numba cache", "import s", "first call s", "second call s"], body))
    print(f"\n## Throughput (median of {args.rounds})\n")
    print(speed_table(rows))
    print("\n## find_duplicates stages, last round (s)\n")
    print(stages_table(rows))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {peak:,.0f} MB; load average at end: {os.getloadavg()}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "date": dt.date.today().isoformat(),
        "command": " ".join(["python", *sys.argv]),
        "machine": info,
        "config": cfg.to_dict(),
        "cold_start": cold,
        "rows": rows,
        "peak_rss_mb": peak,
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
