"""Persistent-index benchmark: insert and query figures per index backend, next to datasketch.

The same MinHash signatures (``--docs`` generated documents, default 100,000, from
``corpus.generate_synthetic``, computed once with neardup's default ``DedupConfig``; not timed)
go into every engine in the same run:

* neardup ``LSHIndex`` on ``memory://``, an SQLite file and a Redis database:
  ``insert_signatures`` in batches of ``--batch`` (default 50,000, the ``index build`` chunk,
  and 10,000), a fresh index each round; then ``query_signature`` one at a time and one
  ``query_signatures`` call for ``--queries`` documents that are in the index;
* datasketch ``MinHashLSH`` with the first layer of that band shape (``params=(bands,
  rows)`` with ``bands * rows == num_perm``: datasketch has no second layer), in memory
  (``insertion_session`` and plain ``insert``) and on Redis storage (``insertion_session``,
  on the first ``--datasketch-redis-docs`` signatures only, because it is slow); then
  ``query`` one at a time for the same kind of queries. datasketch gets ``MinHash`` objects
  (scheme ``affine32``) holding exactly neardup's uint32 values, built before the timing.
  Every insert passes ``check_duplication=False``: neardup's insert replaces a stored key
  without a check, and datasketch's check is one Redis round trip per key.

Figures are signatures/s, queries/s, the average number of keys a query returns (datasketch
returns every LSH candidate; neardup returns only the candidates whose estimated similarity
is at least the threshold, so it does more work per query; neardup's candidate count is shown
too) and the size: the SQLite file with its -wal, Redis ``used_memory`` growth, or process RSS
growth for the in-memory engines. Each figure is the median of ``--rounds`` rounds.

Redis: a private ``redis-server`` (no persistence) on a free port in a temporary directory,
shut down at the end; ``--redis-url`` uses an existing server instead (only the benchmark's
own keys are deleted there). Without ``redis-server`` the Redis rows are skipped.

Run ``python benchmarks/index.py --help``; ``--quick`` is a smoke test (10,000 documents, one
round).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import datetime as dt
import gc
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from common import machine_info, markdown_table
from corpus import generate_synthetic

ENGINES = ("memory", "sqlite", "redis", "ds-memory", "ds-redis")
NEARDUP_PREFIX = "neardup-bench-index"
DATASKETCH_BASENAME = b"datasketch-bench-index"
TARGETS = {  # the product requirement: (row, figure) -> minimum
    ("sqlite", "insert"): 20_000,
    ("redis", "insert"): 10_000,
    ("sqlite", "single"): 2_000,
}


# --------------------------------------------------------------------------- signatures


@dataclasses.dataclass
class Data:
    """The signatures every engine gets, and the shape they are banded with."""

    keys: list[str]
    sigs: np.ndarray  # uint32[n, num_perm]
    config: Any  # neardup DedupConfig
    bands: int
    rows: int
    minhashes: list[Any] = dataclasses.field(default_factory=list)  # datasketch MinHash per row

    @property
    def first_layer(self) -> int:
        """The bands of the shape's first layer, the ones datasketch can band."""
        from neardup.core.params import second_layer_bands

        return self.bands - second_layer_bands(self.bands, self.rows, self.sigs.shape[1])


def make_data(args: argparse.Namespace) -> Data:
    """Generate the documents and compute their signatures once (not timed)."""
    from neardup.config import DedupConfig
    from neardup.core.params import lsh_shape
    from neardup.similarity import signatures

    config = DedupConfig()
    bands, rows = lsh_shape(config.lsh, config.minhash)
    records = generate_synthetic(args.docs, dup_fraction=0.1, seed=args.seed, words_per_doc=args.words)
    texts = [r["text"] for r in records]
    sigs = np.ascontiguousarray(signatures(texts, config), dtype=np.uint32)
    return Data([r["id"] for r in records], sigs, config, bands, rows)


