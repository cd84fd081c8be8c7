"""The Redis backend: an index shared by many processes or machines.

``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) or ``unix:///path/redis.sock?db=N``,
with an optional ``?prefix=name`` (default ``neardup``) so that several indexes can share one
database; redis-py's own URL options (``?socket_timeout=60``) pass through. redis-py is an optional
dependency (``pip install 'neardup[redis]'``), imported when a storage is opened.

Layout (``layout`` 2), every key starting with the prefix ``P`` (``neardup:`` by default)::

    P:layout        string  "2", written (SET NX) when a storage is first opened
    P:settings      string  the index settings as JSON, written with SET NX, then re-read
    P:seq           string  the last document id handed out (INCRBY)
    P:epoch         string  a count of the writes, raised by every insert and removal
    P:docs          zset    document key -> its id: count, contains, keys() in insertion order
    P:keys          hash    id -> document key
    P:sig           hash    id -> signature, uint32 little-endian, num_perm values
    P:shingles      hash    id -> sorted unique uint64 little-endian shingle hashes (only when
                            the index keeps shingles)
    P:bands         hash    id -> its band keys, 8 bytes each, one per band (absent for an empty
                            document): what removal takes out of the band tables
    P:info          hash    id -> the insert's Unix time (float64) then the shingle count (int64,
                            -1 if unknown), little-endian, 16 bytes: Storage.info()
    P:lock          string  the holder's token while one holds the exclusive section (SET NX PX)
    P:t:<4 bytes>   string  a band-table shard: 12-byte records, the low 7 bytes of a band key
                            then the id of the document that has it

``P:info`` and ``P:lock`` came after layout 2's first release and leave it layout 2: a document
without ``P:info`` (written by an earlier neardup) reports its time and count as unknown, and an
earlier neardup that removes or replaces documents leaves their ``P:info`` entries behind, unread,
as ids are never reused.

Ids are positive integers from ``P:seq``, written as 5 bytes (at most 2**40 - 1 of them) except
as ``P:docs`` scores; a replaced document gets a new id, so it moves to the end of ``keys()``.
Numbers are big-endian. A document has one record per band, in the shard named by the band (2
bytes) and the band key's top 11 bits (2 bytes, the low 5 bits zero): a band's records spread
evenly over 2048 shards, the shard and the record's 56 bits name the (band, band key) exactly,
and looking up a bucket scans one shard (100,000 documents make shards of about 50 records). A
record costs 12 bytes, plus what APPEND reserves for growth (up to as much again): the band
tables take about 30 bytes of server memory per document and band, against about 240 with one
Redis set per bucket (layout 1).

An insert reserves its ids with one INCRBY, then sends one MULTI/EXEC transaction packed with
numpy (redis-py packs an argument in microseconds, and a Lua script pays up to a microsecond to
receive one, more than a batch's millions of band records can afford): a Lua script that takes
replaced documents out of their old shards (one GET and SET per shard) and APPENDs each shard's
new records (one argument per shard; one script per 100,000 documents), then variadic ZADD /
HSET commands for the documents and an INCR of ``P:epoch``. A reader never sees half a batch. A
removal is one script.

A lookup reads one snapshot in two round trips of plain commands: ``MGET P:epoch <shards>``
(the shards of the distinct buckets), whose records the client matches against the buckets
(bytes.find for a few buckets, numpy for many), then ``HMGET`` of the ids' keys and signatures
(and shingles) and ``GET P:epoch``. Every write raises the epoch in the step that makes it, so
an unchanged epoch proves that no write came between the two reads; after a write, the lookup
runs again as one read-only script that does the same inside Redis (which costs the server
about twice as much: a script pays to copy each shard in). The scripts build key names at run
time, so the layout needs a single Redis server (not Redis Cluster).

:meth:`RedisStorage.move_to` replaces the index under another prefix of the same database by this
one in one script (the other's keys deleted, this one's renamed onto them, its epoch raised above
both), and :meth:`RedisStorage.drop` deletes an index's keys: both name every key the layout can
have, the nine above and the ``bands * 2048`` shards, so no key of another prefix is touched.

redis-py's default socket timeout (five seconds) is raised to ``_SOCKET_TIMEOUT_S``: a large batch
keeps the server busy for seconds.

:meth:`RedisStorage.exclusive` is redis-py's ``Lock`` on ``P:lock``: every process and machine that
opens the index through one server shares it. The key expires ``_LOCK_TIMEOUT_S`` after it was
last renewed, and a thread of the holder renews it while the section is held, so a holder that
dies frees it within that time while a long one keeps it. A holder that the server or the network
cut off for longer loses the lock, and leaving the section then raises ``StorageError``.

``size_bytes()`` is None: ``MEMORY USAGE`` over every shard costs a round of work per key, and
``INFO memory`` counts the whole server, not this index.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from neardup.core.sorting import sorted_unique
from neardup.errors import ConfigError, IndexSettingsError, StorageError
from neardup.index.base import (
    Candidates,
    DocumentInfo,
    ExclusiveSection,
    check_batch,
    check_counts,
    lookup_mask,
)
from neardup.index.settings import IndexSettings
from neardup.redaction import redact_url

LAYOUT_VERSION = 2
DEFAULT_PREFIX = "neardup"
_CONNECT_TIMEOUT_S = 10.0
_SOCKET_TIMEOUT_S = 300.0
_PAGE = 1000
_DOC_CHUNK = 10_000  # documents per ZADD / HSET command of an insert
_SCRIPT_DOCS = 100_000  # documents per insert script
_NUMPY_BUCKETS = 256  # a lookup of fewer buckets matches records with bytes.find, not numpy
_SHARD_BITS = 11  # a band key's top bits pick its shard among its band's 2048
_ID_BYTES = 5
_KEY_BYTES = 7  # the low bytes of a band key in a record: with the shard, all 64 bits
_RECORD = _KEY_BYTES + _ID_BYTES
_MAX_ID = (1 << (8 * _ID_BYTES)) - 1
_INFO = np.dtype([("inserted_at", "<f8"), ("shingles", "<i8")])  # a P:info value
_LOCK_TIMEOUT_S = 10.0  # P:lock expires this long after its last renewal
_LOCK_POLL_S = 0.005  # how often a waiter tries P:lock again

# The scripts unpack() at most 4000 values at a time: Lua's C stack takes about 8000.

# Shared by the scripts that read ids or take documents out. ARGV[1] is the key prefix.
_LUA_COMMON = """
local prefix = ARGV[1]
local k_docs, k_keys, k_sig = prefix .. 'docs', prefix .. 'keys', prefix .. 'sig'
local k_shingles, k_bands, k_epoch = prefix .. 'shingles', prefix .. 'bands', prefix .. 'epoch'
local k_info = prefix .. 'info'

