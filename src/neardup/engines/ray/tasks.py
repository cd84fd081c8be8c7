"""What each Ray task of a run does: one function per stage, over one split or one partition.

Every function runs the local engine's core kernels on its share and writes its results into
the work location: a file of its own in a stage folder, or a map file of a shuffle
(:mod:`~neardup.engines.ray.shuffle`). Files are named by the split or partition, and the same
share gives the same bytes, so a task Ray retries after losing its worker writes what the lost
one would have. Each returns its figures (rows, pairs, bytes) for ``summary.json``.

Documents are numbered as the local engine numbers them (input order); ``Layout.firsts`` says
where each split's documents start. Partitions of documents are ranges of those numbers, so a
stage's parts, in order, hold its rows in the local engine's order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from neardup.config import DedupConfig
from neardup.core.lsh import Buckets, band_keys, build_buckets, candidate_pairs
from neardup.core.lsh import unpack_pairs as unpack
from neardup.core.minhash import MinHasher, estimate_pairs
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.sorting import sorted_unique
from neardup.core.stars import large_star, small_star
from neardup.core.verify import exact_jaccard_pairs
from neardup.engines.candidates import pack
from neardup.engines.kernels import gather_ranges, text_hashes
from neardup.engines.ray import shuffle
from neardup.engines.ray.location import Location
from neardup.engines.ray.splits import (
    Split,
    ids_of,
    read_rows,
    read_split,
    record_lines,
    where,
    with_generated_id,
)
from neardup.errors import InputError
from neardup.io import ReadOptions
from neardup.io.inputs import GENERATED_ID, SOURCE_COLUMN, null_texts
from neardup.io.jsonl_lines import splice_rows
from neardup.io.writers import json_texts, jsonl_bytes
from neardup.outputs import hex_strings
from neardup.pipeline import arrow_to_batch, char_lengths

Figures = dict[str, Any]
_I64 = pa.int64()


@dataclass(frozen=True)
class Plan:
    """What every task of a run knows: settings, splits and partition counts."""

    work: Location
    output: Location
    config: DedupConfig
    options: ReadOptions
    splits: tuple[Split, ...]
    files: int
    bands: int
    rows: int
    bucket_bits: int
    partitions: int
    output_format: str
    outputs: tuple[str, ...]

    @property
    def bucket_parts(self) -> int:
        return self.bands << self.bucket_bits


@dataclass(frozen=True)
class Layout:
    """Where each split's documents start (``firsts[-1]`` is the corpus's count), known once
    the signatures are taken; and the id type."""

    firsts: tuple[int, ...]
    id_type: pa.DataType
    first_empty: int = -1
    first_empty_id: Any = None
    own_sources: frozenset[int] = frozenset()
    """The splits whose records have a ``source_file`` column of their own."""

    @property
    def n(self) -> int:
        return self.firsts[-1]

    def owner(self, docs: np.ndarray) -> np.ndarray:
        """The split holding each document."""
        return np.searchsorted(np.asarray(self.firsts), docs, side="right") - 1

    def part(self, docs: np.ndarray, partitions: int) -> np.ndarray:
        """The document-range partition of each document."""
        return (np.asarray(docs, np.int64) * partitions) // max(1, self.n)


def _sig_file(split: int) -> tuple[str, str]:
    return "signatures", f"split-{split:06d}.parquet"


def _part_file(stage: str, part: int) -> tuple[str, str]:
    return stage, f"part-{part:06d}.parquet"


def _timed(fn: Callable[..., Figures]) -> Callable[..., Figures]:
    def run(*args: Any, **kwargs: Any) -> Figures:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        out["task_seconds"] = time.perf_counter() - t0
        return out

    run.__name__ = fn.__name__
    return run


# -- 1. signatures and band keys, per split ---------------------------------------------------


@_timed
def sign(plan: Plan, split_index: int) -> Figures:
    """Read a split, take its signatures and band keys, write the signature file and the band
    records (key, row) of its documents with shingles, each to its bucket partition."""
    split = plan.splits[split_index]
    table = read_split(split, plan.options)
    rows = table.num_rows
    cfg = plan.config
    if rows:
        batch = arrow_to_batch(table.column(plan.options.text_column))
        sigs, counts = MinHasher(cfg.minhash, cfg.text, cfg.shingle).signatures_with_counts(
            batch, parallel=False
        )
    else:
        batch = None
        sigs = np.empty((0, cfg.minhash.num_perm), np.uint32)
        counts = np.empty(0, np.int64)
    columns: dict[str, Any] = {
        "count": pa.array(counts, _I64),
        "signature": pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(4 * cfg.minhash.num_perm),
            rows,
            [None, pa.py_buffer(np.ascontiguousarray(sigs).tobytes())],
        ),
    }
    if cfg.keep != "first":
        columns["length"] = pa.array(
            char_lengths(batch) if batch is not None else np.empty(0, np.int64), _I64
        )
    shuffled = 0
    if plan.options.id_column is not None:
        columns["id"] = ids_of(table, plan.options, 0) if rows else pa.array([], pa.null())
        shuffled += _send_ids(plan, split, columns["id"])
    plan.work.write_parquet(pa.table(columns), *_sig_file(split_index))
    keys = band_keys(sigs, plan.bands, plan.rows)
    eligible = np.flatnonzero(counts > 0)
    bits = plan.bucket_bits
    shift = np.uint64(64 - bits) if bits else np.uint64(0)
    parts, key_col, row_col = [], [], []
    for band in range(plan.bands):
        k = keys[eligible, band]
        prefix = (k >> shift).astype(np.int64) if bits else np.zeros(k.size, np.int64)
        parts.append((band << bits) | prefix)
        key_col.append(k)
        row_col.append(eligible)
    records = pa.table(
        {
            "key": pa.array(np.concatenate(key_col) if key_col else np.empty(0, np.uint64), pa.uint64()),
            "row": pa.array(np.concatenate(row_col) if row_col else np.empty(0, np.int64), _I64),
        }
    )
    shuffled += shuffle.write_map(
        plan.work, "bands", split_index, np.concatenate(parts) if parts else np.empty(0, np.int64), records
    )
    empty = np.flatnonzero(counts == 0)
    first_empty = int(empty[0]) if empty.size else -1
    return {
        "split": split_index,
        "rows": rows,
        "bytes": int(table.nbytes),
        "shuffled": shuffled,
        "empty": int(empty.size),
        "null_texts": null_texts(table, plan.options.text_column) if rows else 0,
        "own_source": SOURCE_COLUMN in table.column_names,
        "first_empty": first_empty,
        "first_empty_id": (
            ids_of(table, plan.options, 0)[first_empty].as_py()
            if first_empty >= 0 and plan.options.id_column is not None
            else None
        ),
    }


def _send_ids(plan: Plan, split: Split, ids: pa.Array) -> int:
    """Send a split's ids, each with its row, to the bucket partition its hash names, where they
    are checked for repeats; an empty id is an InputError naming its record."""
    if ids.null_count:
        first = int(np.flatnonzero(pc.is_null(ids).to_numpy(zero_copy_only=False))[0])
        path, line, record = where(split, first)
        raise InputError(
            f"id column {plan.options.id_column!r} is empty", path=path, line=line, record=record
        )
    if len(ids) == 0:
        return 0
    text = arrow_to_batch(
        ids if pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type) else ids.cast(pa.string())
    )
    parts = (text_hashes(text.data, text.offsets) % np.uint64(plan.bucket_parts)).astype(np.int64)
    rows = pa.array(np.arange(len(ids), dtype=np.int64))
    return shuffle.write_map(plan.work, "ids", split.index, parts, pa.table({"id": ids, "row": rows}))


def _repeated_id(plan: Plan, layout: Layout, part: int) -> dict[str, Any] | None:
    """The first id of a bucket partition's share seen twice: where, and where first."""
    schema = pa.schema([("id", layout.id_type), ("row", _I64)])
    table, docs = _split_rows(plan, layout, "ids", part, schema)
    if table.num_rows < 2:
        return None
    codes = pc.dictionary_encode(table.column("id").combine_chunks()).indices.to_numpy(zero_copy_only=False)
    _, first_index = np.unique(codes, return_index=True)
    first_of = np.empty(int(codes.max()) + 1, np.int64)
    first_of[codes[first_index]] = first_index
    again = np.flatnonzero(first_of[codes] != np.arange(codes.size))
    if again.size == 0:
        return None
    k = int(again[0])
    return {"doc": int(docs[k]), "first": int(docs[first_of[codes[k]]]), "id": table.column("id")[k].as_py()}


