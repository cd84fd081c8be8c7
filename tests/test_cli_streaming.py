"""``neardup dedup`` on inputs larger than its memory limit: streamed, resumable, same results.

Every streaming run here is a real ``neardup`` process on real files (killed, interrupted
or locked out where that is the point); the in-memory reference runs and the usage errors
run in this process through click's runner. A small ``--memory-limit`` forces the
streaming mode (the inputs are read a batch at a time, the engine spills to the work
dir, the outputs are written a batch at a time); its output files must hold exactly
what the in-memory run writes for the same command.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pj
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from neardup.cli import main
from neardup.engines.streaming import IN_MEMORY_BASE, in_memory_estimate
from neardup.memory import PROCESS_MEMORY
from neardup.sizes import format_size
from synthetic import planted_corpus

LIMIT = "1MiB"  # far below the inputs' in-memory estimate: streams, in chunks of a few dozen rows
WORK = ".neardup-work"
TABLES = ("annotated", "deduped", "duplicates", "clusters", "candidate_pairs", "lsh_buckets")


def neardup(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_process(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def start(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "neardup.cli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def visible(directory: Path) -> set[str]:
    return (
        {p.name for p in directory.iterdir() if not p.name.startswith(".")} if directory.exists() else set()
    )


def read_output(path: Path) -> pa.Table:
    if path.suffix == ".csv":
        return pcsv.read_csv(path)
    if path.suffix == ".parquet":
        return pq.read_table(path)
    return pj.read_json(path) if path.stat().st_size else pa.table({})


ROW_TABLES = ("annotated.jsonl", "deduped.jsonl", "duplicates.jsonl")
"""The tables a run in passes writes from the input's own lines in JSON Lines."""


def _present_columns(table: pa.Table) -> pa.Table:
    """``table``'s columns that hold a value, in name order."""
    return table.select(sorted(n for n in table.column_names if table.column(n).null_count < table.num_rows))


def assert_same_outputs(
    got: Path, want: Path, *, parsed_only: Collection[str] = (), unread: Collection[str] = ()
) -> dict[str, Any]:
    """The six tables parse to equal tables (byte for byte in CSV and JSON Lines; for the files
    named in ``parsed_only``, with their columns in any order and columns of nulls alone left
    out; the files named in ``unread`` are the caller's to check); the summaries agree on every
    figure. Returns the summary of ``got``."""
    assert visible(got) == visible(want)
    for name in sorted(visible(want)):
        if name == "summary.json" or name in unread:
            continue
        a, b = got / name, want / name
        table, mine = read_output(b), read_output(a)
        if name in parsed_only:  # a record's own line: its fields in its order, no nulls for others'
            table, mine = (_present_columns(t) for t in (table, mine))
        assert mine.equals(table), name
        if b.suffix == ".parquet":
            assert pq.read_schema(a).equals(pq.read_schema(b), check_metadata=True), name
        elif name not in parsed_only:
            assert a.read_bytes() == b.read_bytes(), name
    mine, theirs = (json.loads((d / "summary.json").read_text()) for d in (got, want))
    for key in ("seconds", "engine", "output_dir"):
        mine.pop(key)
        theirs.pop(key)
    assert mine == theirs
    summary: dict[str, Any] = json.loads((got / "summary.json").read_text())
    return summary


# -- corpora ----------------------------------------------------------------------------------------


def _records(n: int, seed: int, prefix: str = "") -> list[dict[str, Any]]:
    recs = planted_corpus(n, seed=seed)
    return [{"id": f"{prefix}{r['id']}", "text": r["text"], "group": r["group"]} for r in recs]


