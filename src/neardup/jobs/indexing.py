"""Adding a corpus to an index, in all-or-nothing chunks (on Redis, in all-or-nothing pieces of
each chunk: a run killed part way is completed by running it again)."""

from __future__ import annotations

import pyarrow as pa

from neardup.index import LSHIndex
from neardup.io import Corpus
from neardup.pipeline import Progress

INSERT_CHUNK = 50_000
"""Rows per batch added to an index (all or nothing, or on Redis in pieces)."""


def index_corpus(index: LSHIndex, corpus: Corpus, progress: Progress | None = None) -> int:
    """Insert every row of ``corpus`` under its id (as a string), ``INSERT_CHUNK`` rows at a
    time, each chunk whole or not at all (on Redis, each piece of it); return how many.
    ``progress("index", done, total)``."""
    keys: list[str] = corpus.table.column(corpus.id_column).cast(pa.string()).to_pylist()
    texts = corpus.table.column(corpus.text_column)
    n = len(keys)
    if progress is not None:
        progress("index", 0, n)
    for lo in range(0, n, INSERT_CHUNK):
        hi = min(n, lo + INSERT_CHUNK)
        chunk = [t or "" for t in texts.slice(lo, hi - lo).to_pylist()]
        index.insert_many(keys[lo:hi], chunk)
        if progress is not None:
            progress("index", hi, n)
    return n
