"""The README's service session runs as written: its shell lines (the server started in the
background, the curl answer checked against the comment under it), then its client block, with
the README's port 8000 swapped for a free one."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import free_port
from test_readme import BLOCKS, README, SERVICE, _files, run_block

pytest.importorskip("fastapi")
SESSION = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def _commands(block: str) -> list[tuple[str, str | None]]:
    """Each command of a shell block (continuation lines joined), with the comment line under it."""
    joined = block.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines() if line.strip()]
    out: list[tuple[str, str | None]] = []
    for line in lines:
        if line.startswith("# ") and out:
            out[-1] = (out[-1][0], line[2:])
        else:
            out.append((line, None))
    return out


def test_the_service_session_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shutil.which("curl"), "curl is needed for the README's session"
    [session] = SESSION
    _files(tmp_path)
    port = str(free_port())
    env_bin = str(Path(sys.executable).parent)
    env = {"PATH": f"{env_bin}:/usr/bin:/bin"}
    server = None
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 (closed after the server stops)
    try:
        for command, shown in _commands(session):
            command = command.replace("8000", port)
            if command.endswith("&"):
                server = subprocess.Popen(
                    ["bash", "-c", f"exec {command[:-1]}"], cwd=tmp_path, env=env, stdout=log, stderr=log
                )
                _wait(f"http://127.0.0.1:{port}/healthz", server, tmp_path / "serve.log")
                continue
            done = subprocess.run(
                ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, (command, done.stderr)
            if shown is not None:
                assert json.loads(done.stdout) == json.loads(shown), command
        assert server is not None
        monkeypatch.chdir(tmp_path)
        [client_block] = [b for b in BLOCKS if SERVICE in b]
        run_block(client_block.replace("8000", port), "README client block")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        log.close()


def _wait(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text(errors="replace")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"the README's server did not start:\n{log.read_text(errors='replace')}")