def _lines(records: list[Any]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def jsonl_corpus(d: Path) -> list[Path]:
    recs = _records(200, 1, "j")
    a, b, c = recs[:80], recs[80:150], recs[150:]
    a[5] = {**a[5], "text": None}
    a[6] = {**a[6], "text": "!!!"}
    b = [{**r, "group": r["group"] + 0.5, "tags": ["x", r["id"]]} if i % 2 else r for i, r in enumerate(b)]
    b.insert(7, "{oops")
    b.insert(30, {"id": "bad-text", "text": 5})
    c.append({"id": a[0]["id"], "text": "a repeated id: skipped with --id-column id, a row without"})
    c.append({"id": "copy-of-a1", "text": a[1]["text"]})  # a duplicate across files
    (d / "a.jsonl").write_text(_lines(a))
    (d / "b.jsonl").write_text(_lines(b))
    with gzip.open(d / "c.jsonl.gz", "wt") as fh:
        fh.write(_lines(c))
    return [d / "a.jsonl", d / "b.jsonl", d / "c.jsonl.gz"]


def csv_corpus(d: Path) -> list[Path]:
    recs = _records(200, 2, "c")
    table = pa.Table.from_pylist(recs[:100])
    pcsv.write_csv(table, d / "x.csv")
    with open(d / "x.csv", "ab") as fh:
        fh.write(b'bad-1,"one field too many",3,4\n')
        fh.write(b'bad-2,"caf\xff",5\n')
        fh.write(b'tail,"a row after the bad ones, ' + recs[3]["text"].encode() + b'",6\n')
    pcsv.write_csv(pa.Table.from_pylist(recs[100:]), d / "y.tsv", pcsv.WriteOptions(delimiter="\t"))
    return [d / "x.csv", d / "y.tsv"]


def parquet_corpus(d: Path) -> list[Path]:
    recs = _records(200, 3, "p")
    pq.write_table(pa.Table.from_pylist(recs[:100]), d / "p1.parquet", row_group_size=40)
    second = pa.Table.from_pylist(recs[100:])
    second = second.set_column(1, "text", second.column("text").dictionary_encode())
    second = second.append_column("lang", pa.array(["en"] * len(second)))
    pq.write_table(second, d / "p2.parquet", row_group_size=64)
    return [d / "p1.parquet", d / "p2.parquet"]


def mixed_corpus(d: Path) -> list[Path]:
    return [jsonl_corpus(d)[0], csv_corpus(d)[0], parquet_corpus(d)[1]]


def text_corpus(d: Path) -> list[Path]:
    pages = d / "pages"
    pages.mkdir()
    for r in _records(120, 4):
        (pages / f"{r['id']}.txt").write_text(r["text"])
    (pages / "zz-bad.txt").write_bytes(b"not UTF-8: caf\xff")
    return [pages]


CORPORA = {
    "jsonl": jsonl_corpus,
    "csv": csv_corpus,
    "parquet": parquet_corpus,
    "mixed": mixed_corpus,
    "text": text_corpus,
}

CASES = [
    ("jsonl", ["--on-error", "skip"]),
    ("jsonl", ["--on-error", "skip", "--id-column", "id", "--keep", "longest", "--match-empty"]),
    ("csv", ["--on-error", "skip", "--id-column", "id"]),
    ("parquet", ["--output-format", "jsonl", "--keep", "shortest"]),
    ("parquet", ["--id-column", "id", "--output-format", "csv"]),
    ("mixed", ["--on-error", "skip", "--id-column", "id", "--no-verify", "--output-format", "parquet"]),
    ("text", ["--on-error", "skip", "--id-column", "path"]),
]


@pytest.mark.parametrize(("corpus", "args"), CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)])
def test_streaming_writes_what_the_in_memory_run_writes(tmp_path: Path, corpus: str, args: list[str]) -> None:
    files = CORPORA[corpus](tmp_path)
    memory = in_process("dedup", *files, "-o", tmp_path / "mem", "-q", *args)
    assert memory.exit_code == 0, memory.output
    if corpus == "jsonl" and "--keep" not in args:  # a work dir of one's own always streams
        work = tmp_path / "work"
        limit: list[object] = ["--work-dir", work]
    else:
        work = tmp_path / "out" / WORK
        limit = ["--work-memory", LIMIT]
    streamed = neardup("dedup", *files, "-o", tmp_path / "out", *limit, *args)
    assert streamed.returncode == 0, streamed.stderr
    summary = assert_same_outputs(tmp_path / "out", tmp_path / "mem")
    assert summary["duplicates_removed"] > 20 and summary["candidate_pairs"] > 20
    assert summary["skipped_records"] == 0 or "skip" in args
    if "skip" in args:
        assert summary["skipped_records"] >= 1
        skipped = [line for line in streamed.stderr.splitlines() if line.startswith("neardup: skipped: ")]
        assert skipped == [
            line for line in memory.stderr.splitlines() if line.startswith("neardup: skipped: ")
        ]
        assert len(skipped) == min(20, summary["skipped_records"])
    engine = summary["engine"]
    assert engine == {
        "mode": "streaming",
        "memory_limit": engine["memory_limit"],
        "work_memory": 1 << 20 if limit[0] == "--work-memory" else engine["memory_limit"] - PROCESS_MEMORY,
        "work_dir": str(work),
        "stages_run": ["read", "signatures", "candidates", "verify", "clusters"],
        "stages_resumed": [],
    }
    assert json.loads((tmp_path / "mem" / "summary.json").read_text())["engine"]["mode"] == "in-memory"
    assert set(summary["seconds"]) == {
        "read", "signatures", "candidates", "shingles", "verify", "clusters", "write", "total"
    }  # fmt: skip
    assert not work.exists()  # removed after success
    assert "│ Mode " in streamed.stdout and " streamed │" in streamed.stdout
    assert "│ Memory limit " in streamed.stdout and " (work " in streamed.stdout
    for label in ("Reading inputs", "MinHash signatures", "Buckets and pairs", "Exact verification"):
        assert label in streamed.stderr or (label == "Exact verification" and "--no-verify" in args)
    assert "Writing outputs" in streamed.stderr


