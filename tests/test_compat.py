"""neardup.compat: datasketch's MinHash and MinHashLSH API on neardup's index."""

from __future__ import annotations

import math
import os
import pickle
import struct
from collections.abc import Iterator
from itertools import count

import numpy as np
import pytest

from neardup.compat import LeanMinHash, MinHash, MinHashLSH

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


def test_query_returns_candidates_and_query_scored_filters() -> None:
    """datasketch: query returns keys sharing a band bucket, "not guaranteed to be above" the
    threshold; query_scored (neardup's) keeps estimates at or above it, best first."""
    lsh = MinHashLSH(threshold=0.8, num_perm=128, params=(128, 1))
    base = [f"t{i}" for i in range(100)]
    near, far = _mh([*base[:95], "n1", "n2", "n3"]), _mh(base[:30] + [f"f{i}" for i in range(70)])
    lsh.insert("near", near)
    lsh.insert("far", far)
    lsh.insert("none", _mh([f"z{i}" for i in range(100)]))
    query = _mh(base)
    assert query.jaccard(far) < 0.8 <= query.jaccard(near)
    assert sorted(map(str, lsh.query(query))) == ["far", "near"]
    assert lsh.query_scored(query) == [("near", query.jaccard(near))]


def test_insertion_session() -> None:
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    sigs = {f"k{i}": _mh([f"w{i}", f"v{i}", f"u{i}"], num_perm=64) for i in range(25)}
    with lsh.insertion_session(buffer_size=10) as session:
        for key, m in sigs.items():
            session.insert(key, m)
        with pytest.raises(ValueError):
            session.insert("k0", sigs["k0"])
    assert all(k in lsh for k in sigs)
    assert lsh.query_scored(sigs["k7"]) == [("k7", 1.0)]
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
    lsh.insert(42, other)  # prepickle is True by default on Redis: any picklable key
    assert 42 in lsh and sorted(map(str, lsh.query(other))) == ["42", "doc-2"]
    lsh.remove(42)
    with pytest.raises(TypeError):
        MinHashLSH(threshold=0.5, num_perm=64, storage_config=config, prepickle=False).insert(42, m)
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


# -- MinHash: datasketch 2.x's documented API ------------------------------------------------------


def test_union_is_the_merge_of_all() -> None:
    """datasketch: ``MinHash.union(*mhs)`` is a new MinHash of the union; fewer than 2, or
    different seeds or num_perm, raise ValueError."""
    parts = [_mh([f"w{i}" for i in range(k, k + 40)], num_perm=64) for k in (0, 20, 50)]
    union = MinHash.union(*parts)
    whole = _mh([f"w{i}" for i in range(0, 90)], num_perm=64)
    assert union == whole and union is not parts[0]
    assert parts[0] != whole  # the inputs are left alone
    with pytest.raises(ValueError):
        MinHash.union(parts[0])
    with pytest.raises(ValueError):
        MinHash.union(parts[0], MinHash(num_perm=64, seed=2))
    with pytest.raises(ValueError):
        MinHash.union(parts[0], MinHash(num_perm=32))


def test_bulk_and_generator_match_one_by_one() -> None:
    """datasketch: ``bulk(b, **minhash_kwargs)`` makes one MinHash per iterable of bytes, with the
    kwargs for all; ``generator`` yields the same lazily."""
    sets = [[f"s{j}-{i}".encode() for i in range(j % 7)] for j in range(5000)]  # includes empty sets
    made = MinHash.bulk(sets, num_perm=32, seed=5)
    assert len(made) == len(sets)
    for s, m in zip(sets[:300], made[:300], strict=True):
        one = MinHash(num_perm=32, seed=5)
        one.update_batch(s)
        assert m == one and m.seed == 5 and len(m) == 32
    assert made[0].is_empty() and not made[1].is_empty()
    gen = MinHash.generator(iter(sets[:10]), num_perm=32, seed=5)
    assert not isinstance(gen, list)
    assert list(gen) == made[:10]
    # a 2-D numeric array: one set per row (datasketch's own example)
    rows = np.random.default_rng(0).integers(0, 30, size=(50, 10))
    for row, m in zip(rows, MinHash.bulk(rows, num_perm=32), strict=True):
        one = MinHash(num_perm=32)
        one.update_batch(list(row))  # numpy scalars hash by their bytes
        assert m == one


