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
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from neardup.errors import ConfigError, NeardupError

OBJECT_STORE_BYTES = 256 << 20
"""The object store of a local-mode run: it holds task descriptions and figures, not data."""


_RESULT = pa.schema([("k", pa.int64()), ("figures", pa.string()), ("error", pa.binary())])
"""A task's answer: its item, its figures (JSON), or the error it raised (pickled)."""


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
            # "local" starts a Ray of our own even where a cluster was started on this machine
            # (without it, ray.init joins the cluster named in its temp folder or RAY_ADDRESS)
            ray.init(address=address or "local", **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"at {address}" if address else "in this process"
            raise ConfigError(f"cannot start or reach Ray {where}: {exc}") from exc
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
    # Ray Data otherwise keeps part of the CPUs in reserve for operators this run does not have:
    # 8 one-second tasks took 7.3 s on 2 CPUs with the reservation and 4.1 s without
    context.op_resource_reservation_enabled = False
    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.WARNING)


def run_tasks(
    name: str,
    items: list[Any],
    work: Callable[[Any], dict[str, Any]],
    on_done: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """``work(item)`` for every item, each a Ray Data task of one CPU, retried when its worker
    dies; returns the figures in item order. An error of neardup's or an OSError raised in a
    task comes back with the task's answer (Ray keeps only its text) and is raised here."""
    if not items:
        return []
    ray = require_ray()
    rows = [{"k": k} for k in range(len(items))]

    def call(batch: pa.Table) -> pa.Table:
        import numba

        numba.set_num_threads(1)  # one CPU per task: the kernels' threads would only contend
        out = []
        for k in batch.column("k").to_pylist():
            try:
                out.append({"k": k, "figures": json.dumps(work(items[k])), "error": b""})
            except (NeardupError, OSError) as exc:  # the input's fault, or the storage's: no retry
                out.append({"k": k, "figures": "", "error": pickle.dumps(exc)})
        return pa.Table.from_pylist(out, schema=_RESULT)

    dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        call,
        batch_size=1,
        batch_format="pyarrow",
        num_cpus=1,  # Ray Data retries a task whose worker dies (its default: without end)
    )
    found: dict[int, dict[str, Any]] = {}
    for row in dataset.iter_rows():
        if row["error"]:
            raise pickle.loads(row["error"])
        found[int(row["k"])] = json.loads(row["figures"])
        if on_done is not None:
            on_done(len(found), len(items))
    return [found[k] for k in range(len(items))]
