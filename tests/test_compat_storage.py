"""neardup.compat.MinHashLSH on persistent storage: a real redis-server (with a password and an ACL
user for the connection options) and SQLite files; shared indexes seen from several handles and
from another process."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import running_redis
from neardup.compat import MinHash, MinHashLSH
from neardup.errors import StorageError

DB = 5  # the compat tests' own database of the session's redis-server, emptied after each test


def _mh(words: list[str], num_perm: int = 64, seed: int = 1) -> MinHash:
    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch([w.encode() for w in words])
    return m


A = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
B = ["one", "two", "three", "four", "five", "six"]


@pytest.fixture
def redis_opts(redis_server: str) -> Iterator[dict[str, Any]]:
    """Redis() options for the session's server, database DB, emptied afterwards."""
    import redis

    hostport = redis_server.removeprefix("redis://").partition("/")[0]
    host, _, port = hostport.partition(":")
    yield {"host": host, "port": int(port), "db": DB}
    client = redis.Redis(host=host, port=int(port), db=DB)
    client.flushdb()
    client.close()


def _config(opts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "redis", "redis": dict(opts), **extra}


# -- a redis-server with a password and an ACL user ----------------------------------------------


@pytest.fixture(scope="module")
def secured_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a redis-server with ``requirepass adminpw`` and user ``alice`` / ``alicepw``."""
    users = ["--requirepass", "adminpw", "--user", "alice", "on", ">alicepw", "~*", "&*", "+@all"]
    with running_redis(tmp_path_factory.mktemp("redis-acl"), *users) as port:
        yield port


def _secured(port: int, *, fail_fast: bool = False, **options: Any) -> dict[str, Any]:
    """A storage_config for the secured server; ``fail_fast`` passes redis-py a ``retry`` that
    does not retry (another option that must reach the client), so a refusal comes at once."""
    if fail_fast:
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        options["retry"] = Retry(NoBackoff(), 0)
    return {"type": "redis", "basename": b"acl", "redis": {"host": "127.0.0.1", "port": port, **options}}


def test_username_and_password_reach_the_server(secured_redis: int) -> None:
    """datasketch passes storage_config['redis'] to redis.Redis(**options): username and
    password authenticate, and a wrong username does not connect."""
    good = MinHashLSH(
        num_perm=64,
        params=(16, 4),
        storage_config=_secured(secured_redis, username="alice", password="alicepw"),
    )
    good.insert("k", _mh(A))
    assert good.query(_mh(A)) == ["k"]
    good.close()
    with pytest.raises(StorageError) as wrong_user:
        MinHashLSH(
            num_perm=64,
            params=(16, 4),
            storage_config=_secured(secured_redis, fail_fast=True, username="mallory", password="alicepw"),
        )
    assert "redis" in type(wrong_user.value.__cause__).__module__
    with pytest.raises(StorageError):
        MinHashLSH(
            num_perm=64,
            params=(16, 4),
            storage_config=_secured(secured_redis, fail_fast=True, username="alice", password="nope"),
        )
    with pytest.raises(StorageError):  # no credentials at all
        MinHashLSH(num_perm=64, params=(16, 4), storage_config=_secured(secured_redis, fail_fast=True))
    default_user = MinHashLSH(
        num_perm=64, params=(16, 4), storage_config=_secured(secured_redis, password="adminpw")
    )
    assert "k" in default_user  # the same index, through the default user
    default_user.close()


def test_ssl_against_a_plain_server_fails(secured_redis: int) -> None:
    """ssl=True must use TLS: against a server without TLS it fails instead of connecting in
    plain text."""
    options = {"username": "alice", "password": "alicepw", "socket_connect_timeout": 1, "socket_timeout": 1}
    plain = MinHashLSH(num_perm=64, params=(16, 4), storage_config=_secured(secured_redis, **options))
    plain.close()  # the same options without ssl connect
    with pytest.raises(StorageError) as failed:
        MinHashLSH(
            num_perm=64,
            params=(16, 4),
            storage_config=_secured(secured_redis, fail_fast=True, ssl=True, **options),
        )
    assert "rediss://" in str(failed.value)


def test_timeouts_and_other_options_reach_the_client(redis_opts: dict[str, Any]) -> None:
    opts = {**redis_opts, "socket_timeout": 7.5, "socket_connect_timeout": 2.5, "client_name": "compat-test"}
    lsh = MinHashLSH(num_perm=64, params=(16, 4), storage_config=_config(opts, basename=b"opts"))
    kwargs = lsh._storage._client.connection_pool.connection_kwargs  # type: ignore[attr-defined]
    assert kwargs["socket_timeout"] == 7.5 and kwargs["socket_connect_timeout"] == 2.5
    assert kwargs["client_name"] == "compat-test" and kwargs["db"] == DB
    lsh.insert("k", _mh(A))
    import redis

    client = redis.Redis(host=redis_opts["host"], port=redis_opts["port"])
    assert any(c.get("name") == "compat-test" for c in client.client_list())
    client.close()
    lsh.close()


def test_environment_values_are_read_when_connecting(
    redis_opts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """datasketch: an option may be {'env': NAME, 'default': value}, read from the environment."""
    monkeypatch.setenv("COMPAT_TEST_PORT", str(redis_opts["port"]))
    opts = {
        **redis_opts,
        "port": {"env": "COMPAT_TEST_PORT", "default": 1},
        "host": {"env": "UNSET_X", "default": "127.0.0.1"},
    }
    lsh = MinHashLSH(num_perm=64, params=(16, 4), storage_config=_config(opts, basename=b"env"))
    lsh.insert("k", _mh(A))
    assert "k" in pickle.loads(pickle.dumps(lsh))
    lsh.close()


def test_unknown_and_unusable_options_are_refused(redis_opts: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"'sockettimeout'.*accepts: .*socket_timeout.*ssl_ca_certs"):
        MinHashLSH(storage_config=_config({**redis_opts, "sockettimeout": 3}))
    with pytest.raises(StorageError, match="decode_responses"):
        MinHashLSH(storage_config=_config({**redis_opts, "decode_responses": True}))
    with pytest.raises(ValueError, match="redis_buffer"):
        MinHashLSH(storage_config=_config(redis_opts, redis_buffer={"size": 3}))
    lsh = MinHashLSH(
        num_perm=64, params=(16, 4), storage_config=_config(redis_opts, redis_buffer={"transaction": True})
    )
    lsh.close()


# -- basenames and shared indexes ----------------------------------------------------------------


def test_without_basename_indexes_do_not_collide(redis_opts: dict[str, Any]) -> None:
    """datasketch: without a basename a random one is generated; two unrelated indexes on one
    Redis (different thresholds, so different b and r) both work."""
    strict = MinHashLSH(threshold=0.9, num_perm=64, storage_config=_config(redis_opts))
    loose = MinHashLSH(threshold=0.3, num_perm=64, storage_config=_config(redis_opts))
    assert (strict.b, strict.r) != (loose.b, loose.r)
    assert strict.storage_config["basename"] != loose.storage_config["basename"]
    strict.insert("s", _mh(A))
    loose.insert("l", _mh(A))
    assert strict.query(_mh(A)) == ["s"] and loose.query(_mh(A)) == ["l"]
    assert len(strict) == len(loose) == 1
    copy = pickle.loads(pickle.dumps(strict))
    assert copy.storage_config["basename"] == strict.storage_config["basename"]
    assert copy.query(_mh(A)) == ["s"]
    copy.insert("t", _mh(B))
    assert "t" in strict  # the same index
    for lsh in (strict, loose, copy):
        lsh.close()


def _shared_configs(redis_opts: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    return [_config(redis_opts, basename=b"shared"), {"type": "sqlite", "path": str(tmp_path / "shared.db")}]


@pytest.mark.parametrize("backend", ["redis", "sqlite"])
def test_a_handle_opened_on_an_empty_index_sees_later_inserts(
    backend: str, redis_opts: dict[str, Any], tmp_path: Path
) -> None:
    config = _shared_configs(redis_opts, tmp_path)[backend == "sqlite"]
    early = MinHashLSH(threshold=0.5, num_perm=64, params=(16, 4), storage_config=config)
    writer = MinHashLSH(threshold=0.7, num_perm=64, params=(16, 4), storage_config=config)
    assert early.is_empty() and early.query(_mh(A)) == []
    writer.insert("a", _mh(A))
    assert not early.is_empty() and len(early) == 1 and "a" in early
    assert early.query(_mh(A)) == ["a"]
    assert early.query_scored(_mh(A)) == [("a", 1.0)]
    early.insert("b", _mh(B))  # the other threshold does not stop it: b and r are the same
    assert writer.query(_mh(B)) == ["b"]
    with pytest.raises(ValueError, match="seed"):
        early.insert("c", _mh(A, seed=2))
    with pytest.raises(ValueError, match="num_perm=64, b=16, r=4"):
        MinHashLSH(num_perm=64, params=(32, 2), storage_config=config)
    early.close()
    writer.close()


def test_keys_on_redis(redis_opts: dict[str, Any]) -> None:
    """datasketch: prepickle defaults to True for Redis (any picklable key); with prepickle=False
    the keys must be bytes (neardup also takes str)."""
    config = _config(redis_opts, basename=b"keys")
    plain = MinHashLSH(num_perm=64, params=(16, 4), storage_config=config, prepickle=False)
    plain.insert(b"\x00\xffbytes", _mh(A))
    plain.insert("text", _mh(A))
    with pytest.raises(TypeError, match="bytes"):
        plain.insert(7, _mh(A))
    assert sorted(map(repr, plain.query(_mh(A)))) == sorted(map(repr, [b"\x00\xffbytes", "text"]))
    pickled = MinHashLSH(num_perm=64, params=(16, 4), storage_config=config)
    assert pickled.prepickle is True
    pickled.insert((1, "tuple"), _mh(B))
    pickled.insert(3.5, _mh(B))
    assert sorted(map(repr, pickled.query(_mh(B)))) == sorted(map(repr, [(1, "tuple"), 3.5]))
    assert (1, "tuple") in list(plain.keys)  # one index: both handles read every key
    bands = _mh(B).hashvalues.reshape(16, 4).astype(">u4")
    assert pickled.keys.get((1, "tuple")) == [row.tobytes() for row in bands]
    pickled.remove((1, "tuple"))
    assert (1, "tuple") not in pickled
    plain.close()
    pickled.close()


def test_views_counts_and_merge_on_redis(redis_opts: dict[str, Any]) -> None:
    lsh = MinHashLSH(num_perm=64, params=(16, 4), storage_config=_config(redis_opts, basename=b"views"))
    memory = MinHashLSH(num_perm=64, params=(16, 4))
    memory.insert("a", _mh(A))
    memory.insert("b", _mh(B))
    lsh.merge(memory, check_overlap=True)
    assert sorted(lsh.keys) == ["a", "b"]
    counts = lsh.get_counts()
    assert len(counts) == 16 and all(sorted(c.values()) == [1, 1] for c in counts)
    h = lsh.keys["a"][3]
    assert lsh.hashtables[3].get(h) == {"a"} and lsh.hashtables[2].get(h) == set()
    with pytest.raises(ValueError, match="overlapping"):
        lsh.merge(memory, check_overlap=True)
    with lsh.deletion_session() as session:
        session.remove("a")
    assert list(lsh.keys) == ["b"]
    lsh.close()


# -- another process -------------------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, pickle, sys
    from neardup.compat import MinHash

    with open(sys.argv[1], "rb") as f:
        lsh = pickle.load(f)
    def mh(words):
        m = MinHash(num_perm=64)
        m.update_batch([w.encode() for w in words])
        return m
    found = lsh.query(mh(sys.argv[2].split()))
    lsh.insert(("child", 1), mh(sys.argv[3].split()))
    print(json.dumps({"found": [repr(k) for k in found], "len": len(lsh)}))
    """
)


@pytest.mark.parametrize("backend", ["redis", "sqlite"])
def test_a_pickled_index_opens_the_same_index_in_another_process(
    backend: str, redis_opts: dict[str, Any], tmp_path: Path
) -> None:
    """datasketch's way to share a Redis index: pickle the MinHashLSH; the unpickled copy (here in
    a new process) connects to the same storage."""
    import json

    config = _shared_configs(redis_opts, tmp_path)[backend == "sqlite"]
    config.pop("basename", None)  # Redis: the random basename travels with the pickle
    lsh = MinHashLSH(num_perm=64, params=(16, 4), storage_config=config, prepickle=True)
    lsh.insert("parent", _mh(A))
    path = tmp_path / "lsh.pickle"
    path.write_bytes(pickle.dumps(lsh))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), " ".join(A), " ".join(B)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"found": ["'parent'"], "len": 2}
    assert lsh.query(_mh(B)) == [("child", 1)]
    lsh.close()
