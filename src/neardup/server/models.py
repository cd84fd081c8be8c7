"""The JSON shapes of requests and answers (pydantic models, and so the OpenAPI document).

Unknown fields are refused (422), so a misspelt option is never silently ignored. Sizes are
checked against the server's :class:`~neardup.server.config.Limits` by the routes, which name the
limit in the answer; the models check shapes and types.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Strict = ConfigDict(extra="forbid", strict=True)


class TextIn(BaseModel):
    """A text to check, with an optional id (needed to insert it)."""

    model_config = Strict
    text: str
    id: str | None = None


class CheckRequest(BaseModel):
    """``{"texts": [...]}`` for a batch, or ``{"text": ..., "id": ...}`` for one."""

    model_config = Strict
    texts: list[TextIn] | None = None
    text: str | None = None
    id: str | None = None
    top_k: int = Field(10, ge=1, strict=False, description="At most this many matches per text, best first.")
    insert: Literal["never", "if_new", "always"] = Field(
        "never",
        description="never; if_new: insert each text that matched nothing (atomic: racing "
        "requests insert a text once); always. Inserting needs an id for every text.",
    )
    exact: bool | None = Field(
        None, description="Exact scores (needs an index that keeps shingles); default: whether it does."
    )
    mode: Literal["jaccard", "containment"] = Field(
        "jaccard",
        description="jaccard: similar texts (never below the index's threshold); containment: "
        "texts sharing at least min_containment of the shingles, as direction says (needs an "
        "index built with --containment). A batch is checked against the index, not itself.",
    )
    min_containment: float = Field(
        0.8, gt=0, le=1, strict=False, description="With mode containment: the least containment."
    )
    direction: Literal["query_in_doc", "doc_in_query"] = Field(
        "query_in_doc",
        description="With mode containment: query_in_doc, the share of the text found in a "
        "document; doc_in_query, the share of a document found in the text.",
    )

    @field_validator("top_k", mode="before")
    @classmethod
    def _whole_number(cls, value: object) -> object:
        """A JSON number with no fraction (``5`` or ``5.0``, as JSON Schema counts integers)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("top_k must be a whole number")
        return value

    @model_validator(mode="after")
    def _one_shape(self) -> CheckRequest:
        if (self.texts is None) == (self.text is None):
            raise ValueError("give either texts (a batch) or text (one)")
        if self.texts is not None and self.id is not None:
            raise ValueError("id goes with text; in a batch each text has its own id")
        return self

    def items(self) -> list[TextIn]:
        if self.texts is not None:
            return self.texts
        return [TextIn(text=self.text or "", id=self.id)]


class MatchOut(BaseModel):
    id: str
    similarity: float | None = Field(None, description="Jaccard (mode jaccard).")
    containment: float | None = Field(None, description="Containment (mode containment).")
    exact: bool


class CheckResultOut(BaseModel):
    id: str | None
    is_duplicate: bool
    inserted: bool
    matches: list[MatchOut]


class CheckResponse(BaseModel):
    results: list[CheckResultOut]


class DocumentIn(BaseModel):
    model_config = Strict
    id: str
    text: str


class DocumentsRequest(BaseModel):
    model_config = Strict
    documents: list[DocumentIn]


class InsertedResponse(BaseModel):
    inserted: int


class DocumentOut(BaseModel):
    id: str
    exists: bool
    shingles: int | None = Field(None, description="Distinct shingles, where known.")
    inserted_at: float | None = Field(None, description="Unix time of the last insert, where known.")


class DeletedResponse(BaseModel):
    id: str
    deleted: bool


class IndexOut(BaseModel):
    documents: int
    settings: dict[str, object]
    bands: int
    rows: int
    size_bytes: int | None
    backend: str


class Health(BaseModel):
    status: Literal["ok"]
