"""Helpers of the Ray engine's tests: corpora with a known shape, and the check that a Ray run
wrote what the local engine writes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from neardup.io import ReadOptions
from neardup.io.writers import OUTPUT_TABLES
from neardup.jobs import DedupJob, RayOptions, run_dedup

DECISIONS = (
    "input_rows",
    "empty_documents",
    "bands",
    "rows",
    "buckets_with_collisions",
    "candidate_pairs",
    "verified_pairs",
    "edges",
    "clusters",
    "duplicates_removed",
    "kept_rows",
)
"""The figures of ``summary.json`` that say what a run decided."""


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def planted(n: int = 600, seed: int = 3) -> list[dict[str, Any]]:
    """``n`` records: random texts, every tenth an edited copy of one seven records before."""
    rng = random.Random(seed)
    words = [f"w{k}" for k in range(400)]
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 10 == 3 and i >= 10:
            base = out[i - 7]["text"].split()
            base[rng.randrange(len(base))] = "edited"
            text = " ".join(base)
        else:
            text = " ".join(rng.choice(words) for _ in range(30))
        out.append({"id": f"d{i}", "text": text})
    return out


def chain(n: int = 1000, width: int = 12, seed: int = 5) -> list[dict[str, Any]]:
    """``n`` windows of ``width`` tokens sliding by one, shuffled: neighbours in the chain are
    near-duplicates at threshold 0.75 (word 3-grams: 9/11), documents two apart are not (8/12)."""
    rows = [{"id": f"c{i}", "text": " ".join(f"t{j}" for j in range(i, i + width))} for i in range(n)]
    random.Random(seed).shuffle(rows)
    return rows


def parts_of(folder: Path) -> bytes:
    """A table's part files, concatenated in name order."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("part-*")))


def same_outputs(local: Path, ray: Path, fmt: str = "jsonl") -> None:
    """Assert the Ray run's tables, part by part in order, are the local run's files, and that
    both decided the same figures."""
    for name in OUTPUT_TABLES:
        if fmt == "jsonl":
            assert parts_of(ray / name) == (local / f"{name}.jsonl").read_bytes(), name
        else:
            ours = pa.concat_tables(pq.read_table(p) for p in sorted((ray / name).glob("part-*")))
            theirs = pq.read_table(local / f"{name}.parquet")
            assert ours.to_pylist() == theirs.to_pylist(), name
    ours, theirs = (json.loads((d / "summary.json").read_text()) for d in (ray, local))
    assert {k: ours[k] for k in DECISIONS} == {k: theirs[k] for k in DECISIONS}


def both_engines(
    inputs: list[Path],
    tmp: Path,
    *,
    settings: dict[str, Any] | None = None,
    id_column: str | None = "id",
    partitions: int | None = 3,
    split_bytes: int = 8 << 10,
    output_format: str | None = None,
) -> dict[str, Any]:
    """Run the local engine and the Ray engine (in the Ray already started) on ``inputs``,
    assert they wrote the same, and return the Ray run's summary."""
    read = ReadOptions(id_column=id_column)
    given = settings or {}
    run_dedup(
        DedupJob(
            inputs=inputs, output_dir=tmp / "local", read=read, settings=given, output_format=output_format
        )
    )
    summary = run_dedup(
        DedupJob(
            inputs=inputs,
            output_dir=tmp / "ray",
            read=read,
            settings=given,
            output_format=output_format,
            engine="ray",
            ray=RayOptions(partitions=partitions, split_bytes=split_bytes),
        )
    )
    fmt = output_format or ("parquet" if inputs[0].suffix == ".parquet" else "jsonl")
    same_outputs(tmp / "local", tmp / "ray", fmt)
    return summary
