"""The figures of ``summary.json``: what was read, what was decided, where it went."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from neardup import __version__
from neardup.io.writers import output_tables
from neardup.pipeline import STAGES as PIPELINE_STAGES

if TYPE_CHECKING:
    from neardup.io import Corpus
    from neardup.io.jsonl_passes import JsonlPasses
    from neardup.io.stream import CorpusStream
    from neardup.jobs.dedup import DedupJob


def engine_without_work_dir(mode: str, memory_limit: int, figures: dict[str, Any]) -> dict[str, Any]:
    """``summary.json``'s ``engine`` for a run that keeps no work dir (in memory or in passes)."""
    return {
        "mode": mode,
        "work_dir": None,
        "memory_limit": memory_limit,
        "stages_run": [stage for stage in PIPELINE_STAGES if stage in figures["seconds"]],
        "stages_resumed": [],
    }


def summary_of(
    corpus: Corpus | CorpusStream | JsonlPasses,
    figures: dict[str, Any],
    job: DedupJob,
    fmt: str,
    read_seconds: float,
) -> dict[str, Any]:
    """The run's summary: the inputs as read, then the decision's ``figures``."""
    summary: dict[str, Any] = {
        "neardup_version": __version__,
        "inputs": corpus.sources,
        "output_dir": str(job.output_dir),
        "output_format": fmt,
        "outputs": list(output_tables(job.outputs)),
        "text_column": corpus.text_column,
        "id_column": corpus.id_column,
        "skipped_records": len(corpus.skipped),
        "skipped": [str(e) for e in corpus.skipped],
        "null_texts": corpus.null_texts,
        **figures,
    }
    summary["seconds"] = {"read": round(read_seconds, 4), **figures["seconds"]}
    return summary


def null_texts_note(count: int) -> str | None:
    """What a person should hear of the rows read with a null text (None for none): that they
    are deduplicated as empty documents."""
    if count <= 0:
        return None
    rows = "1 row has" if count == 1 else f"{count:,} rows have"
    return f"{rows} a null text (null, or no text field): deduplicated as empty (null_texts in summary.json)"
