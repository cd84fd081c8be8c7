"""Buckets, candidate pairs and the star rule on concrete examples."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.core.lsh import band_keys, build_buckets, candidate_pairs


def _sigs(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.uint32)


def _pairs(left: np.ndarray, right: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(left.tolist(), right.tolist(), strict=True))


def test_band_keys_shape_check() -> None:
    with pytest.raises(ValueError, match="bands \\* rows"):
        band_keys(_sigs([[1, 2, 3]]), 2, 2)


def test_build_buckets_excludes_ineligible_documents() -> None:
    sigs = _sigs([[7, 7, 7, 7]] * 4)
    keys = band_keys(sigs, 2, 2)
    buckets = build_buckets(keys, eligible=np.array([True, False, True, True]))
    assert len(buckets) == 2
    assert buckets.band.tolist() == [0, 1]
    assert buckets.sizes().tolist() == [3, 3]
    assert buckets.members.tolist() == [0, 2, 3, 0, 2, 3]
    assert buckets.key.tolist() == keys[0].tolist()


def test_build_buckets_with_nothing_eligible() -> None:
    keys = band_keys(_sigs([[1, 1]] * 3), 2, 1)
    buckets = build_buckets(keys, eligible=np.zeros(3, dtype=bool))
    assert len(buckets) == 0
    assert buckets.offsets.tolist() == [0]
    left, right = candidate_pairs(buckets, 10)
    assert left.size == right.size == 0


def test_single_members_make_no_bucket() -> None:
    keys = band_keys(_sigs([[1, 2], [3, 4], [1, 5]]), 2, 1)
    buckets = build_buckets(keys)
    assert len(buckets) == 1  # only band 0 has a shared value
    assert buckets.band.tolist() == [0]
    assert buckets.members.tolist() == [0, 2]
    assert _pairs(*candidate_pairs(buckets, 10)) == [(0, 2)]


def _star_case() -> np.ndarray:
    # doc 0 is alone; docs 1..5 agree everywhere
    return _sigs([[9, 9]] + [[1, 2]] * 5)


@pytest.mark.parametrize("max_bucket_size", [2, 3, 4])
def test_star_rule_for_big_buckets(max_bucket_size: int) -> None:
    buckets = build_buckets(band_keys(_star_case(), 1, 2))
    assert buckets.sizes().tolist() == [5]
    pairs = _pairs(*candidate_pairs(buckets, max_bucket_size))
    assert pairs == [(1, 2), (1, 3), (1, 4), (1, 5)]  # size - 1 pairs, all from the smallest member


def test_bucket_at_the_limit_yields_all_pairs() -> None:
    buckets = build_buckets(band_keys(_star_case(), 1, 2))
    pairs = _pairs(*candidate_pairs(buckets, 5))
    assert pairs == [(i, j) for i in range(1, 6) for j in range(i + 1, 6)]


def test_pairs_are_unique_across_bands_and_sorted() -> None:
    sigs = _sigs([[1, 1, 1], [2, 2, 2], [1, 1, 1], [2, 2, 9], [1, 5, 1]])
    buckets = build_buckets(band_keys(sigs, 3, 1))
    pairs = _pairs(*candidate_pairs(buckets, 10))
    assert pairs == [(0, 2), (0, 4), (1, 3), (2, 4)]


def test_buckets_grouped_on_threads_are_the_ones_grouped_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from neardup.core import lsh
    from neardup.core.jit import threads

    if threads() < 2:
        pytest.skip("one core: the bands are grouped on this thread")
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 30_000, size=(20_000, 9)).astype(np.uint64)  # many collisions per band
    keys[:, 4] = 7  # one band where all collide
    eligible = rng.random(20_000) > 0.05
    threaded = lsh.build_buckets(keys, eligible=eligible)
    monkeypatch.setattr(lsh, "_PARALLEL_BUCKETS_FROM", 10**9)
    serial = lsh.build_buckets(keys, eligible=eligible)
    assert len(threaded) == len(serial) > 1000
    for name in ("band", "key", "offsets", "members"):
        assert np.array_equal(getattr(threaded, name), getattr(serial, name)), name