# -- resuming -------------------------------------------------------------------------------------


def big_corpus(d: Path, n: int = 1200) -> Path:
    path = d / "corpus.jsonl"
    path.write_text(_lines(_records(n, 5)))
    return path


# Rows in the corpus of the killed and interrupted runs: enough that the stages after the
# signatures take seconds, so the signal lands before the run ends even on a loaded machine.
STOPPED_ROWS = 6000


def wait_for_stage(proc: subprocess.Popen[str], work: Path, stage: str, timeout: float = 120) -> None:
    """Wait until ``stage`` of the run in ``work`` is finished (fails if the run ends first)."""
    progress = work / stage / "progress.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"the run ended before {stage} was done:\n{proc.stderr.read() if proc.stderr else ''}"
            )
        try:
            if json.loads(progress.read_text())["done"]:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"{stage} did not finish in {timeout} s")


def test_a_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    corpus = big_corpus(tmp_path, STOPPED_ROWS)
    out = tmp_path / "out"
    args = ("dedup", corpus, "-o", out, "--id-column", "id", "--work-memory", LIMIT, "-q", "--json")
    proc = start(*args)
    wait_for_stage(proc, out / WORK, "signatures")
    proc.kill()  # SIGKILL: no clean-up at all
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert visible(out) == set() and (out / WORK / "manifest.json").exists()

    memory = in_process("dedup", corpus, "-o", tmp_path / "mem", "--id-column", "id", "-q")
    assert memory.exit_code == 0, memory.output
    again = neardup(*args)
    assert again.returncode == 0, again.stderr
    summary = assert_same_outputs(out, tmp_path / "mem")
    assert json.loads(again.stdout) == summary
    engine = summary["engine"]
    assert engine["stages_resumed"][:2] == ["read", "signatures"]
    assert "signatures" not in engine["stages_run"] and "clusters" in engine["stages_run"]
    assert summary["duplicates_removed"] > 200
    assert not (out / WORK).exists()


