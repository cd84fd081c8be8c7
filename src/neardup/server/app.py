"""The ASGI app: routes, authorisation and limits over the index's own calls.

Index calls are blocking (compiled kernels, SQLite, Redis), so each worker runs them on a few
threads of its own (``Limits.index_threads``), each thread with its own handle on the index;
the event loop only parses, checks and renders.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, TypeVar

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from neardup.index import LSHIndex
from neardup.index.checking import CheckResult
from neardup.index.containment import ContainmentCheck
from neardup.server import metrics, openapi, problems
from neardup.server.auth import KeyRing
from neardup.server.auth import Scope as KeyScope
from neardup.server.config import ENV_CONFIG, Limits, ServerConfig
from neardup.server.models import (
    CheckRequest,
    CheckResponse,
    DeletedResponse,
    DocumentOut,
    DocumentsRequest,
    Health,
    IndexOut,
    InsertedResponse,
)
from neardup.server.problems import Problem, limit_exceeded

log = logging.getLogger("neardup.server")
QUICK_TEXTS, QUICK_CHARS = 4, 20_000
"""A check of at most this many texts and characters that inserts nothing runs on the event loop."""
_CONTROL = re.compile("[\u0000-\u001f\u007f-\u009f]")
T = TypeVar("T")


class IndexThreads:
    """A worker's threads for index calls, each with its own handle on the index."""

    def __init__(self, url: str, threads: int) -> None:
        self.url = url
        self._local = threading.local()
        self._handles: list[LSHIndex] = []
        self._lock = threading.Lock()
        self.first = self._open()  # settings are checked now, not at the first request
        self.local = self.first.stats()["backend"] in ("sqlite", "memory")
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="neardup-index")

    def _open(self) -> LSHIndex:
        from neardup.jobs import open_index

        return open_index(self.url)

    def _handle(self) -> LSHIndex:
        index: LSHIndex | None = getattr(self._local, "index", None)
        if index is None:
            index = self._open()
            self._local.index = index
            with self._lock:
                self._handles.append(index)
        return index

    async def run(self, call: Callable[[LSHIndex], T], timeout: float, *, quick: bool = False) -> T:
        """``call(index)`` on an index thread; past ``timeout`` seconds the answer is 503.

        A ``quick`` call (a read of a few texts) on a local index (SQLite, memory) runs on the
        event loop's own thread instead: the hand-over to a thread and back cost a third of a
        single-text check (1,100 against 750 checks/s on one worker). A read there never waits
        (SQLite's WAL readers wait for no writer), so it cannot stall the loop; writes, and any
        call to Redis, whose answer may be slow to come, go to the threads."""
        if quick and self.local:
            return call(self._handle())
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, lambda: call(self._handle()))
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            raise Problem(
                503,
                "Timed out",
                f"the index did not answer within {timeout:g} s",
                headers={"Retry-After": "1"},
            ) from None

    def close(self) -> None:
        """Wait for the calls in flight, then close every handle."""
        self._pool.shutdown(wait=True)
        with self._lock:
            for index in [self.first, *self._handles]:
                index.close()
            self._handles.clear()


