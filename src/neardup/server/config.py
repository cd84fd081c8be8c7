"""What a server runs with: the index, the key file and the limits on every input."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ENV_CONFIG = "NEARDUP_SERVE_CONFIG"
"""The environment variable that hands a :class:`ServerConfig` (as JSON) to uvicorn's workers."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask; anything past them is a 4xx answer naming the limit."""

    max_body_bytes: int = 8 << 20
    max_texts: int = 1000
    """Texts per check, documents per insert."""
    max_text_chars: int = 200_000
    max_id_chars: int = 256
    max_top_k: int = 100
    request_timeout_s: float = 30.0
    index_threads: int = 4
    """Threads per worker that call the index (each with its own connection)."""


@dataclass(frozen=True)
class ServerConfig:
    """One server: the index URL, the API key file (None: no authentication) and the limits."""

    index: str
    api_keys: Path | None = None
    limits: Limits = field(default_factory=Limits)

    def to_json(self) -> str:
        data = asdict(self)
        data["api_keys"] = None if self.api_keys is None else str(self.api_keys)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ServerConfig:
        data: dict[str, Any] = json.loads(text)
        keys = data.get("api_keys")
        return cls(
            index=data["index"],
            api_keys=None if keys is None else Path(keys),
            limits=Limits(**data.get("limits", {})),
        )
