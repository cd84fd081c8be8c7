"""A client for ``neardup serve``, sync (:class:`Client`) and async (:class:`AsyncClient`), on httpx.

Answers come back as the library's own types: each check is a
:class:`~neardup.index.checking.CheckResult` whose matches are
:class:`~neardup.index.Match` objects, as :meth:`LSHIndex.check_many` returns them. An error
answer raises :class:`ServerError` with the server's problem details.

>>> # with Client("http://127.0.0.1:8000", api_key="...") as client:
>>> #     client.check("a text")[0].is_duplicate
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from neardup.core.containment import Direction
from neardup.errors import NeardupError
from neardup.index.checking import CheckResult, InsertPolicy
from neardup.index.containment import ContainmentCheck, ContainmentMatch
from neardup.index.lsh_index import Match

__all__ = ["AsyncClient", "Client", "ServerError"]


class ServerError(NeardupError):
    """An answer that was not a success; ``problem`` holds the server's RFC 9457 details."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(
            f"{status} {problem.get('title', 'error')}: {problem.get('detail', '')}".rstrip(": ")
        )


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise NeardupError("neardup.client needs httpx: pip install 'neardup[client]'") from None
    return httpx


def _check_body(
    texts: str | Sequence[str], ids: Sequence[str | None] | None, insert: InsertPolicy, top_k: int
) -> dict[str, Any]:
    items = [texts] if isinstance(texts, str) else list(texts)
    keys = list(ids) if ids is not None else [None] * len(items)
    if len(keys) != len(items):
        raise ValueError(f"{len(keys)} ids but {len(items)} texts")
    entries = [{"text": t} if k is None else {"text": t, "id": k} for t, k in zip(items, keys, strict=True)]
    return {"texts": entries, "top_k": top_k, "insert": insert}


def _containment_body(
    texts: str | Sequence[str],
    ids: Sequence[str | None] | None,
    insert: InsertPolicy,
    top_k: int,
    min_containment: float,
    direction: Direction,
) -> dict[str, Any]:
    body = _check_body(texts, ids, insert, top_k)
    return {**body, "mode": "containment", "min_containment": min_containment, "direction": direction}


def _containment_results(body: dict[str, Any]) -> list[ContainmentCheck]:
    return [
        ContainmentCheck(
            key=r["id"],
            matches=[
                ContainmentMatch(m["id"], float(m["containment"]), bool(m["exact"])) for m in r["matches"]
            ],
            is_duplicate=bool(r["is_duplicate"]),
            inserted=bool(r["inserted"]),
        )
        for r in body["results"]
    ]


def _results(body: dict[str, Any]) -> list[CheckResult]:
    return [
        CheckResult(
            key=r["id"],
            matches=[Match(m["id"], float(m["similarity"]), bool(m["exact"])) for m in r["matches"]],
            is_duplicate=bool(r["is_duplicate"]),
            inserted=bool(r["inserted"]),
        )
        for r in body["results"]
    ]


def _answer(response: Any) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = {"title": response.reason_phrase, "detail": response.text[:200]}
        raise ServerError(response.status_code, problem)
    result: dict[str, Any] = response.json()
    return result


def _headers(api_key: str | None) -> dict[str, str]:
    return {} if api_key is None else {"Authorization": f"Bearer {api_key}"}


