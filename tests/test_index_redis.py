"""What only the Redis backend's layout promises: shards that keep every document of a bucket,
removal and replacement that leave nothing behind, lookups that never fail while another
connection writes, and a clear refusal of the old layout."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import neardup.index.redis as redis_backend
from neardup.errors import StorageError
from neardup.index import DocumentInfo, LSHIndex, RedisStorage

BANDS = 8
PERM = 16

_prefixes = itertools.count()


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """A Redis URL with a key prefix of this test's own, emptied afterwards."""
    import redis

    prefix = f"r{os.getpid()}.{next(_prefixes)}"
    client = redis.Redis.from_url(redis_server)
    yield f"{redis_server}?prefix={prefix}"
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def storage(redis_url: str) -> Iterator[RedisStorage]:
    opened = RedisStorage(redis_url)
    yield opened
    opened.close()


def _docs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random signatures (uint32[n, PERM]) and band keys (uint64[n, BANDS])."""
    rng = np.random.default_rng(seed)
    sigs = rng.integers(0, 2**32, size=(n, PERM), dtype=np.uint32)
    bands = rng.integers(0, 2**64, size=(n, BANDS), dtype=np.uint64)
    return sigs, bands


def _records(storage: RedisStorage) -> dict[bytes, bytes]:
    """Every band-table shard under the storage's prefix: key -> its records."""
    client = storage._client
    return {key: client.get(key) for key in client.scan_iter(match=f"{storage.prefix}t:*", count=1000)}


def _lookup_keys(storage: RedisStorage, bands: np.ndarray) -> list[list[str]]:
    found = storage.lookup(bands)
    return [[found.keys[i] for i in row.tolist()] for row in found.rows]


def test_layout_as_documented(storage: RedisStorage) -> None:
    sigs, bands = _docs(3, 1)
    before = time.time()
    storage.insert(["a", "b", "c"], sigs, bands, shingle_counts=np.array([5, 0, 7]))
    client = storage._client
    p = storage.prefix
    info = client.hget(f"{p}info", (2).to_bytes(5, "big"))
    seconds, count = np.frombuffer(info, dtype="<f8")[0], np.frombuffer(info, dtype="<i8")[1]
    assert len(info) == 16 and before <= seconds <= time.time() and count == 0
    assert client.get(f"{p}layout") == b"2"
    assert client.get(f"{p}seq") == b"3"
    assert client.zrange(f"{p}docs", 0, -1, withscores=True) == [(b"a", 1.0), (b"b", 2.0), (b"c", 3.0)]
    assert client.hget(f"{p}keys", (2).to_bytes(5, "big")) == b"b"
    assert client.hget(f"{p}sig", (2).to_bytes(5, "big")) == sigs[1].astype("<u4").tobytes()
    assert client.hget(f"{p}bands", (2).to_bytes(5, "big")) == bands[1].astype(">u8").tobytes()
    for band, key in enumerate(bands[1].tolist()):
        shard = p.encode() + b"t:" + band.to_bytes(2, "big") + (key >> 53 << 5).to_bytes(2, "big")
        record = (key & (2**56 - 1)).to_bytes(7, "big") + (2).to_bytes(5, "big")
        assert record in client.get(shard)
    records = _records(storage)
    assert sum(len(r) for r in records.values()) == 3 * BANDS * 12


def test_buckets_repeated_within_one_batch_keep_all_their_documents(storage: RedisStorage) -> None:
    sigs, bands = _docs(10, 2)
    bands[3:8] = bands[0]  # five near-duplicates of document 0, inserted with it
    bands[9, 2] = bands[1, 2]  # and one shared bucket in band 2 only
    storage.insert([f"d{i}" for i in range(10)], sigs, bands)
    twins = ["d0", "d3", "d4", "d5", "d6", "d7"]
    assert _lookup_keys(storage, bands[[0, 1, 9, 2]]) == [twins, ["d1", "d9"], ["d1", "d9"], ["d2"]]
    found = storage.lookup(bands[:1])
    np.testing.assert_array_equal(found.signatures, sigs[[0, 3, 4, 5, 6, 7]])


