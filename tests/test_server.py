"""``neardup serve`` through a real uvicorn process on 127.0.0.1, on SQLite and on a real
redis-server: the same contract for both."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from server_helpers import CORPUS, KEYS, NEARDUP, Server, build_index, running, start, stop

pytest.importorskip("fastapi")

COPY = "The harbour opens at dawn for the fishing boats, and closes at dusk!"


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp(f"serve-{request.param}")
    if request.param == "sqlite":
        index = str(folder / "idx.db")
    else:
        index = f"{request.getfixturevalue('redis_server')}?prefix=serve-{uuid.uuid4().hex[:8]}"
    build_index(folder, index)
    with running(folder, index) as srv:
        yield srv


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:10]}"


# -- checking ------------------------------------------------------------------------------------


def test_one_text_finds_its_near_copy(server: Server) -> None:
    with server.client("read") as http:
        done = http.post("/v1/check", json={"text": COPY, "id": "q1"})
    assert done.status_code == 200, done.text
    [result] = done.json()["results"]
    assert result["id"] == "q1" and result["is_duplicate"] and not result["inserted"]
    assert [m["id"] for m in result["matches"]] == ["harbour"]
    assert 0.5 <= result["matches"][0]["similarity"] <= 1 and result["matches"][0]["exact"] is False


def test_a_batch_answers_each_text_in_order(server: Server) -> None:
    texts = [
        {"text": CORPUS["market"]},
        {"text": "Nothing like any indexed text at all, truly."},
        {"text": ""},
    ]
    with server.client("read") as http:
        results = http.post("/v1/check", json={"texts": texts, "top_k": 1}).json()["results"]
    assert [(r["is_duplicate"], [m["id"] for m in r["matches"]]) for r in results] == [
        (True, ["market"]),
        (False, []),
        (False, []),
    ]
    assert [r["id"] for r in results] == [None, None, None]


def test_if_new_inserts_only_what_matched_nothing(server: Server) -> None:
    fresh, again = unique("fresh"), unique("again")
    text = f"A new notice about the ferry timetable {fresh} for the winter season."
    body = {"texts": [{"text": text, "id": fresh}, {"text": COPY, "id": unique("copy")}], "insert": "if_new"}
    with server.client("write") as http:
        first = http.post("/v1/check", json=body).json()["results"]
        second = http.post("/v1/check", json={"text": text + " ", "id": again, "insert": "if_new"}).json()[
            "results"
        ]
        assert [(r["inserted"], r["is_duplicate"]) for r in first] == [(True, False), (False, True)]
        assert second[0]["inserted"] is False and [m["id"] for m in second[0]["matches"]] == [fresh]
        assert http.get(f"/v1/documents/{fresh}").status_code == 200
        assert http.get(f"/v1/documents/{again}").status_code == 404


def test_a_batch_matches_its_own_earlier_inserts(server: Server) -> None:
    a, b = unique("a"), unique("b")
    text = f"The tram line {a} runs from the station to the old town every ten minutes."
    body = {"texts": [{"text": text, "id": a}, {"text": text.upper(), "id": b}], "insert": "if_new"}
    with server.client("write") as http:
        results = http.post("/v1/check", json=body).json()["results"]
    assert [r["inserted"] for r in results] == [True, False]
    assert [m["id"] for m in results[1]["matches"]] == [a]


def test_always_inserts_and_still_reports_matches(server: Server) -> None:
    key = unique("always")
    with server.client("write") as http:
        [result] = http.post("/v1/check", json={"text": COPY, "id": key, "insert": "always"}).json()[
            "results"
        ]
        assert result["inserted"] and result["is_duplicate"] and result["matches"][0]["id"] == "harbour"
        assert http.delete(f"/v1/documents/{key}").json() == {"id": key, "deleted": True}


def test_inserting_needs_an_id_and_the_write_scope(server: Server) -> None:
    with server.client("write") as http:
        done = http.post("/v1/check", json={"text": "x y z", "insert": "if_new"})
    assert done.status_code == 422 and "needs an id" in done.json()["detail"]
    with server.client("read") as http:
        done = http.post("/v1/check", json={"text": "x y z", "id": "k", "insert": "if_new"})
    assert done.status_code == 403 and done.json()["title"] == "Forbidden"


# -- documents -----------------------------------------------------------------------------------


def test_documents_insert_get_delete(server: Server) -> None:
    ids = [unique("doc"), unique("doc")]
    docs = [
        {"id": ids[0], "text": "Alpha beta gamma delta epsilon."},
        {"id": ids[1], "text": "One two three."},
    ]
    before = time.time()
    with server.client("write") as http:
        assert http.post("/v1/documents", json={"documents": docs}).json() == {"inserted": 2}
        got = http.get(f"/v1/documents/{ids[0]}").json()
        assert got["id"] == ids[0] and got["exists"] is True and got["shingles"] == 4
        assert before - 1 <= got["inserted_at"] <= time.time() + 1
        assert http.delete(f"/v1/documents/{ids[0]}").status_code == 200
        missing = http.get(f"/v1/documents/{ids[0]}")
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
        assert http.delete(f"/v1/documents/{ids[0]}").status_code == 404


def test_an_id_with_slashes_is_one_id(server: Server) -> None:
    key = f"https://example.org/{unique('page')}/index.html"
    with server.client("write") as http:
        http.post("/v1/documents", json={"documents": [{"id": key, "text": "A page about boats."}]})
        from urllib.parse import quote

        assert http.get(f"/v1/documents/{quote(key, safe='')}").json()["id"] == key


def test_index_figures_need_admin(server: Server) -> None:
    with server.client("admin") as http:
        figures = http.get("/v1/index").json()
    assert figures["documents"] >= 3 and figures["settings"]["threshold"] == 0.5
    assert figures["backend"] in ("sqlite", "redis") and "url" not in figures
    with server.client("write") as http:
        assert http.get("/v1/index").status_code == 403


# -- auth ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer not-a-key-of-this-server"}, 401),
        ({"Authorization": f"Basic {KEYS['admin']}"}, 401),
        ({"Authorization": f"Bearer {KEYS['read']}x"}, 401),
    ],
    ids=["none", "unknown", "not-bearer", "prefix-of-a-key"],
)
def test_requests_without_a_good_key_are_refused(
    server: Server, headers: dict[str, str], status: int
) -> None:
    done = httpx.post(f"{server.url}/v1/check", json={"text": "x"}, headers=headers)
    assert done.status_code == status
    assert done.headers["www-authenticate"] == "Bearer"
    assert done.json()["status"] == status


def test_keys_never_reach_the_log(server: Server) -> None:
    httpx.post(
        f"{server.url}/v1/check", json={"text": "x"}, headers={"Authorization": "Bearer wrong-key-123"}
    )
    log = server.output()
    assert all(key not in log for key in KEYS.values()) and "wrong-key-123" not in log


def test_health_docs_and_openapi_need_no_key(server: Server) -> None:
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{server.url}/readyz").json() == {"status": "ok"}
    spec = httpx.get(f"{server.url}/openapi.json").json()
    assert {"/v1/check", "/v1/documents", "/v1/index", "/metrics"} <= set(spec["paths"])
    assert httpx.get(f"{server.url}/docs").status_code == 200
    assert httpx.get(f"{server.url}/metrics").status_code == 401


def test_metrics_count_checks_and_duplicates(server: Server) -> None:
    def figure(text: str, name: str) -> float:
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))

    with server.client("admin") as http:
        before = http.get("/metrics").text
        http.post("/v1/check", json={"texts": [{"text": COPY}, {"text": "zzz qqq"}]})
        after = http.get("/metrics").text
    assert figure(after, "neardup_texts_checked_total") - figure(before, "neardup_texts_checked_total") == 2
    assert (
        figure(after, "neardup_duplicates_found_total") - figure(before, "neardup_duplicates_found_total")
        == 1
    )
    assert (
        figure(after, "neardup_index_documents") >= 3
        and figure(after, "neardup_process_resident_bytes") > 1e7
    )
    assert 'neardup_http_request_duration_seconds_bucket{le="0.05",route="/v1/check"}' in after
    assert 'route="/v1/check",status="200"' in after


# -- limits and bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "limit"),
    [
        ({"texts": [{"text": "a"}] * 1001}, 422, "max_texts"),
        ({"text": "a" * 200_001}, 422, "max_text_chars"),
        ({"text": "a", "top_k": 101}, 422, "max_top_k"),
        ({"text": "a", "id": "k" * 257, "insert": "if_new"}, 422, "max_id_chars"),
        ({"text": "a", "id": "", "insert": "if_new"}, 422, "max_id_chars"),
        ({"top_k": 3}, 422, None),
    ],
    ids=["texts", "chars", "top-k", "long-id", "empty-id", "both-shapes-missing"],
)
def test_limits_answer_4xx_naming_the_limit(
    server: Server, body: dict[str, object], status: int, limit: str | None
) -> None:
    with server.client("write") as http:
        done = http.post("/v1/check", json=body)
    assert done.status_code == status, done.text
    assert done.headers["content-type"] == "application/problem+json"
    problem = done.json()
    assert problem["status"] == status and problem["detail"]
    if limit is not None:
        assert problem["limit"] == limit


def test_a_body_past_the_limit_is_413(server: Server) -> None:
    big = json.dumps({"texts": [{"text": "word " * 30_000}] * 60})  # ~9 MB
    with server.client("read") as http:
        done = http.post("/v1/check", content=big, headers={"content-type": "application/json"})
        assert done.status_code == 413 and done.json()["limit"] == "max_body_bytes"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(10):
                yield b" " * (1 << 20)

        done = http.post("/v1/check", content=chunks(), headers={"content-type": "application/json"})
        assert done.status_code == 413


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (b"not json", "body"),
        (b'{"text": 3}', "body.text"),
        (b'{"text": "a", "top_k": "5"}', "body.top_k"),
        (b'{"text": "a", "bogus": true}', "body.bogus"),
        (b'{"texts": [{"text": "a", "idd": "x"}]}', "body.texts.0.idd"),
        (b'{"text": "a", "insert": "sometimes"}', "body.insert"),
        (b'{"text": "\\ud800 lone"}', "text"),
        (b'{"text": "a", "id": "bad\\u0000id", "insert": "always"}', "text.id"),
        (b"[1, 2]", "body"),
        (b"\xff\xfe", "body"),
    ],
)
def test_bad_json_and_types_are_422_saying_where(server: Server, content: bytes, where: str) -> None:
    with server.client("write") as http:
        done = http.post("/v1/check", content=content, headers={"content-type": "application/json"})
    assert done.status_code == 422, done.text
    assert done.json()["detail"].startswith(where)


def test_documents_limits(server: Server) -> None:
    with server.client("write") as http:
        many = http.post(
            "/v1/documents", json={"documents": [{"id": str(i), "text": "a"} for i in range(1001)]}
        )
        long_id = http.post("/v1/documents", json={"documents": [{"id": "i" * 300, "text": "a"}]})
    assert many.status_code == 422 and many.json()["limit"] == "max_texts"
    assert long_id.status_code == 422 and long_id.json()["limit"] == "max_id_chars"


# -- many workers, races, kills ----------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "redis"])
def index_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        url = str(tmp_path / "idx.db")
    else:
        url = f"{request.getfixturevalue('redis_server')}?prefix=race-{uuid.uuid4().hex[:8]}"
    build_index(tmp_path, url)
    return url


def test_racing_if_new_checks_insert_once(tmp_path: Path, index_url: str) -> None:
    """32 concurrent if_new checks of one new text across 2 workers: exactly one insert, and
    every other answer names that one as its match."""
    text = "A brand new announcement about the night bus service starting next month."
    with running(tmp_path, index_url, "--workers", "2") as srv, ThreadPoolExecutor(32) as pool:
        barrier = threading.Barrier(32)

        def check(i: int) -> dict[str, object]:
            with srv.client("write") as http:
                barrier.wait()
                answer = http.post("/v1/check", json={"text": text, "id": f"racer-{i}", "insert": "if_new"})
                assert answer.status_code == 200, answer.text
                result: dict[str, object] = answer.json()["results"][0]
                return result

        results = list(pool.map(check, range(32)))
        inserted = [r["id"] for r in results if r["inserted"]]
        assert len(inserted) == 1
        assert all([m["id"] for m in r["matches"]] == inserted for r in results if not r["inserted"])  # type: ignore[attr-defined]
        with srv.client("admin") as http:
            assert http.get("/v1/index").json()["documents"] == len(CORPUS) + 1
            metrics = http.get("/metrics").text  # both workers' counts, summed
        checked = [line for line in metrics.splitlines() if line.startswith("neardup_texts_checked_total ")]
        assert checked == ["neardup_texts_checked_total 32.0"]


def test_acknowledged_inserts_survive_kill_9(tmp_path: Path, index_url: str) -> None:
    srv = start(tmp_path, index_url, "--workers", "2")
    acknowledged: list[str] = []
    stop_now = threading.Event()

    def insert() -> None:
        with srv.client("write") as http:
            for i in range(100_000):
                if stop_now.is_set():
                    return
                key = f"k{threading.get_ident()}-{i}"
                try:
                    done = http.post(
                        "/v1/documents", json={"documents": [{"id": key, "text": f"text number {i}"}]}
                    )
                except httpx.HTTPError:
                    return
                if done.status_code == 200:
                    acknowledged.append(key)

    threads = [threading.Thread(target=insert) for _ in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120  # killed once enough were acknowledged, however slow the machine
    while len(acknowledged) < 40 and time.monotonic() < deadline and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    subprocess.run(["pkill", "-9", "-P", str(srv.proc.pid)], check=False)  # the workers
    srv.proc.kill()
    srv.proc.wait()
    stop_now.set()
    for t in threads:
        t.join()
    assert len(acknowledged) > 20
    with running(tmp_path, index_url) as again, again.client("read") as http:
        missing = [k for k in acknowledged if http.get(f"/v1/documents/{k}").status_code != 200]
    assert missing == []


def test_sigterm_finishes_the_request_in_flight(tmp_path: Path, index_url: str) -> None:
    srv = start(tmp_path, index_url)
    texts = [{"text": f"word{i} " * 2000, "id": f"big-{i}"} for i in range(300)]
    with ThreadPoolExecutor(1) as pool, srv.client("write") as http:
        pending = pool.submit(http.post, "/v1/check", json={"texts": texts, "insert": "always"})
        time.sleep(0.3)
        srv.proc.send_signal(signal.SIGTERM)
        answer = pending.result(timeout=60)
    assert answer.status_code == 200 and sum(r["inserted"] for r in answer.json()["results"]) == 300
    assert stop(srv) in (0, -signal.SIGTERM)  # uvicorn ends by the signal it was stopped with
    assert "Shutting down" in srv.output() or "Finished server process" in srv.output()


# -- start-up checks ---------------------------------------------------------------------------------


def test_refuses_a_network_address_without_keys(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    done = subprocess.run(
        [NEARDUP, "serve", "--index", index, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.startswith("neardup: error: refusing to listen on 0.0.0.0 without API keys")
    assert "--api-keys" in done.stderr and "--insecure-no-auth" in done.stderr


def test_a_bad_key_file_or_a_missing_index_stops_at_start(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    keys = tmp_path / "bad-keys.txt"
    keys.write_text("short read\n")
    done = subprocess.run(
        [NEARDUP, "serve", "--index", index, "--api-keys", str(keys)], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"neardup: error: {keys}:1: a key must be at least 16 characters\n",
    )
    missing = tmp_path / "none.db"
    done = subprocess.run([NEARDUP, "serve", "--index", str(missing)], capture_output=True, text=True)
    assert done.returncode == 1 and "neardup index build" in done.stderr and not missing.exists()


def test_a_body_that_never_arrives_is_408_not_a_hang(tmp_path: Path) -> None:
    import socket

    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    with running(tmp_path, index, "--timeout", "1") as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(
                b"POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + KEYS["read"].encode()
                + b'\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text": '
            )
            started = time.monotonic()
            answer = conn.recv(4096).decode()
        assert answer.startswith("HTTP/1.1 408") and time.monotonic() - started < 5
        assert httpx.get(f"{srv.url}/healthz").status_code == 200  # the worker goes on


def test_tls_files_are_passed_through(tmp_path: Path) -> None:
    """--ssl-certfile/--ssl-keyfile serve HTTPS that a client trusting the CA can use, and
    plain HTTP is not answered."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    args = ("--ssl-certfile", str(cert_file), "--ssl-keyfile", str(key_file))
    srv = start(tmp_path, index, *args, tls_ca=ca_file)
    try:
        import ssl

        from neardup.client import Client

        trusted = ssl.create_default_context(cafile=str(ca_file))
        with Client(srv.url, api_key=KEYS["read"], verify=trusted) as client:
            assert client.check(COPY)[0].matches[0].key == "harbour"
        with pytest.raises(httpx.HTTPError):
            httpx.get(srv.url.replace("https", "http") + "/healthz", timeout=5)
        with pytest.raises(httpx.HTTPError):  # a client that does not trust the CA refuses
            httpx.get(f"{srv.url}/healthz", timeout=5)
        assert "https://127.0.0.1" in srv.output()
    finally:
        stop(srv)


