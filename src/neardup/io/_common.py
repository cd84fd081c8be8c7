"""What the format readers share: a file's table with its provenance, and the error policy."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from neardup.errors import InputError

OnError = Literal["stop", "skip"]

BOM = b"\xef\xbb\xbf"
BLOCK_SIZE = 8 << 20
"""Bytes per block for pyarrow's readers; a record larger than this takes the slow path."""
SAMPLE_SIZE = 1 << 20
"""Bytes read ahead to find the columns pyarrow would turn into dates."""


@dataclass(frozen=True)
class Format:
    """How to read a file: its family, CSV delimiter and gzip compression; ``json_document``
    for a ``.json`` file, which holds JSON Lines or one JSON array of records."""

    family: str
    delimiter: str = ","
    gzip: bool = False
    json_document: bool = False


class Problems:
    """Record-level errors: raises the first under ``"stop"``, collects them under ``"skip"``."""

    def __init__(self, on_error: OnError) -> None:
        self.on_error = on_error
        self.errors: list[InputError] = []

    def add(self, error: InputError) -> None:
        if self.on_error == "stop":
            raise error
        self.errors.append(error)


@dataclass
class Part:
    """Rows read from one file (or from a run of one-document files) and where each came from.

    A row is located by its physical ``lines`` when known, else by ``records``
    (1-based record numbers; the row's position + 1 when ``None``). ``line_finder``
    computes the lines lazily, only when an error needs them. ``row_paths`` is set
    when every row is a whole file.
    """

    table: pa.Table
    path: str
    lines: np.ndarray | None = None
    records: np.ndarray | None = None
    line_finder: Callable[[], np.ndarray] | None = None
    row_paths: list[str] | None = field(default=None, repr=False)

    def where(self, row: int) -> tuple[str, int | None, int | None]:
        """``(path, line, record)`` of a row."""
        if self.row_paths is not None:
            return self.row_paths[row], None, None
        if self.lines is None and self.line_finder is not None:
            found = self.line_finder()
            if found.size == self.table.num_rows:
                self.lines = found
            self.line_finder = None
        if self.lines is not None:
            return self.path, int(self.lines[row]), None
        record = int(self.records[row]) if self.records is not None else row + 1
        return self.path, None, record


class WholeReadNeededError(Exception):
    """The file does not read block by block exactly as the whole-file reader reads it."""


def parquet_module() -> Any:
    """``pyarrow.parquet``, imported when first needed: it brings pyarrow's file systems (S3, GCS,
    Azure, HDFS), 9 MB and 25 ms that a run without Parquet need not pay."""
    import pyarrow.parquet

    return pyarrow.parquet


def read_or_fall_back(read: Callable[[], Any]) -> Any:
    """``read()``; ``None`` at the end of a reader; a parse or read error raises
    :class:`WholeReadNeededError`: the whole-file reader's other paths decide, and report."""
    try:
        return read()
    except StopIteration:
        return None
    except (pa.ArrowInvalid, ValueError) as exc:
        raise WholeReadNeededError(str(exc)) from exc
    except OSError as exc:
        raise WholeReadNeededError(f"cannot read: {exc}") from exc


def read_bytes(path: Path, fmt: Format) -> bytes:
    """The file's content, decompressed; a file that cannot be read is an :class:`InputError`."""
    try:
        if fmt.gzip:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise InputError(f"not a readable gzip file: {exc}", path=path) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc


def read_chunks(path: Path, fmt: Format, size: int) -> Generator[bytes, None, None]:
    """The file's content, decompressed, ``size`` bytes at a time; errors as :func:`read_bytes`."""
    try:
        with gzip.open(path, "rb") if fmt.gzip else open(path, "rb") as fh:
            while chunk := fh.read(size):
                yield chunk
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise InputError(f"not a readable gzip file: {exc}", path=path) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from exc


def split_lines(data: bytes) -> list[bytes]:
    """Physical lines without their ``\\n`` / ``\\r\\n`` endings; a leading BOM is dropped."""
    lines = data.removeprefix(BOM).split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def wide_encoding(data: bytes) -> str | None:
    """``UTF-16`` or ``UTF-32`` when ``data`` (a file's first bytes) looks written in one: a
    byte-order mark, or a zero byte in every other (or three of four) place; else None."""
    head = data[:4096]
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    if len(head) >= 8 and head.count(0) * 4 >= len(head) * 3:
        return "UTF-32"
    if len(head) >= 4 and (
        head[0::2].count(0) * 10 >= len(head) // 2 * 9 or head[1::2].count(0) * 10 >= len(head) // 2 * 9
    ):
        return "UTF-16"
    return None


def wide_encoding_hint(data: bytes) -> str:
    """The advice for a file that looks :func:`wide_encoding`, or nothing."""
    found = wide_encoding(data)
    if found is None:
        return ""
    return f"; the file looks like {found}, and neardup reads UTF-8: convert it (iconv -f {found} -t UTF-8)"


def utf8_reason(raw: bytes, exc: UnicodeDecodeError, head: bytes | None = None) -> str:
    """``invalid UTF-8 (byte 0xff at column 12)`` for a line that failed to decode, with a hint
    when the file (``head``: its first bytes; else the line) looks like UTF-16 or UTF-32."""
    column = len(raw[: exc.start].decode("utf-8", "replace")) + 1
    hint = wide_encoding_hint(raw if head is None else head)
    return f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {column}){hint}"


def utf8_error_in(data: bytes, exc: UnicodeDecodeError) -> tuple[int, str]:
    """``(line, reason)`` of the first invalid byte of a whole file."""
    start = data.rfind(b"\n", 0, exc.start) + 1
    line = data.count(b"\n", 0, exc.start) + 1
    column = len(data[start : exc.start].decode("utf-8", "replace")) + 1
    hint = wide_encoding_hint(data)
    return line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}){hint}"


def json_type(value: object) -> str:
    """JSON's name for the type of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_text_type(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype))


def block_size_for(data: bytes) -> int:
    """A block size that holds all of ``data``, so that no record straddles two blocks."""
    return max(BLOCK_SIZE, min(len(data) + 1, (1 << 31) - 1))


def head(source: Callable[[], Any], size: int = SAMPLE_SIZE) -> bytes:
    """The first whole lines within ``size`` bytes of a stream (empty if there are none)."""
    with source() as stream:
        data = bytes(stream.read(size))
    return data[: data.rfind(b"\n") + 1]


def temporal_columns(table: pa.Table) -> list[str]:
    """Columns pyarrow inferred as dates or times: they are re-read as the strings they were."""
    return [f.name for f in table.schema if pa.types.is_temporal(f.type)]


def json_text(values: list[Any]) -> pa.Array:
    """Values as strings: strings stay, anything else becomes compact JSON."""

    def dump(value: Any) -> str | None:
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)

    return pa.array([dump(v) for v in values], pa.string())
