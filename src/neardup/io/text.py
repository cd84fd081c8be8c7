"""Plain text (``.txt``, ``.text``, ``.md``), UTF-8.

Either one document per file (columns ``path``, ``text``) or, with
``lines=True``, one document per line (columns ``path``, ``line``, ``text``);
blank and whitespace-only lines are skipped, line numbers count every line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.errors import InputError
from neardup.io._common import (
    BOM,
    Format,
    Part,
    Problems,
    read_bytes,
    split_lines,
    utf8_error_in,
    utf8_reason,
    wide_encoding,
    wide_encoding_hint,
)

_FORMAT = Format("text")


def read_text_files(paths: Sequence[Path], *, problems: Problems) -> Part:
    """One document per file; a file that is not valid UTF-8 is a bad record."""
    names: list[str] = []
    texts: list[str] = []
    for path in paths:
        data = read_bytes(path, _FORMAT).removeprefix(BOM)
        if wide_encoding(data) is not None:  # NUL-laden text would pass as UTF-8
            problems.add(InputError(f"not UTF-8{wide_encoding_hint(data)}", path=path, line=1))
            continue
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line, reason = utf8_error_in(data, exc)
            problems.add(InputError(reason, path=path, line=line))
            continue
        names.append(str(path))
    table = pa.table({"path": pa.array(names, pa.string()), "text": pa.array(texts, pa.string())})
    return Part(table, str(paths[0]), row_paths=names)


def read_text_lines(path: Path, *, problems: Problems) -> Part:
    """One document per non-blank line."""
    data = read_bytes(path, _FORMAT).removeprefix(BOM)
    if wide_encoding(data) is not None:  # every line would be wrong: say why once
        raise InputError(f"not UTF-8{wide_encoding_hint(data)}", path=path, line=1)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return _read_lines_slowly(path, data, problems)
    # Valid UTF-8 throughout: slice the file into lines without a Python loop.
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    offsets = np.concatenate(([0], newlines + 1, [len(data)])).astype(np.int64)
    if offsets[-2] == len(data):
        offsets = offsets[:-1]
    count = offsets.size - 1
    raw = pa.LargeStringArray.from_buffers(count, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))
    lines = pc.utf8_rtrim(raw, characters="\r\n")
    keep = pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(lines)), 0)
    numbers = pc.filter(pa.array(np.arange(1, count + 1, dtype=np.int64)), keep)
    text = pc.filter(lines, keep)
    if len(data) < (1 << 31):
        text = text.cast(pa.string())
    table = pa.table({"path": pa.repeat(str(path), len(text)), "line": numbers, "text": text})
    return Part(table, str(path), lines=numbers.to_numpy())


def _read_lines_slowly(path: Path, data: bytes, problems: Problems) -> Part:
    """Line by line, reporting every line that is not valid UTF-8."""
    where = str(path)
    numbers: list[int] = []
    texts: list[str] = []
    for number, raw in enumerate(split_lines(data), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(InputError(utf8_reason(raw, exc, data), path=where, line=number))
            continue
        if line.strip():
            numbers.append(number)
            texts.append(line)
    table = pa.table(
        {
            "path": pa.array([where] * len(texts), pa.string()),
            "line": pa.array(numbers, pa.int64()),
            "text": pa.array(texts, pa.string()),
        }
    )
    return Part(table, where, lines=np.asarray(numbers, dtype=np.int64))