def repeated_id_error(plan: Plan, layout: Layout, found: dict[str, Any]) -> InputError:
    """The error naming a repeated id's record and where the id was first seen, as the local
    engine words it."""
    places = []
    for doc in (found["doc"], found["first"]):
        s = int(layout.owner(np.array([doc]))[0])
        places.append(where(plan.splits[s], doc - layout.firsts[s]))
    (path, line, record), (seen, seen_line, seen_record) = places
    at = f"{seen}:{seen_line}" if seen_line is not None else f"{seen}: record {seen_record}"
    return InputError(
        f"duplicate id {found['id']!r} (first seen at {at})", path=path, line=line, record=record
    )


BAND_SCHEMA = pa.schema([("key", pa.uint64()), ("row", _I64)])


def _split_rows(
    plan: Plan, layout: Layout, shuffle_name: str, part: int, schema: pa.Schema
) -> tuple[pa.Table, np.ndarray]:
    """A partition's rows from the per-split map files, and each row's document (from its split's
    first document plus its ``row``)."""
    tables, docs = [], []
    for s, table in shuffle.read_parts(plan.work, shuffle_name, range(len(plan.splits)), part, schema):
        tables.append(table)
        docs.append(table.column("row").to_numpy() + layout.firsts[s])
    if not tables:
        return schema.empty_table(), np.empty(0, np.int64)
    return pa.concat_tables(tables), np.concatenate(docs)