def test_bulk_with_hashfunc_and_start_values() -> None:
    made = MinHash.bulk([[1, 2, 3], [4]], num_perm=16, hashfunc=lambda x: x)
    one = MinHash(num_perm=16, hashfunc=lambda x: x)
    for x in (1, 2, 3):
        one.update(x)
    assert made[0] == one
    assert made[0].hashfunc is not None


def test_permutations_are_exposed_and_accepted_from_the_same_seed() -> None:
    """datasketch: ``permutations`` can be given "for faster initialization using the existing
    permutations from another MinHash"."""
    m = _mh(["a", "b"], num_perm=32, seed=9)
    a, b = m.permutations
    assert a.shape == b.shape == (32,) and np.all(a & 1 == 1)
    same = MinHash(num_perm=32, seed=9, permutations=m.permutations)
    same.update_batch([b"a", b"b"])
    assert same == m
    copy = MinHash(seed=9, hashvalues=m.hashvalues, permutations=(list(a), list(b)))
    assert copy == m
    with pytest.raises(ValueError, match="seed"):
        MinHash(num_perm=32, seed=10, permutations=m.permutations)
    with pytest.raises(ValueError):
        MinHash(num_perm=16, seed=9, permutations=m.permutations)
    with pytest.raises(ValueError):
        m.permutations[0][0] = 3  # read-only


def test_gpu_mode_and_scheme() -> None:
    """datasketch: gpu_mode 'disable' (default) and 'detect' run on the CPU without a GPU; 'always'
    raises RuntimeError in update_batch. scheme 'affine32' is the default."""
    words = [b"x", b"y", b"z"]
    cpu = MinHash(num_perm=16)
    cpu.update_batch(words)
    detect = MinHash(num_perm=16, gpu_mode="detect")
    detect.update_batch(words)
    assert detect == cpu and cpu.gpu_mode == "disable" and cpu.scheme == "affine32"
    always = MinHash(num_perm=16, gpu_mode="always")
    with pytest.raises(RuntimeError, match="GPU"):
        always.update_batch(words)
    with pytest.raises(RuntimeError, match="GPU"):
        MinHash.bulk([words], num_perm=16, gpu_mode="always")
    with pytest.raises(ValueError):
        MinHash(gpu_mode="sometimes")
    again = MinHash(seed=1, hashvalues=cpu.hashvalues, scheme="affine32")
    assert again == cpu
    for scheme in ("legacy", "affine64"):
        with pytest.raises(ValueError, match=scheme):
            MinHash(scheme=scheme)


