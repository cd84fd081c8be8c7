"""Containment search benchmark: ``LSHIndex.query_containment_many`` against datasketch's
``MinHashLSHEnsemble``, on planted partial copies with an exact answer.

Data, per language (English and Chinese, reported apart), all seeded: ``--sources`` documents
of the shared corpus (at least ``--min-units`` words, or characters for Chinese) each get one
planted copy: a contiguous excerpt of 25%, 50% or 75% of the source (in turn) inserted at a
random place inside unrelated text (from other corpus documents, never used elsewhere) of 1x
to 10x the excerpt's length (uniform). ``--negatives`` unrelated documents go into the index
as well, and ``--negative-queries`` other unrelated documents are asked for too.

Two scenarios, one per direction:

* ``query_in_doc`` (|Q ∩ X| / |Q|): the index holds the planted documents and the negatives;
  the queries are the sources (containment in their planted copy about the excerpt's
  fraction), the excerpts (about 1.0) and the negative queries;
* ``doc_in_query`` (|Q ∩ X| / |X|): the mirror: the index holds the sources, the excerpts and
  the negatives; the queries are the planted documents and the negative queries.

Truth: the exact containment of every (query, indexed document) pair that shares a shingle,
from neardup's own shingle hash sets (``shingle_sets`` over ``encode_texts``), counted with an
inverted index in numpy (postings sorted by shingle, ``searchsorted``, ``np.unique`` over pair
codes); the truth at C is every pair at or above C, whatever it was planted as.

Engines, on the same data in the same run: neardup ``LSHIndex`` (``keep_shingles=True,
containment=True``) on ``memory://`` and an SQLite file, each scored exactly (``exact=True``)
and by the estimate (``exact=False``); datasketch ``MinHashLSHEnsemble(threshold=C,
num_perm=128, num_part=16)``, one per C (its threshold is fixed when it is built), only for
``query_in_doc`` (what it answers), given ``MinHash`` objects holding neardup's own signature
values and neardup's distinct shingle counts as set sizes. datasketch returns candidates
without scores: its precision is shown as a user gets it and also after keeping only the
candidates whose neardup estimate (from the same signatures and sizes) reaches C.

Figures: recall, precision and F1 against the truth; queries/s for one
``query_containment_many`` call on all queries and for one query at a time (on the first
``--single-queries`` queries; datasketch is always one at a time, on all of them); index build
documents/s (neardup ``insert_many`` from the texts, and ``insert_signatures`` from ready
signatures and shingle sets; datasketch ``index`` from ready MinHash objects, and its
constructor, which optimises its band shapes, apart); candidates per query. Timings are the
median of ``--rounds`` rounds. ``--profile`` adds cProfile's view of neardup's queries.

Run ``python benchmarks/containment.py --help``; ``--quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import datetime as dt
import gc
import io
import json
import os
import pstats
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from common import machine_info, markdown_table
from corpus import default_corpus_path, load_originals

LANGS = ("en", "zh")
ENGINES = ("memory", "sqlite", "datasketch")
DIRECTIONS = ("query_in_doc", "doc_in_query")
FRACTIONS = (0.25, 0.50, 0.75)
NUM_PERM = 128
NUM_PART = 16
EPS = 1e-9


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def cpu_timed(fn: Callable[[], Any], cpu: list[float]) -> tuple[float, Any]:
    """Wall seconds of ``fn()`` and its result; the process CPU seconds are appended to ``cpu``
    (a figure that other work on a shared machine skews less than wall-clock)."""
    c0 = time.process_time()
    t, out = timed(fn)
    cpu.append(time.process_time() - c0)
    return t, out


# --------------------------------------------------------------------------- data


@dataclasses.dataclass
class Planted:
    """One language's documents: sources, their excerpts and planted copies, negatives."""

    lang: str
    source_keys: list[str]
    sources: list[str]
    excerpts: list[str]
    planted: list[str]
    fractions: list[float]  # each source's excerpt share
    ratios: list[float]  # each planted copy's filler length over its excerpt's
    negative_keys: list[str]
    negatives: list[str]
    negative_query_keys: list[str]
    negative_queries: list[str]


class _Filler:
    """Units (words, or characters for Chinese) of donor documents, each used once."""

    def __init__(self, texts: Sequence[str], zh: bool) -> None:
        self.units: list[str] = []
        for t in texts:
            self.units.extend(list(t) if zh else t.split())
            if zh:
                self.units.append("\n")
        self.pos = 0

    def take(self, k: int) -> list[str] | None:
        if self.pos + k > len(self.units):
            return None
        got = self.units[self.pos : self.pos + k]
        self.pos += k
        return got


