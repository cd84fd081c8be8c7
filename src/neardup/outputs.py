"""The evidence tables of a dedup run, built from its input table and result.

``annotated``  every input row plus ``cluster_id``, ``representative``, ``is_duplicate``
``deduped``    the rows kept: one per cluster plus every singleton
``duplicates`` the rows removed, each with ``duplicate_of`` (the id of the row kept)
``clusters``   ``cluster_id``, ``size``, ``representative``, ``members``
``candidate_pairs`` the graph's edges: ``id_a``, ``id_b``, ``jaccard``, ``jaccard_kind``,
                    ``estimated_jaccard`` (and ``containment`` in a containment run: the share
                    of the smaller row's shingles in the larger)
``lsh_buckets``     colliding buckets: ``band``, ``bucket_key``, ``member_count``, ``members``

:func:`build_tables` makes them for a run on its own, :func:`against_tables` for a run against a
persistent index (ids become strings and ``matched_index`` marks what the index matched).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.core.clusters import Clusters
from neardup.core.jit import set_threads, threads
from neardup.core.lsh import Buckets
from neardup.io.list_lines import HEX, ID, INT, IdTexts, ListRows, list_lines
from neardup.io.page_cache import release_mapped
from neardup.io.writers import OutputDir, json_texts
from neardup.pipeline import DedupResult, Pairs, Progress

if TYPE_CHECKING:  # incremental imports this module
    from neardup.incremental import AgainstResult


def _ids_at(ids: pa.Array, positions: np.ndarray) -> pa.Array:
    return ids.take(pa.array(positions, type=pa.int64()))


def _id_lists(ids: pa.Array, offsets: np.ndarray, members: np.ndarray) -> pa.Array:
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), _ids_at(ids, members))


_HEX_PAIRS = np.frombuffer("".join(f"{b:02x}" for b in range(256)).encode(), dtype=np.uint16)
"""The two hex digits of each byte value, as one uint16 holding them in memory order."""


def hex_strings(values: np.ndarray) -> pa.Array:
    """uint64 values as 16-digit lower-case hex strings, without a loop per value."""
    big_endian = np.ascontiguousarray(values, dtype=">u8").view(np.uint8)
    chars = _HEX_PAIRS[big_endian]  # two digits per byte, most significant byte first
    offsets = np.arange(0, 16 * values.size + 1, 16, dtype=np.int32)
    return pa.StringArray.from_buffers(values.size, pa.py_buffer(offsets), pa.py_buffer(chars))


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

    flat, offsets = cluster_lists(cl)
    clusters = pa.table(
        {
            "cluster_id": pa.array(np.arange(offsets.size - 1, dtype=np.int64)),
            "size": pa.array(np.diff(offsets)),
            "representative": _ids_at(ids, flat[offsets[:-1]]),
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
            **_containment_column(pairs, 0, len(pairs)),
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


def against_tables(table: pa.Table, id_column: str, result: AgainstResult) -> dict[str, pa.Table]:
    """The six output tables of :mod:`neardup.outputs` for an incremental run.

    Ids in ``representative``, ``duplicate_of``, ``members``, ``id_a``/``id_b`` and ``lsh_buckets``
    are strings (an indexed key and a batch id share a column); ``annotated`` and ``duplicates``
    gain ``matched_index`` (the row's cluster is represented by an indexed document) and
    ``candidate_pairs`` gains ``matched_index`` (the pair's second document is an indexed one).
    """
    m = len(result.index_keys)
    batch_ids = table.column(id_column).combine_chunks().cast(pa.string())
    nodes = pa.concat_arrays([pa.array(result.index_keys, pa.string()), batch_ids])
    cl = result.clusters

    def ids_at(positions: np.ndarray) -> pa.Array:
        return nodes.take(pa.array(positions, type=pa.int64()))

    def id_lists(offsets: np.ndarray, members: np.ndarray) -> pa.Array:
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), ids_at(members))

    cluster = cl.cluster[m:]
    rep = cl.representative[m:]
    keep = cl.keep[m:]
    matched = rep < m
    annotated = (
        table.append_column("cluster_id", pa.array(cluster, type=pa.int64(), mask=cluster < 0))
        .append_column("representative", ids_at(rep))
        .append_column("is_duplicate", pa.array(~keep))
        .append_column("matched_index", pa.array(matched))
    )
    deduped = table.filter(pa.array(keep))
    dup = np.flatnonzero(~keep)
    duplicates = (
        table.take(pa.array(dup, pa.int64()))
        .append_column("duplicate_of", ids_at(rep[dup]))
        .append_column("cluster_id", pa.array(cluster[dup], pa.int64()))
        .append_column("matched_index", pa.array(matched[dup]))
    )

    flat, offsets = cluster_lists(cl)
    clusters = pa.table(
        {
            "cluster_id": pa.array(np.arange(offsets.size - 1, dtype=np.int64)),
            "size": pa.array(np.diff(offsets)),
            "representative": ids_at(flat[offsets[:-1]]),
            "members": id_lists(offsets, flat),
        }
    )

    pairs, im = result.batch.pairs, result.matches
    key_nodes = _positions(pa.array(im.key, pa.string()), nodes.slice(0, m))
    kinds = pa.concat_arrays(
        [
            pa.repeat(pa.scalar("exact" if pairs.exact else "estimated", pa.string()), len(pairs)),
            pa.repeat(pa.scalar("exact" if im.exact else "estimated", pa.string()), len(im)),
        ]
    )
    candidate_pairs = pa.table(
        {
            "id_a": ids_at(np.concatenate((pairs.left + m, im.row + m))),
            "id_b": ids_at(np.concatenate((pairs.right + m, key_nodes))),
            "jaccard": pa.array(np.round(np.concatenate((pairs.jaccard, im.similarity)), 6)),
            "jaccard_kind": kinds,
            "estimated_jaccard": pa.array(np.round(np.concatenate((pairs.estimated, im.estimated)), 6)),
            "matched_index": pa.array(np.arange(len(pairs) + len(im)) >= len(pairs)),
        }
    )

    b = result.batch.buckets
    lsh_buckets = bucket_table(b, id_lists(b.offsets, b.members + m))
    return {
        "annotated": annotated,
        "deduped": deduped,
        "duplicates": duplicates,
        "clusters": clusters,
        "candidate_pairs": candidate_pairs,
        "lsh_buckets": lsh_buckets,
    }


def _positions(keys: pa.Array, known: pa.Array) -> np.ndarray:
    """The position in ``known`` (distinct values) of each of ``keys``, all of which it holds."""
    found = pc.index_in(keys, value_set=known)
    if found.null_count:
        raise RuntimeError("a matched key is not among the index keys")
    positions: np.ndarray = found.to_numpy(zero_copy_only=False).astype(np.int64)
    return positions


# -- the same tables a slice at a time, for corpora larger than memory ----------------------------


def annotate(table: pa.Table, ids: pa.Array, clusters: Clusters, start: int) -> dict[str, pa.Table]:
    """``annotated``, ``deduped`` and ``duplicates`` rows of the input rows ``start, start + 1, ...``.

    ``table`` holds those rows, ``ids`` the id of every row; concatenated over the
    batches of a corpus, the pieces are the tables :func:`build_tables` makes.
    """
    stop = start + table.num_rows
    cluster = clusters.cluster[start:stop]
    rep = clusters.representative[start:stop]
    keep = clusters.keep[start:stop]
    annotated = (
        table.append_column("cluster_id", pa.array(cluster, type=pa.int64(), mask=cluster < 0))
        .append_column("representative", _ids_at(ids, rep))
        .append_column("is_duplicate", pa.array(~keep))
    )
    dup = np.flatnonzero(~keep)
    duplicates = (
        table.take(pa.array(dup, pa.int64()))
        .append_column("duplicate_of", _ids_at(ids, rep[dup]))
        .append_column("cluster_id", pa.array(cluster[dup], pa.int64()))
    )
    return {"annotated": annotated, "deduped": table.filter(pa.array(keep)), "duplicates": duplicates}


def _slices(offsets: np.ndarray, max_items: int) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` row ranges of a list table whose rows plus list items stay near ``max_items``
    (at least one row each); one empty range for an empty table."""
    rows = offsets.size - 1
    if rows == 0:
        yield 0, 0
        return
    cost = offsets[1:] + np.arange(1, rows + 1)  # items and rows up to each row
    lo = 0
    while lo < rows:
        base = int(offsets[lo]) + lo
        hi = max(lo + 1, int(np.searchsorted(cost, base + max_items, side="right")))
        yield lo, hi
        lo = hi


def cluster_lists(clusters: Clusters) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's members, as ``DedupResult.groups()`` lists them (its representative first,
    then the others in input order; clusters in id order), without a loop per cluster: the
    members back to back, and ``offsets`` (cluster ``c`` is ``members[offsets[c]:offsets[c + 1]]``)."""
    members = np.flatnonzero(clusters.cluster >= 0)
    cl = clusters.cluster[members]
    order = np.lexsort((members, members != clusters.representative[members], cl))
    members, cl = members[order].astype(np.int64), cl[order]
    sizes = np.bincount(cl, minlength=clusters.n_clusters)
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return members, offsets


def cluster_tables(ids: pa.Array, clusters: Clusters, *, max_items: int) -> Iterator[pa.Table]:
    """The ``clusters`` table of :func:`build_tables` in slices (at least one, maybe empty)."""
    members, offsets = cluster_lists(clusters)
    sizes = np.diff(offsets)
    reps = members[offsets[:-1]]
    for lo, hi in _slices(offsets, max_items):
        a, b = int(offsets[lo]), int(offsets[hi])
        yield pa.table(
            {
                "cluster_id": pa.array(np.arange(lo, hi, dtype=np.int64)),
                "size": pa.array(sizes[lo:hi]),
                "representative": _ids_at(ids, reps[lo:hi]),
                "members": _id_lists(ids, offsets[lo : hi + 1] - a, members[a:b]),
            }
        )
        release_mapped(clusters.cluster, clusters.representative)


def pair_tables(ids: pa.Array, pairs: Pairs, *, max_items: int) -> Iterator[pa.Table]:
    """The ``candidate_pairs`` table of :func:`build_tables` in slices (at least one)."""
    kind = pa.scalar("exact" if pairs.exact else "estimated", pa.string())
    n = len(pairs)
    for lo in range(0, max(n, 1), max(1, max_items)):
        hi = min(n, lo + max_items)
        yield pa.table(
            {
                "id_a": _ids_at(ids, np.asarray(pairs.left[lo:hi])),
                "id_b": _ids_at(ids, np.asarray(pairs.right[lo:hi])),
                "jaccard": pa.array(np.round(np.asarray(pairs.jaccard[lo:hi]), 6)),
                "jaccard_kind": pa.repeat(kind, hi - lo),
                "estimated_jaccard": pa.array(np.round(np.asarray(pairs.estimated[lo:hi]), 6)),
                **_containment_column(pairs, lo, hi),
            }
        )
        release_mapped(pairs.left, pairs.right, pairs.jaccard, pairs.estimated)


def _containment_column(pairs: Pairs, lo: int, hi: int) -> dict[str, pa.Array]:
    """``containment`` of pairs ``lo:hi`` in a containment run; nothing in another."""
    if pairs.containment is None:
        return {}
    return {"containment": pa.array(np.round(np.asarray(pairs.containment[lo:hi]), 6))}


def bucket_tables(ids: pa.Array, buckets: Buckets, *, max_items: int) -> Iterator[pa.Table]:
    """The ``lsh_buckets`` table of :func:`build_tables` in slices (at least one)."""
    offsets = np.asarray(buckets.offsets)
    for lo, hi in _slices(offsets, max_items):
        a, b = int(offsets[lo]), int(offsets[hi])
        rebased = offsets[lo : hi + 1] - a
        members = np.asarray(buckets.members[a:b])
        part = Buckets(band=buckets.band[lo:hi], key=buckets.key[lo:hi], offsets=rebased, members=members)
        yield bucket_table(part, _id_lists(ids, rebased, members))
        release_mapped(buckets.band, buckets.key, buckets.offsets, buckets.members)


CLUSTER_ROWS = ListRows((("cluster_id", INT), ("size", INT), ("representative", ID)), "members")
"""A ``clusters`` row in JSON Lines, as :func:`cluster_tables` gives it."""
BUCKET_ROWS = ListRows((("band", INT), ("bucket_key", HEX), ("member_count", INT)), "members")
"""An ``lsh_buckets`` row in JSON Lines, as :func:`bucket_tables` gives it."""


def cluster_lines(ids: IdTexts, clusters: Clusters, *, max_items: int) -> Iterator[tuple[np.ndarray, int]]:
    """The JSON Lines text of :func:`cluster_tables`' slices, and the rows each holds."""
    members, offsets = cluster_lists(clusters)
    sizes = np.diff(offsets)
    reps = members[offsets[:-1]]
    for lo, hi in _slices(offsets, max_items):
        a, b = int(offsets[lo]), int(offsets[hi])
        values = np.stack((np.arange(lo, hi, dtype=np.int64), sizes[lo:hi], reps[lo:hi]))
        yield list_lines(CLUSTER_ROWS, values, offsets[lo : hi + 1] - a, members[a:b], ids), hi - lo


def bucket_lines(ids: IdTexts, buckets: Buckets, *, max_items: int) -> Iterator[tuple[np.ndarray, int]]:
    """The JSON Lines text of :func:`bucket_tables`' slices, and the rows each holds."""
    offsets = np.asarray(buckets.offsets)
    for lo, hi in _slices(offsets, max_items):
        a, b = int(offsets[lo]), int(offsets[hi])
        rebased = offsets[lo : hi + 1] - a
        keys = np.ascontiguousarray(buckets.key[lo:hi], dtype=np.uint64).view(np.int64)
        values = np.stack((np.asarray(buckets.band[lo:hi], dtype=np.int64), keys, np.diff(rebased)))
        yield list_lines(BUCKET_ROWS, values, rebased, np.asarray(buckets.members[a:b]), ids), hi - lo
        release_mapped(buckets.band, buckets.key, buckets.offsets, buckets.members)


_ROW_TABLES = ("annotated", "deduped", "duplicates")
WRITE_ROWS = 4096
"""Input rows per piece of ``annotated``, ``deduped`` and ``duplicates``: small pieces keep few
rows in flight, and making one piece overlaps writing the one before."""


def table_pieces(tables: Iterable[pa.Table], rows: int, max_bytes: int | None = None) -> Iterator[pa.Table]:
    """The rows of ``tables`` in order, in pieces of ``rows`` (the last one shorter; none for no
    rows): large tables are sliced, small ones (a reader's batches) gathered into one. With
    ``max_bytes``, a piece also ends once it holds that many bytes (so long rows go fewer to a
    piece; a table of more bytes than that with fewer rows is a piece of its own)."""
    held: list[pa.Table] = []
    count = size = 0
    for table in tables:
        lo = 0
        while lo < table.num_rows:
            part = table.slice(lo, rows - count)
            held.append(part)
            count += part.num_rows
            lo += part.num_rows
            if max_bytes is not None:
                size += part.nbytes
            if count == rows or (max_bytes is not None and size >= max_bytes):
                yield _joined(held)
                held, count, size = [], 0, 0
    if count:
        yield _joined(held)


def _joined(tables: list[pa.Table]) -> pa.Table:
    """One table of ``tables``' rows, each column one chunk: the writers format a chunk at a
    time, and a reader's batches of a hundred rows cost them several times a large chunk's time."""
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables).combine_chunks()


