"""Ray engine benchmark: ``neardup dedup --engine ray`` against the local engine, end to end.

Generates ``--n`` English-like documents with planted near-duplicates into a JSON Lines file
under ``benchmarks/out/`` (kept and reused): ``scale.generate`` writes the Parquet corpus a
generated batch at a time and ``scale.to_jsonl`` turns it into JSON Lines a batch at a time,
with the names ``benchmarks/scale.py --jsonl`` uses, so neither script holds the corpus in
memory and each reuses the other's files. Then it runs, each ``--repeat`` times:

``local``        ``neardup dedup CORPUS -o OUT --id-column id -q --json``
``ray-local``    the same with ``--engine ray``: the command starts Ray itself with all CPUs
``ray-cluster``  (with ``--cluster``) the same with ``--ray-address IP:PORT``, on a two-node
                 cluster of one CPU per node that this script starts on this machine beforehand
                 (``ray start --head --num-cpus 1 ...``, then a second ``ray start --address``)
                 and stops afterwards, even when a run fails

Each run is a process of its own. For each run it records the wall seconds, MB/s per core
(input bytes / 10^6 / wall seconds / cores), the seconds per stage and the bytes shuffled per
stage from the run's ``summary.json``, and the resident memory of the run's processes, sampled
every ``--interval`` s with psutil: the command and all its descendants, and every process of
the two-node cluster (gcs_server, raylets, agents, workers ``ray::...``). It reports the peak of
the largest single process and the peak of the sum. The sum counts a page shared by several
processes (the object store's shared memory, libraries) once per process, so it is an upper
bound on the memory the run took. Every output table of a Ray run (its part files concatenated
in name order) is compared byte for byte with the local engine's file of the same table.

    .venv/bin/python benchmarks/ray_engine.py --n 20000 --repeat 1
    .venv/bin/python benchmarks/ray_engine.py --n 20000 --repeat 1 --cluster
    .venv/bin/python benchmarks/ray_engine.py --n 100000 --repeat 3 --cluster
    .venv/bin/python benchmarks/ray_engine.py --n 1000000 --repeat 1 --cluster

Results go to ``benchmarks/out/ray-<n>.json``; a Markdown table for RESULTS.md is printed.
The runs' output folders (under ``benchmarks/out/ray-out-<n>/``, next to each run's stderr
and the cluster's log) are removed afterwards unless ``--keep-outputs`` is given.

How the cluster is run, and why:

* Ray 2.60 authenticates with a token: ``ray get-auth-token --generate`` makes one (in
  ``~/.ray/auth_token``) if there is none, and ``RAY_AUTH_MODE=token`` is set for both
  ``ray start`` commands and the command that connects.
* The address is this machine's non-loopback IPv4 address (``hostname -I``, else the address a
  UDP socket would send from), since Ray given 127.0.0.1 failed; the port is a free one unless
  ``--port`` is given.
* Every Ray process of this script (the two-node cluster, and the Ray a ``ray-local`` run
  starts) gets a private ``RAY_TMPDIR`` under /tmp and an environment variable naming this
  invocation. The private directory keeps the cluster's ``ray_current_cluster`` file out of
  ``/tmp/ray``, where a ``ray.init()`` without an address anywhere else on the machine (other
  test sessions, say) would find it and join this cluster; the variable is how the sampler and
  the stop find this script's processes and no one else's.
* The cluster is stopped by ending those processes, by their ids (raylets first, gcs_server
  last), not with ``ray stop --force``, which ends every Ray process of the user on the
  machine, other sessions' included. ``--ray-stop-all`` runs ``ray stop --force`` afterwards
  as well, on a machine where this script is the only user of Ray.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil

from common import machine_info, markdown_table
from neardup.io.writers import OUTPUT_TABLES
from scale import OUT, generate, to_jsonl

TAG_VARIABLE = "NEARDUP_RAY_BENCH"
"""Set, to one value per invocation, in the environment of every process this script starts."""
ENGINES = ("local", "ray-local", "ray-cluster")
MB = 10**6
RAY_KINDS = ("raylet", "gcs_server")


# -- the corpus -------------------------------------------------------------------------------


def corpus(args: argparse.Namespace) -> Path:
    """The JSON Lines corpus of ``args.n`` documents, generated (by way of Parquet, a batch at a
    time) unless it is there already; the same files as ``scale.py --jsonl`` makes."""
    parquet = OUT / f"synthetic-{args.n}-w{args.words}-s{args.seed}.parquet"
    jsonl = parquet.with_suffix(".jsonl")
    if not jsonl.exists():
        if not parquet.exists():
            generate(
                parquet,
                args.n,
                batch=args.gen_batch,
                seed=args.seed,
                dup_fraction=args.dup_fraction,
                words=args.words,
            )
        print(f"writing {jsonl.name}", file=sys.stderr)
        to_jsonl(parquet, jsonl)
    return jsonl


# -- this invocation's processes ---------------------------------------------------------------


class Processes:
    """The processes of this invocation: a root's descendants, and those whose environment
    carries ``tag`` (the cluster's daemons, which ``ray start`` leaves without a parent here).
    What a process is and whether it is tagged is looked up once per process."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._tagged: dict[tuple[int, float], bool] = {}
        self._script: dict[tuple[int, float], str] = {}

    def _key(self, p: psutil.Process) -> tuple[int, float]:
        return (int(p.info["pid"]), float(p.info["create_time"] or 0.0))

    def tagged(self, p: psutil.Process) -> bool:
        key = self._key(p)
        if key not in self._tagged:
            try:
                self._tagged[key] = p.environ().get(TAG_VARIABLE) == self.tag
            except (psutil.Error, OSError):
                self._tagged[key] = False
        return self._tagged[key]

    def kind(self, p: psutil.Process) -> str:
        """``neardup``, ``raylet``, ``gcs_server``, ``ray worker``, a Ray agent or helper."""
        name = str(p.info["name"] or "")
        if name.startswith("ray::"):  # the process title Ray sets (comm keeps 15 characters)
            if name.startswith("ray::Dashboard"):
                return "ray::DashboardAgent"
            if name.startswith("ray::RuntimeEnv"):
                return "ray::RuntimeEnvAgent"
            return "ray worker"
        if not name.startswith("python"):
            return name
        key = self._key(p)
        if key not in self._script:
            try:
                cmd = p.cmdline()
            except (psutil.Error, OSError):
                cmd = []
            path = next((a for a in cmd[1:3] if a.endswith(".py")), "")
            script = Path(path).name
            if "neardup.cli" in cmd or any(Path(a).name == "neardup" for a in cmd[1:2]):
                script = "neardup"
            elif script == "default_worker.py":
                script = "ray worker"
            elif path.endswith("dashboard/agent.py"):  # before they set their titles
                script = "ray::DashboardAgent"
            elif path.endswith("runtime_env/agent/main.py"):
                script = "ray::RuntimeEnvAgent"
            self._script[key] = script or name
        return self._script[key]

    def ours(self, root: int | None = None, tagged: bool = True) -> list[psutil.Process]:
        """``root`` and its descendants, and (unless not ``tagged``) the tagged processes and theirs."""
        me = os.getpid()
        children: dict[int, list[psutil.Process]] = defaultdict(list)
        starts: list[psutil.Process] = []
        for p in psutil.process_iter(["pid", "ppid", "name", "create_time"]):
            children[int(p.info["ppid"] or 0)].append(p)
            if p.info["pid"] != me and (p.info["pid"] == root or (tagged and self.tagged(p))):
                starts.append(p)
        seen: dict[int, psutil.Process] = {}
        stack = list(starts)
        while stack:
            p = stack.pop()
            if p.info["pid"] not in seen and p.info["pid"] != me:
                seen[p.info["pid"]] = p
                stack.extend(children.get(p.info["pid"], []))
        return list(seen.values())

    def foreign_ray(self, ours: Sequence[psutil.Process]) -> int:
        """How many Ray daemons and workers on the machine are not this invocation's."""
        mine = {p.info["pid"] for p in ours}
        count = 0
        for p in psutil.process_iter(["pid", "name"]):
            name = str(p.info["name"] or "")
            if p.info["pid"] not in mine and (name in RAY_KINDS or name.startswith("ray::")):
                count += 1
        return count


class Sampler:
    """Resident memory of a run's processes every ``interval`` seconds, in a thread: the peak
    of the largest single process (and its kind), the peak of the sum, the peak per kind."""

    def __init__(self, procs: Processes, root: int, interval: float) -> None:
        self.procs = procs
        self.root = root
        self.interval = interval
        self.peak_single = 0
        self.peak_single_kind = ""
        self.peak_sum = 0
        self.peak_processes = 0
        self.peak_by_kind: dict[str, int] = {}
        self.foreign_ray = 0
        self.samples = 0
        self.cpu_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        ours = self.procs.ours(self.root)
        total = 0
        for p in ours:
            try:
                rss = int(p.memory_info().rss)
            except (psutil.Error, OSError):
                continue
            kind = self.procs.kind(p)
            total += rss
            self.peak_by_kind[kind] = max(self.peak_by_kind.get(kind, 0), rss)
            if rss > self.peak_single:
                self.peak_single, self.peak_single_kind = rss, kind
        self.peak_sum = max(self.peak_sum, total)
        self.peak_processes = max(self.peak_processes, len(ours))
        if self.samples % 25 == 0:  # every 5 s at 0.2 s: other sessions' Ray on the machine
            self.foreign_ray = max(self.foreign_ray, self.procs.foreign_ray(ours))
        self.samples += 1

    def _run(self) -> None:
        t0 = time.thread_time()
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                break
        self.cpu_seconds = time.thread_time() - t0

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        return {
            "peak_rss_largest_process_bytes": self.peak_single,
            "largest_process": self.peak_single_kind,
            "peak_rss_sum_bytes": self.peak_sum,
            "peak_processes": self.peak_processes,
            "peak_rss_by_kind_bytes": dict(sorted(self.peak_by_kind.items())),
            "samples": self.samples,
            "sampler_cpu_seconds": round(self.cpu_seconds, 2),
            "other_ray_processes_on_machine": self.foreign_ray,
        }


def end(procs: Sequence[psutil.Process], kind_of: Processes, timeout: float = 15.0) -> list[str]:
    """End ``procs`` by their ids: raylets first, gcs_server last, each asked to terminate, then
    killed if still there after ``timeout`` seconds; returns the kinds it ended."""
    rank = {"raylet": 0, "gcs_server": 2}
    ordered = sorted(procs, key=lambda p: rank.get(kind_of.kind(p), 1))
    kinds = [kind_of.kind(p) for p in ordered]
    for p in ordered:
        with suppress(psutil.NoSuchProcess):
            p.terminate()
        if kind_of.kind(p) == "raylet":
            with suppress(psutil.Error):
                p.wait(5)  # a raylet ends its workers itself
    _, alive = psutil.wait_procs(ordered, timeout=timeout)
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=5)
    return kinds


