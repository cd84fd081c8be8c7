"""The Redis backend: an index shared by many processes or machines.

``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) or ``unix:///path/redis.sock?db=N``,
with an optional ``?prefix=name`` (default ``neardup``) so that several indexes can share one
database. redis-py is an optional dependency (``pip install 'neardup[redis]'``), imported when a
storage is opened.

Layout (``layout`` 1), every key starting with the prefix ``P`` (``neardup:`` by default)::

    P:layout              string   "1", written (SET NX) when a storage is first opened
    P:settings            string   the index settings as JSON, written with SET NX, then re-read
    P:docs                zset     document key -> insertion number: count, keys() order, contains
    P:seq                 string   counter behind the insertion numbers (INCRBY)
    P:sig                 hash     document key -> signature, uint32 little-endian, num_perm values
    P:shingles            hash     document key -> sorted unique uint64 little-endian shingle hashes
                                   (only when the index keeps shingles)
    P:buckets             hash     document key -> its buckets, int64 little-endian, one per band
                                   (absent for an empty document): what removal takes out
    P:b:<8 raw bytes>     set      one per bucket (int64 little-endian, from
                                   :func:`~neardup.index.base.bucket_ids`): the document keys in it

Document keys are stored as UTF-8. An insert is one MULTI/EXEC pipeline: a Lua script that takes
replaced documents out of their old buckets, adds the new bucket memberships and insertion numbers,
then one HSET of the signatures and one of the shingles, so a batch is all or nothing and costs
one round trip whatever its size. A removal is one script. Queries send one SUNION per query row,
all in one pipeline. The scripts build bucket key names at run time, so the layout needs a single
Redis server (not Redis Cluster).

``size_bytes()`` is None: ``MEMORY USAGE`` over every bucket set costs a round of work per key,
and ``INFO memory`` counts the whole server, not this index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from neardup.errors import IndexSettingsError, StorageError
from neardup.index.base import bucket_ids, check_batch

LAYOUT_VERSION = 1
DEFAULT_PREFIX = "neardup"
_CONNECT_TIMEOUT_S = 10.0
_PAGE = 1000

# Takes documents out of the band tables: for each key in ARGV[2..], removes it from every bucket
# set named in its record in P:buckets and deletes the record. Shared by insert and remove.
_LUA_PURGE = """
local function purge(prefix, buckets, key)
    local rec = redis.call('HGET', buckets, key)
    if rec then
        for i = 1, #rec, 8 do
            redis.call('SREM', prefix .. 'b:' .. string.sub(rec, i, i + 7), key)
        end
        redis.call('HDEL', buckets, key)
    end
end
"""

# KEYS: docs, seq, buckets. ARGV: prefix, n, key_1..key_n, record_1..record_n ('' = no buckets).
_LUA_INSERT = (
    _LUA_PURGE
    + """
local prefix, n = ARGV[1], tonumber(ARGV[2])
local base = redis.call('INCRBY', KEYS[2], n) - n
for j = 1, n do
    local key, rec = ARGV[2 + j], ARGV[2 + n + j]
    purge(prefix, KEYS[3], key)
    if #rec > 0 then
        for i = 1, #rec, 8 do
            redis.call('SADD', prefix .. 'b:' .. string.sub(rec, i, i + 7), key)
        end
        redis.call('HSET', KEYS[3], key, rec)
    end
    redis.call('ZADD', KEYS[1], base + j, key)
end
return n
"""
)

# KEYS: docs, buckets, sig, shingles. ARGV: prefix, key_1..key_n. Returns how many were stored.
_LUA_REMOVE = (
    _LUA_PURGE
    + """
local prefix, removed = ARGV[1], 0
for j = 2, #ARGV do
    local key = ARGV[j]
    if redis.call('ZREM', KEYS[1], key) == 1 then
        removed = removed + 1
        purge(prefix, KEYS[2], key)
        redis.call('HDEL', KEYS[3], key)
        redis.call('HDEL', KEYS[4], key)
    end
end
return removed
"""
)


def _redact(url: str) -> str:
    """The URL without its password, for messages and stats."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


