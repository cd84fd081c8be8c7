"""Connecting to Ray, and running a stage's tasks through Ray Data.

Without an address a run starts Ray in this process (local mode) with a small object store that
spills to the work location: the data itself moves through files there
(:mod:`~neardup.engines.ray.shuffle`), so the store carries only the tasks' descriptions and
figures. With an address it joins that cluster, whose nodes keep their own object-store and
spilling settings (``ray start --object-store-memory``, ``--system-config``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from neardup.errors import ConfigError, NeardupError

OBJECT_STORE_BYTES = 256 << 20
"""The object store of a local-mode run: it holds task descriptions and figures, not data."""


def require_ray() -> Any:
    """The ``ray`` module, or a ConfigError naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ConfigError("the Ray engine needs Ray: pip install 'neardup[ray]'") from exc
    return ray


@contextmanager
def connected(address: str | None, *, cpus: int | None, spill_dir: str | None) -> Iterator[dict[str, Any]]:
    """Ray for the run: the cluster at ``address`` (``auto``, ``host:port``, ``ray://host:port``),
    or a local one of ``cpus`` CPUs; yields what it is (for ``summary.json``). A Ray this
    process already started is used as it is, and left running."""
    ray = require_ray()
    started = False
    facts: dict[str, Any] = {"address": address or "local"}
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
            "logging_level": logging.WARNING,
        }
        if address is None:
            kwargs["num_cpus"] = cpus or os.cpu_count() or 1
            kwargs["object_store_memory"] = OBJECT_STORE_BYTES
            if spill_dir is not None:
                os.makedirs(spill_dir, exist_ok=True)
                kwargs["object_spilling_directory"] = spill_dir
                facts["object_spilling"] = spill_dir
        elif cpus is not None:
            raise ConfigError("cpus sets the size of a local Ray; a cluster at an address has its own")
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot connect to Ray at {address}: {exc}") from exc
        started = True
    _quiet(ray)
    resources = ray.cluster_resources()
    facts["nodes"] = len([n for n in ray.nodes() if n.get("Alive")])
    facts["cpus"] = int(resources.get("CPU", 0))
    try:
        yield facts
    finally:
        if started:
            ray.shutdown()


def _quiet(ray: Any) -> None:
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    context.verbose_progress = False
    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.WARNING)


def run_tasks(
    name: str,
    items: list[Any],
    work: Callable[[Any], dict[str, Any]],
    on_done: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """``work(item)`` for every item, each a Ray Data task of one CPU, retried when its worker
    dies; returns the figures in item order. An error of neardup's raised in a task is raised
    here as it was."""
    if not items:
        return []
    ray = require_ray()
    import pyarrow as pa

    rows = [{"k": k} for k in range(len(items))]

    def call(batch: pa.Table) -> pa.Table:
        import numba

        numba.set_num_threads(1)  # one CPU per task: the kernels' threads would only contend
        out = []
        for k in batch.column("k").to_pylist():
            out.append({"k": k, "figures": json.dumps(work(items[k]))})
        return pa.Table.from_pylist(out)

    dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        call,
        batch_size=1,
        batch_format="pyarrow",
        num_cpus=1,  # Ray Data retries a task whose worker dies (its default: without end)
    )
    found: dict[int, dict[str, Any]] = {}
    try:
        for row in dataset.iter_rows():
            found[int(row["k"])] = json.loads(row["figures"])
            if on_done is not None:
                on_done(len(found), len(items))
    except Exception as exc:
        cause = task_cause(exc)
        if cause is not None:
            raise cause from None
        raise
    return [found[k] for k in range(len(items))]


def task_cause(exc: BaseException) -> BaseException | None:
    """The error a task raised, from the exceptions Ray wraps it in: one of neardup's, else an
    OSError (a file of the work location that cannot be read, say); None if neither."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    found: list[BaseException] = []
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if type(e).__module__.startswith(("neardup", "builtins")) and isinstance(e, NeardupError | OSError):
            found.append(e)
        stack.extend([getattr(e, "cause", None), e.__cause__, e.__context__])
    ours = [e for e in found if isinstance(e, NeardupError)]
    return (ours or found or [None])[0]
