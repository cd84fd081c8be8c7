"""``neardup dedup --containment C``: a row goes when at least C of its shingles are in a larger
kept row. Checked against a brute-force pass over every pair, in memory, in passes and at the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main
from neardup.config import DedupConfig
from neardup.errors import ConfigError


def planted(seed: int = 5, sources: int = 4) -> list[str]:
    """Sources, and parts of them (a quarter to all) inside other text of 0-8 times their length."""
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for s in range(sources):
        source = [f"s{s}x{i}" for i in range(60)]
        texts.append(" ".join(source))
        for share in (0.25, 0.5, 0.75, 0.95, 1.0):
            for pad in (0, 1, 3, 8):
                length = int(share * len(source))
                start = int(rng.integers(0, len(source) - length + 1))
                other = [f"o{int(w)}" for w in rng.integers(0, 20000, size=pad * length)]
                cut = int(rng.integers(0, len(other) + 1))
                texts.append(" ".join(other[:cut] + source[start : start + length] + other[cut:]))
    order = rng.permutation(len(texts))
    return [texts[i] for i in order]


def brute_force(texts: list[str], threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The keep mask and representatives by the rule, from every pair's exact containment."""
    sets = [neardup.shingle_hashes(t) for t in texts]
    sizes = np.array([s.size for s in sets])
    n = len(texts)
    keep = np.ones(n, dtype=bool)
    rep = np.arange(n)
    for d in sorted(range(n), key=lambda i: (-sizes[i], i)):
        best = None
        for o in range(n):
            if o == d or not keep[o] or (sizes[o], -o) <= (sizes[d], -d) or sizes[d] == 0:
                continue
            c = np.intersect1d(sets[d], sets[o]).size / sizes[d]
            if c >= threshold and (best is None or (c, -o) > best[0]):
                best = ((c, -o), o)
        if best is not None:
            keep[d], rep[d] = False, best[1]
    return keep, rep


@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_containment_run_equals_brute_force(threshold: float) -> None:
    texts = planted()
    result = neardup.dedup(texts, DedupConfig.create(containment=threshold))
    keep, rep = brute_force(texts, threshold)
    assert result.keep.tolist() == keep.tolist()
    assert result.clusters.representative.tolist() == rep.tolist()
    assert np.count_nonzero(~keep) >= len(texts) // 4  # the corpus has plenty to find
    pairs = result.pairs
    assert pairs.containment is not None and np.all(pairs.containment >= threshold)
    assert np.all(pairs.left < pairs.right)
    for a, b, c, j in zip(pairs.left, pairs.right, pairs.containment, pairs.jaccard, strict=True):
        sa, sb = neardup.shingle_hashes(texts[a]), neardup.shingle_hashes(texts[b])
        shared = np.intersect1d(sa, sb).size
        assert c == pytest.approx(shared / min(sa.size, sb.size))
        assert j == pytest.approx(neardup.exact_jaccard(texts[a], texts[b]))
    # a removed row's representative is kept, and holds it
    removed = np.flatnonzero(~result.keep)
    assert np.all(result.keep[result.clusters.representative[removed]])
    plain = neardup.dedup(texts, DedupConfig.create(threshold=threshold))
    assert np.count_nonzero(~result.keep) > np.count_nonzero(~plain.keep)  # Jaccard misses most


def test_containment_config_is_checked() -> None:
    for bad in (0, 1.5, True, float("nan")):
        with pytest.raises(ConfigError, match="containment must be in"):
            DedupConfig.create(containment=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as err:
        DedupConfig.create(containment=0.8, keep="longest")
    assert str(err.value) == (
        "keep=longest does not apply to a containment run: the larger document of a pair is kept, "
        "the one contained in it goes"
    )


def run(*args: str | Path) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_in_memory_and_in_passes_agree(tmp_path: Path) -> None:
    texts = planted(seed=9, sources=2)
    ids = [f"r{i}" for i in range(len(texts))]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True))
    )
    csv = tmp_path / "rows.csv"
    pacsv.write_csv(pa.table({"id": ids, "text": texts}), csv)
    summaries = {}
    for name, source in (("passes", jsonl), ("memory", csv)):
        out = tmp_path / name
        done = CliRunner().invoke(
            main,
            [
                "dedup",
                str(source),
                "-o",
                str(out),
                "--id-column",
                "id",
                "--containment",
                "0.9",
                "--json",
                "-q",
            ],
        )
        assert done.exit_code == 0, done.output
        summaries[name] = json.loads(done.stdout)
        pairs = pacsv.read_csv(out / "candidate_pairs.csv") if name == "memory" else None
        if pairs is not None:
            assert pairs.column_names == [
                "id_a",
                "id_b",
                "jaccard",
                "jaccard_kind",
                "estimated_jaccard",
                "containment",
            ]
    assert summaries["passes"]["engine"]["mode"] == "passes"
    for field in ("duplicates_removed", "clusters", "candidate_pairs", "edges", "containment"):
        assert summaries["passes"][field] == summaries["memory"][field]
    assert summaries["memory"]["containment"] == 0.9
    keep, _ = brute_force(texts, 0.9)
    assert summaries["memory"]["duplicates_removed"] == int(np.count_nonzero(~keep))
    dup_passes = [
        json.loads(line) for line in (tmp_path / "passes" / "duplicates.jsonl").read_text().splitlines()
    ]
    dup_memory = pacsv.read_csv(tmp_path / "memory" / "duplicates.csv").to_pylist()
    assert sorted((d["id"], d["duplicate_of"]) for d in dup_passes) == sorted(
        (d["id"], d["duplicate_of"]) for d in dup_memory
    )


@pytest.mark.parametrize(
    ("extra", "what"),
    [
        (["--report"], "--report"),
        (["--work-dir", "w"], "--work-dir (streaming)"),
        (["--against", "idx.db"], "--against (an index)"),
    ],
)
def test_cli_refuses_what_containment_does_not_run_on(tmp_path: Path, extra: list[str], what: str) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text('{"text": "a b c d"}\n{"text": "a b c"}\n')
    done = CliRunner().invoke(
        main, ["dedup", str(source), "-o", str(tmp_path / "out"), "--containment", "0.8", *extra]
    )
    assert done.exit_code == 2, done.output
    assert (
        done.stderr
        == f"neardup: error: containment runs in memory or in passes; {what} is not supported with it yet\n"
    )
    assert not (tmp_path / "out").exists()
