"""Write ``index-v1-sqlite2.db``: the texts of ``index-v1.db`` (format 1) in SQLite layout 2, which
records each document's insert time and shingle count; test_index_golden reads it.

Run it only when the format changes on purpose (then add a new file; keep the old ones):
``python tests/golden/index/make_index_v1_sqlite2.py``.
"""

from __future__ import annotations

import runpy
import sqlite3
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    from neardup.config import DedupConfig
    from neardup.index import LSHIndex

    texts: dict[str, str] = runpy.run_path(str(HERE / "make_index_v1.py"))["TEXTS"]

    path = HERE / "index-v1-sqlite2.db"
    path.unlink(missing_ok=True)
    with LSHIndex.open(path, DedupConfig.create(shingle="char", ngram=3), keep_shingles=True) as index:
        index.insert_many(list(texts), list(texts.values()))
    conn = sqlite3.connect(path)  # fold the WAL into the file and leave journal mode as stored
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


if __name__ == "__main__":
    main()