def test_an_interrupted_run_says_how_to_resume_and_refuses_changed_input(tmp_path: Path) -> None:
    corpus = big_corpus(tmp_path, STOPPED_ROWS)
    out = tmp_path / "out"
    args = ("dedup", corpus, "-o", out, "--work-memory", LIMIT, "-q")
    proc = start(*args)
    wait_for_stage(proc, out / WORK, "signatures")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert stderr == (
        "neardup: error: interrupted\n"
        f"neardup: the work so far is kept in {out / WORK}; run the same command again to resume\n"
    )
    assert visible(out) == set()

    with open(corpus, "a") as fh:
        fh.write(json.dumps({"id": "late", "text": "a record added after the interruption"}) + "\n")
    refused = neardup(*args)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"neardup: error: work dir {out / WORK} was made from other input (changed since: {corpus}); "
        "use another work dir, or start over in this one (resume=False; on the command line --no-resume)\n"
    )
    assert visible(out) == set()

    fresh = neardup(*args, "--no-resume", "--json")
    assert fresh.returncode == 0, fresh.stderr
    summary = json.loads(fresh.stdout)
    assert summary["engine"]["stages_resumed"] == [] and summary["input_rows"] == STOPPED_ROWS + 1
    assert visible(out) == {f"{name}.jsonl" for name in TABLES} | {"summary.json"}
    assert not (out / WORK).exists()


# -- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("lots", "--memory-limit: not a size: 'lots' (try 6GB, 512MiB, 800M or a number of bytes)"),
        ("6 XB", "--memory-limit: not a size: '6 XB' (try 6GB, 512MiB, 800M or a number of bytes)"),
        ("1000", "--memory-limit must be at least 64 KiB (65536 bytes), got 1000"),
        ("60KiB", "--memory-limit must be at least 64 KiB (65536 bytes), got 60KiB"),
        (
            "200MB",
            "--memory-limit 200 MB is below what a run needs: at least 420 MB (the process itself takes "
            "about 320 MB, its data at least 100 MB); raise --memory-limit (--work-memory sets the "
            "streaming engine's share alone)",
        ),
        (
            "1GB --work-memory 700MB",
            "--work-memory 700 MB and the process's own (about 320 MB) do not fit in --memory-limit 1 GB",
        ),
        ("1GB --work-memory 1KB", "--work-memory must be at least 64 KiB (65536 bytes), got 1KB"),
    ],
)
def test_bad_memory_limit_is_a_usage_error(tmp_path: Path, limit: str, message: str) -> None:
    corpus = tmp_path / "in.jsonl"
    corpus.write_text('{"text": "a"}\n')
    limit, *work = limit.split(" --work-memory ")
    work_memory = ["--work-memory", *work] if work else []
    done = in_process("dedup", corpus, "-o", tmp_path / "out", "--memory-limit", limit, *work_memory)
    assert (done.exit_code, done.stderr, done.stdout) == (2, f"neardup: error: {message}\n", "")
    assert not (tmp_path / "out").exists()


HOLDER = """
import fcntl, os, sys, time
os.makedirs(sys.argv[1], exist_ok=True)
fd = os.open(os.path.join(sys.argv[1], "lock"), os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)
"""


def test_a_work_dir_in_use_is_refused(tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path)[0]
    work = tmp_path / "work"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(work)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        done = neardup("dedup", corpus, "-o", tmp_path / "out", "--work-dir", work, "-q")
    finally:
        holder.kill()
        holder.wait()
    assert (done.returncode, done.stderr) == (
        1,
        f"neardup: error: work dir {work} is in use by another run\n",
    )
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in work.iterdir()) == ["lock"]  # the other run's files are untouched


def test_against_an_index_needs_the_inputs_in_memory(tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path)[0]
    index = tmp_path / "idx.db"
    limit = in_memory_estimate([corpus]) - 1
    done = in_process("dedup", corpus, "-o", tmp_path / "out", "--against", index, "--memory-limit", limit)
    assert done.exit_code == 2
    assert done.stderr == (
        "neardup: error: --against needs the inputs in memory, but the inputs (about "
        f"{format_size(limit + 1)} in memory) exceed --memory-limit {format_size(limit)}; raise "
        "--memory-limit (or deduplicate the inputs in parts against the index)\n"
    )
    done = in_process("dedup", corpus, "-o", tmp_path / "out", "--against", index, "--work-memory", LIMIT)
    assert (done.exit_code, done.stderr) == (
        2,
        "neardup: error: --against needs the inputs in memory, but --work-memory streams the inputs; "
        "raise --memory-limit (or deduplicate the inputs in parts against the index)\n",
    )
    done = in_process(
        "dedup", corpus, "-o", tmp_path / "out", "--against", index, "--work-dir", tmp_path / "w"
    )
    assert (done.exit_code, done.stderr) == (
        2,
        "neardup: error: --against needs the inputs in memory, but --work-dir streams the inputs; raise "
        "--memory-limit (or deduplicate the inputs in parts against the index)\n",
    )
    done = in_process("dedup", "--demo", "-o", tmp_path / "out", "--work-dir", tmp_path / "w")
    assert (done.exit_code, done.stderr) == (
        2,
        "neardup: error: --work-dir streams files; the --demo sample is read in memory\n",
    )
    assert not (tmp_path / "out").exists() and not index.exists() and not (tmp_path / "w").exists()


