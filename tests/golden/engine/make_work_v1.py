"""Writes ``work-v1/``: a finished work directory of the external engine (format 1).

Run from the repository root: ``.venv/bin/python tests/golden/engine/make_work_v1.py``.
Only rerun it after a deliberate format change (bump ``neardup.engines.manifest.VERSION``
or ``HASH_VERSION``, and say so in CHANGELOG.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

from neardup import DedupConfig
from neardup.engines import dedup_external

HERE = Path(__file__).parent
TEXTS: list[str | None] = [
    "The quick brown fox jumps over the lazy dog near the river bank today.",
    "A completely different sentence about weather, rain and the coming winter.",
    "the quick brown fox jumps over the lazy dog near the river bank today!",
    "",
    "Minhash signatures estimate the Jaccard similarity of two shingle sets.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG NEAR THE RIVER BANK, TODAY",
    "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    "床前明月光，疑是地上霜。举头望明月，低头思故乡！",
    None,
    "MinHash signatures estimate the Jaccard similarity of two shingle sets!",
    "Locality sensitive hashing groups similar signatures into the same buckets.",
    "   ",
]
# the sketch, fp weight and band layers of the time
CONFIG = DedupConfig.create(keep="longest", match_empty=True, sketch="classic", fp_weight=0.1, layers=1)
MEMORY_LIMIT = 64 * 1024


def table() -> pa.Table:
    return pa.table({"text": pa.array(TEXTS, pa.string())})


if __name__ == "__main__":
    work = HERE / "work-v1"
    shutil.rmtree(work, ignore_errors=True)
    dedup_external(table(), CONFIG, work_dir=work, memory_limit=MEMORY_LIMIT)
    (work / "lock").unlink()
