"""Stage 2: buckets and candidate pairs, one band partition at a time.

A partition is one band's records (key, document) of the documents with
shingles, or, when a band has more of them than the plan allows, the records
whose key starts with the same ``split_bits`` bits. Partitions in order (band,
then key prefix) visit the buckets in exactly the order :func:`build_buckets`
makes them, so the concatenated bucket files equal its result on the whole
corpus. Each partition's candidate pairs (:func:`candidate_pair_pieces`, with its
star rule, a bounded piece at a time) are spilled as one sorted run of packed ``left << 32 | right``
values; the runs are then merged into the sorted unique candidates.

Files:

``bucket_band.i32``, ``bucket_key.u64``, ``bucket_offsets.i64``, ``bucket_members.i64``
    the colliding buckets, as the four arrays of :class:`~neardup.core.lsh.Buckets`
``runs.u64``    each partition's pairs (run bounds in ``progress.json``)
``pairs.u64``   the merged candidates, sorted and unique
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neardup.core.lsh import Buckets, build_buckets, candidate_pair_pieces
from neardup.engines.context import Context, Lap
from neardup.engines.signatures import COUNTS, keys_file
from neardup.engines.spill import Journal, load, merge_unique, read_values

BAND = "bucket_band.i32"
KEY = "bucket_key.u64"
OFFSETS = "bucket_offsets.i64"
MEMBERS = "bucket_members.i64"
RUNS = "runs.u64"
PAIRS = "pairs.u64"
FILES = (BAND, KEY, OFFSETS, MEMBERS, RUNS, PAIRS)


def pack(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return (left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64)


def split_bits(records: int, per_partition: int) -> int:
    """Key-prefix bits that cut ``records`` into partitions of at most ``per_partition`` (if even)."""
    bits = 0
    while bits < 16 and (records >> bits) > per_partition:
        bits += 1
    return bits


def _partition(
    path: Path, eligible: np.ndarray, *, bits: int, prefix: int, step: int
) -> tuple[np.ndarray, np.ndarray]:
    """Keys and documents (ascending) of one partition of a band, read a slice at a time."""
    shift = np.uint64(64 - bits) if bits else np.uint64(0)
    keys, docs = [], []
    for lo in range(0, eligible.size, step):
        k = read_values(path, lo, min(step, eligible.size - lo))
        sel = eligible[lo : lo + k.size]
        if bits:
            sel = sel & ((k >> shift) == np.uint64(prefix))
        at = np.flatnonzero(sel)
        keys.append(k[at])
        docs.append(at + lo)
    if not keys:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    return np.concatenate(keys), np.concatenate(docs)


def run(ctx: Context, n: int) -> Journal:
    """Run (or finish) the stage; its journal's state holds ``candidates``."""
    with Journal(ctx.stage_dir("candidates"), FILES) as journal:
        if not journal.done:
            _run(ctx, journal, n)
    return journal


def _run(ctx: Context, journal: Journal, n: int) -> None:
    ctx.ran.append("candidates")
    journal.begin()
    lap = Lap()
    sig_dir = ctx.stage_dir("signatures")
    eligible = load(sig_dir / COUNTS, n) > 0
    if "split_bits" not in journal.state:
        journal.append(OFFSETS, np.zeros(1, np.int64))
        bits = split_bits(int(np.count_nonzero(eligible)), ctx.plan.bucket_rows)
        journal.commit(split_bits=bits, part=0, runs=[0], members=0)
    bits = int(journal.state["split_bits"])
    parts = ctx.bands << bits
    ctx.progress("candidates", int(journal.state["part"]), parts)
    max_size = ctx.config.lsh.max_bucket_size
    for p in range(int(journal.state["part"]), parts):
        band, prefix = divmod(p, 1 << bits)
        keys, docs = _partition(
            sig_dir / keys_file(band), eligible, bits=bits, prefix=prefix, step=ctx.plan.read_values
        )
        local = build_buckets(keys[:, None])
        buckets = Buckets(
            band=np.full(len(local), band, dtype=np.int32),
            key=local.key,
            offsets=local.offsets,
            members=docs[local.members],
        )
        journal.append(BAND, buckets.band)
        journal.append(KEY, buckets.key)
        journal.append(OFFSETS, buckets.offsets[1:] + int(journal.state["members"]))
        journal.append(MEMBERS, buckets.members)
        # ascending pieces of unique pairs: together one sorted run, a piece held at a time
        for piece in candidate_pair_pieces(buckets, max_size, ctx.plan.merge_values):
            journal.append(RUNS, piece)
        journal.commit(
            seconds=lap(),
            part=p + 1,
            runs=[*journal.state["runs"], journal.count(RUNS)],
            members=journal.count(MEMBERS),
        )
        ctx.progress("candidates", p + 1, parts)
    count = 0
    for piece in merge_unique(journal.path(RUNS), journal.state["runs"], ctx.plan.merge_values):
        journal.append(PAIRS, piece)
        count += piece.size
    journal.commit(seconds=lap(), done=True, candidates=count)
