"""``deduped`` as one file per input file, under the input's relative name: the shape a sharded
crawl is kept in.

:func:`layout_names` maps each input file to its name inside ``deduped/`` (its path below the
inputs' common folder, its ending that of the output format). :class:`LayoutWriter` is the
``deduped`` table's writer then: it sends each row to its file's writer by the row's
``source_file`` (one input: every row to the one file), drops that column, and leaves an empty
file for an input none of whose rows is kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.errors import ConfigError
from neardup.io.inputs import SOURCE_COLUMN, input_ending
from neardup.io.writers import TableWriter

LAYOUT_DIR = "deduped"
"""The folder of the output directory that holds the files of ``deduped`` kept in layout."""


def layout_names(sources: Sequence[str], fmt: str) -> dict[str, str]:
    """Each input file's relative name in ``deduped/``, with the ending of ``fmt``.

    >>> layout_names(["crawl/2024/a.jsonl.gz", "crawl/2025/b.csv"], "jsonl")
    {'crawl/2024/a.jsonl.gz': '2024/a.jsonl', 'crawl/2025/b.csv': '2025/b.jsonl'}
    """
    if not sources:
        return {}
    resolved = [Path(os.path.abspath(s)) for s in sources]
    base = Path(os.path.commonpath([p.parent for p in resolved]))
    names: dict[str, str] = {}
    taken: dict[str, str] = {}
    for source, path in zip(sources, resolved, strict=True):
        ending = input_ending(path.name)
        if ending is None:
            raise ConfigError(f"keep_layout: {source} is not an input file of a known type")
        relative = path.relative_to(base)
        stem = relative.name[: -len(ending)]
        name = str(relative.with_name(f"{stem}.{fmt}")).replace(os.sep, "/")
        if name in taken:
            raise ConfigError(
                f"keep_layout: {taken[name]} and {source} would both be written as {LAYOUT_DIR}/{name}; "
                "rename one, or run without keep_layout"
            )
        taken[name] = source
        names[source] = name
    return names


class LayoutWriter(TableWriter):
    """The ``deduped`` table written as one file per input file (see the module docstring)."""

    def __init__(self, folder: Path, fmt: str, schema: pa.Schema, names: dict[str, str]) -> None:
        self.path = folder
        self.fmt = fmt
        self.rows = 0
        self._names = names
        self._schema = (
            schema.remove(schema.get_field_index(SOURCE_COLUMN)) if SOURCE_COLUMN in schema.names else schema
        )
        self._open: tuple[str, TableWriter] | None = None
        self._done: set[str] = set()
        self._only = next(iter(names)) if len(names) == 1 else None

    def _writer(self, source: str) -> TableWriter:
        if self._open is not None and self._open[0] == source:
            return self._open[1]
        if source not in self._names:
            raise ValueError(f"a row of {source!r}, which is not an input of this run")
        if source in self._done:  # rows come in input order: a file once closed is complete
            raise ValueError(f"rows of {source!r} after those of another input")
        self._close_open()
        target = self.path / self._names[source]
        target.parent.mkdir(parents=True, exist_ok=True)
        writer = TableWriter(target, self.fmt, self._schema)
        self._open = (source, writer)
        self._done.add(source)
        return writer

    def _close_open(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def write(self, table: pa.Table, formatted: Collection[str] = ()) -> None:
        self.rows += table.num_rows
        if SOURCE_COLUMN not in table.column_names:
            if self._only is None:
                raise ValueError("rows of several inputs without their source_file")
            self._writer(self._only).write(table, formatted)
            return
        sources = table.column(SOURCE_COLUMN).combine_chunks().dictionary_encode()
        codes = sources.indices.to_numpy(zero_copy_only=False)
        rest = table.drop_columns([SOURCE_COLUMN])
        kept = [c for c in formatted if c != SOURCE_COLUMN]
        edges = np.flatnonzero(np.diff(codes)) + 1 if codes.size else np.zeros(0, np.int64)
        starts = np.concatenate(([0], edges)) if codes.size else edges
        ends = np.concatenate((edges, [codes.size])) if codes.size else edges
        names: Any = sources.dictionary.to_pylist()
        if SOURCE_COLUMN in formatted:  # JSON Lines pieces hold their values' JSON text
            names = [json.loads(n) for n in names]
        for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
            self._writer(names[codes[lo]]).write(rest.slice(lo, hi - lo), kept)

    def write_lines(self, data: Any, rows: int) -> None:
        if self._only is None:
            raise ValueError("lines of several inputs cannot be split by file")
        self.rows += rows
        self._writer(self._only).write_lines(data, rows)

    def close(self) -> None:
        self._close_open()
        for source in self._names:  # an input none of whose rows is kept still has its file
            if source not in self._done:
                self._writer(source)
        self._close_open()
