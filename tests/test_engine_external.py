"""The external engine decides exactly what ``find_duplicates`` decides: spilled, split, resumed.

Tiny memory limits force many chunks, key-split bucket partitions, merge windows and
verification chunks; a run interrupted at any stage (by an exception, or by killing the
process) and resumed gives the same result and does not redo finished stages.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from neardup import DedupConfig, find_duplicates
from neardup.config import HASH_VERSION
from neardup.engines import STAGES, ExternalResult, dedup_external, table_source
from neardup.errors import ConfigError, InputError, MissingColumnError
from neardup.outputs import build_tables
from neardup.pipeline import DedupResult, arrow_to_batch
from synthetic import planted_corpus

TINY = 64 * 1024  # every stage works in many small pieces at this limit
SMALL = 256 * 1024


def _planted(n: int, seed: int) -> list[str]:
    return [str(r["text"]) for r in planted_corpus(n, dup_fraction=0.3, seed=seed)]


def _cjk(n: int, seed: int) -> list[str]:
    """Chinese-like documents (no spaces, some line breaks), a third of them lightly edited copies."""
    rng = random.Random(seed)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 600)]
    punct = "，。；：！？"
    originals = []
    for _ in range(n - n // 3):
        doc = "".join(rng.choice(chars) if rng.random() > 0.06 else rng.choice(punct) for _ in range(200))
        originals.append(doc)
    docs = list(originals)
    for _ in range(n // 3):
        src = list(rng.choice(originals))
        for _ in range(3):
            src[rng.randrange(len(src))] = rng.choice(chars)
        cut = rng.randrange(len(src))
        docs.append("".join(src[:cut]) + "\n" + "".join(src[cut:]))
    rng.shuffle(docs)
    return docs


def _with_empties_and_boilerplate(texts: list[str], copies: int) -> list[str | None]:
    out: list[str | None] = list(texts)
    boiler = "Subscribe to our newsletter for the latest news and exclusive offers every week"
    for i in range(copies):  # one bucket far above max_bucket_size in every band
        out.insert(7 * i + 3, boiler if i % 2 else boiler.upper() + "!")
    for i, empty in enumerate(["", "   ", "!!! ...", None, "\t"]):
        out.insert(11 * i + 1, empty)
    return out


def _reference(texts: list[str | None], config: DedupConfig) -> DedupResult:
    return find_duplicates(arrow_to_batch(pa.array(texts, pa.string())), config)


def _table(texts: list[str | None]) -> pa.Table:
    return pa.table({"id": [f"r{i}" for i in range(len(texts))], "text": pa.array(texts, pa.string())})


def assert_same(got: DedupResult, want: DedupResult) -> None:
    """Every decision and every piece of evidence is identical."""
    for name in ("cluster", "representative", "keep"):
        np.testing.assert_array_equal(getattr(got.clusters, name), getattr(want.clusters, name), name)
    for name in ("left", "right", "jaccard", "estimated"):
        np.testing.assert_array_equal(getattr(got.pairs, name), getattr(want.pairs, name), name)
    assert got.pairs.exact == want.pairs.exact
    for name in want.buckets._fields:
        np.testing.assert_array_equal(getattr(got.buckets, name), getattr(want.buckets, name), name)
    np.testing.assert_array_equal(got.signatures, want.signatures)
    np.testing.assert_array_equal(got.shingle_counts, want.shingle_counts)
    assert (got.candidate_count, got.bands, got.rows) == (want.candidate_count, want.bands, want.rows)


def _progress_of(work: Path, stage: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((work / stage / "progress.json").read_text())
    return data


CASES = {
    "word": (lambda: _planted(200, 1), DedupConfig(), TINY),
    "cjk-char-shortest": (
        lambda: _cjk(240, 2),
        DedupConfig.create(shingle="char", ngram=3, threshold=0.6, keep="shortest"),
        SMALL,
    ),
    "empty-star-longest-match-empty": (
        lambda: _with_empties_and_boilerplate(_planted(200, 3), 30),
        DedupConfig.create(max_bucket_size=6, keep="longest", match_empty=True),
        SMALL,
    ),
    "star-verify-off": (
        lambda: _with_empties_and_boilerplate(_planted(200, 4), 30),
        DedupConfig.create(max_bucket_size=6, verify=False, threshold=0.7),
        SMALL,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_spilled_run_equals_in_memory_run(case: str, tmp_path: Path) -> None:
    make, config, limit = CASES[case]
    texts = make()
    calls: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        calls[stage] = calls.get(stage, 0) + 1

    got = dedup_external(
        table_source(_table(texts), 23), config, work_dir=tmp_path, memory_limit=limit, progress=progress
    )
    want = _reference(texts, config)
    assert_same(got, want)
    assert isinstance(got, ExternalResult) and got.ran == STAGES
    assert got.summary()["clusters"] == want.summary()["clusters"] > 0
    assert len(want.pairs) > 0 and len(want.buckets) > 0
    assert calls["signatures"] > 10  # many chunks
    if limit == TINY:
        assert int(_progress_of(tmp_path, "candidates")["state"]["split_bits"]) >= 1  # type: ignore[index]
        assert calls["verify"] > 10


def test_many_buckets_above_max_size_link_as_stars(tmp_path: Path) -> None:
    texts = _with_empties_and_boilerplate(_planted(60, 5), 30)
    config = DedupConfig.create(max_bucket_size=6)
    want = _reference(texts, config)
    assert want.buckets.sizes().max() > 6
    assert_same(dedup_external(_table(texts), config, work_dir=tmp_path, memory_limit=TINY), want)


def test_output_tables_are_the_same(tmp_path: Path) -> None:
    texts = _with_empties_and_boilerplate(_planted(120, 6), 5)
    table = _table(texts)
    config = DedupConfig.create(keep="longest")
    got = build_tables(table, "id", dedup_external(table, config, work_dir=tmp_path, memory_limit=SMALL))
    want = build_tables(table, "id", _reference(texts, config))
    assert got.keys() == want.keys()
    for name in want:
        assert got[name].equals(want[name]), name


def test_empty_input_and_all_empty_documents(tmp_path: Path) -> None:
    for i, texts in enumerate([[], ["", None, "  "], ["only one document here"]]):
        config = DedupConfig.create(match_empty=True)
        got = dedup_external(_table(texts), config, work_dir=tmp_path / str(i), memory_limit=TINY)
        assert_same(got, _reference(texts, config))


# -- resuming ---------------------------------------------------------------------------------------


class CrashError(Exception):
    pass


def _crash_at(stage: str, at: int) -> Callable[[str, int, int], None]:
    def progress(name: str, done: int, total: int) -> None:
        if name == stage and done >= at:
            raise CrashError(f"{name} {done}")

    return progress


RESUME_TEXTS = _planted(200, 8)
RESUME_CONFIG = DedupConfig.create(keep="longest")

# (progress stage, done) to crash at; the stages the resumed run must redo
CRASHES = [
    (("signatures", 40), ("signatures", "candidates", "verify", "clusters")),
    (("candidates", 0), ("candidates", "verify", "clusters")),
    (("candidates", 9), ("candidates", "verify", "clusters")),
    (("shingles", 50), ("verify", "clusters")),
    (("verify", 0), ("verify", "clusters")),
    (("verify", 25), ("verify", "clusters")),
    (("clusters", 0), ("clusters",)),
]


@pytest.mark.parametrize(("crash", "redo"), CRASHES, ids=[f"{s}-{d}" for (s, d), _ in CRASHES])
def test_resume_after_a_crash(crash: tuple[str, int], redo: tuple[str, ...], tmp_path: Path) -> None:
    table = _table(list(RESUME_TEXTS))
    with pytest.raises(CrashError):
        dedup_external(
            table_source(table, 17),
            RESUME_CONFIG,
            work_dir=tmp_path,
            memory_limit=TINY,
            progress=_crash_at(*crash),
        )
    first_calls: dict[str, int] = {}

    def progress(name: str, done: int, total: int) -> None:
        first_calls.setdefault(name, done)

    # a different memory limit changes the chunking, never the result
    got = dedup_external(
        table_source(table, 50), RESUME_CONFIG, work_dir=tmp_path, memory_limit=SMALL, progress=progress
    )
    assert_same(got, _reference(list(RESUME_TEXTS), RESUME_CONFIG))
    assert got.ran == redo
    for stage in STAGES:  # finished stages were not started again; the crashed one twice
        assert _progress_of(tmp_path, stage)["starts"] == (2 if stage == redo[0] else 1)
    stage, at = crash
    if at:  # the interrupted stage went on from its last commit, not from the start
        assert first_calls[stage] > 0
    again = dedup_external(table, RESUME_CONFIG, work_dir=tmp_path, memory_limit=SMALL)
    assert again.ran == ()
    assert_same(again, got)


def test_resume_after_the_source_fails_midway(tmp_path: Path) -> None:
    batches = _table(list(RESUME_TEXTS)).to_batches(max_chunksize=20)
    calls = [0]
    fail = [True]

    def source() -> Iterable[pa.RecordBatch]:
        calls[0] += 1  # 1: the fingerprint of the first rows, 2: the signatures pass
        for i, b in enumerate(batches):
            if fail[0] and calls[0] == 2 and i == 6:
                raise OSError("disk went away")
            yield b

    with pytest.raises(OSError, match="disk went away"):
        dedup_external(source, RESUME_CONFIG, work_dir=tmp_path, memory_limit=TINY)
    assert 0 < int(_progress_of(tmp_path, "signatures")["state"]["rows"]) <= 120  # type: ignore[index]
    fail[0] = False
    got = dedup_external(source, RESUME_CONFIG, work_dir=tmp_path, memory_limit=TINY)
    assert_same(got, _reference(list(RESUME_TEXTS), RESUME_CONFIG))


KILLED = """
import os, sys
import pyarrow as pa
from neardup import DedupConfig
from neardup.engines import dedup_external, table_source
texts = [line.rstrip("\\n") for line in open(sys.argv[2], encoding="utf-8")]
def progress(stage, done, total):
    if stage == sys.argv[3] and done >= int(sys.argv[4]):
        os._exit(7)  # no clean-up, no flush: as if killed
