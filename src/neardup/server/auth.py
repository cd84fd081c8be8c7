"""API keys: a file of ``KEY SCOPE`` lines, checked in constant time, never logged.

Scopes grow: ``read`` may check texts and read documents; ``write`` may also insert and delete
documents; ``admin`` may also read the index's figures and the metrics. The file is read when a
worker starts: change it, then restart the server (a rolling restart of the workers).
"""

from __future__ import annotations

import hmac
from enum import IntEnum
from pathlib import Path

from neardup.errors import ConfigError

MIN_KEY_CHARS = 16


class Scope(IntEnum):
    """What a key may do; each scope includes the ones below it."""

    read = 1
    write = 2
    admin = 3


class KeyRing:
    """The keys of a key file, and the scope each grants."""

    def __init__(self, keys: dict[bytes, Scope]) -> None:
        self._keys = list(keys.items())

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        """Read ``path``: one ``KEY SCOPE`` per line, ``#`` starts a comment; a bad line is a
        ConfigError naming the file and line (never the key)."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the API key file: {exc}") from None
        keys: dict[bytes, Scope] = {}
        for number, line in enumerate(lines, start=1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = f"{path}:{number}"
            if len(words) != 2:
                raise ConfigError(f"{where}: expected 'KEY SCOPE' (scope: read, write or admin)")
            key, scope = words
            if scope not in Scope.__members__:
                raise ConfigError(f"{where}: unknown scope {scope!r} (read, write or admin)")
            if len(key) < MIN_KEY_CHARS:
                raise ConfigError(f"{where}: a key must be at least {MIN_KEY_CHARS} characters")
            if key.encode() in keys:
                raise ConfigError(f"{where}: the same key is listed twice")
            keys[key.encode()] = Scope[scope]
        if not keys:
            raise ConfigError(f"{path}: the API key file lists no key")
        return cls(keys)

    def scope_of(self, presented: str) -> Scope | None:
        """The scope of ``presented``, or None; every key is compared, in constant time each, so
        the time taken says nothing about which key, or how much of one, matched."""
        given = presented.encode("utf-8", "surrogateescape")
        found: Scope | None = None
        for key, scope in self._keys:
            if hmac.compare_digest(key, given):
                found = scope
        return found
