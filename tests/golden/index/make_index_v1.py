"""Write ``index-v1.db``: a small SQLite index in format 1, the golden file test_index_golden reads.

Run it only when the format changes on purpose (then add a new file; keep the old ones):
``python tests/golden/index/make_index_v1.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

HERE = Path(__file__).parent
TEXTS = {
    "en-1": "The quick brown fox jumps over the lazy dog near the river bank.",
    "en-2": "The quick brown fox jumps over the lazy dog near the river bank!",
    "en-3": "A completely different sentence about lighthouses and the northern sea.",
    "zh-1": "今天天气很好，我们一起去公园散步吧。",
    "zh-2": "今天天气很好，我们一起去公园散步。",
    "empty": "",
}


def main() -> None:
    from neardup.config import DedupConfig
    from neardup.index import LSHIndex

    path = HERE / "index-v1.db"
    path.unlink(missing_ok=True)
    with LSHIndex.open(path, DedupConfig.create(shingle="char", ngram=3), keep_shingles=True) as index:
        index.insert_many(list(TEXTS), list(TEXTS.values()))
    conn = sqlite3.connect(path)  # fold the WAL into the file and leave journal mode as stored
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


if __name__ == "__main__":
    main()