def units_of(text: str, zh: bool) -> list[str]:
    return list(text) if zh else text.split()


def join_units(units: Sequence[str], zh: bool) -> str:
    return ("" if zh else " ").join(units)


def plant_lang(lang: str, args: argparse.Namespace) -> Planted:
    """Pick the sources, negatives and donors of one language and plant the copies (seeded)."""
    zh = lang == "zh"
    docs = load_originals(args.corpus, lang=lang)
    rng = random.Random(f"{args.seed}-{lang}")
    order = list(range(len(docs)))
    rng.shuffle(order)
    long_enough = [i for i in order if len(units_of(docs[i]["text"], zh)) >= args.min_units]
    sources = long_enough[: args.sources]
    taken = set(sources)
    rest = [i for i in order if i not in taken and len(units_of(docs[i]["text"], zh)) >= 10]
    negq = rest[: args.negative_queries]
    negs = rest[args.negative_queries : args.negative_queries + args.negatives]
    donors = rest[args.negative_queries + args.negatives :]
    if len(sources) < args.sources or len(negs) < args.negatives:
        raise SystemExit(
            f"{lang}: the corpus has {len(sources)} sources of >= {args.min_units} units and "
            f"{len(negs)} negatives left, fewer than asked; lower --sources or --negatives"
        )
    filler = _Filler([docs[i]["text"] for i in donors], zh)
    out = Planted(lang, [], [], [], [], [], [], [], [], [], [])
    for j, i in enumerate(sources):
        text = docs[i]["text"]
        units = units_of(text, zh)
        frac = FRACTIONS[j % len(FRACTIONS)]
        k = max(1, round(frac * len(units)))
        start = rng.randrange(len(units) - k + 1)
        excerpt = units[start : start + k]
        ratio = rng.uniform(1.0, 10.0)
        other = filler.take(round(ratio * k))
        if other is None:
            raise SystemExit(f"{lang}: the corpus ran out of filler text; lower --sources or --negatives")
        at = rng.randrange(len(other) + 1)
        out.source_keys.append(f"{lang}-{docs[i]['id']}")
        out.sources.append(text)
        out.excerpts.append(join_units(excerpt, zh))
        out.planted.append(join_units([*other[:at], *excerpt, *other[at:]], zh))
        out.fractions.append(frac)
        out.ratios.append(ratio)
    out.negative_keys = [f"{lang}-neg-{docs[i]['id']}" for i in negs]
    out.negatives = [docs[i]["text"] for i in negs]
    out.negative_query_keys = [f"{lang}-negq-{docs[i]['id']}" for i in negq]
    out.negative_queries = [docs[i]["text"] for i in negq]
    return out


@dataclasses.dataclass
class Sketches:
    """neardup's signatures and distinct shingle sets of a list of texts."""

    sigs: np.ndarray  # uint32[n, num_perm]
    sets: Any  # neardup ShingleSets, document k = text k
    sizes: np.ndarray  # int64[n]: distinct shingles

    def set_list(self) -> list[np.ndarray]:
        return [self.sets.get(i).copy() for i in range(self.sizes.size)]


def sketch(texts: Sequence[str], config: Any) -> Sketches:
    from neardup.core.minhash import MinHasher
    from neardup.core.shingles import shingle_sets
    from neardup.core.text import encode_texts

    hasher = MinHasher(config.minhash, config.text, config.shingle)
    batch = encode_texts(list(texts))
    sigs, counts = hasher.signatures_with_counts(batch)
    sets = shingle_sets(batch, np.arange(len(texts)), counts, config.text, config.shingle)
    return Sketches(np.ascontiguousarray(sigs, dtype=np.uint32), sets, sets.lengths.astype(np.int64))


