"""The Ray engine through filesystem URIs: ``file://`` files and folders, and S3 on a real S3
server (moto's server mode, a subprocess), read and written by the engine's tasks on a real Ray.
Each run's tables, their parts concatenated in part order, are the local engine's on the same
files; the only difference is ``source_file``, which names each file as the Ray run was given it.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import RAY_GROUP, free_port, running_server
from neardup.errors import InputError, OutputError
from neardup.io import ReadOptions
from neardup.jobs import DedupJob, RayOptions, run_dedup
from synthetic import planted_corpus

pytestmark = [pytest.mark.xdist_group(RAY_GROUP), pytest.mark.usefixtures("local_ray")]

READ = ReadOptions(id_column="id")
SETTINGS = {"num_perm": 64}
"""16 bands, so 16 bucket partitions and ``lsh_buckets`` parts: fewer small objects on S3."""
SOURCE = "source_file"
Parts = dict[str, list[bytes]]
"""A Ray run's tables (``annotated``...), each its parts' bytes in part order."""


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _write_parquet(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=16)  # several splits
    return path


def _local_run(inputs: list[Path], out: Path, output_format: str | None = None) -> dict[str, Any]:
    job = DedupJob(inputs=inputs, output_dir=out, settings=SETTINGS, read=READ, output_format=output_format)
    return run_dedup(job)


def _ray_run(
    inputs: list[str], output: str, work: str, split_bytes: int, output_format: str | None = None
) -> dict[str, Any]:
    return run_dedup(
        DedupJob(
            inputs=inputs,
            output_dir=output,
            work_dir=work,
            settings=SETTINGS,
            read=READ,
            output_format=output_format,
            engine="ray",
            ray=RayOptions(cpus=2, partitions=3, split_bytes=split_bytes),
        )
    )


def _folder_parts(folder: Path) -> Parts:
    """The tables in a local output folder the Ray run wrote through a URI."""
    tables = sorted(p for p in folder.iterdir() if p.is_dir())
    return {t.name: [p.read_bytes() for p in sorted(t.glob("part-*"))] for t in tables}


def _local_tables(local: Path) -> dict[str, Path]:
    tables = {p.stem: p for p in local.iterdir() if p.suffix in (".jsonl", ".parquet")}
    assert {"annotated", "deduped", "duplicates", "clusters"} <= tables.keys()
    return tables


def assert_same_jsonl(local: Path, parts: Parts, sources: dict[str, str] | None = None) -> None:
    """The Ray run wrote the tables the local run did, each, byte for byte, the local table's
    JSON Lines with every local ``source_file`` path replaced by the URI the Ray run read."""
    tables = _local_tables(local)
    assert parts.keys() == tables.keys()
    for name, path in tables.items():
        expected = path.read_bytes()
        for given, uri in (sources or {}).items():
            if name in ("annotated", "deduped", "duplicates"):
                assert json.dumps(given).encode() in expected, (name, given)
            expected = expected.replace(json.dumps(given).encode(), json.dumps(uri).encode())
        assert len(parts[name]) > 1, name  # several splits or partitions, not one part
        assert b"".join(parts[name]) == expected, name


def assert_same_parquet(local: Path, parts: Parts, sources: dict[str, str]) -> None:
    """The Ray run wrote the tables the local run did, each equal to the local Parquet table
    (its ``source_file`` paths the URIs the Ray run read)."""
    tables = _local_tables(local)
    assert parts.keys() == tables.keys()
    for name, path in tables.items():
        expected = pq.read_table(path)
        if SOURCE in expected.column_names:
            named = [sources[s] for s in expected.column(SOURCE).to_pylist()]
            at = expected.column_names.index(SOURCE)
            expected = expected.set_column(at, SOURCE, pa.array(named, pa.string()))
        assert len(parts[name]) > 1, name
        got = pa.concat_tables(pq.read_table(pa.BufferReader(b)) for b in parts[name])
        assert got.equals(expected, check_metadata=False), name


def _same_figures(ray: dict[str, Any], local: dict[str, Any]) -> None:
    keys = ("input_rows", "clusters", "duplicates_removed", "candidate_pairs", "verified_pairs")
    assert {k: ray[k] for k in keys} == {k: local[k] for k in keys}
    assert ray["duplicates_removed"] > 0  # the corpus has near-duplicates to find
    assert ray["engine"]["splits"] >= 3


# -- file:// -----------------------------------------------------------------------------------


def test_file_uris_read_one_jsonl_file_and_write_the_local_engines_tables(tmp_path: Path) -> None:
    corpus = _write_jsonl(tmp_path / "in" / "corpus.jsonl", planted_corpus(240, seed=11))
    local = _local_run([corpus], tmp_path / "local")
    ray_out, work = tmp_path / "ray", tmp_path / "work"

    summary = _ray_run([corpus.as_uri()], ray_out.as_uri(), work.as_uri(), split_bytes=80_000)

    _same_figures(summary, local)
    assert summary["inputs"] == [corpus.as_uri()]
    assert json.loads((ray_out / "summary.json").read_text())["clusters"] == local["clusters"]
    assert not work.exists()  # a finished run removes its work location
    assert_same_jsonl(tmp_path / "local", _folder_parts(ray_out))


def test_file_uri_folder_of_jsonl_and_parquet_files(tmp_path: Path) -> None:
    """A folder URI is every JSON Lines and Parquet file in it, in name order; names that a URI
    must percent-encode (a space, ``#``) are read all the same."""
    folder = tmp_path / "in put"
    records = planted_corpus(240, seed=12)
    files = [
        _write_jsonl(folder / "part 1.jsonl", records[:90]),
        _write_jsonl(folder / "part 2#b.jsonl", records[90:150]),
        _write_parquet(folder / "part 3.parquet", records[150:]),
    ]
    (folder / "notes.txt").write_text("a text file: not an input of the Ray engine's")
    local = _local_run(files, tmp_path / "local", output_format="parquet")
    ray_out = tmp_path / "ray"

    summary = _ray_run(
        [folder.as_uri()], ray_out.as_uri(), (tmp_path / "work").as_uri(), 40_000, output_format="parquet"
    )

    _same_figures(summary, local)
    assert summary["inputs"] == [f.as_uri() for f in files]
    assert_same_parquet(tmp_path / "local", _folder_parts(ray_out), {str(f): f.as_uri() for f in files})


# -- S3 on moto's server ------------------------------------------------------------------------

# The S3 credentials ride in each URI (``s3://KEY:SECRET@bucket/key``, Arrow's documented S3 URI
# form), not in AWS_* variables: the session's Ray workers were started with the environment the
# test process had at ray.init, so variables set here would not reach the tasks that read and
# write. moto accepts any credentials; the region in the URI keeps pyarrow from looking one up.
KEY, SECRET, REGION = "neardup-key", "neardup-s3cr3t", "us-east-1"


@dataclass(frozen=True)
class S3:
    """A bucket on the moto server, with a boto3 client that sees what the engine wrote."""

    client: Any
    port: int
    bucket: str

    def uri(self, key: str) -> str:
        query = f"endpoint_override=127.0.0.1:{self.port}&scheme=http&region={REGION}"
        return f"s3://{KEY}:{SECRET}@{self.bucket}/{key}?{query}"

    def keys(self, prefix: str) -> list[str]:
        found = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix).get("Contents", [])
        return sorted(o["Key"] for o in found)

    def get(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def parts(self, prefix: str) -> Parts:
        """The tables under ``prefix``, downloaded."""
        found: Parts = {}
        for key in self.keys(f"{prefix}/"):
            table, _, name = key[len(prefix) + 1 :].rpartition("/")
            if name.startswith("part-"):
                found.setdefault(table, []).append(self.get(key))
        return found


def _answers(port: int) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        opener.open(f"http://127.0.0.1:{port}/", timeout=0.5).close()
    except urllib.error.HTTPError:
        return True  # an S3 error document: the server is up
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def moto_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a moto S3 server on 127.0.0.1, started for this module and stopped after."""
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server] (a dev dependency)")
    port = free_port()
    args = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with running_server(args, log=log, up=lambda: _answers(port), what=f"moto server on port {port}"):
        yield port


@pytest.fixture
def s3(moto_port: int) -> S3:
    """A new, empty bucket on the module's moto server."""
    boto3 = pytest.importorskip("boto3")
    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{moto_port}",
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )
    bucket = f"neardup-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return S3(client, moto_port, bucket)


