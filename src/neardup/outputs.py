"""The evidence tables of a dedup run, built from its input table and result.

``annotated``  every input row plus ``cluster_id``, ``representative``, ``is_duplicate``
``deduped``    the rows kept: one per cluster plus every singleton
``duplicates`` the rows removed, each with ``duplicate_of`` (the id of the row kept)
``clusters``   ``cluster_id``, ``size``, ``representative``, ``members``
``candidate_pairs`` the graph's edges: ``id_a``, ``id_b``, ``jaccard``, ``jaccard_kind``,
                    ``estimated_jaccard``
``lsh_buckets``     colliding buckets: ``band``, ``bucket_key``, ``member_count``, ``members``
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from neardup.core.lsh import Buckets
from neardup.pipeline import DedupResult

OUTPUT_NAMES: tuple[str, ...] = (
    "annotated",
    "deduped",
    "duplicates",
    "clusters",
    "candidate_pairs",
    "lsh_buckets",
)


def _ids_at(ids: pa.Array, positions: np.ndarray) -> pa.Array:
    return ids.take(pa.array(positions, type=pa.int64()))


def _id_lists(ids: pa.Array, offsets: np.ndarray, members: np.ndarray) -> pa.Array:
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), _ids_at(ids, members))


def hex_strings(values: np.ndarray) -> pa.Array:
    """uint64 values as 16-digit lower-case hex strings, without a loop per value."""
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    nibbles = (values.astype(np.uint64)[:, None] >> shifts) & np.uint64(0xF)
    chars = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles.astype(np.intp)]
    offsets = np.arange(0, 16 * values.size + 1, 16, dtype=np.int32)
    return pa.StringArray.from_buffers(
        values.size, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars.tobytes())
    )


def bucket_table(buckets: Buckets, members: pa.Array) -> pa.Table:
    """The ``lsh_buckets`` table; ``members`` holds each bucket's member ids as a list."""
    return pa.table(
        {
            "band": pa.array(buckets.band.astype(np.int64)),
            "bucket_key": hex_strings(buckets.key),
            "member_count": pa.array(buckets.sizes().astype(np.int64)),
            "members": members,
        }
    )


def build_tables(table: pa.Table, id_column: str, result: DedupResult) -> dict[str, pa.Table]:
    """The six output tables, keyed by name (see the module docstring)."""
    ids = table.column(id_column).combine_chunks()
    cl = result.clusters
    cluster_id = pa.array(cl.cluster, type=pa.int64(), mask=cl.cluster < 0)
    representative = _ids_at(ids, cl.representative)
    is_dup = pa.array(~cl.keep)

    annotated = (
        table.append_column("cluster_id", cluster_id)
        .append_column("representative", representative)
        .append_column("is_duplicate", is_dup)
    )
    keep_mask = pa.array(cl.keep)
    deduped = table.filter(keep_mask)
    dup_positions = np.flatnonzero(~cl.keep)
    duplicates = (
        table.take(pa.array(dup_positions, pa.int64()))
        .append_column("duplicate_of", _ids_at(ids, cl.representative[dup_positions]))
        .append_column("cluster_id", pa.array(cl.cluster[dup_positions], pa.int64()))
    )

    groups = result.groups()
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate(groups).astype(np.int64) if groups else np.empty(0, np.int64)
    reps = np.array([g[0] for g in groups], dtype=np.int64)
    clusters = pa.table(
        {
            "cluster_id": pa.array(np.arange(len(groups), dtype=np.int64)),
            "size": pa.array(sizes),
            "representative": _ids_at(ids, reps),
            "members": _id_lists(ids, offsets, flat),
        }
    )

    pairs = result.pairs
    kind = "exact" if pairs.exact else "estimated"
    candidate_pairs = pa.table(
        {
            "id_a": _ids_at(ids, pairs.left),
            "id_b": _ids_at(ids, pairs.right),
            "jaccard": pa.array(np.round(pairs.jaccard, 6)),
            "jaccard_kind": pa.repeat(pa.scalar(kind, pa.string()), len(pairs)),
            "estimated_jaccard": pa.array(np.round(pairs.estimated, 6)),
        }
    )

    b = result.buckets
    lsh_buckets = bucket_table(b, _id_lists(ids, b.offsets, b.members))
    return {
        "annotated": annotated,
        "deduped": deduped,
        "duplicates": duplicates,
        "clusters": clusters,
        "candidate_pairs": candidate_pairs,
        "lsh_buckets": lsh_buckets,
    }