# -- the two-node cluster ---------------------------------------------------------------------


def machine_ip() -> str:
    """This machine's first non-loopback IPv4 address: from ``hostname -I``, else the one a UDP
    socket would send from (no packet is sent)."""
    try:
        found = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout
    except OSError:
        found = ""
    for address in found.split():
        if ":" not in address and not address.startswith("127."):
            return address
    for target in ("10.255.255.255", "192.0.2.1", "8.8.8.8"):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((target, 1))
                address = str(s.getsockname()[0])
        except OSError:
            continue
        if not address.startswith(("127.", "0.")):
            return address
    sys.exit("no non-loopback IPv4 address found for the Ray cluster")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _ray(args: Sequence[str], env: dict[str, str], log: Path) -> None:
    cmd = [str(Path(sys.executable).with_name("ray")), *args]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(['ray', *args])}\n")
        fh.flush()
        done = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"ray {' '.join(args)} failed ({done.returncode}):\n{tail}")


@contextmanager
def two_node_cluster(
    env: dict[str, str], procs: Processes, port: int, log: Path, ray_stop_all: bool
) -> Iterator[dict[str, Any]]:
    """A head node and a worker node of one CPU each on this machine; yields the address and
    what starting it took, and ends the cluster's processes afterwards, whatever happened."""
    ip = machine_ip()
    port = port or free_port()
    address = f"{ip}:{port}"
    env = {**env, "RAY_AUTH_MODE": "token"}
    store = "300000000"
    facts: dict[str, Any] = {"address": address, "log": str(log)}
    t0 = time.perf_counter()
    try:
        # the token (in ~/.ray/auth_token) is read there by every process of the cluster; not shown
        done = subprocess.run(
            [str(Path(sys.executable).with_name("ray")), "get-auth-token", "--generate"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(f"ray get-auth-token --generate failed:\n{done.stderr}")
        head = ["start", "--head", "--num-cpus", "1", "--port", str(port), "--object-store-memory", store]
        _ray([*head, "--include-dashboard", "false", "--disable-usage-stats"], env, log)
        worker = ["start", "--address", address, "--num-cpus", "1", "--object-store-memory", store]
        _ray([*worker, "--disable-usage-stats"], env, log)
        facts["start_seconds"] = round(time.perf_counter() - t0, 2)
        idle = Sampler(procs, -1, 0.2)
        time.sleep(1.0)
        facts["idle"] = idle.stop()
        yield facts
    finally:
        ended = end(procs.ours(), procs)
        facts["ended"] = ended
        if ray_stop_all:
            subprocess.run(
                [str(Path(sys.executable).with_name("ray")), "stop", "--force"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        print(f"cluster stopped: {len(ended)} processes ended", file=sys.stderr)


# -- one run ----------------------------------------------------------------------------------


def command(
    corpus_path: Path, out: Path, engine: str, address: str | None, partitions: int | None
) -> list[str]:
    cmd = ["dedup", str(corpus_path), "-o", str(out), "--id-column", "id", "-q", "--json"]
    if engine != "local":
        cmd += ["--engine", "ray"]
        if address is not None:
            cmd += ["--ray-address", address]
        if partitions is not None:
            cmd += ["--partitions", str(partitions)]
    return cmd


def run_once(
    label: str,
    cmd: list[str],
    out: Path,
    env: dict[str, str],
    procs: Processes,
    *,
    input_bytes: int,
    cores: int,
    interval: float,
) -> dict[str, Any]:
    """One command in a process of its own, its memory sampled; its figures and summary."""
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_name(out.name + ".log")
    load_before = os.getloadavg()
    with open(log, "w", encoding="utf-8") as fh:
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "neardup.cli", *cmd], env=env, stdout=subprocess.DEVNULL, stderr=fh
        )
        sampler = Sampler(procs, child.pid, interval)
        try:
            returncode = child.wait()
        except BaseException:  # interrupted: the command and the Ray it started go too
            sampler.stop()
            end(procs.ours(child.pid, tagged=False), procs)
            raise
        wall = time.perf_counter() - t0
    memory = sampler.stop()
    res: dict[str, Any] = {
        "engine": label,
        "command": " ".join(["neardup", *cmd]),
        "returncode": returncode,
        "wall_seconds": round(wall, 2),
        "mb_per_s_per_core": round(input_bytes / MB / wall / cores, 3),
        "memory": memory,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    if label == "ray-local":  # what the command's own Ray left behind: nothing, if it shut down
        deadline = time.monotonic() + 10
        while (left := procs.ours()) and time.monotonic() < deadline:
            time.sleep(0.5)
        res["left_running"] = [procs.kind(p) for p in left]
        if left:
            end(left, procs)
    if returncode:
        res["stderr"] = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        print(f"{label}: {res['command']} failed ({returncode}):\n{res['stderr']}", file=sys.stderr)
        return res
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    engine = summary["engine"]
    res.update(
        mode=engine["mode"],
        seconds=summary["seconds"],
        engine_total_seconds=engine.get("total_seconds", summary["seconds"].get("total")),
        # in the order the stages ran (summary.json has its keys sorted)
        stage_seconds=(
            {
                s: engine["stage_seconds"][s]
                for s in [*engine["stages_run"], *sorted(engine["stage_seconds"])]
                if s in engine["stage_seconds"]
            }
            if "stage_seconds" in engine
            else None
        ),
        bytes_shuffled=engine.get("bytes_shuffled"),
        ray=engine.get("ray"),
        splits=engine.get("splits"),
        partitions=engine.get("partitions"),
        input_rows=summary["input_rows"],
        candidate_pairs=summary["candidate_pairs"],
        edges=summary["edges"],
        clusters=summary["clusters"],
        duplicates_removed=summary["duplicates_removed"],
    )
    return res


# -- the output check -------------------------------------------------------------------------


def same_bytes(whole: Path, parts: Sequence[Path]) -> bool:
    """Whether the ``parts``, one after another, hold exactly the bytes of ``whole``."""
    with open(whole, "rb") as fa:
        for part in parts:
            with open(part, "rb") as fb:
                while chunk := fb.read(1 << 24):
                    if fa.read(len(chunk)) != chunk:
                        return False
        return fa.read(1) == b""


def compare_outputs(local: Path, ray: Path) -> dict[str, Any]:
    """Each table of the Ray run (its part files concatenated in name order) against the
    local engine's file of that table."""
    tables: dict[str, Any] = {}
    for name in OUTPUT_TABLES:
        whole = local / f"{name}.jsonl"
        parts = sorted((ray / name).glob("part-*")) if (ray / name).is_dir() else []
        if not whole.exists() and not parts:
            continue
        same = whole.exists() and (ray / name).is_dir() and same_bytes(whole, parts)
        tables[name] = {
            "same": same,
            "bytes": whole.stat().st_size if whole.exists() else None,
            "parts": len(parts),
        }
    needed = all(tables.get(t, {}).get("same") for t in ("annotated", "clusters"))
    return {"same": needed and all(t["same"] for t in tables.values()), "tables": tables}


# -- the report -------------------------------------------------------------------------------


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of the runs' figures (stage by stage for the stages' seconds)."""
    ok = [r for r in runs if r["returncode"] == 0]
    if not ok:
        return {"failed": True}

    def med(values: list[float]) -> float:
        return round(float(statistics.median(values)), 4)

    out: dict[str, Any] = {
        "runs": len(ok),
        "wall_seconds": med([r["wall_seconds"] for r in ok]),
        "mb_per_s_per_core": med([r["mb_per_s_per_core"] for r in ok]),
        "engine_total_seconds": med([r["engine_total_seconds"] for r in ok]),
        "peak_rss_largest_process_bytes": int(
            med([r["memory"]["peak_rss_largest_process_bytes"] for r in ok])
        ),
        "peak_rss_sum_bytes": int(med([r["memory"]["peak_rss_sum_bytes"] for r in ok])),
        "largest_process": statistics.mode([r["memory"]["largest_process"] for r in ok]),
        "seconds": {k: med([r["seconds"].get(k, 0.0) for r in ok]) for k in ok[0]["seconds"]},
    }
    if ok[0].get("stage_seconds"):
        stages = list(ok[0]["stage_seconds"])
        out["stage_seconds"] = {s: med([r["stage_seconds"].get(s, 0.0) for r in ok]) for s in stages}
        out["bytes_shuffled"] = ok[0]["bytes_shuffled"]
        out["bytes_shuffled_same_every_run"] = all(r["bytes_shuffled"] == ok[0]["bytes_shuffled"] for r in ok)
    return out


def tables(res: dict[str, Any]) -> str:
    """The Markdown for RESULTS.md: one row per engine, then the Ray stages."""
    rows = []
    for label, e in res["engines"].items():
        m = e["median"]
        if m.get("failed"):
            rows.append([label, "failed", "", "", "", "", "", ""])
            continue
        ray = next((r["ray"] for r in e["runs"] if r.get("ray")), None)
        where = "" if ray is None else f"{ray['address']}, {ray['nodes']} node(s), {ray['cpus']} CPUs"
        check = e.get("same_as_local")
        if check is None:
            same = "reference"
        elif check["same"]:
            same = f"yes ({len(check['tables'])} tables)"
        else:
            same = "**no**: " + ", ".join(t for t, v in check["tables"].items() if not v["same"])
        rows.append(
            [
                label,
                where,
                f"{m['wall_seconds']:.2f}",
                f"{m['mb_per_s_per_core']:.2f}",
                f"{m['engine_total_seconds']:.2f}",
                f"{m['peak_rss_largest_process_bytes'] / MB:.0f} ({m['largest_process']})",
                f"{m['peak_rss_sum_bytes'] / MB:.0f}",
                same,
            ]
        )
    header = ["engine", "Ray", "wall s", "MB/s per core", "summary total s"]
    header += ["peak RSS, largest process MB", "peak RSS, sum MB", "output = local's"]
    text = [markdown_table(header, rows)]
    ray_labels = [k for k, e in res["engines"].items() if e["median"].get("stage_seconds")]
    if ray_labels:
        stages: list[str] = []
        for k in ray_labels:
            stages += [s for s in res["engines"][k]["median"]["stage_seconds"] if s not in stages]
        head = ["stage"]
        for k in ray_labels:
            head += [f"{k} s", f"{k} MB shuffled"]
        srows = []
        for s in stages:
            row = [s]
            for k in ray_labels:
                m = res["engines"][k]["median"]
                row.append(f"{m['stage_seconds'][s]:.2f}" if s in m["stage_seconds"] else "")
                row.append(f"{m['bytes_shuffled'].get(s, 0) / MB:.2f}" if s in m["stage_seconds"] else "")
            srows.append(row)
        text += ["", markdown_table(head, srows)]
    local = res["engines"].get("local", {}).get("median", {})
    if local.get("seconds"):
        stages_text = ", ".join(f"{k} {v:.2f}" for k, v in local["seconds"].items() if k != "total")
        text += ["", f"local engine stages (s): {stages_text}"]
    text += [
        "",
        f"{res['n']:,} documents, {res['corpus_bytes'] / MB:,.1f} MB of JSON Lines, {res['cores']} cores, "
        f"median of {res['repeat']} run(s); MB = 10^6 bytes.",
    ]
    return "\n".join(text)


# -- main -------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="documents (default 100,000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each engine; the median is reported")
    ap.add_argument("--cluster", action="store_true", help="also run on a two-node cluster started here")
    ap.add_argument("--partitions", type=int, help="--partitions for the Ray runs (default: the engine's)")
    ap.add_argument("--port", type=int, default=0, help="the head node's port (default: a free one)")
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between memory samples")
    ap.add_argument("--words", type=int, default=300, help="mean words per document (default 300)")
    ap.add_argument("--dup-fraction", type=float, default=0.1, help="planted near-duplicates (default 0.1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-batch", type=int, default=50_000, help="documents per generator call")
    ap.add_argument("--keep-outputs", action="store_true", help="keep the runs' output folders")
    ap.add_argument(
        "--ray-stop-all",
        action="store_true",
        help="after the cluster's processes are ended, also run `ray stop --force`, which ends "
        "every Ray process of this user on the machine",
    )
    ap.add_argument("--out", type=Path, help="JSON results (default benchmarks/out/ray-<n>.json)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    OUT.mkdir(parents=True, exist_ok=True)
    corpus_path = corpus(args)
    input_bytes = corpus_path.stat().st_size
    cores = len(os.sched_getaffinity(0))
    tag = uuid.uuid4().hex
    procs = Processes(tag)
    ray_tmp = tempfile.mkdtemp(prefix="ndb-ray-", dir="/tmp")  # short: Ray's socket paths live here
    env = {**os.environ, TAG_VARIABLE: tag, "RAY_TMPDIR": ray_tmp, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    outs = OUT / f"ray-out-{args.n}"
    res: dict[str, Any] = {
        "n": args.n,
        "corpus": str(corpus_path),
        "corpus_bytes": input_bytes,
        "cores": cores,
        "repeat": args.repeat,
        "command": " ".join(["benchmarks/ray_engine.py", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(),
        "engines": {},
    }
    failed = False

    def runs(label: str, address: str | None) -> None:
        nonlocal failed
        done = []
        for k in range(args.repeat):
            out = outs / f"{label}-{k}"
            cmd = command(corpus_path, out, label, address, args.partitions)
            print(f"{label} run {k + 1}/{args.repeat}: neardup {' '.join(cmd)}", file=sys.stderr)
            r = run_once(
                label,
                cmd,
                out,
                env_for(label),
                procs,
                input_bytes=input_bytes,
                cores=cores,
                interval=args.interval,
            )
            if r["returncode"] == 0 and label != "local":
                r["same_as_local"] = compare_outputs(outs / "local-0", out)
                failed |= not r["same_as_local"]["same"]
            failed |= r["returncode"] != 0
            if not args.keep_outputs and not (label == "local" and k == 0):
                shutil.rmtree(out, ignore_errors=True)
            print(
                f"  {r['wall_seconds']} s, {r['memory']['peak_rss_sum_bytes'] / MB:.0f} MB", file=sys.stderr
            )
            done.append(r)
        entry: dict[str, Any] = {"runs": done, "median": median_run(done)}
        if label != "local":
            checks = [r["same_as_local"] for r in done if "same_as_local" in r]
            entry["same_as_local"] = {  # every run's check passed (no run that finished: failed)
                "same": bool(checks) and all(c["same"] for c in checks),
                "tables": checks[0]["tables"] if checks else {},
            }
        res["engines"][label] = entry

    def env_for(label: str) -> dict[str, str]:
        return {**env, "RAY_AUTH_MODE": "token"} if label == "ray-cluster" else env

    try:
        runs("local", None)
        if res["engines"]["local"]["runs"][0]["returncode"]:
            sys.exit("the local engine failed: nothing to compare the Ray runs with")
        runs("ray-local", None)
        if args.cluster:
            outs.mkdir(parents=True, exist_ok=True)
            try:
                with two_node_cluster(
                    env, procs, args.port, outs / "cluster.log", args.ray_stop_all
                ) as facts:
                    res["cluster"] = facts
                    runs("ray-cluster", facts["address"])
            except RuntimeError as exc:  # the cluster did not start
                print(exc, file=sys.stderr)
                res["cluster"] = {"error": str(exc)}
                failed = True
    finally:
        if not args.keep_outputs:
            shutil.rmtree(outs / "local-0", ignore_errors=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    path = args.out or OUT / f"ray-{args.n}.json"
    path.write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(tables(res))
    print(f"\nresults: {path}", file=sys.stderr)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
