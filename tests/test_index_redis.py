"""What only the Redis backend's layout promises: shards that keep every document of a bucket,
removal and replacement that leave nothing behind, lookups that never fail while another
connection writes, and a clear refusal of the old layout."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import neardup
import neardup.index.redis as redis_backend
from conftest import running_redis
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


def test_a_batch_of_several_pieces_stores_every_document(
    storage: RedisStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_backend, "_PIECE_DOCS", 7)
    sigs, bands = _docs(40, 6)
    bands[30:40] = bands[0]  # a bucket shared across the pieces of one batch
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
    plain_path = storage._lookup_plain  # as if a write came between its round trips: the script
    monkeypatch.setattr(storage, "_lookup_plain", lambda *a, **k: (plain_path(*a, **k)[0], False, 0))
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


# -- many writers and readers on one index ---------------------------------------------------------

_READER = """
import json, random, sys
from pathlib import Path
from neardup.index import LSHIndex
url, shared_file, stop, seed = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
shared = json.loads(shared_file.read_text())
rng = random.Random(seed)
rounds, failures = 0, []
with LSHIndex.open(url) as index:
    while rounds == 0 or not stop.exists():
        sample = rng.sample(shared, 50)
        try:
            found = index.query_many([text for _, text in sample])
            lost = [key for (key, _), row in zip(sample, found) if key not in {m.key for m in row}]
            if lost:
                failures.append(f"round {rounds}: {lost[:3]} not found")
        except Exception as exc:
            failures.append(f"round {rounds}: {type(exc).__name__}: {exc}")
        rounds += 1