# -- 2. buckets and candidate pairs, per bucket partition ------------------------------------


PAIR_SCHEMA = pa.schema([("left", _I64), ("right", _I64)])
DOC_SCHEMA = pa.schema([("doc", _I64)])


@_timed
def buckets(plan: Plan, layout: Layout, part: int) -> Figures:
    """Group a bucket partition's records by key (documents ascending: the maps are read in split
    order) into buckets, and their candidate pairs with the star rule, as the local engine does."""
    records, docs = _split_rows(plan, layout, "bands", part, BAND_SCHEMA)
    keys = records.column("key").to_numpy()
    local = build_buckets(keys[:, None])
    found = Buckets(
        band=np.full(len(local), part >> plan.bucket_bits, dtype=np.int32),
        key=local.key,
        offsets=local.offsets,
        members=docs[local.members],
    )
    left, right = candidate_pairs(found, plan.config.lsh.max_bucket_size)
    shuffled = shuffle.write_map(
        plan.work,
        "candidates",
        part,
        layout.part(left, plan.partitions),
        pa.table({"left": left, "right": right}),
    )
    members = pa.LargeListArray.from_arrays(pa.array(found.offsets, _I64), pa.array(found.members, _I64))
    plan.work.write_parquet(
        pa.table({"key": pa.array(found.key, pa.uint64()), "members": members}), *_part_file("buckets", part)
    )
    wanted = sorted_unique(found.members) if found.members.size else np.empty(0, np.int64)
    shuffled += shuffle.write_map(
        plan.work, "bucket-requests", part, layout.owner(wanted), pa.table({"doc": pa.array(wanted, _I64)})
    )
    repeated = _repeated_id(plan, layout, part) if plan.options.id_column is not None else None
    return {"buckets": len(found), "pairs": int(left.size), "shuffled": shuffled, "repeated_id": repeated}


# -- 3. verification: a join of each pair with its two documents -----------------------------


@_timed
def unique_pairs(plan: Plan, layout: Layout, part: int) -> Figures:
    """A document-range partition's candidate pairs (by their left document), unique and sorted,
    and the documents they need, asked of the splits that hold them."""
    table = shuffle.read_part(plan.work, "candidates", range(plan.bucket_parts), part, PAIR_SCHEMA)
    left, right = table.column("left").to_numpy(), table.column("right").to_numpy()
    left, right = unpack(sorted_unique(pack(left, right)))
    plan.work.write_parquet(pa.table({"left": left, "right": right}), *_part_file("pairs", part))
    wanted = sorted_unique(np.concatenate((left, right))) if left.size else np.empty(0, np.int64)
    shuffled = shuffle.write_map(
        plan.work, "doc-requests", part, layout.owner(wanted), pa.table({"doc": pa.array(wanted, _I64)})
    )
    return {"candidates": int(left.size), "shuffled": shuffled}


def _signature_table(plan: Plan, split: int, columns: list[str] | None = None) -> pa.Table:
    return plan.work.read_parquet(*_sig_file(split), columns=columns)


