"""Buckets, candidate pairs and the star rule on concrete examples."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core.lsh import (
    Buckets,
    _distinct_buckets,
    band_keys,
    build_buckets,
    candidate_pair_pieces,
    candidate_pairs,
    unpack_pairs,
)


def _sigs(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.uint32)


def _pairs(left: np.ndarray, right: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(left.tolist(), right.tolist(), strict=True))


def test_band_keys_shape_check() -> None:
    with pytest.raises(ValueError, match="bands \\* rows must equal num_perm"):
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


def _brute_pairs(buckets: Buckets, max_bucket_size: int) -> list[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    for b in range(len(buckets)):
        members = buckets.members[buckets.offsets[b] : buckets.offsets[b + 1]].tolist()
        if len(members) <= max_bucket_size:
            found.update(itertools.combinations(members, 2))
        else:
            found.update((members[0], m) for m in members[1:])
    return sorted(found)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(2, 200),
    bands=st.integers(1, 5),
    distinct_keys=st.integers(1, 30),
    copies_in_every_band=st.booleans(),
    max_bucket_size=st.integers(2, 40),
    piece_pairs=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_pairs_in_pieces_are_every_bucket_pair_once(
    n: int,
    bands: int,
    distinct_keys: int,
    copies_in_every_band: bool,
    max_bucket_size: int,
    piece_pairs: int,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, distinct_keys, size=(n, bands)).astype(np.uint64)
    if copies_in_every_band:  # the same buckets in every band, as exact copies make them
        keys[:, 1:] = keys[:, :1]
    buckets = build_buckets(keys)
    pieces = list(candidate_pair_pieces(buckets, max_bucket_size, piece_pairs))
    packed = np.concatenate(pieces) if pieces else np.empty(0, np.uint64)
    assert np.all(np.diff(packed.astype(np.int64)) > 0)  # ascending across pieces, no repeats
    left, right = candidate_pairs(buckets, max_bucket_size, piece_pairs=piece_pairs)
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == _brute_pairs(buckets, max_bucket_size)
    assert np.array_equal(unpack_pairs(packed)[0], left)


def test_pieces_hold_a_bounded_number_of_pairs() -> None:
    """A piece enumerates about piece_pairs pairs with repeats, whatever the duplicates: 400
    copies of one document fill the same bucket in 8 bands, 79,800 pairs each."""
    keys = np.zeros((400, 8), dtype=np.uint64)
    buckets = build_buckets(keys)
    sizes = [p.size for p in candidate_pair_pieces(buckets, 1000, piece_pairs=5000)]
    assert sum(sizes) == 400 * 399 // 2
    assert max(sizes) <= 5000 and len(sizes) >= 16


def test_on_piece_sees_the_pairs_found_so_far_and_can_stop_the_run() -> None:
    buckets = build_buckets(np.zeros((100, 2), dtype=np.uint64))
    seen: list[int] = []

    def stop_after_two(found: int) -> None:
        seen.append(found)
        if len(seen) == 2:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        candidate_pairs(buckets, 1000, piece_pairs=1000, on_piece=stop_after_two)
    assert seen[0] < seen[1] <= 2000


@settings(max_examples=300)
@given(st.lists(st.lists(st.integers(0, 6), min_size=2, max_size=5, unique=True), max_size=60))
def test_distinct_buckets_marks_each_repeated_member_list_after_its_first(lists: list[list[int]]) -> None:
    """A bucket is distinct when no earlier bucket has the same members (few ids: many repeats,
    and hash-table collisions between lists that differ)."""
    buckets = [sorted(m) for m in lists]
    offsets = np.zeros(len(buckets) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in buckets], out=offsets[1:])
    members = np.array([x for m in buckets for x in m], dtype=np.int64)
    seen: set[tuple[int, ...]] = set()
    want = []
    for m in buckets:
        want.append(tuple(m) not in seen)
        seen.add(tuple(m))
    assert _distinct_buckets(offsets, members).tolist() == want


def _pairs_at_0_8(count: int) -> list[str]:
    """``count`` pairs of texts whose word sets have Jaccard 89 / 111 = 0.80: 100 words, and the
    same with 11 of them replaced by new ones."""
    rng = np.random.default_rng(3)
    texts = []
    for p in range(count):
        words = [f"w{p}x{i}" for i in range(111)]
        order = rng.permutation(111)
        a = [words[i] for i in order[:100]]
        b = [words[i] for i in order[:89]] + [words[i] for i in order[100:]]
        texts += [" ".join(a), " ".join(b)]
    return texts


@pytest.mark.parametrize("sketch", ["stratified", "classic"])
def test_a_second_layer_finds_pairs_at_the_threshold_that_one_layer_misses(sketch: str) -> None:
    from neardup import DedupConfig, signatures

    sigs = signatures(_pairs_at_0_8(600), DedupConfig.create(ngram=1, sketch=sketch))  # type: ignore[arg-type]
    one, two = band_keys(sigs, 16, 8), band_keys(sigs, 32, 8)
    assert (two[:, :16] == one).all()  # the first layer is the one-layer shape's bands
    missed_one = int((one[0::2] != one[1::2]).all(axis=1).sum())
    missed_two = int((two[0::2] != two[1::2]).all(axis=1).sum())
    # one layer of 16 x 8 misses about 1 - 0.8**8 to the 16th = 5% of them; two about 0.3%
    assert missed_one >= 12
    assert missed_two * 4 <= missed_one
