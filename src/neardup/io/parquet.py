"""Parquet (``.parquet``, ``.pq``): the schema is the file's own, read whole by pyarrow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from neardup.errors import InputError
from neardup.io._common import Part, parquet_module


def read_parquet(path: Path) -> Part:
    """Read one Parquet file; a file pyarrow cannot read is an :class:`InputError`."""
    try:
        with parquet_module().ParquetFile(path) as reader:
            table = reader.read()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from exc
    return Part(table, str(path))
