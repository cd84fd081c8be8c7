"""Byte ranges of a file read into one buffer in few reads (neardup.io.spans)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.io.spans as spans_module
from neardup.io.spans import read_ranges


def _expected(data: bytes, spans: np.ndarray) -> bytes:
    return b"".join(data[s:e] + b"\n" for s, e in spans.tolist())


def _read(path: Path, spans: np.ndarray) -> bytes | None:
    with open(path, "rb", buffering=0) as fh:
        got = read_ranges(fh.fileno(), spans)
    return None if got is None else got.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 3000),
    cuts=st.lists(st.tuples(st.integers(0, 2999), st.integers(0, 200)), max_size=40),
    through=st.sampled_from([0, 1, 16, 1 << 13]),
    most=st.sampled_from([1, 64, 1 << 24]),
    ordered=st.booleans(),
)
def test_ranges_read_in_runs_are_the_bytes_asked_in_the_order_asked(
    tmp_path_factory: pytest.TempPathFactory,
    size: int,
    cuts: list[tuple[int, int]],
    through: int,
    most: int,
    ordered: bool,
) -> None:
    path = tmp_path_factory.mktemp("spans") / "f.bin"
    data = bytes(np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8))
    path.write_bytes(data)
    rows = [(min(s, size), min(s + n, size)) for s, n in cuts]
    if ordered:
        rows.sort()
    spans = np.array(rows, dtype=np.int64).reshape(-1, 2)
    old = (spans_module.READ_THROUGH, spans_module.READ_BYTES)
    spans_module.READ_THROUGH, spans_module.READ_BYTES = through, most
    try:
        assert _read(path, spans) == _expected(data, spans)
    finally:
        spans_module.READ_THROUGH, spans_module.READ_BYTES = old


def test_lines_far_apart_and_close_together(tmp_path: Path) -> None:
    lines = [f'{{"id": {i}, "text": "{"x" * (i % 97)}"}}'.encode() for i in range(5000)]
    path = tmp_path / "in.jsonl"
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    ends = np.cumsum([len(line) + 1 for line in lines]) - 1
    starts = ends - [len(line) for line in lines]
    every = np.stack((starts, ends), axis=1)
    for picked in (np.arange(5000), np.arange(0, 5000, 700), np.array([4999, 3, 2, 4000])):
        assert _read(path, every[picked]) == b"".join(lines[i] + b"\n" for i in picked.tolist())


def test_a_file_shorter_than_a_range_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"0123456789")
    assert _read(path, np.array([[0, 4], [6, 12]], dtype=np.int64)) is None
    assert _read(path, np.array([[2, 4], [20, 22]], dtype=np.int64)) is None
    assert _read(path, np.array([[2, 4], [8, 10]], dtype=np.int64)) == b"23\n89\n"
    assert _read(path, np.zeros((0, 2), dtype=np.int64)) == b""


def test_short_reads_are_read_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 40)
    real = os.preadv

    def a_few_bytes_at_a_time(fd: int, buffers: list[memoryview], offset: int) -> int:
        return real(fd, [buffers[0][:7]], offset)

    monkeypatch.setattr(spans_module.os, "preadv", a_few_bytes_at_a_time)
    spans = np.array([[0, 100], [150, 4000], [5000, 10240]], dtype=np.int64)
    assert _read(path, spans) == _expected(path.read_bytes(), spans)
