"""Writing results: tables as CSV, JSON Lines or Parquet, into an output directory whose files
are one run's (a commit record decides which: :mod:`neardup.io.commit`)."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from neardup.errors import ConfigError, OutputError
from neardup.io._common import parquet_module
from neardup.io._jsontext import json_default, json_values, string_data, text
from neardup.io.commit import CommitRecord, commit, digest, finish_commit, pending
from neardup.io.page_cache import WriteBehind
from neardup.io.staging import hold, make_staging, remove_dead_staging

OUTPUT_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
OUTPUT_TABLES: tuple[str, ...] = (
    "annotated",
    "deduped",
    "duplicates",
    "clusters",
    "candidate_pairs",
    "lsh_buckets",
)
"""The tables a run writes beside ``summary.json``, in the order they are described."""


def output_tables(names: Collection[str] | str | None) -> tuple[str, ...]:
    """The tables ``names`` choose (a collection, or one comma-separated string), in
    :data:`OUTPUT_TABLES` order; ``None`` is all of them. An unknown name is a ConfigError.

    >>> output_tables("deduped, duplicates")
    ('deduped', 'duplicates')
    """
    if names is None:
        return OUTPUT_TABLES
    chosen = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    unknown = [n for n in chosen if n not in OUTPUT_TABLES]
    if unknown:
        raise ConfigError(f"unknown output {unknown[0]!r}; choose from {', '.join(OUTPUT_TABLES)}")
    if not chosen:
        raise ConfigError(f"outputs names no table; choose from {', '.join(OUTPUT_TABLES)}")
    return tuple(n for n in OUTPUT_TABLES if n in chosen)


_DEFAULT_OUTPUT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet", "text": "csv", "html": "csv"}
_BATCH_ROWS = 65_536


def default_output_format(family: str) -> str:
    """The output format for an input family: the same, or CSV for plain text and HTML."""
    try:
        return _DEFAULT_OUTPUT[family]
    except KeyError:
        known = ", ".join(_DEFAULT_OUTPUT)
        raise ConfigError(f"unknown input format {family!r} (known: {known})") from None


def write_table(table: pa.Table, path: Path, fmt: str) -> None:
    """Write ``table`` to ``path`` as ``csv``, ``jsonl`` or ``parquet``.

    In CSV, list and struct values are written as JSON text (``["a","b"]``).
    """
    if fmt not in OUTPUT_FORMATS:
        raise ConfigError(f"unknown output format {fmt!r} (choose from {', '.join(OUTPUT_FORMATS)})")
    try:
        if fmt == "csv":
            pcsv.write_csv(_flat(table), str(path))
        elif fmt == "jsonl":
            _write_jsonl(table, path)
        else:
            parquet_module().write_table(table, str(path))
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def _flat(table: pa.Table) -> pa.Table:
    """Nested columns as compact JSON text, which CSV can hold."""
    for i, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            chunks = [json_values(chunk, compact=True) for chunk in table.column(i).chunks]
            table = table.set_column(i, f.name, pa.chunked_array(chunks, pa.large_string()))
    return table


def _write_jsonl(table: pa.Table, path: Path) -> None:
    """One JSON object per line, assembled by Arrow kernels batch by batch."""
    with open(path, "wb") as fh:
        _append_jsonl(fh, table)


def json_texts(table: pa.Table) -> pa.Table:
    """``table`` with each column as its values' JSON text (``null`` for a null): what the JSON
    Lines writer prints, made once for tables written more than once (see ``TableWriter.write``)."""
    columns = [
        pa.chunked_array([value_texts(chunk) for chunk in column.chunks], pa.large_string())
        for column in table.columns
    ]
    return pa.table(columns, names=table.column_names)


def value_texts(values: pa.Array) -> pa.Array:
    """Each value as JSON text, ``null`` for a null: as a JSON Lines row prints it."""
    return pc.fill_null(json_values(values), text("null"))


def jsonl_bytes(table: pa.Table, formatted: Collection[str] = ()) -> bytes:
    """``table`` as the JSON Lines text :func:`write_table` writes (its ``formatted`` columns hold
    their values' JSON text already: :func:`json_texts`)."""
    sink = io.BytesIO()
    _append_jsonl(sink, table, formatted)
    return sink.getvalue()


def _append_jsonl(fh: IO[bytes], table: pa.Table, formatted: Collection[str] = ()) -> None:
    keys = [json.dumps(name, ensure_ascii=False) + ": " for name in table.column_names]
    done = [name in formatted for name in table.column_names]
    for batch in table.to_batches(max_chunksize=_BATCH_ROWS):
        if not batch.num_columns:
            fh.write(b"{}\n" * batch.num_rows)
            continue
        parts: list[pa.Array | pa.Scalar] = []
        for i, key in enumerate(keys):
            parts.append(text(("{" if i == 0 else ", ") + key))
            column = batch.column(i)
            parts.append(column if done[i] else value_texts(column))
        parts.append(text("}\n"))
        fh.write(string_data(pc.binary_join_element_wise(*parts, text(""))))


class TableWriter:
    """One table written a piece at a time, as :func:`write_table` writes it whole.

    Every piece must have the same schema. The file holds the same rows and
    values as ``write_table`` would give the concatenated pieces; a table of no
    pieces is written from ``schema`` (a CSV header, an empty Parquet file).

    >>> import io, pyarrow as pa, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.csv"
    >>> with TableWriter(path, "csv", pa.schema([("a", pa.int64())])) as w:
    ...     w.write(pa.table({"a": [1]})); w.write(pa.table({"a": [2]}))
    >>> path.read_text().splitlines()
    ['"a"', '1', '2']
    """

    def __init__(self, path: Path, fmt: str, schema: pa.Schema) -> None:
        if fmt not in OUTPUT_FORMATS:
            raise ConfigError(f"unknown output format {fmt!r} (choose from {', '.join(OUTPUT_FORMATS)})")
        self.path = path
        self.fmt = fmt
        self.rows = 0
        self._writer: Any = None
        self._fh: IO[bytes] | None = None
        with self._errors():
            if fmt == "csv":
                self._writer = pcsv.CSVWriter(str(path), _flat(schema.empty_table()).schema)
            elif fmt == "parquet":
                self._writer = parquet_module().ParquetWriter(str(path), schema)
            else:
                self._fh = open(path, "wb")  # noqa: SIM115 (closed in close())
        self._behind = WriteBehind(path)  # the pages written go back as the file grows

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc

    def write(self, table: pa.Table, formatted: Collection[str] = ()) -> None:
        """Append the rows of ``table``; in JSON Lines, its ``formatted`` columns hold their
        values' JSON text already (:func:`json_texts`), which is written as it is."""
        if formatted and self.fmt != "jsonl":
            raise ValueError(f"columns formatted as JSON text cannot be written as {self.fmt}")
        with self._errors():
            if self.fmt == "csv":
                self._writer.write_table(_flat(table))
            elif self.fmt == "parquet":
                self._writer.write_table(table)
            elif self._fh is not None:
                _append_jsonl(self._fh, table, formatted)
        self._behind.wrote()
        self.rows += table.num_rows

    def write_lines(self, data: Any, rows: int) -> None:
        """Append ``rows`` records already written as JSON Lines text (``data``, bytes-like,
        each line ending in a newline); JSON Lines only."""
        if self._fh is None:
            raise ValueError(f"JSON Lines text cannot be written as {self.fmt}")
        with self._errors():
            self._fh.write(data)
        self._behind.wrote()
        self.rows += rows

    def close(self) -> None:
        with self._errors():
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            if self._fh is not None:
                self._fh.close()
                self._fh = None
        self._behind.close()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Discard(TableWriter):
    """The writer of a table not chosen: it counts rows and writes nothing."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.path = path
        self.fmt = fmt
        self.rows = 0

    def write(self, table: pa.Table, formatted: Collection[str] = ()) -> None:
        self.rows += table.num_rows

    def write_lines(self, data: Any, rows: int) -> None:
        self.rows += rows

    def close(self) -> None:
        pass


class OutputDir:
    """An output directory whose files are one run's: all of this one's, or the earlier run's.

    Files are written into a staging folder inside ``path`` (:mod:`neardup.io.staging`). A clean
    exit from the ``with`` block commits them (:mod:`neardup.io.commit`): it writes a commit
    record naming the files to move in (JSON files from :meth:`write_json` last, as completion
    markers) and the files of earlier runs to remove (``<name>.<other format>``, a table's
    folder, the tables not chosen), and from that record on this run's files are the current
    ones; the moves follow, and a run killed among them is finished by whoever opens the folder
    next (the next run's ``OutputDir``, ``neardup report``). An exception before the record
    leaves ``path`` as it was. Opening finishes such a pending commit, then removes the staging
    folders of dead runs.

    >>> import pyarrow as pa, tempfile
    >>> with OutputDir(tempfile.mkdtemp()) as out:
    ...     _ = out.write("annotated", pa.table({"text": ["a"]}), "csv")
    ...     _ = out.write_json("summary.json", {"rows": 1})
    >>> sorted(p.name for p in out.path.iterdir())
    ['annotated.csv', 'summary.json']
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        tables: Collection[str] | None = None,
        *,
        layout: dict[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.tables = output_tables(tables)
        """The tables written; the others are skipped, and their files of earlier runs removed."""
        self.layout = layout
        """With a layout (input file -> relative name, :mod:`neardup.io.layout`), ``deduped`` is a
        folder of one file per input file instead of one file."""
        self._staging: Path | None = None
        self._lock: int | None = None
        self._created: list[Path] = []
        self._tables: set[str] = set()
        self._files: list[str] = []
        self._markers: list[str] = []
        self._writers: list[TableWriter] = []

    @property
    def staging(self) -> Path:
        """The temporary directory the files go to until the block ends."""
        if self._staging is None:
            raise RuntimeError("OutputDir is not open: use it in a with block")
        return self._staging

    def __enter__(self) -> OutputDir:
        if self.path.exists() and not self.path.is_dir():
            raise OutputError(f"{self.path}: exists and is not a directory")
        missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._created = missing
            finish_commit(self.path)  # of a run killed while it moved its files in
            self._staging = make_staging(self.path)
            self._lock = hold(self._staging)
            remove_dead_staging(self.path, keep=self._staging)  # of runs killed before their end
        except OSError as exc:
            self._close()
            raise OutputError(f"{self.path}: cannot create output directory: {exc.strerror or exc}") from exc
        except OutputError:
            self._close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            writers, self._writers = self._writers, []
            for writer in writers:
                try:
                    writer.close()
                except OutputError:
                    if exc_type is None:
                        raise
            if exc_type is None:
                self._commit()
        finally:
            self._close(failed=exc_type is not None)

    def _close(self, *, failed: bool = True) -> None:
        """Remove the staging folder (unless a commit record names it: the next opener finishes
        that commit), release its lock, and with ``failed`` the folders this block created."""
        try:
            if self._staging is not None and not self._recorded():
                shutil.rmtree(self._staging, ignore_errors=True)
        finally:
            self._staging = None
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None
            if failed:
                self._remove_created()

    def _recorded(self) -> bool:
        try:
            record = pending(self.path)
        except OutputError:
            return True  # unreadable: it may name ours
        return record is not None and self._staging is not None and record.staging == self._staging.name

    def wants(self, name: str) -> bool:
        """Whether the table ``name`` is written (anything but the six tables always is)."""
        return name in self.tables or name not in OUTPUT_TABLES

    def write(self, name: str, table: pa.Table, fmt: str) -> Path:
        """Write ``table`` as ``<name>.<fmt>`` (unless it is a table not chosen); returns the
        file's final path."""
        filename = f"{name}.{fmt}"
        if not self.wants(name):
            return self.path / filename
        if name == "deduped" and self.layout is not None:
            writer = self.open_table(name, fmt, table.schema)
            writer.write(table)
            return self.path / "deduped"
        write_table(table, self._target(filename), fmt)
        self._tables.add(name)
        self._add(self._files, filename)
        return self.path / filename

    def open_table(self, name: str, fmt: str, schema: pa.Schema) -> TableWriter:
        """A :class:`TableWriter` for ``<name>.<fmt>``, to append to; closed when the block ends.
        For a table not chosen, a writer that keeps nothing."""
        filename = f"{name}.{fmt}"
        if not self.wants(name):
            return _Discard(self.path / filename, fmt)
        if name == "deduped" and self.layout is not None:
            from neardup.io.layout import LAYOUT_DIR, LayoutWriter

            layout = LayoutWriter(self.staging / LAYOUT_DIR, fmt, schema, self.layout)
            self._writers.append(layout)
            self._tables.add(name)
            self._add(self._files, LAYOUT_DIR)
            return layout
        writer = TableWriter(self._target(filename), fmt, schema)
        self._writers.append(writer)
        self._tables.add(name)
        self._add(self._files, filename)
        return writer

    def folder(self, name: str) -> Path:
        """The staging folder of table ``name`` written as a folder of parts by others (the Ray
        engine's tasks), moved in whole; made if missing."""
        if name not in OUTPUT_TABLES or not self.wants(name):
            raise ValueError(f"not a chosen table: {name!r}")
        folder = self.staging / name
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{folder}: cannot write: {exc.strerror or exc}") from exc
        self._tables.add(name)
        self._add(self._files, name)
        return folder

    def write_json(self, filename: str, data: Any) -> Path:
        """Write ``data`` as indented JSON; it is moved in last, when everything else is in place."""
        text = json.dumps(data, indent=2, ensure_ascii=False, default=json_default) + "\n"
        self._write_text(filename, text)
        self._add(self._markers, filename)
        return self.path / filename

    def write_text(self, filename: str, text: str) -> Path:
        """Write a UTF-8 text file (a report, say)."""
        self._write_text(filename, text)
        self._add(self._files, filename)
        return self.path / filename

    def _write_text(self, filename: str, text: str) -> None:
        target = self._target(filename)
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{target}: cannot write: {exc.strerror or exc}") from exc

    def _target(self, filename: str) -> Path:
        if not filename or filename.startswith(".") or os.sep in filename or "/" in filename:
            raise ValueError(f"not a plain file name: {filename!r}")
        return self.staging / filename

    @staticmethod
    def _add(names: list[str], filename: str) -> None:
        if filename not in names:
            names.append(filename)

    def _commit(self) -> None:
        staging = self.staging
        try:
            markers = {name: digest(staging / name) for name in self._markers}
        except OSError as exc:
            raise OutputError(f"{staging}: cannot read back: {exc.strerror or exc}") from exc
        record = CommitRecord(
            staging=staging.name,
            moves=(*self._files, *self._markers),
            markers=markers,
            removes=tuple(self._earlier()),
        )
        commit(self.path, record)

    def _earlier(self) -> list[str]:
        """The entries of earlier runs that this run's tables leave stale: a written table's other
        forms (``<name>.<other format>``, its folder, or its files when it is a folder), and every
        form of a table not chosen."""
        ours = set(self._files)
        stale: list[str] = []
        for name in OUTPUT_TABLES:
            if name in self.tables and name not in self._tables:
                continue  # chosen and not written: nothing says its files are stale
            for entry in (*(f"{name}.{fmt}" for fmt in OUTPUT_FORMATS), name):
                if entry not in ours and os.path.lexists(self.path / entry):
                    stale.append(entry)
        return stale

    def _remove_created(self) -> None:
        for path in self._created:
            try:
                path.rmdir()
            except OSError:
                break