def _ids(plan: Plan, layout: Layout, split: int, sig: pa.Table | None = None) -> pa.Array:
    """Every id of a split's documents."""
    if plan.options.id_column is None:
        first, end = layout.firsts[split], layout.firsts[split + 1]
        return pa.array(np.arange(first, end, dtype=np.int64))
    table = sig if sig is not None else _signature_table(plan, split, ["id"])
    return table.column("id").combine_chunks()


@_timed
def document_sets(plan: Plan, layout: Layout, split: int) -> Figures:
    """Answer the partitions' requests for a split's documents: read the split again and send
    each asking partition the documents' ids, signatures and shingle sets."""
    asked = list(shuffle.read_parts(plan.work, "doc-requests", range(plan.partitions), split, DOC_SCHEMA))
    if not asked:
        return {"documents": 0, "shuffled": 0}
    first = layout.firsts[split]
    wanted = sorted_unique(np.concatenate([t.column("doc").to_numpy() for _, t in asked]))
    rows = wanted - first
    sig = _signature_table(plan, split)
    counts = sig.column("count").to_numpy()
    cfg = plan.config
    if cfg.verify:
        picked = read_rows(plan.splits[split], plan.options, rows)  # only the asked records' lines
        if picked is not None:
            batch = arrow_to_batch(picked.column(plan.options.text_column))
            sets = shingle_sets(batch, np.arange(rows.size), counts[rows], cfg.text, cfg.shingle)
        else:
            table = read_split(plan.splits[split], plan.options)
            batch = arrow_to_batch(table.column(plan.options.text_column))
            sets = shingle_sets(batch, rows, counts, cfg.text, cfg.shingle)
        values = gather_ranges(sets.values, sets.starts, sets.lengths)
        offsets = np.zeros(rows.size + 1, np.int64)
        np.cumsum(sets.lengths, out=offsets[1:])
    else:
        values, offsets = np.empty(0, np.uint64), np.zeros(rows.size + 1, np.int64)
    answer = pa.table(
        {
            "doc": pa.array(wanted, _I64),
            "id": _ids(plan, layout, split, sig).take(pa.array(rows, _I64)),
            "signature": sig.column("signature").take(pa.array(rows, _I64)),
            "shingles": pa.LargeListArray.from_arrays(pa.array(offsets, _I64), pa.array(values, pa.uint64())),
        }
    )
    picks, parts = [], []
    for asker, t in asked:
        docs = t.column("doc").to_numpy()
        picks.append(np.searchsorted(wanted, docs))
        parts.append(np.full(docs.size, asker, np.int64))
    rows_out = answer.take(pa.array(np.concatenate(picks), _I64))
    shuffled = shuffle.write_map(plan.work, "doc-sets", split, np.concatenate(parts), rows_out)
    return {"documents": int(wanted.size), "shuffled": shuffled}


def _signature_matrix(column: pa.ChunkedArray | pa.Array, num_perm: int) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    width = 4 * num_perm
    data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[
        arr.offset * width : (arr.offset + len(arr)) * width
    ]
    return data.view(np.uint32).reshape(len(arr), num_perm)


@_timed
def verify(plan: Plan, layout: Layout, part: int, sets_schema: pa.Schema) -> Figures:
    """Exact Jaccard of a partition's candidate pairs from the documents the splits sent; the
    edges at or above the threshold, with both ids, and both directions to the first round of
    the components."""
    pairs = plan.work.read_parquet(*_part_file("pairs", part))
    left, right = pairs.column("left").to_numpy(), pairs.column("right").to_numpy()
    docs_table = shuffle.read_part(plan.work, "doc-sets", range(len(plan.splits)), part, sets_schema)
    docs = docs_table.column("doc").to_numpy()  # ascending: splits answer in order, each sorted
    a, b = np.searchsorted(docs, left), np.searchsorted(docs, right)
    cfg = plan.config
    sigs = _signature_matrix(docs_table.column("signature"), cfg.minhash.num_perm)
    estimated = estimate_pairs(sigs, a, b)
    if cfg.verify:
        shingles = docs_table.column("shingles").combine_chunks()
        offsets = shingles.offsets.to_numpy()
        values = shingles.values.to_numpy()
        sets = ShingleSets(np.arange(docs.size, dtype=np.int64), offsets[:-1], np.diff(offsets), values)
        jaccard = exact_jaccard_pairs(sets, docs.size, a, b)
        ok = jaccard >= cfg.lsh.threshold
        left, right, a, b, jaccard, estimated = left[ok], right[ok], a[ok], b[ok], jaccard[ok], estimated[ok]
    else:
        jaccard = estimated
    ids = docs_table.column("id").combine_chunks()
    edges = pa.table(
        {
            "left": left,
            "right": right,
            "id_a": ids.take(pa.array(a, _I64)),
            "id_b": ids.take(pa.array(b, _I64)),
            "jaccard": jaccard,
            "estimated": estimated,
        }
    )
    plan.work.write_parquet(edges, *_part_file("edges", part))
    shuffled = _both_ways(plan, layout, "stars-0", part, left, right)
    return {"verified": int(left.size), "shuffled": shuffled}


