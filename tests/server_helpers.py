"""Start a real ``neardup serve`` process for the service tests, and stop it after."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from conftest import free_port

NEARDUP = str(Path(sys.executable).with_name("neardup"))
KEYS = {
    "read": "read-key-0123456789abcdef",
    "write": "write-key-0123456789abcdef",
    "admin": "admin-key-0123456789abcdef",
}
CORPUS = {
    "harbour": "The harbour opens at dawn for the fishing boats and closes at dusk.",
    "market": "The market sells fresh bread, cheese and olives every Saturday morning.",
    "library": "The city library lends books, maps and old newspapers to every resident.",
}


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    index: str

    def client(self, scope: str | None = "admin") -> httpx.Client:
        headers = {} if scope is None else {"Authorization": f"Bearer {KEYS[scope]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def write_keys(folder: Path) -> Path:
    path = folder / "keys.txt"
    lines = ["# neardup API keys: KEY SCOPE"] + [f"{key} {scope}" for scope, key in KEYS.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def build_index(folder: Path, index: str, *, keep_shingles: bool = False, containment: bool = False) -> None:
    """An index of :data:`CORPUS` at ``index``."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in CORPUS.items()))
    args = [NEARDUP, "index", "build", str(corpus), "--index", index, "--id-column", "id", "--replace"]
    if keep_shingles:
        args.append("--keep-shingles")
    if containment:
        args.append("--containment")
    subprocess.run(args, check=True, capture_output=True)


def start(
    folder: Path,
    index: str,
    *args: str,
    keys: bool = True,
    port: int | None = None,
    tls_ca: Path | None = None,
) -> Server:
    """``neardup serve`` on ``index`` at a free port, answering /healthz (over HTTPS, trusting
    ``tls_ca``, when given)."""
    port = port or free_port()
    log = folder / f"serve-{port}.log"
    command = [NEARDUP, "serve", "--index", index, "--port", str(port), *args]
    if keys:
        command += ["--api-keys", str(write_keys(folder))]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = Server(f"{'https' if tls_ca else 'http'}://127.0.0.1:{port}", proc, log, index)
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"neardup serve exited {proc.returncode}:\n{server.output()}")
        try:
            verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(tls_ca)) if tls_ca else True
            if httpx.get(f"{server.url}/healthz", timeout=1.0, verify=verify).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"neardup serve did not start:\n{server.output()}")
        time.sleep(0.1)


def stop(server: Server, sig: int = signal.SIGTERM) -> int:
    """Signal the server and wait for it; its exit code."""
    if server.proc.poll() is None:
        server.proc.send_signal(sig)
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
    return server.proc.returncode


@contextmanager
def running(folder: Path, index: str, *args: str, keys: bool = True) -> Iterator[Server]:
    server = start(folder, index, *args, keys=keys)
    try:
        yield server
    finally:
        stop(server)
