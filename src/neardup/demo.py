"""The built-in sample behind ``neardup dedup --demo``.

Exact duplicates, case and punctuation variants, unrelated texts and short
boilerplate, in English and Chinese, so the algorithm's behaviour can be
checked without downloading a corpus.
"""

from __future__ import annotations

import pyarrow as pa

DEMO_RECORDS: tuple[tuple[str, str, str], ...] = (
    (
        "doc-01",
        "original",
        "MinHash estimates the Jaccard similarity of two sets by comparing the minimum "
        "hash values of their elements under many random permutations.",
    ),
    (
        "doc-02",
        "exact duplicate of doc-01",
        "MinHash estimates the Jaccard similarity of two sets by "
        "comparing the minimum hash values of their elements under many random permutations.",
    ),
    (
        "doc-03",
        "case and punctuation variant of doc-01",
        "MINHASH estimates the jaccard similarity of "
        "two sets -- by comparing the minimum hash values of their elements, under many random permutations!",
    ),
    (
        "doc-04",
        "original",
        "Locality-sensitive hashing splits each signature into bands and hashes every "
        "band into a bucket, so that similar documents are likely to collide in at least one bucket.",
    ),
    (
        "doc-05",
        "punctuation and whitespace variant of doc-04",
        "locality sensitive hashing splits each "
        "signature into bands,   and hashes every band into a bucket;\nso that similar documents are likely "
        "to collide in at least one bucket",
    ),
    (
        "doc-06",
        "unrelated",
        "The weather in the mountains changed quickly, and the hikers turned back "
        "before the storm reached the pass.",
    ),
    (
        "doc-07",
        "unrelated",
        "Fresh bread needs flour, water, salt and yeast, and a long slow rise gives it a deeper flavour.",
    ),
    ("doc-08", "short boilerplate", "Click here to subscribe."),
    ("doc-09", "short boilerplate", "All rights reserved."),
    ("doc-10", "case variant of doc-09", "ALL RIGHTS RESERVED"),
    (
        "doc-11",
        "original (Chinese)",
        "自然语言处理是人工智能的一个重要方向，它研究人与计算机之间用自然语言进行有效通信的各种理论和方法。",
    ),
    (
        "doc-12",
        "punctuation variant of doc-11",
        "自然语言处理是人工智能的一个重要方向,它研究人与计算机之间用自然语言进行有效通信的各种理论和方法!",
    ),
    ("doc-13", "unrelated (Chinese)", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。"),
    (
        "doc-14",
        "exact duplicate of doc-06",
        "The weather in the mountains changed quickly, and the hikers "
        "turned back before the storm reached the pass.",
    ),
)


def demo_table() -> pa.Table:
    """The demo sample as a table with columns ``id``, ``note`` and ``text``."""
    ids, notes, texts = zip(*DEMO_RECORDS, strict=True)
    return pa.table({"id": list(ids), "note": list(notes), "text": list(texts)})