def add_minhashes(data: Data, n: int) -> None:
    """datasketch MinHash objects for the first ``n`` rows, with exactly neardup's values."""
    from datasketch import MinHash

    num_perm = data.sigs.shape[1]
    # One permutation array shared by all: only the values matter to MinHashLSH.
    template = MinHash(num_perm=num_perm, scheme="affine32")
    data.minhashes = [
        MinHash(num_perm=num_perm, hashvalues=row, permutations=template.permutations, scheme="affine32")
        for row in data.sigs[:n]
    ]


def pick_queries(n_indexed: int, q: int, seed: int) -> np.ndarray:
    """``q`` distinct rows among the first ``n_indexed`` (documents that are in the index)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_indexed, size=min(q, n_indexed), replace=False))


# --------------------------------------------------------------------------- Redis


@dataclasses.dataclass
class RedisTarget:
    """A Redis database the benchmark may write its own keys to."""

    url: str
    client: Any  # redis.Redis
    private: bool

    @property
    def connection(self) -> dict[str, Any]:
        """host / port / db / password, for datasketch's ``storage_config``."""
        kw = self.client.connection_pool.connection_kwargs
        return {k: kw[k] for k in ("host", "port", "db", "username", "password") if kw.get(k) is not None}

    def used_memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def version(self) -> str:
        return str(self.client.info("server")["redis_version"])

    def wait_idle(self, timeout_s: float = 600.0) -> None:
        """Wait out a script still running after a failed row: meanwhile Redis answers BUSY."""
        import redis

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.client.ping()
                return
            except redis.ResponseError as exc:
                if not str(exc).startswith("BUSY") or time.monotonic() > deadline:
                    raise
                time.sleep(1.0)

    def clear(self) -> None:
        """Delete the benchmark's keys (the whole database of a private server)."""
        self.wait_idle()
        if self.private:
            self.client.flushdb()
            return
        for pattern in (NEARDUP_PREFIX.encode() + b":*", DATASKETCH_BASENAME + b"*"):
            batch: list[bytes] = []
            for key in self.client.scan_iter(match=pattern, count=10_000):
                batch.append(key)
                if len(batch) >= 10_000:
                    self.client.unlink(*batch)
                    batch = []
            if batch:
                self.client.unlink(*batch)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def private_redis(workdir: Path) -> Iterator[RedisTarget | None]:
    """A redis-server of our own (no RDB, no AOF), or None if there is no redis-server."""
    import redis

    exe = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if exe is None:
        yield None
        return
    port = free_port()
    cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    cmd += ["--dir", str(workdir)]
    log = (workdir / "redis.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    client = redis.Redis(host="127.0.0.1", port=port, db=0)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start; see {workdir / 'redis.log'}") from None
                time.sleep(0.05)
        yield RedisTarget(f"redis://127.0.0.1:{port}/0", client, private=True)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def redis_target(args: argparse.Namespace, workdir: Path) -> Iterator[RedisTarget | None]:
    if not {"redis", "ds-redis"} & set(args.engines):
        yield None
        return
    if args.redis_url:
        import redis

        client = redis.Redis.from_url(args.redis_url)
        try:
            yield RedisTarget(args.redis_url, client, private=False)
        finally:
            client.close()
        return
    with private_redis(workdir) as target:
        yield target


def neardup_redis_url(base: str) -> str:
    return base + ("&" if "?" in base else "?") + f"prefix={NEARDUP_PREFIX}"


def redis_layout() -> str:
    """The layout version of neardup's Redis backend, as the source has it now."""
    try:
        from neardup.index import redis as backend

        return str(getattr(backend, "LAYOUT_VERSION", "?"))
    except Exception as exc:  # mid-edit sources must not stop the other rows
        return f"unreadable ({type(exc).__name__})"


# --------------------------------------------------------------------------- sizes


class Meter(Protocol):
    kind: str

    def begin(self) -> None: ...

    def end(self) -> int | None: ...