def _split_prefix(url: str) -> tuple[str, str]:
    """``(url without the prefix parameter, key prefix ending in ':')``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [value for name, value in query if name == "prefix"]
    rest = [(name, value) for name, value in query if name != "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not prefix:
        raise StorageError(
            f"{_redact(url)}: the prefix parameter is empty; name the index's keys, as in ?prefix=myindex"
        )
    if not prefix.endswith(":"):
        prefix += ":"
    return urlunsplit(parts._replace(query=urlencode(rest))), prefix


class RedisStorage:
    """An index in a Redis database, its keys under one prefix (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self._url = _redact(url)
        try:
            import redis
        except ImportError as exc:
            raise StorageError(
                f"{self._url}: the Redis backend needs redis-py; install it with pip install 'neardup[redis]'"
            ) from exc
        self._redis_error: type[Exception] = redis.exceptions.RedisError
        connect_url, prefix = _split_prefix(url)
        self.prefix = prefix
        p = prefix.encode()
        self._prefix_bytes = p
        self._k_layout = p + b"layout"
        self._k_settings = p + b"settings"
        self._k_docs = p + b"docs"
        self._k_seq = p + b"seq"
        self._k_sig = p + b"sig"
        self._k_shingles = p + b"shingles"
        self._k_buckets = p + b"buckets"
        # the settings this storage last read: a storage that saw none creates them (SET NX)
        self._seen_settings = False
        try:
            self._client: Any = redis.Redis.from_url(connect_url, socket_connect_timeout=_CONNECT_TIMEOUT_S)
        except (ValueError, self._redis_error) as exc:
            raise StorageError(f"{self._url}: cannot open the index: {exc}") from exc
        try:
            self._check_layout()
        except BaseException:
            self._client.close()
            raise

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Translate redis-py errors into StorageError naming the URL."""
        try:
            yield
        except self._redis_error as exc:
            raise StorageError(f"{self._url}: {action} failed: {exc}") from exc

    def _check_layout(self) -> None:
        with self._errors("opening the index"):
            pipe = self._client.pipeline(transaction=True)
            pipe.set(self._k_layout, str(LAYOUT_VERSION), nx=True)
            pipe.get(self._k_layout)
            found = pipe.execute()[1]
        if found != str(LAYOUT_VERSION).encode():
            raise StorageError(
                f"{self._url}: index layout {found!r} under prefix {self.prefix!r} is not readable by "
                f"this neardup (it reads layout {LAYOUT_VERSION}); use another prefix or upgrade neardup"
            )

    def _parse_settings(self, raw: bytes | None) -> dict[str, Any] | None:
        if raw is None:
            return None
        try:
            settings = json.loads(raw)
        except ValueError as exc:
            raise StorageError(f"{self._url}: the stored settings are not valid JSON: {exc}") from exc
        if not isinstance(settings, dict):
            raise StorageError(f"{self._url}: the stored settings are not a JSON object")
        return settings

    @staticmethod
    def _encode(keys: Sequence[str]) -> list[bytes]:
        return [k.encode() for k in keys]

    def _missing(self, keys: Sequence[str], values: Sequence[object]) -> KeyError:
        key = next(k for k, v in zip(keys, values, strict=True) if v is None)
        return KeyError(f"no document with key {key!r} in {self._url}")

    # -- the Storage interface -----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL it was opened with, password hidden."""
        return self._url

    def read_settings(self) -> dict[str, Any] | None:
        with self._errors("reading the settings"):
            raw = self._client.get(self._k_settings)
        settings = self._parse_settings(raw)
        self._seen_settings = settings is not None
        return settings

    def write_settings(self, settings: dict[str, Any]) -> None:
        """Create the settings (SET NX), or replace those this storage has read.

        A storage that last saw no settings is creating the index; if another process created it
        first with other settings, this raises :class:`IndexSettingsError` rather than silently
        overwriting them (or keeping ones that differ from what the caller believes).
        """
        text = json.dumps(settings, sort_keys=True)
        with self._errors("writing the settings"):
            if self._seen_settings:
                self._client.set(self._k_settings, text)
                return
            pipe = self._client.pipeline(transaction=True)
            pipe.set(self._k_settings, text, nx=True)
            pipe.get(self._k_settings)
            _, raw = pipe.execute()
        stored = self._parse_settings(raw) or {}
        self._seen_settings = True
        if stored != json.loads(text):
            diffs = ", ".join(
                f"{name}={stored.get(name)!r} (not {settings.get(name)!r})"
                for name in sorted(set(stored) | set(settings))
                if stored.get(name) != settings.get(name)
            )
            raise IndexSettingsError(
                f"{self._url}: another process created this index at the same time with other "
                f"settings: {diffs}; open it again to use the stored settings"
            )

    def insert(
        self,
        keys: Sequence[str],
        signatures: np.ndarray,
        band_keys: np.ndarray,
        shingles: Sequence[np.ndarray] | None = None,
        *,
        eligible: np.ndarray | None = None,
    ) -> None:
        mask = check_batch(keys, signatures, band_keys, shingles, eligible)
        n = len(keys)
        if n == 0:
            return
        encoded = self._encode(keys)
        sig_raw = np.ascontiguousarray(signatures, dtype="<u4").tobytes()
        sig_width = len(sig_raw) // n
        bucket_raw = np.ascontiguousarray(bucket_ids(band_keys), dtype="<i8").tobytes()
        bucket_width = len(bucket_raw) // n
        records = [
            bucket_raw[i * bucket_width : (i + 1) * bucket_width] if ok else b""
            for i, ok in enumerate(mask.tolist())
        ]
        with self._errors("inserting documents"):
            pipe = self._client.pipeline(transaction=True)
            pipe.eval(
                _LUA_INSERT,
                3,
                self._k_docs,
                self._k_seq,
                self._k_buckets,
                self._prefix_bytes,
                n,
                *encoded,
                *records,
            )
            pipe.hset(
                self._k_sig,
                mapping={k: sig_raw[i * sig_width : (i + 1) * sig_width] for i, k in enumerate(encoded)},
            )
            if shingles is None:
                pipe.hdel(self._k_shingles, *encoded)
            else:
                pipe.hset(
                    self._k_shingles,
                    mapping={
                        k: np.ascontiguousarray(s, dtype="<u8").tobytes()
                        for k, s in zip(encoded, shingles, strict=True)
                    },
                )
            pipe.execute()

    def candidates(self, band_keys: np.ndarray) -> list[list[str]]:
        buckets = np.ascontiguousarray(bucket_ids(band_keys), dtype="<i8")
        if buckets.shape[0] == 0:
            return []
        head = self._prefix_bytes + b"b:"
        raw = buckets.tobytes()
        width = buckets.shape[1]
        with self._errors("looking up candidates"):
            if width == 0:
                return [[] for _ in range(buckets.shape[0])]
            pipe = self._client.pipeline(transaction=True)  # one consistent snapshot
            for row in range(buckets.shape[0]):
                lo = row * width * 8
                pipe.sunion([head + raw[lo + 8 * b : lo + 8 * b + 8] for b in range(width)])
            found = pipe.execute()
        return [sorted(m.decode() for m in members) for members in found]

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        if not keys:
            return np.empty((0, 0), dtype=np.uint32)
        with self._errors("reading signatures"):
            blobs = self._client.hmget(self._k_sig, self._encode(keys))
        if any(b is None for b in blobs):
            raise self._missing(keys, blobs)
        flat = np.frombuffer(b"".join(blobs), dtype="<u4")
        return flat.reshape(len(keys), -1).astype(np.uint32)

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        if not keys:
            return []
        encoded = self._encode(keys)
        with self._errors("reading shingles"):
            pipe = self._client.pipeline(transaction=True)
            pipe.zmscore(self._k_docs, encoded)
            pipe.hmget(self._k_shingles, encoded)
            scores, blobs = pipe.execute()
        if any(s is None for s in scores):
            raise self._missing(keys, scores)
        return [None if b is None else np.frombuffer(b, dtype="<u8").astype(np.uint64) for b in blobs]

    def remove(self, keys: Sequence[str]) -> int:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return 0
        with self._errors("removing documents"):
            removed = self._client.eval(
                _LUA_REMOVE,
                4,
                self._k_docs,
                self._k_buckets,
                self._k_sig,
                self._k_shingles,
                self._prefix_bytes,
                *self._encode(unique),
            )
        return int(removed)

    def contains(self, key: str) -> bool:
        with self._errors("looking up a key"):
            return self._client.zscore(self._k_docs, key.encode()) is not None

    def count(self) -> int:
        with self._errors("counting documents"):
            return int(self._client.zcard(self._k_docs))

    def keys(self) -> Iterator[str]:
        low: str | float = "-inf"
        while True:  # pages by insertion number, so a concurrent removal cannot shift a page
            with self._errors("listing keys"):
                page = self._client.zrangebyscore(
                    self._k_docs, low, "+inf", start=0, num=_PAGE, withscores=True
                )
            if not page:
                return
            low = f"({int(page[-1][1])}"
            for member, _ in page:
                yield member.decode()

    def size_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        with self._errors("closing the index"):
            self._client.close()
