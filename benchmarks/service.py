"""``neardup serve`` under load: checks per second and latency percentiles at 1, 8, 32 and 128
concurrent clients, single texts and batches of 100, on SQLite and Redis; beside it, the same
queries in-process (neardup's index, the ceiling the HTTP layer costs against; datasketch's
MinHashLSH on Redis, the anchor).

    .venv/bin/python benchmarks/service.py --documents 1000000 --seconds 10

Builds the indexes under benchmarks/out/service/ (reused when their size matches), starts its
own redis-server unless --redis-url is given, runs a bounded asyncio load generator on this
machine, and prints Markdown tables; raw figures go to benchmarks/out/service.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table

OUT = Path(__file__).parent / "out"
NEARDUP = str(Path(sys.executable).with_name("neardup"))
WORDS = 40


def vocabulary(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([f"w{i:x}" for i in rng.permutation(50_000)], dtype=object)


def documents(n: int, seed: int = 1) -> list[str]:
    """``n`` texts of :data:`WORDS` words drawn from a 50,000-word vocabulary."""
    vocab = vocabulary()
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for lo in range(0, n, 100_000):
        words = vocab[rng.integers(0, vocab.size, size=(min(100_000, n - lo), WORDS))]
        out.extend(" ".join(row) for row in words.tolist())
    return out


def queries(docs: list[str], n: int, seed: int = 2) -> list[str]:
    """Half near copies of indexed texts (two words changed), half texts of their own."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary()
    fresh = documents(n // 2, seed=seed + 1)
    copies = []
    for i in rng.integers(0, len(docs), size=n - n // 2).tolist():
        words = docs[i].split()
        for j in rng.integers(0, len(words), size=2).tolist():
            words[j] = str(vocab[int(rng.integers(vocab.size))])
        copies.append(" ".join(words))
    mixed = fresh + copies
    rng.shuffle(mixed)  # type: ignore[arg-type]
    return mixed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(index: str, corpus: Path, docs: int) -> float:
    """Seconds to build ``index`` from ``corpus`` (0 when one of ``docs`` documents exists)."""
    probe = subprocess.run(
        [NEARDUP, "index", "stats", "--index", index, "--json"], capture_output=True, text=True
    )
    if probe.returncode == 0 and json.loads(probe.stdout)["documents"] == docs:
        return 0.0
    t0 = time.perf_counter()
    subprocess.run(
        [NEARDUP, "index", "build", str(corpus), "--index", index, "--id-column", "id", "--replace", "-q"],
        check=True,
    )
    return time.perf_counter() - t0


async def load(url: str, texts: list[str], clients: int, batch: int, seconds: float) -> dict[str, Any]:
    """``clients`` concurrent loops posting checks of ``batch`` texts for ``seconds``, on aiohttp:
    httpx's client, measured against ``/healthz``, tops out near 500 requests/s on this machine
    (and falls as connections grow), which would measure the client rather than the server."""
    import aiohttp

    latencies: list[float] = []
    errors = 0
    done_texts = 0
    stop_at = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(url, connector=connector, timeout=aiohttp.ClientTimeout(60)) as http:

        async def client(k: int) -> None:
            nonlocal errors, done_texts
            i = k * 9973
            while time.perf_counter() < stop_at:
                chunk = [{"text": texts[(i + j) % len(texts)]} for j in range(batch)]
                i += batch
                body = {"text": chunk[0]["text"]} if batch == 1 else {"texts": chunk}
                t0 = time.perf_counter()
                try:
                    async with http.post("/v1/check", json=body) as answer:
                        await answer.read()
                        ok = answer.status == 200
                except aiohttp.ClientError:
                    ok = False
                latencies.append(time.perf_counter() - t0)
                if ok:
                    done_texts += batch
                else:
                    errors += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        elapsed = time.perf_counter() - t0
    lat = np.array(latencies) * 1000
    return {
        "clients": clients,
        "batch": batch,
        "requests": len(latencies),
        "texts_per_s": done_texts / elapsed,
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "p999_ms": float(np.percentile(lat, 99.9)),
        "errors": errors,
    }


def serve(index: str, workers: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = free_port()
    command = [NEARDUP, "serve", "--index", index, "--port", str(port), "--workers", str(workers)]
    proc = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(log.read_text())


def in_process_neardup(index: str, texts: list[str], seconds: float, batch: int) -> float:
    """Texts per second of ``LSHIndex.check_many`` in this process, one thread."""
    from neardup.jobs import open_index

    with open_index(index) as ix:
        ix.check_many(texts[:10])
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            ix.check_many(texts[n % len(texts) : n % len(texts) + batch])
            n += batch
        return n / (time.perf_counter() - t0)


def in_process_datasketch(
    redis_url: str, docs: list[str], texts: list[str], seconds: float
) -> dict[str, float]:
    """datasketch MinHashLSH on Redis: insert seconds and single queries per second."""
    from urllib.parse import urlparse

    from datasketch import MinHash, MinHashLSH

    where = urlparse(redis_url)
    config = {"type": "redis", "basename": b"bench", "redis": {"host": where.hostname, "port": where.port}}
    lsh = MinHashLSH(threshold=0.5, num_perm=128, storage_config=config)
    hashes = MinHash.bulk([[w.encode() for w in d.split()] for d in docs], num_perm=128)
    t0 = time.perf_counter()
    with lsh.insertion_session(buffer_size=50_000) as session:
        for i, m in enumerate(hashes):
            session.insert(f"d{i}", m)
    insert_s = time.perf_counter() - t0
    probes = MinHash.bulk([[w.encode() for w in t.split()] for t in texts[:5000]], num_perm=128)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        lsh.query(probes[n % len(probes)])
        n += 1
    return {"documents": len(docs), "insert_s": insert_s, "queries_per_s": n / (time.perf_counter() - t0)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--datasketch-documents", type=int, default=100_000)
    parser.add_argument("--skip-datasketch", action="store_true")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", default="1,8,32,128")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="sqlite,redis")
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()

    work = OUT / "service"
    work.mkdir(parents=True, exist_ok=True)
    docs = documents(args.documents)
    corpus = work / f"corpus-{args.documents}.jsonl"
    if not corpus.exists():
        with corpus.open("w") as fh:
            fh.writelines(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    texts = queries(docs, 20_000)

    redis_proc = None
    redis_url = args.redis_url
    if redis_url is None and "redis" in args.backends:
        port = free_port()
        redis_proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        redis_url = f"redis://127.0.0.1:{port}/0"
    record: dict[str, Any] = {"machine": machine_info(), "args": vars(args), "runs": []}
    try:
        for backend in args.backends.split(","):
            index = (
                str(work / f"idx-{args.documents}.db") if backend == "sqlite" else f"{redis_url}?prefix=bench"
            )
            built = build(index, corpus, args.documents)
            ceiling = {b: in_process_neardup(index, texts, args.seconds / 2, b) for b in (1, 100)}
            proc, url = serve(index, args.workers, work / f"serve-{backend}.log")
            try:
                for batch in (1, 100):
                    for clients in [int(c) for c in args.clients.split(",")]:
                        run = asyncio.run(load(url, texts, clients, batch, args.seconds))
                        run.update(backend=backend, build_s=built, in_process_texts_per_s=ceiling[batch])
                        record["runs"].append(run)
                        print(json.dumps(run), flush=True)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
        if redis_url is not None and args.datasketch_documents and not args.skip_datasketch:
            record["datasketch"] = in_process_datasketch(
                redis_url, docs[: args.datasketch_documents], texts, args.seconds
            )
    finally:
        if redis_proc is not None:
            redis_proc.terminate()
    rows = [
        (
            r["backend"],
            r["batch"],
            r["clients"],
            f"{r['texts_per_s']:,.0f}",
            f"{r['p50_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            f"{r['p999_ms']:.1f}",
            r["errors"],
            f"{r['in_process_texts_per_s']:,.0f}",
        )
        for r in record["runs"]
    ]
    header = (
        "backend",
        "batch",
        "clients",
        "texts/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "errors",
        "in-process texts/s",
    )
    print(markdown_table(header, rows))
    if "datasketch" in record:
        print(f"datasketch MinHashLSH on Redis, in process: {record['datasketch']}")
    (OUT / "service.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