def release_memory() -> None:
    """Collect garbage and hand freed heap pages back, so RSS growth is the new index's."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class RssMeter:
    kind = "RSS growth"

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self._start = 0

    def begin(self) -> None:
        release_memory()
        self._start = int(self._proc.memory_info().rss)

    def end(self) -> int | None:
        return int(self._proc.memory_info().rss) - self._start


class RedisMeter:
    kind = "Redis used_memory growth"

    def __init__(self, target: RedisTarget) -> None:
        self._target = target
        self._start = 0

    def begin(self) -> None:
        self._start = self._target.used_memory()

    def end(self) -> int | None:
        return self._target.used_memory() - self._start


class FileMeter:
    kind = "file + -wal"

    def __init__(self, path: Path) -> None:
        self.path = path

    def begin(self) -> None:
        pass

    def end(self) -> int | None:
        parts = (self.path, Path(f"{self.path}-wal"))
        return sum(p.stat().st_size for p in parts if p.exists())


# --------------------------------------------------------------------------- results


@dataclasses.dataclass
class Row:
    """One engine x storage x insert mode, with every round's raw figures."""

    engine: str
    storage: str
    insert_mode: str
    name: str  # the --engines name it belongs to
    docs: int
    size_kind: str = "-"
    insert_s: list[float] = dataclasses.field(default_factory=list)
    single_s: list[float] = dataclasses.field(default_factory=list)
    batch_s: list[float] = dataclasses.field(default_factory=list)
    sizes: list[int] = dataclasses.field(default_factory=list)
    queries: int = 0
    avg_results: float | None = None
    avg_candidates: float | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None  # nothing measured
    query_error: str | None = None  # inserts measured, queries failed

    def rate(self, what: str) -> float | None:
        times = {"insert": self.insert_s, "single": self.single_s, "batch": self.batch_s}[what]
        if not times:
            return None
        return (self.docs if what == "insert" else self.queries) / statistics.median(times)

    @property
    def size(self) -> float | None:
        return statistics.median(self.sizes) if self.sizes else None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(
            insert_per_s=self.rate("insert"),
            single_queries_per_s=self.rate("single"),
            batch_queries_per_s=self.rate("batch"),
            size_bytes=self.size,
        )
        return out


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def describe_error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def guarded(row: Row, run: Callable[[], None]) -> Row:
    """Run ``run``; an error (a backend mid-edit, a lost server) is recorded in the row."""
    try:
        run()
    except Exception as exc:
        row.error = describe_error(exc)
        progress(f"  {row.engine} {row.storage} {row.insert_mode}: FAILED {row.error}")
    return row


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# --------------------------------------------------------------------------- neardup


@dataclasses.dataclass
class Backend:
    """Where a fresh neardup index of one kind lives, how to size it and how to drop it."""

    name: str  # an --engines name
    storage: str  # as shown in the table
    locate: Callable[[int], tuple[str, Meter]]  # round -> (url, meter)
    drop: Callable[[str], None]


def neardup_backends(workdir: Path, redis: RedisTarget | None) -> list[Backend]:
    def sqlite_at(i: int) -> tuple[str, Meter]:
        path = workdir / f"index-{i}.db"
        return f"sqlite://{path}", FileMeter(path)

    def sqlite_drop(url: str) -> None:
        path = url.removeprefix("sqlite://")
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)

    backends = [
        Backend("memory", "memory://", lambda i: ("memory://", RssMeter()), lambda url: None),
        Backend("sqlite", "SQLite file", sqlite_at, sqlite_drop),
    ]
    if redis is not None:
        url = neardup_redis_url(redis.url)
        backends.append(
            Backend("redis", "Redis", lambda i: (url, RedisMeter(redis)), lambda url: redis.clear())
        )
    return backends