@dataclasses.dataclass
class Scenario:
    """One direction's index and queries, with the exact intersections behind its truth."""

    lang: str
    direction: str
    index_keys: list[str]
    index_texts: list[str]
    query_keys: list[str]
    query_texts: list[str]
    query_kinds: list[str]  # source-25 / excerpt / planted-50 / negative ...
    index_sketch: Sketches | None = None
    query_sketch: Sketches | None = None
    pair_codes: np.ndarray | None = None  # int64: query * n_index + doc, sorted
    shared: np.ndarray | None = None  # int64: |Q ∩ X| of each pair code

    @property
    def n_index(self) -> int:
        return len(self.index_keys)

    def containment(self) -> np.ndarray:
        """float64: each pair code's containment in this scenario's direction."""
        assert self.pair_codes is not None and self.shared is not None
        assert self.index_sketch is not None and self.query_sketch is not None
        if self.direction == "query_in_doc":
            denominator = self.query_sketch.sizes[self.pair_codes // self.n_index]
        else:
            denominator = self.index_sketch.sizes[self.pair_codes % self.n_index]
        out: np.ndarray = self.shared / np.maximum(denominator, 1)
        return out

    def truth(self, c: float) -> np.ndarray:
        """The pair codes whose exact containment is at least ``c``."""
        assert self.pair_codes is not None
        out: np.ndarray = self.pair_codes[self.containment() >= c - EPS]
        return out


def scenarios_of(p: Planted) -> dict[str, Scenario]:
    pct = [f"{round(f * 100)}" for f in p.fractions]
    neg_kinds = ["negative"] * len(p.negative_queries)
    qid = Scenario(
        p.lang,
        "query_in_doc",
        index_keys=[f"{k}~planted" for k in p.source_keys] + p.negative_keys,
        index_texts=p.planted + p.negatives,
        query_keys=p.source_keys + [f"{k}~excerpt" for k in p.source_keys] + p.negative_query_keys,
        query_texts=p.sources + p.excerpts + p.negative_queries,
        query_kinds=[f"source-{x}" for x in pct] + [f"excerpt-{x}" for x in pct] + neg_kinds,
    )
    diq = Scenario(
        p.lang,
        "doc_in_query",
        index_keys=p.source_keys + [f"{k}~excerpt" for k in p.source_keys] + p.negative_keys,
        index_texts=p.sources + p.excerpts + p.negatives,
        query_keys=[f"{k}~planted" for k in p.source_keys] + p.negative_query_keys,
        query_texts=p.planted + p.negative_queries,
        query_kinds=[f"planted-{x}" for x in pct] + neg_kinds,
    )
    return {"query_in_doc": qid, "doc_in_query": diq}


# --------------------------------------------------------------------------- truth


def _flatten(sets: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(owner, value) of every shingle of CSR sets 0..n-1."""
    lengths = sets.lengths[:n].astype(np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    first = np.repeat(sets.starts[:n].astype(np.int64), lengths)
    within = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, sets.values[first + within]


def exact_intersections(
    queries: Sketches, docs: Sketches, *, chunk: int = 20_000_000
) -> tuple[np.ndarray, np.ndarray]:
    """(pair codes ``query * n_docs + doc``, |Q ∩ X|) of every pair sharing a shingle.

    The documents' postings are sorted by shingle once; each query shingle's run of postings is
    found with ``searchsorted`` and the (query, doc) pairs of a slice of queries are expanded
    and counted with ``np.unique``. Sets are distinct, so a pair's count is its intersection.
    """
    n_docs = docs.sizes.size
    d_owner, d_vals = _flatten(docs.sets, n_docs)
    order = np.argsort(d_vals, kind="stable")
    d_vals, d_owner = d_vals[order], d_owner[order]
    q_owner, q_vals = _flatten(queries.sets, queries.sizes.size)
    lo = np.searchsorted(d_vals, q_vals, side="left")
    hi = np.searchsorted(d_vals, q_vals, side="right")
    hits = hi - lo
    codes: list[np.ndarray] = []
    shared: list[np.ndarray] = []
    ends = np.cumsum(hits)
    start = 0
    while start < q_vals.size:  # slices of at most ``chunk`` expanded postings
        stop = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + chunk, side="right"))
        stop = max(stop, start + 1)
        h = hits[start:stop]
        total = int(h.sum())
        if total:
            pos = np.repeat(lo[start:stop] - (np.cumsum(h) - h), h) + np.arange(total, dtype=np.int64)
            pair = np.repeat(q_owner[start:stop], h) * n_docs + d_owner[pos]
            u, c = np.unique(pair, return_counts=True)
            codes.append(u)
            shared.append(c)
        start = stop
    if not codes:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    allc, alls = np.concatenate(codes), np.concatenate(shared)
    u, inv = np.unique(allc, return_inverse=True)  # a query can straddle two slices
    return u, np.bincount(inv, weights=alls).astype(np.int64)


# --------------------------------------------------------------------------- scoring


@dataclasses.dataclass
class Quality:
    truth: int
    predicted: int
    tp: int
    recall: float
    precision: float
    f1: float
    recall_by_kind: dict[str, float]

    @classmethod
    def of(cls, scenario: Scenario, predicted: np.ndarray, c: float) -> Quality:
        truth = scenario.truth(c)
        pred = np.unique(predicted)
        hit = np.isin(truth, pred)
        tp = int(hit.sum())
        kinds = np.array(scenario.query_kinds, dtype=object)[truth // scenario.n_index]
        by_kind = {}
        for k in sorted(set(kinds.tolist())):
            sel = kinds == k
            by_kind[k] = float(hit[sel].mean())
        recall = tp / truth.size if truth.size else 1.0
        precision = tp / pred.size if pred.size else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return cls(truth.size, pred.size, tp, recall, precision, f1, by_kind)


@dataclasses.dataclass
class QueryRow:
    """One engine x mode x direction x C: quality and query speed."""

    lang: str
    direction: str
    threshold: float
    engine: str
    mode: str
    queries: int
    quality: Quality | None = None
    filtered: Quality | None = None  # datasketch's candidates kept by neardup's estimate
    avg_candidates: float | None = None
    batch_s: list[float] = dataclasses.field(default_factory=list)
    single_s: list[float] = dataclasses.field(default_factory=list)
    batch_cpu: list[float] = dataclasses.field(default_factory=list)
    single_cpu: list[float] = dataclasses.field(default_factory=list)
    single_queries: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None

    def batch_qps(self) -> float | None:
        return self.queries / statistics.median(self.batch_s) if self.batch_s else None

    def single_qps(self) -> float | None:
        return self.single_queries / statistics.median(self.single_s) if self.single_s else None

    def batch_qpc(self) -> float | None:
        return self.queries / statistics.median(self.batch_cpu) if self.batch_cpu else None

    def single_qpc(self) -> float | None:
        return self.single_queries / statistics.median(self.single_cpu) if self.single_cpu else None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(batch_queries_per_s=self.batch_qps(), single_queries_per_s=self.single_qps())
        out.update(batch_queries_per_cpu_s=self.batch_qpc(), single_queries_per_cpu_s=self.single_qpc())
        return out


@dataclasses.dataclass
class BuildRow:
    lang: str
    direction: str
    engine: str
    how: str
    docs: int
    seconds: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def rate(self) -> float | None:
        return self.docs / statistics.median(self.seconds) if self.seconds else None

    def cpu_rate(self) -> float | None:
        return self.docs / statistics.median(self.cpu) if self.cpu else None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(docs_per_s=self.rate(), docs_per_cpu_s=self.cpu_rate())
        return out


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


# --------------------------------------------------------------------------- neardup


def neardup_config(lang: str, args: argparse.Namespace) -> Any:
    from neardup.config import DedupConfig

    mode, n = args.shingles[lang]
    return DedupConfig.create(shingle=mode, ngram=n, num_perm=NUM_PERM)


def open_index(storage: str, config: Any, workdir: Path, tag: str) -> Any:
    from neardup.index import LSHIndex

    if storage == "memory":
        url = "memory://"
    else:
        path = workdir / f"{tag}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        url = f"sqlite://{path}"
    return LSHIndex.open(url, config, keep_shingles=True, containment=True)


def matches_to_codes(scenario: Scenario, results: list[list[Any]]) -> np.ndarray:
    where = {k: i for i, k in enumerate(scenario.index_keys)}
    codes = [q * scenario.n_index + where[m.key] for q, found in enumerate(results) for m in found]
    return np.asarray(codes, dtype=np.int64)


def count_candidates(index: Any, run: Callable[[], Any]) -> tuple[Any, int]:
    """``run()`` with the storage's lookups counted: every probe row is one partition of one
    query, and a document is in one partition, so the rows' sizes sum to the candidates."""
    storage = index.storage
    original = storage.lookup
    total = 0

    def counting(*a: Any, **kw: Any) -> Any:
        nonlocal total
        found = original(*a, **kw)
        total += sum(int(r.size) for r in found.rows)
        return found

    storage.lookup = counting
    try:
        out = run()
    finally:
        del storage.lookup
    return out, total


def check_exact_scores(scenario: Scenario, results: list[list[Any]]) -> list[str]:
    """Exact matches must carry the truth's containment, and every pair at or above C."""
    assert scenario.pair_codes is not None
    truth_c = scenario.containment()
    where = {k: i for i, k in enumerate(scenario.index_keys)}
    bad = []
    for q, found in enumerate(results):
        for m in found:
            code = q * scenario.n_index + where[m.key]
            i = int(np.searchsorted(scenario.pair_codes, code))
            want = (
                float(truth_c[i]) if i < scenario.pair_codes.size and scenario.pair_codes[i] == code else 0.0
            )
            if not m.exact or abs(m.containment - want) > 1e-9:
                bad.append(
                    f"{scenario.query_keys[q]} -> {m.key}: {m.containment} (exact={m.exact}), truth {want}"
                )
    return bad


def bench_neardup(
    storage: str, scenario: Scenario, config: Any, args: argparse.Namespace, workdir: Path
) -> tuple[list[BuildRow], list[QueryRow], dict[str, Any]]:
    assert scenario.index_sketch is not None
    lang, way = scenario.lang, scenario.direction
    builds = [
        BuildRow(lang, way, f"neardup {storage}", "insert_many (texts)", scenario.n_index),
        BuildRow(lang, way, f"neardup {storage}", "insert_signatures (sigs + sets)", scenario.n_index),
    ]
    sets = scenario.index_sketch.set_list()
    index = None
    for i in range(args.rounds):
        if index is not None:
            index.close()
        index = open_index(storage, config, workdir, f"{lang}-{way}-sig")
        t, _ = cpu_timed(
            lambda index=index: index.insert_signatures(
                scenario.index_keys, scenario.index_sketch.sigs, shingles=sets
            ),
            builds[1].cpu,
        )
        builds[1].seconds.append(t)
        index.close()
        index = open_index(storage, config, workdir, f"{lang}-{way}")
        t, _ = cpu_timed(
            lambda index=index: index.insert_many(scenario.index_keys, scenario.index_texts), builds[0].cpu
        )
        builds[0].seconds.append(t)
        progress(f"  neardup {storage} {lang} {way} build round {i + 1}: {t:.2f} s")
    assert index is not None
    extra: dict[str, Any] = {"stats": _stats(index)}
    rows: list[QueryRow] = []
    texts = scenario.query_texts
    singles = texts[: args.single_queries]
    try:
        for exact in (True, False):
            mode = "exact" if exact else "estimate"
            for c in args.thresholds:
                row = QueryRow(lang, way, c, f"neardup {storage}", mode, len(texts))
                rows.append(row)

                def batch(c: float = c, exact: bool = exact) -> list[list[Any]]:
                    return index.query_containment_many(texts, c, direction=way, exact=exact)

                try:
                    # the first round's answers are scored; counting the lookups' rows costs a sum
                    t, (results, cands) = cpu_timed(lambda: count_candidates(index, batch), row.batch_cpu)
                    row.batch_s.append(t)
                    for _ in range(args.rounds - 1):
                        row.batch_s.append(cpu_timed(batch, row.batch_cpu)[0])
                    row.avg_candidates = cands / len(texts)
                    row.quality = Quality.of(scenario, matches_to_codes(scenario, results), c)
                    if exact:
                        bad = check_exact_scores(scenario, results)
                        if bad:
                            row.notes.append(f"{len(bad)} exact scores differ from the truth, e.g. {bad[0]}")
                    row.single_queries = len(singles)
                    single_out: list[list[Any]] = []
                    for _ in range(args.rounds):
                        t, single_out = cpu_timed(
                            lambda c=c, exact=exact: [
                                index.query_containment(s, c, direction=way, exact=exact) for s in singles
                            ],
                            row.single_cpu,
                        )
                        row.single_s.append(t)
                    if single_out != results[: len(singles)]:
                        differ = sum(a != b for a, b in zip(single_out, results, strict=False))
                        row.notes.append(f"{differ} single-query answers differ from the batch's")
                except Exception as exc:
                    row.error = describe_error(exc)
                    progress(f"  neardup {storage} {lang} {way} {mode} C={c}: FAILED {row.error}")
                    continue
                progress(
                    f"  neardup {storage} {lang} {way} {mode} C={c}: recall {row.quality.recall:.3f} "
                    f"precision {row.quality.precision:.3f}, batch {row.batch_qps():,.0f} q/s, "
                    f"single {row.single_qps():,.0f} q/s"
                )
        if args.profile and storage == "memory":
            extra["profile"] = profile_neardup(index, scenario, args)
    finally:
        index.close()
    return builds, rows, extra


def _stats(index: Any) -> dict[str, Any]:
    try:
        stats = index.stats()
    except Exception as exc:
        return {"error": describe_error(exc)}
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool, list))}


