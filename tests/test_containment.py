"""Containment search: the four-document example, the estimate's error, the partitions and the
band shapes (the backends' contract is in test_index_contract.py, the CLI's in test_cli_index.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.config import DedupConfig
from neardup.core.containment import (
    RECALL_AT_THRESHOLD,
    containment_sigma,
    estimate_containment,
    jaccard_at,
    layouts,
    partition_bounds,
    partition_of,
    query_plan,
    reachable,
)
from neardup.index import ContainmentMatch, LSHIndex

CLASSIC = {
    "doc_origin": (
        "Python凭借简洁优美的语法、极其丰富的第三方数据科学库以及极其活跃的开源社区，"
        "在人工智能、机器学习、自然语言处理和自动化运维领域取得了压倒性的广泛应用。"
    ),
    "doc_shuffled_minor_edit": (
        "在人工智能、自动化运维和自然语言处理等关键领域，Python取得了压倒性的广泛应用；"
        "这很大程度上凭借其简洁优美的语法、非常丰富的开源第三方数据科学库。"
    ),
    "doc_partial_copy": (
        "今天的天气非常晴朗，阳光明媚。顺便提一下，Python凭借简洁优美的语法、"
        "极其丰富的第三方数据科学库在很多计算机领域得到了应用。下午打算去公园散散步。"
    ),
    "doc_irrelevant": (
        "番茄炒鸡蛋是一道经典的传统家常菜，制作时应当先将鸡蛋打散煎熟，"
        "再加入切块的新鲜成熟番茄大火翻炒，最后加入适量食盐与小葱提香出锅。"
    ),
}
CHAR3 = DedupConfig.create(shingle="char", ngram=3, threshold=0.5)


def test_the_partial_copy_is_found_by_containment_not_by_jaccard() -> None:
    """The copy lifts the origin's opening clause into sentences of its own."""
    copy, origin = CLASSIC["doc_partial_copy"], CLASSIC["doc_origin"]
    assert neardup.exact_jaccard(copy, origin, CHAR3) < 0.25
    with LSHIndex.open("memory://", CHAR3, keep_shingles=True, containment=True) as index:
        index.insert_many(list(CLASSIC), list(CLASSIC.values()))
        assert [m.key for m in index.query(copy, exact=True)] == ["doc_partial_copy"]  # Jaccard misses it
        # the copied clause, looked up whole: both texts that hold it
        clause = "Python凭借简洁优美的语法、极其丰富的第三方数据科学库"
        assert index.query(clause, exact=True) == []
        assert index.query_containment(clause, 0.9) == [
            ContainmentMatch("doc_origin", 1.0, True),
            ContainmentMatch("doc_partial_copy", 1.0, True),
        ]
        # the copy, asked which texts it takes from: a third of the origin, nothing else
        found = index.query_containment(copy, 0.3, direction="doc_in_query")
        assert [m.key for m in found] == ["doc_partial_copy", "doc_origin"]
        assert found[1].exact and found[1].containment == pytest.approx(0.3662, abs=1e-4)
        assert [m.key for m in index.query_containment(copy, 0.5, direction="doc_in_query")] == [
            "doc_partial_copy"
        ]
        # the origin, asked who copies from it: the rewrite (half) and the copy (a third)
        takers = index.query_containment(origin, 0.3)
        assert [m.key for m in takers] == ["doc_origin", "doc_shuffled_minor_edit", "doc_partial_copy"]
        assert [m.key for m in index.query_containment(CLASSIC["doc_irrelevant"], 0.1)] == ["doc_irrelevant"]


WORD1 = DedupConfig.create(ngram=1)


@settings(max_examples=80, deadline=None)
@given(
    shared=st.integers(1, 400),
    only_query=st.integers(0, 400),
    only_doc=st.integers(0, 4000),
    offset=st.integers(0, 10**6),
    direction=st.sampled_from(["query_in_doc", "doc_in_query"]),
)
def test_containment_estimate_within_four_sigma(
    shared: int, only_query: int, only_doc: int, offset: int, direction: str
) -> None:
    words = [f"w{offset + i}" for i in range(shared + only_query + only_doc)]
    query = " ".join(words[: shared + only_query])
    doc = " ".join(words[:shared] + words[shared + only_query :])
    sig_q, sig_x = neardup.signatures([query, doc], WORD1)
    q, x = shared + only_query, shared + only_doc
    jaccard = np.count_nonzero(sig_q == sig_x) / sig_q.size
    estimate = float(estimate_containment(np.array(jaccard), q, x, direction))  # type: ignore[arg-type]
    truth = shared / (q if direction == "query_in_doc" else x)
    sigma = float(containment_sigma(np.array(truth), q, x, direction, sig_q.size))  # type: ignore[arg-type]
    # The estimate moves in steps of one agreeing position; where fewer than one is expected
    # (shared=1 of 19 query words, 2,309 doc words: J = 0.0004), one lucky agreement (a 5%
    # chance) is more than four of the delta method's sigmas, so one step is allowed on top.
    true_j = shared / (q + x - shared)
    step = float(estimate_containment(np.array(true_j + 1 / sig_q.size), q, x, direction)) - truth  # type: ignore[arg-type]
    assert abs(estimate - truth) <= 4 * sigma + step + 1e-9


def test_partitions_cover_every_size_once() -> None:
    sizes = np.arange(1, 131_072)  # 2**17 - 1: the end of a partition
    parts = partition_of(sizes)
    assert np.all(np.diff(parts) >= 0)
    for p in np.unique(parts).tolist():
        lo, hi = partition_bounds(p)
        members = sizes[parts == p]
        assert (members.min(), members.max()) == (lo, hi)
        assert hi <= 1.5 * lo or hi - lo <= 1
    assert partition_of(np.array([0]))[0] == partition_of(np.array([1]))[0]


def test_layouts_and_plans() -> None:
    assert [(lay.rows, lay.bands, lay.first_column) for lay in layouts(128)] == [
        (1, 128, 0),
        (2, 64, 128),
        (4, 32, 192),
        (8, 16, 224),
    ]
    assert [lay.rows for lay in layouts(3)] == [1, 2]
    parts = list(range(0, 40))
    for direction in ("query_in_doc", "doc_in_query"):
        for threshold in (0.5, 0.7, 0.9):
            plan = query_plan(100, parts, threshold, direction, 128)  # type: ignore[arg-type]
            assert plan and all(reachable(p.partition, 100, threshold, direction) for p in plan)  # type: ignore[arg-type]
            for probe in plan:
                lo, hi = partition_bounds(probe.partition)
                size = hi if direction == "query_in_doc" else lo
                s = float(jaccard_at(np.array(threshold), 100, size, direction))  # type: ignore[arg-type]
                found = 1 - (1 - s**probe.layout.rows) ** probe.bands
                best = max(1 - (1 - s**lay.rows) ** lay.bands for lay in layouts(128))
                assert found >= min(RECALL_AT_THRESHOLD, best) - 1e-9
    # a document too small to hold 70% of a 100-shingle query is never probed
    assert not reachable(int(partition_of(np.array([60]))[0]), 100, 0.7, "query_in_doc")
    assert not reachable(int(partition_of(np.array([200]))[0]), 100, 0.7, "doc_in_query")
    assert query_plan(0, parts, 0.7, "query_in_doc", 128) == []
