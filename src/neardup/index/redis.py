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
    P:bands         hash    id -> its band keys, 8 bytes each, one per band, for every document
                            whose records are in the shards (stored, or listed in P:dead; absent
                            for an empty document): what a sweep takes out of the band tables
    P:info          hash    id -> the insert's Unix time (float64) then the shingle count (int64,
                            -1 if unknown), little-endian, 16 bytes: Storage.info()
    P:lock          string  the holder's token while one holds the exclusive section (SET NX PX)
    P:dead          zset    -> the writer's Unix time: the id of a document taken out whose band
                            records are in the shards, to sweep; or a round's first and last ids
                            (10 bytes) while its records are in the shards and its documents not
                            all stored (pending)
    P:t:<4 bytes>   string  a band-table shard: 12-byte records, the low 7 bytes of a band key
                            then the id of the document that has it

``P:info``, ``P:lock`` and ``P:dead`` came after layout 2's first release and leave it layout 2: a
document without ``P:info`` (written by an earlier neardup) reports its time and count as unknown,
and an earlier neardup that removes or replaces documents leaves their ``P:info`` entries behind,
unread, as ids are never reused. An earlier neardup reads an index with ``P:dead`` entries as
this one does (band records whose ids have no key are skipped); its ``drop`` leaves ``P:dead``
behind, which this neardup deletes when it creates an index under that prefix again.

Ids are positive integers from ``P:seq``, written as 5 bytes (at most 2**40 - 1 of them) except
as ``P:docs`` scores; a replaced document gets a new id, so it moves to the end of ``keys()``.
Numbers are big-endian. A document has one record per band, in the shard named by the band (2
bytes) and the band key's top 11 bits (2 bytes, the low 5 bits zero): a band's records spread
evenly over 2048 shards, the shard and the record's 56 bits name the (band, band key) exactly,
and looking up a bucket scans one shard (100,000 documents make shards of about 50 records). A
record costs 12 bytes, plus what APPEND reserves for growth (up to as much again): the band
tables take about 30 bytes of server memory per document and band, against about 240 with one
Redis set per bucket (layout 1).

Writes are bounded pieces, so that Redis never holds other clients for long (a script that runs
past ``busy-reply-threshold``, 5 s by default, has every other client answered ``BUSY``): each
script and transaction of neardup touches at most a few thousand documents or shards and runs in
tens of milliseconds (RESULTS.md section 17). Band records are only ever reached through an id,
and a reader skips an id without a key, so the records of a document can go into the shards
before it is stored and stay after it is gone. An insert reserves its ids with one INCRBY, then,
``_ROUND_DOCS`` documents at a time, with commands packed by numpy:

1. lists the round in ``P:dead`` (pending) and its documents' band keys in ``P:bands``, before
   any record is written;
2. APPENDs each shard's new records (scripts of at most ``_APPEND_SHARDS`` shards; a shard's
   records go in one argument, as a script pays up to a microsecond per argument);
3. stores the documents, ``_PIECE_DOCS`` per MULTI/EXEC: a script (``_LUA_INSERT``) takes the
   documents of the replaced keys out (their keys, signatures, shingles and info deleted, their
   ids listed in ``P:dead``), then variadic ZADD / HSET commands write the new ones and an INCR
   raises ``P:epoch``. A reader sees a piece whole or not at all. Then the round's ``P:dead``
   entry goes;
4. sweeps the replaced documents' records out of the shards (``_sweep``: scripts of at most
   ``_SWEEP_SHARDS`` shards that stop after about ``_SWEEP_BYTES`` read, each shard read and
   written once per round, however many of its records go), then their ``P:dead`` and
   ``P:bands`` entries.

A removal is one script per ``_PIECE_DOCS`` keys (which takes the documents out as a piece
takes replaced ones, and ZREMs their keys), then the sweep. A batch of one piece is all or
nothing. A larger batch that fails or is killed part way leaves the pieces applied so far, whole
documents each: a key holds its old document or its new one, never a mixture, and running the
same insert (or removal) again completes it. The records that a killed writer left (pending, or
of documents it took out but had not swept) stay listed in ``P:dead``, invisible; an insert or
removal sweeps the entries older than ``_DEAD_AGE_S`` (a piece of a writer that stalled that long
between its steps finds its round claimed or gone, and appends the records taken again).

