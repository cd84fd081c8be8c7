"""neardup.compat: datasketch's MinHash and MinHashLSH API on neardup's index."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from itertools import count

import numpy as np
import pytest

from neardup.compat import MinHash, MinHashLSH

DOCUMENTS = [
    "机器学习是人工智能的一个分支，研究计算机如何从数据中学习规律。",
    "自然语言处理的应用！",  # a near-copy of the query
    "今天天气很好，我们一起去公园散步吧，顺便买点水果回家。",
    "深度学习模型在图像识别任务上取得了很大的进展。",
    "数据库索引可以显著提高查询速度，但会占用额外的存储空间。",
]


def _mh(words: list[str], num_perm: int = 128, seed: int = 1) -> MinHash:
    m = MinHash(num_perm=num_perm, seed=seed)
    for w in words:
        m.update(w.encode("utf-8"))
    return m


def test_seed_001_example_runs_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    # ../shared/seeds/001_*.txt section 4.1, with only the import changed and list() for jieba
    from neardup.compat import MinHash, MinHashLSH

    class jieba:  # noqa: N801 -- stands in for the jieba module
        @staticmethod
        def cut(text: str) -> list[str]:
            return list(text)

    def text_to_shingles(text: str, k: int = 5) -> list[str]:  # annotated for mypy only
        words = list(jieba.cut(text))
        return [" ".join(words[i : i + k]) for i in range(len(words) - k + 1)]

    # 初始化LSH索引
    lsh = MinHashLSH(threshold=0.7, num_perm=128)

    documents = DOCUMENTS  # 文档列表
    for i, doc in enumerate(documents):
        # 生成shingle
        shingles = text_to_shingles(doc)

        # 创建MinHash
        mh = MinHash(num_perm=128)
        for shingle in shingles:
            mh.update(shingle.encode("utf-8"))

        # 存储到LSH
        lsh.insert(f"doc_{i}", mh)

    # 查询相似文档
    query_doc = "自然语言处理的应用"
    query_shingles = text_to_shingles(query_doc)
    query_mh = MinHash(num_perm=128)
    for shingle in query_shingles:
        query_mh.update(shingle.encode("utf-8"))

    results = lsh.query(query_mh)
    print(f"找到相似文档：{results}")

    assert "doc_1" in results
    assert "doc_0" not in results and "doc_2" not in results
    assert "doc_1" in capsys.readouterr().out


def test_jaccard_estimate_within_four_sigma() -> None:
    a = [str(i).encode() for i in range(0, 1000)]
    b = [str(i).encode() for i in range(500, 1500)]
    true = 500 / 1500
    k = 256
    ma, mb = MinHash(num_perm=k), MinHash(num_perm=k)
    ma.update_batch(a)
    mb.update_batch(b)
    sigma = math.sqrt(true * (1 - true) / k)
    assert abs(ma.jaccard(mb) - true) <= 4 * sigma
    assert ma.jaccard(ma.copy()) == 1.0
    assert ma.hashvalues.dtype == np.uint32
    assert abs(ma.count() - 1000) < 0.3 * 1000


def test_update_batch_equals_repeated_update_and_merge() -> None:
    words = [f"w{i}".encode() for i in range(300)]
    one = MinHash(num_perm=64, seed=3)
    for w in words:
        one.update(w)
    batch = MinHash(num_perm=64, seed=3)
    batch.update_batch(words)
    assert one == batch
    np.testing.assert_array_equal(one.digest(), batch.hashvalues)

    left, right = MinHash(num_perm=64, seed=3), MinHash(num_perm=64, seed=3)
    left.update_batch(words[:150])
    right.update_batch(words[100:])
    left.merge(right)
    assert left == batch
    assert len(left) == 64


def test_empty_digest_and_hashfunc() -> None:
    m = MinHash(num_perm=16)
    assert m.is_empty()
    d = m.digest()
    m.update(b"x")
    assert not m.is_empty()
    assert not np.array_equal(d, m.hashvalues)  # digest was a copy
    calls: list[bytes] = []

    def hf(b: bytes) -> int:
        calls.append(b)
        return len(b)

    h = MinHash(num_perm=16, hashfunc=hf)
    h.update(b"abc")
    assert calls == [b"abc"] and not h.is_empty()


def test_minhash_mismatch_errors() -> None:
    with pytest.raises(ValueError):
        MinHash(num_perm=64).jaccard(MinHash(num_perm=128))
    with pytest.raises(ValueError):
        MinHash(num_perm=64, seed=1).jaccard(MinHash(num_perm=64, seed=2))
    with pytest.raises(ValueError):
        MinHash(num_perm=64, seed=1).merge(MinHash(num_perm=64, seed=2))


def test_lsh_remove_contains_is_empty_and_duplicates() -> None:
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    assert lsh.is_empty() and "a" not in lsh
    m = _mh(["x", "y", "z"], num_perm=64)
    lsh.insert("a", m)
    lsh.insert(("tuple", 1), m)  # any hashable key in memory
    assert "a" in lsh and ("tuple", 1) in lsh and not lsh.is_empty()
    assert sorted(map(str, lsh.query(m))) == sorted(["a", str(("tuple", 1))])
    with pytest.raises(ValueError):
        lsh.insert("a", m)
    lsh.insert("a", m, check_duplication=False)
    lsh.remove("a")
    lsh.remove(("tuple", 1))
    assert "a" not in lsh and lsh.is_empty()
    with pytest.raises(ValueError):
        lsh.remove("a")


def test_lsh_num_perm_params_and_seed_errors() -> None:
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    with pytest.raises(ValueError):
        lsh.insert("a", _mh(["x"], num_perm=128))
    with pytest.raises(ValueError):
        lsh.query(_mh(["x"], num_perm=128))
    lsh.insert("a", _mh(["x"], num_perm=64, seed=1))
    with pytest.raises(ValueError):
        lsh.query(_mh(["x"], num_perm=64, seed=2))
    with pytest.raises(ValueError):
        MinHashLSH(threshold=0.5, num_perm=64, params=(10, 10))
    fixed = MinHashLSH(threshold=0.5, num_perm=64, params=(16, 4))
    assert (fixed.b, fixed.r) == (16, 4)


def test_query_filters_below_threshold() -> None:
    # datasketch would return any band collision; neardup.compat keeps only estimates >= threshold
    lsh = MinHashLSH(threshold=0.8, num_perm=128, params=(128, 1))
    base = [f"t{i}" for i in range(100)]
    lsh.insert("near", _mh([*base[:95], "n1", "n2", "n3"]))
    lsh.insert("far", _mh(base[:30] + [f"f{i}" for i in range(70)]))
    assert lsh.query(_mh(base)) == ["near"]


def test_insertion_session() -> None:
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    sigs = {f"k{i}": _mh([f"w{i}", f"v{i}", f"u{i}"], num_perm=64) for i in range(25)}
    with lsh.insertion_session(buffer_size=10) as session:
        for key, m in sigs.items():
            session.insert(key, m)
        with pytest.raises(ValueError):
            session.insert("k0", sigs["k0"])
    assert all(k in lsh for k in sigs)
    assert lsh.query(sigs["k7"]) == ["k7"]
    with pytest.raises(ValueError), lsh.insertion_session() as session:
        session.insert("k3", sigs["k3"])


_prefixes = count()


@pytest.fixture
def redis_basename(redis_server: str) -> Iterator[tuple[str, bytes]]:
    import redis

    name = f"compat{os.getpid()}.{next(_prefixes)}"
    yield redis_server, name.encode()
    client = redis.Redis.from_url(redis_server)
    keys = list(client.scan_iter(match=f"{name}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def test_redis_storage_config(redis_basename: tuple[str, bytes]) -> None:
    server, basename = redis_basename
    hostport, _, db = server.removeprefix("redis://").partition("/")
    host, _, port = hostport.partition(":")
    config = {
        "type": "redis",
        "redis": {"host": host, "port": int(port), "db": int(db)},
        "basename": basename,
    }
    lsh = MinHashLSH(threshold=0.5, num_perm=64, storage_config=config)
    m = _mh(["a", "b", "c", "d"], num_perm=64)
    other = _mh(["p", "q", "r", "s"], num_perm=64)
    with lsh.insertion_session(buffer_size=2) as session:
        session.insert("doc-1", m)
        session.insert("doc-2", other)
        session.insert("doc-3", m)
    assert lsh.query(m) == ["doc-1", "doc-3"]
    with pytest.raises(TypeError):
        lsh.insert(42, m)
    lsh.remove("doc-3")
    lsh.close()

    again = MinHashLSH(threshold=0.5, num_perm=64, storage_config=config)  # reopens the same index
    assert "doc-1" in again and "doc-3" not in again
    assert again.query(m) == ["doc-1"]
    with pytest.raises(ValueError):
        MinHashLSH(threshold=0.5, num_perm=32, storage_config=config)
    again.close()


def test_sqlite_storage_config(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "idx.db")
    lsh = MinHashLSH(threshold=0.5, num_perm=64, storage_config={"type": "sqlite", "path": path})
    m = _mh(["a", "b", "c"], num_perm=64)
    lsh.insert("x", m)
    lsh.close()
    again = MinHashLSH(threshold=0.5, num_perm=64, storage_config={"type": "sqlite", "path": path})
    assert again.query(m) == ["x"]
    again.close()
