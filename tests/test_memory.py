"""A run's memory budget: the whole process's limit, refused up front when the process itself
would not fit in it, and the work memory left for the data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neardup import DedupConfig
from neardup.engines.streaming import StreamingRun
from neardup.errors import ConfigError
from neardup.io import ReadOptions
from neardup.jobs import DedupJob, run_dedup
from neardup.memory import MIN_WORK_MEMORY, PROCESS_MEMORY, MemoryBudget, least_memory_limit


def test_the_work_memory_is_the_limit_less_the_process() -> None:
    budget = MemoryBudget.of("1GB")
    assert (budget.limit, budget.work, budget.work_given) == (10**9, 10**9 - PROCESS_MEMORY, False)
    assert MemoryBudget.of(10**9, "1MiB") == MemoryBudget(limit=10**9, work=1 << 20, work_given=True)
    assert MemoryBudget.of(None).limit >= least_memory_limit()  # a small machine's default still runs


@pytest.mark.parametrize(
    ("limit", "work", "message"),
    [
        (
            "200MB",
            None,
            "memory_limit 200 MB is below what a run needs: at least 420 MB (the process itself takes "
            "about 320 MB, its data at least 100 MB)",
        ),
        (least_memory_limit() - 1, None, "is below what a run needs: at least 420 MB"),
        ("1GB", "700MB", "work_memory 700 MB and the process's own (about 320 MB) do not fit in"),
        ("1GB", "lots", "work_memory: not a size: 'lots'"),
    ],
)
def test_a_limit_the_process_cannot_keep_is_refused(limit: str | int, work: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MemoryBudget.of(limit, work)


def test_the_job_refuses_before_reading_or_writing(tmp_path: Path) -> None:
    missing = tmp_path / "not-there.jsonl"  # never opened: the limit is refused first
    with pytest.raises(ConfigError, match="below what a run needs"):
        run_dedup(DedupJob(inputs=[missing], output_dir=tmp_path / "out", memory_limit="300MB"))
    assert not (tmp_path / "out").exists()
    assert least_memory_limit() == PROCESS_MEMORY + MIN_WORK_MEMORY


def test_documents_that_outgrow_the_work_memory_are_refused_with_the_figure(tmp_path: Path) -> None:
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(f'{{"text": "document {i}"}}\n' for i in range(10_000)))
    run = StreamingRun(
        [corpus],
        ReadOptions(),
        DedupConfig.create(),
        work_dir=tmp_path / "work",
        memory_limit=1 << 20,
        held_per_document=128,
    )
    with run:
        run.read()
        figure = r"^10,000 documents hold about 1250 KiB in memory whatever the chunks, more than"
        with pytest.raises(ConfigError, match=figure):
            run.dedup()


def test_a_small_run_stays_within_the_process_memory(tmp_path: Path) -> None:
    """PROCESS_MEMORY is a measured figure: a run of a few rows in a fresh ``neardup dedup``
    (imports, compiled kernels loaded, outputs written) peaks below it."""
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(f'{{"text": "row {i % 5} of a few"}}\n' for i in range(50)))
    neardup = str(Path(sys.executable).with_name("neardup"))
    measure = (  # a fresh parent, so that the run is its only child
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)"
    )
    command = [sys.executable, "-c", measure, neardup, "dedup", str(corpus), "-o", str(tmp_path / "o")]
    peak = int(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    assert 100 << 20 < peak < PROCESS_MEMORY
