"""Hypothesis profiles: ``ci`` (the default) is reproducible and has no deadline,
because the first call of a compiled kernel may load it from numba's cache.

``redis_server``: a real redis-server for the whole session, for the Redis index backend.
``kernel_threads``: every test starts with numba's full thread count."""

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# -- a real redis-server for the index tests -------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16)[:1] in (b"+", b"-")  # -NOAUTH counts: the server is up
    except OSError:
        return False


@contextmanager
def running_redis(workdir: Path, *extra: str) -> Iterator[int]:
    """The port of a redis-server started in ``workdir`` (with ``extra`` arguments), stopped after."""
    exe = shutil.which("redis-server")
    if exe is None:
        message = "redis-server is not on PATH; install it (apt-get install -y redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the Redis index tests", pytrace=False)
        pytest.skip(message)
    port = free_port()
    args = [exe, "--save", "", "--appendonly", "no", "--port", str(port), "--bind", "127.0.0.1", *extra]
    with running_server(
        args,
        log=workdir / "redis.log",
        up=lambda: _answers(port),
        what=f"redis-server on port {port}",
        cwd=workdir,
    ):
        yield port


@contextmanager
def running_server(
    args: list[str],
    *,
    log: Path,
    up: Callable[[], bool],
    what: str,
    cwd: Path | None = None,
    wait: float = 30.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """A server process of ``args`` (its output in ``log``), once ``up()`` says it answers; it is
    stopped after. One that exits or does not answer within ``wait`` seconds fails the test with
    the end of its log."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + wait
            while not up():
                if proc.poll() is not None or time.monotonic() > deadline:
                    out.flush()
                    output = log.read_text(errors="replace")[-2000:]
                    pytest.fail(f"{what} did not start:\n{output}", pytrace=False)
                time.sleep(0.05)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a redis-server this session starts and stops.

    Without redis-server on PATH the tests that use it fail when ``CI`` is set (CI installs it, so
    its absence is a broken set-up) and are skipped otherwise.
    """
    with running_redis(tmp_path_factory.mktemp("redis")) as port:
        yield f"redis://127.0.0.1:{port}/0"


# -- a real Ray for the Ray engine's tests ---------------------------------------------------------

RAY_GROUP = "ray"
"""The xdist group of every test that uses Ray: one test process starts one Ray for them all."""


@pytest.fixture(scope="session")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Ray started in this test process with 2 CPUs (as ``neardup dedup --engine ray`` starts it
    without an address), for the session; runs that find it use it as it is."""
    ray = pytest.importorskip("ray") if not os.environ.get("CI") else __import__("ray")
    spill = tmp_path_factory.mktemp("ray-spill")
    ray.init(
        num_cpus=2,
        object_store_memory=256 << 20,
        include_dashboard=False,
        log_to_driver=False,
        object_spilling_directory=str(spill),
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(autouse=True)
def as_a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run made inside the test process checks its memory as a fresh ``neardup dedup`` would:
    the process's own (``PROCESS_MEMORY``) plus what it has grown by since the test began, not a
    test worker's resident memory after hundreds of tests, which would stream runs that a fresh
    process holds. Runs in child processes (tests/test_memory_limit.py) measure the real thing."""
    import neardup.memory as memory

    real = memory.resident_bytes
    base = real()
    monkeypatch.setattr(memory, "resident_bytes", lambda: memory.PROCESS_MEMORY + max(0, real() - base))


@pytest.fixture(autouse=True)
def kernel_threads() -> None:
    """Every test starts with numba's full thread count: ``neardup dedup --workers N`` run inside
    the test process sets the count for the process, and a later test that runs without
    ``--workers`` would otherwise get the earlier test's count."""
    import numba

    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
