"""The library calls behind the command: one dedup job, one index opened from a URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.config import DedupConfig
from neardup.errors import ConfigError, StorageError
from neardup.io import ReadOptions
from neardup.jobs import (
    DedupJob,
    IndexExistsError,
    IndexNotFoundError,
    RunEvents,
    build_index,
    choose_mode,
    open_index,
    run_dedup,
)
from neardup.sizes import memory_limit_bytes


def _corpus(path: Path) -> Path:
    rows = [{"id": i, "text": f"document {i} about the weather in town {i % 3}"} for i in range(20)]
    rows += [{"id": 100, "text": rows[0]["text"] + "!"}, {"id": 101, "text": rows[1]["text"].upper()}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class _Recorder(RunEvents):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def shape(self, config: DedupConfig) -> None:
        self.seen.append(f"shape {config.lsh.threshold}")

    def progress(self, stage: str, done: int, total: int) -> None:
        if not self.seen or self.seen[-1] != stage:
            self.seen.append(stage)


def test_a_job_in_each_mode_removes_the_same_rows(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c.jsonl")
    read = ReadOptions(id_column="id")
    removed = {}
    for mode, extra in (
        ("passes", {}),
        ("in-memory", {"output_format": "csv"}),
        ("streaming", {"work_dir": tmp_path / "work", "work_memory": "1MiB"}),
    ):
        job = DedupJob(
            inputs=[corpus], output_dir=tmp_path / mode, read=read, settings={"threshold": 0.7}, **extra
        )
        assert choose_mode(job) == mode
        events = _Recorder()
        summary = run_dedup(job, events)
        assert summary["engine"]["mode"] == mode
        assert events.seen[0] == "shape 0.7" and events.seen[-1] == "write"
        removed[mode] = summary["duplicates_removed"]
        assert (tmp_path / mode / "summary.json").exists()
    assert removed == {"passes": 2, "in-memory": 2, "streaming": 2}


def test_a_job_checks_its_arguments_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="give either inputs or demo"):
        run_dedup(DedupJob(inputs=["x.jsonl"], demo=True, output_dir=tmp_path))
    with pytest.raises(ConfigError, match="update_index needs against"):
        run_dedup(DedupJob(demo=True, update_index=True, output_dir=tmp_path))
    with pytest.raises(ConfigError, match="threshold must be in"):
        run_dedup(DedupJob(demo=True, settings={"threshold": 3}, output_dir=tmp_path))
    with pytest.raises(ConfigError, match="memory_limit: not a size"):
        run_dedup(DedupJob(demo=True, memory_limit="lots", output_dir=tmp_path))
    assert not any(tmp_path.iterdir())


def test_a_failed_streamed_job_notes_where_its_work_is(tmp_path: Path) -> None:
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"text": "fine"}\n' * 5000 + '{"text": oops}\n')
    job = DedupJob(inputs=[corpus], output_dir=tmp_path / "out", work_dir=tmp_path / "work")
    with pytest.raises(Exception) as caught:
        run_dedup(job)
    assert "malformed JSON" in str(caught.value)
    notes = getattr(caught.value, "__notes__", [])
    assert notes == [f"the work so far is kept in {tmp_path / 'work'}; run the same command again to resume"]


def test_memory_limits_as_sizes_or_bytes() -> None:
    assert memory_limit_bytes("6GB") == 6_000_000_000
    assert memory_limit_bytes(1 << 20) == 1 << 20
    with pytest.raises(ConfigError, match="at least 64 KiB"):
        memory_limit_bytes("1KB")
    with pytest.raises(ConfigError, match="a size"):
        memory_limit_bytes(1.5)  # type: ignore[arg-type]


def test_open_index_from_a_url(tmp_path: Path) -> None:
    url = str(tmp_path / "idx.db")
    with pytest.raises(IndexNotFoundError, match="no index at"):
        open_index(url)
    assert not Path(url).exists()
    with open_index(url, create=True, settings={"threshold": 0.6, "ngram": 3}) as index:
        index.insert_many(["a"], ["the cat sat on the mat today"])
    with open_index(url) as index:
        assert (index.settings.threshold, index.settings.ngram, len(index)) == (0.6, 3, 1)
    with pytest.raises(ConfigError, match="ngram=3 but this config uses ngram=2"):
        open_index(url, settings={"ngram": 2})
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        open_index(url, settings={"colour": 1})
    with pytest.raises(IndexExistsError, match="already holds an index of 1 documents"):
        build_index(url, DedupConfig())
    with build_index(url, DedupConfig.create(threshold=0.9), replace=True) as index:
        assert (len(index), index.settings.threshold) == (0, 0.9)
    assert issubclass(IndexNotFoundError, StorageError)
