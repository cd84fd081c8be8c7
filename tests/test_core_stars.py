"""Large-star and small-star rounds end in the roots the local union-find gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from neardup.core.clusters import components
from neardup.core.stars import large_star, small_star


def _roots(n: int, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, int]:
    """Each node's root by star rounds over the whole graph (one partition), and the rounds."""
    a, b = np.minimum(left, right), np.maximum(left, right)
    a, b = a[a != b], b[a != b]
    rounds = 0
    while True:
        rounds += 1
        edges, unsettled = large_star(np.concatenate((a, b)), np.concatenate((b, a)))
        if unsettled == 0:
            break
        a, b = small_star(edges.a, edges.b)
    root = np.arange(n)
    root[edges.b] = edges.a
    return root, rounds


@given(st.data())
def test_rounds_give_the_union_finds_roots(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 60))
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=90))
    left = np.array([p[0] for p in pairs], dtype=np.int64)
    right = np.array([p[1] for p in pairs], dtype=np.int64)
    root, _ = _roots(n, left, right)
    assert root.tolist() == components(n, left, right).tolist()


def test_a_shuffled_chain_of_a_thousand_takes_few_rounds() -> None:
    order = np.random.default_rng(5).permutation(1000)
    left, right = order[:-1], order[1:]
    root, rounds = _roots(1000, left, right)
    assert (root == 0).all()
    assert 3 < rounds < 20  # rounds, not one per link


def test_a_star_on_its_smallest_node_is_settled() -> None:
    centre = np.zeros(5, np.int64)
    leaves = np.arange(1, 6, dtype=np.int64)
    edges, unsettled = large_star(np.concatenate((centre, leaves)), np.concatenate((leaves, centre)))
    assert unsettled == 0
    assert sorted(zip(edges.a.tolist(), edges.b.tolist(), strict=True)) == [(0, k) for k in range(1, 6)]