def _both_ways(plan: Plan, layout: Layout, name: str, map_id: int, a: np.ndarray, b: np.ndarray) -> int:
    """Write edges ``(a, b)`` as neighbours both ways, each under its node's partition."""
    u = np.concatenate((a, b))
    v = np.concatenate((b, a))
    return shuffle.write_map(
        plan.work, name, map_id, layout.part(u, plan.partitions), pa.table({"u": u, "v": v})
    )


@_timed
def empty_edges(plan: Plan, layout: Layout, split: int) -> Figures:
    """With ``match_empty``: the edges joining a split's documents without shingles to the
    corpus's first one (as the local engine appends them, after the verified edges)."""
    counts = _signature_table(plan, split, ["count"]).column("count").to_numpy()
    first = layout.firsts[split]
    empty = np.flatnonzero(counts == 0) + first
    empty = empty[empty != layout.first_empty]
    hub = np.full(empty.size, layout.first_empty, np.int64)
    ids = _ids(plan, layout, split).take(pa.array(empty - first, _I64))
    hub_id = pa.array([layout.first_empty_id] * empty.size, ids.type)
    ones = np.ones(empty.size)
    plan.work.write_parquet(
        pa.table(
            {"left": hub, "right": empty, "id_a": hub_id, "id_b": ids, "jaccard": ones, "estimated": ones}
        ),
        *_part_file("edges", plan.partitions + split),
    )
    shuffled = _both_ways(plan, layout, "stars-0", plan.partitions + split, hub, empty)
    return {"edges": int(empty.size), "shuffled": shuffled}


# -- 4. connected components: large-star and small-star rounds ------------------------------


NEIGHBOUR_SCHEMA = pa.schema([("u", _I64), ("v", _I64)])
EDGE_SCHEMA = pa.schema([("a", _I64), ("b", _I64)])


@_timed
def large_star_step(plan: Plan, layout: Layout, round_: int, part: int, maps: int) -> Figures:
    """Large-star over a partition's nodes; the new edges go to their larger end's partition."""
    table = shuffle.read_part(plan.work, f"stars-{round_}", range(maps), part, NEIGHBOUR_SCHEMA)
    edges, unsettled = large_star(table.column("u").to_numpy(), table.column("v").to_numpy())
    shuffled = shuffle.write_map(
        plan.work,
        f"large-{round_}",
        part,
        layout.part(edges.b, plan.partitions),
        pa.table({"a": edges.a, "b": edges.b}),
    )
    return {"unsettled": unsettled, "edges": int(edges.a.size), "shuffled": shuffled}


@_timed
def small_star_step(plan: Plan, layout: Layout, round_: int, part: int) -> Figures:
    """Small-star over a partition's nodes (their edges to smaller nodes); the new edges go to
    both ends' partitions, for the next round's large-star."""
    table = shuffle.read_part(plan.work, f"large-{round_}", range(plan.partitions), part, EDGE_SCHEMA)
    edges = small_star(table.column("a").to_numpy(), table.column("b").to_numpy())
    shuffled = _both_ways(plan, layout, f"stars-{round_ + 1}", part, edges.a, edges.b)
    return {"edges": int(edges.a.size), "shuffled": shuffled}


# -- 5. keepers and cluster ids ---------------------------------------------------------------


MEMBER_SCHEMA = pa.schema([("centre", _I64), ("doc", _I64), ("score", _I64)])


