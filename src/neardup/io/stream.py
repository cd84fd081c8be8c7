"""The inputs as a stream of Arrow tables, for corpora larger than memory.

:func:`scan` reads the inputs as :func:`~neardup.io.read_corpus` does (same checks,
same skipped records, same errors, in the same order) but holds one group of files at
a time. A Parquet file is only looked at (schema, row count) and is later read where it
lies, a batch at a time. Every other group (a JSON Lines or CSV file, a run of text or
HTML files) is read with the same reader as ``read_corpus`` and copied into a cache
directory as an Arrow IPC file of bounded batches. :meth:`CorpusStream.tables` then
yields the rows of the table ``read_corpus`` would have built (same columns, types,
values and order) a batch at a time, as often as asked.

What is held: per document the id (when an id column is given) and a keep flag; per
file a few facts. A JSON Lines or CSV file is copied a block at a time
(:func:`neardup.io.jsonl.read_blocks`, :func:`neardup.io.csv.read_blocks`) when it reads
the same that way: every record good, each column's type fixed by the first block. Any
other such file is parsed whole, because the types of its columns then come from pyarrow's
inference over the whole file, which a block-by-block reader cannot reproduce; the largest
such file bounds the scan's memory (about two to four times its size). Runs of text and
HTML files are read ``batch_bytes`` at a time.

Each cached part records its files' sizes and modification times and the read options;
a later scan into the same directory (resuming an interrupted run) reuses it when they
are unchanged, and reads the files again otherwise.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from neardup.errors import InputError, OutputError
from neardup.io._common import (
    Format,
    Part,
    Problems,
    WholeReadNeededError,
    is_text_type,
    json_text,
    parquet_module,
)
from neardup.io.csv import _record_lines as _csv_lines
from neardup.io.csv import read_blocks as csv_blocks
from neardup.io.inputs import (
    GENERATED_ID,
    SOURCE_COLUMN,
    ReadOptions,
    _common_type,
    bad_ids,
    check_columns,
    detect_format,
    expand_inputs,
    groups,
    null_texts,
    read_part,
    text_as_string,
)
from neardup.io.jsonl import _record_lines as _jsonl_lines
from neardup.io.jsonl import read_blocks as jsonl_blocks

CACHE_VERSION = 1
_BLOCK_READERS = {"jsonl": jsonl_blocks, "csv": csv_blocks}
"""The readers that give a file's table a block at a time, where it reads the same that way."""
_PARQUET_BUFFER = 1 << 20

Progress = Callable[[str, int, int], None]


def file_stamps(paths: Sequence[Path]) -> list[list[Any]]:
    """``[path, size, mtime_ns]`` of each file: what tells a changed input from the same one."""
    out: list[list[Any]] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc
        out.append([str(path), st.st_size, st.st_mtime_ns])
    return out


def read_options_facts(options: ReadOptions) -> dict[str, Any]:
    """The read options that decide which rows a scan keeps, as JSON."""
    return {
        "text_column": options.text_column,
        "id_column": options.id_column,
        "lines": options.lines,
        "on_error": options.on_error,
    }


@dataclass
class _Piece:
    """One part of the input: a Parquet file read in place, or a cached group (or slice of a run)."""

    group: int
    path: str
    data: Path
    cached: bool
    rows: int
    schema: pa.Schema
    """The schema of its tables once the text column is strings."""
    text_cast: bool = False
    """A Parquet file whose text column must be cast to strings as it is read."""
    row_bytes: int = 1
    locate: dict[str, Any] = field(default_factory=dict)
    """How to find a row's line or file when its id is bad (see :meth:`CorpusStream._locator`)."""
    null_texts: int | None = None
    """Its rows whose text is null, where the reading or the file's statistics told (else None)."""