class Client:
    """Calls to one server. ``api_key`` is sent as a bearer token; other keywords (``timeout``,
    ``verify`` for TLS, ``cert``, ``transport``) go to ``httpx.Client`` as they are."""

    def __init__(self, url: str, *, api_key: str | None = None, **httpx_options: Any) -> None:
        httpx = _httpx()
        options = {"timeout": 30.0, **httpx_options}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=_headers(api_key), **options)

    def check(
        self,
        texts: str | Sequence[str],
        ids: Sequence[str | None] | None = None,
        *,
        insert: InsertPolicy = "never",
        top_k: int = 10,
    ) -> list[CheckResult]:
        """Each text's matches (a list even for one text), inserting by ``insert``."""
        body = _check_body(texts, ids, insert, top_k)
        return _results(_answer(self._http.post("/v1/check", json=body)))

    def check_containment(
        self,
        texts: str | Sequence[str],
        ids: Sequence[str | None] | None = None,
        *,
        min_containment: float = 0.8,
        direction: Direction = "query_in_doc",
        insert: InsertPolicy = "never",
        top_k: int = 10,
    ) -> list[ContainmentCheck]:
        """Each text's matches by containment (``mode: containment``; the index must be built
        with ``--containment``), as :meth:`LSHIndex.check_containment_many` gives them."""
        body = _containment_body(texts, ids, insert, top_k, min_containment, direction)
        return _containment_results(_answer(self._http.post("/v1/check", json=body)))

    def insert(self, ids: Sequence[str], texts: Sequence[str]) -> int:
        """Insert (or replace) documents; the number inserted."""
        docs = [{"id": k, "text": t} for k, t in zip(ids, texts, strict=True)]
        return int(_answer(self._http.post("/v1/documents", json={"documents": docs}))["inserted"])

    def document(self, doc_id: str) -> dict[str, Any] | None:
        """A document's facts (``shingles``, ``inserted_at``), or None when it is not indexed."""
        response = self._http.get(f"/v1/documents/{_quote(doc_id)}")
        return None if response.status_code == 404 else _answer(response)

    def delete(self, doc_id: str) -> bool:
        """Remove a document; False when it was not indexed."""
        response = self._http.delete(f"/v1/documents/{_quote(doc_id)}")
        return False if response.status_code == 404 else bool(_answer(response)["deleted"])

    def index(self) -> dict[str, Any]:
        """The index's documents, settings, shape, size and backend (needs the admin scope)."""
        return _answer(self._http.get("/v1/index"))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """:class:`Client` for asyncio, on ``httpx.AsyncClient``."""

    def __init__(self, url: str, *, api_key: str | None = None, **httpx_options: Any) -> None:
        httpx = _httpx()
        options = {"timeout": 30.0, **httpx_options}
        self._http = httpx.AsyncClient(base_url=url.rstrip("/"), headers=_headers(api_key), **options)

    async def check(
        self,
        texts: str | Sequence[str],
        ids: Sequence[str | None] | None = None,
        *,
        insert: InsertPolicy = "never",
        top_k: int = 10,
    ) -> list[CheckResult]:
        body = _check_body(texts, ids, insert, top_k)
        return _results(_answer(await self._http.post("/v1/check", json=body)))

    async def check_containment(
        self,
        texts: str | Sequence[str],
        ids: Sequence[str | None] | None = None,
        *,
        min_containment: float = 0.8,
        direction: Direction = "query_in_doc",
        insert: InsertPolicy = "never",
        top_k: int = 10,
    ) -> list[ContainmentCheck]:
        body = _containment_body(texts, ids, insert, top_k, min_containment, direction)
        return _containment_results(_answer(await self._http.post("/v1/check", json=body)))

    async def insert(self, ids: Sequence[str], texts: Sequence[str]) -> int:
        docs = [{"id": k, "text": t} for k, t in zip(ids, texts, strict=True)]
        return int(_answer(await self._http.post("/v1/documents", json={"documents": docs}))["inserted"])

    async def document(self, doc_id: str) -> dict[str, Any] | None:
        response = await self._http.get(f"/v1/documents/{_quote(doc_id)}")
        return None if response.status_code == 404 else _answer(response)

    async def delete(self, doc_id: str) -> bool:
        response = await self._http.delete(f"/v1/documents/{_quote(doc_id)}")
        return False if response.status_code == 404 else bool(_answer(response)["deleted"])

    async def index(self) -> dict[str, Any]:
        return _answer(await self._http.get("/v1/index"))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _quote(doc_id: str) -> str:
    from urllib.parse import quote

    return quote(doc_id, safe="")
