"""``neardup tune`` as one library call: read a corpus and its labels, sample whole true groups,
sweep (:func:`neardup.report.tuning.tune`) and say which ``neardup dedup`` command to run."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.errors import InputError
from neardup.io.inputs import ReadOptions, read_corpus
from neardup.pipeline import Progress, arrow_to_batch
from neardup.report.evaluation import Truth
from neardup.report.tuning import TuneGrid, TuneResult, command_args, sample_rows, tune


@dataclass(frozen=True)
class TuneJob:
    """A sweep over the labelled rows of ``inputs``: at most ``sample`` of them (whole true
    groups, drawn with ``seed``; all when None), scored against ``truth``."""

    inputs: Sequence[str | Path]
    truth: Truth
    read: ReadOptions = field(default_factory=ReadOptions)
    sample: int | None = None
    grid: TuneGrid = field(default_factory=TuneGrid)
    min_precision: float = 0.9
    seed: int = 42


@dataclass(frozen=True)
class TuneOutcome:
    """The sweep and what it was run on; ``command`` is the ``neardup dedup`` line of the
    recommended setting (None when no setting reaches the floor)."""

    result: TuneResult
    corpus_rows: int
    labelled_rows: int
    swept_rows: int
    command: list[str] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "corpus_rows": self.corpus_rows,
            "labelled_rows": self.labelled_rows,
            "swept_rows": self.swept_rows,
            "command": shlex.join(self.command) if self.command else None,
        }


def run_tune(job: TuneJob, progress: Progress | None = None) -> TuneOutcome:
    """Read ``job.inputs``, keep the rows the truth labels, sample, sweep."""
    if job.sample is not None and job.sample < 2:
        raise InputError(f"a sample needs at least 2 rows, not {job.sample}")
    corpus = read_corpus(list(job.inputs), job.read)
    table = corpus.table
    labels = job.truth.labels_for(
        table.column(corpus.id_column).combine_chunks(), run_id_column=corpus.id_column
    )
    rows = np.flatnonzero(labels.labels >= 0)
    if job.sample is not None and rows.size > job.sample:
        rows = rows[np.sort(sample_rows(labels.labels[rows], job.sample, seed=job.seed))]
    swept = labels.labels[rows]
    if rows.size == np.unique(swept).size:
        what = (
            f"the {rows.size:,} rows swept" if job.sample is not None else f"the {rows.size:,} labelled rows"
        )
        raise InputError(
            f"{what} hold no two rows of one true group: no duplicate to score against"
            + (" (true groups are taken whole: give --sample more rows)" if job.sample is not None else ""),
            path=job.truth.path,
        )
    texts = table.column(corpus.text_column).take(pa.array(rows, pa.int64()))
    result = tune(
        arrow_to_batch(texts),
        swept,
        grid=job.grid,
        min_precision=job.min_precision,
        progress=progress,
    )
    command = None
    if result.recommended is not None:
        command = ["neardup", "dedup", *(str(p) for p in job.inputs), "-o", "OUT"]
        if job.read.text_column != "text":
            command += ["--text-column", job.read.text_column]
        if job.read.id_column is not None:
            command += ["--id-column", job.read.id_column]
        command += command_args(result.recommended)
    return TuneOutcome(
        result=result,
        corpus_rows=table.num_rows,
        labelled_rows=int(np.count_nonzero(labels.labels >= 0)),
        swept_rows=int(rows.size),
        command=command,
    )
