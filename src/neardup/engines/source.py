"""The input as a stream of text chunks with global row positions.

A source is a callable that returns a fresh iterable of Arrow record batches or
tables, the same rows in the same order every time it is called; the engine
reads it once for the signatures and again for the shingle sets of the
documents it must verify. Row ``i`` of that order is document ``i``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np
import pyarrow as pa

from neardup.core.text import TextBatch
from neardup.errors import InputError, MissingColumnError
from neardup.pipeline import arrow_to_batch

_T = TypeVar("_T")
Source = Callable[[], Iterable[pa.RecordBatch | pa.Table]]
"""``source()`` -> a fresh iterable of record batches or tables, the same rows each time."""

FINGERPRINT_ROWS = 1000
MIN_CHUNK_ROWS = 4096
"""Input batches of at least this many rows are used as they are (no copy), not combined."""


def table_source(table: pa.Table, batch_rows: int = 65_536) -> Source:
    """A source over an in-memory table, ``batch_rows`` rows per batch."""

    def batches() -> Iterable[pa.RecordBatch]:
        out: list[pa.RecordBatch] = table.to_batches(max_chunksize=batch_rows)
        return out

    return batches


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)) or (
        hasattr(pa.types, "is_string_view") and bool(pa.types.is_string_view(t))
    )


def _text_arrays(source: Source, text_column: str) -> Iterator[pa.Array]:
    for i, item in enumerate(source()):
        names = item.schema.names
        if text_column not in names:
            raise MissingColumnError(
                f"input batch {i + 1} has no column {text_column!r}; it has: {', '.join(names)}"
            )
        column = item.column(text_column)
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        for chunk in chunks:
            if not _is_text(chunk.type):
                raise InputError(f"column {text_column!r} is {chunk.type}, not text")
            if len(chunk):
                yield chunk.cast(pa.large_string())


_END = object()


def prefetched(items: Iterable[_T]) -> Iterator[_T]:
    """``items`` in order, the next one made on another thread while the caller works on this one.

    Reading and decoding an input batch (Parquet, Arrow IPC, casts) releases the GIL, so it
    overlaps the compiled stages, which leave a core idle between calls. One item is made
    ahead, never more; an exception from ``items`` is raised here, in its place.
    """
    source = iter(items)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup-read") as pool:
        ahead = pool.submit(next, source, _END)
        while True:
            item = ahead.result()
            if item is _END:
                return
            ahead = pool.submit(next, source, _END)
            yield cast(_T, item)


def _byte_ends(arr: pa.Array) -> np.ndarray:
    """Cumulative UTF-8 bytes after each row of a large_string array."""
    offsets: np.ndarray = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
    ends: np.ndarray = offsets[1:] - offsets[0]
    return ends


def text_chunks(
    source: Source, text_column: str, *, skip: int, max_rows: int, max_bytes: int
) -> Iterator[tuple[int, TextBatch]]:
    """``(first row, batch)`` for consecutive chunks of the text column, from row ``skip`` on.

    A chunk holds at most ``max_rows`` documents and ``max_bytes`` bytes of text
    (but always at least one document). Input batches are combined (copied) only
    until a chunk has ``MIN_CHUNK_ROWS`` rows; larger ones become chunks as they are.
    """
    row = 0  # input rows seen
    first = skip  # first row of the chunk being filled
    pending: list[pa.Array] = []
    rows = 0
    size = 0
    for arr in prefetched(_text_arrays(source, text_column)):
        if row + len(arr) <= skip:
            row += len(arr)
            continue
        if row < skip:
            arr = arr.slice(skip - row)
            row = skip
        row += len(arr)
        ends = _byte_ends(arr)
        pos = 0  # rows of arr already in a chunk
        while pos < len(arr):
            base = int(ends[pos - 1]) if pos else 0
            fit = int(np.searchsorted(ends, base + max_bytes - size, side="right")) - pos
            take = min(max_rows - rows, fit, len(arr) - pos)
            if take <= 0 and rows == 0:
                take = 1  # one document larger than the byte budget
            if take > 0:
                pending.append(arr.slice(pos, take))
                rows += take
                size += int(ends[pos + take - 1]) - base
                pos += take
            if pos < len(arr) or rows >= MIN_CHUNK_ROWS:  # the chunk is full, or big enough
                yield first, _combine(pending)
                first += rows
                pending, rows, size = [], 0, 0
    if pending:
        yield first, _combine(pending)


def _combine(arrays: list[pa.Array]) -> TextBatch:
    return arrow_to_batch(arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays))


def fingerprint(source: Source, text_column: str) -> dict[str, Any]:
    """A digest of the source's first rows: cheap, and enough to tell one input from another."""
    digest = hashlib.blake2b(digest_size=16)
    rows = 0
    for _, batch in text_chunks(source, text_column, skip=0, max_rows=FINGERPRINT_ROWS, max_bytes=1 << 62):
        lo, hi = int(batch.offsets[0]), int(batch.offsets[-1])
        digest.update(np.ascontiguousarray(np.diff(batch.offsets)).tobytes())
        digest.update(batch.data[lo:hi].tobytes())
        rows = len(batch)
        break
    return {"rows": rows, "digest": digest.hexdigest()}