A lookup reads in two round trips of plain commands: ``MGET P:epoch <shards>`` (the shards of the
distinct buckets, ``_MGET_SHARDS`` per MGET), whose records the client matches against the buckets
(bytes.find for a few buckets, numpy for many), then ``HMGET`` of the ids' keys and signatures
(and shingles) and ``GET P:epoch`` in one transaction. Every write raises the epoch in the step
that makes it, so an unchanged epoch proves that no write came between the two reads, and the
lookup read one snapshot. After a write, a lookup of up to ``_LOOKUP_SCRIPT_BYTES`` of shards
runs again as one read-only script that does the same inside Redis (which costs the server
about twice as much: a script pays to copy each shard in); a larger one, whose script could
hold the server for a second, keeps what it read: each document whole (its key, signature and
shingles read in one step), but one written meanwhile may be missing from the rows it matches.
:meth:`RedisStorage.get_signatures`, ``get_shingles`` and ``info`` read ``_FETCH_KEYS`` keys per
script. The scripts build key names at run time, so the layout needs a single Redis server (not
Redis Cluster).

:meth:`RedisStorage.move_to` replaces the index under another prefix of the same database by this
one in one script (the other's keys deleted, this one's renamed onto them, its epoch raised above
both), and :meth:`RedisStorage.drop` deletes an index's keys: both name every key the layout can
have, those above but ``P:lock`` and the ``bands * 2048`` shards, so no key of another prefix is
touched. They are the longest scripts neardup runs, bounded by the layout's number of keys
whatever the index holds: UNLINK frees large hashes and sets off Redis's main thread, and RENAME
moves a key without copying it. A move of a 600,000-document index of 32 bands (65,536 shards)
took 0.29 s, a drop 0.15 s (RESULTS.md section 17).

The socket timeout is ``_SOCKET_TIMEOUT_S`` (30 s; redis-py 8's own is 5 s)
and the connect timeout ``_CONNECT_TIMEOUT_S`` (5 s). The longest command neardup sends (a
``move_to``) takes a fraction of a second, but a command may wait behind other clients' (many
writers' pieces, or another program's slow command): 30 s leaves room for that, and a server
that does not answer within it is down or stuck, which the error then says, naming the option.
``?socket_timeout=S&socket_connect_timeout=S`` in the URL (or the options) set them.

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
_CONNECT_TIMEOUT_S = 5.0
_SOCKET_TIMEOUT_S = 30.0  # see the module docstring: neardup's longest command takes under 1 s
_PAGE = 1000
# A write is bounded scripts (RESULTS.md section 17): an insert goes in rounds of _ROUND_DOCS
# documents, whose records go to the shards in scripts of at most _APPEND_SHARDS shards and
# _APPEND_BYTES, then pieces of _PIECE_DOCS documents, each one script.
_ROUND_DOCS = 50_000
_APPEND_SHARDS = 1024
_APPEND_BYTES = 8 << 20
_PIECE_DOCS = 1000
_SWEEP_SHARDS = 1024  # shards per sweep script
_SWEEP_BYTES = 1 << 20  # a sweep script stops after reading about this much of the shards
_DEAD_AGE_S = 600.0  # P:dead entries older than this were left by a writer that died: swept
_MGET_SHARDS = 4096  # shards per MGET of a lookup
_LOOKUP_SCRIPT_BYTES = 4 << 20  # a lookup that met a write reruns as one script up to this much
_FETCH_KEYS = 10_000  # keys per read script of get_signatures / get_shingles / info
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
local k_info, k_dead = prefix .. 'info', prefix .. 'dead'

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