def _range_columns(plan: Plan, layout: Layout, docs: np.ndarray, score: bool) -> tuple[pa.Array, np.ndarray]:
    """The ids (and keeper scores) of ascending documents, from their splits' signature files."""
    owner = layout.owner(docs)
    ids, scores = [], []
    for s in sorted_unique(owner).tolist() if docs.size else []:
        mine = docs[owner == s] - layout.firsts[s]
        columns = ["length"] if score else []
        if plan.options.id_column is not None:
            columns.append("id")
        sig = _signature_table(plan, s, columns) if columns else None
        ids.append(_ids(plan, layout, s, sig).take(pa.array(mine, _I64)))
        if score and sig is not None:
            length = sig.column("length").to_numpy()[mine]
            scores.append(-length if plan.config.keep == "longest" else length)
    if not ids:
        return pa.array([], layout.id_type), np.empty(0, np.int64)
    return pa.concat_arrays(ids), np.concatenate(scores) if scores else np.zeros(docs.size, np.int64)


@_timed
def members(plan: Plan, layout: Layout, round_: int, part: int, maps: int) -> Figures:
    """Each clustered document of a partition and its component's centre (its smallest
    document), with its id and keeper score, sent to the centre's partition."""
    table = shuffle.read_part(plan.work, f"stars-{round_}", range(maps), part, NEIGHBOUR_SCHEMA)
    u, v = table.column("u").to_numpy(), table.column("v").to_numpy()
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    if u.size == 0:
        return {"members": 0, "shuffled": 0}
    starts = np.flatnonzero(np.concatenate(([True], u[1:] != u[:-1])))
    docs = u[starts]
    centre = np.minimum(docs, np.minimum.reduceat(v, starts))
    ids, score = _range_columns(plan, layout, docs, plan.config.keep != "first")
    out = pa.table({"centre": centre, "doc": docs, "score": score, "id": ids})
    shuffled = shuffle.write_map(plan.work, "members", part, layout.part(centre, plan.partitions), out)
    return {"members": int(docs.size), "shuffled": shuffled}


