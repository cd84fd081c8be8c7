"""The Ray engine on a real two-node Ray cluster on this machine (``ray start --head`` plus a
second ``ray start --address`` node, one CPU each), through ``neardup dedup --ray-address``:
the local engine's results, a worker killed mid-stage, a driver killed and resumed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from conftest import RAY_GROUP, free_port
from ray_helpers import chain, parts_of, planted, same_outputs, write_jsonl

pytestmark = [pytest.mark.xdist_group(RAY_GROUP)]

NEARDUP = str(Path(sys.executable).with_name("neardup"))
RAY = str(Path(sys.executable).with_name("ray"))


def _node_ip() -> str:
    """This machine's address on its network (Ray's nodes do not reach each other on 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        return str(s.getsockname()[0])


class Cluster:
    """Two Ray nodes started by ``ray start --block``, each in a process group of its own."""

    def __init__(self, root: Path) -> None:
        # Ray's sockets live under the temp dir, and a socket's path may not pass 107 bytes:
        # pytest's folders under xdist are too deep for it
        self.temp = tempfile.mkdtemp(prefix="nd-ray-", dir="/tmp")
        self.ip = _node_ip()
        self.port = free_port()
        self.address = f"{self.ip}:{self.port}"
        self.env = {**os.environ, "RAY_AUTH_MODE": "token"}
        subprocess.run([RAY, "get-auth-token", "--generate"], env=self.env, capture_output=True, check=True)
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        common = ["--num-cpus", "1", "--object-store-memory", str(150 << 20), "--block"]
        self._start(
            root / "head.log",
            ["start", "--head", "--port", str(self.port), "--include-dashboard", "false",
             "--temp-dir", self.temp, *common],
        )  # fmt: skip
        self._wait_for(1)
        self._start(root / "node.log", ["start", "--address", self.address, *common])
        self._wait_for(2)

    def _start(self, log: Path, args: list[str]) -> None:
        self.logs.append(log)
        with log.open("wb") as out:
            self.nodes.append(
                subprocess.Popen(
                    [RAY, *args], env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    def _wait_for(self, count: int) -> None:
        probe = (
            f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and all(node.poll() is None for node in self.nodes):
            try:
                done = subprocess.run(
                    [sys.executable, "-c", probe], env=self.env, capture_output=True, text=True, timeout=60
                )
            except subprocess.TimeoutExpired:
                continue
            if done.returncode == 0 and done.stdout.strip().endswith(str(count)):
                return
            time.sleep(1)
        logs = "\n".join(log.read_text(errors="replace")[-1500:] for log in self.logs)
        pytest.fail(f"the Ray cluster at {self.address} did not reach {count} nodes:\n{logs}", pytrace=False)

    def busy_worker(self) -> psutil.Process | None:
        """A worker process of this cluster running a task (its title names the operator; its
        raylet descends from one of this cluster's ``ray start``)."""
        ours = {node.pid for node in self.nodes}
        for proc in psutil.process_iter(["cmdline"]):
            try:
                title = " ".join(proc.info["cmdline"] or [])
                if title.startswith("ray::MapBatches") and ours & {p.pid for p in proc.parents()}:
                    return proc
            except psutil.Error:
                continue
        return None

    def stop(self) -> None:
        for node in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, signal.SIGKILL)
            node.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    started = Cluster(root)
    try:
        yield started
    finally:
        started.stop()
        shutil.rmtree(started.temp, ignore_errors=True)


def _corpus(tmp: Path) -> Path:
    """Planted near-duplicates and a chain of 1,000 (many components rounds), in one file."""
    return write_jsonl(tmp / "c.jsonl", planted(1500) + chain())


SETTINGS = ["--threshold", "0.75", "--ngram", "3", "--id-column", "id"]


def _local(corpus: Path, tmp: Path) -> Path:
    subprocess.run([NEARDUP, "dedup", str(corpus), "-o", str(tmp / "local"), "-q", *SETTINGS], check=True)
    return tmp / "local"


def _ray_args(corpus: Path, out: Path, cluster: Cluster, *extra: str) -> list[str]:
    return [NEARDUP, "dedup", str(corpus), "-o", str(out), "-q", "--json", *SETTINGS,
            "--engine", "ray", "--ray-address", cluster.address, "--partitions", "3", *extra]  # fmt: skip


def test_the_cli_on_two_nodes_gives_the_local_engines_results(cluster: Cluster, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    done = subprocess.run(
        _ray_args(corpus, tmp_path / "ray", cluster),
        env=cluster.env,
        capture_output=True,
        text=True,
        check=True,
    )
    summary = json.loads(done.stdout)
    assert summary["engine"]["ray"] == {"address": cluster.address, "nodes": 2, "cpus": 2}
    same_outputs(_local(corpus, tmp_path), tmp_path / "ray")


def _wait(condition: object, run: subprocess.Popen[str], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if run.poll() is not None:
            pytest.fail(
                f"the run ended before {what}: {run.stderr.read() if run.stderr else ''}", pytrace=False
            )
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}", pytrace=False)
        time.sleep(0.02)


def test_workers_killed_in_the_signature_and_clustering_stages(cluster: Cluster, tmp_path: Path) -> None:
    """Ray runs the lost tasks again; the result is the one an undisturbed run gives."""
    corpus = _corpus(tmp_path)
    work = tmp_path / "work"
    run = subprocess.Popen(
        _ray_args(corpus, tmp_path / "ray", cluster, "--work-dir", str(work), "--split-size", "2KiB"),
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed: list[int] = []

    def kill_during(stage_started: Path, stage_done: Path) -> None:
        def busy() -> bool:
            if not stage_started.exists() or stage_done.exists():
                return False
            worker = cluster.busy_worker()
            if worker is None:
                return False
            worker.kill()
            killed.append(worker.pid)
            return True

        _wait(busy, run, f"a worker busy before {stage_done.name}")

    kill_during(work / "signatures", work / "stages" / "signatures.json")
    kill_during(work / "stages" / "large-star-0.json", work / "stages" / "members.json")
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err
    assert len(set(killed)) == 2
    assert json.loads(out)["engine"]["stages_resumed"] == []
    same_outputs(_local(corpus, tmp_path), tmp_path / "ray")


def test_a_killed_driver_resumes_from_its_finished_stages(cluster: Cluster, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    work = tmp_path / "work"
    args = _ray_args(corpus, tmp_path / "ray", cluster, "--work-dir", str(work))
    run = subprocess.Popen(args, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait(lambda: (work / "stages" / "verify.json").exists(), run, "the verify stage finished")
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert not (tmp_path / "ray" / "summary.json").exists()
    done = subprocess.run(args, env=cluster.env, capture_output=True, text=True, check=True)
    summary = json.loads(done.stdout)
    assert {"signatures", "buckets", "pairs", "documents", "verify"} <= set(
        summary["engine"]["stages_resumed"]
    )
    assert "signatures" not in summary["engine"]["stages_run"]
    same_outputs(_local(corpus, tmp_path), tmp_path / "ray")
    assert parts_of(tmp_path / "ray" / "deduped")