-- takes stored documents (their ids) out: deletes their keys, signatures, shingles and info
-- and lists the ids in P:dead (scored by the time ``now``), their band keys staying in P:bands
-- until a sweep has taken their records out of the shards; returns (id .. band keys) for those
local function kill(ids, now)
    local dead = {}
    for lo = 1, #ids, 2000 do
        local hi = math.min(lo + 1999, #ids)
        local bands = redis.call('HMGET', k_bands, unpack(ids, lo, hi))
        local scored = {}
        for j = lo, hi do
            local rec = bands[j - lo + 1]
            if rec then
                dead[#dead + 1] = ids[j] .. rec
                scored[#scored + 1] = now
                scored[#scored + 1] = ids[j]
            end
        end
        if #scored > 0 then redis.call('ZADD', k_dead, unpack(scored)) end
        for _, hash in ipairs({k_keys, k_sig, k_shingles, k_info}) do
            redis.call('HDEL', hash, unpack(ids, lo, hi))
        end
    end
    return dead
end
"""

# Appends records to shards. ARGV: (shard key, records) per shard.
_LUA_APPEND = """
for i = 1, #ARGV, 2 do
    redis.call('APPEND', ARGV[i], ARGV[i + 1])
end
return 0
"""

# First in a piece's transaction, whose commands then store its documents. ARGV: prefix, the
# time, n, the round's P:dead marker, the piece's n keys, its b documents with band records:
# their ids, then their band keys (b rows of 8 bytes a band, in one argument). Those records are
# in the shards already (under ids without keys, which readers skip), listed in P:bands, and the
# round's ids in P:dead by its marker (pending). If an orphan sweep has claimed the marker (score
# 0) or taken it (the round waited longer than _DEAD_AGE_S), the records that sweep took are
# appended again (a sweep leaves the records of an id that is live when it reaches their shard).
# Takes the stored ones among the keys out (the commands that follow replace their P:docs
# entries). Returns kill()'s list.
_LUA_INSERT = (
    _LUA_COMMON
    + """
local n = tonumber(ARGV[3])
local first, last = 5 + n, #ARGV - 1
local score = redis.call('ZSCORE', k_dead, ARGV[4])
if (not score or tonumber(score) == 0) and last >= first then  -- swept: its records again
    local bands, head = ARGV[#ARGV], prefix .. 't:'
    local width = #bands / (last - first + 1)
    for j = first, last do
        local id = ARGV[j]
        local row = string.sub(bands, width * (j - first) + 1, width * (j - first + 1))
        for band = 0, width / 8 - 1 do
            local hi8, lo8 = string.byte(row, 8 * band + 1, 8 * band + 2)
            local top = lo8 - lo8 % __LOW__
            local shard = head .. string.char(math.floor(band / 256), band % 256, hi8, top)
            local record, from = string.sub(row, 8 * band + 2, 8 * band + 8) .. id, 1
            local blob = redis.call('GET', shard) or ''
            while true do
                local p = string.find(blob, record, from, true)
                if not p or p % 12 == 1 then
                    if not p then redis.call('APPEND', shard, record) end
                    break
                end
                from = p + 1
            end
        end
        redis.call('HSET', k_bands, id, row)
    end
end
local _, old = stored(5, 4 + n)
return kill(old, ARGV[2])
"""
).replace("__LOW__", str(1 << (16 - _SHARD_BITS)))

# ARGV: prefix, the time, the keys to remove (distinct). Returns {how many were stored, the
# P:dead members}.
_LUA_REMOVE = (
    _LUA_COMMON
    + """
local keys, ids = stored(3, #ARGV)
local dead = kill(ids, ARGV[2])
for lo = 1, #keys, 4000 do
    redis.call('ZREM', k_docs, unpack(keys, lo, math.min(lo + 3999, #keys)))
end
if #keys > 0 then redis.call('INCR', k_epoch) end
return {#keys, dead}
"""
)

# Takes dead documents' records out of their shards. ARGV: prefix, a budget (bytes), the ids
# (5 bytes each, concatenated) whose records to leave if they are live (entries that this sweep
# did not just make: see RedisStorage._sweep), then (shard key, records to take out, in the
# order of their ids) per shard. Each shard is read and written once: its records found with
# string.find (all at once where they are one run, as the records of documents inserted together
# and taken out together are), the spans between them joined. Stops after the shard that takes
# the bytes read past the budget and returns how many shards it did. Changes nothing that a
# reader sees: the records name ids without keys, which lookups skip.
_LUA_SWEEP = """
local sub, find, concat = string.sub, string.find, table.concat
local prefix, budget, guarded = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local live, any_live = {}, false
if #guarded > 0 then
    local ids = {}
    for i = 1, #guarded, 5 do ids[#ids + 1] = sub(guarded, i, i + 4) end
    for lo = 1, #ids, 4000 do
        local hi = math.min(lo + 3999, #ids)
        local got = redis.call('HMGET', prefix .. 'keys', unpack(ids, lo, hi))
        for j = lo, hi do
            if got[j - lo + 1] then
                live[ids[j]] = true
                any_live = true
            end
        end
    end
end
local cost, done = 0, 0
for i = 4, #ARGV, 2 do
    if cost > budget then break end
    local name, records = ARGV[i], ARGV[i + 1]
    local blob = redis.call('GET', name)
    local rest
    if blob then
        cost = cost + #blob + 1024
        -- records appended together and taken out together are one run: one find
        local from = 1
        while not any_live and #records > 12 do
            local p = find(blob, records, from, true)
            if not p then break end
            if p % 12 == 1 then
                rest = sub(blob, 1, p - 1) .. sub(blob, p + #records)
                break
            end
            from = p + 1
        end
    end
    if blob and not rest then
        local at, n = {}, 0
        for r = 1, #records, 12 do
            local record = sub(records, r, r + 11)
            if not (any_live and live[sub(record, 8, 12)]) then
                local from = 1
                while true do
                    local p = find(blob, record, from, true)
                    if not p then break end
                    if p % 12 == 1 then
                        n = n + 1
                        at[n] = p
                        break
                    end
                    from = p + 1
                end
            end
        end
        if n > 0 then
            table.sort(at)
            local parts, last = {}, 1
            for k = 1, n do
                parts[k] = sub(blob, last, at[k] - 1)
                last = math.max(last, at[k] + 12)
            end
            parts[n + 1] = sub(blob, last)
            rest = concat(parts)
        end
    end
    if rest == '' then
        redis.call('DEL', name)
    elseif rest then
        redis.call('SET', name, rest)
    end
    done = done + 1
end
return done
"""

# After a sweep. ARGV: prefix, P:dead entries (ids, or a round's marker once its ids are swept).
# Takes them out of P:dead, and out of P:bands the ids that are not live (the ids of a round, or
# of an entry left by an earlier neardup's drop, can be).
_LUA_FORGET = """
local prefix = ARGV[1]
for lo = 2, #ARGV, 4000 do
    local hi = math.min(lo + 3999, #ARGV)
    local live = redis.call('HMGET', prefix .. 'keys', unpack(ARGV, lo, hi))
    local gone = {}
    for j = lo, hi do
        if not live[j - lo + 1] then gone[#gone + 1] = ARGV[j] end
    end
    if #gone > 0 then redis.call('HDEL', prefix .. 'bands', unpack(gone)) end
    redis.call('ZREM', prefix .. 'dead', unpack(ARGV, lo, hi))
end
return 0
"""

# Opening an index. ARGV: prefix, the layout version. Writes the layout if there is none (a new
# index), then deletes a P:dead that an earlier neardup's drop, which did not know it, left
# behind: it names ids that the new index will hand out again. Returns the layout.
_LUA_OPEN = """
local prefix = ARGV[1]
if redis.call('SET', prefix .. 'layout', ARGV[2], 'NX') then redis.call('UNLINK', prefix .. 'dead') end
return redis.call('GET', prefix .. 'layout')
"""

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
# and move returns how many. Its work is one call per key name of the layout (bands * 2048 shards
# and eleven others), whatever the index holds: UNLINK frees large hashes and sets off the main
# thread, and RENAME moves a key without copying it.
_LUA_KEYS = """
local char, floor, fmt, find = string.char, math.floor, string.format, string.find
local names = {'layout', 'settings', 'seq', 'epoch', 'docs', 'keys', 'sig', 'shingles', 'bands', 'info',
               'dead'}
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
        redis.call('UNLINK', unpack(keys, lo, math.min(lo + 3999, #keys)))
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
    local moved = redis.pcall('RENAME', from[i], to[i])  -- one call: most shards exist
    if type(moved) == 'table' and moved.err and not find(moved.err, 'no such key', 1, true) then
        return redis.error_reply(moved.err)
    end
end
redis.call('SET', target .. 'epoch', fmt('%d', epoch + 1))
return 0
""".replace("__SHARDS__", str(1 << _SHARD_BITS)).replace("__LOW__", str(1 << (16 - _SHARD_BITS)))


class _Script:
    """A Lua script's text and SHA1."""

    def __init__(self, source: str) -> None:
        self.source = source.encode()
        self.sha = hashlib.sha1(self.source).hexdigest().encode()


_OPEN = _Script(_LUA_OPEN)
_INSERT = _Script(_LUA_INSERT)
_APPEND = _Script(_LUA_APPEND)
_REMOVE = _Script(_LUA_REMOVE)
_SWEEP = _Script(_LUA_SWEEP)
_FORGET = _Script(_LUA_FORGET)
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


def _pairs(names: Sequence[bytes], blobs: Sequence[bytes]) -> bytes:
    """(name, blob) argument pairs, packed."""
    return b"".join(
        [b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(a), a, len(b), b) for a, b in zip(names, blobs, strict=True)]
    )


def _spans(sizes: Sequence[int], count: int, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive (lo, hi) spans of the items of ``sizes``, each of at most ``count`` items and
    (unless it is one item) ``size`` in total."""
    lo, total = 0, 0
    for i, s in enumerate(sizes):
        if i > lo and (i - lo >= count or total + s > size):
            yield lo, i
            lo, total = i, 0
        total += s
    if lo < len(sizes):
        yield lo, len(sizes)


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
        self._timeout_error: type[Exception] = redis.exceptions.TimeoutError
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
        self._k_dead = p + b"dead"
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
        """Translate redis-py errors into StorageError naming the URL (and, for a timeout, the
        option that sets it)."""
        try:
            yield
        except self._redis_error as exc:
            hint = ""
            if isinstance(exc, self._timeout_error):
                option = "socket_connect_timeout" if "connect" in str(exc).lower() else "socket_timeout"
                seconds = self._client.connection_pool.connection_kwargs.get(option)
                within = f"within {seconds:g} s" if isinstance(seconds, int | float) else "in time"
                hint = f" (no answer {within}; the {option} option, as in ?{option}=60, sets it)"
            raise StorageError(f"{self._url}: {action} failed: {exc}{hint}") from exc

    def _check_layout(self) -> None:
        with self._errors("opening the index"):
            found = self._run(_OPEN, 2, _bulks([self._prefix_bytes, b"%d" % LAYOUT_VERSION]))
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

    def _send(self, parts: list[bytes], replies: int, *, raise_errors: bool = True) -> list[Any]:
        """Send packed commands (``parts`` concatenated: a few large parts, as each is one
        sendall); read their ``replies``. Every reply is read before the first error reply is
        raised (or, without ``raise_errors``, returned in its place), so the connection stays
        usable.

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
        if error is not None and raise_errors:
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
        """Add a batch; a key already stored is replaced. The batch is stored in pieces of at most
        ``_PIECE_DOCS`` documents, each one script: a reader sees all of a piece or none of it,
        and other clients' commands run between pieces (see the module docstring).

        A batch of one piece is all or nothing. A larger one that fails or is killed part way
        leaves the pieces that were applied stored (after a kill, its first ones), each document
        whole: a key holds its old document or its new one, never a mixture. The same insert run
        again completes it, as inserting a stored key replaces it.
        """
        mask = check_batch(keys, signatures, band_keys, shingles, eligible)
        n = len(keys)
        info = np.empty(n, dtype=_INFO)
        info["shingles"] = check_counts(shingle_counts, n)
        if n == 0:
            return
        info["inserted_at"] = time.time()
        sigs = np.ascontiguousarray(signatures, dtype="<u4").view(np.uint8).reshape(n, -1)
        bands = np.ascontiguousarray(band_keys, dtype=np.uint64)
        encoded = self._encode(keys)
        with self._errors("inserting documents"):
            top = int(self._client.incrby(self._k_seq, n))  # a failed insert leaves a gap: harmless
        if top > _MAX_ID:
            raise StorageError(
                f"{self._url}: the index has handed out all {_MAX_ID} document ids its layout "
                "allows; rebuild it under another prefix"
            )
        ids = np.arange(top - n + 1, top + 1, dtype=np.uint64)
        for lo in range(0, n, _ROUND_DOCS):
            hi = min(n, lo + _ROUND_DOCS)
            round_shingles = None if shingles is None else shingles[lo:hi]
            self._insert_round(
                encoded[lo:hi],
                ids[lo:hi],
                sigs[lo:hi],
                bands[lo:hi],
                mask[lo:hi],
                round_shingles,
                info[lo:hi],
            )

    def _insert_round(
        self,
        keys: list[bytes],
        ids: np.ndarray,
        sigs: np.ndarray,
        bands: np.ndarray,
        mask: np.ndarray,
        shingles: Sequence[np.ndarray] | None,
        info: np.ndarray,
    ) -> None:
        """Store up to ``_ROUND_DOCS`` documents: list the round in ``P:dead`` (pending) and
        their band keys in ``P:bands``, append their records to the shards (scripts of at most
        ``_APPEND_SHARDS`` shards and ``_APPEND_BYTES``), store the documents ``_PIECE_DOCS`` at
        a time (each piece one transaction), take the round out of ``P:dead``, then sweep the
        records of the documents they replaced."""
        n = len(keys)
        now = b"%.3f" % time.time()
        rows = np.flatnonzero(mask)
        marker = _big_endian(ids[[0, -1]], _ID_BYTES).tobytes()  # the round's first and last ids
        id_recs = _fixed(_big_endian(ids, _ID_BYTES))  # the ids as RESP bulk strings, by numpy
        band_raw = _big_endian(bands.ravel()).reshape(n, -1)  # as P:bands holds them
        names, blobs = self._shard_records(ids[rows], bands[rows])
        key_recs = [_bulk(k) for k in keys]
        id_raw, id_width = id_recs.tobytes(), id_recs.shape[1]
        id_list = [id_raw[i * id_width : (i + 1) * id_width] for i in range(n)]
        scores = [_bulk(b"%d" % i) for i in ids.tolist()]
        sig_pairs = np.concatenate([id_recs, _fixed(sigs)], axis=1)
        info_pairs = np.concatenate([id_recs, _fixed(info.view(np.uint8).reshape(n, -1))], axis=1)
        band_pairs = np.concatenate([id_recs[rows], _fixed(band_raw[rows])], axis=1)
        shingle_recs = (
            None
            if shingles is None
            else [_bulk(np.ascontiguousarray(s, dtype="<u8").tobytes()) for s in shingles]
        )
        with self._errors("inserting documents"):
            if rows.size:  # first: a writer killed from here on leaves no record unlisted
                pending = [
                    _command([b"ZADD", self._k_dead, now, marker]),
                    *(
                        part
                        for lo in range(0, rows.size, 2000)
                        for part in (
                            _head(2 + 2 * len(band_pairs[lo : lo + 2000]), b"HSET", self._k_bands),
                            band_pairs[lo : lo + 2000].tobytes(),
                        )
                    ),
                ]
                self._send(pending, 1 + (len(pending) - 1) // 2)
            # Scripts go by their text: a pipeline of EVALSHA would fail part way if the server
            # lacked one. Every append must have worked before a piece stores a document.
            appends = [
                part
                for lo, hi in _spans([len(b) for b in blobs], _APPEND_SHARDS, _APPEND_BYTES)
                for part in (
                    _head(3 + 2 * (hi - lo), b"EVAL", _APPEND.source, b"0"),
                    _pairs(names[lo:hi], blobs[lo:hi]),
                )
            ]
            if appends:
                self._send(appends, len(appends) // 2)
            parts: list[bytes] = []
            execs: list[int] = []  # the place of each piece's EXEC reply
            replies_due = 0
            for lo in range(0, n, _PIECE_DOCS):
                hi = min(n, lo + _PIECE_DOCS)
                banded = slice(*np.searchsorted(rows, [lo, hi]).tolist())  # its documents' places in rows
                m, b = hi - lo, banded.stop - banded.start
                doc_parts, commands = self._doc_commands(
                    [
                        (self._k_docs, _interleave(scores[lo:hi], key_recs[lo:hi]), m, b"ZADD"),
                        (self._k_keys, _interleave(id_list[lo:hi], key_recs[lo:hi]), m, b"HSET"),
                        (self._k_sig, sig_pairs[lo:hi].tobytes(), m, b"HSET"),
                        (self._k_info, info_pairs[lo:hi].tobytes(), m, b"HSET"),
                        *(
                            []
                            if shingle_recs is None
                            else [
                                (
                                    self._k_shingles,
                                    _interleave(id_list[lo:hi], shingle_recs[lo:hi]),
                                    m,
                                    b"HSET",
                                )
                            ]
                        ),
                    ]
                )
                parts += [
                    _command([b"MULTI"]),
                    _head(
                        8 + m + b, b"EVAL", _INSERT.source, b"0", self._prefix_bytes, now, b"%d" % m, marker
                    ),
                    b"".join(key_recs[lo:hi]),
                    b"".join(id_list[i] for i in rows[banded].tolist()),
                    _bulk(band_raw[rows[banded]].tobytes()),
                    *doc_parts,
                    _command([b"INCR", self._k_epoch]),
                    _command([b"EXEC"]),
                ]
                replies_due += 3 + commands + 1
                execs.append(replies_due - 1)
            out = self._send(parts, replies_due, raise_errors=False)
        # a command that fails inside EXEC does not undo the others; only keys of another type
        # under the prefix can make one fail, and then the index needs rebuilding anyway
        done = [out[i] for i in execs if isinstance(out[i], list)]  # an aborted EXEC is an error
        failed = [r for r in out if isinstance(r, Exception)]
        failed += [r for reply in done for r in reply if isinstance(r, Exception)]
        dead = [m for reply in done if isinstance(reply[0], list) for m in reply[0]]
        with self._errors("taking replaced documents out of the band tables"):
            if rows.size and not failed:  # every piece stored: nothing pending is left
                self._send([_command([b"ZREM", self._k_dead, marker])], 1)
            self._sweep(dead)
            self._sweep_orphans()
        if failed:  # the pieces that did not fail are stored; the others' records, swept later
            raise StorageError(f"{self._url}: inserting documents failed: {failed[0]}") from failed[0]

    @staticmethod
    def _doc_commands(fields: Sequence[tuple[bytes, bytes, int, bytes]]) -> tuple[list[bytes], int]:
        """Variadic commands (hash or zset, its packed (field, value) pairs, how many, the
        command), packed; and how many there are (none for no pairs)."""
        parts: list[bytes] = []
        for key, pairs, count, command in fields:
            if count:
                parts += [_head(2 + 2 * count, command, key), pairs]
        return parts, len(parts) // 2

    def _shard_records(self, ids: np.ndarray, bands: np.ndarray) -> tuple[list[bytes], list[bytes]]:
        """The band records of documents ``ids`` (uint64[m]) with band keys ``bands``
        (uint64[m, bands]), by shard: the shards' key names, in order, and their records."""
        m, width = bands.shape
        if m == 0 or width == 0:
            return [], []
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
        blobs = [
            raw[_RECORD * lo : _RECORD * hi] for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        return names, blobs

    def _sweep(self, dead: Sequence[bytes], *, guard: bool = False) -> None:
        """Take the band records of dead documents out of their shards, then their ``P:dead``
        and ``P:bands`` entries (``dead``: a 5-byte id then the document's band keys, each).

        Scripts of at most ``_SWEEP_SHARDS`` shards, each stopping once it has read about
        ``_SWEEP_BYTES`` of them, so that none runs long; every shard is rewritten once per
        sweep, however many of its records go. ``guard`` leaves the records of ids that are
        live, for entries that this neardup did not just make (see ``_LUA_SWEEP``). A sweep cut
        short leaves the entries, and a later one (``_sweep_orphans``) does it again: taking out
        a record that is gone already does nothing.
        """
        if not dead:
            return
        for width in sorted({len(m) for m in dead}):  # one width per index; kept apart if not
            members = [m for m in dead if len(m) == width]
            rows = np.frombuffer(b"".join(members), dtype=np.uint8).reshape(len(members), width)
            ids = _void_values(np.ascontiguousarray(rows[:, :_ID_BYTES]).view(f"V{_ID_BYTES}").ravel())
            order = np.argsort(ids, kind="stable")  # a shard's records in id order: as appended
            bands = np.ascontiguousarray(rows[order, _ID_BYTES:]).view(">u8").astype(np.uint64)
            names, blobs = self._shard_records(ids[order], bands)
            guarded = rows[:, :_ID_BYTES].tobytes() if guard else b""
            head = _bulks([self._prefix_bytes, b"%d" % _SWEEP_BYTES, guarded])
            at = 0
            while at < len(names):
                hi = min(len(names), at + _SWEEP_SHARDS)
                args = head + _pairs(names[at:hi], blobs[at:hi])
                at += int(self._run(_SWEEP, 3 + 2 * (hi - at), args))
            raw_ids = rows[:, :_ID_BYTES].tobytes()
            for lo in range(0, len(members), 4000):
                chunk = [
                    raw_ids[i * _ID_BYTES : (i + 1) * _ID_BYTES]
                    for i in range(lo, min(lo + 4000, len(members)))
                ]
                self._run(_FORGET, 1 + len(chunk), _bulks([self._prefix_bytes, *chunk]))

    def _sweep_orphans(self) -> None:
        """Sweep the ``P:dead`` entries older than ``_DEAD_AGE_S``, which a writer that died
        or lost the server part way left: each claimed first (its score set to 0), then the
        records of its ids (a round's: those not stored) taken out, then the entry."""
        cutoff = b"%.3f" % (time.time() - _DEAD_AGE_S)
        while True:
            ids = self._client.zrangebyscore(self._k_dead, b"-inf", cutoff, start=0, num=_PIECE_DOCS)
            if not ids:
                return
            # claimed first (score 0): a stalled round that then finds its marker so appends again
            self._client.zadd(self._k_dead, dict.fromkeys(ids, 0), xx=True)
            for marker in [i for i in ids if len(i) == 2 * _ID_BYTES]:  # a round's first and last ids
                lo, hi = int.from_bytes(marker[:_ID_BYTES], "big"), int.from_bytes(marker[_ID_BYTES:], "big")
                ids += [i.to_bytes(_ID_BYTES, "big") for i in range(lo, hi + 1)]
            bands = self._client.hmget(self._k_bands, ids)
            self._sweep([i + b for i, b in zip(ids, bands, strict=True) if b is not None], guard=True)
            if None in bands:  # no band keys: nothing to sweep
                lost = [i for i, b in zip(ids, bands, strict=True) if b is None]
                self._run(_FORGET, 1 + len(lost), _bulks([self._prefix_bytes, *lost]))

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
            found, same, read = self._lookup_plain(buckets, shards, shards_at, shingles, per_bucket=m > 1)
            # A write came between the two round trips: a small lookup runs again as one script,
            # one snapshot; a large one keeps what it read (each document whole, see the module
            # docstring), as its script would hold the server for long.
            if not same and read <= _LOOKUP_SCRIPT_BYTES and shards.size <= _MGET_SHARDS:
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
    ) -> tuple[_Found, bool, int]:
        """Look the buckets up in two round trips of plain commands: what they found, whether
        they read one state, and the bytes of shards read. ``buckets`` are distinct (shard, band
        key) pairs sorted by shard, ``shards`` the distinct shards and ``first`` where each one's
        buckets start; ``per_bucket`` asks for each hit's bucket (one row needs only the ids).

        The first round trip reads the epoch with the shards (MGETs of at most ``_MGET_SHARDS``
        shards, the first with the epoch); the second reads the ids' keys, signatures (and
        shingles) and the epoch again in one transaction. Every write raises the epoch in the
        step that makes it, so an unchanged epoch proves that both read one state; otherwise each
        document found is still whole, read in one step, and a document written meanwhile may be
        missing from some of the rows it matches.
        """
        names = _fixed(_shard_names(self._prefix_bytes + b"t:", shards))
        reads = [
            _head(
                1 + (lo == 0) + len(names[lo : lo + _MGET_SHARDS]),
                b"MGET",
                *([self._k_epoch] if lo == 0 else []),
            )
            + names[lo : lo + _MGET_SHARDS].tobytes()
            for lo in range(0, len(names), _MGET_SHARDS)
        ]
        replies = self._send(reads, len(reads))
        epoch = replies[0][0]
        blobs = [b or b"" for b in itertools.chain(replies[0][1:], *replies[1:])]
        read = sum(map(len, blobs))
        hits = (
            self._match_few(buckets, first, blobs, per_bucket=per_bucket)
            if len(buckets) < _NUMPY_BUCKETS
            else self._match_many(buckets, shards, first, blobs)
        )
        if hits is None:  # (2**-64) two buckets that numpy cannot tell apart
            hits = self._match_few(buckets, first, blobs, per_bucket=per_bucket)
        hit_bucket, hit_id, ids = hits
        if not ids:
            return (hit_bucket, hit_id, [], [], [] if shingles else None), True, read
        packed_ids = _bulks(ids)
        hashes = [self._k_keys, self._k_sig, *([self._k_shingles] if shingles else [])]
        parts = [part for h in hashes for part in (_head(2 + len(ids), b"HMGET", h), packed_ids)]
        wrapped = [_command([b"MULTI"]), *parts, _command([b"GET", self._k_epoch]), _command([b"EXEC"])]
        raw_keys, sigs, *rest = self._send(wrapped, len(hashes) + 3)[-1]
        found = (hit_bucket, hit_id, raw_keys, sigs, rest[0] if shingles else None)
        return found, rest[-1] == epoch, read

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

    def _read(self, keys: Sequence[str], hash_name: bytes, action: str) -> tuple[list[int], list[Any]]:
        """For each key, 1 if it is stored (else 0) and its value in ``P:<hash_name>`` (by its
        id): ``_LUA_FETCH`` scripts of at most ``_FETCH_KEYS`` keys, each key's flag and value
        read in one step."""
        encoded = self._encode(keys)
        stored: list[int] = []
        values: list[Any] = []
        with self._errors(action):
            for lo in range(0, len(encoded), _FETCH_KEYS):
                chunk = encoded[lo : lo + _FETCH_KEYS]
                flags, got = self._run(
                    _FETCH, 2 + len(chunk), _bulks([self._prefix_bytes, hash_name, *chunk])
                )
                stored += flags
                values += got
        return stored, values

    def _fetch(self, keys: Sequence[str], hash_name: bytes, action: str) -> list[Any]:
        """Each key's value in ``P:<hash_name>`` (by its id), None where there is none;
        ``KeyError`` names a key that is not stored."""
        stored, values = self._read(keys, hash_name, action)
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
        stored, values = self._read(keys, b"info", "reading document info")
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
        """Remove the keys that are stored; return how many were. Up to ``_PIECE_DOCS`` keys are
        one script, all or nothing; more go in pieces of that many, one after another, so a
        removal that fails part way leaves its first pieces removed (the same removal run again
        finishes it). The band records go afterwards, as for :meth:`insert`."""
        unique = self._encode(list(dict.fromkeys(keys)))
        if not unique:
            return 0
        removed = 0
        dead: list[bytes] = []
        now = b"%.3f" % time.time()
        with self._errors("removing documents"):
            for lo in range(0, len(unique), _PIECE_DOCS):
                piece = unique[lo : lo + _PIECE_DOCS]
                count, members = self._run(_REMOVE, 2 + len(piece), _bulks([self._prefix_bytes, now, *piece]))
                removed += int(count)
                dead += members
        with self._errors("taking removed documents out of the band tables"):
            self._sweep(dead)
            self._sweep_orphans()
        return removed

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