def write_outputs(
    target: OutputDir,
    fmt: str,
    *,
    inputs: Iterable[pa.Table],
    schema: pa.Schema,
    ids: pa.Array,
    result: DedupResult,
    max_items: int,
    progress: Progress | None = None,
    piece_rows: int = WRITE_ROWS,
    piece_bytes: int | None = None,
) -> None:
    """Write the six tables of :func:`build_tables` into ``target``, a slice at a time.

    ``inputs`` are the input rows in order (``schema`` is theirs), ``ids`` every row's id;
    ``annotated``, ``deduped`` and ``duplicates`` are written in pieces of ``piece_rows``
    input rows (and at most about ``piece_bytes`` bytes, if given), the others in slices of
    about ``max_items`` values, so no whole output table is held. With more than one kernel
    thread, the three files of row tables are written side by side and the other three beside
    them (:class:`GraphTables`).
    """
    report = progress or (lambda stage, done, total: None)
    clusters = result.clusters
    rows = clusters.cluster.size
    if not any(target.wants(name) for name in _ROW_TABLES):  # the input is not read again
        write_graph_tables(target, fmt, ids=ids, result=result, max_items=max_items)
        return
    empty = annotate(schema.empty_table(), ids, clusters, 0)
    writers = {name: target.open_table(name, fmt, table.schema) for name, table in empty.items()}
    start = 0
    report("write", 0, rows)
    # Formatting a piece (JSON escaping, CSV and Parquet encoding) and writing it release the
    # GIL: with more than one worker the three files are written side by side, each in order,
    # their kernels on as many threads as this thread's (numba's count is per thread).
    workers = min(len(_ROW_TABLES), threads())
    with (
        ThreadPoolExecutor(workers, initializer=set_threads, initargs=(threads(),)) as pool,
        GraphTables(target, fmt, ids=ids, result=result, max_items=max_items) as graph,
    ):  # (an error stops the graph tables before the pool waits for its threads)
        graph.start(pool)  # on one of the pool's threads
        writing: list[Future[None]] = []  # the previous piece's writes, while this one is made
        for table in table_pieces(inputs, piece_rows, piece_bytes):
            # in JSON Lines the input columns are escaped once for all three tables
            formatted = table.column_names if fmt == "jsonl" else []
            row_pieces = annotate(json_texts(table) if formatted else table, ids, clusters, start)
            for done in writing:
                done.result()
            pa.default_memory_pool().release_unused()
            if workers > 1:
                writing = [
                    pool.submit(writers[name].write, piece, formatted) for name, piece in row_pieces.items()
                ]
            else:
                for name, piece in row_pieces.items():
                    writers[name].write(piece, formatted)
            start += table.num_rows
            report("write", start, rows)
        for done in writing:
            done.result()


