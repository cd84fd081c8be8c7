"""neardup against datasketch and rensa: the same job, the same corpus, back to back.

One command builds a JSONL corpus (``id``, ``text``) with a planted answer, or reads
yours, and runs three pipelines on it, each in a fresh process, for ``--rounds`` rounds:

* ``neardup``: the real CLI, ``neardup dedup FILE -o OUT --id-column id --shingle word
  --ngram 5 --num-perm 128 --threshold 0.8`` (exact verification is its default; all seven
  outputs are written). It runs from a copy of ``src/neardup`` taken at the start, so that
  edits made to the source meanwhile cannot mix versions into the rounds
  (``--no-snapshot``: the live source). The copy has no numba cache yet: its first run
  compiles the kernels, is reported as the cold figure and is left out of the rounds, which
  then load the kernels from the on-disk cache. A second row runs it with ``--workers 1``
  (``--no-one-worker``), since the other two pipelines are single-threaded Python around
  their engines; ``--one-layer`` adds a row with ``--band-layers 1``, the others' shape;
  ``--limited LIMIT`` adds one more with ``--memory-limit LIMIT``. (A JSON
  Lines corpus is read in passes, not held, by default: the 700 MB row earlier runs had, to
  show that mode, is now the default row.)
* ``datasketch`` and ``rensa``: the same job in Python, in batches of 2,000 documents:
  read the JSONL, normalise like neardup (NFKD, accents dropped, lower case, punctuation,
  symbols and ``_`` as spaces, one token per Chinese / Japanese / Thai ... letter), build
  the word (or character) n-gram shingle strings, sketch them with the engine's MinHash
  (``datasketch.MinHash.bulk``, i.e. ``update_batch`` with shared permutations, or
  ``rensa.RMinHash.from_token_sets``), insert and query the engine's LSH index
  (``MinHashLSH`` with ``params=(bands, rows)``, ``RMinHashLSH`` with ``num_bands``) with the
  first layer of the shape neardup chooses (the ``num_perm // rows`` bands that cover each value
  once: neither engine has a second layer of bands over the same values); then read the file
  again and verify every candidate pair by the exact Jaccard of the two shingle sets (as
  sorted 64-bit hashes, built only for the documents in candidate pairs, as neardup does),
  join the pairs at or above the threshold with union-find, keep the first document of each cluster, and write
  ``deduped.jsonl`` (the kept input lines) and ``duplicates.jsonl`` (``id``,
  ``duplicate_of``). Only the engines differ: the normalisation, shingles, permutation
  count, rows per band, threshold and verification are the same. ``datasketch-per-doc`` and
  ``rensa-per-doc`` run the same job with the engines' one-document-at-a-time calls (a
  ``MinHash`` / ``RMinHash`` made and updated per document, ``insert`` and ``query`` per
  document), as their READMEs show them.

Each figure is measured from process start to exit (imports included): the median wall
time over the rounds, documents per second, CPU seconds, and peak RSS (the process's
``ru_maxrss``; a small launcher starts each process, because a child's ``ru_maxrss`` also
counts the peak of the process that forked it, and this one holds the corpus). Pair
precision / recall / F1 come from each pipeline's duplicates file, scored against the
planted answer (``corpus.pair_scores``: every pair inside a predicted cluster counts), next
to the recall a perfect LSH stage would give. The normaliser of the Python pipelines is
checked against ``neardup.tokenize`` on the corpus, and the agreement is printed.

Run from the repository root::

    .venv/bin/python benchmarks/compare.py --quick                # 5,000 docs, 1 round, live source
    .venv/bin/python benchmarks/compare.py                        # 100,000 synthetic docs, 3 rounds
    .venv/bin/python benchmarks/compare.py --corpus real-en --rounds 3
    .venv/bin/python benchmarks/compare.py --corpus real-zh --shingle char --ngram 3
    .venv/bin/python benchmarks/compare.py --input my.jsonl --rounds 1   # no answer: no F1

datasketch and rensa are benchmark-only dependencies (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import datetime as dt
import functools
import hashlib
import itertools
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from common import machine_info, markdown_table
from corpus import (
    DUPLICATE_HEAVY_KINDS,
    NEGATIVE_KINDS,
    ORIGINAL,
    Record,
    Scores,
    default_corpus_path,
    generate_synthetic,
    labels_from_groups,
    load_originals,
    pair_scores,
    plant,
    true_pairs,
)

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src" / "neardup"
BATCH = 2_000
"""Documents per batch in the Python pipelines (bounds the shingle strings held at once)."""
OTHERS = ("rensa", "datasketch", "rensa-per-doc", "datasketch-per-doc")

# Targets from the issues: printed next to the figures, never asserted. The duplicate-heavy
# corpus's are its own; the synthetic and other corpora's are the general ones.
TARGET_SPEEDUP = {"rensa": 5.0, "datasketch": 20.0}
TARGET_SPEEDUP_DUPLICATE_HEAVY = {"rensa": 8.0, "datasketch": 20.0}


@dataclass(frozen=True)
class Settings:
    """What all pipelines share; ``bands`` x ``rows`` is the first layer of neardup's shape, and
    ``neardup_bands`` the bands neardup uses over both layers."""

    shingle: str
    ngram: int
    num_perm: int
    threshold: float
    bands: int
    rows: int
    neardup_bands: int = 0
    seed: int = 42
    sketch: str = "stratified"
    id_field: str = "id"
    text_field: str = "text"

    def argv(self) -> list[str]:
        """The settings as command-line options of this script."""
        out: list[str] = []
        for name, value in asdict(self).items():
            out += ["--" + name.replace("_", "-"), str(value)]
        return out


# --------------------------------------------------------------------------- normaliser

# neardup.core.unicode_table.UNSPACED_RANGES: scripts written without spaces, one token a
# letter. Copied so that the Python pipelines never import neardup; the parent checks the
# copy and the tokens against neardup's before any timing.
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0x1B00, 0x1B7F),
    (0x2E80, 0x2FDF),
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303C),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x31A0, 0x31BF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA000, 0xA4CF),
    (0xA980, 0xA9DF),
    (0xAA60, 0xAA7F),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x1B000, 0x1B16F),
    (0x20000, 0x323AF),
)


def _char_class(ranges: Sequence[tuple[int, int]]) -> str:
    """The inside of a regex character class matching ``ranges``."""
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


@functools.cache
def _vanishing() -> dict[int, None]:
    """Nonspacing marks (Mn: accents, once decomposed) and format characters (Cf: zero-width
    spaces, soft hyphens), which neardup drops, as a ``str.translate`` table. All of them lie
    below U+20000 or in plane 14; built once, on the first non-ASCII text."""
    span = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    return dict.fromkeys(c for c in span if unicodedata.category(chr(c)) in ("Mn", "Cf"))


_U = _char_class(UNSPACED_RANGES)
_P = _char_class(((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)))
"""Private-use characters: word characters for neardup, not for Python's ``\\w``."""
_WORD_TOKEN = re.compile(rf"(?=[^\W_])[{_U}]|(?:[^\W_{_U}]|[{_P}])+")
"""A letter of an unspaced script, or a run of other letters and digits."""
_SPECIAL = re.compile(f"[{_U}{_P}]")
"""Texts without these need only the plain (three times faster) word pattern."""
_PLAIN_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[^\W_]+", re.ASCII)
_NON_WORD = re.compile(rf"(?:[^\w{_P}]|_)+")
_UNSPACED_GAP = re.compile(rf"(?<=[{_U}]) (?=[{_U}])")