def test_s3_inputs_output_and_work(tmp_path: Path, s3: S3) -> None:
    """A JSON Lines and a Parquet object in, the tables and summary.json out, the work in
    between, all on S3: the local engine's tables on the same files."""
    records = planted_corpus(240, seed=13)
    files = [
        _write_jsonl(tmp_path / "in" / "docs.jsonl", records[:140]),
        _write_parquet(tmp_path / "in" / "docs.parquet", records[140:]),
    ]
    for f in files:
        s3.client.upload_file(str(f), s3.bucket, f"corpus/{f.name}")
    inputs = [s3.uri(f"corpus/{f.name}") for f in files]
    local = _local_run(files, tmp_path / "local")

    summary = _ray_run(inputs, s3.uri("results"), s3.uri("work"), split_bytes=100_000)

    _same_figures(summary, local)
    shown = [uri.replace(f"{KEY}:{SECRET}@", "") for uri in inputs]  # credentials never written
    assert summary["inputs"] == shown
    stored = s3.get("results/summary.json")
    assert json.loads(stored) == json.loads(json.dumps(summary))
    assert SECRET.encode() not in stored and KEY.encode() not in stored
    assert s3.keys("work") == []  # a finished run removes its work location
    sources = {str(f): uri for f, uri in zip(files, shown, strict=True)}
    assert_same_jsonl(tmp_path / "local", s3.parts("results"), sources)