class _Located(Part):
    """A part's provenance without its rows; per-row file names are read when first asked for."""

    def __init__(self, rows: int, path: str, *, load_paths: Callable[[], list[str]] | None = None) -> None:
        super().__init__(pa.table({"n": pa.nulls(rows)}).select([]), path)
        self._load_paths = load_paths

    def where(self, row: int) -> tuple[str, int | None, int | None]:
        if self._load_paths is not None:
            self.row_paths, self._load_paths = self._load_paths(), None
        return super().where(row)


def _error_facts(error: InputError) -> dict[str, Any]:
    return {"reason": error.reason, "path": error.path, "line": error.line, "record": error.record}


def _error_from(facts: dict[str, Any]) -> InputError:
    return InputError(facts["reason"], path=facts["path"], line=facts["line"], record=facts["record"])


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _rows_per_batch(row_bytes: int, batch_bytes: int) -> int:
    return max(1, min(1 << 20, batch_bytes // max(1, row_bytes)))


class CorpusStream:
    """The combined input table of :func:`scan`, read a batch at a time.

    ``sources``, ``skipped``, ``family``, ``text_column`` and ``id_column`` are
    what :class:`~neardup.io.Corpus` has; ``rows`` is the number of rows,
    ``schema`` the schema of the tables :meth:`tables` yields, ``reused`` how
    many cached parts an earlier scan left that this one took as they were,
    ``null_texts`` how many rows have a null text (once :func:`scan` is done).
    """

    def __init__(
        self,
        pieces: list[_Piece],
        *,
        options: ReadOptions,
        sources: list[str],
        family: str,
        batch_bytes: int,
        reused: int,
    ) -> None:
        self._pieces = [p for p in pieces if len(p.schema)]
        self._options = options
        self._batch_bytes = batch_bytes
        self.text_column = options.text_column
        self.id_column = options.id_column or GENERATED_ID
        self.sources = sources
        self.family = family
        self.reused = reused
        self.skipped: list[InputError] = []
        self.null_texts = 0
        self._keep: np.ndarray | None = None
        self._ids: pa.Array | None = None
        self._json: set[tuple[int, str]] = set()
        self._aligned = len({p.group for p in self._pieces}) > 1
        found: dict[str, list[pa.DataType]] = {}
        for piece in self._pieces:
            for f in piece.schema:
                found.setdefault(f.name, []).append(f.type)
        self._target = {name: _common_type(types) for name, types in found.items()}
        if self._aligned:
            self._settle_casts()
            base = pa.schema([pa.field(name, dtype) for name, dtype in self._target.items()])
        else:
            base = self._pieces[0].schema if self._pieces else pa.schema([])
        self._base = base
        self._sources = (
            len(sources) > 1
            and SOURCE_COLUMN not in self._target
            and any(p.locate.get("kind") != "rows" for p in self._pieces)
        )
        if self._sources:  # as read_corpus: each row's file, last
            base = base.append(pa.field(SOURCE_COLUMN, pa.string()))
        self.schema = (
            base.insert(0, pa.field(GENERATED_ID, pa.int64())) if options.id_column is None else base
        )
        self.rows = sum(p.rows for p in self._pieces)

    # -- the column types of the combined table --------------------------------------------------

    def _settle_casts(self) -> None:
        """Final column types, and the columns of each group that become JSON text.

        As in ``read_corpus``: a column's type is the common type of its files'
        types; when one file's values cannot be cast to it, the column becomes
        text, and a file whose values cannot be cast to text gets them as JSON.
        Only the columns whose type differs from the target are read.
        """
        tried: dict[tuple[int, str, str], bool] = {}
        while True:
            widened = False
            for k, piece in enumerate(self._pieces):
                for name in list(self._target):
                    dtype = self._target[name]
                    if name not in piece.schema.names or piece.schema.field(name).type == dtype:
                        continue
                    key = (k, name, str(dtype))
                    if key not in tried:
                        tried[key] = self._casts(piece, name, dtype)
                    if tried[key]:
                        continue
                    if not is_text_type(dtype):
                        self._target[name] = pa.string()
                        widened = True
                        break
                    self._json.add((piece.group, name))
                if widened:
                    break
            if not widened:
                return

    def _casts(self, piece: _Piece, name: str, dtype: pa.DataType) -> bool:
        for table in self._read(piece, [name]):
            try:
                table.column(name).cast(dtype)
            except (pa.ArrowException, NotImplementedError):
                return False
        return True

    # -- ids -------------------------------------------------------------------------------------

    def _check_ids(self, problems: Problems) -> None:
        """Report empty and repeated ids as ``read_corpus`` does; keep only the good rows."""
        if self._options.id_column is None or self.rows == 0:
            return
        name = self._options.id_column
        chunks = [c for t in self._tables([name], filtered=False) for c in t.column(name).chunks]
        ids = pa.chunked_array(chunks, self._base.field(name).type).combine_chunks()
        bad = bad_ids(ids, name, [self._locator(p) for p in self._pieces], problems)
        if bad.size:
            keep = np.ones(len(ids), dtype=bool)
            keep[bad] = False
            self._keep = keep
            ids = ids.filter(pa.array(keep))
            self.rows -= int(bad.size)
        self._ids = ids

    def _count_null_texts(self) -> int:
        """Rows with a null text: the pieces' counts, unless rows were dropped for their ids or a
        piece has none (a Parquet file without statistics); then the text column is read."""
        if self._keep is None and all(p.null_texts is not None for p in self._pieces):
            return sum(int(p.null_texts or 0) for p in self._pieces)
        return sum(null_texts(table, self.text_column) for table in self.texts())

    def _locator(self, piece: _Piece) -> Part:
        how = piece.locate.get("kind")
        if how == "rows":
            return _Located(piece.rows, piece.path, load_paths=lambda: self._column(piece, "path"))
        part = _Located(piece.rows, piece.path)
        if how == "finder":
            fmt = detect_format(piece.path)
            finder = _jsonl_lines if fmt.family == "jsonl" else _csv_lines
            part.line_finder = lambda: finder(Path(piece.path), fmt)
        for kind in ("lines", "records"):
            if piece.locate.get(kind):
                setattr(part, kind, np.load(piece.data.with_suffix(f".{kind}.npy")))
        return part

    def _column(self, piece: _Piece, name: str) -> list[str]:
        values: list[str] = []
        for table in self._read(piece, [name]):
            values.extend(table.column(name).to_pylist())
        return values

    def ids(self) -> pa.Array:
        """The id of every row: the id column's values, or the generated ``row_id`` 0, 1, ..."""
        if self._ids is not None:
            return self._ids
        return pa.array(np.arange(self.rows, dtype=np.int64))

    # -- reading ---------------------------------------------------------------------------------

    def tables(self) -> Iterator[pa.Table]:
        """Every row with every column (``row_id`` first when generated), a batch at a time."""
        return self._tables(None, filtered=True)

    def texts(self) -> Iterator[pa.Table]:
        """The text column alone, a batch at a time, the same rows as :meth:`tables`."""
        return self._tables([self.text_column], filtered=True)

    def _tables(self, columns: list[str] | None, *, filtered: bool) -> Iterator[pa.Table]:
        names = list(self._target) if columns is None else columns
        start = 0  # rows before the id filter
        out = 0  # rows after it
        for piece in self._pieces:
            want = [n for n in names if n in piece.schema.names]
            for table in self._read(piece, want if columns is not None else None):
                n = table.num_rows
                if self._aligned:
                    table = self._align(table, piece.group, names)
                elif columns is not None:
                    table = table.select(names)
                else:
                    table = table.cast(self._base)
                if filtered and self._keep is not None:
                    table = table.filter(pa.array(self._keep[start : start + n]))
                start += n
                if columns is None and self._sources:
                    table = table.append_column(SOURCE_COLUMN, self._source_files(piece, table))
                if columns is None and self._options.id_column is None:
                    ids = pa.array(np.arange(out, out + table.num_rows, dtype=np.int64))
                    table = table.add_column(0, GENERATED_ID, ids)
                out += table.num_rows
                yield table

    @staticmethod
    def _source_files(piece: _Piece, table: pa.Table) -> pa.Array | pa.ChunkedArray:
        """Each row's file: a run of one-document files has it in its ``path`` column."""
        if piece.locate.get("kind") == "rows" and "path" in table.column_names:
            return table.column("path").cast(pa.string())
        return pa.repeat(pa.scalar(piece.path, pa.string()), table.num_rows)

    def _align(self, table: pa.Table, group: int, names: list[str]) -> pa.Table:
        """A table of one file with the combined table's columns and types (``_aligned`` in inputs)."""
        columns: list[pa.Array | pa.ChunkedArray] = []
        for name in names:
            dtype = self._target[name]
            if name not in table.column_names:
                columns.append(pa.nulls(table.num_rows, dtype))
                continue
            column = table.column(name)
            if column.type != dtype:
                if (group, name) in self._json:
                    column = json_text(column.to_pylist()).cast(dtype)
                else:
                    column = column.cast(dtype)
            columns.append(column)
        return pa.table(columns, names=names)

    def _read(self, piece: _Piece, columns: list[str] | None) -> Iterator[pa.Table]:
        """A piece's tables as read, the text column as strings."""
        if piece.cached:
            yield from _read_cache(piece, columns)
            return
        text = self.text_column
        try:
            reader = parquet_module().ParquetFile(piece.data, pre_buffer=False, buffer_size=_PARQUET_BUFFER)
            batches = reader.iter_batches(
                batch_size=_rows_per_batch(piece.row_bytes, self._batch_bytes), columns=columns
            )
            for batch in batches:
                table = pa.Table.from_batches([batch])
                if piece.text_cast and text in table.column_names:
                    table = text_as_string(table, text)
                yield table
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"not a readable Parquet file: {exc}", path=piece.path) from exc


def _read_cache(piece: _Piece, columns: list[str] | None) -> Iterator[pa.Table]:
    try:
        with pa.OSFile(str(piece.data)) as fh:
            options = None
            if columns is not None:
                options = ipc.IpcReadOptions(included_fields=[piece.schema.names.index(c) for c in columns])
            reader = ipc.open_file(fh, options=options)
            for i in range(reader.num_record_batches):
                yield pa.Table.from_batches([reader.get_batch(i)])
    except (pa.ArrowException, OSError) as exc:
        raise OutputError(f"cannot read {piece.data} (the work dir's copy of {piece.path}): {exc}") from exc


def _write_cache(table: pa.Table, path: Path, batch_bytes: int) -> None:
    rows = _rows_per_batch(table.nbytes // max(1, table.num_rows), batch_bytes)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=rows)
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _read_errors(blocks: Iterator[pa.Table], path: Path, fmt: Format) -> Iterator[pa.Table]:
    """``blocks``, with an error that reading them raises (a truncated gzip stream, say) named as
    the input's, not mistaken for one of writing the work dir's copy."""
    while True:
        try:
            table = next(blocks)
        except StopIteration:
            return
        except OSError as exc:  # pyarrow's I/O errors among them
            what = "not a readable gzip file" if fmt.gzip else "cannot read"
            raise InputError(f"{what}: {exc}", path=path) from exc
        yield table


def _copied_in_blocks(
    path: Path, fmt: Format, options: ReadOptions, data: Path, batch_bytes: int
) -> tuple[int, pa.Schema, int] | None:
    """Copy a JSON Lines or CSV file into ``data`` a block at a time, as ``read_part`` and
    ``_write_cache`` would have; ``(rows, schema, null texts)``, or ``None`` (and nothing written) for a
    file that must be read whole. A column check that fails on the first block is raised
    once every block has read with the same columns (the whole-file table's), without
    writing anything."""
    blocks = _read_errors(_BLOCK_READERS[fmt.family](path, fmt, text_column=options.text_column), path, fmt)
    tmp = data.with_name(data.name + ".tmp")
    try:
        first = next(blocks)
        error: InputError | None = None
        try:
            cast = check_columns(first.schema, str(path), options)
        except InputError as exc:
            error = exc
        if error is not None:
            for _ in blocks:  # the same columns to the end: the whole-file read's error
                pass
            raise error
        schema = text_as_string(first.slice(0, 0), options.text_column).schema if cast else first.schema
        per_batch = _rows_per_batch(first.nbytes // max(1, first.num_rows), batch_bytes)
        rows = nulls = 0
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, schema) as writer:
            for table in itertools.chain([first], blocks):
                if cast:
                    table = text_as_string(table, options.text_column)
                writer.write_table(table, max_chunksize=per_batch)
                rows += table.num_rows
                nulls += null_texts(table, options.text_column)
        os.replace(tmp, data)
    except WholeReadNeededError:
        tmp.unlink(missing_ok=True)
        return None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {data}: {exc.strerror or exc}") from exc
    return rows, schema, nulls


def _runs(paths: list[Path], fmt: Format, options: ReadOptions, batch_bytes: int) -> list[list[Path]]:
    """A group's files in slices that each hold about ``batch_bytes`` (runs of one-document files)."""
    if not (fmt.family == "html" or (fmt.family == "text" and not options.lines)):
        return [paths]
    out: list[list[Path]] = [[]]
    size = 0
    for path in paths:
        try:
            bytes_ = path.stat().st_size
        except OSError:
            bytes_ = 0  # the reader reports the file
        if out[-1] and size + bytes_ > batch_bytes:
            out.append([])
            size = 0
        out[-1].append(path)
        size += bytes_
    return out


def scan(
    inputs: Sequence[str | Path],
    options: ReadOptions,
    *,
    cache_dir: Path,
    batch_bytes: int,
    progress: Progress | None = None,
) -> CorpusStream:
    """Read the inputs once, checking them as ``read_corpus`` does; the rows as a stream.

    ``cache_dir`` receives the cached parts (and keeps those of an earlier scan that
    still match their files); ``progress("read", files done, files)`` reports.
    Raises what ``read_corpus`` raises, for the same input.
    """
    if not inputs:
        raise InputError("no inputs given")
    paths = expand_inputs(inputs)
    problems = Problems(options.on_error)
    facts = read_options_facts(options)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot use {cache_dir} as a work dir: {exc.strerror or exc}") from exc
    report = progress or (lambda stage, done, total: None)
    pieces: list[_Piece] = []
    reused = 0
    done = 0
    report("read", 0, len(paths))
    for g, (group, fmt) in enumerate(groups(paths, options)):
        for files in _runs(group, fmt, options, batch_bytes):
            if fmt.family == "parquet":
                pieces.append(_parquet_piece(g, files[0], options))
            else:
                name = f"part-{len(pieces):05d}"
                piece, was_cached = _cached_piece(
                    g, files, fmt, options, problems, cache_dir / name, facts, batch_bytes
                )
                pieces.append(piece)
                reused += was_cached
            done += len(files)
            report("read", done, len(paths))
    stream = CorpusStream(
        pieces,
        options=options,
        sources=[str(p) for p in paths],
        family=detect_format(paths[0]).family,
        batch_bytes=batch_bytes,
        reused=reused,
    )
    stream._check_ids(problems)
    if stream.rows == 0:
        raise InputError("no records to deduplicate", path=", ".join(os.fspath(i) for i in inputs))
    stream.skipped = problems.errors
    stream.null_texts = stream._count_null_texts()
    return stream


def _parquet_piece(group: int, path: Path, options: ReadOptions) -> _Piece:
    try:
        with parquet_module().ParquetFile(path) as reader:
            schema = reader.schema_arrow
            meta = reader.metadata
            rows = meta.num_rows
            size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            nulls = _parquet_nulls(reader, options.text_column)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from exc
    cast = False
    if not (rows == 0 and len(schema) == 0):
        cast = check_columns(schema, str(path), options)
    if cast:
        schema = text_as_string(schema.empty_table(), options.text_column).schema
    return _Piece(
        group,
        str(path),
        path,
        cached=False,
        rows=rows,
        schema=schema,
        text_cast=cast,
        row_bytes=size // max(1, rows),
        null_texts=nulls,
    )


def _parquet_nulls(reader: Any, text_column: str) -> int | None:
    """The text column's nulls from a Parquet file's row-group statistics; None where a row group
    has none (or the column is not a plain one)."""
    names = reader.schema_arrow.names
    meta = reader.metadata
    if text_column not in names:
        return None
    paths = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if paths.count(text_column) != 1:
        return None
    at = paths.index(text_column)
    total = 0
    for k in range(meta.num_row_groups):
        stats = meta.row_group(k).column(at).statistics
        if stats is None or not stats.has_null_count:
            return None
        total += int(stats.null_count)
    return total


def _cached_piece(
    group: int,
    files: list[Path],
    fmt: Format,
    options: ReadOptions,
    problems: Problems,
    base: Path,
    facts: dict[str, Any],
    batch_bytes: int,
) -> tuple[_Piece, bool]:
    """A group read with ``read_corpus``'s reader into ``base.arrow`` (or taken from there)."""
    data = base.with_suffix(".arrow")
    meta_path = base.with_suffix(".json")
    stamps = file_stamps(files)
    want = {"version": CACHE_VERSION, "options": facts, "files": stamps}
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict) and all(meta.get(k) == v for k, v in want.items()) and data.exists():
        try:
            with pa.OSFile(str(data)) as fh:
                schema = ipc.open_file(fh).schema
        except (pa.ArrowException, OSError):
            schema = None
        if schema is not None:
            for facts_ in meta["skipped"]:
                problems.add(_error_from(facts_))
            piece = _Piece(
                group,
                str(files[0]),
                data,
                True,
                int(meta["rows"]),
                schema,
                locate=meta["locate"],
                null_texts=meta.get("null_texts"),  # None in a cache of an earlier version
            )
            return piece, True
    copied = None
    if fmt.family in _BLOCK_READERS:
        copied = _copied_in_blocks(files[0], fmt, options, data, batch_bytes)
    if copied is not None:
        rows, schema, nulls = copied
        facts_ = {**want, "rows": rows, "skipped": [], "locate": {"kind": "finder"}, "null_texts": nulls}
        _write_json(meta_path, facts_)
        piece = _Piece(
            group, str(files[0]), data, True, rows, schema, locate={"kind": "finder"}, null_texts=nulls
        )
        return piece, False
    before = len(problems.errors)
    part = read_part(files, fmt, options, problems)
    table = part.table
    if not (table.num_rows == 0 and table.num_columns == 0) and check_columns(
        table.schema, part.path, options
    ):
        table = text_as_string(table, options.text_column)
    locate: dict[str, Any] = {}
    if part.row_paths is not None:
        locate["kind"] = "rows"
    elif part.lines is not None or part.records is not None:
        for kind in ("lines", "records"):
            values = getattr(part, kind)
            if values is not None:
                np.save(base.with_suffix(f".{kind}.npy"), values)
                locate[kind] = True
    elif part.line_finder is not None:
        locate["kind"] = "finder"
    _write_cache(table, data, batch_bytes)
    skipped = [_error_facts(e) for e in problems.errors[before:]]
    nulls = null_texts(table, options.text_column)
    facts_ = {**want, "rows": table.num_rows, "skipped": skipped, "locate": locate, "null_texts": nulls}
    _write_json(meta_path, facts_)
    piece = _Piece(
        group, part.path, data, True, table.num_rows, table.schema, locate=locate, null_texts=nulls
    )
    return piece, False