def test_insecure_no_auth_listens_off_loopback_and_says_so(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    srv = start(tmp_path, index, "--host", "0.0.0.0", "--insecure-no-auth", keys=False)
    try:
        assert httpx.post(f"{srv.url}/v1/check", json={"text": COPY}).status_code == 200  # no key needed
        assert "NO AUTHENTICATION (--insecure-no-auth)" in srv.output()
    finally:
        stop(srv)


def test_an_index_call_past_the_timeout_is_503_with_retry_after(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    with running(tmp_path, index, "--timeout", "0.1") as srv, srv.client("write") as http:
        texts = [{"text": f"word{i} " * 3000, "id": f"slow-{i}"} for i in range(200)]
        answer = http.post("/v1/check", json={"texts": texts, "insert": "always"})
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        assert answer.json()["title"] == "Timed out"
        assert http.get("/healthz").status_code == 200  # the worker goes on answering


def test_without_the_server_extra_the_message_names_it(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index)
    hide = "import sys; sys.modules['uvicorn'] = None; from neardup.cli import run; run()"
    done = subprocess.run(
        [sys.executable, "-c", hide, "serve", "--index", index], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (
        2,
        "neardup: error: neardup serve needs uvicorn: pip install 'neardup[server]'\n",
    )


# -- containment -------------------------------------------------------------------------------

LETTER = (
    "Dear friends, we spent the summer by the sea and every morning we walked down to the water. "
    "The market sells fresh bread, cheese and olives every Saturday morning. "
    "We hope to see you all again next year when the boats come back from the islands."
)


def test_containment_mode_on_a_containment_index(tmp_path: Path) -> None:
    index = str(tmp_path / "idx.db")
    build_index(tmp_path, index, keep_shingles=True, containment=True)
    with running(tmp_path, index) as srv, srv.client("write") as http:
        found = http.post(
            "/v1/check", json={"text": LETTER, "mode": "containment", "direction": "doc_in_query"}
        )
        assert found.status_code == 200, found.text
        [result] = found.json()["results"]
        assert result["is_duplicate"] and result["matches"] == [
            {"id": "market", "containment": 1.0, "exact": True}
        ]
        jaccard = http.post("/v1/check", json={"text": LETTER})
        assert jaccard.json()["results"][0]["matches"] == []  # the letter is not similar to it
        asked = {"mode": "containment", "min_containment": 0.6, "insert": "if_new"}
        added = http.post("/v1/check", json={**asked, "texts": [{"text": LETTER, "id": "letter"}]})
        assert added.json()["results"][0]["inserted"] is True
        again = http.post("/v1/check", json={**asked, "texts": [{"text": LETTER, "id": "letter2"}]})
        [second] = again.json()["results"]
        assert not second["inserted"] and [m["id"] for m in second["matches"]] == ["letter"]
        from neardup.client import AsyncClient, Client
        from neardup.index import ContainmentMatch

        with Client(srv.url, api_key=KEYS["read"]) as client:
            [checked] = client.check_containment(LETTER, min_containment=0.9, direction="doc_in_query")
            assert checked.matches == [  # the letter inserted above, and the sentence it quotes
                ContainmentMatch("letter", 1.0, True),
                ContainmentMatch("market", 1.0, True),
            ]
            assert checked.is_duplicate and not checked.inserted

        async def from_asyncio() -> list[str]:
            async with AsyncClient(srv.url, api_key=KEYS["read"]) as client:
                found = await client.check_containment([LETTER], min_containment=0.6)
                return [m.key for m in found[0].matches]

        import asyncio

        assert asyncio.run(from_asyncio()) == ["letter"]
        key_file = tmp_path / "read.key"
        key_file.write_text(KEYS["read"])
        cli = subprocess.run(
            [NEARDUP, "check", "--server", srv.url, "--api-key-file", str(key_file), "--text", LETTER,
             "--containment", "0.9", "--direction", "doc_in_query", "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert cli.returncode == 3, cli.stderr
        assert json.loads(cli.stdout)["matches"] == [
            {"id": "letter", "containment": 1.0, "exact": True},
            {"id": "market", "containment": 1.0, "exact": True},
        ]
        for bad in ({"min_containment": 0}, {"min_containment": 1.5}, {"direction": "both"}, {"mode": "x"}):
            refused = http.post("/v1/check", json={"text": LETTER, "mode": "containment", **bad})
            assert refused.status_code == 422, refused.text


def test_containment_mode_needs_a_containment_index(server: Server) -> None:
    with server.client("read") as http:
        refused = http.post("/v1/check", json={"text": COPY, "mode": "containment"})
    assert refused.status_code == 409
    assert "mode containment needs an index built for containment search" in refused.json()["detail"]