# -- errors -------------------------------------------------------------------------------------


def test_a_missing_s3_object_is_an_input_error_naming_it(tmp_path: Path, s3: S3) -> None:
    missing = s3.uri("corpus/missing.jsonl")
    with pytest.raises(InputError, match="no such file") as caught:
        _ray_run([missing], str(tmp_path / "out"), str(tmp_path / "work"), split_bytes=1 << 20)
    shown = missing.replace(f"{KEY}:{SECRET}@", "")
    assert caught.value.path == shown and SECRET not in str(caught.value)


def test_a_missing_file_uri_is_an_input_error_naming_it(tmp_path: Path) -> None:
    missing = (tmp_path / "missing.jsonl").as_uri()
    with pytest.raises(InputError, match="no such file") as caught:
        _ray_run([missing], str(tmp_path / "out"), str(tmp_path / "work"), split_bytes=1 << 20)
    assert caught.value.path == missing


def test_an_unknown_scheme_is_an_error_naming_the_uri(tmp_path: Path) -> None:
    corpus = _write_jsonl(tmp_path / "corpus.jsonl", planted_corpus(10, seed=14))
    given = "nosuch://bucket/corpus.jsonl"
    with pytest.raises(InputError, match="Unrecognized filesystem type") as caught:
        _ray_run([given], str(tmp_path / "out"), str(tmp_path / "work"), split_bytes=1 << 20)
    assert caught.value.path == given

    with pytest.raises(OutputError, match=r"nosuch://bucket/out.*Unrecognized filesystem type"):
        _ray_run([str(corpus)], "nosuch://bucket/out", str(tmp_path / "work"), split_bytes=1 << 20)
    with pytest.raises(OutputError, match=r"nosuch://bucket/work.*Unrecognized filesystem type"):
        _ray_run([str(corpus)], str(tmp_path / "out"), "nosuch://bucket/work", split_bytes=1 << 20)


def test_an_s3_uri_with_an_unknown_option_is_an_error_naming_it(tmp_path: Path, s3: S3) -> None:
    given = s3.uri("corpus/docs.jsonl") + "&endpoint=elsewhere"
    with pytest.raises(InputError, match="endpoint") as caught:
        _ray_run([given], str(tmp_path / "out"), str(tmp_path / "work"), split_bytes=1 << 20)
    assert caught.value.path == given.replace(f"{KEY}:{SECRET}@", "")
    assert SECRET not in str(caught.value)