def normalise(text: str) -> str:
    """NFKD, lower case, accents and format characters dropped (neardup's defaults)."""
    if text.isascii():  # already decomposed, no marks: the common case costs one pass
        return text.lower()
    return unicodedata.normalize("NFKD", text).lower().translate(_vanishing())


def word_tokens(text: str) -> list[str]:
    """neardup's word tokens: punctuation, symbols and ``_`` separate words."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    norm = normalise(text)
    return (_WORD_TOKEN if _SPECIAL.search(norm) else _PLAIN_WORD).findall(norm)


def char_text(text: str) -> str:
    """neardup's character stream: words joined by one space, none between two letters
    of unspaced scripts."""
    flat = _NON_WORD.sub(" ", normalise(text)).strip()
    return _UNSPACED_GAP.sub("", flat)


def shingles(text: str, mode: str, n: int) -> list[str]:
    """The n-gram shingles as strings; fewer than n tokens make one shingle, none make none."""
    if mode == "char":
        s = char_text(text)
        return [s[i : i + n] for i in range(len(s) - n + 1)] if len(s) >= n else ([s] if s else [])
    toks = word_tokens(text)
    if len(toks) < n:
        return [" ".join(toks)] if toks else []
    return list(map(" ".join, zip(*(toks[i:] for i in range(n)), strict=False)))  # fastest in Python


def python_tokens(text: str, mode: str) -> list[str]:
    """The tokens the Python pipelines see, in neardup.tokenize's form."""
    return list(char_text(text)) if mode == "char" else word_tokens(text)


# --------------------------------------------------------------------------- exact verification


def hash_set(shingle_list: Sequence[str]) -> np.ndarray:
    """A document's shingles as a sorted array of unique 64-bit hashes (Python's ``hash``)."""
    return np.unique(np.fromiter(map(hash, shingle_list), dtype=np.int64, count=len(shingle_list)))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted unique hash arrays."""
    same = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - same
    return same / union if union else 0.0


class UnionFind:
    """Components whose root is their smallest member (so "keep first" is the root)."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


# --------------------------------------------------------------------------- engines


class Engine(Protocol):
    """MinHash sketches and an LSH index: the only part that differs between pipelines."""

    def sketch(self, shingle_lists: list[list[str]]) -> list[Any]: ...

    def insert(self, keys: list[int], sketches: list[Any]) -> None: ...

    def query(self, sketches: list[Any]) -> list[list[int]]: ...


class DatasketchEngine:
    """``datasketch.MinHash`` (SHA-1 of each shingle, the default ``affine32`` scheme) and
    ``MinHashLSH`` in memory."""

    def __init__(self, s: Settings) -> None:
        from datasketch import MinHash, MinHashLSH

        self.minhash = MinHash
        self.kwargs = {"num_perm": s.num_perm, "seed": s.seed}
        self.lsh = MinHashLSH(threshold=s.threshold, num_perm=s.num_perm, params=(s.bands, s.rows))

    def sketch(self, shingle_lists: list[list[str]]) -> list[Any]:
        # MinHash.bulk = one MinHash(num_perm=...) copied per document, then update_batch
        encoded = ([s.encode("utf-8") for s in lst] for lst in shingle_lists)
        return list(self.minhash.bulk(encoded, **self.kwargs))

    def insert(self, keys: list[int], sketches: list[Any]) -> None:
        with self.lsh.insertion_session(buffer_size=max(1, len(keys))) as session:
            for key, m in zip(keys, sketches, strict=True):
                session.insert(key, m, check_duplication=False)

    def query(self, sketches: list[Any]) -> list[list[int]]:
        return [self.lsh.query(m) for m in sketches]


class RensaEngine:
    """``rensa.RMinHash`` built in bulk from the shingle strings (``from_token_sets``), and
    ``RMinHashLSH`` filled with ``insert_many`` and asked with ``query_all``: rensa's bulk API."""

    def __init__(self, s: Settings) -> None:
        from rensa import RMinHash, RMinHashLSH

        self.rminhash = RMinHash
        self.num_perm, self.seed = s.num_perm, s.seed
        self.lsh = RMinHashLSH(s.threshold, s.num_perm, s.bands)

    def sketch(self, shingle_lists: list[list[str]]) -> list[Any]:
        return list(self.rminhash.from_token_sets(shingle_lists, self.num_perm, self.seed))

    def insert(self, keys: list[int], sketches: list[Any]) -> None:
        if keys and keys[-1] - keys[0] == len(keys) - 1:  # consecutive keys: the bulk insert
            self.lsh.insert_many(sketches, keys[0])
        else:
            self.lsh.insert_pairs(list(zip(keys, sketches, strict=True)))

    def query(self, sketches: list[Any]) -> list[list[int]]:
        return [list(c) for c in self.lsh.query_all(sketches)]


