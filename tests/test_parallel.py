"""Threads change nothing: ``--workers 1`` and ``--workers 2`` write the same files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from synthetic import planted_corpus

NEARDUP = [sys.executable, "-m", "neardup.cli"]


def _corpus(path: Path) -> Path:
    records = planted_corpus(3000, dup_fraction=0.3, seed=11)
    chinese = "重复数据删除是清洗训练语料的重要步骤，近似重复的文本会降低模型的泛化能力。"
    for i, record in enumerate(records[::7]):  # some unspaced text, some of it repeated
        record["text"] = f"{chinese[i % 9 :]}{record['text']}"
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps({"id": record["id"], "text": record["text"]}, ensure_ascii=False) + "\n")
    return path


def _run(corpus: Path, out: Path, workers: int, *extra: str) -> dict[str, bytes]:
    args = [*NEARDUP, "dedup", str(corpus), "-o", str(out), "--id-column", "id", "-q"]
    done = subprocess.run(
        [*args, "--workers", str(workers), *extra],
        capture_output=True,
        env={**os.environ, "NUMBA_NUM_THREADS": "2"},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    files = {p.name: p.read_bytes() for p in out.iterdir() if p.name != "summary.json"}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    timeless = {k: v for k, v in summary.items() if k not in ("seconds", "output_dir")}
    files["summary.json"] = json.dumps(timeless).encode()
    return files


def test_one_and_two_workers_write_the_same_outputs(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c.jsonl")
    one = _run(corpus, tmp_path / "one", 1)
    two = _run(corpus, tmp_path / "two", 2)
    assert set(one) == {
        "annotated.jsonl",
        "deduped.jsonl",
        "duplicates.jsonl",
        "clusters.jsonl",
        "candidate_pairs.jsonl",
        "lsh_buckets.jsonl",
        "summary.json",
    }
    assert one["duplicates.jsonl"].count(b"\n") > 500  # the corpus really has duplicates to find
    for name in one:
        assert one[name] == two[name], name


def test_char_shingles_one_and_two_workers_agree(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c.jsonl")
    extra = ("--shingle", "char", "--ngram", "4")
    assert _run(corpus, tmp_path / "one", 1, *extra) == _run(corpus, tmp_path / "two", 2, *extra)


def _in_threads_squares() -> list[int]:
    from neardup.core.jit import in_threads

    out = [0, 0, 0]
    in_threads(lambda part: out.__setitem__(part, part * part), 3)
    return out


def test_kernel_threads_in_a_forked_child() -> None:
    """The kernel threads are kept for the process; a forked child (which has none of the
    parent's threads) still runs its kernels on threads."""
    import multiprocessing
    import time

    assert _in_threads_squares() == [0, 1, 4]  # the parent's pool now exists
    time.sleep(0.2)  # and its threads are idle: a child would count on them
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_in_threads_squares).get(timeout=60) == [0, 1, 4]