print(json.dumps({"rounds": rounds, "failed": len(failures), "first": failures[:3]}))
sys.exit(1 if failures else 0)
"""

WRITERS, OWN, SHARED = 4, 18_000, 2_000


def _texts(rng: np.random.Generator, vocab: list[str], n: int) -> list[str]:
    words = rng.integers(0, len(vocab), size=(n, 40))
    return [" ".join(vocab[w] for w in row) for row in words.tolist()]


def _jsonl(path: Path, keys: list[str], texts: list[str]) -> str:
    path.write_text(
        "".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in zip(keys, texts, strict=True))
    )
    return str(path)


def test_concurrent_writers_and_readers_all_succeed_and_lose_nothing(tmp_path: Path) -> None:
    """Four `neardup index add` runs of 20,000 documents each (2,000 keys shared by all of them,
    which replace each other) while two readers query the shared keys in a loop, on a server
    that answers other clients BUSY once a script runs 100 ms: every run and every reader round
    succeeds, a shared key is always found by its own text, and at the end the index holds each
    distinct key once, found by its own text, with no band record left over."""
    rng = np.random.default_rng(20)
    vocab = [f"w{i}x" for i in range(5000)]
    shared_keys = [f"shared-{j}" for j in range(SHARED)]
    shared_texts = _texts(rng, vocab, SHARED)
    own = [([f"w{i}-{j}" for j in range(OWN)], _texts(rng, vocab, OWN)) for i in range(WRITERS)]
    (tmp_path / "shared.json").write_text(
        json.dumps([list(p) for p in zip(shared_keys, shared_texts, strict=True)])
    )
    # one numba thread a process: seven processes share the cores with the server
    env = {**os.environ, "PYTHONPATH": str(Path(neardup.__file__).parents[1]), "NUMBA_NUM_THREADS": "1"}
    cli = [sys.executable, "-c", "from neardup.cli import run; run()"]
    stop = tmp_path / "stop"
    import redis

    # BUSY for others once a script runs 100 ms (busy-reply-threshold in Redis 7); slow log from 50
    with running_redis(tmp_path, "--lua-time-limit", "100", "--slowlog-log-slower-than", "50000") as port:
        url = f"redis://127.0.0.1:{port}/0?prefix=many"
        built = subprocess.run(
            [
                *cli,
                "index",
                "build",
                _jsonl(tmp_path / "s.jsonl", shared_keys, shared_texts),
                "--index",
                url,
                "--id-column",
                "id",
                "-q",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert built.returncode == 0, built.stderr
        readers = [
            subprocess.Popen(
                [sys.executable, "-c", _READER, url, str(tmp_path / "shared.json"), str(stop), str(seed)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for seed in range(2)
        ]
        writers = [
            subprocess.Popen(
                [
                    *cli,
                    "index",
                    "add",
                    _jsonl(tmp_path / f"w{i}.jsonl", keys + shared_keys, texts + shared_texts),
                    "--index",
                    url,
                    "--id-column",
                    "id",
                    "-q",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i, (keys, texts) in enumerate(own)
        ]
        try:
            wrote = [(w.wait(timeout=240), *w.communicate()) for w in writers]
        finally:
            stop.touch()
            read = [(r.wait(timeout=60), *r.communicate()) for r in readers]
        client = redis.Redis(port=port)
        slow = [(e["duration"] // 1000, e["command"][:60]) for e in client.slowlog_get(20)]  # >= 50 ms
        client.close()
        assert [rc for rc, _, _ in wrote] == [0] * WRITERS, ([err[-1500:] for _, _, err in wrote], slow)
        assert [rc for rc, _, _ in read] == [0, 0], ([out + err[-1500:] for _, out, err in read], slow)
        rounds = [json.loads(out)["rounds"] for _, out, _ in read]
        assert min(rounds) > 1
        with LSHIndex.open(url) as index:
            keys = [k for keys, _ in own for k in keys] + shared_keys
            texts = [t for _, texts in own for t in texts] + shared_texts
            assert len(index) == WRITERS * OWN + SHARED
            found = index.query_many(texts)
            assert [k for k, row in zip(keys, found, strict=True) if k not in {m.key for m in row}] == []
            storage = index.storage
            assert isinstance(storage, RedisStorage)
            assert storage._client.zcard(f"{storage.prefix}dead") == 0
            records = sum(len(r) for r in _records(storage).values())
            assert records == len(index) * index.settings.bands * 12  # nothing replaced is left


# -- bounded pieces, kills part way, sweeps ---------------------------------------------------------


def test_small_pieces_and_sweeps_store_and_take_out_every_record(
    storage: RedisStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in [("_ROUND_DOCS", 50), ("_PIECE_DOCS", 7), ("_APPEND_SHARDS", 3), ("_SWEEP_SHARDS", 5)]:
        monkeypatch.setattr(redis_backend, name, value)
    monkeypatch.setattr(redis_backend, "_SWEEP_BYTES", 1)  # every sweep script stops after a shard
    sigs, bands = _docs(320, 15)
    bands[200:260] = bands[0]  # buckets shared across rounds and pieces
    keys = [f"d{i}" for i in range(320)]
    storage.insert(keys[:200], sigs[:200], bands[:200])
    storage.insert(keys[80:], sigs[80:], bands[80:])  # replaces d80..d199: runs and single records
    assert storage.count() == 320 and list(storage.keys()) == keys
    assert _lookup_keys(storage, bands[:1]) == [sorted(["d0", *keys[200:260]])]
    np.testing.assert_array_equal(storage.get_signatures(keys), sigs)
    assert sum(len(r) for r in _records(storage).values()) == 320 * BANDS * 12
    assert storage._client.zcard(f"{storage.prefix}dead") == 0
    assert storage.remove(keys[::2]) == 160
    assert sum(len(r) for r in _records(storage).values()) == 160 * BANDS * 12
    assert _lookup_keys(storage, bands[:1]) == [sorted(k for k in ["d0", *keys[200:260]] if int(k[1:]) % 2)]


_KILLED_WRITER = """
import sys
import numpy as np
import neardup.index.redis as backend
backend._PIECE_DOCS = 50
storage = backend.RedisStorage(sys.argv[1])
rng = np.random.default_rng(16)
sigs = rng.integers(0, 2**32, size=(40_000, 16), dtype=np.uint32)
bands = rng.integers(0, 2**64, size=(40_000, 8), dtype=np.uint64)
storage.insert([f"d{i}" for i in range(40_000)], sigs, bands)
"""


def test_a_writer_killed_part_way_leaves_whole_documents_and_running_it_again_completes(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = np.random.default_rng(17)
    old_sigs = first.integers(0, 2**32, size=(40_000, PERM), dtype=np.uint32)
    old_bands = first.integers(0, 2**64, size=(40_000, BANDS), dtype=np.uint64)
    keys = [f"d{i}" for i in range(40_000)]
    storage = RedisStorage(redis_url)
    storage.insert(keys, old_sigs, old_bands)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, redis_url])
    client, p = storage._client, storage.prefix
    try:  # killed once some of its 800 pieces are stored: their keys moved to the end
        deadline = time.monotonic() + 60
        while client.zrange(f"{p}docs", 0, 0) == [b"d0"] and time.monotonic() < deadline:
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    rng = np.random.default_rng(16)  # what the killed writer inserted
    new_sigs = rng.integers(0, 2**32, size=(40_000, 16), dtype=np.uint32)
    new_bands = rng.integers(0, 2**64, size=(40_000, 8), dtype=np.uint64)
    stored = storage.get_signatures(keys)
    new = (stored == new_sigs).all(axis=1)
    assert ((stored == old_sigs).all(axis=1) | new).all()  # every key whole, old or new
    assert 0 < new.sum() < 40_000 and new.sum() % 50 == 0  # whole pieces
    assert storage.count() == 40_000 and all(
        client.hlen(f"{p}{h}") == 40_000 for h in ("keys", "sig", "info")
    )
    found = storage.lookup(np.where(new[:, None], new_bands, old_bands)[::97])
    assert [f.tolist() for f in found.rows] == [[found.keys.index(k)] for k in keys[::97]]
    assert client.zcard(f"{p}dead") > 0  # the killed writer's records are listed, to sweep
    monkeypatch.setattr(redis_backend, "_DEAD_AGE_S", 0.0)  # as once they are old
    storage.insert(keys, new_sigs, new_bands)  # the same insert again completes it
    np.testing.assert_array_equal(storage.get_signatures(keys), new_sigs)
    assert client.zcard(f"{p}dead") == 0
    assert sum(len(r) for r in _records(storage).values()) == 40_000 * BANDS * 12
    storage.close()


def test_an_orphan_sweep_leaves_the_records_of_live_ids(storage: RedisStorage) -> None:
    sigs, bands = _docs(2, 18)
    storage.insert(["a"], sigs[:1], bands[:1])
    client, p = storage._client, storage.prefix
    live, gone = (1).to_bytes(5, "big"), (99).to_bytes(5, "big")  # a writer died before storing 99
    for band, key in enumerate(bands[1].tolist()):
        shard = p.encode() + b"t:" + band.to_bytes(2, "big") + (key >> 53 << 5).to_bytes(2, "big")
        client.append(shard, (key & (2**56 - 1)).to_bytes(7, "big") + gone)
    client.hset(f"{p}bands", gone, bands[1].astype(">u8").tobytes())
    client.zadd(f"{p}dead", {live: 1.0, gone: 1.0})  # as an earlier neardup's drop could leave them
    storage._sweep_orphans()
    assert client.zcard(f"{p}dead") == 0 and client.hkeys(f"{p}bands") == [live]
    assert sum(len(r) for r in _records(storage).values()) == BANDS * 12
    assert _lookup_keys(storage, bands) == [["a"], []]


@pytest.mark.parametrize("swept", [True, False])
def test_a_piece_whose_pending_records_an_orphan_sweep_took_appends_them_again(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, swept: bool
) -> None:
    """A writer that stalls for longer than _DEAD_AGE_S between appending a round's records and
    storing its pieces finds its pending ids swept (or only claimed, the sweep still to come):
    its pieces append the records it lacks again: none is lost or doubled."""
    writer, sweeper = RedisStorage(redis_url), RedisStorage(redis_url)
    client, p = writer._client, writer.prefix
    sigs, bands = _docs(30, 22)
    send = writer._send

    def stall_then_send(parts: list[bytes], replies: int, **kwargs: bool) -> list[object]:
        if parts[0] == redis_backend._command([b"MULTI"]):  # the pieces: meanwhile, an orphan sweep
            if swept:
                monkeypatch.setattr(redis_backend, "_DEAD_AGE_S", -10.0)
                sweeper._sweep_orphans()
                monkeypatch.setattr(redis_backend, "_DEAD_AGE_S", 600.0)
                assert _records(writer) == {} and client.hlen(f"{p}bands") == 0
            else:
                client.zadd(f"{p}dead", dict.fromkeys(client.zrange(f"{p}dead", 0, -1), 0), xx=True)
        return send(parts, replies, **kwargs)

    writer._send = stall_then_send  # type: ignore[method-assign]
    writer.insert([f"d{i}" for i in range(30)], sigs, bands)
    writer._send = send  # type: ignore[method-assign]
    assert _lookup_keys(writer, bands[:3]) == [["d0"], ["d1"], ["d2"]]
    assert client.zcard(f"{p}dead") == 0 and client.hlen(f"{p}bands") == 30
    assert sum(len(r) for r in _records(writer).values()) == 30 * BANDS * 12  # each record once
    assert writer.remove([f"d{i}" for i in range(30)]) == 30
    assert _records(writer) == {} and client.hlen(f"{p}bands") == 0
    writer.close()
    sweeper.close()


def test_a_large_lookup_that_meets_a_write_keeps_what_it_read(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_backend, "_LOOKUP_SCRIPT_BYTES", 0)  # every lookup is large
    sigs, bands = _docs(4, 19)
    bands[1:] = bands[0]
    reader, writer = RedisStorage(redis_url), RedisStorage(redis_url)
    writer.insert(["a", "b", "c"], sigs[:3], bands[:3])
    send = reader._send
    calls: list[int] = []

    def send_then_write(parts: list[bytes], replies: int, **kwargs: bool) -> list[object]:
        out = send(parts, replies, **kwargs)
        calls.append(replies)
        if len(calls) == 1:  # after the shards: "b" goes, "c" is replaced (a new id, not read)
            writer.remove(["b"])
            writer.insert(["c"], sigs[3:], bands[3:])
        return out

    reader._send = send_then_write  # type: ignore[method-assign]
    found = reader.lookup(bands[:1])
    assert found.keys == ["a"] and len(calls) == 2  # no script; no half document
    np.testing.assert_array_equal(found.signatures, sigs[:1])
    reader._send = send  # type: ignore[method-assign]
    assert reader.lookup(bands[:1]).keys == ["a", "c"]
    reader.close()
    writer.close()


def test_drop_and_a_new_index_leave_no_dead_entries(redis_url: str) -> None:
    index = LSHIndex.open(redis_url)  # drop names the shards of the stored settings' bands
    index.insert_many(["a", "b"], ["the cat sat on the mat today", "dogs bark at night"])
    storage = index.storage
    assert isinstance(storage, RedisStorage)
    client, p = storage._client, storage.prefix
    client.zadd(f"{p}dead", {b"x" * 69: 1.0})
    storage.drop()
    assert list(client.scan_iter(match=f"{p}*")) == []
    client.zadd(f"{p}dead", {b"x" * 69: 1.0})  # left by an earlier neardup's drop
    RedisStorage(redis_url).close()  # creates the index anew
    assert client.exists(f"{p}dead") == 0
    storage.close()


# -- timeouts ---------------------------------------------------------------------------------------


def test_the_timeouts_are_finite_and_url_options_set_them(redis_url: str) -> None:
    storage = RedisStorage(redis_url)
    given = storage._client.connection_pool.connection_kwargs
    assert (given["socket_timeout"], given["socket_connect_timeout"]) == (30.0, 5.0)
    tuned = RedisStorage(redis_url + "&socket_timeout=2&socket_connect_timeout=3")
    for opened in (tuned, tuned.sibling("other")):
        kwargs = opened._client.connection_pool.connection_kwargs
        assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (2.0, 3.0)
        opened.close()
    storage.close()


def test_a_server_that_never_answers_fails_within_the_socket_timeout() -> None:
    from click.testing import CliRunner

    from neardup.cli import main

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    threading.Thread(
        target=lambda: held.extend(iter(lambda: listener.accept()[0], None)), daemon=True
    ).start()
    url = f"redis://:hunter2@127.0.0.1:{port}/0?socket_timeout=1&prefix=p"
    try:
        started = time.monotonic()
        result = CliRunner().invoke(main, ["index", "stats", "--index", url])
        elapsed = time.monotonic() - started
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert result.exit_code == 1 and elapsed < 5 and "hunter2" not in result.output
    # redis-py's own words ("Timeout reading from socket", from 8.0 "... from 127.0.0.1:PORT")
    # stand between neardup's
    assert result.stderr.startswith(
        f"neardup: error: redis://:***@127.0.0.1:{port}/0?socket_timeout=1&prefix=p: opening the index "
        "failed: Timeout reading from "
    )
    assert result.stderr.endswith(
        " (no answer within 1 s; the socket_timeout option, as in ?socket_timeout=60, sets it)\n"
    )
    assert result.stderr.count("\n") == 1