def test_a_bucket_shared_across_batches_keeps_both_and_removal_keeps_the_other(storage: RedisStorage) -> None:
    sigs, bands = _docs(2, 3)
    storage.insert(["first"], sigs[:1], bands[:1])
    storage.insert(["second"], sigs[1:], bands[:1])  # every bucket of "first", in a later batch
    assert _lookup_keys(storage, bands[:1]) == [["first", "second"]]
    assert storage.remove(["first"]) == 1
    assert _lookup_keys(storage, bands[:1]) == [["second"]]
    np.testing.assert_array_equal(storage.lookup(bands[:1]).signatures, sigs[1:])
    assert sum(len(r) for r in _records(storage).values()) == BANDS * 12


def test_replacing_a_key_removes_its_old_bucket_entries(storage: RedisStorage) -> None:
    sigs, bands = _docs(3, 4)
    storage.insert(["k", "other"], sigs[:2], bands[:2])
    storage.insert(["k"], sigs[2:], bands[2:])
    assert _lookup_keys(storage, bands) == [[], ["other"], ["k"]]
    np.testing.assert_array_equal(storage.get_signatures(["k"]), sigs[2:])
    assert sum(len(r) for r in _records(storage).values()) == 2 * BANDS * 12
    storage.insert(["k"], sigs[2:], bands[2:], eligible=np.array([False]))  # now an empty document
    assert _lookup_keys(storage, bands[2:]) == [[]]
    assert storage._client.hlen(f"{storage.prefix}bands") == 1  # only "other" is in the band tables
    assert list(storage.keys()) == ["other", "k"]


def test_removing_everything_leaves_no_band_records(storage: RedisStorage) -> None:
    sigs, bands = _docs(300, 5)
    bands[100:150] = bands[0]
    keys = [f"d{i}" for i in range(300)]
    storage.insert(keys[:200], sigs[:200], bands[:200])
    storage.insert(keys[150:], sigs[150:], bands[150:])  # replaces 50 of them
    assert storage.count() == 300
    assert storage.remove([*keys, "never-stored"]) == 300
    client = storage._client
    assert _records(storage) == {}
    for name in ("docs", "keys", "sig", "bands", "shingles", "info"):
        assert client.exists(f"{storage.prefix}{name}") == 0


def test_a_batch_of_several_scripts_is_one_insert(
    storage: RedisStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_backend, "_SCRIPT_DOCS", 7)
    sigs, bands = _docs(40, 6)
    bands[30:40] = bands[0]  # a bucket shared across the scripts of one batch
    storage.insert([f"d{i}" for i in range(20)], sigs[:20], bands[:20])
    storage.insert([f"d{i}" for i in range(10, 40)], sigs[10:], bands[10:])  # replaces d10..d19
    assert storage.count() == 40
    assert _lookup_keys(storage, bands[:1]) == [sorted(["d0", *(f"d{i}" for i in range(30, 40))])]
    assert list(storage.keys()) == [f"d{i}" for i in [*range(10), *range(10, 40)]]
    assert sum(len(r) for r in _records(storage).values()) == 40 * BANDS * 12


def test_batch_lookup_rows_equal_single_lookups(storage: RedisStorage) -> None:
    sigs, bands = _docs(200, 7)
    bands[50:60, :4] = bands[0, :4]
    storage.insert([f"d{i}" for i in range(200)], sigs, bands)
    queries = np.concatenate([bands[:70], bands[:5], _docs(5, 99)[1]])
    batch = storage.lookup(queries)
    for q, row in enumerate(batch.rows):
        single = storage.lookup(queries[q : q + 1])
        assert [batch.keys[i] for i in row.tolist()] == single.keys
        if single.keys:
            np.testing.assert_array_equal(batch.signatures[row], single.signatures)
    assert batch.keys == sorted(batch.keys)