-- the stored ones among ARGV[first..last] (document keys): those keys, their 5-byte ids and
-- their places in ARGV
local function stored(first, last)
    local keys, ids, at = {}, {}, {}
    for lo = first, last, 4000 do
        local hi = math.min(lo + 3999, last)
        local scores = redis.call('ZMSCORE', k_docs, unpack(ARGV, lo, hi))
        for j = lo, hi do
            local x = tonumber(scores[j - lo + 1])
            if x then
                local b = {}
                for i = 5, 1, -1 do
                    b[i] = x % 256
                    x = (x - b[i]) / 256
                end
                keys[#keys + 1] = ARGV[j]
                ids[#ids + 1] = string.char(unpack(b))
                at[#at + 1] = j
            end
        end
    end
    return keys, ids, at
end

-- takes stored documents (their ids) out of their shards, one GET and SET per shard, and
-- deletes their keys, signatures, band keys, shingles and info
local function drop(ids)
    local char, byte, sub, find, floor = string.char, string.byte, string.sub, string.find, math.floor
    local pending, shards, n = {}, {}, 0  -- shard number -> its records to remove, concatenated
    for lo = 1, #ids, 4000 do
        local hi = math.min(lo + 3999, #ids)
        local bands = redis.call('HMGET', k_bands, unpack(ids, lo, hi))
        for j = lo, hi do
            local rec, id = bands[j - lo + 1], ids[j]
            for band = 0, (rec and #rec / 8 or 0) - 1 do
                local hi8, lo8 = byte(rec, 8 * band + 1, 8 * band + 2)
                local shard = band * 65536 + hi8 * 256 + lo8 - lo8 % __LOW__
                local records = pending[shard]
                if not records then
                    records = ''
                    n = n + 1
                    shards[n] = shard
                end
                pending[shard] = records .. sub(rec, 8 * band + 2, 8 * band + 8) .. id
            end
        end
    end
    local head = prefix .. 't:'
    for i = 1, n do
        local shard, records = shards[i], pending[shards[i]]
        local name = head .. char(floor(shard / 16777216), floor(shard / 65536) % 256,
                                  floor(shard / 256) % 256, shard % 256)
        local blob = redis.call('GET', name)
        for r = 1, #records, 12 do
            local record, from = sub(records, r, r + 11), 1
            while blob do
                local at = find(blob, record, from, true)
                if not at then break end
                if at % 12 == 1 then
                    blob = sub(blob, 1, at - 1) .. sub(blob, at + 12)
                    break
                end
                from = at + 1
            end
        end
        if blob == '' then
            redis.call('DEL', name)
        elseif blob then
            redis.call('SET', name, blob)
        end
    end
    for lo = 1, #ids, 4000 do
        local hi = math.min(lo + 3999, #ids)
        for _, hash in ipairs({k_keys, k_sig, k_bands, k_shingles, k_info}) do
            redis.call('HDEL', hash, unpack(ids, lo, hi))
        end
    end
end
"""
# a shard number keeps the top _SHARD_BITS of a band key's first two bytes, as _shards does
_LUA_COMMON = _LUA_COMMON.replace("__LOW__", str(1 << (16 - _SHARD_BITS)))

# First in an insert's transaction. ARGV: prefix, n, the batch's n keys, then (shard key, records)
# per shard. Takes the stored ones among the keys out (the commands that follow replace their
# P:docs entries), then appends the batch's records.
_LUA_INSERT = (
    _LUA_COMMON
    + """
local _, ids = stored(3, 2 + tonumber(ARGV[2]))
drop(ids)
for i = 3 + tonumber(ARGV[2]), #ARGV, 2 do
    redis.call('APPEND', ARGV[i], ARGV[i + 1])
end
return 0
"""
)

# ARGV: prefix, the keys to remove (distinct). Returns how many were stored.
_LUA_REMOVE = (
    _LUA_COMMON
    + """
local keys, ids = stored(2, #ARGV)
drop(ids)
for lo = 1, #keys, 4000 do
    redis.call('ZREM', k_docs, unpack(keys, lo, math.min(lo + 3999, #keys)))
end
if #keys > 0 then redis.call('INCR', k_epoch) end
return #keys
"""
)

# Read only. ARGV: prefix, a hash ('sig' or 'shingles'), document keys. Returns {1 or 0 per key:
# stored or not, the hash's value per key (false where none)}.
_LUA_FETCH = (
    _LUA_COMMON
    + """
local _, ids, at = stored(3, #ARGV)
local flags, values = {}, {}
for j = 1, #ARGV - 2 do
    flags[j] = 0
    values[j] = false
end
for lo = 1, #ids, 4000 do
    local hi = math.min(lo + 3999, #ids)
    local got = redis.call('HMGET', prefix .. ARGV[2], unpack(ids, lo, hi))
    for i = lo, hi do
        flags[at[i] - 2] = 1
        values[at[i] - 2] = got[i - lo + 1]
    end
end
return {flags, values}
"""
)

# Read only: a lookup in one snapshot when its two round trips met a write. ARGV: prefix, flags
# ('s' in it: return shingles; 'b': return each bucket's ids), S shard keys, then for each shard
# the band keys (7 low bytes each) of the buckets looked up in it, concatenated. Returns {per
# bucket (if asked) the 1-based positions of its ids in the script's id list, those ids, their
# keys (false if gone, which atomic writes rule out), and the signatures and (if asked) shingles
# of the ids whose keys are there}.
_LUA_LOOKUP = """
local find, sub = string.find, string.sub
local prefix, flags, shards = ARGV[1], ARGV[2], (#ARGV - 2) / 2
local per_bucket = find(flags, 'b', 1, true)
local function call(command, names, first, last, hash)
    local out, c = {}, 0
    for lo = first, last, 4000 do
        local hi = math.min(lo + 3999, last)
        local got
        if hash then
            got = redis.call(command, hash, unpack(names, lo, hi))
        else
            got = redis.call(command, unpack(names, lo, hi))
        end
        for i = 1, #got do
            c = c + 1
            out[c] = got[i]
        end
    end
    return out
end
local blobs = call('MGET', ARGV, 3, 2 + shards)
local found, seen, ids, n, b = {}, {}, {}, 0, 0
for s = 1, shards do
    local blob, wanted = blobs[s], ARGV[2 + shards + s]
    for k = 1, #wanted, 7 do
        local key, got, g, from = wanted, {}, 0, 1
        if #wanted > 7 then key = sub(wanted, k, k + 6) end
        while blob do
            local at = find(blob, key, from, true)
            if not at then break end
            if at % 12 == 1 then
                local id = sub(blob, at + 7, at + 11)
                local pos = seen[id]
                if not pos then
                    n = n + 1
                    ids[n] = id
                    seen[id] = n
                    pos = n
                end
                g = g + 1
                got[g] = pos
                from = at + 12
            else
                from = at + 1
            end
        end
        if per_bucket then
            b = b + 1
            found[b] = got
        end
    end
end
local keys = call('HMGET', ids, 1, n, prefix .. 'keys')
local present, c = {}, 0
for i = 1, n do
    if keys[i] then
        c = c + 1
        present[c] = ids[i]
    end
end
local sh = {}
if find(flags, 's', 1, true) then sh = call('HMGET', present, 1, c, prefix .. 'shingles') end
return {found, ids, keys, call('HMGET', present, 1, c, prefix .. 'sig'), sh}
"""


# ARGV: 'drop' or 'move', a prefix P and its index's bands, then (move) a prefix Q, its index's
# bands and 'replace' or not. drop deletes the keys of the index under P; move deletes those under
# Q, renames P's onto them and sets Q's epoch above both old ones (a reader between two round trips
# sees a change), and returns 0; without 'replace' an index under Q that holds documents stays,
# and move returns how many.
_LUA_KEYS = """
local char, floor, fmt = string.char, math.floor, string.format
local names = {'layout', 'settings', 'seq', 'epoch', 'docs', 'keys', 'sig', 'shingles', 'bands', 'info'}
local function keys_of(prefix, bands)
    local out = {}
    for i, name in ipairs(names) do out[i] = prefix .. name end
    local head = prefix .. 't:'
    for band = 0, bands - 1 do
        for top = 0, __SHARDS__ - 1 do
            local shard = band * 65536 + top * __LOW__
            out[#out + 1] = head .. char(floor(shard / 16777216), floor(shard / 65536) % 256,
                                         floor(shard / 256) % 256, shard % 256)
        end
    end
    return out
end
local function delete(keys)
    for lo = 1, #keys, 4000 do
        redis.call('DEL', unpack(keys, lo, math.min(lo + 3999, #keys)))
    end
end
local from = keys_of(ARGV[2], tonumber(ARGV[3]))
if ARGV[1] == 'drop' then
    delete(from)
    return 0
end
local target = ARGV[4]
if ARGV[6] ~= 'replace' then
    local held = redis.call('ZCARD', target .. 'docs')
    if held > 0 then return held end
end
local epoch = math.max(tonumber(redis.call('GET', target .. 'epoch')) or 0,
                       tonumber(redis.call('GET', ARGV[2] .. 'epoch')) or 0)
delete(keys_of(target, tonumber(ARGV[5])))
local to = keys_of(target, tonumber(ARGV[3]))
for i = 1, #from do
    if redis.call('EXISTS', from[i]) == 1 then redis.call('RENAME', from[i], to[i]) end
end
redis.call('SET', target .. 'epoch', fmt('%d', epoch + 1))
return 0
""".replace("__SHARDS__", str(1 << _SHARD_BITS)).replace("__LOW__", str(1 << (16 - _SHARD_BITS)))


class _Script:
    """A Lua script's text and SHA1."""

    def __init__(self, source: str) -> None:
        self.source = source.encode()
        self.sha = hashlib.sha1(self.source).hexdigest().encode()


_INSERT = _Script(_LUA_INSERT)
_REMOVE = _Script(_LUA_REMOVE)
_FETCH = _Script(_LUA_FETCH)
_LOOKUP = _Script(_LUA_LOOKUP)
_KEYS = _Script(_LUA_KEYS)


def _bulk(item: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(item), item)


def _bulks(items: Sequence[bytes]) -> bytes:
    return b"".join([b"$%d\r\n%s\r\n" % (len(x), x) for x in items])


def _command(args: Sequence[bytes]) -> bytes:
    """One packed command (RESP array of bulk strings)."""
    return b"*%d\r\n" % len(args) + _bulks(args)


def _head(argc: int, *args: bytes) -> bytes:
    """The start of a packed command of ``argc`` arguments: their count and the first ``args``."""
    return b"*%d\r\n" % argc + _bulks(args)


def _fixed(data: np.ndarray) -> np.ndarray:
    """RESP bulk strings, one per row of uint8[m, width], as the rows of uint8[m, record width]:
    built by numpy, no Python per row."""
    rows, width = data.shape
    head = b"$%d\r\n" % width
    out = np.empty((rows, len(head) + width + 2), dtype=np.uint8)
    out[:, : len(head)] = np.frombuffer(head, dtype=np.uint8)
    out[:, len(head) : len(head) + width] = data
    out[:, len(head) + width :] = (13, 10)
    return out


def _big_endian(values: np.ndarray, width: int = 8) -> np.ndarray:
    """uint8[n, width]: the low ``width`` bytes of each uint64 in ``values``, big-endian."""
    raw = np.ascontiguousarray(values, dtype=">u8").view(np.uint8).reshape(-1, 8)
    out: np.ndarray = raw[:, 8 - width :]
    return out


def _void_values(raw: np.ndarray) -> np.ndarray:
    """uint64[n] from a void array of big-endian numbers up to 8 bytes wide."""
    width = raw.dtype.itemsize
    out = np.zeros((raw.size, 8), dtype=np.uint8)
    out[:, 8 - width :] = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(-1, width)
    values: np.ndarray = out.view(">u8").ravel().astype(np.uint64)
    return values


def _shards(band_keys: np.ndarray) -> np.ndarray:
    """int64 of the shape of ``band_keys`` (uint64[n, bands]): each band key's shard, the number
    whose 4 bytes big-endian end its key name: ``band << 16 | the band key's top 11 bits << 5``."""
    bands = np.arange(band_keys.shape[1], dtype=np.int64) << 16
    top = (band_keys >> np.uint64(64 - _SHARD_BITS)).astype(np.int64) << (16 - _SHARD_BITS)
    out: np.ndarray = top | bands
    return out


def _shard_names(head: bytes, shards: np.ndarray) -> np.ndarray:
    """The key names of ``shards`` (from :func:`_shards`), ``head`` + 4 bytes each, as the rows
    of a uint8 array."""
    out = np.empty((len(shards), len(head) + 4), dtype=np.uint8)
    out[:, : len(head)] = np.frombuffer(head, dtype=np.uint8)
    out[:, len(head) :] = np.ascontiguousarray(shards, dtype=">u4").view(np.uint8).reshape(-1, 4)
    return out


def _interleave(first: Sequence[bytes], second: Sequence[bytes]) -> bytes:
    return b"".join(itertools.chain.from_iterable(zip(first, second, strict=True)))


def _split_prefix(url: str) -> tuple[str, str]:
    """``(url without the prefix parameter, key prefix ending in ':')``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [value for name, value in query if name == "prefix"]
    rest = [(name, value) for name, value in query if name != "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not prefix:
        raise StorageError(
            f"{redact_url(url)}: the prefix parameter is empty; name the index's keys, as in ?prefix=myindex"
        )
    if not prefix.endswith(":"):
        prefix += ":"
    return urlunsplit(parts._replace(query=urlencode(rest))), prefix


def _with_prefix(url: str, prefix: str) -> str:
    """``url`` with its prefix parameter set to ``prefix``."""
    parts = urlsplit(url)
    query = [
        (name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True) if name != "prefix"
    ]
    return urlunsplit(parts._replace(query=urlencode([*query, ("prefix", prefix)])))


# what a lookup path returns: per hit (bucket, id) the bucket's and the id's places, then per id
# (5 bytes) its key, signature and shingles (when asked), None where gone
_Found = tuple[np.ndarray, np.ndarray, list[Any], list[Any], list[Any] | None]


class RedisStorage:
    """An index in a Redis database, its keys under one prefix (see the module docstring).

    ``options``, when given, are redis-py ``Redis(...)`` keyword arguments (host, port, db,
    username, password, ssl, ssl_*, socket_timeout, unix_socket_path...) and decide where and how
    to connect; ``url`` then only names the prefix and what :attr:`url` shows. Without them the
    URL alone connects. Either way the two timeouts default to ``_CONNECT_TIMEOUT_S`` and
    ``_SOCKET_TIMEOUT_S`` unless set.
    """

    def __init__(self, url: str, *, options: Mapping[str, Any] | None = None) -> None:
        self._url = redact_url(url)
        self._given = (url, options)  # for sibling()
        try:
            import redis
        except ImportError as exc:
            raise StorageError(
                f"{self._url}: the Redis backend needs redis-py; install it with pip install 'neardup[redis]'"
            ) from exc
        self._redis_error: type[Exception] = redis.exceptions.RedisError
        self._response_error: type[Exception] = redis.exceptions.ResponseError
        self._no_script: type[Exception] = redis.exceptions.NoScriptError
        self._lock_not_owned: type[Exception] = redis.exceptions.LockNotOwnedError
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
        self._k_keys = p + b"keys"
        self._k_bands = p + b"bands"
        self._k_epoch = p + b"epoch"
        self._k_info = p + b"info"
        self._k_lock = p + b"lock"
        self._section = ExclusiveSection(self._url, self._lock_enter, self._lock_leave)
        self._held: tuple[Any, threading.Event, threading.Thread] | None = None  # see _lock_enter
        # the settings this storage last read: a storage that saw none creates them (SET NX)
        self._seen_settings = False
        self._lock = threading.Lock()
        self._conn: Any = None  # see _send
        self._conn_pid = 0
        defaults = {"socket_connect_timeout": _CONNECT_TIMEOUT_S, "socket_timeout": _SOCKET_TIMEOUT_S}
        if options is not None and options.get("decode_responses"):
            raise StorageError(
                f"{self._url}: decode_responses=True cannot be used: the index stores binary "
                "signatures and band tables; leave it out"
            )
        try:
            if options is None:
                # options in the URL (?socket_timeout=...) override the defaults
                self._client: Any = redis.Redis.from_url(connect_url, **defaults)
            else:
                self._client = redis.Redis(**{**defaults, **options})
        except (TypeError, ValueError, self._redis_error) as exc:
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
            advice = "use another prefix or upgrade neardup"
            if found == b"1":
                advice = (
                    "layout 1 (one Redis set per bucket) was written by an earlier neardup; "
                    "rebuild the index under another prefix, or delete the old index's keys first"
                )
            raise StorageError(
                f"{self._url}: index layout {found!r} under prefix {self.prefix!r} is not readable by "
                f"this neardup (it reads layout {LAYOUT_VERSION}); {advice}"
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

    def _send(self, parts: list[bytes], replies: int) -> list[Any]:
        """Send packed commands (``parts`` concatenated: a few large parts, as each is one
        sendall); read their ``replies``. Every reply is read before the first error reply is
        raised, so the connection stays usable.

        The storage keeps one connection of redis-py's pool for this, behind a lock: taking one
        from the pool and giving it back for each call costs more than a lookup's own work.
        """
        with self._lock:
            if self._conn is None or self._conn_pid != os.getpid():  # a forked child makes its own
                self._conn = self._client.connection_pool.get_connection()
                self._conn_pid = os.getpid()
            conn = self._conn
            if len(parts) > 1 and sum(map(len, parts)) < 1 << 16:
                parts = [b"".join(parts)]  # small: one sendall
            try:
                conn.send_packed_command(parts)
                out: list[Any] = []
                error: Exception | None = None
                for _ in range(replies):
                    try:
                        out.append(conn.read_response())
                    except self._response_error as exc:
                        out.append(exc)
                        error = error or exc
            except BaseException:
                conn.disconnect()  # the next call reconnects
                raise
        if error is not None:
            raise error
        return out

    def _run(self, script: _Script, argc: int, args: bytes) -> Any:
        """Run a script by its SHA1 (sending its text if the server does not have it yet) with
        ``argc`` arguments, packed in ``args``."""
        try:
            return self._send([_head(3 + argc, b"EVALSHA", script.sha, b"0"), args], 1)[0]
        except self._no_script:
            return self._send([_head(3 + argc, b"EVAL", script.source, b"0"), args], 1)[0]

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
        shingle_counts: np.ndarray | None = None,
    ) -> None:
        mask = check_batch(keys, signatures, band_keys, shingles, eligible)
        n = len(keys)
        info = np.empty(n, dtype=_INFO)
        info["shingles"] = check_counts(shingle_counts, n)
        if n == 0:
            return
        info["inserted_at"] = time.time()
        sigs = np.ascontiguousarray(signatures, dtype="<u4").view(np.uint8).reshape(n, -1)
        bands = np.ascontiguousarray(band_keys, dtype=np.uint64)
        key_recs = [_bulk(k) for k in self._encode(keys)]
        with self._errors("inserting documents"):
            top = int(self._client.incrby(self._k_seq, n))  # a failed insert leaves a gap: harmless
        if top > _MAX_ID:
            raise StorageError(
                f"{self._url}: the index has handed out all {_MAX_ID} document ids its layout "
                "allows; rebuild it under another prefix"
            )
        ids = np.arange(top - n + 1, top + 1, dtype=np.uint64)
        # One script per _SCRIPT_DOCS documents keeps each command's size and Lua heap bounded;
        # MULTI/EXEC makes them one step. Scripts go by their text: an EVALSHA that the server
        # lacks would fail inside EXEC only, after the commands before it had run.
        parts = [_command([b"MULTI"])]
        scripts = 0
        for lo in range(0, n, _SCRIPT_DOCS):
            hi = min(n, lo + _SCRIPT_DOCS)
            part = np.flatnonzero(mask[lo:hi]) + lo
            shard_args, shards = self._shard_args(ids[part], bands[part])
            parts += [
                _head(5 + (hi - lo) + 2 * shards, b"EVAL", _INSERT.source, b"0", self._prefix_bytes),
                _bulk(b"%d" % (hi - lo)),
                b"".join(key_recs[lo:hi]),
                shard_args,
            ]
            scripts += 1
        doc_parts, doc_commands = self._doc_commands(key_recs, ids, sigs, bands, mask, shingles, info)
        parts += [*doc_parts, _command([b"INCR", self._k_epoch]), _command([b"EXEC"])]
        with self._errors("inserting documents"):
            replies = self._send(parts, 3 + scripts + doc_commands)
        # a command that fails inside EXEC does not undo the others; only keys of another type
        # under the prefix can make one fail, and then the index needs rebuilding anyway
        failed = [r for r in replies[-1] if isinstance(r, Exception)]
        if failed:
            raise StorageError(f"{self._url}: inserting documents failed: {failed[0]}")

    def _shard_args(self, ids: np.ndarray, bands: np.ndarray) -> tuple[bytes, int]:
        """The insert script's (shard key, records) arguments for documents ``ids`` (uint64[m])
        with band keys ``bands`` (uint64[m, bands]), packed; and how many shards they fill."""
        m, width = bands.shape
        if m == 0 or width == 0:
            return b"", 0
        shards = _shards(bands).ravel()
        # two stable uint16 sorts (radix sorts) by the low then the high 16 bits: shards < 2**32
        order = np.argsort((shards & 0xFFFF).astype(np.uint16), kind="stable")
        order = order[np.argsort((shards[order] >> 16).astype(np.uint16), kind="stable")]
        records = np.empty((m * width, _RECORD), dtype=np.uint8)
        records[:, :_KEY_BYTES] = _big_endian(bands.ravel()[order], _KEY_BYTES)
        records[:, _KEY_BYTES:] = _big_endian(ids[order // width], _ID_BYTES)
        raw = records.tobytes()
        shards = shards[order]
        starts = np.flatnonzero(np.diff(shards, prepend=-1))
        ends = np.append(starts[1:], shards.size)
        names = [row.tobytes() for row in _shard_names(self._prefix_bytes + b"t:", shards[starts])]
        packed = b"".join(
            [
                b"$%d\r\n%s\r\n$%d\r\n%s\r\n"
                % (len(name), name, _RECORD * (hi - lo), raw[_RECORD * lo : _RECORD * hi])
                for name, lo, hi in zip(names, starts.tolist(), ends.tolist(), strict=True)
            ]
        )
        return packed, starts.size

    def _doc_commands(
        self,
        key_recs: list[bytes],
        ids: np.ndarray,
        sigs: np.ndarray,
        bands: np.ndarray,
        mask: np.ndarray,
        shingles: Sequence[np.ndarray] | None,
        info: np.ndarray,
    ) -> tuple[list[bytes], int]:
        """The ZADD / HSET commands that store the documents, and how many they are."""
        n = len(key_recs)
        id_recs = _fixed(_big_endian(ids, _ID_BYTES))
        by_id = _fixed(sigs)  # (id, signature) argument pairs, packed by numpy
        sig_pairs = np.concatenate([id_recs, by_id], axis=1)
        info_pairs = np.concatenate([id_recs, _fixed(info.view(np.uint8).reshape(n, -1))], axis=1)
        band_pairs = np.concatenate([id_recs, _fixed(_big_endian(bands.ravel()).reshape(n, -1))], axis=1)
        id_raw, id_width = id_recs.tobytes(), id_recs.shape[1]
        scores = [_bulk(b"%d" % i) for i in ids.tolist()]
        parts: list[bytes] = []
        commands = 0
        for lo in range(0, n, _DOC_CHUNK):
            hi = min(n, lo + _DOC_CHUNK)
            argc = 2 + 2 * (hi - lo)
            chunk_keys = key_recs[lo:hi]
            rows = np.flatnonzero(mask[lo:hi]) + lo
            parts += [
                _head(argc, b"ZADD", self._k_docs),
                _interleave(scores[lo:hi], chunk_keys),
                _head(argc, b"HSET", self._k_keys),
                _interleave([id_raw[i * id_width : (i + 1) * id_width] for i in range(lo, hi)], chunk_keys),
                _head(argc, b"HSET", self._k_sig),
                sig_pairs[lo:hi].tobytes(),
                _head(argc, b"HSET", self._k_info),
                info_pairs[lo:hi].tobytes(),
            ]
            commands += 4
            if rows.size:
                parts += [_head(2 + 2 * rows.size, b"HSET", self._k_bands), band_pairs[rows].tobytes()]
                commands += 1
            if shingles is not None:
                blobs = [_bulk(np.ascontiguousarray(s, dtype="<u8").tobytes()) for s in shingles[lo:hi]]
                parts += [
                    _head(argc, b"HSET", self._k_shingles),
                    _interleave([id_raw[i * id_width : (i + 1) * id_width] for i in range(lo, hi)], blobs),
                ]
                commands += 1
        return parts, commands

    def lookup(
        self, band_keys: np.ndarray, *, shingles: bool = False, mask: np.ndarray | None = None
    ) -> Candidates:
        keys = np.ascontiguousarray(band_keys, dtype=np.uint64)
        if keys.ndim != 2:
            raise ValueError(f"band keys must be a 2-D array (queries x bands), got shape {keys.shape}")
        m = keys.shape[0]
        wanted = lookup_mask(keys, mask)
        cells = wanted.sum(axis=1)  # the bands each row looks up
        empty = np.empty(0, dtype=np.int64)
        if m == 0 or not cells.any():
            return Candidates([], np.empty((0, 0), dtype=np.uint32), [empty] * m, [] if shingles else None)
        # the distinct buckets, by shard; inverse: each (row, band)'s among them
        buckets = np.empty(int(cells.sum()), dtype=[("shard", "<i8"), ("key", "<u8")])
        buckets["shard"] = _shards(keys)[wanted]
        buckets["key"] = keys[wanted]
        inverse = shards_at = np.arange(len(buckets))
        shards = buckets["shard"]
        if m > 1:  # a row's buckets are distinct already, each in a band (and a shard) of its own
            buckets, inverse = np.unique(buckets, return_inverse=True)
            shards, shards_at = np.unique(buckets["shard"], return_index=True)
        with self._errors("looking up candidates"):
            found = self._lookup_plain(buckets, shards, shards_at, shingles, per_bucket=m > 1)
            if found is None:  # a write came between the two round trips
                found = self._lookup_script(buckets, shards, shards_at, shingles, per_bucket=m > 1)
        hit_bucket, hit_id, raw_keys, sigs, sets = found
        present = [i for i, k in enumerate(raw_keys) if isinstance(k, bytes)]
        if not present:
            return Candidates([], np.empty((0, 0), dtype=np.uint32), [empty] * m, [] if shingles else None)
        names = [raw_keys[i].decode() for i in present]
        order = sorted(range(len(names)), key=names.__getitem__)
        if m == 1:  # every id found is the one row's
            rows = [np.arange(len(names))]
        else:  # expand (row, bucket) into (row, candidate) pairs, then keep each pair once
            slot = np.full(len(raw_keys), -1, dtype=np.int64)  # id -> its key's place in the answer
            slot[np.asarray(present, dtype=np.int64)[order]] = np.arange(len(names))
            by_bucket = np.argsort(hit_bucket, kind="stable")
            cands = slot[hit_id[by_bucket]]
            sizes = np.bincount(hit_bucket, minlength=len(buckets))
            per_entry = sizes[inverse.ravel()]
            first = np.cumsum(sizes) - sizes
            at = np.repeat(first[inverse.ravel()] - (np.cumsum(per_entry) - per_entry), per_entry)
            cand = cands[at + np.arange(at.size)]
            row = np.repeat(np.arange(m, dtype=np.int64), cells).repeat(per_entry)
            pairs = sorted_unique((row * len(names) + cand)[cand >= 0])
            ends = np.searchsorted(pairs, np.arange(m + 1, dtype=np.int64) * len(names))
            rows = [pairs[ends[q] : ends[q + 1]] - q * len(names) for q in range(m)]
        ranked = [present[i] for i in order]
        signatures = np.frombuffer(b"".join([sigs[i] for i in ranked]), dtype="<u4")
        stored_sets = None
        if sets is not None:
            stored_sets = [
                np.frombuffer(sets[i], dtype="<u8").astype(np.uint64) if isinstance(sets[i], bytes) else None
                for i in ranked
            ]
        return Candidates(
            [names[i] for i in order],
            signatures.reshape(len(names), -1).astype(np.uint32),
            rows,
            stored_sets,
        )

    def _lookup_plain(
        self, buckets: np.ndarray, shards: np.ndarray, first: np.ndarray, shingles: bool, *, per_bucket: bool
    ) -> _Found | None:
        """Look the buckets up in two round trips of plain commands; None if a write came
        between them. ``buckets`` are distinct (shard, band key) pairs sorted by shard, ``shards``
        the distinct shards and ``first`` where each one's buckets start; ``per_bucket`` asks for
        each hit's bucket (one row needs only the ids).

        The first round trip reads the epoch with the shards, in one command; the second reads
        the ids' keys and signatures, then the epoch again: every write raises the epoch in the
        step that makes it, so an unchanged epoch proves that both read one state.
        """
        names = _fixed(_shard_names(self._prefix_bytes + b"t:", shards)).tobytes()
        read = _head(2 + shards.size, b"MGET", self._k_epoch) + names
        epoch, *blobs = self._send([read], 1)[0]
        blobs = [b or b"" for b in blobs]
        hits = (
            self._match_few(buckets, first, blobs, per_bucket=per_bucket)
            if len(buckets) < _NUMPY_BUCKETS
            else self._match_many(buckets, shards, first, blobs)
        )
        if hits is None:
            return None
        hit_bucket, hit_id, ids = hits
        if not ids:
            return hit_bucket, hit_id, [], [], [] if shingles else None
        packed_ids = _bulks(ids)
        hashes = [self._k_keys, self._k_sig, *([self._k_shingles] if shingles else [])]
        parts = [part for h in hashes for part in (_head(2 + len(ids), b"HMGET", h), packed_ids)]
        raw_keys, sigs, *rest = self._send([*parts, _command([b"GET", self._k_epoch])], len(hashes) + 1)
        if rest[-1] != epoch:
            return None
        return hit_bucket, hit_id, raw_keys, sigs, rest[0] if shingles else None

    @staticmethod
    def _match_few(
        buckets: np.ndarray, first: np.ndarray, blobs: list[bytes], *, per_bucket: bool
    ) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        """The records of ``blobs`` (the shards, in order) that are in one of the buckets: per
        hit (only if ``per_bucket``) its bucket's place and its id's place among the distinct
        ids, which follow. Found with bytes.find: for a few buckets, numpy costs more."""
        wanted = _big_endian(buckets["key"], _KEY_BYTES).tobytes()
        seen: dict[bytes, int] = {}
        hit_bucket: list[int] = []
        hit_id: list[int] = []
        for shard, (lo, hi) in enumerate(itertools.pairwise([*first.tolist(), len(buckets)])):
            blob = blobs[shard]
            for bucket in range(lo, hi):
                key = wanted[_KEY_BYTES * bucket : _KEY_BYTES * (bucket + 1)]
                at = blob.find(key)
                while at >= 0:
                    if at % _RECORD:
                        at = blob.find(key, at + 1)
                        continue
                    place = seen.setdefault(blob[at + _KEY_BYTES : at + _RECORD], len(seen))
                    if per_bucket:
                        hit_bucket.append(bucket)
                        hit_id.append(place)
                    at = blob.find(key, at + _RECORD)
        return np.array(hit_bucket, dtype=np.int64), np.array(hit_id, dtype=np.int64), list(seen)

    @staticmethod
    def _match_many(
        buckets: np.ndarray, shards: np.ndarray, first: np.ndarray, blobs: list[bytes]
    ) -> tuple[np.ndarray, np.ndarray, list[bytes]] | None:
        """As :meth:`_match_few`, with numpy; None in the (2**-64) case that it cannot tell two
        buckets apart."""
        sizes = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)) // _RECORD
        records = np.frombuffer(b"".join(blobs), dtype=[("key", f"V{_KEY_BYTES}"), ("id", f"V{_ID_BYTES}")])
        record_shard = np.repeat(np.arange(shards.size), sizes)
        wanted = np.ascontiguousarray(_big_endian(buckets["key"], _KEY_BYTES)).view(f"V{_KEY_BYTES}").ravel()
        per_shard = np.diff(first, append=len(buckets))
        # a record of a shard with one bucket can only be that bucket's
        at = first[record_shard]
        hit = records["key"] == wanted[at]
        crowded = np.flatnonzero(per_shard[record_shard] > 1)
        if crowded.size:  # the others: match (shard, key) through a 64-bit hash, then check
            stride = np.uint64(0x9E3779B97F4A7C15)
            bucket_shard = np.repeat(np.arange(shards.size), per_shard)
            bucket_hash = _void_values(wanted) + bucket_shard.astype(np.uint64) * stride
            by_hash = np.argsort(bucket_hash)
            sorted_hash = bucket_hash[by_hash]
            if np.any(sorted_hash[1:] == sorted_hash[:-1]):
                return None
            shard_of, keys = record_shard[crowded], records["key"][crowded]
            record_hash = _void_values(keys) + shard_of.astype(np.uint64) * stride
            found = by_hash[np.minimum(np.searchsorted(sorted_hash, record_hash), len(buckets) - 1)]
            at[crowded] = found
            hit[crowded] = (bucket_shard[found] == shard_of) & (wanted[found] == keys)
        values, hit_id = np.unique(_void_values(records["id"][hit]), return_inverse=True)
        raw = _big_endian(values, _ID_BYTES).tobytes()
        ids = [raw[i : i + _ID_BYTES] for i in range(0, len(raw), _ID_BYTES)]
        return at[hit], hit_id.ravel(), ids

    def _lookup_script(
        self, buckets: np.ndarray, shards: np.ndarray, first: np.ndarray, shingles: bool, *, per_bucket: bool
    ) -> _Found:
        """Look the buckets up in one read-only script (see ``_LUA_LOOKUP``); the arguments as
        for :meth:`_lookup_plain`."""
        names = _fixed(_shard_names(self._prefix_bytes + b"t:", shards)).tobytes()
        raw = _big_endian(buckets["key"], _KEY_BYTES).tobytes()
        bounds = [*(_KEY_BYTES * first).tolist(), len(raw)]
        flags = (b"s" if shingles else b"") + (b"b" if per_bucket else b"")
        args = (
            _bulks([self._prefix_bytes, flags])
            + names
            + _bulks([raw[lo:hi] for lo, hi in itertools.pairwise(bounds)])
        )
        found, ids, raw_keys, sigs, sets = self._run(_LOOKUP, 2 + 2 * shards.size, args)
        sizes = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
        hit_bucket = np.repeat(np.arange(len(found), dtype=np.int64), sizes)
        hit_id = np.fromiter(itertools.chain.from_iterable(found), dtype=np.int64, count=int(sizes.sum())) - 1
        # the script returns signatures and shingles of the ids whose keys are there: align them
        present = [i for i, k in enumerate(raw_keys) if isinstance(k, bytes)]
        sig_list: list[Any] = [None] * len(ids)
        set_list: list[Any] = [None] * len(ids)
        for j, i in enumerate(present):
            sig_list[i] = sigs[j]
            set_list[i] = sets[j] if shingles else None
        return hit_bucket, hit_id, raw_keys, sig_list, set_list if shingles else None

    def _fetch(self, keys: Sequence[str], hash_name: bytes, action: str) -> list[Any]:
        """Each key's value in ``P:<hash_name>`` (by its id), None where there is none;
        ``KeyError`` names a key that is not stored."""
        encoded = self._encode(keys)
        with self._errors(action):
            stored, values = self._run(
                _FETCH, 2 + len(encoded), _bulks([self._prefix_bytes, hash_name, *encoded])
            )
        if not all(stored):
            key = next(k for k, s in zip(keys, stored, strict=True) if not s)
            raise KeyError(f"no document with key {key!r} in {self._url}")
        return [v if isinstance(v, bytes) else None for v in values]

    def get_signatures(self, keys: Sequence[str]) -> np.ndarray:
        if not keys:
            return np.empty((0, 0), dtype=np.uint32)
        blobs = self._fetch(keys, b"sig", "reading signatures")
        flat = np.frombuffer(b"".join([b or b"" for b in blobs]), dtype="<u4")
        return flat.reshape(len(keys), -1).astype(np.uint32)

    def get_shingles(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        if not keys:
            return []
        blobs = self._fetch(keys, b"shingles", "reading shingles")
        return [None if b is None else np.frombuffer(b, dtype="<u8").astype(np.uint64) for b in blobs]

    def info(self, keys: Sequence[str]) -> list[DocumentInfo | None]:
        if not keys:
            return []
        encoded = self._encode(keys)
        with self._errors("reading document info"):
            stored, values = self._run(
                _FETCH, 2 + len(encoded), _bulks([self._prefix_bytes, b"info", *encoded])
            )
        out: list[DocumentInfo | None] = []
        for key, flag, value in zip(keys, stored, values, strict=True):
            if not flag:
                out.append(None)
            elif not isinstance(value, bytes):  # stored by a neardup that did not record it
                out.append(DocumentInfo(key, None, None))
            else:
                record = np.frombuffer(value, dtype=_INFO)[0]
                count = int(record["shingles"])
                out.append(DocumentInfo(key, float(record["inserted_at"]), None if count < 0 else count))
        return out

    def remove(self, keys: Sequence[str]) -> int:
        unique = self._encode(list(dict.fromkeys(keys)))
        if not unique:
            return 0
        with self._errors("removing documents"):
            removed = self._run(_REMOVE, 1 + len(unique), _bulks([self._prefix_bytes, *unique]))
        return int(removed)

    def contains(self, key: str) -> bool:
        with self._errors("looking up a key"):
            return self._client.zscore(self._k_docs, key.encode()) is not None

    def count(self) -> int:
        with self._errors("counting documents"):
            return int(self._client.zcard(self._k_docs))

    def keys(self) -> Iterator[str]:
        low: str | float = "-inf"
        while True:  # pages by id, so a concurrent removal cannot shift a page
            with self._errors("listing keys"):
                page = self._client.zrangebyscore(
                    self._k_docs, low, "+inf", start=0, num=_PAGE, withscores=True
                )
            if not page:
                return
            low = f"({int(page[-1][1])}"
            for member, _ in page:
                yield member.decode()

    def epoch(self) -> int:
        """``P:epoch``: raised by every insert and removal in the step that makes it."""
        with self._errors("reading the epoch"):
            return int(self._client.get(self._k_epoch) or 0)

    def size_bytes(self) -> int | None:
        return None

    # -- whole indexes -------------------------------------------------------------------------

    @property
    def database(self) -> tuple[str, int, int]:
        """(host or socket path, port, db): storages with equal ones and equal prefixes share
        one index."""
        kwargs = self._client.connection_pool.connection_kwargs
        return (
            str(kwargs.get("path") or kwargs.get("host")),
            int(kwargs.get("port") or 0),
            int(kwargs.get("db") or 0),
        )

    def sibling(self, prefix: str) -> RedisStorage:
        """A storage in the same database, reached the same way, under the key prefix ``prefix``."""
        url, options = self._given
        return RedisStorage(_with_prefix(url, prefix), options=options)

    def _bands(self) -> int:
        """Band columns per document (the shards' band numbers run below it)."""
        settings = self.read_settings()
        if not settings:
            return 0
        try:
            return IndexSettings.from_dict(settings).band_columns
        except (IndexSettingsError, ConfigError):  # unreadable settings: drop what they say
            return int(settings.get("bands", 0))

    def drop(self) -> None:
        """Delete every key of this index, its layout included, in one step (then close it)."""
        bands = self._bands()
        with self._errors("deleting the index"):
            self._run(_KEYS, 3, _bulks([b"drop", self._prefix_bytes, b"%d" % bands]))

    def move_to(self, target: RedisStorage, *, replace: bool = True) -> int:
        """Make this index the one under ``target``'s prefix, in one step, and return 0:
        ``target``'s keys are deleted and this index's renamed onto them, with an epoch above
        both old ones, so a reader of ``target`` sees the old index or this one, never a mixture.
        This prefix is empty afterwards. Without ``replace``, a ``target`` that holds documents
        is left as it is, and so is this index: the return value is how many it holds.
        ``target`` must be in the same database."""
        if target.database != self.database:
            raise StorageError(
                f"{self._url}: cannot move the index to {target.url}, which is in another database"
            )
        args = [
            b"move",
            self._prefix_bytes,
            b"%d" % self._bands(),
            target._prefix_bytes,
            b"%d" % target._bands(),
            b"replace" if replace else b"keep",
        ]
        with self._errors(f"moving the index to {target.url}"):
            return int(self._run(_KEYS, 6, _bulks(args)))

    def exclusive(self) -> AbstractContextManager[None]:
        """The exclusive section of every process that opens this index on this server, under this
        prefix (see the module docstring)."""
        return self._section.hold()

    def _lock_enter(self, deadline: float, wait: float) -> None:
        """Take ``P:lock``, waiting until ``deadline`` (time.monotonic(), ``wait`` s after the
        start), and start renewing it."""
        lock = self._client.lock(
            self._k_lock,
            timeout=_LOCK_TIMEOUT_S,
            sleep=_LOCK_POLL_S,
            blocking_timeout=max(0.0, deadline - time.monotonic()),
            thread_local=False,  # the renewing thread needs the token too
        )
        with self._errors("entering the exclusive section"):
            acquired = lock.acquire()
        if not acquired:
            raise StorageError(
                f"{self._url}: another holder held the index's exclusive section (key "
                f"{self.prefix}lock) for more than {wait:g} s; try again later (a "
                f"holder that died frees it within {_LOCK_TIMEOUT_S:g} s)"
            )
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(lock, stop), name="neardup-lock", daemon=True)
        renewer.start()
        self._held = (lock, stop, renewer)

    def _renew(self, lock: Any, stop: threading.Event) -> None:
        """Reset the lock's expiry every third of it until ``stop`` is set."""
        while not stop.wait(_LOCK_TIMEOUT_S / 3):
            try:
                lock.reacquire()
            except self._redis_error:  # lost or unreachable: leaving the section reports it
                return

    def _lock_leave(self) -> None:
        if self._held is None:
            return
        (lock, stop, renewer), self._held = self._held, None
        stop.set()
        renewer.join()
        with self._errors("leaving the exclusive section"):
            try:
                lock.release()
            except self._lock_not_owned as exc:
                raise StorageError(
                    f"{self._url}: the exclusive section's lock ({self.prefix}lock) expired while it "
                    f"was held: the holder lost touch with the server for more than {_LOCK_TIMEOUT_S:g} "
                    "s, and another holder may have entered meanwhile"
                ) from exc

    def close(self) -> None:
        with self._errors("closing the index"), self._lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._client.connection_pool.release(self._conn)
            self._conn = None
            self._client.close()
