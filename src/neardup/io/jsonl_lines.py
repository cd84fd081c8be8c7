"""Rows of one JSON Lines file written as they were read: its own lines, with columns spliced in.

A run that reads one JSON Lines file in passes (:class:`~neardup.io.jsonl_passes.JsonlPasses`)
and writes JSON Lines makes ``annotated``, ``deduped`` and ``duplicates`` from the input's lines
rather than from parsed rows. Each record keeps its bytes: its keys in their order, its spacing,
how its numbers and strings are spelled, and no ``null`` for a field that other records have
and it lacks. The columns a table adds (``cluster_id``, ``representative``, ...) go before the
record's closing brace, a generated ``row_id`` after its opening one, in the writer's style
(``"key": value``, joined by ``", "``). Nothing is parsed or escaped again: each piece is one
compiled copy of bytes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.core.clusters import Clusters
from neardup.core.jit import in_threads, kernel, threads
from neardup.errors import InputError
from neardup.io._jsontext import text
from neardup.io.spans import copy_bytes, read_exactly
from neardup.io.writers import OutputDir, TableWriter, value_texts

PIECE_BYTES = 2 << 20
"""Input bytes per piece (or one line, if longer): a piece, and its three outputs, are held at once."""
_NAMES = ("annotated", "deduped", "duplicates")
_WRITE_GROUPS = (_NAMES[:1], _NAMES[1:])
"""``annotated``, and the other two (about as many bytes): with more than one kernel thread, each
group is spliced on a thread of its own and written by a thread of its own."""
TEXT_ROWS = 1 << 15
"""Rows whose spliced-in texts are made at a time (a few MB of text), for the pieces among them."""


@kernel
def splice_lines(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    pre_data: np.ndarray,
    pre_offsets: np.ndarray,
    suf_data: np.ndarray,
    suf_offsets: np.ndarray,
    out: np.ndarray,
) -> int:
    """Write line ``i`` (``buf[starts[i]:ends[i]]``, a JSON object) for each ``i`` into ``out``,
    ``pre_data``'s ``i``-th text after its opening brace and ``suf_data``'s before its closing one
    (each empty, or members ``"key": value``, joined to the record's own members by ``", "``), then
    a newline. Returns the bytes written, or ``-1 - i`` for a line ``i`` that is not ``{ ... }``
    (with JSON whitespace after the brace). ``out`` holds at least the lines, the texts, and
    five bytes per line."""
    at = 0
    for i in range(starts.size):
        s = starts[i]
        e = ends[i]
        close = e - 1
        while close > s and (buf[close] == 0x20 or buf[close] == 0x09 or buf[close] == 0x0D):
            close -= 1
        if close <= s or buf[s] != 0x7B or buf[close] != 0x7D:
            return -1 - i
        first = s + 1
        while first < close and (buf[first] == 0x20 or buf[first] == 0x09 or buf[first] == 0x0D):
            first += 1
        members = first < close
        p0 = pre_offsets[i]
        p1 = pre_offsets[i + 1]
        q0 = suf_offsets[i]
        q1 = suf_offsets[i + 1]
        out[at] = 0x7B
        at += 1
        copy_bytes(out, at, pre_data, p0, p1 - p0)
        at += p1 - p0
        if p1 > p0 and members:
            out[at] = 0x2C
            out[at + 1] = 0x20
            at += 2
        copy_bytes(out, at, buf, s + 1, close - s - 1)
        at += close - s - 1
        if q1 > q0 and (members or p1 > p0):
            out[at] = 0x2C
            out[at + 1] = 0x20
            at += 2
        copy_bytes(out, at, suf_data, q0, q1 - q0)
        at += q1 - q0
        copy_bytes(out, at, buf, close, e - close)
        at += e - close
        out[at] = 0x0A
        at += 1
    return at


@dataclass(frozen=True)
class _Texts:
    """One text per row, back to back: ``data[offsets[i]:offsets[i + 1]]``."""

    data: np.ndarray
    offsets: np.ndarray

    @classmethod
    def none(cls, rows: int) -> _Texts:
        return cls(np.zeros(1, np.uint8), np.zeros(rows + 1, np.int64))

    def rows(self, lo: int, hi: int) -> _Texts:
        """Texts ``lo:hi``, sharing ``data`` (the kernel takes the offsets as they are)."""
        return _Texts(self.data, self.offsets[lo : hi + 1])

    @property
    def size(self) -> int:
        """Bytes of all the texts."""
        return int(self.offsets[-1] - self.offsets[0])

    @classmethod
    def joined(cls, *parts: pa.Array | pa.Scalar) -> _Texts:
        """The element-wise concatenation of ``parts`` (large-string arrays and scalars)."""
        joined = pc.binary_join_element_wise(*parts, text("")).cast(pa.large_string())
        _, offsets_buf, data_buf = joined.buffers()
        offsets = np.frombuffer(offsets_buf, np.int64)[joined.offset : joined.offset + len(joined) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
        return cls(data, offsets)


def _member(name: str) -> str:
    return json.dumps(name, ensure_ascii=False) + ": "


class LineWriter:
    """``annotated``, ``deduped`` and ``duplicates`` in JSON Lines from the lines of ``path`` (the
    byte ranges ``spans``, one per row, each a JSON object), as :func:`~neardup.outputs.write_outputs`
    would write them from the parsed rows but with each record's own text. ``ids`` is every row's
    id; ``generated`` puts it first in each record, as ``id_column`` (a generated ``row_id``)."""

    def __init__(
        self,
        path: Path,
        spans: np.ndarray,
        ids: pa.Array,
        clusters: Clusters,
        id_column: str,
        generated: bool,
    ) -> None:
        self.path = path
        self.spans = spans
        self.ids = ids
        self.clusters = clusters
        self.id_column = id_column
        self.generated = generated

    def write(
        self,
        target: OutputDir,
        progress: Callable[[str, int, int], None] | None = None,
        *,
        opened: Callable[[], object] | None = None,
    ) -> None:
        """Write the three tables into ``target``, calling ``progress("write", rows_done, rows)``
        after each piece, and ``opened()`` once their files are open, before the first piece (or
        at once, when none is chosen): what else writes into ``target`` may start there, its files
        opened after these. Raises :class:`~neardup.errors.InputError` if a line is no longer a
        JSON object (the file changed)."""
        report = progress or (lambda stage, done, total: None)
        rows = self.spans.shape[0]
        if not any(target.wants(name) for name in _NAMES):
            if opened is not None:
                opened()
            return  # no row table chosen: the file is not read again
        writers = {name: target.open_table(name, "jsonl", pa.schema([])) for name in _NAMES}
        if opened is not None:
            opened()
        report("write", 0, rows)
        groups = _WRITE_GROUPS if threads() > 1 else (_NAMES,)
        with contextlib.ExitStack() as stack:
            fh = stack.enter_context(open(self.path, "rb", buffering=0))
            # a thread per group of files, so each file is written by one thread, piece after piece
            pools = [
                stack.enter_context(ThreadPoolExecutor(1, f"neardup-write-{names[0]}")) for names in groups
            ]
            writing: list[Future[None]] = []  # the previous piece, written while this one is made
            for first in range(0, rows, TEXT_ROWS):
                end = min(rows, first + TEXT_ROWS)
                texts = self._texts(first, end)
                for lo, hi in self._pieces(first, end):
                    outputs = self._piece(fh.fileno(), lo, hi, texts)
                    for done in writing:
                        done.result()
                    writing = [
                        pool.submit(_write_all, writers, outputs, names)
                        for pool, names in zip(pools, groups, strict=True)
                    ]
                    report("write", hi, rows)
            for done in writing:
                done.result()

    def _pieces(self, lo: int, end: int) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` ranges of rows ``lo:end`` of about ``PIECE_BYTES`` of the file each (at
        least one row)."""
        starts = self.spans[:, 0]
        while lo < end:
            hi = int(np.searchsorted(starts, starts[lo] + PIECE_BYTES, side="left"))
            hi = max(lo + 1, min(hi, end))
            yield lo, hi
            lo = hi

    def _texts(self, lo: int, hi: int) -> _RowTexts:
        """What rows ``lo:hi`` get spliced into their records."""
        cl = self.clusters
        return _RowTexts.of(
            lo,
            cluster=cl.cluster[lo:hi],
            keep=cl.keep[lo:hi],
            representatives=self.ids.take(pa.array(cl.representative[lo:hi], pa.int64())),
            ids=self.ids.slice(lo, hi - lo) if self.generated else None,
            id_column=self.id_column,
        )

    def _piece(self, fd: int, lo: int, hi: int, texts: _RowTexts) -> dict[str, tuple[np.ndarray, int]]:
        """The three tables' text for rows ``lo:hi`` (of those of ``texts``), and the rows each
        holds."""
        spans = self.spans[lo:hi]
        base = int(spans[0, 0])
        size = int(spans[-1, 1]) - base
        buf = np.empty(size, np.uint8)
        if not read_exactly(fd, buf, base):
            raise self._changed()
        outputs = texts.splice(buf, spans[:, 0] - base, spans[:, 1] - base, lo, hi)
        if outputs is None:
            raise self._changed()
        return outputs

    def _changed(self) -> InputError:
        return InputError("the file changed while it was being read; run again", path=self.path)


def splice_rows(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    cluster: np.ndarray,
    keep: np.ndarray,
    representatives: pa.Array,
    ids: pa.Array | None,
    id_column: str,
    extra: str = "",
) -> dict[str, tuple[np.ndarray, int]] | None:
    """``annotated``, ``deduped`` and ``duplicates`` as JSON Lines text, and the rows each holds,
    from the records ``buf[starts[i]:ends[i]]`` (each a JSON object) with their ``cluster``,
    ``keep`` flag and representative's id; ``ids`` (a generated id per row) go first in each
    record as ``id_column``, and ``extra`` (members ``"key": value``, such as a record's source
    file) after the record's own. None if a record is not a JSON object."""
    texts = _RowTexts.of(
        0,
        cluster=cluster,
        keep=keep,
        representatives=representatives,
        ids=ids,
        id_column=id_column,
        extra=extra,
    )
    return texts.splice(buf, starts, ends, 0, starts.size)


@dataclass(frozen=True)
class _RowTexts:
    """What :func:`splice_rows` puts into the records of rows ``first:`` of a file, made for many
    pieces at once (the Arrow calls that make them cost about as much for a few hundred rows as
    for tens of thousands): per row, the annotation and the prefix; per kept row (``kept``, in
    order), the prefix and the extra members; per dropped row (``dropped``), the prefix and the
    ``duplicate_of`` members."""

    first: int
    annotations: _Texts
    prefix: _Texts
    kept: np.ndarray
    kept_prefix: _Texts
    only_extra: _Texts
    dropped: np.ndarray
    dropped_prefix: _Texts
    duplicate_of: _Texts

    @classmethod
    def of(
        cls,
        first: int,
        *,
        cluster: np.ndarray,
        keep: np.ndarray,
        representatives: pa.Array,
        ids: pa.Array | None,
        id_column: str,
        extra: str = "",
    ) -> _RowTexts:
        """The texts of rows ``first:first + cluster.size`` (see :func:`splice_rows`)."""
        reps = value_texts(representatives)
        tail = text(extra + ", " if extra else "")

        def prefix(picked: np.ndarray) -> _Texts:  # the generated id first, if any
            if ids is None:
                return _Texts.none(picked.size)
            return _Texts.joined(
                text(_member(id_column)), value_texts(ids.take(pa.array(picked, pa.int64())))
            )

        annotations = _Texts.joined(
            tail,
            text(_member("cluster_id")),
            value_texts(pa.array(cluster, pa.int64(), mask=cluster < 0)),
            text(", " + _member("representative")),
            reps,
            text(", " + _member("is_duplicate")),
            value_texts(pa.array(~keep)),
        )
        kept = np.flatnonzero(keep)
        dropped = np.flatnonzero(~keep)
        duplicate_of = _Texts.joined(
            tail,
            text(_member("duplicate_of")),
            reps.take(pa.array(dropped, pa.int64())),
            text(", " + _member("cluster_id")),
            value_texts(pa.array(cluster[dropped], pa.int64())),
        )
        only_extra = (
            _Texts.joined(text(extra), pa.repeat(text(""), kept.size)) if extra else _Texts.none(kept.size)
        )
        return cls(
            first,
            annotations,
            prefix(np.arange(cluster.size)),
            kept + first,
            prefix(kept),
            only_extra,
            dropped + first,
            prefix(dropped),
            duplicate_of,
        )

    def splice(
        self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, lo: int, hi: int
    ) -> dict[str, tuple[np.ndarray, int]] | None:
        """The three tables' text for rows ``lo:hi`` (file rows, among this object's), whose
        records are ``buf[starts[i]:ends[i]]``; None if a record is not a JSON object."""
        a, b = (int(k) for k in np.searchsorted(self.kept, (lo, hi)))
        c, d = (int(k) for k in np.searchsorted(self.dropped, (lo, hi)))
        kept = self.kept[a:b] - lo
        dropped = self.dropped[c:d] - lo
        at, to = lo - self.first, hi - self.first
        jobs = {
            "annotated": (starts, ends, self.prefix.rows(at, to), self.annotations.rows(at, to)),
            "deduped": (starts[kept], ends[kept], self.kept_prefix.rows(a, b), self.only_extra.rows(a, b)),
            "duplicates": (
                starts[dropped],
                ends[dropped],
                self.dropped_prefix.rows(c, d),
                self.duplicate_of.rows(c, d),
            ),
        }
        outputs: dict[str, tuple[np.ndarray, int]] = {}
        failed = [False]

        def splice(name: str) -> None:
            s, e, pre, suf = jobs[name]
            bound = int((e - s).sum()) + 5 * s.size + pre.size + suf.size
            out = np.empty(bound, np.uint8)
            written = splice_lines(buf, s, e, pre.data, pre.offsets, suf.data, suf.offsets, out)
            if written < 0:
                failed[0] = True
                return
            outputs[name] = (out[:written], s.size)

        def part(k: int) -> None:  # annotated, and the other two (about as many bytes) beside it
            for name in _WRITE_GROUPS[k]:
                splice(name)

        if threads() > 1:
            in_threads(part, 2)
        else:
            part(0)
            part(1)
        return None if failed[0] else outputs


def _write_all(
    writers: dict[str, TableWriter], outputs: dict[str, tuple[np.ndarray, int]], names: tuple[str, ...]
) -> None:
    for name in names:
        data, rows = outputs[name]
        writers[name].write_lines(data, rows)