class Guard:
    """ASGI middleware: the body-size limit (before any parsing), request metrics and the
    worker's memory figure."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            body = await self._body(scope, receive)
        except Problem as problem:
            await problem.response()(scope, receive, sending)
        else:
            await self.app(scope, _replay(body, receive), sending)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", "unmatched")
            metrics.REQUESTS.labels(name, scope.get("method", ""), str(status["code"])).inc()
            metrics.LATENCY.labels(name).observe(time.perf_counter() - started)
            if status["code"] >= 400:
                metrics.ERRORS.labels(str(status["code"])).inc()
            metrics.note_memory()

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole request body, refused with 413 past ``max_body_bytes`` (by its
        Content-Length, or as it arrives) and with 408 when it arrives too slowly."""
        limit = self.limits.max_body_bytes
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            raise limit_exceeded("max_body_bytes", limit, f"the request body is over {limit:,} bytes", 413)
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.limits.request_timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise Problem(408, "Request timeout", "the request body did not arrive in time") from None
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise limit_exceeded(
                    "max_body_bytes", limit, f"the request body is over {limit:,} bytes", 413
                )
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read once more, then the connection's own messages (its disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def require(needed: KeyScope) -> Callable[[Request], Awaitable[KeyScope]]:
    """A dependency that admits a request whose bearer key has ``needed`` or a larger scope
    (every request when the server runs without keys)."""

    async def check(request: Request) -> KeyScope:
        keys: KeyRing | None = request.app.state.keys
        if keys is None:
            return KeyScope.admin
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        scope = keys.scope_of(token.strip()) if scheme.lower() == "bearer" else None
        if scope is None:
            raise Problem(
                401,
                "Unauthorized",
                "send 'Authorization: Bearer KEY' with a key the server knows",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if scope < needed:
            raise Problem(403, "Forbidden", f"this key's scope is {scope.name}; this needs {needed.name}")
        return scope

    return check


Reader = Annotated[KeyScope, Depends(require(KeyScope.read))]
Writer = Annotated[KeyScope, Depends(require(KeyScope.write))]
Admin = Annotated[KeyScope, Depends(require(KeyScope.admin))]


def _check_id(value: str, where: str, limits: Limits) -> None:
    if not value or len(value) > limits.max_id_chars:
        raise limit_exceeded(
            "max_id_chars", limits.max_id_chars, f"{where}: an id has 1 to {limits.max_id_chars} characters"
        )
    if _CONTROL.search(value):
        raise Problem(422, "Invalid request", f"{where}: an id has no control characters")
    _check_utf8(value, where)


def _check_text(value: str, where: str, limits: Limits) -> None:
    if len(value) > limits.max_text_chars:
        raise limit_exceeded(
            "max_text_chars",
            limits.max_text_chars,
            f"{where}: a text has at most {limits.max_text_chars:,} characters",
        )
    _check_utf8(value, where)


def _check_utf8(value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Problem(
            422, "Invalid request", f"{where}: a lone surrogate (such as \\ud800) is not text"
        ) from None


def _check_count(n: int, where: str, limits: Limits) -> None:
    if n > limits.max_texts:
        raise limit_exceeded(
            "max_texts", limits.max_texts, f"{where}: at most {limits.max_texts:,} per request"
        )


def _answer(results: Sequence[CheckResult | ContainmentCheck], score: str) -> JSONResponse:
    """The check's answer, in CheckResponse's shape (built directly: FastAPI's validation of the
    returned model cost 15-20% of a single check, 1,100 -> 1,280-1,390 checks/s on one worker),
    each match's score under ``score``; the check metrics counted."""
    metrics.TEXTS_CHECKED.inc(len(results))
    metrics.DUPLICATES_FOUND.inc(sum(r.is_duplicate for r in results))
    metrics.DOCUMENTS_INSERTED.inc(sum(r.inserted for r in results))
    body = {
        "results": [
            {
                "id": r.key,
                "is_duplicate": r.is_duplicate,
                "inserted": r.inserted,
                "matches": [{"id": m.key, score: getattr(m, score), "exact": m.exact} for m in r.matches],
            }
            for r in results
        ]
    }
    return JSONResponse(body)


def create_app(config: ServerConfig) -> FastAPI:
    """The app serving ``config.index``; the index is opened (and its settings checked) when the
    app starts, and closed, after the requests in flight, when it stops."""
    limits = config.limits
    keys = KeyRing.load(config.api_keys) if config.api_keys is not None else None
    state: dict[str, IndexThreads] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state["index"] = IndexThreads(config.index, limits.index_threads)
        metrics.INDEX_DOCUMENTS.set(len(state["index"].first))
        try:
            yield
        finally:
            state.pop("index").close()

    app = FastAPI(
        title="neardup",
        summary="Check texts against a near-duplicate index, insert and remove documents.",
        version=_version(),
        lifespan=lifespan,
    )
    app.state.keys = keys
    problems.install(app)
    openapi.install(app, limits)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error answering %s %s", request.method, request.url.path)
        return Problem(500, "Internal error", "the server failed to answer; the error is logged").response()

    def index() -> IndexThreads:
        return state["index"]

    @app.post("/v1/check", response_model=CheckResponse, tags=["check"])
    async def check(request: CheckRequest, scope: Reader) -> JSONResponse:
        """Each text's matches in the index (best first, never below the index's threshold) and,
        with ``insert``, whether it was inserted."""
        if request.insert != "never" and scope < KeyScope.write:
            raise Problem(
                403, "Forbidden", f"insert={request.insert} needs the write scope; this key's is {scope.name}"
            )
        if request.exact and not index().first.settings.keep_shingles:
            raise Problem(
                409,
                "Settings differ",
                "exact similarity needs the documents' shingles, and this index does not keep them "
                "(it was built without --keep-shingles); check without exact",
            )
        if request.mode == "containment" and not index().first.settings.containment:
            raise Problem(
                409,
                "Settings differ",
                "mode containment needs an index built for containment search "
                "(neardup index build --containment)",
            )
        items = request.items()
        _check_count(len(items), "texts", limits)
        if request.top_k > limits.max_top_k:
            raise limit_exceeded("max_top_k", limits.max_top_k, f"top_k: at most {limits.max_top_k}")
        for i, item in enumerate(items):
            where = f"texts[{i}]" if request.texts is not None else "text"
            _check_text(item.text, where, limits)
            if item.id is not None:
                _check_id(item.id, f"{where}.id", limits)
            elif request.insert != "never":
                raise Problem(
                    422, "Invalid request", f"{where}: insert={request.insert} needs an id for every text"
                )
        texts, ids = [t.text for t in items], [t.id for t in items]
        if request.mode == "containment":
            found = await index().run(
                lambda ix: ix.check_containment_many(
                    texts,
                    ids,
                    insert=request.insert,
                    min_containment=request.min_containment,
                    direction=request.direction,
                    top_k=request.top_k,
                    exact=request.exact,
                ),
                limits.request_timeout_s,
            )
            return _answer(found, "containment")
        results = await index().run(
            lambda ix: ix.check_many(
                texts, ids, insert=request.insert, top_k=request.top_k, exact=request.exact
            ),
            limits.request_timeout_s,
            quick=request.insert == "never"
            and len(texts) <= QUICK_TEXTS
            and sum(map(len, texts)) <= QUICK_CHARS,
        )
        return _answer(results, "similarity")

    @app.post("/v1/documents", response_model=InsertedResponse, tags=["documents"])
    async def insert(request: DocumentsRequest, _: Writer) -> InsertedResponse:
        """Insert (or replace) documents, all or nothing; answered once they are stored."""
        docs = request.documents
        _check_count(len(docs), "documents", limits)
        for i, doc in enumerate(docs):
            _check_id(doc.id, f"documents[{i}].id", limits)
            _check_text(doc.text, f"documents[{i}].text", limits)
        ids, texts = [d.id for d in docs], [d.text for d in docs]
        await index().run(lambda ix: ix.insert_many(ids, texts), limits.request_timeout_s)
        metrics.DOCUMENTS_INSERTED.inc(len(set(ids)))
        return InsertedResponse(inserted=len(set(ids)))

    @app.get("/v1/documents/{doc_id:path}", response_model=DocumentOut, tags=["documents"])
    async def get_document(doc_id: str, _: Reader) -> DocumentOut:
        """Whether a document is indexed, its shingle count and when it was inserted."""
        _check_id(doc_id, "id", limits)
        info = await index().run(lambda ix: ix.info(doc_id), limits.request_timeout_s, quick=True)
        if info is None:
            raise Problem(404, "Not found", f"no document {doc_id!r} in the index")
        return DocumentOut(id=doc_id, exists=True, shingles=info.shingles, inserted_at=info.inserted_at)

    @app.delete("/v1/documents/{doc_id:path}", response_model=DeletedResponse, tags=["documents"])
    async def delete_document(doc_id: str, _: Writer) -> DeletedResponse:
        """Remove a document; 404 when it is not indexed."""
        _check_id(doc_id, "id", limits)
        removed = await index().run(lambda ix: ix.remove(doc_id), limits.request_timeout_s)
        if not removed:
            raise Problem(404, "Not found", f"no document {doc_id!r} in the index")
        return DeletedResponse(id=doc_id, deleted=True)

    @app.get("/v1/index", response_model=IndexOut, tags=["index"])
    async def index_figures(_: Admin) -> IndexOut:
        """The index's documents, settings, LSH shape, size and backend (never its URL, which
        may hold a password)."""
        stats = await index().run(lambda ix: ix.stats(), limits.request_timeout_s)
        metrics.INDEX_DOCUMENTS.set(stats["documents"])
        return IndexOut(**{k: stats[k] for k in IndexOut.model_fields})

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        """The process is up."""
        return Health(status="ok")

    @app.get("/readyz", response_model=Health, tags=["health"])
    async def readyz() -> Health:
        """The index answers."""
        await index().run(lambda ix: len(ix), min(5.0, limits.request_timeout_s))
        return Health(status="ok")

    @app.get("/metrics", tags=["health"], response_class=Response)
    async def metrics_page(_: Admin) -> Response:
        """Prometheus metrics of every worker."""
        documents = await index().run(lambda ix: len(ix), limits.request_timeout_s)
        metrics.INDEX_DOCUMENTS.set(documents)
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    app.add_middleware(Guard, limits=limits)
    return app


def _version() -> str:
    from neardup import __version__

    return __version__


def app_from_environment() -> FastAPI:
    """The app of the :class:`ServerConfig` in ``NEARDUP_SERVE_CONFIG``: uvicorn's factory in
    each worker process."""
    text = os.environ.get(ENV_CONFIG)
    if not text:
        raise RuntimeError(f"{ENV_CONFIG} is not set; start the server with neardup serve")
    return create_app(ServerConfig.from_json(text))