def profile_neardup(index: Any, scenario: Scenario, args: argparse.Namespace) -> dict[str, str]:
    """cProfile of one batch call and of the single queries, exact, at C = 0.7 (or the middle C)."""
    c = 0.7 if 0.7 in args.thresholds else args.thresholds[len(args.thresholds) // 2]
    out = {}
    singles = scenario.query_texts[: args.single_queries]
    jobs: dict[str, Callable[[], Any]] = {
        "batch": lambda: index.query_containment_many(scenario.query_texts, c, direction=scenario.direction),
        "single": lambda: [index.query_containment(s, c, direction=scenario.direction) for s in singles],
    }
    for name, job in jobs.items():
        prof = cProfile.Profile()
        prof.enable()
        job()
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
        out[f"{name} C={c}"] = buf.getvalue()
    return out


# --------------------------------------------------------------------------- datasketch


def bench_datasketch(scenario: Scenario, args: argparse.Namespace) -> tuple[list[BuildRow], list[QueryRow]]:
    from datasketch import MinHash, MinHashLSHEnsemble

    from neardup.core.containment import estimate_containment

    ix, qs = scenario.index_sketch, scenario.query_sketch
    assert ix is not None and qs is not None
    lang, way = scenario.lang, scenario.direction
    template = MinHash(num_perm=NUM_PERM, scheme="affine32")

    def minhash(row: np.ndarray) -> Any:
        return MinHash(hashvalues=row, permutations=template.permutations, scheme="affine32")

    entries = [
        (k, minhash(ix.sigs[i]), int(ix.sizes[i]))
        for i, k in enumerate(scenario.index_keys)
        if ix.sizes[i] > 0
    ]
    query_mh = [minhash(s) for s in qs.sigs]
    where = {k: i for i, k in enumerate(scenario.index_keys)}
    builds, rows = [], []
    for c in args.thresholds:
        init = BuildRow(
            lang, way, "datasketch", f"MinHashLSHEnsemble(threshold={c}) constructor", len(entries)
        )
        build = BuildRow(lang, way, "datasketch", f"index (MinHash objects), threshold {c}", len(entries))
        builds += [init, build]
        lsh = None
        for _ in range(args.rounds):
            t, lsh = cpu_timed(
                lambda c=c: MinHashLSHEnsemble(threshold=c, num_perm=NUM_PERM, num_part=NUM_PART), init.cpu
            )
            init.seconds.append(t)
            build.seconds.append(cpu_timed(lambda lsh=lsh: lsh.index(list(entries)), build.cpu)[0])
        init.notes.append("optimises (bands, rows) for 10 size ratios by numerical integration")
        row = QueryRow(lang, way, c, "datasketch", "candidates", len(qs.sizes))
        rows.append(row)
        found: list[list[str]] = []
        for _ in range(args.rounds):
            t, found = cpu_timed(
                lambda lsh=lsh: [
                    list(lsh.query(m, int(n))) if n > 0 else []
                    for m, n in zip(query_mh, qs.sizes, strict=True)
                ],
                row.single_cpu,
            )
            row.single_s.append(t)
        row.single_queries = len(query_mh)
        q_of = np.repeat(np.arange(len(found), dtype=np.int64), [len(f) for f in found])
        d_of = np.array([where[k] for f in found for k in f], dtype=np.int64)
        row.avg_candidates = d_of.size / max(1, len(found))
        row.quality = Quality.of(scenario, q_of * scenario.n_index + d_of, c)
        jac = np.count_nonzero(qs.sigs[q_of] == ix.sigs[d_of], axis=1) / NUM_PERM
        est = estimate_containment(jac, qs.sizes[q_of], ix.sizes[d_of], "query_in_doc")
        keep = est >= c - 1e-12
        row.filtered = Quality.of(scenario, (q_of * scenario.n_index + d_of)[keep], c)
        progress(
            f"  datasketch {lang} C={c}: recall {row.quality.recall:.3f} precision "
            f"{row.quality.precision:.3f} (filtered {row.filtered.precision:.3f}), "
            f"{row.single_qps():,.0f} q/s"
        )
        del lsh
    return builds, rows


# --------------------------------------------------------------------------- output


def fmt(v: float | None, spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


def quality_table(rows: Sequence[QueryRow]) -> str:
    header = ["lang", "direction", "C", "engine", "mode", "truth pairs", "returned", "recall", "precision"]
    header += ["F1", "avg candidates", "batch q/s", "batch q/CPU-s", "single q/s", "single q/CPU-s"]
    body = []
    for r in rows:
        if r.error or r.quality is None:
            body.append([r.lang, r.direction, r.threshold, r.engine, r.mode, f"error: {r.error}", *["-"] * 9])
            continue
        q = r.quality
        body.append(
            [
                r.lang,
                r.direction,
                f"{r.threshold:.1f}",
                r.engine,
                r.mode,
                f"{q.truth:,}",
                f"{q.predicted:,}",
                fmt(q.recall),
                fmt(q.precision),
                fmt(q.f1),
                fmt(r.avg_candidates, ".1f"),
                fmt(r.batch_qps(), ",.0f"),
                fmt(r.batch_qpc(), ",.0f"),
                fmt(r.single_qps(), ",.0f"),
                fmt(r.single_qpc(), ",.0f"),
            ]
        )
        if r.filtered is not None:
            f = r.filtered
            kept = [f"{f.truth:,}", f"{f.predicted:,}", fmt(f.recall), fmt(f.precision), fmt(f.f1)]
            label = "candidates kept by neardup's estimate"
            body.append([r.lang, r.direction, f"{r.threshold:.1f}", r.engine, label, *kept, *["-"] * 5])
    return markdown_table(header, body)


def kind_table(rows: Sequence[QueryRow], c: float) -> str:
    kinds = sorted({k for r in rows if r.quality for k in r.quality.recall_by_kind})
    header = ["lang", "direction", "engine", "mode", *kinds]
    body = []
    for r in rows:
        if r.quality is None or abs(r.threshold - c) > 1e-9:
            continue
        by = r.quality.recall_by_kind
        body.append([r.lang, r.direction, r.engine, r.mode, *[fmt(by.get(k)) for k in kinds]])
    return markdown_table(header, body)


def build_table(rows: Sequence[BuildRow]) -> str:
    body = [
        [
            r.lang,
            r.direction,
            r.engine,
            r.how,
            f"{r.docs:,}",
            fmt(statistics.median(r.seconds), ".3f"),
            fmt(r.rate(), ",.0f"),
            fmt(statistics.median(r.cpu), ".3f") if r.cpu else "-",
            fmt(r.cpu_rate(), ",.0f"),
        ]
        for r in rows
        if r.seconds
    ]
    header = ["lang", "index of", "engine", "build", "docs", "median s", "docs/s", "median CPU s"]
    return markdown_table([*header, "docs/CPU-s"], body)


def data_table(scens: Sequence[Scenario]) -> str:
    body = []
    for s in scens:
        assert s.index_sketch is not None and s.query_sketch is not None
        body.append(
            [
                s.lang,
                s.direction,
                f"{s.n_index:,}",
                f"{int(np.median(s.index_sketch.sizes)):,}",
                f"{len(s.query_keys):,}",
                f"{int(np.median(s.query_sketch.sizes)):,}",
                f"{0 if s.pair_codes is None else s.pair_codes.size:,}",
            ]
        )
    header = ["lang", "scenario", "indexed docs", "median doc shingles", "queries", "median query shingles"]
    return markdown_table([*header, "pairs sharing a shingle"], body)


# --------------------------------------------------------------------------- main


def parse_shingle(text: str) -> tuple[str, int]:
    mode, _, n = text.partition("-")
    if mode not in ("word", "char") or not n.isdigit():
        raise argparse.ArgumentTypeError(f"expected word-N or char-N, got {text!r}")
    return mode, int(n)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add("--corpus", type=Path, default=default_corpus_path(), help="gzip JSONL corpus (default: %(default)s)")
    add("--langs", default="en,zh", help="languages, each reported apart (default: %(default)s)")
    add(
        "--sources",
        type=int,
        default=400,
        help="sources per language, one planted copy each (default: %(default)s)",
    )
    add(
        "--negatives",
        type=int,
        default=2_600,
        help="unrelated indexed documents per language (default: %(default)s)",
    )
    add(
        "--negative-queries",
        type=int,
        default=200,
        help="unrelated queries per language (default: %(default)s)",
    )
    add(
        "--min-units",
        type=int,
        default=80,
        help="least words (Chinese: characters) of a source (default: %(default)s)",
    )
    add("--en-shingle", type=parse_shingle, default=("word", 3), help="English shingles (default: word-3)")
    add("--zh-shingle", type=parse_shingle, default=("char", 3), help="Chinese shingles (default: char-3)")
    add("--thresholds", default="0.5,0.7,0.9", help="containment thresholds C (default: %(default)s)")
    add("--directions", default=",".join(DIRECTIONS), help="scenarios to run (default: %(default)s)")
    add("--engines", default=",".join(ENGINES), help="engines to run (default: %(default)s)")
    add("--rounds", type=int, default=3, help="rounds per timing; the median is shown (default: %(default)s)")
    add("--single-queries", type=int, default=300, help="queries timed one at a time (default: %(default)s)")
    add("--profile", action="store_true", help="cProfile neardup's queries (memory, exact, C=0.7)")
    add("--seed", type=int, default=0, help="sampling and planting seed (default: %(default)s)")
    add("--quick", action="store_true", help="60 sources, 300 negatives, 40 negative queries, 1 round")
    default_out = Path(__file__).resolve().parent / "out" / "containment.json"
    add("--json", type=Path, default=default_out, help="figures as JSON (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sources, args.negatives, args.negative_queries, args.rounds = 60, 300, 40, 1
        args.single_queries = min(args.single_queries, 40)
    args.langs = [x for x in args.langs.split(",") if x]
    args.thresholds = [float(x) for x in args.thresholds.split(",") if x]
    args.directions = [x for x in args.directions.split(",") if x]
    args.engines = [x for x in args.engines.split(",") if x]
    args.shingles = {"en": args.en_shingle, "zh": args.zh_shingle}
    for name, given, allowed in (
        ("languages", args.langs, LANGS),
        ("directions", args.directions, DIRECTIONS),
        ("engines", args.engines, ENGINES),
    ):
        if set(given) - set(allowed):
            ap.error(f"unknown {name} {sorted(set(given) - set(allowed))}; choose from {', '.join(allowed)}")
    if not args.thresholds or any(not 0 < c <= 1 for c in args.thresholds):
        ap.error("--thresholds must be in (0, 1]")
    if (
        min(args.sources, args.rounds, args.single_queries) < 1
        or min(args.negatives, args.negative_queries) < 0
    ):
        ap.error("--sources, --rounds and --single-queries must be at least 1")
    return args


def warm_up(config: Any, workdir: Path) -> None:
    """Compile (or load) numba's kernels on a throwaway index, outside the timing."""
    for storage in ("memory", "sqlite"):
        index = open_index(storage, config, workdir, "warm-up")
        try:
            index.insert_many(["a", "b"], ["one two three four five six seven", "eight nine ten eleven"])
            for exact in (True, False):
                for way in DIRECTIONS:
                    index.query_containment_many(["two three four five"], 0.5, direction=way, exact=exact)
        finally:
            index.close()


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    info = machine_info()
    command = shlex.join(["python", *sys.argv])
    print("## Machine\n")
    print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
    print(f"\ncommand: `{command}`")
    print(f"load average at start: {os.getloadavg()}")
    scens: list[Scenario] = []
    builds: list[BuildRow] = []
    rows: list[QueryRow] = []
    extras: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="neardup-containment-bench-") as tmp:
        workdir = Path(tmp)
        for lang in args.langs:
            config = neardup_config(lang, args)
            warm_up(config, workdir)
            t, planted = timed(lambda lang=lang: plant_lang(lang, args))
            progress(f"{lang}: {len(planted.sources)} planted copies in {t:.1f} s")
            for way, scen in scenarios_of(planted).items():
                if way not in args.directions:
                    continue
                scen.index_sketch = sketch(scen.index_texts, config)
                scen.query_sketch = sketch(scen.query_texts, config)
                t, (scen.pair_codes, scen.shared) = timed(
                    lambda s=scen: exact_intersections(s.query_sketch, s.index_sketch)
                )
                progress(f"{lang} {way}: truth over {scen.pair_codes.size:,} pairs in {t:.1f} s")
                # the benchmark's own objects (texts, sketches, datasketch MinHashes) out of the
                # cyclic collector's way, so that its passes cost what they cost in a lean process
                gc.collect()
                gc.freeze()
                scens.append(scen)
                for storage in ("memory", "sqlite"):
                    if storage in args.engines:
                        b, r, extra = bench_neardup(storage, scen, config, args, workdir)
                        builds += b
                        rows += r
                        extras[f"{lang} {way} {storage}"] = extra
                if "datasketch" in args.engines and way == "query_in_doc":
                    b, r = bench_datasketch(scen, args)
                    builds += b
                    rows += r
    elapsed = time.perf_counter() - started
    shingles = ", ".join(
        f"{lang}: {m} {n}-grams" for lang, (m, n) in args.shingles.items() if lang in args.langs
    )
    print(f"\nshingles: {shingles}; num_perm {NUM_PERM}; datasketch num_part {NUM_PART}")
    print("\n## Data\n")
    print(data_table(scens))
    print(f"\n## Containment search (timings: median of {args.rounds})\n")
    print(quality_table(rows))
    c_mid = 0.7 if 0.7 in args.thresholds else args.thresholds[0]
    print(f"\n## Recall by query kind at C = {c_mid}\n")
    print(kind_table(rows, c_mid))
    print(f"\n## Index build (median of {args.rounds})\n")
    print(build_table(builds))
    notes = [
        f"{r.lang} {r.direction} C={r.threshold} {r.engine} {r.mode}: {n}" for r in rows for n in r.notes
    ]
    if notes:
        print("\n" + "\n".join(f"- {n}" for n in notes))
    for key, extra in extras.items():
        for name, text in extra.get("profile", {}).items():
            print(f"\n### cProfile, {key}, {name}\n\n```\n{text.strip()}\n```")
    print(f"\nload average at end: {os.getloadavg()}; whole run {elapsed:.0f} s")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "date": dt.date.today().isoformat(),
        "command": command,
        "machine": info,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "data": [
            {
                "lang": s.lang,
                "direction": s.direction,
                "indexed": s.n_index,
                "queries": len(s.query_keys),
                "pairs_sharing_a_shingle": 0 if s.pair_codes is None else int(s.pair_codes.size),
            }
            for s in scens
        ],
        "queries": [r.to_dict() for r in rows],
        "builds": [b.to_dict() for b in builds],
        "extras": extras,
        "notes": notes,
        "elapsed_s": elapsed,
    }
    args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