@_timed
def keepers(plan: Plan, layout: Layout, part: int, member_schema: pa.Schema) -> Figures:
    """Each cluster's representative (by the keeper policy; ties: first) and its members
    (representative first, then in input order), sent to the representative's partition."""
    table = shuffle.read_part(plan.work, "members", range(plan.partitions), part, member_schema)
    centre = table.column("centre").to_numpy()
    doc = table.column("doc").to_numpy()
    score = table.column("score").to_numpy()
    order = np.lexsort((doc, score, centre))
    centre, doc = centre[order], doc[order]
    ids = table.column("id").combine_chunks().take(pa.array(order, _I64))
    if centre.size == 0:
        return {"clusters": 0, "shuffled": 0}
    starts = np.flatnonzero(np.concatenate(([True], centre[1:] != centre[:-1])))
    sizes = np.diff(np.append(starts, centre.size))
    rep = doc[starts]
    # members: representative first, then the others by position
    group = np.repeat(np.arange(starts.size), sizes)
    is_rep = np.zeros(doc.size, bool)
    is_rep[starts] = True
    within = np.lexsort((doc, ~is_rep, group))
    offsets = np.zeros(starts.size + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = pa.table(
        {
            "rep": rep,
            "rep_id": ids.take(pa.array(starts, _I64)),
            "size": sizes.astype(np.int64),
            "members": pa.LargeListArray.from_arrays(pa.array(offsets, _I64), pa.array(doc[within], _I64)),
            "member_ids": pa.LargeListArray.from_arrays(
                pa.array(offsets, _I64), ids.take(pa.array(within, _I64))
            ),
        }
    )
    shuffled = shuffle.write_map(plan.work, "clusters", part, layout.part(rep, plan.partitions), out)
    return {"clusters": int(rep.size), "shuffled": shuffled}


@_timed
def cluster_ranks(plan: Plan, layout: Layout, part: int, cluster_schema: pa.Schema) -> Figures:
    """A partition's clusters in representative order (their rank here plus the clusters of the
    partitions before is their id), and each member's cluster sent to its split."""
    table = shuffle.read_part(plan.work, "clusters", range(plan.partitions), part, cluster_schema)
    table = table.take(pc.sort_indices(table, [("rep", "ascending")]))
    plan.work.write_parquet(table, *_part_file("clusters", part))
    members_col = table.column("members").combine_chunks()
    sizes = table.column("size").to_numpy()
    docs = members_col.values.to_numpy()
    rank = np.repeat(np.arange(table.num_rows, dtype=np.int64), sizes)
    rep = np.repeat(table.column("rep").to_numpy(), sizes)
    rep_ids = table.column("rep_id").combine_chunks().take(pa.array(rank, _I64))
    out = pa.table(
        {"doc": docs, "rank": rank, "part": np.full(docs.size, part, np.int64), "rep": rep, "rep_id": rep_ids}
    )
    shuffled = shuffle.write_map(plan.work, "assign", part, layout.owner(docs), out)
    return {"clusters": int(table.num_rows), "shuffled": shuffled}


@_timed
def bucket_ids(plan: Plan, layout: Layout, split: int) -> Figures:
    """Answer the bucket partitions' requests for a split's ids (for ``lsh_buckets``)."""
    ids = _ids(plan, layout, split)
    first = layout.firsts[split]
    tables, parts = [], []
    for asker, t in shuffle.read_parts(
        plan.work, "bucket-requests", range(plan.bucket_parts), split, DOC_SCHEMA
    ):
        docs = t.column("doc").to_numpy()
        tables.append(pa.table({"doc": docs, "id": ids.take(pa.array(docs - first, _I64))}))
        parts.append(np.full(docs.size, asker, np.int64))
    if not tables:
        return {"shuffled": 0}
    shuffled = shuffle.write_map(
        plan.work, "bucket-ids", split, np.concatenate(parts), pa.concat_tables(tables)
    )
    return {"shuffled": shuffled}


# -- 6. the output tables, a part at a time ---------------------------------------------------


def _write_output(
    plan: Plan, name: str, part: int, table: pa.Table, formatted: list[str] | None = None
) -> int:
    """Write one part of a table (in JSON Lines, its ``formatted`` columns already JSON text)."""
    if name not in plan.outputs:
        return 0
    ext = plan.output_format
    target = (name, f"part-{part:06d}.{ext}")
    if ext == "parquet":
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        plan.output.write_output(sink.getvalue(), *target)
    else:
        plan.output.write_output(jsonl_bytes(table, formatted or ()), *target)
    return int(table.num_rows)


@_timed
def write_rows(
    plan: Plan, layout: Layout, split: int, offsets: tuple[int, ...], assign_schema: pa.Schema
) -> Figures:
    """``annotated``, ``deduped`` and ``duplicates`` of one split, as the local engine writes
    its rows: in JSON Lines from a JSON Lines file, the records' own lines with the columns
    spliced in (as the local engine writes one such file); else from the parsed records."""
    source = plan.splits[split]
    first = layout.firsts[split]
    n = layout.firsts[split + 1] - first
    ids = _ids(plan, layout, split)
    assign = shuffle.read_part(plan.work, "assign", range(plan.partitions), split, assign_schema)
    rows = assign.column("doc").to_numpy() - first
    cluster = np.full(n, -1, np.int64)
    cluster[rows] = np.asarray(offsets)[assign.column("part").to_numpy()] + assign.column("rank").to_numpy()
    rep_doc = np.arange(first, first + n, dtype=np.int64)
    rep_doc[rows] = assign.column("rep").to_numpy()
    keep = rep_doc == np.arange(first, first + n)
    slot = np.arange(n, dtype=np.int64)  # where each row's representative id is: its own, or assign's
    slot[rows] = n + np.arange(rows.size)
    rep_ids = pa.concat_arrays([ids, assign.column("rep_id").combine_chunks().cast(ids.type)]).take(
        pa.array(slot, _I64)
    )
    if plan.output_format == "jsonl" and source.family == "jsonl":
        spliced = _spliced(plan, layout, source, n, ids, cluster=cluster, keep=keep, rep_ids=rep_ids)
        if spliced is not None:
            for name, (data, _) in spliced.items():
                if name in plan.outputs:
                    plan.output.write_output(data, name, f"part-{split:06d}.jsonl")
            return {"rows": n, "kept": int(keep.sum())}
    table = with_generated_id(read_split(source, plan.options), plan.options, first)
    if plan.files > 1 and SOURCE_COLUMN not in table.column_names:
        table = table.append_column(SOURCE_COLUMN, pa.repeat(pa.scalar(source.name, pa.string()), n))
    # in JSON Lines the input columns are escaped once for all three tables, as the local engine does
    formatted = table.column_names if plan.output_format == "jsonl" else []
    if formatted:
        table = json_texts(table)
    annotated = (
        table.append_column("cluster_id", pa.array(cluster, _I64, mask=cluster < 0))
        .append_column("representative", rep_ids)
        .append_column("is_duplicate", pa.array(~keep))
    )
    dup = pa.array(np.flatnonzero(~keep), _I64)
    duplicates = (
        table.take(dup)
        .append_column("duplicate_of", rep_ids.take(dup))
        .append_column("cluster_id", pa.array(cluster[~keep], _I64))
    )
    written = _write_output(plan, "annotated", split, annotated, formatted)
    _write_output(plan, "deduped", split, table.filter(pa.array(keep)), formatted)
    _write_output(plan, "duplicates", split, duplicates, formatted)
    return {"rows": written, "kept": int(keep.sum())}


def _spliced(
    plan: Plan,
    layout: Layout,
    source: Split,
    n: int,
    ids: pa.Array,
    *,
    cluster: np.ndarray,
    keep: np.ndarray,
    rep_ids: pa.Array,
) -> dict[str, tuple[np.ndarray, int]] | None:
    """The three row tables of a JSON Lines split from its own lines, or None where its lines are
    not one ``{...}`` record each (the parsed records are written instead)."""
    lines = record_lines(source)  # read again: reading is cheaper than keeping a copy
    if lines is None or lines.starts.size != n:
        return None
    buf, starts, ends = lines
    extra = ""
    if plan.files > 1 and source.index not in layout.own_sources:
        extra = json.dumps(SOURCE_COLUMN) + ": " + json.dumps(source.name, ensure_ascii=False)
    generated = plan.options.id_column is None
    return splice_rows(
        np.ascontiguousarray(buf),
        starts,
        ends,
        cluster=cluster,
        keep=keep,
        representatives=rep_ids,
        ids=ids if generated else None,
        id_column=GENERATED_ID,
        extra=extra,
    )


@_timed
def write_clusters(plan: Plan, layout: Layout, part: int, offset: int, cluster_schema: pa.Schema) -> Figures:
    path = _part_file("clusters", part)
    table = plan.work.read_parquet(*path) if plan.work.exists(*path) else cluster_schema.empty_table()
    out = pa.table(
        {
            "cluster_id": pa.array(np.arange(offset, offset + table.num_rows, dtype=np.int64)),
            "size": table.column("size"),
            "representative": table.column("rep_id"),
            "members": table.column("member_ids"),
        }
    )
    return {"rows": _write_output(plan, "clusters", part, out)}


@_timed
def write_pairs(plan: Plan, layout: Layout, part: int, edge_schema: pa.Schema) -> Figures:
    path = _part_file("edges", part)
    edges = plan.work.read_parquet(*path) if plan.work.exists(*path) else edge_schema.empty_table()
    kind = "exact" if plan.config.verify else "estimated"
    out = pa.table(
        {
            "id_a": edges.column("id_a"),
            "id_b": edges.column("id_b"),
            "jaccard": pa.array(np.round(edges.column("jaccard").to_numpy(), 6)),
            "jaccard_kind": pa.repeat(pa.scalar(kind, pa.string()), edges.num_rows),
            "estimated_jaccard": pa.array(np.round(edges.column("estimated").to_numpy(), 6)),
        }
    )
    return {"rows": _write_output(plan, "candidate_pairs", part, out)}


@_timed
def write_buckets(plan: Plan, layout: Layout, part: int, id_schema: pa.Schema) -> Figures:
    found = plan.work.read_parquet(*_part_file("buckets", part))
    known = shuffle.read_part(plan.work, "bucket-ids", range(len(plan.splits)), part, id_schema)
    known = known.take(pc.sort_indices(known, [("doc", "ascending")]))
    members = found.column("members").combine_chunks()
    docs = members.values.to_numpy()
    at = np.searchsorted(known.column("doc").to_numpy(), docs)
    offsets = members.offsets.to_numpy()
    out = pa.table(
        {
            "band": pa.array(np.full(found.num_rows, part >> plan.bucket_bits, np.int64)),
            "bucket_key": hex_strings(found.column("key").to_numpy()),
            "member_count": pa.array(np.diff(offsets).astype(np.int64)),
            "members": pa.LargeListArray.from_arrays(
                pa.array(offsets - offsets[0], _I64),
                known.column("id").combine_chunks().take(pa.array(at, _I64)),
            ),
        }
    )
    return {"rows": _write_output(plan, "lsh_buckets", part, out)}
