"""Clusters, keeper policies and empty documents on concrete examples."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.config import DedupConfig
from neardup.core.clusters import assign_clusters
from neardup.pipeline import dedup


def _assign(n: int, edges: list[tuple[int, int]], **kwargs: object):  # type: ignore[no-untyped-def]
    left = np.array([e[0] for e in edges], dtype=np.int64)
    right = np.array([e[1] for e in edges], dtype=np.int64)
    return assign_clusters(n, left, right, **kwargs)  # type: ignore[arg-type]


EDGES = [(1, 2), (0, 1), (3, 4)]
LENGTHS = np.array([3, 5, 5, 1, 1, 8])


@pytest.mark.parametrize(
    ("keep", "representative"),
    [
        ("first", [0, 0, 0, 3, 3, 5]),
        ("longest", [1, 1, 1, 3, 3, 5]),  # 1 and 2 tie on length: the smaller position wins
        ("shortest", [0, 0, 0, 3, 3, 5]),  # 3 and 4 tie: the smaller position wins
    ],
)
def test_keeper_policies(keep: str, representative: list[int]) -> None:
    got = _assign(6, EDGES, keep=keep, lengths=LENGTHS)
    assert got.representative.tolist() == representative
    assert got.cluster.tolist() == [0, 0, 0, 1, 1, -1]
    assert got.keep.tolist() == [i == r for i, r in enumerate(representative)]
    assert got.n_clusters == 2


def test_cluster_ids_follow_representative_positions() -> None:
    got = _assign(4, [(0, 3), (1, 2)], keep="longest", lengths=np.array([1, 1, 1, 9]))
    assert got.representative.tolist() == [3, 1, 1, 3]
    assert got.cluster.tolist() == [1, 0, 0, 1]
    assert [g.tolist() for g in got.groups()] == [[1, 2], [0, 3]]


def test_no_edges_no_clusters() -> None:
    got = _assign(3, [])
    assert got.cluster.tolist() == [-1, -1, -1]
    assert got.keep.all()
    assert got.n_clusters == 0
    assert got.groups() == []
    empty = _assign(0, [])
    assert empty.n_clusters == 0 and empty.keep.size == 0


def test_pipeline_keeper_policies() -> None:
    texts = ["the cat sat on the mat today", "Dogs bark.", "The cat sat on the mat today!!!"]
    assert dedup(texts).keep.tolist() == [True, True, False]
    assert dedup(texts, DedupConfig(keep="longest")).keep.tolist() == [False, True, True]
    assert dedup(texts, DedupConfig(keep="shortest")).keep.tolist() == [True, True, False]


def test_empty_documents_are_not_duplicates_by_default() -> None:
    texts = ["", "!!!", "   ", "real text here"]
    result = dedup(texts)
    assert result.keep.tolist() == [True, True, True, True]
    assert result.shingle_counts.tolist()[:3] == [0, 0, 0]
    assert len(result.buckets) == 0


def test_empty_documents_match_with_match_empty() -> None:
    texts = ["", "real text here", "!!!", "   "]
    result = dedup(texts, DedupConfig(match_empty=True))
    assert result.keep.tolist() == [True, True, False, False]
    assert result.groups() == [[0, 2, 3]]


@pytest.mark.parametrize("config", [DedupConfig(), DedupConfig(match_empty=True, keep="longest")])
def test_empty_and_single_document_corpora(config: DedupConfig) -> None:
    assert dedup([], config).keep.tolist() == []
    assert dedup([], config).clusters.n_clusters == 0
    assert dedup(["solo"], config).keep.tolist() == [True]
