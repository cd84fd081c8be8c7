"""A dedup job on the Ray engine: its inputs and output folder as local paths or URIs, its stages
on a Ray cluster (or a local Ray), its work in a resumable work location."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from neardup import __version__
from neardup.errors import ConfigError, OutputError
from neardup.io.writers import OutputDir, output_tables
from neardup.jobs.events import RunEvents
from neardup.sizes import parse_size

if TYPE_CHECKING:
    from neardup.engines.ray.location import Location
    from neardup.jobs.dedup import DedupJob

WORK_DIR_NAME = ".neardup-work"
SPLIT_BYTES = 32 << 20
"""Bytes of input per split by default (the engine's own default, kept here for the options)."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide a Ray run goes.

    ``address`` is a running cluster's (``auto``, ``host:port``, ``ray://host:port``); ``None``
    starts Ray in this process with ``cpus`` CPUs (default: all). ``partitions`` is the number of
    document ranges the shuffled stages work in (default: two per CPU, or one per 256 MB of input
    if more); ``split_bytes`` the bytes of input one task reads (or a size string). The result
    depends on neither.
    """

    address: str | None = None
    partitions: int | None = None
    cpus: int | None = None
    split_bytes: int | str = SPLIT_BYTES


def split_bytes(given: int | str) -> int:
    """``RayOptions.split_bytes`` as bytes (a size string such as ``"64MiB"`` taken); at least 1."""
    size = parse_size(given) if isinstance(given, str) else int(given)
    if size < 1:
        raise ConfigError(f"split_bytes must be at least 1 byte, not {given!r}")
    return size


def _refuse(job: DedupJob) -> None:
    if job.demo:
        raise ConfigError("the Ray engine reads files; the demo sample runs on the local engine")
    if job.against is not None or job.update_index:
        raise ConfigError("against (a persistent index) runs on the local engine, not on Ray")
    if job.keep_layout:
        raise ConfigError(
            "keep_layout runs on the local engine; the Ray engine writes a folder of parts per table"
        )
    if job.read.lines:
        raise ConfigError("the Ray engine reads JSON Lines and Parquet; lines=True runs on the local engine")
    if not job.inputs:
        raise ConfigError("no inputs given")


def on_ray(job: DedupJob, events: RunEvents) -> dict[str, Any]:
    """Run ``job`` on Ray and return its ``summary.json`` figures (a folder of parts per table).

    Into a local folder the tasks write the parts into an :class:`~neardup.io.OutputDir`'s
    staging folder, committed as the local engine's outputs are; into a URI (an object store has
    no rename to commit with) the folder's ``summary.json`` and tables go first and the new
    ``summary.json`` comes last, so a folder without it holds no finished run."""
    from neardup.engines.ray.location import Location

    _refuse(job)
    output = Location(str(job.output_dir))
    if output.local and os.path.exists(output.root) and not os.path.isdir(output.root):
        raise OutputError(f"{job.output_dir}: exists and is not a directory")
    work = Location(str(job.work_dir)) if job.work_dir is not None else output.child(WORK_DIR_NAME)
    spill = os.path.join(work.root, "spill") if work.local else tempfile.mkdtemp(prefix="neardup-spill-")
    if not output.local:
        summary = _run(job, events, output, output, work, spill)
        output.write_json(summary, "summary.json")
    else:
        with OutputDir(output.root, job.outputs) as target:
            summary = _run(job, events, output, Location(str(target.staging)), work, spill)
            for name in output_tables(job.outputs):
                target.folder(name)
            target.write_json("summary.json", summary)
    work.delete()
    if not work.local:
        shutil.rmtree(spill, ignore_errors=True)
    return summary


def _run(
    job: DedupJob, events: RunEvents, output: Location, written: Location, work: Location, spill: str
) -> dict[str, Any]:
    """The run's summary; its tables are written into ``written`` (``output``, or its staging)."""
    from neardup.engines.ray.engine import RayDedup
    from neardup.engines.ray.session import connected

    options = job.ray or RayOptions()
    config = job.config()
    events.shape(config)
    with connected(options.address, cpus=options.cpus, spill_dir=spill) as facts:
        run = RayDedup(
            [str(i) for i in job.inputs],
            options=job.read,
            config=config,
            work=work,
            output=written,
            output_format=job.output_format,
            outputs=output_tables(job.outputs),
            partitions=options.partitions,
            cpus=facts["cpus"],
            resume=job.resume,
            progress=events.progress,
            split_bytes=split_bytes(options.split_bytes),
        )
        figures = run.run()
    figures["engine"]["ray"] = facts
    summary: dict[str, Any] = {
        "neardup_version": __version__,
        "inputs": [f.name for f in run.files],
        "output_dir": str(output),
        "output_format": figures["engine"]["output_format"],
        "outputs": list(output_tables(job.outputs)),
        "text_column": job.read.text_column,
        "id_column": job.read.id_column or "row_id",
        "skipped_records": 0,
        "skipped": [],
        "null_texts": figures.pop("null_texts"),
        **figures,
    }
    summary["seconds"] = {"read": 0.0, **figures["seconds"], "total": figures["engine"]["total_seconds"]}
    return summary