def neardup_round(
    backend: Backend, data: Data, row: Row, *, batch: int, queries: np.ndarray | None, i: int
) -> None:
    """One fresh index: timed inserts, then (if asked) timed single and batch queries."""
    from neardup.index import LSHIndex

    url, meter = backend.locate(i)
    row.size_kind = meter.kind
    meter.begin()
    index = LSHIndex.open(url, data.config)
    try:
        n = len(data.keys)

        def insert() -> None:
            for lo in range(0, n, batch):
                index.insert_signatures(data.keys[lo : lo + batch], data.sigs[lo : lo + batch])

        row.insert_s.append(timed(insert)[0])
        size = meter.end()
        if size is not None:
            row.sizes.append(size)
        if len(index) != n:
            row.notes.append(f"round {i}: {len(index)} documents stored, not {n}")
        if queries is not None:
            try:
                neardup_queries(index, data, row, queries)
            except Exception as exc:
                row.query_error = describe_error(exc)
                progress(f"  neardup {backend.storage} queries: FAILED {row.query_error}")
    finally:
        index.close()
        backend.drop(url)


def neardup_queries(index: Any, data: Data, row: Row, queries: np.ndarray) -> None:
    qsigs = data.sigs[queries]
    t_single, single = timed(lambda: [index.query_signature(s) for s in qsigs])
    t_batch, batched = timed(lambda: index.query_signatures(qsigs))
    row.single_s.append(t_single)
    row.batch_s.append(t_batch)
    row.queries = len(queries)
    row.avg_results = float(np.mean([len(m) for m in single]))
    if [[m.key for m in r] for r in single] != [[m.key for m in r] for r in batched]:
        row.notes.append("single and batch query results differ")
    missing = sum(
        data.keys[q] not in {m.key for m in r} for q, r in zip(queries.tolist(), single, strict=True)
    )
    if missing:
        row.notes.append(f"{missing} queries did not find themselves")
    lookup = getattr(index, "lookup_signatures", None)
    if lookup is not None:
        found = lookup(qsigs)
        row.avg_candidates = float(np.mean([r.size for r in found.rows]))


def warm_up(backend: Backend, data: Data) -> None:
    """JIT-compile the band and query kernels on a throwaway index, outside the timing."""
    from neardup.index import LSHIndex

    url, _ = backend.locate(-1)
    index = LSHIndex.open(url, data.config)
    try:
        index.insert_signatures(data.keys[:200], data.sigs[:200])
        with contextlib.suppress(Exception):  # a query error shows in the timed rounds
            index.query_signatures(data.sigs[:50])
            index.query_signature(data.sigs[0])
    finally:
        index.close()
        backend.drop(url)


def bench_neardup(backend: Backend, data: Data, args: argparse.Namespace, queries: np.ndarray) -> list[Row]:
    rows = []
    for j, batch in enumerate(args.batch):
        row = Row(
            "neardup", backend.storage, f"insert_signatures, batch {batch:,}", backend.name, len(data.keys)
        )

        def run(row: Row = row, batch: int = batch, with_queries: bool = j == 0) -> None:
            if with_queries:
                warm_up(backend, data)
            for i in range(args.rounds):
                neardup_round(backend, data, row, batch=batch, queries=queries if with_queries else None, i=i)
                progress(
                    f"  neardup {backend.storage} batch {batch:,} round {i + 1}: {row.insert_s[-1]:.2f} s"
                )

        rows.append(guarded(row, run))
    return rows


# --------------------------------------------------------------------------- datasketch


