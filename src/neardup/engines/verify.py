"""Stage 3: the edges of the duplicate graph, verified as :func:`find_duplicates` does.

With verification on, the input is read a second time and the sorted shingle
sets of the documents that appear in some candidate pair (only those) are
spilled as a CSR: ``sets.u64`` holds the sets back to back, ``setlen.i64`` one
length per such document, in document order. The candidates are then taken in
order, a chunk at a time: the chunk's shingle sets and signatures are gathered
from the memory-mapped spill files into a small local copy and go through
:func:`exact_jaccard_pairs` and :func:`estimate_pairs`; pairs at or above the
threshold are kept. With verification off every candidate is kept with its
estimate. ``match_empty`` links the empty documents last.

Files: ``left.i64``, ``right.i64``, ``jaccard.f64``, ``estimated.f64`` (the
edges), ``sets.u64``, ``setlen.i64``. The stage commits after every chunk of
either pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neardup.core.lsh import unpack_pairs as unpack
from neardup.core.minhash import estimate_pairs
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.sorting import sorted_unique
from neardup.core.verify import exact_jaccard_pairs
from neardup.engines.candidates import PAIRS
from neardup.engines.context import Context, Lap
from neardup.engines.kernels import char_counts, gather_ranges
from neardup.engines.plan import PAGE
from neardup.engines.signatures import COUNTS, LENGTHS, SIGNATURES
from neardup.engines.source import text_chunks
from neardup.engines.spill import Journal, Mapped, load, read_values
from neardup.errors import InputError

SETS = "sets.u64"
SETLEN = "setlen.i64"
LEFT = "left.i64"
RIGHT = "right.i64"
JACCARD = "jaccard.f64"
ESTIMATED = "estimated.f64"
FILES = (SETS, SETLEN, LEFT, RIGHT, JACCARD, ESTIMATED)


def _involved(pairs: Path, *, count: int, n: int, step: int) -> np.ndarray:
    """Ascending documents that appear in some candidate pair."""
    seen = np.zeros(n, dtype=bool)
    for lo in range(0, count, step):
        left, right = unpack(read_values(pairs, lo, min(step, count - lo)))
        seen[left] = True
        seen[right] = True
    return np.flatnonzero(seen)


def _shingle_pass(ctx: Context, journal: Journal, *, involved: np.ndarray, counts: np.ndarray) -> None:
    """Spill the shingle sets of ``involved``, re-reading the input."""
    cfg = ctx.config
    n = counts.size
    lengths = ctx.stage_dir("signatures") / LENGTHS
    lap = Lap()
    done = int(journal.state.get("shingle_rows", 0))
    ctx.progress("shingles", done, n)
    chunks = text_chunks(
        ctx.source, ctx.text_column, skip=done, max_rows=ctx.plan.chunk_rows, max_bytes=ctx.plan.chunk_bytes
    )
    for first, batch in chunks:
        m = len(batch)
        if first + m > n or not np.array_equal(
            char_counts(batch.data, batch.offsets), read_values(lengths, first, m)
        ):
            raise InputError(
                f"the input changed since its first pass (rows {first}-{first + m - 1} differ); "
                "the source must give the same rows in the same order every time"
            )
        lo, hi = np.searchsorted(involved, [first, first + m])
        if hi > lo:
            docs = involved[lo:hi] - first
            sets = shingle_sets(batch, docs, counts[first : first + m], cfg.text, cfg.shingle)
            journal.append(SETS, gather_ranges(sets.values, sets.starts, sets.lengths))
            journal.append(SETLEN, sets.lengths)
        done = first + m
        spent = lap()
        journal.commit(seconds=spent, shingle_rows=done, shingle_seconds=_shingle_seconds(journal) + spent)
        ctx.progress("shingles", done, n)
    if done != n:
        raise InputError(f"the input has {done} rows now but had {n} in its first pass")
    spent = lap()
    journal.commit(seconds=spent, sets_done=True, shingle_seconds=_shingle_seconds(journal) + spent)


def _shingle_seconds(journal: Journal) -> float:
    return float(journal.state.get("shingle_seconds", 0.0))


def _pair_pass(
    ctx: Context, journal: Journal, *, candidates: int, n: int, involved: np.ndarray | None
) -> None:
    """Verify (or estimate) the candidates a chunk at a time, appending the edges kept."""
    num_perm = ctx.config.minhash.num_perm
    threshold = ctx.config.lsh.threshold
    lap = Lap()
    sigs = Mapped(ctx.stage_dir("signatures") / SIGNATURES, n, num_perm)
    # bytes a document costs a chunk: its gathered copy plus the mapped pages it touches
    if involved is not None:
        setlen = load(journal.path(SETLEN), involved.size)
        starts = np.zeros(involved.size, dtype=np.int64)
        np.cumsum(setlen[:-1], out=starts[1:])
        sets = Mapped(journal.path(SETS), int(setlen.sum()))
        cost = 16 * setlen + 4 * num_perm + 2 * PAGE
    pairs = ctx.stage_dir("candidates") / PAIRS
    pos = int(journal.state.get("pair_pos", 0))
    ctx.progress("verify", pos, candidates)
    while pos < candidates:
        left, right = unpack(read_values(pairs, pos, min(ctx.plan.read_values, candidates - pos)))
        if involved is not None:
            spent = np.cumsum(cost[np.searchsorted(involved, left)] + cost[np.searchsorted(involved, right)])
        else:
            spent = np.arange(1, left.size + 1, dtype=np.int64) * 2 * (4 * num_perm + PAGE)
        i = 0
        while i < left.size:
            before = int(spent[i - 1]) if i else 0
            j = max(i + 1, int(np.searchsorted(spent, before + ctx.plan.verify_bytes, side="right")))
            lft, rgt = left[i:j], right[i:j]
            docs = sorted_unique(np.concatenate((lft, rgt)))
            li, ri = np.searchsorted(docs, lft), np.searchsorted(docs, rgt)
            estimated = estimate_pairs(sigs.array[docs], li, ri)
            sigs.release()
            if involved is not None:
                at = np.searchsorted(involved, docs)
                lens = setlen[at]
                local = np.zeros(docs.size, dtype=np.int64)
                np.cumsum(lens[:-1], out=local[1:])
                values = gather_ranges(sets.array, starts[at], lens)
                sets.release()
                chunk = ShingleSets(np.arange(docs.size, dtype=np.int64), local, lens, values)
                jaccard = exact_jaccard_pairs(chunk, docs.size, li, ri)
                ok = jaccard >= threshold
                lft, rgt, jaccard, estimated = lft[ok], rgt[ok], jaccard[ok], estimated[ok]
            else:
                jaccard = estimated
            journal.append(LEFT, lft)
            journal.append(RIGHT, rgt)
            journal.append(JACCARD, jaccard)
            journal.append(ESTIMATED, estimated)
            pos += j - i
            i = j
            journal.commit(seconds=lap(), pair_pos=pos)
            ctx.progress("verify", pos, candidates)
    journal.commit(seconds=lap(), pairs_done=True)


def run(ctx: Context, n: int, candidates: int) -> Journal:
    """Run (or finish) the stage; its journal's ``left.i64`` ... hold the edges."""
    with Journal(ctx.stage_dir("verify"), FILES) as journal:
        if not journal.done:
            _run(ctx, journal, n=n, candidates=candidates)
    return journal


def _run(ctx: Context, journal: Journal, *, n: int, candidates: int) -> None:
    ctx.ran.append("verify")
    journal.begin()
    cfg = ctx.config
    counts = load(ctx.stage_dir("signatures") / COUNTS, n)
    involved = None
    if cfg.verify and candidates:
        pairs = ctx.stage_dir("candidates") / PAIRS
        involved = _involved(pairs, count=candidates, n=n, step=ctx.plan.read_values)
        if not journal.state.get("sets_done"):
            _shingle_pass(ctx, journal, involved=involved, counts=counts)
    if not journal.state.get("pairs_done"):
        _pair_pass(ctx, journal, candidates=candidates, n=n, involved=involved)
    lap = Lap()
    if cfg.match_empty:
        empty = np.flatnonzero(counts == 0)
        if empty.size >= 2:
            extra = empty[1:]
            ones = np.ones(extra.size, dtype=np.float64)
            journal.append(LEFT, np.full(extra.size, empty[0], dtype=np.int64))
            journal.append(RIGHT, extra)
            journal.append(JACCARD, ones)
            journal.append(ESTIMATED, ones)
    journal.commit(seconds=lap(), done=True, edges=journal.count(LEFT))
