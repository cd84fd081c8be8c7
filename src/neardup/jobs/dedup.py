"""One dedup job, files in and a results folder out: the call behind ``neardup dedup``.

:func:`run_dedup` reads a :class:`DedupJob`'s inputs, chooses where the run happens (in memory,
one JSON Lines file read in passes, or streamed through a work dir: :func:`choose_mode`),
decides, writes the chosen outputs into the output folder all together or not at all, and
returns the figures of ``summary.json``. It reports through :class:`RunEvents` and raises
neardup's error tree; it prints nothing and exits nothing.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from neardup.config import DedupConfig
from neardup.errors import ConfigError
from neardup.io import Corpus, ReadOptions, expand_inputs, read_corpus
from neardup.io._common import WholeReadNeededError
from neardup.io.writers import output_tables
from neardup.jobs import modes
from neardup.jobs.events import RunEvents
from neardup.jobs.modes import in_memory, in_passes, streamed
from neardup.jobs.on_ray import RayOptions, on_ray
from neardup.jobs.summary import null_texts_note
from neardup.memory import MemoryBudget, MemoryLimitError, MemoryWatch, release_memory

if TYPE_CHECKING:
    from neardup.index import LSHIndex

__all__ = ["DedupJob", "Mode", "choose_mode", "run_dedup"]

Mode = Literal["in-memory", "passes", "streaming"]

_RUN_OPTIONS = ("max_bucket_size", "verify", "keep", "match_empty")
"""The settings a run against an index takes from the job, not the index."""


@dataclass(frozen=True)
class DedupJob:
    """Everything one run needs, as the user gives it.

        ``settings`` are :meth:`DedupConfig.create`'s keywords as given (``None`` or absent: the
        default, or with ``against`` the index's). ``memory_limit`` is bytes or a size string
        (``"6GB"``, ``"512MiB"``) for the whole process; ``None`` is a quarter of RAM. ``work_memory``
    is the streaming engine's share of it (default: the limit less the process's own, about 320 MB;
    :mod:`neardup.memory`); like ``work_dir``, giving it streams. ``outputs`` names the tables to
        write (:data:`~neardup.io.writers.OUTPUT_TABLES`, default all); ``summary.json`` always is.
        ``keep_layout`` writes ``deduped`` as a folder of one file per input file, under its path
        below the inputs' common folder, in the output format. ``engine="ray"`` runs on Ray with
        ``ray`` (:class:`~neardup.jobs.on_ray.RayOptions`): inputs, ``output_dir`` and ``work_dir``
        may then be filesystem URIs, and each table is a folder of parts.
    """

    inputs: Sequence[str | Path] = ()
    output_dir: Path | str = Path("out")
    settings: Mapping[str, Any] = field(default_factory=dict)
    read: ReadOptions = field(default_factory=ReadOptions)
    demo: bool = False
    output_format: str | None = None
    outputs: Collection[str] | str | None = None
    keep_layout: bool = False
    against: str | None = None
    update_index: bool = False
    memory_limit: int | str | None = None
    work_memory: int | str | None = None
    work_dir: Path | str | None = None
    resume: bool = True
    engine: Literal["local", "ray"] = "local"
    ray: RayOptions | None = None
    report: bool = False
    """Also write ``report.html`` (:func:`neardup.report.write_report`) into the output folder."""

    def config(self) -> DedupConfig:
        """The settings as a validated config (without an index's)."""
        return DedupConfig.create(**{k: v for k, v in self.settings.items() if v is not None})


def _checked(job: DedupJob) -> MemoryBudget:
    """The job's memory budget; inconsistent arguments are a ConfigError."""
    if job.demo and job.inputs:
        raise ConfigError("give either inputs or demo, not both")
    if not job.demo and not job.inputs:
        raise ConfigError("no inputs given (demo=True runs on a built-in sample)")
    if job.update_index and job.against is None:
        raise ConfigError("update_index needs against (an index location)")
    if job.update_index and job.read.id_column is None and not job.demo:
        raise ConfigError(
            "update_index needs id_column: index keys are the id column's values, and generated row "
            "numbers would clash between runs"
        )
    if job.demo and (job.work_dir is not None or job.work_memory is not None):
        streams = "work_dir" if job.work_dir is not None else "work_memory"
        raise ConfigError(f"{streams} streams files; the demo sample is read in memory")
    output_tables(job.outputs)
    if job.demo and job.keep_layout:
        raise ConfigError("keep_layout writes a file per input file; the demo sample has none")
    return MemoryBudget.of(job.memory_limit, job.work_memory)


def choose_mode(job: DedupJob) -> Mode:
    """Where ``job`` runs: ``streaming`` with a work dir or work memory given, or inputs estimated
    past the memory limit,
    ``passes`` for one JSON Lines file that reads the same in passes within it, else
    ``in-memory``. Reads no more of the inputs than the passes' line scan."""
    if job.demo:
        return "in-memory"
    mode = _mode(job, _expanded(job), MemoryBudget.of(job.memory_limit, job.work_memory))
    return "passes" if isinstance(mode, tuple) else mode


def _lines_out(job: DedupJob) -> bool:
    """Whether the row tables can be the input file's own lines (JSON Lines out, no index)."""
    return job.output_format in (None, "jsonl") and job.against is None and not job.demo


def run_dedup(job: DedupJob, events: RunEvents | None = None) -> dict[str, Any]:
    """Run ``job`` and return its ``summary.json`` figures.

    Errors: :class:`~neardup.errors.ConfigError` for settings and arguments,
    :class:`~neardup.errors.InputError` for inputs, :class:`~neardup.errors.OutputError` for the
    output folder, :class:`~neardup.errors.StorageError` for the index. A streamed run that fails
    keeps its work dir (a note on the exception says where) and resumes when run again.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> summary = run_dedup(DedupJob(demo=True, output_dir=out))
    >>> summary["engine"]["mode"], (out / "summary.json").exists()
    ('in-memory', True)
    """
    events = events or RunEvents()
    _check_containment(job)
    if job.report:
        _check_report(job)
    summary = _run_engine(job, events)
    note = null_texts_note(int(summary.get("null_texts", 0)))
    if note is not None:
        events.note(note)
    if job.report:
        from neardup.report import write_report

        events.note(f"report written to {write_report(job.output_dir)}")
    return summary


def _check_containment(job: DedupJob) -> None:
    """A containment run is decided in memory (or in passes): the others are refused before
    anything is read."""
    if job.settings.get("containment") is None:
        return
    refused = [
        (job.engine == "ray", "--engine ray"),
        (job.against is not None, "--against (an index)"),
        (job.work_dir is not None, "--work-dir (streaming)"),
        (job.work_memory is not None, "--work-memory (streaming)"),
        (job.report, "--report"),
    ]
    for given, what in refused:
        if given:
            raise ConfigError(f"containment runs in memory or in passes; {what} is not supported with it yet")


def _check_report(job: DedupJob) -> None:
    """A report needs its extra and a local output folder: said before the run, not after."""
    from neardup.report.html import plotly_bundle

    if "://" in str(job.output_dir):
        raise ConfigError(
            "report needs a local output folder; copy the outputs and run neardup report on the copy"
        )
    plotly_bundle()


def _run_engine(job: DedupJob, events: RunEvents) -> dict[str, Any]:
    if job.engine == "ray":
        return on_ray(job, events)
    if job.engine != "local":
        raise ConfigError(f"engine must be 'local' or 'ray', not {job.engine!r}")
    if job.ray is not None:
        raise ConfigError("ray options are for engine='ray'")
    job = replace(
        job,
        output_dir=Path(job.output_dir),
        work_dir=None if job.work_dir is None else Path(job.work_dir),
    )
    budget = _checked(job)
    limit = budget.limit
    config = job.config()
    paths = None if job.demo else _expanded(job)
    if job.against is None:
        mode = "in-memory" if paths is None else _mode(job, paths, budget)
        # a containment run cannot stream: it runs in memory whatever it holds
        watch = None if paths is None or config.containment is not None else MemoryWatch(limit)
        stopped: str | None = None  # why a run in memory stopped at the limit
        if isinstance(mode, tuple):  # one JSON Lines file, read in passes
            try:
                return in_passes(
                    mode[1], config=config, job=job, memory_limit=limit, events=events, watch=watch
                )
            except WholeReadNeededError:
                mode = mode[0]  # nothing decided or written yet: the file is read whole
            except MemoryLimitError as exc:
                stopped, mode = str(exc), "streaming"
        if mode == "streaming" and stopped is None:
            if config.containment is not None:
                raise ConfigError(
                    "containment runs in memory or in passes, and these inputs would be streamed: "
                    f"raise --memory-limit (now {limit:,} bytes)"
                )
            return streamed(job.inputs, config=config, job=job, budget=budget, events=events)
        if stopped is None:
            done = _in_memory(job, config, limit, events, watch)
            if not isinstance(done, str):
                return done
            stopped = done
        # nothing was written, and the run's arrays are gone with its frames
        events.note(f"{stopped}: streaming the inputs through a work dir instead")
        release_memory()
        return streamed(job.inputs, config=config, job=job, budget=budget, events=events, reason=stopped)
    if paths is not None:
        _refuse_streaming_against(job, paths, budget)
    from neardup.index.opening import open_index  # here: a run without an index loads none of it

    # open_index checks the signature settings against the index's, and makes a new one from them
    with open_index(
        job.against, settings=job.settings, create=job.update_index, readonly=not job.update_index
    ) as index:
        config = _with_run_options(index.settings.to_config(), job.settings)
        done = _in_memory(job, config, limit, events, MemoryWatch(limit), index=index)
        if isinstance(done, str):
            raise ConfigError(
                f"{done}; a run against an index is held in memory: raise memory_limit, or "
                "deduplicate the inputs in parts against the index"
            )
        return done


def _in_memory(
    job: DedupJob,
    config: DedupConfig,
    limit: int,
    events: RunEvents,
    watch: MemoryWatch | None,
    *,
    index: LSHIndex | None = None,
) -> dict[str, Any] | str:
    """The run in memory's summary (against ``index`` when given), or why it stopped at the
    memory limit (having written nothing): it holds the corpus, let go on return."""
    corpus, seconds = _load(job)
    try:
        return in_memory(
            corpus,
            config=config,
            job=job,
            memory_limit=limit,
            events=events,
            read_seconds=seconds,
            index=index,
            watch=watch,
        )
    except MemoryLimitError as exc:
        return str(exc)


def _expanded(job: DedupJob) -> list[Path]:
    return expand_inputs(list(job.inputs))


def _mode(job: DedupJob, paths: list[Path], budget: MemoryBudget) -> Mode | tuple[Mode, Any]:
    """The mode, or ``(fallback, reader)`` for a run in passes."""
    from neardup.engines.streaming import fits_in_memory

    told = job.work_dir is not None or budget.work_given
    streaming = told or not fits_in_memory(paths, budget.limit)
    fallback: Mode = "streaming" if streaming else "in-memory"
    if not told and (streaming or _lines_out(job)):
        num_perm = job.config().minhash.num_perm
        reader = modes.passes_reader(paths, job.read, budget.limit, num_perm, lines_out=_lines_out(job))
        if reader is not None:
            return fallback, reader
    return fallback


def _refuse_streaming_against(job: DedupJob, paths: list[Path], budget: MemoryBudget) -> None:
    from neardup.engines.streaming import fits_in_memory, in_memory_estimate
    from neardup.sizes import format_size

    limit = budget.limit
    if job.work_dir is None and not budget.work_given and fits_in_memory(paths, limit):
        return
    why = (
        "work_dir streams the inputs"
        if job.work_dir is not None
        else "work_memory streams the inputs"
        if budget.work_given
        else f"the inputs (about {format_size(in_memory_estimate(paths))} in memory) exceed "
        f"memory_limit {format_size(limit)}"
    )
    raise ConfigError(
        f"against needs the inputs in memory, but {why}; raise memory_limit "
        "(or deduplicate the inputs in parts against the index)"
    )


def _with_run_options(config: DedupConfig, settings: Mapping[str, Any]) -> DedupConfig:
    """The index's config with this run's own options (those that do not change signatures)."""
    given: dict[str, Any] = {k: settings[k] for k in _RUN_OPTIONS if settings.get(k) is not None}
    lsh = config.lsh
    if "max_bucket_size" in given:
        lsh = replace(lsh, max_bucket_size=given["max_bucket_size"])
    return replace(
        config,
        lsh=lsh,
        verify=given.get("verify", True),
        keep=given.get("keep", "first"),
        match_empty=given.get("match_empty", False),
    )


def _load(job: DedupJob) -> tuple[Corpus, float]:
    """The job's corpus and the seconds reading it took."""
    t0 = time.perf_counter()
    if job.demo:
        from neardup.demo import demo_table

        corpus = Corpus(
            table=demo_table(),
            text_column="text",
            id_column="id",
            sources=["<demo>"],
            skipped=[],
            family="csv",
        )
    else:
        corpus = read_corpus(list(job.inputs), job.read)
    return corpus, time.perf_counter() - t0
