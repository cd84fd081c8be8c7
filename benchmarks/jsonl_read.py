"""How long reading one JSON Lines file whole takes, with and without counting its record lines.

``read_corpus`` counts the record lines of a JSON Lines file as pyarrow reads it (a line holding
two JSON values is one bad record, not two rows). This times the fast path on a generated file
(``id``, a 60-word ``text``, ``url``: 400,000 records, about 150 MiB, in the page cache) with the
count and with the file read as a plain stream, in alternating rounds in one process, and prints
the best of each::

    PYTHONPATH=src .venv/bin/python benchmarks/jsonl_read.py [--records 400000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import neardup.io.jsonl as jsonl
from neardup.io import ReadOptions, read_corpus


def write_file(path: Path, records: int) -> None:
    rng = random.Random(0)
    words = [f"w{k}" for k in range(5000)]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(records):
            text = " ".join(rng.choices(words, k=60))
            fh.write(json.dumps({"id": i, "text": text, "url": f"https://example.org/{i}"}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    counted = jsonl.json_source
    plain = lambda path, fmt: lambda: pa.input_stream(str(path))  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        write_file(path, args.records)
        print(f"{path.stat().st_size / 2**20:.0f} MiB, {args.records:,} records")
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, source in (("counted", counted), ("plain stream", plain)):
                jsonl.json_source = source
                t0 = time.perf_counter()
                rows = read_corpus([path], ReadOptions(id_column="id")).table.num_rows
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
                assert rows == args.records
        jsonl.json_source = counted
    for name, seconds in best.items():
        print(f"read_corpus, {name}: best {seconds:.3f} s")


if __name__ == "__main__":
    main()