class DatasketchPerDocument(DatasketchEngine):
    """datasketch one document at a time, as its README shows it: a ``MinHash`` made and
    ``update_batch``-ed per document, ``MinHashLSH.insert`` and ``query`` per document."""

    def sketch(self, shingle_lists: list[list[str]]) -> list[Any]:
        out = []
        for lst in shingle_lists:
            m = self.minhash(**self.kwargs)
            m.update_batch([x.encode("utf-8") for x in lst])
            out.append(m)
        return out

    def insert(self, keys: list[int], sketches: list[Any]) -> None:
        for key, m in zip(keys, sketches, strict=True):
            self.lsh.insert(key, m, check_duplication=False)


class RensaPerDocument(RensaEngine):
    """rensa one document at a time: ``RMinHash(num_perm, seed).update(shingles)``,
    ``RMinHashLSH.insert`` and ``query`` per document."""

    def sketch(self, shingle_lists: list[list[str]]) -> list[Any]:
        out = []
        for lst in shingle_lists:
            m = self.rminhash(self.num_perm, self.seed)
            m.update(lst)
            out.append(m)
        return out

    def insert(self, keys: list[int], sketches: list[Any]) -> None:
        for key, m in zip(keys, sketches, strict=True):
            self.lsh.insert(key, m)

    def query(self, sketches: list[Any]) -> list[list[int]]:
        return [list(self.lsh.query(m)) for m in sketches]


ENGINES: dict[str, Callable[[Settings], Engine]] = {
    "datasketch": DatasketchEngine,
    "rensa": RensaEngine,
    "datasketch-per-doc": DatasketchPerDocument,
    "rensa-per-doc": RensaPerDocument,
}


# --------------------------------------------------------------------------- the Python pipeline


class Stages:
    """Seconds per stage, summed over batches."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


def read_batch(fh: IO[str], size: int, s: Settings) -> tuple[list[str], list[str]]:
    """Up to ``size`` records' ids and texts (blank lines skipped)."""
    ids: list[str] = []
    texts: list[str] = []
    for line in itertools.islice((ln for ln in fh if ln.strip()), size):
        d = json.loads(line)
        ids.append(str(d[s.id_field]))
        texts.append(d.get(s.text_field) or "")
    return ids, texts


def python_pipeline(name: str, *, src: Path, out: Path, s: Settings, batch: int) -> dict[str, Any]:
    """Deduplicate ``src`` into ``out`` with one engine; returns the stage figures.

    Pass 1 streams the file in batches: shingles, sketches, LSH insert and query, candidate
    pairs. Pass 2 re-reads it and builds the shingle sets of the documents in candidate
    pairs only (as neardup does), for the exact Jaccard of each pair.
    """
    stages = Stages()
    with stages("import"):
        engine = ENGINES[name](s)
    ids: list[str] = []
    pairs: list[tuple[int, int]] = []
    with src.open(encoding="utf-8") as fh:
        while True:
            with stages("read"):
                batch_ids, texts = read_batch(fh, batch, s)
            if not batch_ids:
                break
            base = len(ids)
            ids += batch_ids
            with stages("shingles"):
                lists = [shingles(t, s.shingle, s.ngram) for t in texts]
            keys = [base + i for i, lst in enumerate(lists) if lst]  # empty documents match nothing
            nonempty = [lists[k - base] for k in keys]
            del lists, texts
            with stages("minhash"):
                sketches = engine.sketch(nonempty)
            with stages("lsh insert"):
                engine.insert(keys, sketches)
            with stages("lsh query"):  # every pair once, from its later member
                found = engine.query(sketches)
                pairs += [(c, k) for k, cands in zip(keys, found, strict=True) for c in cands if c < k]
    with stages("verify: re-read, shingle sets"):
        sets = candidate_sets(src, {d for pair in pairs for d in pair}, s)
    uf = UnionFind(len(ids))
    with stages("verify"):
        verified = 0
        for a, b in pairs:
            if jaccard(sets[a], sets[b]) >= s.threshold:
                verified += 1
                uf.union(a, b)
    with stages("clusters"):
        roots = [uf.find(i) for i in range(len(ids))]
    with stages("write"):
        write_outputs(src, out, ids=ids, roots=roots, s=s)
    removed = sum(r != i for i, r in enumerate(roots))
    figures = {
        "docs": len(ids),
        "removed": removed,
        "candidate_pairs": len(pairs),
        "verified_pairs": verified,
    }
    return {"stages": stages.seconds, **figures}


def candidate_sets(src: Path, docs: set[int], s: Settings) -> dict[int, np.ndarray]:
    """The shingle hash sets of ``docs`` (positions in the file), read again from ``src``."""
    sets: dict[int, np.ndarray] = {}
    with src.open(encoding="utf-8") as fh:
        for i, line in enumerate(ln for ln in fh if ln.strip()):
            if i in docs:
                text = json.loads(line).get(s.text_field) or ""
                sets[i] = hash_set(shingles(text, s.shingle, s.ngram))
    return sets


def write_outputs(src: Path, out: Path, *, ids: list[str], roots: list[int], s: Settings) -> None:
    """``deduped.jsonl``: the kept input lines, as they were; ``duplicates.jsonl``."""
    out.mkdir(parents=True, exist_ok=True)
    with src.open(encoding="utf-8") as fh, (out / "deduped.jsonl").open("w", encoding="utf-8") as kept:
        for i, line in enumerate(ln for ln in fh if ln.strip()):
            if roots[i] == i:
                kept.write(line if line.endswith("\n") else line + "\n")
    with (out / "duplicates.jsonl").open("w", encoding="utf-8") as dup:
        for i, r in enumerate(roots):
            if r != i:
                dup.write(json.dumps({s.id_field: ids[i], "duplicate_of": ids[r]}, ensure_ascii=False) + "\n")


def child_main(args: argparse.Namespace) -> int:
    """Run one Python pipeline (in its own process) and print its figures as JSON."""
    figures = python_pipeline(
        args.child,
        src=Path(args.child_input),
        out=Path(args.child_out),
        s=settings_from(args),
        batch=args.batch,
    )
    print(json.dumps(figures))
    return 0


# --------------------------------------------------------------------------- corpora


@dataclass
class Corpus:
    """A JSONL file and, when known, the planted answer in file order."""

    name: str
    path: Path
    docs: int
    megabytes: float
    answer: list[Record] | None