def test_an_output_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path)[0]
    (tmp_path / "out").write_text("a file")
    done = in_process("dedup", corpus, "-o", tmp_path / "out", "--work-memory", LIMIT, "-q")
    assert (done.exit_code, done.stderr) == (
        1,
        f"neardup: error: {tmp_path / 'out'}: exists and is not a directory\n",
    )


def test_a_bad_record_stops_a_streaming_run_and_keeps_its_work(tmp_path: Path) -> None:
    files = jsonl_corpus(tmp_path)
    out = tmp_path / "out"
    done = neardup("dedup", *files, "-o", out, "--work-memory", LIMIT, "-q")
    assert done.returncode == 1
    assert done.stderr == (
        f"neardup: error: {files[1]}:8: malformed JSON: Expecting property name enclosed in double quotes "
        "at column 2\n"
        f"neardup: the work so far is kept in {out / WORK}; run the same command again to resume\n"
    )
    assert visible(out) == set()
    assert sorted(p.name for p in (out / WORK / "input").iterdir()) == ["part-00000.arrow", "part-00000.json"]


def test_work_dir_files_left_by_the_user_stay(tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path)[0]
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("keep me")
    done = neardup("dedup", corpus, "-o", tmp_path / "out", "--work-dir", work, "-q")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in work.iterdir()] == ["mine.txt"]


def test_inputs_that_fit_run_in_memory(tmp_path: Path) -> None:
    corpus = jsonl_corpus(tmp_path)[0]
    size = corpus.stat().st_size
    limit = IN_MEMORY_BASE + 7 * size  # the estimate: the base + 7 bytes per byte of JSON Lines
    parquet = ("--output-format", "parquet", "--json", "-q")  # JSON Lines out would be read in passes
    done = in_process("dedup", corpus, "-o", tmp_path / "a", "--memory-limit", limit, *parquet)
    assert json.loads(done.stdout)["engine"]["mode"] == "in-memory"
    done = in_process("dedup", corpus, "-o", tmp_path / "b", "--memory-limit", limit - 1, *parquet)
    assert json.loads(done.stdout)["engine"]["mode"] == "passes"  # one JSON Lines file: read, not held
    assert sorted(os.listdir(tmp_path / "b")) == sorted(os.listdir(tmp_path / "a"))
    lines = 80  # a run in passes holds its signatures and ~2 bytes per byte of JSON Lines
    below = IN_MEMORY_BASE + lines * (4 * 128 + 256) + 2 * size - 1
    done = in_process("dedup", corpus, "-o", tmp_path / "c", "--memory-limit", below, *parquet)
    assert json.loads(done.stdout)["engine"]["mode"] == "streaming"
    assert sorted(os.listdir(tmp_path / "c")) == sorted(os.listdir(tmp_path / "a"))
    # written as JSON Lines, the file is read in passes under any limit that allows it
    done = in_process("dedup", corpus, "-o", tmp_path / "d", "--memory-limit", 4 * limit, "--json", "-q")
    assert json.loads(done.stdout)["engine"]["mode"] == "passes"
    done = in_process("dedup", corpus, "-o", tmp_path / "e", "--memory-limit", below, "--json", "-q")
    assert json.loads(done.stdout)["engine"]["mode"] == "streaming"
