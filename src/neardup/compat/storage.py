"""datasketch's ``storage_config`` dicts, checked and opened as a neardup storage; and how the keys
a user gives become the ``str`` keys an index stores.

Accepted forms::

    {"type": "dict"}                                       in memory (the default)
    {"type": "redis", "redis": {...}, "basename": b"name", "redis_buffer": {"transaction": True}}
    {"type": "sqlite", "path": "index.db"}                 (neardup's own)

Every ``redis`` option is a keyword argument of redis-py's ``Redis(...)`` and is passed to it
unchanged (a value ``{"env": "NAME", "default": ...}`` is read from the environment when the
index connects, as datasketch documents); an unknown one is refused. Without a ``basename`` a
random one is chosen, so unrelated indexes never share keys.
"""

from __future__ import annotations

import base64
import inspect
import os
import pickle
import secrets
import string
from collections.abc import Hashable, Mapping
from typing import Any
from urllib.parse import quote

from neardup.errors import StorageError
from neardup.index.base import Storage
from neardup.index.memory import MemoryStorage
from neardup.index.redis import RedisStorage
from neardup.index.sqlite import SQLiteStorage

_TOP_KEYS = {
    "dict": {"type", "basename"},
    "redis": {"type", "basename", "redis", "redis_buffer"},
    "sqlite": {"type", "basename", "path"},
}
_BUFFER_KEYS = {"transaction"}
_PICKLE_PROTOCOL = 4  # fixed, so every process turns a key into the same bytes


def random_basename() -> bytes:
    """11 random lowercase letters, as datasketch makes them."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(11)).encode()


def redis_options() -> frozenset[str]:
    """The keyword arguments of redis-py's ``Redis(...)``."""
    try:
        import redis
    except ImportError as exc:
        raise StorageError(
            "a Redis storage_config needs redis-py; install it with pip install 'neardup[redis]'"
        ) from exc
    names = inspect.signature(redis.Redis.__init__).parameters
    return frozenset(n for n in names if n != "self")


def normalize(storage_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A checked copy of ``storage_config``, with a basename chosen for Redis if none is given."""
    config = dict(storage_config or {"type": "dict"})
    kind = config.setdefault("type", "dict")
    if kind not in _TOP_KEYS:
        raise ValueError(
            f"unknown storage_config type {kind!r}; neardup.compat takes 'dict', 'redis' or 'sqlite'"
        )
    unknown = sorted(set(config) - _TOP_KEYS[kind])
    if unknown:
        raise ValueError(
            f"unknown storage_config key(s) {', '.join(map(repr, unknown))} for type {kind!r}; "
            f"accepted: {', '.join(sorted(_TOP_KEYS[kind]))}"
        )
    if kind == "redis":
        options = config.get("redis", {})
        if not isinstance(options, Mapping):
            raise ValueError("storage_config['redis'] must be a dict of redis-py Redis() options")
        accepted = redis_options()
        bad = sorted(set(options) - accepted)
        if bad:
            raise ValueError(
                f"unknown redis option(s) {', '.join(map(repr, bad))} in storage_config['redis']; "
                f"redis-py's Redis() accepts: {', '.join(sorted(accepted))}"
            )
        config["redis"] = dict(options)
        buffer = config.get("redis_buffer", {})
        if not isinstance(buffer, Mapping) or set(buffer) - _BUFFER_KEYS:
            raise ValueError('storage_config["redis_buffer"] takes only {"transaction": True or False}')
        config["redis_buffer"] = dict(buffer)
        basename = config.get("basename") or random_basename()
        config["basename"] = basename.encode() if isinstance(basename, str) else bytes(basename)
    if kind == "sqlite" and not config.get("path"):
        raise ValueError('a sqlite storage_config needs a "path"')
    return config


def _resolve(value: Any) -> Any:
    """An option's value; ``{"env": NAME, "default": ...}`` reads the environment."""
    if isinstance(value, Mapping) and "env" in value:
        return os.getenv(value["env"], value.get("default"))
    return value


def open_config(config: Mapping[str, Any]) -> Storage:
    """The storage a :func:`normalize`-d config names (connecting now, for Redis)."""
    kind = config["type"]
    if kind == "dict":
        return MemoryStorage()
    if kind == "sqlite":
        return SQLiteStorage(os.path.expanduser(os.fspath(config["path"])))
    options = {name: _resolve(value) for name, value in config["redis"].items()}
    try:
        prefix = config["basename"].decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"a Redis basename must be UTF-8, got {config['basename']!r}") from exc
    return RedisStorage(_describe(options, prefix), options=options)


def _describe(options: Mapping[str, Any], prefix: str) -> str:
    """A URL naming the server, database and prefix (no password), for messages and ``url``."""
    db = options.get("db") or 0
    tail = f"prefix={quote(prefix, safe='')}"
    if options.get("unix_socket_path"):
        return f"unix://{options['unix_socket_path']}?db={db}&{tail}"
    scheme = "rediss" if options.get("ssl") else "redis"
    user = f"{quote(str(options['username']), safe='')}@" if options.get("username") else ""
    host = options.get("host") or "localhost"
    return f"{scheme}://{user}{host}:{options.get('port') or 6379}/{db}?{tail}"


class KeyCodec:
    """Turns a user's keys into an index's ``str`` keys and back.

    A ``str`` is stored as itself (a neardup tool reading the index sees the same key), unless it
    starts with NUL; every other form starts with NUL and a tag: ``\\0s`` a str that started with
    NUL, ``\\0b`` bytes (base64), ``\\0p`` a pickled key (base64), ``\\0m`` a number standing for
    an in-memory key (memory storage without prepickle: any hashable, kept in two dicts).
    """

    def __init__(self, *, prepickle: bool, persistent: bool) -> None:
        self.prepickle = prepickle
        self.persistent = persistent
        self._to_internal: dict[Hashable, str] = {}
        self._to_key: dict[str, Hashable] = {}
        self._next = 0

    def encode(self, key: Hashable, *, create: bool = False) -> str | None:
        """The stored form of ``key``; None for an in-memory key never seen (unless ``create``)."""
        if isinstance(key, str):
            return "\x00s" + key if key.startswith("\x00") else key
        if isinstance(key, bytes):
            return "\x00b" + base64.b64encode(key).decode("ascii")
        if self.prepickle:
            try:
                raw = pickle.dumps(key, protocol=_PICKLE_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                raise TypeError(f"prepickle=True needs picklable keys, got {key!r}: {exc}") from exc
            return "\x00p" + base64.b64encode(raw).decode("ascii")
        if self.persistent:
            raise TypeError(
                f"prepickle=False requires bytes (or str) keys for a persistent storage, got "
                f"{type(key).__name__}: {key!r}. Either pass bytes keys or use prepickle=True"
            )
        internal = self._to_internal.get(key)
        if internal is None and create:
            internal = f"\x00m{self._next}"
            self._next += 1
            self._to_internal[key] = internal
            self._to_key[internal] = key
        return internal

    def decode(self, internal: str) -> Hashable:
        if not internal.startswith("\x00"):
            return internal
        tag, body = internal[1:2], internal[2:]
        if tag == "s":
            return body
        if tag == "b":
            return base64.b64decode(body)
        if tag == "p":
            key: Hashable = pickle.loads(base64.b64decode(body))  # as datasketch's prepickle does
            return key
        return self._to_key.get(internal, internal)

    def forget(self, internal: str) -> None:
        """Drop an in-memory key's mapping once its document is removed."""
        key = self._to_key.pop(internal, None)
        if key is not None:
            del self._to_internal[key]