def test_both_lookup_paths_agree(storage: RedisStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    sigs, bands = _docs(100, 10)
    bands[40:50, 3] = bands[0, 3]
    storage.insert(
        [f"d{i}" for i in range(100)], sigs, bands, [np.arange(i % 3, dtype=np.uint64) for i in range(100)]
    )
    queries = np.concatenate([bands[:45], _docs(3, 11)[1]])
    plain = [storage.lookup(queries[:9], shingles=True), storage.lookup(queries, shingles=True)]
    monkeypatch.setattr(storage, "_lookup_plain", lambda *args, **kwargs: None)
    script = [storage.lookup(queries[:9], shingles=True), storage.lookup(queries, shingles=True)]
    for a, b in zip(plain, script, strict=True):
        assert a.keys == b.keys and a.shingles is not None and b.shingles is not None
        np.testing.assert_array_equal(a.signatures, b.signatures)
        assert [r.tolist() for r in a.rows] == [r.tolist() for r in b.rows]
        for x, y in zip(a.shingles, b.shingles, strict=True):
            assert x is not None and y is not None
            np.testing.assert_array_equal(x, y)


def test_a_write_between_the_round_trips_sends_the_lookup_to_the_script(redis_url: str) -> None:
    sigs, bands = _docs(3, 12)
    bands[1:] = bands[0]
    reader, writer = RedisStorage(redis_url), RedisStorage(redis_url)
    writer.insert(["a", "b", "c"], sigs, bands)
    epoch = reader._client.get(f"{reader.prefix}epoch")
    send = reader._send
    calls: list[int] = []

    def send_then_write(parts: list[bytes], replies: int) -> list[object]:
        out = send(parts, replies)
        calls.append(replies)
        if len(calls) == 1:  # after the MGET of the shards: another connection removes "b"
            writer.remove(["b"])
        return out

    reader._send = send_then_write  # type: ignore[method-assign]
    found = reader.lookup(bands[:1])
    assert found.keys == ["a", "c"]  # as of after the removal: one snapshot
    np.testing.assert_array_equal(found.signatures, sigs[[0, 2]])
    assert len(calls) == 3  # the shards, the ids' keys and signatures, then the script
    assert int(reader._client.get(f"{reader.prefix}epoch")) == int(epoch) + 1
    reader.close()
    writer.close()


def test_lookup_returns_shingles_where_kept(storage: RedisStorage) -> None:
    sigs, bands = _docs(2, 8)
    storage.insert(["with"], sigs[:1], bands[:1], [np.array([3, 9], dtype=np.uint64)])
    storage.insert(["without"], sigs[1:], bands[:1])
    found = storage.lookup(bands[:1], shingles=True)
    assert found.keys == ["with", "without"] and found.shingles is not None
    np.testing.assert_array_equal(found.shingles[0], [3, 9])
    assert found.shingles[1] is None
    assert storage.lookup(bands[:1]).shingles is None


def test_a_lookup_never_fails_while_another_connection_removes_documents(redis_url: str) -> None:
    sigs, bands = _docs(60, 9)
    bands[:] = bands[0]  # all in the same buckets: every lookup meets the churn
    old, new = sigs, sigs ^ np.uint32(0xFFFF)  # what each key's signature may be
    keys = [f"d{i}" for i in range(60)]
    reader, writer = RedisStorage(redis_url), RedisStorage(redis_url)
    writer.insert(keys, old, bands)
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            for round_ in itertools.count():
                if stop.is_set():
                    return
                part = slice(round_ % 3 * 20, round_ % 3 * 20 + 20)
                writer.remove(keys[part])
                writer.insert(keys[part], (new if round_ % 2 else old)[part], bands[part])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        seen = set()
        # two rows are matched with bytes.find, 42 (336 buckets) with numpy
        many = np.concatenate([bands[:2], _docs(40, 13)[1]])
        for i in range(300):
            found = reader.lookup(bands[:2] if i % 2 else many)
            seen.add(len(found.keys))
            assert found.keys == sorted(found.keys) and len(found.keys) in (40, 60)
            assert found.signatures.shape == (len(found.keys), PERM)
            assert [row.tolist() for row in found.rows[:2]] == [list(range(len(found.keys)))] * 2
            assert all(row.size == 0 for row in found.rows[2:])
            for key, sig in zip(found.keys, found.signatures, strict=True):
                i = int(key[1:])
                assert (sig == old[i]).all() or (sig == new[i]).all()
    finally:
        stop.set()
        thread.join()
        reader.close()
        writer.close()
    assert not errors
    assert 40 in seen  # the lookups did meet batches half removed


def test_the_old_layout_is_refused_with_a_clear_message(redis_url: str) -> None:
    import redis

    storage = RedisStorage(redis_url + "-v1")
    client = redis.Redis.from_url(redis_url.partition("?")[0])
    client.set(f"{storage.prefix}layout", "1")  # what neardup wrote before layout 2
    storage.close()
    with pytest.raises(StorageError) as err:
        RedisStorage(redis_url + "-v1")
    assert str(err.value) == (
        f"{redis_url}-v1: index layout b'1' under prefix {storage.prefix!r} is not readable by this "
        "neardup (it reads layout 2); layout 1 (one Redis set per bucket) was written by an earlier "
        "neardup; rebuild the index under another prefix, or delete the old index's keys first"
    )
    client.delete(f"{storage.prefix}layout")
    client.close()


def test_the_index_works_through_the_redis_backend(redis_url: str) -> None:
    texts = ["the cat sat on the mat today", "the cat sat on the mat today!", "dogs bark at night"]
    with LSHIndex.open(redis_url) as index:
        index.insert_many(["a", "b", "c"], texts)
        assert [m.key for m in index.query(texts[0])] == ["a", "b"]
        assert [[m.key for m in row] for row in index.query_many(texts)] == [["a", "b"], ["a", "b"], ["c"]]


def test_an_index_without_info_from_an_earlier_neardup(storage: RedisStorage) -> None:
    sigs, bands = _docs(3, 14)
    storage.insert(["a", "b"], sigs[:2], bands[:2], shingle_counts=np.array([4, 2]))
    storage._client.delete(f"{storage.prefix}info")  # as a neardup before P:info left it
    assert storage.info(["a", "zz", "b"]) == [
        DocumentInfo("a", None, None),
        None,
        DocumentInfo("b", None, None),
    ]
    storage.insert(["a"], sigs[2:], bands[2:])  # replacing writes it; counts unknown here
    info = storage.info(["a"])[0]
    assert info is not None and info.inserted_at is not None and info.shingles is None
    assert storage.remove(["a", "b"]) == 2 and storage.info(["a", "b"]) == [None, None]


def test_the_lock_key_is_held_only_inside_the_section(storage: RedisStorage) -> None:
    client, name = storage._client, f"{storage.prefix}lock"
    with storage.exclusive():
        assert client.exists(name) == 1 and 0 < client.pttl(name) <= redis_backend._LOCK_TIMEOUT_S * 1000
    assert client.exists(name) == 0


def test_a_long_holder_keeps_the_lock_past_its_timeout(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_backend, "_LOCK_TIMEOUT_S", 0.6)  # renewed every 0.2 s
    monkeypatch.setattr("neardup.index.base.EXCLUSIVE_WAIT_S", 2.0)
    holder, waiter = RedisStorage(redis_url), RedisStorage(redis_url)
    refused = pytest.raises(StorageError, match=r"another holder held .* for more than 2 s")
    with holder.exclusive(), refused, waiter.exclusive():  # held past the lock's timeout, renewed
        pass
    with waiter.exclusive():
        pass
    holder.close()
    waiter.close()


_KILLED_HOLDER = """
import sys, time
import neardup.index.redis as backend
backend._LOCK_TIMEOUT_S = 1.0
storage = backend.RedisStorage(sys.argv[1])
with storage.exclusive():
    print("holding", flush=True)
    time.sleep(600)
"""


def test_a_killed_holder_frees_the_section_when_its_lock_expires(redis_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_HOLDER, redis_url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    storage = RedisStorage(redis_url)
    t0 = time.monotonic()
    with storage.exclusive():
        assert time.monotonic() - t0 < 5  # within the 1 s expiry, not the 30 s wait
    storage.close()
