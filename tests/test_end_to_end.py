"""A 10,000-document JSONL corpus with planted near-duplicates, deduplicated by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from neardup.cli import main
from synthetic import planted_corpus, precision_recall, true_groups


def test_planted_corpus_precision_and_recall(tmp_path: Path) -> None:
    records = planted_corpus(10_000, dup_fraction=0.3, seed=7)
    src = tmp_path / "corpus.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "dedup",
            str(src),
            "-o",
            str(out),
            "--threshold",
            "0.8",
            "--id-column",
            "id",
            "--output-format",
            "parquet",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["input_rows"] == 10_000

    position = {rec["id"]: i for i, rec in enumerate(records)}
    clusters = pq.read_table(out / "clusters.parquet").to_pylist()
    predicted = [[position[m] for m in c["members"]] for c in clusters]
    precision, recall = precision_recall(predicted, true_groups(records))
    assert precision >= 0.95, precision
    assert recall >= 0.95, recall

    annotated = pq.read_table(out / "annotated.parquet")
    deduped = pq.read_table(out / "deduped.parquet")
    duplicates = pq.read_table(out / "duplicates.parquet")
    assert annotated.num_rows == 10_000
    assert deduped.num_rows + duplicates.num_rows == 10_000
    assert summary["duplicates_removed"] == duplicates.num_rows
    kept_groups = {records[position[i]]["group"] for i in deduped.column("id").to_pylist()}
    assert len(kept_groups) >= 0.95 * len({r["group"] for r in records})
