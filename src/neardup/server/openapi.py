"""The OpenAPI document as the server enforces it: the configured limits (``maxItems``,
``maxLength``, ``maximum``), the one-or-batch shape of a check, and every error answer as
``application/problem+json``, so that a client generated from it sends what is accepted."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from neardup.server.config import Limits

ID_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f]+$"
"""An id: no control characters (and, as JSON text, no lone surrogates)."""

PROBLEM_SCHEMA = {
    "title": "Problem",
    "type": "object",
    "description": "RFC 9457 problem details; a limit names itself in limit and max.",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "limit": {"type": "string"},
        "max": {"type": "number"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}
ERRORS = {
    "401": "No key, or one the server does not know",
    "403": "The key's scope does not allow this",
    "404": "No such document",
    "408": "The request body arrived too slowly",
    "409": "The request's settings differ from the index's",
    "413": "The request body is over the limit",
    "422": "The request is malformed or past a limit",
    "503": "The index did not answer in time, or is unreachable",
}


def _limit(schemas: dict[str, Any], model: str, field: str, **bounds: Any) -> None:
    prop = schemas[model]["properties"][field]
    target = prop if "anyOf" not in prop else next(b for b in prop["anyOf"] if b.get("type") != "null")
    target.update(bounds)


def install(app: FastAPI, limits: Limits) -> None:
    """Make ``app.openapi()`` describe the server as it runs with ``limits``."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        schemas = doc["components"]["schemas"]
        text = {"maxLength": limits.max_text_chars}
        ident = {"minLength": 1, "maxLength": limits.max_id_chars, "pattern": ID_PATTERN}
        for model in ("TextIn", "CheckRequest", "DocumentIn"):
            _limit(schemas, model, "text", **text)
            _limit(schemas, model, "id", **ident)
        _limit(schemas, "CheckRequest", "texts", maxItems=limits.max_texts)
        _limit(schemas, "CheckRequest", "top_k", maximum=limits.max_top_k)
        _limit(schemas, "DocumentsRequest", "documents", maxItems=limits.max_texts)
        for model, fields in (("CheckRequest", ("text", "texts", "id", "exact")), ("TextIn", ("id",))):
            for name in fields:  # absent, not null: the request shapes are told apart by their fields
                prop = schemas[model]["properties"][name]
                if "anyOf" in prop:
                    [branch] = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
                    prop.update(branch)
        schemas["CheckRequest"]["oneOf"] = [
            {"required": ["text"], "not": {"required": ["texts"]}},
            {"required": ["texts"], "not": {"anyOf": [{"required": ["text"]}, {"required": ["id"]}]}},
        ]
        schemas["CheckRequest"]["if"] = {
            "required": ["insert"],
            "properties": {"insert": {"enum": ["if_new", "always"]}},
        }
        schemas["CheckRequest"]["then"] = {  # inserting needs an id for every text
            "anyOf": [
                {"required": ["text", "id"]},
                {"required": ["texts"], "properties": {"texts": {"items": {"required": ["id"]}}}},
            ]
        }
        schemas["Problem"] = PROBLEM_SCHEMA
        problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        for path in doc["paths"].values():
            for operation in path.values():
                for parameter in operation.get("parameters", []):
                    if parameter["name"] == "doc_id":
                        parameter["schema"].update(ident)
                answers = operation.setdefault("responses", {})
                answers.pop("422", None)  # FastAPI's own shape; neardup answers problems
                for status, why in ERRORS.items():
                    answers[status] = {"description": why, "content": problem}
        app.openapi_schema = doc
        return doc

    app.openapi = document  # type: ignore[method-assign]