def datasketch_round(
    make_lsh: Callable[[], Any],
    data: Data,
    row: Row,
    *,
    meter: Meter,
    session: int | None,
    queries: np.ndarray | None,
) -> None:
    """One fresh MinHashLSH: timed inserts (a session of ``session`` or plain), then queries."""
    keys, minhashes = data.keys[: row.docs], data.minhashes[: row.docs]
    row.size_kind = meter.kind
    meter.begin()
    lsh = make_lsh()

    def insert() -> None:
        if session is None:
            for key, m in zip(keys, minhashes, strict=True):
                lsh.insert(key, m, check_duplication=False)
            return
        with lsh.insertion_session(buffer_size=session) as s:
            for key, m in zip(keys, minhashes, strict=True):
                s.insert(key, m, check_duplication=False)

    row.insert_s.append(timed(insert)[0])
    size = meter.end()
    if size is not None:
        row.sizes.append(size)
    if queries is not None:
        qms = [data.minhashes[q] for q in queries.tolist()]
        t, found = timed(lambda: [lsh.query(m) for m in qms])
        row.single_s.append(t)
        row.queries = len(queries)
        row.avg_results = row.avg_candidates = float(np.mean([len(f) for f in found]))
        missing = sum(data.keys[q] not in f for q, f in zip(queries.tolist(), found, strict=True))
        if missing:
            row.notes.append(f"{missing} queries did not find themselves")


def bench_datasketch_memory(data: Data, args: argparse.Namespace, queries: np.ndarray) -> list[Row]:
    from datasketch import MinHashLSH

    def make() -> Any:
        return MinHashLSH(
            threshold=data.config.lsh.threshold,
            num_perm=data.sigs.shape[1],
            params=(data.first_layer, data.rows),
        )

    rows = []
    for mode, session in ((f"insertion_session({args.batch[0]:,})", args.batch[0]), ("insert", None)):
        row = Row("datasketch", "in-memory (dict)", mode, "ds-memory", len(data.keys))

        def run(row: Row = row, session: int | None = session) -> None:
            for i in range(args.rounds):
                datasketch_round(
                    make, data, row, meter=RssMeter(), session=session, queries=queries if session else None
                )
                progress(f"  datasketch in-memory {row.insert_mode} round {i + 1}: {row.insert_s[-1]:.2f} s")
                release_memory()

        rows.append(guarded(row, run))
    return rows


def bench_datasketch_redis(data: Data, args: argparse.Namespace, redis: RedisTarget) -> list[Row]:
    from datasketch import MinHashLSH

    n = min(args.datasketch_redis_docs, len(data.keys))
    queries = pick_queries(n, args.queries, args.seed)
    config = {"type": "redis", "basename": DATASKETCH_BASENAME, "redis": redis.connection}

    def make() -> Any:
        return MinHashLSH(
            threshold=data.config.lsh.threshold,
            num_perm=data.sigs.shape[1],
            params=(data.first_layer, data.rows),
            storage_config=config,
        )

    buffer = args.datasketch_redis_buffer
    row = Row("datasketch", "Redis", f"insertion_session({buffer:,})", "ds-redis", n)
    if n < len(data.keys):
        row.notes.append(f"first {n:,} of {len(data.keys):,} signatures only (--datasketch-redis-docs)")

    def run() -> None:
        for i in range(args.rounds):
            redis.clear()
            try:
                datasketch_round(make, data, row, meter=RedisMeter(redis), session=buffer, queries=queries)
            finally:
                redis.clear()
            progress(f"  datasketch Redis round {i + 1}: {row.insert_s[-1]:.2f} s")

    return [guarded(row, run)]


def agreement(data: Data, queries: np.ndarray) -> str:
    """Whether neardup's LSH candidates equal datasketch's results for the same queries (same
    band shape, so they should, up to a 2**-64 bucket collision)."""
    from datasketch import MinHashLSH

    from neardup.index import LSHIndex

    ds = MinHashLSH(
        threshold=data.config.lsh.threshold, num_perm=data.sigs.shape[1], params=(data.first_layer, data.rows)
    )
    with ds.insertion_session() as s:
        for key, m in zip(data.keys, data.minhashes, strict=True):
            s.insert(key, m, check_duplication=False)
    with LSHIndex.open("memory://", data.config) as index:
        index.insert_signatures(data.keys, data.sigs)
        found = index.lookup_signatures(data.sigs[queries])
    same = sum(
        {found.keys[i] for i in r.tolist()} == set(ds.query(data.minhashes[q]))
        for q, r in zip(queries.tolist(), found.rows, strict=True)
    )
    del ds
    release_memory()
    return (
        f"neardup's LSH candidates equal datasketch's query results for {same:,} of {len(queries):,} queries"
    )