def synthetic_records(n: int, dup_fraction: float, seed: int) -> list[Record]:
    return generate_synthetic(n, dup_fraction=dup_fraction, seed=seed, words_per_doc=300)


def real_records(lang: str, n: int, *, seed: int, path: Path) -> list[Record]:
    """Originals of one language with planted variants (all kinds, negatives included),
    about ``n`` records in all or as many as the corpus gives."""
    variants, dup_fraction = 2, 0.5
    originals = load_originals(path, lang=lang)
    want = math.ceil(n / (1 + variants * dup_fraction))
    if want < len(originals):  # as load_originals(limit=...) picks them, without reading twice
        originals = [originals[i] for i in sorted(random.Random(seed).sample(range(len(originals)), want))]
    return plant(originals, seed=seed, variants_per_doc=variants, dup_fraction=dup_fraction)


def duplicate_heavy_records(n: int, *, seed: int, path: Path) -> list[Record]:
    """English and Chinese originals, each with two variants of the ten kinds in turn
    (exact copies, typos, rewordings, boilerplate around the text, reformatting, full-width
    forms and accents, reordered sentences, long 80-90% copies, and the two negatives: 20-30%
    copies inside other text, heavy rewordings): about ``n`` rows, about half of them
    near-duplicates of another row; the whole shared corpus gives about 94,000 rows. The
    negatives' other text is drawn from the corpus's vocabulary, so no original is held back."""
    originals = load_originals(path)
    want = math.ceil(n / 3)
    if want < len(originals):
        originals = [originals[i] for i in sorted(random.Random(seed).sample(range(len(originals)), want))]
    donors: list[Record] = []
    return plant(
        originals, seed=seed, variants_per_doc=2, dup_fraction=1.0, kinds=DUPLICATE_HEAVY_KINDS, donors=donors
    )


