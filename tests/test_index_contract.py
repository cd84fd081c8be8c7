"""The contract every index backend keeps, run against each of them through one fixture.

A new backend (Redis) joins by adding a parameter to ``backend``: its ``open`` returns a storage on
the same data each time it is called, as reopening a file or reconnecting to a server does.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup.config import DedupConfig
from neardup.errors import ConfigError, IndexSettingsError, StorageError
from neardup.index import (
    DocumentInfo,
    IndexSettings,
    LSHIndex,
    Match,
    MemoryStorage,
    SQLiteStorage,
    Storage,
    open_storage,
)
from neardup.index.redis import RedisStorage

WORDS = [
    "river",
    "stone",
    "bread",
    "lamp",
    "cloud",
    "field",
    "winter",
    "copper",
    "garden",
    "violin",
    "harbor",
    "pencil",
    "orbit",
    "meadow",
    "candle",
    "falcon",
    "prism",
    "velvet",
    "anchor",
    "tunnel",
    "maple",
    "saddle",
    "quartz",
    "ember",
    "lantern",
    "thistle",
    "cobalt",
]


def _text(rng: np.random.Generator, n: int = 30) -> str:
    return " ".join(rng.choice(WORDS, size=n).tolist())


def _variants(seed: int = 3, count: int = 12) -> list[str]:
    """A base text and copies with more and more words replaced: similarities from 1 down."""
    rng = np.random.default_rng(seed)
    words = _text(rng, 40).split()
    out = []
    for i in range(count):
        w = list(words)
        for pos in rng.choice(len(w), size=min(len(w), 2 * i), replace=False).tolist():
            w[pos] = f"x{i}y{pos}"
        out.append(" ".join(w))
    return out


@dataclass
class Backend:
    name: str
    open: Callable[[], Storage]
    url: str
    """A storage on this backend's data: the same data on every call."""


_prefixes = itertools.count()


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Redis URL with a key prefix of this test's own, emptied afterwards."""
    import redis

    server: str = request.getfixturevalue("redis_server")
    prefix = f"t{os.getpid()}.{next(_prefixes)}."  # a test may add to it for a second index
    client = redis.Redis.from_url(server)
    yield f"{server}?prefix={prefix}"
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    opened: list[Storage] = []
    url = "memory://"
    if request.param == "memory":
        shared = MemoryStorage()

        def make() -> Storage:
            return shared
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")

        def make() -> Storage:
            storage = RedisStorage(url)
            opened.append(storage)
            return storage
    else:
        path = tmp_path / "idx.db"
        url = str(path)

        def make() -> Storage:
            storage = SQLiteStorage(path)
            opened.append(storage)
            return storage

    yield Backend(request.param, make, url)
    for storage in opened:
        storage.close()


def test_storage_satisfies_protocol(backend: Backend) -> None:
    assert isinstance(backend.open(), Storage)


