"""Error answers as RFC 9457 problem details (``application/problem+json``).

Every answer that is not a success has ``type``, ``title``, ``status`` and ``detail``; a limit
names itself (``limit``, ``max``), a validation error lists where (``errors``: ``loc``, ``msg``).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from neardup.errors import ConfigError, IndexSettingsError, StorageError

PROBLEM_TYPE = "application/problem+json"
_TYPES = "urn:neardup:problem:"


class Problem(Exception):  # noqa: N818 (an answer, as starlette's HTTPException is)
    """An answer other than success, with what the client needs to know."""

    def __init__(self, status: int, title: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.extra = status, title, detail, extra
        self.headers: dict[str, str] = extra.pop("headers", {})

    def response(self) -> JSONResponse:
        slug = self.title.lower().replace(" ", "-")
        body = {"type": _TYPES + slug, "title": self.title, "status": self.status, "detail": self.detail}
        return JSONResponse({**body, **self.extra}, self.status, self.headers, media_type=PROBLEM_TYPE)


def limit_exceeded(name: str, maximum: int | float, detail: str, status: int = 422) -> Problem:
    """A request past one of the server's limits."""
    return Problem(status, "Limit exceeded", detail, limit=name, max=maximum)


def install(app: FastAPI) -> None:
    """Answer every error as a problem; an unexpected one is logged, and answered 500 without
    its details."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return Problem(422, "Invalid request", f"{where}: {first['msg']}", errors=errors).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        titles = {401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Method not allowed"}
        title = titles.get(exc.status_code, "Error")
        headers = dict(exc.headers or {})
        return Problem(exc.status_code, title, str(exc.detail), headers=headers).response()

    @app.exception_handler(IndexSettingsError)
    async def _settings(request: Request, exc: IndexSettingsError) -> JSONResponse:
        return Problem(409, "Settings differ", str(exc)).response()

    @app.exception_handler(ConfigError)
    async def _config(request: Request, exc: ConfigError) -> JSONResponse:
        return Problem(422, "Invalid request", str(exc)).response()

    @app.exception_handler(StorageError)
    async def _storage(request: Request, exc: StorageError) -> JSONResponse:
        return Problem(503, "Index unavailable", str(exc), headers={"Retry-After": "1"}).response()