def write_corpus(records: Sequence[Record], path: Path) -> None:
    """The corpus (``id``, ``text``) and its answer (``id``, ``group``, ``kind``, ``parent``)."""
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n")
    with answer_path(path).open("w", encoding="utf-8") as fh:
        for r in records:
            row = {k: r.get(k) for k in ("id", "group", "kind", "parent")}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def answer_path(corpus: Path) -> Path:
    return corpus.with_name(corpus.stem + ".answer.jsonl")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_corpus(args: argparse.Namespace, workdir: Path) -> Corpus:
    """Generate the corpus into ``workdir``, or take ``--input`` (with ``--answer`` if given)."""
    if args.input is not None:
        answer = read_jsonl(args.answer) if args.answer else None
        if answer is not None:
            for rec in answer:
                rec.setdefault("kind", "original")
                rec.setdefault("parent", rec["id"])
        return _corpus(args.input.name, args.input, answer)
    t0 = time.perf_counter()
    if args.corpus == "synthetic":
        records = synthetic_records(args.docs, args.dup_fraction, args.corpus_seed)
        name = f"synthetic English-like, ~300 words, {args.dup_fraction:.0%} near-duplicates"
    elif args.corpus == "duplicate-heavy":
        records = duplicate_heavy_records(args.docs, seed=args.corpus_seed, path=args.corpus_file)
        positives = sum(r["kind"] not in (ORIGINAL, *NEGATIVE_KINDS) for r in records)
        name = (
            f"duplicate-heavy real English and Chinese texts: {positives / len(records):.0%} of rows "
            "near-duplicates of another (exact copies, edits, boilerplate, long partial copies)"
        )
    else:
        lang = args.corpus.removeprefix("real-")
        records = real_records(lang, args.docs, seed=args.corpus_seed, path=args.corpus_file)
        name = f"real {lang} texts with planted variants (all kinds)"
    path = workdir / "corpus.jsonl"
    write_corpus(records, path)
    print(f"built {len(records):,} documents in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return _corpus(name, path, records)


def _corpus(name: str, path: Path, answer: list[Record] | None) -> Corpus:
    with path.open(encoding="utf-8") as fh:
        docs = sum(1 for line in fh if line.strip())
    if answer is not None and len(answer) != docs:
        raise SystemExit(f"{path}: {docs} records but the answer has {len(answer)}")
    return Corpus(name, path, docs, path.stat().st_size / 1e6, answer)


def texts_of(corpus: Corpus, s: Settings) -> list[str]:
    return [d.get(s.text_field) or "" for d in read_jsonl(corpus.path)]


# --------------------------------------------------------------------------- neardup side (parent)


def neardup_settings(args: argparse.Namespace) -> Settings:
    """The shared settings, with the LSH shape neardup chooses for them."""
    from neardup.config import DedupConfig
    from neardup.core.params import lsh_shape, second_layer_bands

    cfg = DedupConfig.create(
        shingle=args.shingle,
        ngram=args.ngram,
        num_perm=args.num_perm,
        threshold=args.threshold,
        seed=args.seed,
    )
    bands, rows = lsh_shape(cfg.lsh, cfg.minhash)
    return Settings(
        shingle=args.shingle,
        ngram=args.ngram,
        num_perm=args.num_perm,
        threshold=args.threshold,
        bands=bands - second_layer_bands(bands, rows, args.num_perm),
        rows=rows,
        neardup_bands=bands,
        seed=cfg.minhash.seed,
        sketch=args.sketch,
        id_field=args.id_field,
        text_field=args.text_field,
    )


def agreement(texts: Sequence[str], mode: str) -> dict[str, Any]:
    """How many documents the Python normaliser tokenises exactly as ``neardup.tokenize``."""
    from neardup import tokenize
    from neardup.core.unicode_table import UNSPACED_RANGES as NEARDUP_RANGES

    same = 0
    examples: list[dict[str, Any]] = []
    for text in texts:
        ours, theirs = python_tokens(text, mode), tokenize(text, mode=mode)
        if ours == theirs:
            same += 1
        elif len(examples) < 3:
            examples.append(_first_difference(ours, theirs))
    return {
        "docs": len(texts),
        "identical": same,
        "share": same / len(texts) if texts else 1.0,
        "unspaced_ranges_match": tuple(NEARDUP_RANGES) == UNSPACED_RANGES,
        "examples": examples,
    }


def recall_ceiling(corpus: Corpus, texts: Sequence[str], s: Settings) -> float | None:
    """Share of the planted pairs whose exact Jaccard reaches the threshold: the recall of a
    perfect LSH stage before transitive merges. Every pipeline verifies exactly, so they differ
    only in the pairs their LSH misses (their permutations differ)."""
    if corpus.answer is None:
        return None
    pairs = true_pairs(corpus.answer)
    if not pairs:
        return 1.0
    sets = {i: set(shingles(texts[i], s.shingle, s.ngram)) for i in {d for p in pairs for d in p}}

    def exact(a: set[str], b: set[str]) -> float:
        return len(a & b) / len(a | b) if a or b else 0.0

    return sum(exact(sets[a], sets[b]) >= s.threshold for a, b in pairs) / len(pairs)


def _first_difference(ours: list[str], theirs: list[str]) -> dict[str, Any]:
    k = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    k = min(len(ours), len(theirs)) if k is None else k
    return {"at": k, "python": ours[max(0, k - 2) : k + 3], "neardup": theirs[max(0, k - 2) : k + 3]}


def source_fingerprint(package: Path = SOURCE) -> str:
    """The git commit plus a digest of neardup's source in ``package`` as it is now."""
    digest = hashlib.sha1()
    for path in sorted(package.rglob("*.py")) + sorted(package.rglob("*.npz")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    return f"{commit} + source {digest.hexdigest()[:12]}"


@dataclass(frozen=True)
class NeardupCode:
    """The neardup the runs use: a snapshot of the source taken at the start (so that edits
    made meanwhile cannot mix versions into the rounds), or the repository's source."""

    env: dict[str, str]
    fingerprint: str
    snapshot: bool


def neardup_code(workdir: Path, *, snapshot: bool) -> NeardupCode:
    """Copy ``src/neardup`` (without numba's cache) into ``workdir`` and put the copy first
    on the path of this process and of the neardup runs; or use the source as it is. Either way
    its modules are byte-compiled first (:func:`byte_compiled`)."""
    if not snapshot:
        byte_compiled(SOURCE)
        return NeardupCode(dict(os.environ), source_fingerprint(), snapshot=False)
    root = workdir / "neardup-src"
    shutil.rmtree(root, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc")
    shutil.copytree(SOURCE, root / "neardup", ignore=ignore)
    if "neardup" in sys.modules:
        raise RuntimeError("neardup was imported before the snapshot was taken")
    byte_compiled(root / "neardup")
    sys.path.insert(0, str(root))
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return NeardupCode(
        {**os.environ, "PYTHONPATH": path}, source_fingerprint(root / "neardup"), snapshot=True
    )


def byte_compiled(package: Path) -> None:
    """Write the ``.pyc`` files of ``package``, as pip does for an installed wheel (datasketch's
    and rensa's are): where ``PYTHONDONTWRITEBYTECODE`` is set, an editable install or a copy
    would otherwise compile its modules from source in every run (0.25 s of each neardup run,
    benchmarks/RESULTS.md section 19)."""
    if not compileall.compile_dir(str(package), quiet=1, workers=1):
        raise SystemExit(f"could not byte-compile {package}")


def neardup_executable() -> str:
    beside = Path(sys.executable).with_name("neardup")
    found = str(beside) if beside.exists() else shutil.which("neardup")
    if not found:
        raise SystemExit("no `neardup` command: install the project (make setup) and run with its venv")
    return found


# --------------------------------------------------------------------------- running


@dataclass
class Run:
    """One process: wall and CPU seconds from start to exit, peak RSS, its own figures."""

    pipeline: str
    wall_s: float
    cpu_s: float
    rss_mb: float
    stages: dict[str, float] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)


# The measured process is started by a small launcher, not by this process: a child's
# ru_maxrss starts from the peak RSS of whoever forked it (Linux records the forking
# process's high-water mark at exec), and this process holds the corpus in memory.
_LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(sys.argv[1], "w") as fh:
    json.dump({"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
               "exit": os.waitstatus_to_exitcode(status)}, fh)
"""


def timed_process(cmd: list[str], *, env: dict[str, str], log: Path) -> tuple[float, float, float, str]:
    """Run ``cmd`` (through the launcher); its wall seconds from fork to exit, CPU seconds,
    peak RSS in MB (its ``ru_maxrss``) and its standard output."""
    figures = log.with_suffix(".rusage.json")
    launcher = [sys.executable, "-c", _LAUNCHER, str(figures), shutil.which(cmd[0]) or cmd[0], *cmd[1:]]
    with log.with_suffix(".out").open("w+") as out, log.with_suffix(".err").open("w") as err:
        subprocess.run(launcher, stdout=out, stderr=err, env=env, cwd=REPO, check=True)
        out.seek(0)
        stdout = out.read()
    usage = json.loads(figures.read_text(encoding="utf-8"))
    if usage["exit"] != 0:
        tail = log.with_suffix(".err").read_text(encoding="utf-8")[-3000:]
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {usage['exit']}:\n{tail}")
    return usage["wall_s"], usage["cpu_s"], usage["rss_mb"], stdout


def wait_for_compiling(code: NeardupCode, env_extra: dict[str, str] | None = None) -> None:
    """Wait for the kernel-compiling child that a run on a cold cache starts (it goes on after
    the run, and would share the cores with the timed rounds)."""
    env = {**code.env, **(env_extra or {})}
    script = "from neardup.warm import wait_until_compiled; wait_until_compiled()"
    subprocess.run([sys.executable, "-c", script], env=env, check=True)


def run_neardup(
    corpus: Corpus,
    s: Settings,
    out: Path,
    *,
    code: NeardupCode,
    workers: int | None = None,
    memory_limit: str | None = None,
    one_layer: bool = False,
    env_extra: dict[str, str] | None = None,
) -> Run:
    cmd = [neardup_executable(), "dedup", str(corpus.path), "-o", str(out), "-q"]
    cmd += ["--id-column", s.id_field, "--text-column", s.text_field, "--shingle", s.shingle]
    cmd += ["--ngram", str(s.ngram), "--num-perm", str(s.num_perm), "--threshold", str(s.threshold)]
    cmd += ["--seed", str(s.seed), "--sketch", s.sketch]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    if memory_limit is not None:
        cmd += ["--memory-limit", memory_limit]
    if one_layer:
        cmd += ["--band-layers", "1"]
    shutil.rmtree(out, ignore_errors=True)
    env = {**code.env, **(env_extra or {})}
    wall, cpu, rss, _ = timed_process(cmd, env=env, log=out.with_name(out.name + "-log"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    bands = s.bands if one_layer else s.neardup_bands
    if (summary["bands"], summary["rows"]) != (bands, s.rows):
        raise SystemExit(f"neardup used {summary['bands']}x{summary['rows']}, expected {bands}x{s.rows}")
    figures = {k: summary[k] for k in ("candidate_pairs", "verified_pairs", "duplicates_removed")}
    name = "neardup" if workers is None else f"neardup --workers {workers}"
    if one_layer:
        name = "neardup --band-layers 1"
    if memory_limit is not None:
        name = f"neardup --memory-limit {memory_limit}"
        figures["mode"] = summary["engine"]["mode"]
    return Run(name, wall, cpu, rss, summary["seconds"], figures)


def run_other(name: str, corpus: Corpus, s: Settings, *, out: Path, batch: int) -> Run:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--batch", str(batch)]
    cmd += ["--child-input", str(corpus.path), "--child-out", str(out), *s.argv()]
    shutil.rmtree(out, ignore_errors=True)
    wall, cpu, rss, stdout = timed_process(cmd, env=dict(os.environ), log=out.with_name(out.name + "-log"))
    figures = json.loads(stdout.strip().splitlines()[-1])
    stages = figures.pop("stages")
    return Run(name, wall, cpu, rss, stages, {"duplicates_removed": figures.pop("removed"), **figures})


def score(corpus: Corpus, out: Path, s: Settings) -> Scores | None:
    """Pair scores of the clusters in ``out/duplicates.jsonl`` against the planted answer."""
    if corpus.answer is None:
        return None
    where = {str(r["id"]): i for i, r in enumerate(corpus.answer)}
    members: dict[str, list[int]] = {}
    for row in read_jsonl(out / "duplicates.jsonl"):
        rep = str(row["duplicate_of"])
        members.setdefault(rep, [where[rep]]).append(where[str(row[s.id_field])])
    labels = labels_from_groups(members.values(), len(corpus.answer))
    return pair_scores(corpus.answer, labels)


# --------------------------------------------------------------------------- report


@dataclass
class Summary:
    """One pipeline over all rounds."""

    pipeline: str
    runs: list[Run]
    scores: Scores | None

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def cpu_s(self) -> float:
        return statistics.median(r.cpu_s for r in self.runs)

    @property
    def rss_mb(self) -> float:
        return statistics.median(r.rss_mb for r in self.runs)

    def median_run(self) -> Run:
        """The run of median wall time (the lower middle one for an even count)."""
        ranked = sorted(self.runs, key=lambda r: r.wall_s)
        return ranked[(len(ranked) - 1) // 2]


def results_table(rows: Sequence[Summary], docs: int) -> str:
    base = rows[0]
    header = ["pipeline", "median s", "docs/s", "CPU s", "peak RSS MB", "precision", "recall", "F1"]
    header += ["removed", "time / neardup", "RSS / neardup"]
    body = []
    for r in rows:
        sc = r.scores
        body.append(
            [
                r.pipeline,
                f"{r.wall_s:.2f}",
                f"{docs / r.wall_s:,.0f}",
                f"{r.cpu_s:.1f}",
                f"{r.rss_mb:,.0f}",
                f"{sc.precision:.4f}" if sc else "-",
                f"{sc.recall:.4f}" if sc else "-",
                f"{sc.f1:.4f}" if sc else "-",
                f"{r.runs[-1].figures.get('duplicates_removed', '-'):,}",
                f"{r.wall_s / base.wall_s:.2f}x",
                f"{r.rss_mb / base.rss_mb:.2f}x",
            ]
        )
    return markdown_table(header, body)


def targets_table(rows: Sequence[Summary], corpus: str) -> str:
    """The issue's targets next to the measured figures (printed, not asserted)."""
    by = {r.pipeline: r for r in rows}
    nd = by["neardup"]
    body: list[list[Any]] = []
    targets = TARGET_SPEEDUP_DUPLICATE_HEAVY if corpus == "duplicate-heavy" else TARGET_SPEEDUP
    for other, want in targets.items():
        if other in by:
            got = by[other].wall_s / nd.wall_s
            body.append([f"neardup >= {want:g}x faster than {other}", f"{got:.2f}x", _yes(got >= want)])
    for other in OTHERS:
        o = by.get(other)
        if o and o.scores and nd.scores:
            body.append(
                [
                    f"F1 >= {other}'s",
                    f"{nd.scores.f1:.4f} vs {o.scores.f1:.4f} "
                    f"({nd.scores.tp:,} vs {o.scores.tp:,} true pairs found)",
                    _yes(nd.scores.f1 >= o.scores.f1),
                ]
            )
    if "rensa" in by:
        rensa = by["rensa"]
        body.append(
            [
                "peak RSS <= rensa's",
                f"{nd.rss_mb:,.0f} vs {rensa.rss_mb:,.0f} MB",
                _yes(nd.rss_mb <= rensa.rss_mb),
            ]
        )
        for r in rows:
            if r.pipeline.startswith("neardup --memory-limit"):
                body.append(
                    [
                        f"{r.pipeline}: >= {targets['rensa']:g}x faster than rensa, peak RSS <= rensa's",
                        f"{rensa.wall_s / r.wall_s:.2f}x, {r.rss_mb:,.0f} vs {rensa.rss_mb:,.0f} MB",
                        _yes(rensa.wall_s / r.wall_s >= targets["rensa"] and r.rss_mb <= rensa.rss_mb),
                    ]
                )
    return markdown_table(["target", "measured", "met"], body)


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def stages_table(rows: Sequence[Summary]) -> str:
    """Each pipeline's own stage timings in its median run, and the rest of that process
    (interpreter start, imports, exit)."""
    body = []
    for r in rows:
        run = r.median_run()
        inside = run.stages.get("total", sum(run.stages.values()))
        parts = ", ".join(f"{k} {v:.2f}" for k, v in run.stages.items() if k != "total")
        if "mode" in run.figures:
            parts = f"({run.figures['mode']}) {parts}"
        body.append([r.pipeline, f"{run.wall_s:.2f}", parts, f"{inside:.2f}", f"{run.wall_s - inside:.2f}"])
    header = ["pipeline", "wall s", "stages (s)", "sum of stages s", "start-up + exit s"]
    return markdown_table(header, body)


def kinds_table(rows: Sequence[Summary]) -> str | None:
    """Recall per planted kind (negatives: share matched with their source)."""
    scored = [r for r in rows if r.scores]
    if not scored:
        return None
    kinds = sorted({k for r in scored for k in (r.scores.kind_recall if r.scores else {})})
    negatives = sorted({k for r in scored for k in (r.scores.source_match if r.scores else {})} - set(kinds))
    body: list[list[Any]] = []
    for k in kinds:
        body.append([k] + [r.scores.kind_recall.get(k, float("nan")) for r in scored if r.scores])
    for k in negatives:
        label = f"{k} (negative: match rate)"
        body.append([label] + [r.scores.source_match.get(k, float("nan")) for r in scored if r.scores])
    return markdown_table(["kind", *(r.pipeline for r in scored)], body)


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = ap.add_argument
    add(
        "--corpus",
        choices=("synthetic", "duplicate-heavy", "real-en", "real-zh"),
        default="synthetic",
        help="corpus to build (duplicate-heavy: English and Chinese, about half near-duplicates)",
    )
    add("--docs", type=int, default=100_000, help="documents to build (real corpora: at most what they give)")
    add("--dup-fraction", type=float, default=0.1, help="synthetic: share of near-duplicates (default: 0.1)")
    add("--corpus-file", type=Path, default=default_corpus_path(), help="the shared real texts (gzip JSONL)")
    add("--input", type=Path, help="use this JSONL file instead of building a corpus")
    add("--answer", type=Path, help="with --input: the planted answer (id, group[, kind, parent]) JSONL")
    add("--id-field", default="id", help="id field of the JSONL records (default: id)")
    add("--text-field", default="text", help="text field of the JSONL records (default: text)")
    add("--shingle", choices=("word", "char"), default="word", help="shingle unit (default: word)")
    add("--ngram", type=int, default=5, help="tokens per shingle (default: 5)")
    add("--num-perm", type=int, default=128, help="MinHash permutations (default: 128)")
    add("--threshold", type=float, default=0.8, help="Jaccard threshold (default: 0.8)")
    add("--seed", type=int, default=42, help="seed of the permutations, for every pipeline (default: 42)")
    add(
        "--sketch",
        choices=("stratified", "classic"),
        default="stratified",
        help="neardup's MinHash sketch (default: stratified)",
    )
    add("--corpus-seed", type=int, default=0, help="seed of the generated corpus (default: 0)")
    add("--rounds", type=int, default=3, help="rounds; medians are shown (default: 3)")
    add("--pipelines", default=",".join(("neardup", *OTHERS)), help="which to run (neardup always runs)")
    add("--no-one-worker", action="store_true", help="skip the `neardup --workers 1` row")
    add("--one-layer", action="store_true", help="add a `neardup --band-layers 1` row (the others' shape)")
    add(
        "--limited",
        default="",
        help="a `neardup --memory-limit LIMIT` row as well (default: none)",
    )
    add("--batch", type=int, default=BATCH, help=f"documents per batch in the Python pipelines ({BATCH:,})")
    add("--no-cold", action="store_true", help="with --no-snapshot: skip the run with an empty numba cache")
    add("--no-snapshot", action="store_true", help="run neardup from src/ as it is, not from a snapshot")
    add("--agreement-docs", type=int, default=20_000, help="documents checked against neardup.tokenize")
    add("--keep", type=Path, help="keep the corpus and every output in this folder (default: a temp dir)")
    add("--json", type=Path, help="write every figure to this JSON file")
    add(
        "--quick",
        action="store_true",
        help="5,000 documents, one round, live source, no cold run: a smoke test",
    )
    add("--child", choices=OTHERS, help=argparse.SUPPRESS)
    add("--child-input", help=argparse.SUPPRESS)
    add("--child-out", help=argparse.SUPPRESS)
    add("--bands", type=int, help=argparse.SUPPRESS)
    add("--rows", type=int, help=argparse.SUPPRESS)
    add("--neardup-bands", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.docs, args.rounds, args.no_cold, args.no_snapshot = min(args.docs, 5_000), 1, True, True
    return args


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings a child process was given on its command line."""
    return Settings(
        shingle=args.shingle,
        ngram=args.ngram,
        num_perm=args.num_perm,
        threshold=args.threshold,
        bands=args.bands,
        rows=args.rows,
        neardup_bands=args.neardup_bands,
        seed=args.seed,
        sketch=args.sketch,
        id_field=args.id_field,
        text_field=args.text_field,
    )


def run_rounds(
    corpus: Corpus, s: Settings, args: argparse.Namespace, *, workdir: Path, code: NeardupCode
) -> tuple[list[Summary], dict[str, Any]]:
    """The first (cold) neardup run, then ``--rounds`` rounds of every pipeline, back to back."""
    extra: dict[str, Any] = {}
    log = functools.partial(print, file=sys.stderr, flush=True)
    nd = functools.partial(run_neardup, corpus, s, code=code)
    if code.snapshot:  # the snapshot has no numba cache yet: this run compiles and fills it
        first = nd(workdir / "neardup")
        wait_for_compiling(code)
        extra["cold"] = asdict(first)
        log(
            f"first neardup run (compiles into an empty numba cache; not in the rounds): {first.wall_s:.2f} s"
        )
    else:
        warm = nd(workdir / "neardup")
        log(f"warm-up neardup run (untimed): {warm.wall_s:.2f} s")
        if not args.no_cold:
            with tempfile.TemporaryDirectory(prefix="neardup-numba-") as empty:
                cold = nd(workdir / "neardup-cold", env_extra={"NUMBA_CACHE_DIR": empty})
                wait_for_compiling(code, {"NUMBA_CACHE_DIR": empty})
            extra["cold"] = asdict(cold)
            log(f"cold neardup run (empty numba cache): {cold.wall_s:.2f} s")
    others = [p for p in args.pipelines.split(",") if p in OTHERS]
    plan: list[tuple[str, Callable[[], Run]]] = [("neardup", lambda: nd(workdir / "neardup"))]
    if not args.no_one_worker:
        plan.append(("neardup --workers 1", lambda: nd(workdir / "neardup-1", workers=1)))
    if args.one_layer:
        plan.append(("neardup --band-layers 1", lambda: nd(workdir / "neardup-one-layer", one_layer=True)))
    if args.limited:
        limited = f"neardup --memory-limit {args.limited}"
        plan.append((limited, lambda: nd(workdir / "neardup-limited", memory_limit=args.limited)))
    for name in others:
        plan.append(
            (name, functools.partial(run_other, name, corpus, s, out=workdir / name, batch=args.batch))
        )
    runs: dict[str, list[Run]] = {name: [] for name, _ in plan}
    for k in range(args.rounds):
        for name, fn in plan[k % len(plan) :] + plan[: k % len(plan)]:  # rotate: drift spreads evenly
            run = fn()
            runs[name].append(run)
            log(f"round {k + 1}/{args.rounds} {name}: {run.wall_s:.2f} s, {run.rss_mb:,.0f} MB")
    out_dirs = {"neardup": "neardup", "neardup --workers 1": "neardup-1", **{o: o for o in others}}
    out_dirs["neardup --band-layers 1"] = "neardup-one-layer"
    if args.limited:
        out_dirs[f"neardup --memory-limit {args.limited}"] = "neardup-limited"
    summaries = [Summary(name, runs[name], score(corpus, workdir / out_dirs[name], s)) for name, _ in plan]
    return summaries, extra


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args)
    t_start = time.perf_counter()
    info = machine_info()
    with contextlib.ExitStack() as stack:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            workdir = args.keep
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="neardup-compare-")))
        code = neardup_code(workdir, snapshot=not args.no_snapshot)
        fingerprint = code.fingerprint
        s = neardup_settings(args)
        corpus = build_corpus(args, workdir)
        texts = texts_of(corpus, s)
        agree = agreement(texts[: args.agreement_docs], s.shingle)
        ceiling = recall_ceiling(corpus, texts, s)
        del texts
        print("## Machine\n")
        print(markdown_table(["", ""], [[k, v] for k, v in info.items()]))
        print(f"\ncommand: {' '.join(['python', *sys.argv])}")
        where = "a snapshot taken at the start" if code.snapshot else "the source as it is, live"
        print(f"neardup: {fingerprint} ({where})")
        print(f"load average at start: {os.getloadavg()}")
        print(f"\ncorpus: {corpus.name}: {corpus.docs:,} documents, {corpus.megabytes:.1f} MB of JSONL")
        print(
            f"settings: {s.shingle} {s.ngram}-grams, {s.num_perm} permutations, threshold {s.threshold}, "
            f"exact verification; LSH shape: neardup's choice, {s.neardup_bands} bands x {s.rows} rows, "
            f"of which the first layer, {s.bands} bands x {s.rows} rows, is the others'"
        )
        print(
            f"normaliser agreement: {agree['identical']:,} of {agree['docs']:,} documents "
            f"({agree['share']:.2%}) tokenised exactly as neardup.tokenize"
            + ("" if agree["unspaced_ranges_match"] else "; UNSPACED_RANGES differ from neardup's!")
        )
        for ex in agree["examples"]:
            print(f"  differs at token {ex['at']}: python {ex['python']} / neardup {ex['neardup']}")
        if ceiling is not None:
            print(
                f"planted pairs with exact Jaccard >= {s.threshold}: {ceiling:.4f} (the recall a perfect "
                "LSH stage would give, before transitive merges)"
            )
        summaries, extra = run_rounds(corpus, s, args, workdir=workdir, code=code)
    print(f"\n## Results (median of {args.rounds} round(s); each process timed from start to exit)\n")
    print(results_table(summaries, corpus.docs))
    print("\n## Targets (from the issue; printed, not asserted)\n")
    print(targets_table(summaries, args.corpus if args.input is None else "input"))
    print("\n## Stages inside each process (the median run, s)\n")
    print(stages_table(summaries))
    if "cold" in extra:
        cold = extra["cold"]
        print(
            f"\nneardup cold (empty numba cache, kernels compiled): {cold['wall_s']:.2f} s, "
            f"{cold['rss_mb']:,.0f} MB; the rounds load the kernels from numba's on-disk cache "
            "(filled by that run, or by an untimed warm-up run)"
        )
    kinds = kinds_table(summaries)
    if kinds:
        print("\n## Recall per planted kind\n")
        print(kinds)
    elapsed = time.perf_counter() - t_start
    if source_fingerprint() != fingerprint:
        note = "the snapshot measured" if code.snapshot else "the figures mix versions (and compile time)"
        print(f"\nneardup's source changed during the run ({note}); now: {source_fingerprint()}")
    print(f"\nload average at end: {os.getloadavg()}; the whole benchmark took {elapsed:.0f} s")
    if args.json:
        write_json(
            args,
            info=info,
            fingerprint=fingerprint,
            corpus=corpus,
            s=s,
            agree=agree,
            ceiling=ceiling,
            summaries=summaries,
            extra=extra,
            elapsed=elapsed,
        )
    return 0


def write_json(
    args: argparse.Namespace,
    *,
    info: dict[str, Any],
    fingerprint: str,
    corpus: Corpus,
    s: Settings,
    agree: dict[str, Any],
    ceiling: float | None,
    summaries: Sequence[Summary],
    extra: dict[str, Any],
    elapsed: float,
) -> None:
    payload = {
        "date": dt.date.today().isoformat(),
        "command": " ".join(["python", *sys.argv]),
        "machine": info,
        "neardup": fingerprint,
        "corpus": {"name": corpus.name, "docs": corpus.docs, "megabytes": corpus.megabytes},
        "settings": asdict(s),
        "normaliser_agreement": agree,
        "recall_ceiling": ceiling,
        "pipelines": [
            {
                "pipeline": r.pipeline,
                "median_s": r.wall_s,
                "docs_per_s": corpus.docs / r.wall_s,
                "median_cpu_s": r.cpu_s,
                "median_rss_mb": r.rss_mb,
                "scores": r.scores.to_dict() if r.scores else None,
                "runs": [asdict(run) for run in r.runs],
            }
            for r in summaries
        ],
        **extra,
        "seconds": elapsed,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    sys.exit(main())