def test_insert_query_remove_contains_len(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    assert len(index) == 0
    index.insert("cat", "The cat sat on the mat and looked at the garden for a long while")
    index.insert("dog", "A dog barked at the postman who walked quickly down the street")
    assert len(index) == 2
    assert "cat" in index and "dog" in index and "bird" not in index and 3 not in index
    assert index.query("the cat sat on the mat and looked at the garden for a long while!") == [
        Match("cat", 1.0, False)
    ]
    assert index.remove("cat") is True
    assert index.remove("cat") is False
    assert "cat" not in index and len(index) == 1
    assert index.query("the cat sat on the mat and looked at the garden for a long while") == []
    assert list(index.storage.keys()) == ["dog"]


def test_reinsert_replaces(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    old, new = "river stone bread lamp cloud field winter copper", "garden violin harbor pencil orbit meadow"
    index.insert("k", old)
    index.insert("k", new)
    assert len(index) == 1
    assert index.query(old) == []
    assert [m.key for m in index.query(new)] == ["k"]


def test_batch_insert_equals_single_inserts(backend: Backend) -> None:
    texts = _variants()
    keys = [f"doc{i:02d}" for i in range(len(texts))]
    batch = LSHIndex(backend.open())
    batch.insert_many(keys, texts)
    single = LSHIndex(MemoryStorage())
    for key, text in zip(keys, texts, strict=True):
        single.insert(key, text)
    assert list(batch.storage.keys()) == keys
    np.testing.assert_array_equal(batch.storage.get_signatures(keys), single.storage.get_signatures(keys))
    for text in texts:
        assert batch.query(text) == single.query(text)
    # a key repeated within one batch keeps its last text, like inserting one at a time
    batch.insert_many(["dup", "dup"], [texts[0], "completely different words here today"])
    assert [m.key for m in batch.query("completely different words here today")] == ["dup"]


def test_query_sorted_never_below_threshold(backend: Backend) -> None:
    texts = _variants()
    index = LSHIndex(backend.open())
    index.insert_many([f"doc{i:02d}" for i in range(len(texts))], texts)
    sigs = neardup.signatures(texts)
    for threshold in (None, 0.3, 0.5, 0.7, 0.9, 1.0):
        limit = index.settings.threshold if threshold is None else threshold
        matches = index.query(texts[0], threshold=threshold)
        assert matches[0] == Match("doc00", 1.0, False)
        for m in matches:
            assert m.similarity >= limit and not m.exact
            expected = np.count_nonzero(sigs[0] == sigs[int(m.key[3:])]) / sigs.shape[1]
            assert m.similarity == expected
        order = [(-m.similarity, m.key) for m in matches]
        assert order == sorted(order)
    assert len(index.query(texts[0], threshold=0.3)) > len(index.query(texts[0], threshold=0.9))


def test_ties_are_ordered_by_key_and_top_k_cuts(backend: Backend) -> None:
    text = "the same words in the same order for every one of these keys"
    index = LSHIndex(backend.open())
    index.insert_many(["b", "c", "a"], [text] * 3)
    assert [m.key for m in index.query(text)] == ["a", "b", "c"]
    assert [m.key for m in index.query(text, top_k=2)] == ["a", "b"]
    texts = _variants()
    index.insert_many([f"v{i:02d}" for i in range(len(texts))], texts)
    full = index.query(texts[0], threshold=0.3)
    assert index.query(texts[0], threshold=0.3, top_k=3) == full[:3]
    with pytest.raises(ConfigError, match="top_k must be a whole number of at least 1, got 0"):
        index.query(text, top_k=0)
    with pytest.raises(ConfigError, match=r"threshold must be in \(0, 1\], got 1.5"):
        index.query(text, threshold=1.5)


def test_exact_similarity_with_keep_shingles(backend: Backend) -> None:
    texts = _variants()
    keys = [f"doc{i:02d}" for i in range(len(texts))]
    index = LSHIndex(backend.open(), keep_shingles=True)
    index.insert_many(keys, texts)
    matches = index.query(texts[0], threshold=0.3, exact=True)
    assert matches and matches[0] == Match("doc00", 1.0, True)
    for m in matches:
        assert m.exact and m.similarity >= 0.3
        assert m.similarity == pytest.approx(neardup.exact_jaccard(texts[0], texts[int(m.key[3:])]))
    order = [(-m.similarity, m.key) for m in matches]
    assert order == sorted(order)
    stored = index.storage.get_shingles(["doc03"])[0]
    assert stored is not None
    np.testing.assert_array_equal(stored, neardup.shingle_hashes(texts[3]))


def test_exact_needs_kept_shingles(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    index.insert("a", "some words to index here")
    with pytest.raises(ConfigError, match="build it with keep_shingles=True"):
        index.query("some words to index here", exact=True)


def test_settings_persisted_and_reopened(backend: Backend) -> None:
    config = DedupConfig.create(num_perm=64, seed=7, threshold=0.6, shingle="char", ngram=4)
    texts = _variants()
    keys = [f"doc{i:02d}" for i in range(len(texts))]
    index = LSHIndex(backend.open(), config, keep_shingles=True)
    index.insert_many(keys, texts)
    answers = [index.query(t, threshold=0.3) for t in texts]
    exact = index.query(texts[0], exact=True)
    index.close()

    again = LSHIndex(backend.open())  # no config: the stored settings rule
    assert again.settings == index.settings
    assert again.settings == IndexSettings.from_config(config, keep_shingles=True)
    assert len(again) == len(texts)
    assert [again.query(t, threshold=0.3) for t in texts] == answers
    assert again.query(texts[0], exact=True) == exact
    assert LSHIndex(backend.open(), config).settings == index.settings  # the same config is fine
    stats = again.stats()
    assert stats["documents"] == len(texts)
    assert (stats["bands"], stats["rows"]) == (index.settings.bands, index.settings.rows)
    assert stats["settings"] == {**index.settings.to_dict(), "containment": False, "partitions": []}
    assert stats["backend"] == backend.name


def test_settings_mismatch_refused(backend: Backend) -> None:
    LSHIndex(backend.open()).insert("a", "a few words")
    with pytest.raises(IndexSettingsError) as err:
        LSHIndex(backend.open(), DedupConfig.create(seed=1))
    assert str(err.value) == "the index was built with seed=42 but this config uses seed=1"
    with pytest.raises(IndexSettingsError) as err:
        LSHIndex(backend.open(), DedupConfig.create(shingle="char", ngram=5))
    assert str(err.value) == (
        "the index was built with shingle_mode='word' but this config uses shingle_mode='char'; "
        "the index was built with ngram=2 but this config uses ngram=5"
    )
    with pytest.raises(IndexSettingsError) as err:
        LSHIndex(backend.open(), keep_shingles=True)
    assert str(err.value) == (
        "the index was built with keep_shingles=False but this config uses keep_shingles=True"
    )

    index = LSHIndex(backend.open())
    other = IndexSettings.from_config(DedupConfig.create(num_perm=64))
    sigs = neardup.signatures(["a few words"], DedupConfig.create(num_perm=64))
    with pytest.raises(IndexSettingsError) as err:
        index.insert_signatures(["b"], sigs, settings=other)
    assert str(err.value) == "the index was built with num_perm=128 but this signature uses num_perm=64"
    with pytest.raises(IndexSettingsError, match="num_perm=128 but this signature uses num_perm=64"):
        index.query_signature(sigs[0], settings=other)
    assert len(index) == 1


def test_signature_width_mismatch_refused(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    narrow = np.zeros((2, 64), dtype=np.uint32)
    message = "the index was built with num_perm=128 but these signatures have 64 values each"
    with pytest.raises(IndexSettingsError) as err:
        index.insert_signatures(["a", "b"], narrow)
    assert str(err.value) == message
    with pytest.raises(IndexSettingsError) as err:
        index.query_signature(narrow[0])
    assert str(err.value) == message
    assert len(index) == 0


def test_signatures_in_and_out(backend: Backend) -> None:
    texts = _variants()
    keys = [f"doc{i:02d}" for i in range(len(texts))]
    sigs = neardup.signatures(texts)
    index = LSHIndex(backend.open())
    index.insert_signatures(keys, sigs, settings=IndexSettings.from_config(DedupConfig()))
    np.testing.assert_array_equal(index.storage.get_signatures(keys), sigs)
    for sig, text in zip(sigs, texts, strict=True):
        assert index.query_signature(sig) == index.query(text)
    assert index.query_signatures(sigs) == index.query_many(texts)


def test_empty_documents_never_match(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    index.insert_many(["blank", "punct", "words"], ["", " ?!… — ", "real words are here"])
    assert len(index) == 3 and "blank" in index and "punct" in index
    for query in ("", "...", " ?!… — "):
        assert index.query(query, threshold=0.01) == []
    empty_sig = index.storage.get_signatures(["blank"])[0]
    assert index.query_signature(empty_sig, threshold=0.01) == []
    index.insert_signatures(["blank2"], empty_sig[None, :])
    assert index.query_signature(empty_sig, threshold=0.01) == []
    assert index.query_many(["", "real words are here"]) == [[], [Match("words", 1.0, False)]]


def test_remove_many_and_keys_order(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    index.insert_many(["a", "b", "c", "d"], ["one two three", "four five six", "seven eight", "nine ten"])
    index.insert("b", "four five six again")  # a replaced key moves to the end
    assert list(index.storage.keys()) == ["a", "c", "d", "b"]
    assert index.remove_many(["a", "zzz", "c", "a"]) == 2
    assert list(index.storage.keys()) == ["d", "b"]
    assert index.query("one two three") == []


def test_storage_batch_with_repeated_key_is_refused_whole(backend: Backend) -> None:
    storage = backend.open()
    sigs = np.arange(8, dtype=np.uint32).reshape(2, 4)
    keys = np.arange(4, dtype=np.uint64).reshape(2, 2)
    with pytest.raises(ValueError, match="key 'x' occurs twice in one batch"):
        storage.insert(["x", "x"], sigs, keys)
    with pytest.raises(TypeError, match="index keys must be str, got int"):
        storage.insert([1, 2], sigs, keys)  # type: ignore[list-item]
    assert storage.count() == 0
    with pytest.raises(KeyError, match="nope"):
        storage.get_signatures(["nope"])


def test_open_storage_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_storage("memory://"), MemoryStorage)
    absolute = open_storage(f"sqlite://{tmp_path / 'abs.db'}")
    assert isinstance(absolute, SQLiteStorage) and absolute.path == str(tmp_path / "abs.db")
    assert absolute.url == f"sqlite://{tmp_path / 'abs.db'}"
    absolute.close()
    monkeypatch.chdir(tmp_path)
    for target, name in (("sqlite://rel.db", "rel.db"), ("bare.db", "bare.db"), (tmp_path / "p.db", "p.db")):
        storage = open_storage(target)
        assert isinstance(storage, SQLiteStorage) and storage.path == os.path.join(tmp_path, name)
        storage.close()
    assert (tmp_path / "rel.db").exists() and (tmp_path / "bare.db").exists()
    with pytest.raises(StorageError, match="unknown index URL scheme 'ftp'"):
        open_storage("ftp://host/idx")
    with pytest.raises(StorageError, match="memory:// takes no path"):
        open_storage("memory://name")
    with pytest.raises(StorageError, match="names no file"):
        open_storage("sqlite://")
    index = LSHIndex.open(tmp_path / "via-open.db")
    assert index.stats()["backend"] == "sqlite" and index.stats()["size_bytes"] > 0
    index.close()


def test_index_from_another_hash_version_is_refused(backend: Backend) -> None:
    storage = backend.open()
    LSHIndex(storage)
    stored = storage.read_settings()
    assert stored is not None
    storage.write_settings({**stored, "hash_version": 0})
    with pytest.raises(IndexSettingsError) as err:
        LSHIndex(backend.open())
    assert str(err.value) == (
        "the index was built with hash_version=0 but this version of neardup uses hash_version=1"
    )
    storage.write_settings({**stored, "bogus": 1})
    with pytest.raises(IndexSettingsError, match=r"not readable \(unknown bogus\)"):
        LSHIndex(backend.open())
    del stored["seed"]
    storage.write_settings(stored)
    with pytest.raises(IndexSettingsError, match=r"not readable \(missing seed\)"):
        LSHIndex(backend.open())


# -- per-document info ----------------------------------------------------------------------------

REPEATS = "a b a b a b c"  # word bigrams: 6, of which 3 distinct (a b, b a, b c)


def test_info_before_and_after_insert_replace_and_remove(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    assert index.info("a") is None and index.info_many([]) == []
    before = time.time()
    index.insert_many(["a", "b"], ["river stone bread lamp cloud", ""])
    after = time.time()
    a, b, nope, again = index.info_many(["a", "b", "nope", "a"])
    assert nope is None and again == a
    assert a is not None and b is not None
    assert (a.key, a.shingles, b.key, b.shingles) == ("a", 4, "b", 0)
    assert a.inserted_at is not None and before <= a.inserted_at <= after
    assert b.inserted_at == a.inserted_at  # one time per batch
    time.sleep(0.01)
    index.insert("a", "garden violin harbor")
    replaced = index.info("a")
    assert replaced is not None and replaced.shingles == 2
    assert replaced.inserted_at is not None and replaced.inserted_at > a.inserted_at
    assert index.info("b") == b  # the other document is untouched
    assert index.remove("a") and index.info("a") is None
    assert index.remove_many(["b"]) == 1 and index.info_many(["a", "b"]) == [None, None]
    index.insert("a", "back again")
    assert index.info("a") is not None  # a key inserted after its removal has info again


def test_info_shingle_counts(backend: Backend) -> None:
    kept = LSHIndex(backend.open(), keep_shingles=True)
    kept.insert_many(["rep", "cjk"], [REPEATS, "今天天气很好"])
    distinct = [len(neardup.shingle_hashes(t)) for t in (REPEATS, "今天天气很好")]
    assert distinct[0] == 3
    assert [i.shingles for i in kept.info_many(["rep", "cjk"]) if i] == distinct
    # shingles given with the signatures: their count
    sets = [neardup.shingle_hashes(REPEATS)]
    kept.insert_signatures(["sig"], neardup.signatures([REPEATS]), shingles=sets)
    info = kept.info("sig")
    assert info is not None and info == DocumentInfo("sig", info.inserted_at, 3)


def test_info_counts_repeats_where_shingles_are_not_kept(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    index.insert("rep", REPEATS)
    info = index.info("rep")
    assert info is not None and info.shingles == 6  # the signature pass counts each occurrence
    sigs = neardup.signatures([REPEATS, "two words"])
    index.insert_signatures(["s1", "s2"], sigs)
    assert [i.shingles for i in index.info_many(["s1", "s2"]) if i] == [None, None]
    index.insert_signatures(["s1", "s2"], sigs, shingle_counts=np.array([6, 1]))
    assert [i.shingles for i in index.info_many(["s1", "s2"]) if i] == [6, 1]
    storage = backend.open()
    with pytest.raises(ValueError, match="expected 2 shingle counts, got shape"):
        index.insert_signatures(["s1", "s2"], sigs, shingle_counts=np.array([6]))
    with pytest.raises(ValueError, match="shingle counts must be whole numbers of at least 0"):
        storage.insert(["x"], sigs[:1], np.zeros((1, 2), dtype=np.uint64), shingle_counts=np.array([-2]))
    assert "x" not in index


# -- the exclusive section -------------------------------------------------------------------------


@contextmanager
def _own_storage(backend: Backend) -> Iterator[Storage]:
    """A storage of the backend's index for one thread (an SQLite connection is bound to the
    thread that made it); a memory index is the one shared object."""
    storage = backend.open() if backend.name == "memory" else open_storage(backend.url)
    try:
        yield storage
    finally:
        if backend.name != "memory":
            storage.close()


def test_exclusive_check_then_insert_races_in_threads(backend: Backend) -> None:
    """Threads that each check for a text and insert it if absent, in the section, insert it once."""
    LSHIndex(backend.open()).close()  # created before the threads read the settings
    texts = _variants(seed=5, count=6)
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with _own_storage(backend) as storage:
                index = LSHIndex(storage)
                start.wait()
                for i, text in enumerate(texts):
                    with index.exclusive():
                        if not index.query(text, threshold=0.99):
                            time.sleep(0.002)  # widen the window between the check and the insert
                            index.insert(f"t{n}-{i}", text)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    index = LSHIndex(backend.open())
    assert len(index) == len(texts)
    for i, text in enumerate(texts):
        assert [m.key.partition("-")[2] for m in index.query(text, threshold=0.99)] == [str(i)]


def test_exclusive_is_reentrant_and_released_on_exception(backend: Backend) -> None:
    storage = backend.open()
    with storage.exclusive(), storage.exclusive():  # re-entrant for its holder
        storage.insert(["k"], np.zeros((1, 4), dtype=np.uint32), np.zeros((1, 2), dtype=np.uint64))
        assert storage.info(["k"])[0] is not None  # the holder reads and writes as usual
    with pytest.raises(RuntimeError, match="inside"), storage.exclusive():
        raise RuntimeError("inside")
    entered = threading.Event()

    def other() -> None:
        with _own_storage(backend) as mine, mine.exclusive():
            entered.set()

    for _ in range(3):  # free again after the exception, and re-usable
        entered.clear()
        thread = threading.Thread(target=other)
        thread.start()
        assert entered.wait(timeout=20)
        thread.join()
        with storage.exclusive():
            pass


def test_exclusive_waits_for_the_holder_then_gives_up(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("neardup.index.base.EXCLUSIVE_WAIT_S", 0.3)
    holding, done = threading.Event(), threading.Event()

    def holder() -> None:
        with _own_storage(backend) as storage, storage.exclusive():
            holding.set()
            done.wait(timeout=30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(timeout=20)
    waiter = backend.open() if backend.name == "memory" else open_storage(backend.url)
    t0 = time.monotonic()
    try:
        message = r"held the index's exclusive section .*for more than 0\.3 s"
        with pytest.raises(StorageError, match=message), waiter.exclusive():
            pass
        assert 0.25 < time.monotonic() - t0 < 10
    finally:
        done.set()
        thread.join()
    with waiter.exclusive():  # the holder has left
        pass
    if backend.name != "memory":
        waiter.close()


_HOLDER = """
import os, sys, time
from neardup.index import LSHIndex
url, log, go, rounds, who = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
texts = [f"shared text number {i} " + " ".join(f"w{i}x{j}" for j in range(12)) for i in range(rounds)]
fd = os.open(log, os.O_WRONLY | os.O_APPEND)
with LSHIndex.open(url) as index:
    index.query("warm up the kernels")
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    for i, text in enumerate(texts):
        with index.exclusive():
            os.write(fd, f"enter {who}\\n".encode())
            if not index.query(text, threshold=0.99):
                index.insert(f"{who}-{i}", text)
            time.sleep(0.001)
            os.write(fd, f"leave {who}\\n".encode())
"""


def test_exclusive_excludes_other_processes(backend: Backend, tmp_path: Path) -> None:
    if backend.name == "memory":
        pytest.skip("a memory index lives in one process")
    LSHIndex(backend.open()).close()
    log, go, rounds = tmp_path / "markers.log", tmp_path / "go", 40
    log.touch()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLDER, backend.url, str(log), str(go), str(rounds), who],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("p", "q")
    ]
    for proc in procs:  # both start their rounds together
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    go.touch()
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 2 * rounds
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        assert enter.split()[0] == "enter" and leave == "leave " + enter.split()[1], lines
    assert {line.split()[1] for line in lines} == {"p", "q"}
    with LSHIndex(backend.open()) as index:
        assert len(index) == rounds  # every text inserted exactly once
        stored = sorted(int(key.partition("-")[2]) for key in list(index.storage.keys()))
        assert stored == list(range(rounds))


# -- Redis only ------------------------------------------------------------------------------------


def test_open_storage_redis_urls(redis_url: str) -> None:
    storage = open_storage(redis_url)
    assert isinstance(storage, RedisStorage) and storage.url == redis_url
    assert storage.prefix == redis_url.rpartition("=")[2] + ":"
    storage.close()
    default = open_storage(redis_url.partition("?")[0])
    assert isinstance(default, RedisStorage) and default.prefix == "neardup:"
    default._client.delete(b"neardup:layout")  # opening wrote it; leave the server as it was
    default.close()
    with pytest.raises(StorageError, match=r"the prefix parameter is empty; .* \?prefix=myindex"):
        open_storage(redis_url.partition("?")[0] + "?prefix=")


def test_redis_password_hidden_and_errors_name_the_url() -> None:
    url = "redis://user:s3cret@127.0.0.1:1/0?prefix=x&socket_connect_timeout=1"
    with pytest.raises(StorageError) as err:
        open_storage(url)
    message = str(err.value)
    assert message.startswith("redis://user:***@127.0.0.1:1/0?prefix=x&socket_connect_timeout=1: ")
    assert "opening the index failed" in message and "s3cret" not in message
    assert err.value.__cause__ is not None


def test_redis_py_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # makes `import redis` raise ImportError
    with pytest.raises(StorageError) as err:
        open_storage("redis://127.0.0.1:6379/0")
    assert str(err.value) == (
        "redis://127.0.0.1:6379/0: the Redis backend needs redis-py; "
        "install it with pip install 'neardup[redis]'"
    )


def test_two_redis_connections_see_each_other(redis_url: str) -> None:
    texts = _variants()
    first = LSHIndex.open(redis_url)
    second = LSHIndex.open(redis_url)
    first.insert_many([f"doc{i:02d}" for i in range(6)], texts[:6])
    assert len(second) == 6 and "doc03" in second
    assert [m.key for m in second.query(texts[0], top_k=1)] == ["doc00"]
    second.insert("late", texts[8])
    assert "late" in first and first.query(texts[8], top_k=1) == [Match("late", 1.0, False)]
    assert first.remove("doc00") and "doc00" not in second
    assert list(second.storage.keys()) == [f"doc{i:02d}" for i in range(1, 6)] + ["late"]
    first.close()
    second.close()


def test_redis_prefixes_keep_indexes_apart(redis_url: str) -> None:
    other_url = redis_url + "-other"
    one, two = LSHIndex.open(redis_url), LSHIndex.open(other_url, DedupConfig.create(num_perm=64))
    one.insert("a", "words that live in the first index only")
    assert len(two) == 0 and two.settings.num_perm == 64 and one.settings.num_perm == 128
    assert two.query("words that live in the first index only") == []
    two.storage.remove(["a"])
    assert "a" in one
    one.close()
    two.close()


_PROCESS_TEXT = """
import numpy as np
def text(batch, i):
    rng = np.random.default_rng(batch * 1000 + i)
    return " ".join(f"w{n}" for n in rng.integers(0, 5000, size=30).tolist())
"""
_WRITER = (
    _PROCESS_TEXT
    + """
import sys
from neardup.index import LSHIndex
url, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with LSHIndex.open(url) as index:
    for b in range(batches):
        index.insert_many([f"b{b}-{i}" for i in range(size)], [text(b, i) for i in range(size)])
"""
)
_READER = (
    _PROCESS_TEXT
    + """
import os, sys
from neardup.index import LSHIndex
url, size, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(os.getpid())
queries = sizes = 0
with LSHIndex.open(url) as index:
    while True:
        finished = os.path.exists(stop)
        n = len(index)
        assert n % size == 0, f"saw {n} documents: half a batch"
        sizes += 1
        if n:
            b, i = int(rng.integers(0, n // size)), int(rng.integers(0, size))
            found = index.query(text(b, i))
            assert any(m.key == f"b{b}-{i}" and m.similarity == 1.0 for m in found), (b, i, found)
            queries += 1
        if finished:
            break
print(queries, sizes)
"""
)


def test_two_processes_query_while_a_third_inserts(backend: Backend, tmp_path: Path) -> None:
    if backend.name == "memory":
        pytest.skip("a memory index lives in one process")
    import subprocess

    LSHIndex(backend.open()).close()  # created with the default settings before anyone reads
    stop = tmp_path / "writer-finished"
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", _READER, backend.url, "100", str(stop)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    writer = subprocess.run(
        [sys.executable, "-c", _WRITER, backend.url, "12", "100"], capture_output=True, text=True, timeout=300
    )
    stop.touch()
    outputs = [r.communicate(timeout=300) for r in readers]
    assert writer.returncode == 0, writer.stderr
    for reader, (out, _) in zip(readers, outputs, strict=True):
        assert reader.returncode == 0, "a reader failed (its traceback is above)"
        queries, sizes = map(int, out.split())
        assert queries > 0 and sizes > 1
    with LSHIndex(backend.open()) as index:
        assert len(index) == 1200


def test_concurrent_creators_cannot_disagree(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("a memory index lives in one process")
    from neardup.index.settings import IndexSettings as Settings

    first, second, third = backend.open(), backend.open(), backend.open()
    assert all(s.read_settings() is None for s in (first, second, third))  # all think they create
    chosen = Settings.from_config(DedupConfig(), keep_shingles=True).to_dict()
    first.write_settings(chosen)
    second.write_settings(chosen)  # the same settings: fine
    with pytest.raises(IndexSettingsError) as err:
        third.write_settings(Settings.from_config(DedupConfig.create(seed=1)).to_dict())
    assert "another process created this index at the same time with other settings" in str(err.value)
    assert "keep_shingles=True (not False)" in str(err.value) and "seed=42 (not 1)" in str(err.value)
    assert backend.open().read_settings() == chosen


def test_redis_layout_version_checked(redis_url: str) -> None:
    import redis

    storage = RedisStorage(redis_url)
    client = redis.Redis.from_url(redis_url.partition("?")[0])
    client.set(storage.prefix + "layout", "99")
    with pytest.raises(StorageError, match=r"index layout b'99' under prefix .* is not readable"):
        RedisStorage(redis_url)
    client.close()
    storage.close()


# -- containment search ----------------------------------------------------------------------------


def _planted(seed: int = 11) -> tuple[str, dict[str, str]]:
    """A source text and documents holding 25-100% of it inside 0-8 times as much other text
    (from a vocabulary of its own, so only the planted part is shared), plus unrelated ones."""
    rng = np.random.default_rng(seed)
    source = [f"s{i}" for i in range(80)]
    docs: dict[str, str] = {}
    for share in (0.25, 0.5, 0.75, 1.0):
        for pad in (0, 1, 4, 8):
            length = int(share * len(source))
            start = int(rng.integers(0, len(source) - length + 1))
            other = [f"o{int(w)}" for w in rng.integers(0, 5000, size=pad * length)]
            cut = int(rng.integers(0, len(other) + 1))
            docs[f"c{int(share * 100):03d}p{pad}"] = " ".join(
                other[:cut] + source[start : start + length] + other[cut:]
            )
    for i in range(6):
        docs[f"unrelated{i}"] = " ".join(
            f"u{int(w)}" for w in rng.integers(0, 5000, size=int(rng.integers(20, 400)))
        )
    return " ".join(source), docs


def _containment(query: str, doc: str, direction: str) -> float:
    q, x = neardup.shingle_hashes(query), neardup.shingle_hashes(doc)
    shared = np.intersect1d(q, x).size
    return shared / (q.size if direction == "query_in_doc" else x.size)


@pytest.mark.parametrize("direction", ["query_in_doc", "doc_in_query"])
def test_containment_exact_and_estimated_round_trip(backend: Backend, direction: str) -> None:
    source, docs = _planted()
    index = LSHIndex(backend.open(), keep_shingles=True, containment=True)
    index.insert_many(list(docs), list(docs.values()))
    queries = [source, *list(docs.values())[:3]]
    exact = index.query_containment_many(queries, 0.5, direction=direction)  # type: ignore[arg-type]
    estimated = index.query_containment_many(queries, 0.5, direction=direction, exact=False)  # type: ignore[arg-type]
    index.close()
    for query, matches in zip(queries, exact, strict=True):
        truth = {k for k, t in docs.items() if _containment(query, t, direction) >= 0.5}
        assert {m.key for m in matches} == truth
        for m in matches:
            assert m.exact and m.containment == pytest.approx(_containment(query, docs[m.key], direction))
        assert [(-m.containment, m.key) for m in matches] == sorted((-m.containment, m.key) for m in matches)
    if direction == "query_in_doc":  # the source is in every document holding it whole
        assert {m.key for m in exact[0]} >= {"c100p0", "c100p1", "c100p4", "c100p8"}
    else:  # and holds every part of itself that stands alone
        assert {m.key for m in exact[0]} >= {"c025p0", "c050p0", "c075p0", "c100p0"}
    for matches in estimated:
        assert all(not m.exact and m.containment >= 0.5 for m in matches)

    again = LSHIndex(backend.open())  # the stored settings: containment and its partitions
    assert again.settings.containment and again.settings.partitions == index.settings.partitions
    assert again.query_containment_many(queries, 0.5, direction=direction) == exact  # type: ignore[arg-type]
    assert again.query_containment_many(queries, 0.5, direction=direction, exact=False) == estimated  # type: ignore[arg-type]


def test_containment_partitions_grow_for_every_reader(backend: Backend) -> None:
    source, docs = _planted()
    writer = LSHIndex(backend.open(), keep_shingles=True, containment=True)
    writer.insert("short", source)
    reader = LSHIndex(backend.open())
    before = reader.settings.partitions
    assert [m.key for m in reader.query_containment(source, 0.9)] == ["short"]
    writer.insert_many(["c100p8", "c025p0"], [docs["c100p8"], docs["c025p0"]])  # new size partitions
    assert len(writer.settings.partitions) > len(before)
    assert [m.key for m in reader.query_containment(source, 0.9)] == ["c100p8", "short"]
    assert reader.settings.partitions == writer.settings.partitions
    writer.remove("c100p8")
    writer.insert("short", "nothing of the source here at all")
    assert reader.query_containment(source, 0.9) == []
    info = writer.storage.info(["c025p0"])[0]
    assert info is not None and info.shingles == neardup.shingle_hashes(docs["c025p0"]).size


def test_containment_through_check_many_and_signatures(backend: Backend) -> None:
    source, docs = _planted()
    index = LSHIndex(backend.open(), containment=True)  # no shingles: estimates only
    index.check_many([docs["c100p4"]], ["checked"], insert="always")
    info = index.storage.info(["checked"])[0]
    assert info is not None and info.shingles == neardup.shingle_hashes(docs["c100p4"]).size
    sigs = neardup.signatures([docs["c100p1"]])
    with pytest.raises(ConfigError, match="needs each document's distinct shingle count"):
        index.insert_signatures(["by-signature"], sigs)
    index.insert_signatures(
        ["by-signature"], sigs, shingle_counts=np.array([neardup.shingle_hashes(docs["c100p1"]).size])
    )
    found = index.query_containment(source, 0.8)
    assert {m.key for m in found} == {"checked", "by-signature"} and not any(m.exact for m in found)
    with pytest.raises(ConfigError, match="needs the documents' shingles"):
        index.query_containment(source, 0.8, exact=True)


def test_containment_needs_a_containment_index(backend: Backend) -> None:
    index = LSHIndex(backend.open())
    index.insert("a", "some words to index here")
    with pytest.raises(ConfigError) as err:
        index.query_containment("some words to index here")
    assert str(err.value) == (
        "this index was not built for containment search; build it with containment=True "
        "(neardup index build --containment)"
    )
    with pytest.raises(
        IndexSettingsError, match="built with containment=False but this config uses containment=True"
    ):
        LSHIndex(backend.open(), containment=True)
    assert "containment" not in index.settings.to_dict()  # readable by releases before containment
    for bad in (0, 1.5, "0.8", True):
        with pytest.raises(ConfigError, match="min_containment must be in"):
            LSHIndex(MemoryStorage(), containment=True).query_containment("x y", bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="direction must be one of query_in_doc, doc_in_query"):
        LSHIndex(MemoryStorage(), containment=True).query_containment("x y", direction="both")  # type: ignore[arg-type]