def test_update_refuses_str_with_a_hint() -> None:
    with pytest.raises(TypeError, match="encode"):
        MinHash().update("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="encode"):
        MinHash().update_batch([b"ok", "text"])


def test_structured_hashfunc_gives_unbiased_estimates() -> None:
    """An identity hashfunc on consecutive integers: the mean estimate over 200 seeds must lie
    within 3 standard errors of the true Jaccard (1/3)."""
    a, b = list(range(0, 1000)), list(range(500, 1500))
    true = 500 / 1500
    estimates = []
    for seed in range(200):
        ma = MinHash(num_perm=128, seed=seed, hashfunc=lambda x: x)
        mb = MinHash(num_perm=128, seed=seed, hashfunc=lambda x: x)
        ma.update_batch(a)
        mb.update_batch(b)
        estimates.append(ma.jaccard(mb))
    values = np.array(estimates)
    standard_error = values.std(ddof=1) / math.sqrt(values.size)
    assert abs(values.mean() - true) <= 3 * standard_error, (values.mean(), standard_error)


def test_minhash_pickles() -> None:
    m = _mh(["p", "q"], num_perm=32, seed=4)
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.seed == 4
    np.testing.assert_array_equal(back.permutations, m.permutations)


# -- LeanMinHash -----------------------------------------------------------------------------------


def test_lean_minhash_is_frozen_hashable_and_picklable() -> None:
    """datasketch: LeanMinHash is made from a MinHash (or seed and hashvalues), cannot be updated,
    is hashable and picklable, and compares with MinHash."""
    m = _mh(["a", "b", "c"], num_perm=32)
    lean = LeanMinHash(m)
    assert lean.jaccard(m) == 1.0 and len(lean) == 32 and lean.seed == m.seed
    with pytest.raises(TypeError):
        lean.update(b"d")
    with pytest.raises(TypeError):
        lean.update_batch([b"d"])
    with pytest.raises(ValueError):
        lean.hashvalues[0] = 0
    m.update(b"d")  # the source changing leaves the lean copy alone
    assert lean.jaccard(m) < 1.0
    same = LeanMinHash(seed=lean.seed, hashvalues=lean.hashvalues)
    assert same == lean and hash(same) == hash(lean) and len({same, lean}) == 1
    assert lean != MinHash(seed=lean.seed, hashvalues=lean.hashvalues)  # types differ, as in datasketch
    back = pickle.loads(pickle.dumps(lean))
    assert back == lean and isinstance(back, LeanMinHash)
    assert isinstance(LeanMinHash.union(lean, LeanMinHash(m)), LeanMinHash)
    with pytest.raises(ValueError):
        LeanMinHash()
    with pytest.raises(ValueError, match="conflicts"):
        LeanMinHash(m, scheme="legacy")


@pytest.mark.parametrize("byteorder", ["@", "=", "<", ">", "!"])
def test_lean_serialize_layout(byteorder: str) -> None:
    """datasketch's documented affine format: seed (8 bytes), the negated number of hash values
    (4 bytes), the scheme code (1 byte, 1 = affine32), then 4 bytes per hash value."""
    lean = LeanMinHash(_mh(["x", "y"], num_perm=16, seed=7))
    size = lean.bytesize(byteorder)
    assert size == struct.calcsize(f"{byteorder}qiB0I") + 16 * 4
    buf = bytearray(size)
    lean.serialize(buf, byteorder)
    seed, count, code = struct.unpack_from(f"{byteorder}qiB", buf, 0)
    assert (seed, count, code) == (7, -16, 1)
    values = struct.unpack_from(f"{byteorder}16I", buf, struct.calcsize(f"{byteorder}qiB0I"))
    assert list(values) == lean.hashvalues.tolist()
    assert LeanMinHash.deserialize(buf, byteorder) == lean
    # several in one buffer, as datasketch's docs do it
    many = bytearray(2 * size)
    lean.serialize(memoryview(many)[size:], byteorder)
    assert LeanMinHash.deserialize(memoryview(many)[size:], byteorder) == lean
    with pytest.raises(ValueError):
        lean.serialize(bytearray(size - 1), byteorder)
    legacy = bytearray(struct.pack(f"{byteorder}qi16I", 7, 16, *range(16)))
    with pytest.raises(ValueError, match="legacy"):
        LeanMinHash.deserialize(legacy, byteorder)


# -- MinHashLSH in memory --------------------------------------------------------------------------


def _corpus(n: int, num_perm: int = 64) -> dict[str, MinHash]:
    """n documents in families of 4 near-copies."""
    out = {}
    for i in range(n):
        family = i // 4
        words = [f"f{family}w{j}" for j in range(40)] + [f"own{i}"]
        out[f"d{i}"] = _mh(words, num_perm=num_perm)
    return out


def test_merge_and_check_overlap() -> None:
    """datasketch: merge makes this index the union of both; check_overlap raises ValueError if a
    key is in both; different num_perm, b or r raise ValueError."""
    docs = _corpus(16)
    left, right = MinHashLSH(threshold=0.5, num_perm=64), MinHashLSH(threshold=0.5, num_perm=64)
    for k, m in docs.items():
        (left if int(k[1:]) % 2 else right).insert(k, m)
    left.merge(right, check_overlap=True)
    assert len(left) == 16 and all(k in left for k in docs)
    assert sorted(map(str, left.query(docs["d4"])))[:4] == ["d4", "d5", "d6", "d7"]
    with pytest.raises(ValueError, match="overlapping"):
        left.merge(right, check_overlap=True)
    left.merge(right)  # without the check: the same keys again, replaced
    assert len(left) == 16
    with pytest.raises(ValueError):
        left.merge(MinHashLSH(threshold=0.5, num_perm=64, params=(32, 2)))
    other_seed = MinHashLSH(threshold=0.5, num_perm=64)
    other_seed.insert("s", _mh(["x"], num_perm=64, seed=3))
    with pytest.raises(ValueError, match="seed"):
        left.merge(other_seed)


def test_deletion_session() -> None:
    """datasketch: deletion_session().remove(key) removes keys in batches; a key that is not
    indexed raises ValueError."""
    docs = _corpus(12)
    lsh = MinHashLSH(threshold=0.5, num_perm=64)
    with lsh.insertion_session(buffer_size=5) as session:
        for k, m in docs.items():
            session.insert(k, m)
    with lsh.deletion_session(buffer_size=4) as deletion:
        for k in ["d0", "d1", "d2", "d3", "d4"]:
            deletion.remove(k)
        with pytest.raises(ValueError):
            deletion.remove("d0")  # already pending
        with pytest.raises(ValueError):
            deletion.remove("missing")
    assert len(lsh) == 7 and "d4" not in lsh and "d5" in lsh
    assert lsh.query(docs["d0"]) == []


def test_counts_views_and_query_buffer() -> None:
    """datasketch: get_counts() is one dict per band of bucket key -> number of keys;
    get_subset_counts(*keys) the same over those keys; keys maps a key to its b bucket keys;
    hashtables has one table per band; collect_query_buffer returns the keys that every
    buffered query finds."""
    docs = _corpus(8)
    lsh = MinHashLSH(threshold=0.5, num_perm=64, params=(16, 4))
    for k, m in docs.items():
        lsh.insert(k, m)
    counts = lsh.get_counts()
    assert len(counts) == 16 and all(sum(c.values()) == 8 for c in counts)
    subset = lsh.get_subset_counts("d0", "d1", "nope")
    assert all(sum(c.values()) == 2 for c in subset)
    hs = lsh.keys["d0"]
    assert len(hs) == 16 and hs[0] == docs["d0"].hashvalues[:4].astype(">u4").tobytes()
    assert list(lsh.keys) == list(docs) and len(lsh.keys) == 8 and "d3" in lsh.keys
    assert lsh.keys.get("nope") == []
    tables = lsh.hashtables
    assert len(tables) == 16
    assert "d0" in tables[0].get(hs[0]) and hs[0] in tables[0]
    assert tables[0].itemcounts() == counts[0] and len(tables[0]) == len(counts[0])
    members = set()
    for band, h in enumerate(hs):
        members |= tables[band][h]
    assert members == set(map(str, lsh.query(docs["d0"])))
    lsh.add_to_query_buffer(docs["d0"])
    lsh.add_to_query_buffer(docs["d5"])
    both = set(lsh.query(docs["d0"])) & set(lsh.query(docs["d5"]))
    assert set(lsh.collect_query_buffer()) == both
    assert lsh.collect_query_buffer() == []  # collecting empties the buffer


def test_prepickle_in_memory_and_pickling_a_memory_index() -> None:
    """datasketch: prepickle=True pickles keys, so any picklable key works; a memory index pickles
    with its contents."""
    m = _mh(["a", "b", "c"], num_perm=64)
    lsh = MinHashLSH(threshold=0.5, num_perm=64, prepickle=True)
    lsh.insert(("t", 1), m)
    lsh.insert(b"raw", m)
    lsh.insert("\x00odd", m)
    assert sorted(map(repr, lsh.query(m))) == sorted(map(repr, [("t", 1), b"raw", "\x00odd"]))
    back = pickle.loads(pickle.dumps(lsh))
    assert ("t", 1) in back and b"raw" in back and len(back) == 3
    assert sorted(map(repr, back.query(m))) == sorted(map(repr, lsh.query(m)))
    plain = MinHashLSH(threshold=0.5, num_perm=64)
    plain.insert(frozenset({1}), m)  # hashable, kept in memory
    again = pickle.loads(pickle.dumps(plain))
    assert again.query(m) == [frozenset({1})]
    assert pickle.loads(pickle.dumps(MinHashLSH(num_perm=64))).is_empty()


def test_storage_config_is_checked() -> None:
    with pytest.raises(ValueError, match="cassandra"):
        MinHashLSH(storage_config={"type": "cassandra"})
    with pytest.raises(ValueError, match="nonsense"):
        MinHashLSH(storage_config={"type": "dict", "nonsense": 1})
    with pytest.raises(ValueError, match="path"):
        MinHashLSH(storage_config={"type": "sqlite"})