dedup_external(table_source(pa.table({"text": texts}), 13), DedupConfig.create(keep="longest"),
               work_dir=sys.argv[1], memory_limit=64 * 1024, progress=progress)
"""


def test_resume_after_the_process_is_killed(tmp_path: Path) -> None:
    texts = [t.replace("\n", " ") for t in RESUME_TEXTS]
    corpus = tmp_path / "texts.txt"
    corpus.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    work = tmp_path / "work"
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(work), str(corpus), "signatures", "90"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 7, done.stderr
    # a torn write after the last commit: the resumed run must cut it off
    with open(work / "signatures" / "signatures.u32", "ab") as fh:
        fh.write(b"\xff" * 1000)
    with open(work / "signatures" / "keys-0003.u64", "ab") as fh:
        fh.write(b"\x01" * 12)
    got = dedup_external(_table(list(texts)), RESUME_CONFIG, work_dir=work, memory_limit=SMALL)
    assert_same(got, _reference(list(texts), RESUME_CONFIG))
    assert _progress_of(work, "signatures")["starts"] == 2


def test_a_work_dir_of_other_settings_or_input_is_refused(tmp_path: Path) -> None:
    table = _table(_planted(80, 9))
    dedup_external(table, DedupConfig(), work_dir=tmp_path, memory_limit=SMALL)
    with pytest.raises(ConfigError, match=r"other settings \(lsh\.threshold: 0\.5 there, 0\.7 here\)"):
        dedup_external(table, DedupConfig.create(threshold=0.7), work_dir=tmp_path, memory_limit=SMALL)
    with pytest.raises(ConfigError, match=r"text_column: \"text\" there, \"body\" here"):
        renamed = table.rename_columns(["id", "body"])
        dedup_external(renamed, DedupConfig(), work_dir=tmp_path, text_column="body", memory_limit=SMALL)
    other = _table(_planted(80, 10))
    with pytest.raises(InputError, match=f"work dir {tmp_path} was made from other input"):
        dedup_external(other, DedupConfig(), work_dir=tmp_path, memory_limit=SMALL)
    # refusing touched nothing: the original run still resumes with nothing to do
    assert dedup_external(table, DedupConfig(), work_dir=tmp_path, memory_limit=SMALL).ran == ()
    # starting over is explicit
    fresh = dedup_external(other, DedupConfig(), work_dir=tmp_path, memory_limit=SMALL, resume=False)
    assert fresh.ran == STAGES
    assert_same(fresh, _reference(other.column("text").to_pylist(), DedupConfig()))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["hash_version"] == HASH_VERSION and manifest["version"] == 1


def test_input_that_changes_between_passes_is_an_error(tmp_path: Path) -> None:
    texts = _planted(60, 11)
    calls = [0]

    def source() -> list[pa.RecordBatch]:
        calls[0] += 1  # 1: fingerprint, 2: signatures, 3: shingle sets
        changed = [t + " and more" if i == 42 and calls[0] >= 3 else t for i, t in enumerate(texts)]
        return _table(list(changed)).to_batches(max_chunksize=10)

    with pytest.raises(InputError, match="the input changed since its first pass"):
        dedup_external(source, DedupConfig(), work_dir=tmp_path, memory_limit=SMALL)


def test_bad_arguments(tmp_path: Path) -> None:
    table = _table(["a b", "a b"])
    with pytest.raises(ConfigError, match=r"memory_limit must be at least 64 KiB \(65536 bytes\), got 1000"):
        dedup_external(table, work_dir=tmp_path, memory_limit=1000)
    with pytest.raises(ConfigError, match="memory_limit: not a size: 'lots'"):
        dedup_external(table, work_dir=tmp_path, memory_limit="lots")
    assert dedup_external(table, work_dir=tmp_path / "w", memory_limit="1MiB").memory_limit == 1 << 20
    with pytest.raises(MissingColumnError, match="no column 'body'; it has: id, text"):
        dedup_external(table, work_dir=tmp_path, text_column="body")
    with pytest.raises(InputError, match="column 'id' is int64, not text"):
        dedup_external(pa.table({"id": [1, 2]}), work_dir=tmp_path, text_column="id")


def test_prefetched_reads_one_item_ahead_in_order_and_raises_in_place() -> None:
    """The engine's reads run one batch ahead on a thread: same items, same order, never more
    than one made ahead, a failure raised where its item would have been, an early stop clean."""
    import threading

    from neardup.engines.source import prefetched

    made: list[int] = []
    got: list[int] = []
    ahead: list[int] = []
    lock = threading.Lock()

    def items(fail_at: int | None = None) -> Iterable[int]:
        for i in range(6):
            with lock:
                ahead.append(len(made) - len(got))  # made, not yet taken
                made.append(i)
            if i == fail_at:
                raise InputError(f"bad batch {i}")
            yield i

    for item in prefetched(items()):
        got.append(item)
    assert got == list(range(6))
    assert max(ahead) <= 1  # at most the item being handed out plus one made ahead

    made.clear()
    got.clear()
    with pytest.raises(InputError, match="bad batch 3"):
        for item in prefetched(items(fail_at=3)):
            got.append(item)
    assert got == [0, 1, 2]

    made.clear()
    stream = prefetched(items())
    assert next(iter(stream)) == 0
    stream.close()  # type: ignore[attr-defined]  # a generator: stops the reading thread
    assert len(made) <= 2


def test_a_frame_of_another_library_is_a_source(tmp_path: Path) -> None:
    """polars and pandas frames go in as they are, with the same result as the table."""
    import pandas as pd
    import polars as pl

    texts = ["the cat sat on the mat", "the cat sat on the mat!", "dogs bark at night", "Dogs bark at night"]
    want = dedup_external(pa.table({"text": texts}), work_dir=tmp_path / "a", memory_limit="1MiB")
    for i, frame in enumerate((pl.DataFrame({"text": texts}), pd.DataFrame({"text": texts}))):
        got = dedup_external(frame, work_dir=tmp_path / f"f{i}", memory_limit="1MiB")
        assert got.keep.tolist() == want.keep.tolist() == [True, False, True, False]