class GraphTables:
    """``clusters``, ``candidate_pairs`` and ``lsh_buckets`` (:func:`write_graph_tables`) written
    while the ``with`` block writes the row tables: on another thread from :meth:`start` on,
    when the kernels have more than one thread (building, formatting and writing a slice release
    the GIL for most of their time); at the block's end with one, or if the block never calls
    :meth:`start`.

    The block opens the row tables' files before it calls :meth:`start`, so the files are opened,
    and named in the commit record, in the same order either way. An error in the block stops the
    tables before their next slice and propagates once they have stopped: nothing is left
    writing into the staging folder when :class:`~neardup.io.OutputDir` removes it. An error in
    writing them is raised when the block ends (before :class:`~neardup.io.OutputDir` commits
    anything); the block's own error wins over it.
    """

    def __init__(
        self, target: OutputDir, fmt: str, *, ids: pa.Array, result: DedupResult, max_items: int
    ) -> None:
        self._target, self._fmt, self._ids, self._result = target, fmt, ids, result
        self._max_items = max_items
        self._stop = threading.Event()
        self._started = False
        self._own: ThreadPoolExecutor | None = None
        self._writing: Future[None] | None = None

    def __enter__(self) -> GraphTables:
        return self

    def start(self, pool: Executor | None = None) -> None:
        """Begin writing the tables beside the block, with more than one kernel thread: on one of
        ``pool``'s threads (the block's own writers, whose memory allocator's arenas they then
        share rather than adding one of their own), else on a thread of their own. Once."""
        if self._started:
            return
        self._started = True
        count = threads()
        if count <= 1:
            return
        if pool is None:
            pool = self._own = ThreadPoolExecutor(1, thread_name_prefix="neardup-write-graph")
        self._writing = pool.submit(self._run, count)

    def _run(self, count: int) -> None:
        set_threads(count)
        self._write(self._stop.is_set)

    def _write(self, stopped: Callable[[], bool]) -> None:
        _write_graph_tables(
            self._target,
            self._fmt,
            ids=self._ids,
            result=self._result,
            max_items=self._max_items,
            stopped=stopped,
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        writing, self._writing = self._writing, None
        error: BaseException | None = None
        if writing is not None:
            if exc_type is not None:
                self._stop.set()
            wait([writing])
            error = writing.exception()
            if self._own is not None:
                self._own.shutdown()
        if exc_type is not None:
            return
        if error is not None:
            raise error
        if writing is None:
            self._write(lambda: False)


def write_graph_tables(
    target: OutputDir, fmt: str, *, ids: pa.Array, result: DedupResult, max_items: int
) -> None:
    """Write ``clusters``, ``candidate_pairs`` and ``lsh_buckets`` into ``target`` in slices of about
    ``max_items`` values (``ids`` is every row's id)."""
    _write_graph_tables(target, fmt, ids=ids, result=result, max_items=max_items, stopped=lambda: False)


def _write_graph_tables(
    target: OutputDir,
    fmt: str,
    *,
    ids: pa.Array,
    result: DedupResult,
    max_items: int,
    stopped: Callable[[], bool],
) -> None:
    """:func:`write_graph_tables`, returning early once ``stopped()`` (checked before each slice).
    In JSON Lines, ``clusters`` and ``lsh_buckets`` are printed by :func:`cluster_lines` and
    :func:`bucket_lines` (the same text, without a table per slice)."""
    texts: IdTexts | None = None
    if fmt == "jsonl" and (target.wants("clusters") or target.wants("lsh_buckets")):
        texts = IdTexts.of(ids)
    for name, pieces in (
        ("clusters", cluster_tables(ids, result.clusters, max_items=max_items)),
        ("candidate_pairs", pair_tables(ids, result.pairs, max_items=max_items)),
        ("lsh_buckets", bucket_tables(ids, result.buckets, max_items=max_items)),
    ):
        if not target.wants(name):
            continue
        if stopped():
            return
        if texts is not None and name != "candidate_pairs":
            lines = target.open_table(name, fmt, pa.schema([]))
            made = (
                cluster_lines(texts, result.clusters, max_items=max_items)
                if name == "clusters"
                else bucket_lines(texts, result.buckets, max_items=max_items)
            )
            for data, rows in made:
                if stopped():
                    return
                lines.write_lines(data, rows)
            continue
        first = next(pieces)
        writer = target.open_table(name, fmt, first.schema)
        writer.write(first)
        del first
        while not stopped() and (piece := next(pieces, None)) is not None:
            writer.write(piece)
            del piece
            pa.default_memory_pool().release_unused()  # the slice's, before the next one is made
