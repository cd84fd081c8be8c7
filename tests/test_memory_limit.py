"""The memory limit covers what a run holds, not just what it reads: a run in memory checks its
signatures, band records and candidate pairs against the limit as it finds them, and streams
instead when they would pass it; the streaming engine's peak stays near its own limit.

The corpora are one-word documents: tiny files whose copies make millions of candidate pairs.
Peak memory is the child process's own (``getrusage`` of a wrapper whose only child it is).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neardup.memory
from neardup import DedupConfig
from neardup.core.text import encode_texts
from neardup.errors import ConfigError
from neardup.io import ReadOptions
from neardup.jobs import DedupJob, run_dedup
from neardup.memory import MemoryLimitError, MemoryWatch
from neardup.pipeline import find_duplicates

MARGIN = 1.10
"""How far past --memory-limit a run may peak (docs/engine.md, "Memory")."""

_PEAK = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(code)
"""


def one_word_corpus(path: Path, rows: int, vocabulary: int, seed: int = 7) -> int:
    """``rows`` one-word documents drawn from ``vocabulary`` words; returns how many words occur."""
    rng = np.random.default_rng(seed)
    words = [f"w{k:06d}x" for k in range(vocabulary)]
    picks = rng.integers(0, vocabulary, rows)
    path.write_text("".join(f'{{"id": {i}, "text": "{words[w]}"}}\n' for i, w in enumerate(picks.tolist())))
    return int(np.unique(picks).size)


def dedup_peak(*args: object) -> tuple[int, dict[str, object]]:
    """Run ``neardup dedup`` in a child process: its peak resident bytes and its summary."""
    out = Path(str(args[args.index("-o") + 1]))
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "neardup.cli", "dedup", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split()[-1]), json.loads((out / "summary.json").read_text())


def test_one_word_documents_stream_and_stay_within_the_limit(tmp_path: Path) -> None:
    """200,000 documents of one word each, 4,000,000 candidate pairs: held in memory they took
    4.7 GB under --memory-limit 512MB; now the run sees what its signatures and band records
    (or its candidate pairs) would take before holding them, streams, and peaks within the margin."""
    corpus = tmp_path / "words.jsonl"
    words = one_word_corpus(corpus, 200_000, 5_000)
    peak, summary = dedup_peak(corpus, "-o", tmp_path / "out", "--id-column", "id", "--memory-limit", "512MB")
    engine = summary["engine"]
    assert isinstance(engine, dict)
    assert engine["mode"] == "streaming"
    # the signatures' check trips or, where the process holds less at that moment (numba's kernels
    # load beside it), the candidate pairs' check does, before they are held
    because = str(engine["streamed_because"])
    assert re.search(r"of 200,000 documents would take|candidate pairs \(and counting\) would take", because)
    assert summary["kept_rows"] == words and summary["duplicates_removed"] == 200_000 - words
    assert peak <= MARGIN * 512e6, f"peak {peak / 1e6:.0f} MB under --memory-limit 512MB"


def test_candidate_pairs_past_the_limit_switch_to_streaming_with_the_same_outputs(tmp_path: Path) -> None:
    """8,000 documents of 4 words: their signatures fit, their 8,000,000 candidate pairs do not.
    The run stops while finding them, writes nothing, and streams: the outputs equal those of a
    run given room to hold them."""
    corpus = tmp_path / "words.jsonl"
    one_word_corpus(corpus, 8_000, 4)
    shape = ["--id-column", "id", "--num-perm", "16", "--max-bucket-size", "5000"]
    peak, summary = dedup_peak(corpus, "-o", tmp_path / "out", *shape, "--memory-limit", "500MB")
    engine = summary["engine"]
    assert isinstance(engine, dict)
    assert engine["mode"] == "streaming"
    assert "candidate pairs (and counting) would take the run in memory" in engine["streamed_because"]
    assert peak <= MARGIN * 500e6, f"peak {peak / 1e6:.0f} MB under --memory-limit 500MB"

    _, roomy = dedup_peak(corpus, "-o", tmp_path / "roomy", *shape, "--memory-limit", "8GB")
    assert isinstance(roomy["engine"], dict) and roomy["engine"]["mode"] != "streaming"
    assert summary["candidate_pairs"] == roomy["candidate_pairs"] > 7_900_000
    assert summary["kept_rows"] == roomy["kept_rows"] == 4
    for name in ("deduped.jsonl", "duplicates.jsonl", "clusters.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "roomy" / name).read_bytes(), name


def test_the_watch_stops_a_run_at_its_pairs_and_lets_one_within_it_finish() -> None:
    texts = ["one word"] * 300 + ["another one"] * 300  # 89,700 pairs: about 7 MB to hold
    config = DedupConfig.create(max_bucket_size=1000)
    batch = encode_texts(texts)
    roomy = find_duplicates(batch, config, watch=MemoryWatch(1 << 50))  # and the kernels loaded
    assert roomy.candidate_count == 2 * (300 * 299 // 2)
    assert roomy.keep.sum() == 2
    tight = MemoryWatch(neardup.memory.resident_bytes() + 4_000_000)  # room for the 600 rows, not their pairs
    with pytest.raises(MemoryLimitError, match="89,700 candidate pairs \\(and counting\\)") as stopped:
        find_duplicates(batch, config, watch=tight)
    assert stopped.value.needed > stopped.value.limit == tight.limit


def test_a_run_against_an_index_past_the_limit_is_refused_with_the_figures(tmp_path: Path) -> None:
    """A run against an index cannot stream: past the limit it says so, and writes nothing."""
    corpus = tmp_path / "words.jsonl"
    one_word_corpus(corpus, 8_000, 4)
    job = DedupJob(
        inputs=[corpus],
        output_dir=tmp_path / "out",
        settings={"num_perm": 16, "max_bucket_size": 5000},
        read=ReadOptions(id_column="id"),
        against=str(tmp_path / "index.sqlite"),
        update_index=True,
        memory_limit="500MB",
    )
    with pytest.raises(ConfigError, match="a run against an index is held in memory: raise memory_limit"):
        run_dedup(job)
    assert not (tmp_path / "out").exists()
