"""One JSON Lines file read in passes, a batch at a time, rather than held whole.

``neardup dedup`` needs the text of its input three times: for the signatures, for
the exact Jaccard of the documents in candidate pairs, and for the outputs. Holding
the input table between them was most of a run's memory (about the file's size again).
:class:`JsonlPasses` reads one JSON Lines file as :func:`~neardup.io.read_corpus` does
(pyarrow's block-wise reader, the same options, checks and columns) a batch at a time:
once in full for the signatures (:meth:`~JsonlPasses.first_pass`), then the lines of
just the documents verification asks for, by their byte ranges
(:meth:`~JsonlPasses.texts`), then in full again for the outputs: as its lines, for JSON
Lines outputs (:meth:`~JsonlPasses.write_rows`), or parsed again (:meth:`~JsonlPasses.tables`).

It takes the files that read the same either way: one record per line, each line
starting with ``{``, every record good, ids unique, the column types fixed by the first
block (as the whole-file read fixes them when it can); a run whose outputs are the file's own
lines parses the text and id fields alone, so the other fields' types do not matter to it. For
anything else it raises :class:`WholeReadNeededError` before anything is decided, and the file is
read whole, with that reader's errors and skipped records. A file that changes between the passes is an
:class:`~neardup.errors.InputError`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from neardup.core.clusters import Clusters
from neardup.core.text import TextBatch
from neardup.engines.streaming import IN_MEMORY_BASE
from neardup.errors import InputError, MissingColumnError
from neardup.io._common import WholeReadNeededError, head, read_or_fall_back
from neardup.io.inputs import (
    GENERATED_ID,
    ReadOptions,
    check_columns,
    detect_format,
    null_texts,
    text_as_string,
)
from neardup.io.json_array import array_layout
from neardup.io.json_fields import string_field
from neardup.io.json_records import pooled_bytes, record_fields
from neardup.io.jsonl import STREAM_BLOCK_SIZE, open_blocks, slow_path_reason
from neardup.io.jsonl_lines import LineWriter
from neardup.io.spans import read_exactly, read_ranges
from neardup.io.writers import OutputDir
from neardup.pipeline import arrow_to_batch
from neardup.warm import first_pass_reader_cached

SCAN_BYTES = 16 << 20
"""Bytes read at a time when finding the lines, into one buffer (and one of flags) reused
throughout: buffers made afresh for each read took 0.05-0.16 s for 68 MB, as their pages were
new memory each time; these take 0.049 s. The scan runs beside numba's set-up, which holds the
GIL, and each numpy call waits for it: fewer, larger reads end the scan sooner there than 1 MiB
reads, which alone take 0.044 s."""
PER_RECORD = 512
"""Bytes held per record besides its signature: its byte range, shingle count, id, band keys
and the sorting of them while the buckets are built, cluster and keep flag."""
PASSES_WORKING = 256 << 20
"""Bytes held at once besides the records' share, however large the file: the groups of
documents hashed, parsed and read ahead in the first pass, one verification block's text and
shingle sets, the output pieces in flight; each is bounded in rows and in bytes."""
PASSES_FACTOR = 2
"""Bytes held at once per byte of a file too small to fill ``PASSES_WORKING``."""
FIRST_PASS_ROWS = 4096
"""Rows per piece of the first pass past its first block, where the compiled reader reads it."""
FIRST_PASS_BYTES = 16 << 20
"""And at most about this many bytes of lines per piece."""
REREAD_BLOCK_SIZE = 256 << 10
"""Bytes per block when the file is read again (the first pass reads as the whole-file reader
does, whose first block decides the columns' types): pyarrow reads some 30 blocks ahead, and
parses 256 KiB blocks as fast as 1 MiB ones."""


def takes(paths: list[Path]) -> bool:
    """Whether ``paths`` are one uncompressed JSON Lines file, the input :class:`JsonlPasses` reads
    (not a ``.json`` file holding a JSON array: its records are not its lines)."""
    if len(paths) != 1:
        return False
    fmt = detect_format(paths[0])
    if fmt.family != "jsonl" or fmt.gzip:
        return False
    try:
        return array_layout(paths[0], fmt) is None
    except InputError:
        return False  # not records at all: the whole-file reader reports it


def least_memory_in_passes(path: Path) -> int:
    """A low guess at :meth:`JsonlPasses.memory_estimate` from the file's size and its first
    lines alone (half the records they suggest, at ``PER_RECORD`` bytes each), before the
    whole file is read for its lines: a file it puts over the limit is not worth that read."""
    size = path.stat().st_size
    sample = head(lambda: open(path, "rb"))  # noqa: SIM115 (closed by head)
    guess = size * sample.count(b"\n") // max(len(sample), 1)
    return IN_MEMORY_BASE + _working(size) + PER_RECORD * guess // 2


def _working(size: int) -> int:
    return min(PASSES_WORKING, PASSES_FACTOR * size)


def record_spans(path: Path, *, check_utf8: bool = False) -> np.ndarray:
    """``[start, end)`` byte offsets of each non-empty line, one row per line.

    Raises :class:`WholeReadNeededError` unless every non-empty line starts with ``{`` (a blank
    line of spaces, a line of anything else, or a byte-order mark need the whole-file reader),
    and, with ``check_utf8``, unless the whole file is valid UTF-8.
    """
    buf = np.empty(SCAN_BYTES, dtype=np.uint8)
    is_newline = np.empty(SCAN_BYTES, dtype=np.bool_)
    newlines: list[np.ndarray] = []
    firsts: list[np.ndarray] = []  # the first byte of each line, in order
    base = 0
    at_line_start = True
    unchecked = b""  # with check_utf8: the bytes after the last newline, checked with their line
    with open(path, "rb", buffering=0) as fh:
        while size := fh.readinto(buf.data):
            view = buf[:size]
            found = np.flatnonzero(np.equal(view, 0x0A, out=is_newline[:size]))
            starts = found + 1
            if at_line_start:
                firsts.append(view[:1].copy())
            firsts.append(view[starts[starts < size]])
            newlines.append(found + base)
            at_line_start = bool(view[size - 1] == 0x0A)
            base += size
            if check_utf8:  # a newline never falls inside a character: the lines are checked whole
                if found.size == 0:
                    unchecked += view.tobytes()
                    continue
                _check_utf8(unchecked + view[: found[0]].tobytes())
                _check_utf8(view[found[0] : found[-1]])
                unchecked = view[found[-1] + 1 :].tobytes()
    if check_utf8:
        _check_utf8(unchecked)
    ends = np.concatenate([*newlines, np.array([base], dtype=np.int64)]).astype(np.int64, copy=False)
    starts = np.concatenate(([0], ends[:-1] + 1))
    first_bytes = np.concatenate(firsts) if firsts else np.zeros(0, np.uint8)
    filled = ends > starts
    if not np.all(first_bytes[filled[: first_bytes.size]] == 0x7B):
        raise WholeReadNeededError("a line does not start with '{'")
    spans: np.ndarray = np.stack((starts[filled], ends[filled]), axis=1)
    return spans


def _check_utf8(data: Any) -> None:
    """Raise :class:`WholeReadNeededError` unless ``data`` (bytes-like) is valid UTF-8 (Arrow's check)."""
    chunk = pa.py_buffer(data)
    offsets = pa.py_buffer(np.array([0, chunk.size], dtype=np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, chunk).validate(full=True)
    except pa.ArrowInvalid as exc:
        raise WholeReadNeededError("bad UTF-8") from exc


class JsonlPasses:
    """A JSON Lines file's rows as :func:`~neardup.io.read_corpus` reads them, read again as
    often as asked, a batch at a time. ``sources``, ``skipped``, ``family``, ``text_column``
    and ``id_column`` are what :class:`~neardup.io.Corpus` has; ``rows`` counts the records,
    ``schema`` is the yielded tables' schema; ``ids`` is every row's id after the first pass.

    Without ``all_columns`` (a run whose outputs are the file's own lines, :meth:`write_rows`)
    the passes parse the text and id fields alone: other fields may change type or first appear
    anywhere, as they are never read, and the whole file is checked for bad UTF-8 as its lines
    are found (the whole-file reader would report or skip the record). The yielded tables then
    hold those columns only, and :meth:`tables` is not available.
    """

    def __init__(self, path: Path, options: ReadOptions, *, all_columns: bool = True) -> None:
        self.path = path
        self.options = options
        self.sources = [str(path)]
        self.skipped: list[InputError] = []
        self.family = "jsonl"
        self.text_column = options.text_column
        self.id_column = options.id_column or GENERATED_ID
        self.all_columns = all_columns
        self._stamp = _stamp(path)
        t0 = time.perf_counter()
        self.spans = record_spans(path, check_utf8=not all_columns)
        self.scan_seconds = time.perf_counter() - t0
        self.rows = int(self.spans.shape[0])
        self._longest = int((self.spans[:, 1] - self.spans[:, 0]).max(initial=0))
        if self.rows == 0:
            raise WholeReadNeededError("no records")
        self._read_schema: pa.Schema | None = None
        self._cast = False
        self.schema: pa.Schema | None = None
        self.ids: pa.Array | None = None
        self.null_texts = 0
        """Rows whose text is null (as :attr:`Corpus.null_texts <neardup.io.Corpus.null_texts>`),
        after the first pass."""

    def memory_estimate(self, num_perm: int) -> int:
        """Estimated peak memory of deduplicating this file in passes with ``num_perm``
        permutations: the process, each record's signature and the few values held per
        record, and ``PASSES_WORKING`` (less for a small file) for what the stages hold at once."""
        return IN_MEMORY_BASE + self.rows * (4 * num_perm + PER_RECORD) + _working(self._stamp[0])

    def _open(self, threads: bool) -> Any:
        """pyarrow's block-wise reader once the first pass has fixed every column's type: with
        those types and smaller blocks (``REREAD_BLOCK_SIZE``, or the longest line), parsed on
        Arrow's threads or, without ``threads``, on the reading thread alone."""
        if self._read_schema is None:
            raise RuntimeError("call first_pass() first")
        others = "infer" if self.all_columns else "ignore"
        parse = pj.ParseOptions(explicit_schema=self._read_schema, unexpected_field_behavior=others)
        read = pj.ReadOptions(block_size=max(REREAD_BLOCK_SIZE, self._longest + 2), use_threads=threads)
        return pj.open_json(pa.input_stream(str(self.path)), read_options=read, parse_options=parse)

    def _first_reader(self) -> Any:
        """The reader of :func:`~neardup.io.jsonl.open_blocks`, its schema checked."""
        reader = open_blocks(lambda: pa.input_stream(str(self.path)))
        try:
            self._cast = check_columns(reader.schema, str(self.path), self.options)
        except (MissingColumnError, InputError) as exc:
            raise WholeReadNeededError(str(exc)) from exc
        if not pa.types.is_string(reader.schema.field(self.text_column).type) and not self._cast:
            raise WholeReadNeededError("the text column is not read as strings")
        read = reader.schema
        if not self.all_columns:
            read = pa.schema([f for f in read if f.name in (self.options.id_column, self.text_column)])
        self._read_schema = read
        return reader

    def first_pass(self, piece_rows: int = FIRST_PASS_ROWS) -> Iterator[pa.Table]:
        """The rows in order, a block at a time; checks each block as the whole-file reader checks
        the file, and the ids once all are read (raising :class:`WholeReadNeededError` where it would
        take its slow path or report a record). Past the first block, a run whose outputs are the
        file's lines reads text and ids with :func:`~neardup.io.json_records.record_fields` where
        it can, in pieces that end at multiples of ``piece_rows`` rows."""
        reader = self._first_reader()
        first = read_or_fall_back(reader.read_next_batch)
        del reader  # and its blocks read ahead: the first has fixed the types, smaller ones follow
        if first is not None and not self.all_columns:
            first = first.select([f.name for f in self._read_schema or []])
        ids: list[pa.Array] = []
        done = 0
        self.null_texts = 0
        rest: Iterator[pa.RecordBatch | pa.Table] = iter(())
        if first is not None:
            compiled = self._compiled_id_type()
            if compiled is not None:
                rest = self._compiled_tables(first.num_rows, piece_rows, compiled)
            else:
                rest = self._batches(skip=first.num_rows)
        for batch in itertools.chain([first] if first is not None else [], rest):
            if isinstance(batch, pa.Table):
                table = batch
            else:
                table = pa.Table.from_batches([batch], schema=self._read_schema)
            if self.all_columns:  # else the file's UTF-8 is checked, and no line is `null`
                _check(table)
            if done + table.num_rows > self.rows:
                raise WholeReadNeededError("more records than lines")
            shaped = self._shaped(table, done)
            self.schema = shaped.schema
            ids.extend(shaped.column(self.id_column).chunks)
            self.null_texts += null_texts(shaped, self.text_column)
            done += table.num_rows
            yield shaped
        if done != self.rows:
            raise WholeReadNeededError("fewer records than lines")
        self.ids = pa.concat_arrays(ids)
        if self.ids.null_count or pc.count_distinct(self.ids).as_py() != len(self.ids):
            raise WholeReadNeededError("empty or repeated ids")

    def _compiled_id_type(self) -> pa.DataType | None:
        """The id column's type where :meth:`_compiled_tables` reads the file (``pa.null()`` for
        generated ids), or None: only the text and id are read, text as strings, ids as strings
        or int64, and the reader is in numba's cache."""
        schema = self._read_schema
        if self.all_columns or self._cast or schema is None or not first_pass_reader_cached():
            return None
        if not pa.types.is_string(schema.field(self.text_column).type):
            return None
        if self.options.id_column is None:
            return pa.null()
        kind = schema.field(self.options.id_column).type
        return kind if kind in (pa.string(), pa.int64()) else None

    def _compiled_tables(self, skip: int, piece_rows: int, id_type: pa.DataType) -> Iterator[pa.Table]:
        """The rows from ``skip`` on as the first block's types read them, in pieces ending at
        multiples of ``piece_rows`` rows and holding at most ``FIRST_PASS_BYTES`` of lines (or
        one line): each piece's text and ids from
        :func:`~neardup.io.json_records.record_fields`, or from pyarrow's parse of its lines
        where that does not answer for them."""
        schema = self._read_schema
        if schema is None:
            raise RuntimeError("call first_pass() first")
        id_key = self.options.id_column
        piece_rows = max(1, piece_rows)
        with open(self.path, "rb", buffering=0) as fh:
            lo = skip
            while lo < self.rows:
                hi = min(self.rows, (lo // piece_rows + 1) * piece_rows)
                base = int(self.spans[lo, 0])
                too_far = base + FIRST_PASS_BYTES
                hi = max(lo + 1, min(hi, int(np.searchsorted(self.spans[lo:hi, 1], too_far, "right")) + lo))
                data = pooled_bytes(int(self.spans[hi - 1, 1]) - base)
                if not read_exactly(fh.fileno(), data, base):
                    raise self._changed()
                starts = self.spans[lo:hi, 0] - base
                ends = self.spans[lo:hi, 1] - base
                found = record_fields(
                    data, starts, ends, self.text_column, id_key, id_type if id_key else None
                )
                if found is None:
                    piece = self._parsed_piece(data, hi - lo)
                else:
                    columns = {self.text_column: found.text}
                    if id_key is not None and found.ids is not None:
                        columns[id_key] = found.ids
                    piece = pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)
                del data, found  # the lines are not held while the piece is hashed
                yield piece
                lo = hi

    def _parsed_piece(self, data: np.ndarray, rows: int) -> pa.Table:
        """The ``rows`` records of the lines ``data`` parsed by pyarrow in the first block's types
        (its error, or a count other than ``rows``, raises :class:`WholeReadNeededError`)."""
        table: pa.Table = read_or_fall_back(lambda: self._parse_lines(data, self._read_schema))
        if table.schema != self._read_schema:
            raise WholeReadNeededError("a field first seen after the first block")
        if table.num_rows != rows:
            raise WholeReadNeededError(
                "more records than lines" if table.num_rows > rows else "fewer records than lines"
            )
        return table

    def tables(self) -> Iterator[pa.Table]:
        """The rows in order again, as the first pass yielded them, parsed on the reading thread
        alone: the outputs' formatting and writing, beside it, keep the cores busy, and Arrow's
        parsing threads among them made the last pass slower."""
        if not self.all_columns:
            raise RuntimeError("tables() needs all_columns")
        self._unchanged()
        done = 0
        try:
            for batch in self._batches(threads=False):
                yield self._shaped(pa.Table.from_batches([batch], schema=self._read_schema), done)
                done += batch.num_rows
        except WholeReadNeededError as exc:
            raise self._changed() from exc
        if done != self.rows:
            raise self._changed()

    def _batches(self, skip: int = 0, threads: bool = True) -> Iterator[pa.RecordBatch]:
        """The file's record batches in the types the first block fixed, read in small blocks
        (parsed on Arrow's threads, or not), from row ``skip`` on; raises
        :class:`WholeReadNeededError` where a block does not parse in those types or brings a
        new field."""
        reader = read_or_fall_back(lambda: self._open(threads))
        while (batch := read_or_fall_back(reader.read_next_batch)) is not None:
            if batch.schema != self._read_schema:
                raise WholeReadNeededError("a field first seen after the first block")
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            yield batch.slice(skip) if skip else batch
            skip = 0

    def texts(self, rows: np.ndarray) -> pa.Array:
        """The text (strings, null where a record has none) of records ``rows``, in that order:
        their lines read by byte range and parsed by pyarrow for the text field alone."""
        data = self._lines(rows)
        if data is None:
            return pa.array([], pa.string())
        return self._parsed(data, int(rows.size))

    def text_batch(self, rows: np.ndarray) -> TextBatch:
        """:meth:`texts` as a batch (a record without text is empty): the text field decoded from
        the lines by :func:`~neardup.io.json_fields.string_field` where it reads every line, by
        pyarrow otherwise (and where the first pass cast the text column)."""
        data = self._lines(rows)
        if data is None:
            return TextBatch(np.zeros(1, np.uint8), np.zeros(1, np.int64))
        if not self._cast and pa.types.is_string(self._field().type):
            lengths = self.spans[rows, 1] - self.spans[rows, 0]
            starts = np.zeros(lengths.size, dtype=np.int64)
            np.cumsum(lengths[:-1] + 1, out=starts[1:])  # each line is followed by a newline
            found = string_field(data, starts, starts + lengths, self.text_column)
            if found is not None:
                return TextBatch(*found)
        return arrow_to_batch(self._parsed(data, int(rows.size)))

    def _field(self) -> pa.Field:
        if self._read_schema is None:
            raise RuntimeError("call first_pass() before reading text")
        return self._read_schema.field(self.text_column)

    def _lines(self, rows: np.ndarray) -> np.ndarray | None:
        """The lines of records ``rows``, each followed by a newline (None for no rows)."""
        self._unchanged()
        self._field()
        pa.default_memory_pool().release_unused()  # what the last call returned, since let go
        spans = self.spans[np.asarray(rows, dtype=np.int64)]
        if spans.shape[0] == 0:
            return None
        with open(self.path, "rb", buffering=0) as fh:
            data = read_ranges(fh.fileno(), spans)
        if data is None:
            raise self._changed()
        return data

    def _parse_lines(self, data: np.ndarray, schema: pa.Schema | None) -> pa.Table:
        """The lines ``data`` parsed by pyarrow in blocks (in parallel) as ``schema`` says, other
        fields ignored."""
        parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        read = pj.ReadOptions(block_size=max(STREAM_BLOCK_SIZE, self._longest + 2))
        source = pa.BufferReader(pa.py_buffer(data))
        table: pa.Table = pj.read_json(source, read_options=read, parse_options=parse)
        return table

    def _parsed(self, data: np.ndarray, rows: int) -> pa.Array:
        """The text field of the ``rows`` lines ``data``, parsed by pyarrow."""
        try:
            table = self._parse_lines(data, pa.schema([self._field()]))
        except pa.ArrowInvalid as exc:
            raise self._changed() from exc
        if table.num_rows != rows:
            raise self._changed()
        text: pa.Array = table.column(self.text_column).combine_chunks().cast(pa.string())
        return text

    def write_rows(
        self,
        target: OutputDir,
        clusters: Clusters,
        progress: Callable[[str, int, int], None] | None = None,
        *,
        opened: Callable[[], object] | None = None,
    ) -> None:
        """Write ``annotated``, ``deduped`` and ``duplicates`` as JSON Lines into ``target`` from the
        file's own lines (:class:`~neardup.io.jsonl_lines.LineWriter`, which calls ``opened()``
        once their files are open), after the first pass."""
        self._unchanged()
        if self.ids is None:
            raise RuntimeError("call first_pass() before write_rows()")
        writer = LineWriter(
            self.path, self.spans, self.ids, clusters, self.id_column, self.options.id_column is None
        )
        writer.write(target, progress, opened=opened)
        self._unchanged()

    def _shaped(self, table: pa.Table, first_row: int) -> pa.Table:
        """A block as a slice of the whole-file table: text as strings, ids generated if asked."""
        if self._cast:
            table = text_as_string(table, self.text_column)
        if self.options.id_column is None:
            ids = pa.array(np.arange(first_row, first_row + table.num_rows, dtype=np.int64))
            table = table.add_column(0, GENERATED_ID, ids)
        return table

    def _unchanged(self) -> None:
        if _stamp(self.path) != self._stamp:
            raise self._changed()

    def _changed(self) -> InputError:
        return InputError("the file changed while it was being read; run again", path=self.path)


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _check(table: pa.Table) -> None:
    """The whole-file reader's checks of its table, on one block (bad UTF-8, a ``null`` line)."""
    reason = slow_path_reason(table)
    if reason is not None:
        raise WholeReadNeededError(reason)
