"""``neardup.client`` (sync and async) and ``neardup check`` against a real ``neardup serve``,
here on an index that keeps shingles, so matches are exact."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup.client import AsyncClient, Client, ServerError
from neardup.index import Match
from server_helpers import CORPUS, KEYS, NEARDUP, Server, build_index, running

pytest.importorskip("fastapi")
COPY = "The market sells fresh bread, cheese and olives every Saturday morning!"


@pytest.fixture(scope="module")
def exact_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("client")
    index = str(folder / "idx.db")
    build_index(folder, index, keep_shingles=True)
    with running(folder, index) as server:
        yield server


def test_the_client_checks_inserts_and_deletes(exact_server: Server) -> None:
    with Client(exact_server.url, api_key=KEYS["write"]) as client:
        [result] = client.check(COPY)
        assert result.is_duplicate and not result.inserted
        assert result.matches == [Match("market", 1.0, True)]  # exact: the same shingles
        [fresh] = client.check(
            ["A note on the harbour's new lighthouse keeper."], ids=["n1"], insert="if_new"
        )
        assert fresh.inserted and fresh.key == "n1"
        facts = client.document("n1")  # 9 words ("harbour's" is two), 8 distinct 2-grams
        assert facts is not None and facts["shingles"] == 8 and facts["inserted_at"] > 0
        assert client.insert(["n2", "n3"], ["One more text here.", "And another one there."]) == 2
        assert client.delete("n1") and not client.delete("n1") and client.document("n1") is None
        with pytest.raises(ServerError) as refused:
            client.index()  # the write scope cannot read the index's figures
        assert refused.value.status == 403 and refused.value.problem["title"] == "Forbidden"


def test_the_async_client_gives_the_same_answers(exact_server: Server) -> None:
    async def run() -> list[list[Match]]:
        async with AsyncClient(exact_server.url, api_key=KEYS["admin"]) as client:
            figures = await client.index()
            assert figures["settings"]["keep_shingles"] is True
            results = await asyncio.gather(*(client.check(t) for t in (COPY, CORPUS["library"])))
            return [r[0].matches for r in results]

    with Client(exact_server.url, api_key=KEYS["read"]) as sync:
        expected = [sync.check(COPY)[0].matches, sync.check(CORPUS["library"])[0].matches]
    assert asyncio.run(run()) == expected


def test_a_bad_key_is_a_server_error(exact_server: Server) -> None:
    with (
        Client(exact_server.url, api_key="nobody-knows-this-key") as client,
        pytest.raises(ServerError) as err,
    ):
        client.check("x")
    assert err.value.status == 401 and "Bearer" in str(err.value)


def test_check_command_prints_matches_and_exits_3_on_a_duplicate(
    exact_server: Server, tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEYS["read"] + "\n")
    base = [NEARDUP, "check", "--server", exact_server.url, "--api-key-file", str(key_file)]
    done = subprocess.run([*base, "--text", COPY], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (3, "text: market 1.0000 exact\n")
    new = tmp_path / "new.txt"
    new.write_text("Completely unrelated words about volcanic rock formations.")
    done = subprocess.run([*base, "--json", str(new)], capture_output=True, text=True)
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"query": str(new), "is_duplicate": False, "matches": []}
    done = subprocess.run([*base], input=CORPUS["harbour"], capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout.startswith("stdin: harbour 1.0000")


def test_check_command_errors(exact_server: Server, tmp_path: Path) -> None:
    done = subprocess.run(
        [NEARDUP, "check", "--server", exact_server.url, "--text", "x"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "401 Unauthorized" in done.stderr
    done = subprocess.run(
        [NEARDUP, "check", "--server", "http://127.0.0.1:9", "--text", "x"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "cannot reach the server" in done.stderr


def test_check_without_httpx_names_the_extra() -> None:
    import sys

    hide = "import sys; sys.modules['httpx'] = None; from neardup.cli import run; run()"
    done = subprocess.run(
        [sys.executable, "-c", hide, "check", "--server", "http://127.0.0.1:9", "--text", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "neardup: error: neardup check needs httpx: pip install 'neardup[client]'\n",
    )