# --------------------------------------------------------------------------- output


def fmt_rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def fmt_avg(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def results_table(rows: Sequence[Row]) -> str:
    header = ["engine", "storage", "insert", "docs", "insert sig/s", "single q/s", "batch q/s"]
    header += ["avg candidates", "avg results", "size MB", "bytes/doc", "size measured as"]
    body = []
    for r in rows:
        if r.error:
            body.append([r.engine, r.storage, r.insert_mode, f"{r.docs:,}", f"error: {r.error}", *["-"] * 7])
            continue
        size = r.size
        failed = "error (see notes)" if r.query_error else None
        body.append(
            [
                r.engine,
                r.storage,
                r.insert_mode,
                f"{r.docs:,}",
                fmt_rate(r.rate("insert")),
                failed or fmt_rate(r.rate("single")),
                failed or fmt_rate(r.rate("batch")),
                fmt_avg(r.avg_candidates),
                fmt_avg(r.avg_results),
                "-" if size is None else f"{size / 1e6:,.1f}",
                "-" if size is None else f"{size / r.docs:,.0f}",
                r.size_kind,
            ]
        )
    return markdown_table(header, body)


def targets_table(rows: Sequence[Row], batch: int) -> str:
    labels = {
        ("sqlite", "insert"): f"bulk insert into SQLite (batch {batch:,}), signatures/s",
        ("redis", "insert"): f"bulk insert into a local Redis (batch {batch:,}), signatures/s",
        ("sqlite", "single"): "single queries from SQLite, queries/s",
    }
    body = []
    for (name, what), target in TARGETS.items():
        match = [r for r in rows if r.name == name and r.insert_mode.endswith(f"batch {batch:,}")]
        value = match[0].rate(what) if match and not match[0].error else None
        verdict = "not measured" if value is None else ("met" if value >= target else "not met")
        body.append([labels[(name, what)], f">= {target:,}", fmt_rate(value), verdict])
    return markdown_table(["requirement", "target", "neardup", ""], body)


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add("--docs", type=int, default=100_000, help="signatures to index (default: %(default)s)")
    add("--words", type=int, default=300, help="mean words per generated document (default: %(default)s)")
    add("--queries", type=int, default=2_000, help="queries, documents in the index (default: %(default)s)")
    add(
        "--batch",
        default="50000,10000",
        help="insert_signatures batch sizes; the first is the one "
        "queried and checked against the targets (default: %(default)s)",
    )
    add("--rounds", type=int, default=3, help="rounds per figure; the median is shown (default: %(default)s)")
    add("--engines", default=",".join(ENGINES), help="which rows to run (default: %(default)s)")
    add("--redis-url", help="use this Redis (redis://host:port/db) instead of a private redis-server")
    add(
        "--datasketch-redis-docs",
        type=int,
        default=20_000,
        help="signatures datasketch's Redis storage gets, a prefix of --docs (default: %(default)s)",
    )
    add(
        "--datasketch-redis-buffer",
        type=int,
        default=50_000,
        help="datasketch insertion_session buffer_size on Redis (default: %(default)s)",
    )
    add("--seed", type=int, default=0, help="corpus and query sample seed (default: %(default)s)")
    add("--quick", action="store_true", help="10,000 documents, 500 queries, one round: a smoke test")
    default_out = Path(__file__).resolve().parent / "out" / "index.json"
    add("--json", type=Path, default=default_out, help="raw figures as JSON (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.quick:
        args.docs, args.queries, args.rounds = 10_000, 500, 1
        args.datasketch_redis_docs = min(args.datasketch_redis_docs, 5_000)
    args.batch = [int(b) for b in str(args.batch).split(",") if b]
    args.engines = [e for e in str(args.engines).split(",") if e]
    unknown = set(args.engines) - set(ENGINES)
    if unknown:
        ap.error(f"unknown engines {sorted(unknown)}; choose from {', '.join(ENGINES)}")
    if not args.batch or min(args.batch) < 1 or args.docs < 1 or args.queries < 1 or args.rounds < 1:
        ap.error("--docs, --queries, --rounds and every --batch must be at least 1")
    return args


def run_all(args: argparse.Namespace, data: Data, workdir: Path, redis: RedisTarget | None) -> list[Row]:
    queries = pick_queries(len(data.keys), args.queries, args.seed)
    rows: list[Row] = []
    for backend in neardup_backends(workdir, redis):
        if backend.name in args.engines:
            if redis is not None and backend.name == "redis":
                redis.clear()
            rows += bench_neardup(backend, data, args, queries)
    if "ds-memory" in args.engines:
        rows += bench_datasketch_memory(data, args, queries)
    if "ds-redis" in args.engines and redis is not None:
        rows += bench_datasketch_redis(data, args, redis)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    info = machine_info()
    command = shlex.join(["python", *sys.argv])
    print("## Machine\n")
    print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
    print(f"\ncommand: `{command}`")
    print(f"load average at start: {os.getloadavg()}")
    t, data = timed(lambda: make_data(args))
    progress(f"signatures of {len(data.keys):,} documents in {t:.1f} s (not timed)")
    if {"ds-memory", "ds-redis"} & set(args.engines):
        n_ds = (
            len(data.keys) if "ds-memory" in args.engines else min(args.datasketch_redis_docs, len(data.keys))
        )
        add_minhashes(data, n_ds)
    cfg = data.config
    print(
        f"signatures: {len(data.keys):,} generated documents (~{args.words} words, 10% near-duplicates), "
        f"{cfg.shingle.mode} {cfg.shingle.n}-grams, num_perm {cfg.minhash.num_perm}, threshold "
        f"{cfg.lsh.threshold} -> {data.bands} bands x {data.rows} rows"
    )
    notes: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="neardup-index-bench-") as tmp,
        redis_target(args, Path(tmp)) as redis,
    ):
        if redis is None and {"redis", "ds-redis"} & set(args.engines):
            notes.append("Redis rows skipped: no redis-server found (install it or pass --redis-url)")
        elif redis is not None:
            where = "a private redis-server" if redis.private else f"{redis.url}"
            notes.append(f"Redis {redis.version()} ({where}); neardup Redis backend layout {redis_layout()}")
        rows = run_all(args, data, Path(tmp), redis)
        if "ds-memory" in args.engines and "memory" in args.engines:
            notes.append(agreement(data, pick_queries(len(data.keys), args.queries, args.seed)))
    elapsed = time.perf_counter() - started
    print(f"\n## Index insert and query (median of {args.rounds})\n")
    print(results_table(rows))
    for r in rows:
        if r.query_error:
            r.notes.append(f"queries failed: {r.query_error}")
        for note in dict.fromkeys(r.notes):
            notes.append(f"{r.engine} {r.storage} {r.insert_mode}: {note}")
    print("\n" + "\n".join(f"- {n}" for n in notes))
    print(f"\n## Targets (neardup, batch {args.batch[0]:,})\n")
    print(targets_table(rows, args.batch[0]))
    print(f"\nload average at end: {os.getloadavg()}; whole run {elapsed:.0f} s")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "date": dt.date.today().isoformat(),
        "command": command,
        "machine": info,
        "config": cfg.to_dict(),
        "bands": data.bands,
        "rows_per_band": data.rows,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "notes": notes,
        "results": [r.to_dict() for r in rows],
        "elapsed_s": elapsed,
    }
    args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
