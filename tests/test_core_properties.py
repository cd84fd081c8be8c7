"""Properties the product promises: determinism, estimate accuracy, sound clusters."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neardup.config import DedupConfig, MinHashConfig, ShingleConfig, TextConfig
from neardup.core.clusters import assign_clusters
from neardup.core.minhash import MinHasher, estimate_jaccard, permutations, signature_of_hashes
from neardup.core.text import encode_texts
from neardup.pipeline import DedupResult, dedup
from reference import ref_components

SENTENCES = [
    "the quick brown fox jumps over the lazy dog near the river bank this morning",
    "a journey of a thousand miles begins with a single step taken in the right direction",
    "near duplicate detection with minhash and locality sensitive hashing scales to billions of documents",
    "she sells sea shells by the sea shore and the shells she sells are surely sea shells",
    "all happy families are alike but every unhappy family is unhappy in its own way",
    "it was the best of times it was the worst of times it was the age of wisdom",
]
FILLER = ["indeed", "really", "today", "again", "quite", "very", "also", "still"]

words = st.lists(st.sampled_from([*FILLER, "alpha", "beta", "gamma", "delta"]), min_size=0, max_size=30)
sentences = words.map(" ".join) | st.sampled_from(SENTENCES)


# --- determinism -------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    st.lists(sentences | st.text(max_size=40), min_size=1, max_size=8),
    st.integers(1, 64),
    st.integers(0, 2**64 - 1),
    st.sampled_from(["word", "char"]),
    st.integers(1, 5),
)
def test_signatures_are_deterministic_and_batch_independent(
    texts: list[str], num_perm: int, seed: int, mode: str, n: int
) -> None:
    mh = MinHashConfig(num_perm=num_perm, seed=seed)
    shingle = ShingleConfig(mode=mode, n=n)  # type: ignore[arg-type]
    one = MinHasher(mh, TextConfig(), shingle)
    two = MinHasher(MinHashConfig(num_perm=num_perm, seed=seed), TextConfig(), ShingleConfig(mode=mode, n=n))  # type: ignore[arg-type]
    batch = one.signatures(texts)
    assert np.array_equal(batch, two.signatures(texts))
    assert np.array_equal(batch, one.signatures(encode_texts(texts)))
    alone = np.vstack([one.signatures([t]) for t in texts])
    assert np.array_equal(batch, alone)
    reordered = two.signatures(texts[::-1])
    assert np.array_equal(batch[::-1], reordered)
    # a sub-batch of a bigger buffer (as the pipeline chunks it) gives the same rows
    packed = encode_texts(texts)
    half = len(texts) // 2
    sub = type(packed)(packed.data, packed.offsets[half:])
    assert np.array_equal(one.signatures(sub), batch[half:])


@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.randoms(use_true_random=False))
def test_signature_ignores_shingle_order_and_repeats(shingles: list[int], rnd: random.Random) -> None:
    a, b = permutations(MinHashConfig(num_perm=32, seed=5))
    base = signature_of_hashes(np.array(shingles, dtype=np.uint64), a, b)
    shuffled = shingles * 2
    rnd.shuffle(shuffled)
    assert np.array_equal(base, signature_of_hashes(np.array(shuffled, dtype=np.uint64), a, b))


def test_seeds_make_different_permutations() -> None:
    a1, b1 = permutations(MinHashConfig(num_perm=64, seed=1))
    a2, b2 = permutations(MinHashConfig(num_perm=64, seed=2))
    assert not np.array_equal(a1, a2) and not np.array_equal(b1, b2)
    assert np.all(a1 & np.uint64(1) == 1)  # multipliers are odd
    assert np.unique(a1).size == 64


# --- estimate accuracy --------------------------------------------------------------------------------


def _sets_with_jaccard(rng: random.Random, shared: int, only_a: int, only_b: int) -> tuple[np.ndarray, ...]:
    values: set[int] = set()
    while len(values) < shared + only_a + only_b:
        values.add(rng.getrandbits(64))
    pool = list(values)
    common, xa, xb = pool[:shared], pool[shared : shared + only_a], pool[shared + only_a :]
    return np.array(common + xa, dtype=np.uint64), np.array(common + xb, dtype=np.uint64)


def test_minhash_estimate_within_four_sigma() -> None:
    rng = random.Random(20240501)
    errors: list[float] = []
    variances: list[float] = []
    beyond = []
    for trial in range(400):
        num_perm = rng.choice([64, 128, 256])
        union = rng.randint(10, 400)
        jaccard_target = rng.uniform(0.15, 0.85)
        shared = max(1, min(union - 1, round(jaccard_target * union)))
        only_a = rng.randint(0, union - shared)
        set_a, set_b = _sets_with_jaccard(rng, shared, only_a, union - shared - only_a)
        j = shared / union
        a, b = permutations(MinHashConfig(num_perm=num_perm, seed=rng.getrandbits(64)))
        est = estimate_jaccard(signature_of_hashes(set_a, a, b), signature_of_hashes(set_b, a, b))
        var = j * (1 - j) / num_perm
        assert abs(est - j) <= 6 * math.sqrt(var), (trial, j, est, num_perm, union)
        if abs(est - j) > 4 * math.sqrt(var):
            beyond.append((trial, j, est, num_perm, union))
        errors.append(est - j)
        variances.append(var)
    # A binomial count of 64 draws leaves 4 sigma with probability up to ~6e-5 (heavier
    # tails than the normal), so a correct MinHash may do so once in 400 trials; three
    # times has odds of about 1e-6.
    assert len(beyond) <= 2, beyond
    # and no bias: the mean error is within 4 sigma of its own spread
    assert abs(sum(errors) / len(errors)) <= 4 * math.sqrt(sum(variances)) / len(errors)


def test_minhash_extremes() -> None:
    rng = random.Random(3)
    a, b = permutations(MinHashConfig(num_perm=128, seed=11))
    same, _ = _sets_with_jaccard(rng, 50, 0, 0)
    x, y = _sets_with_jaccard(rng, 0, 60, 60)
    assert estimate_jaccard(signature_of_hashes(same, a, b), signature_of_hashes(same[::-1], a, b)) == 1.0
    assert estimate_jaccard(signature_of_hashes(x, a, b), signature_of_hashes(y, a, b)) == 0.0


# --- clusters ------------------------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(1, 40))
    edge = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1])
    return n, draw(st.lists(edge, max_size=n) if n > 1 else st.just([]))


@given(graphs(), st.sampled_from(["first", "longest", "shortest"]), st.data())
def test_clusters_are_connected_components(
    graph: tuple[int, list[tuple[int, int]]], keep: str, data: st.DataObject
) -> None:
    n, edges = graph
    lengths = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64)
    c = assign_clusters(
        n,
        np.array([e[0] for e in edges], dtype=np.int64),
        np.array([e[1] for e in edges], dtype=np.int64),
        keep=keep,  # type: ignore[arg-type]
        lengths=lengths,
    )
    for x, y in edges:  # transitivity follows from every edge landing in one cluster
        assert c.cluster[x] == c.cluster[y] >= 0
        assert c.representative[x] == c.representative[y]
    got = {frozenset(g.tolist()) for g in c.groups()}
    want = {comp for comp in ref_components(n, edges) if len(comp) >= 2}
    assert got == want
    for group in c.groups():
        rep = c.representative[group[0]]
        assert rep in group
        assert c.keep[group].sum() == 1 and c.keep[rep]
    assert c.keep[c.cluster < 0].all()


# --- input order ---------------------------------------------------------------------------------------


def _variant(base: str, rnd: random.Random) -> str:
    tokens = base.split()
    for _ in range(rnd.randint(0, 2)):
        op = rnd.randrange(5)
        i = rnd.randrange(len(tokens))
        if op == 0 and len(tokens) > 3:
            del tokens[i]
        elif op == 1:
            tokens.insert(i, rnd.choice(FILLER))
        elif op == 2:
            tokens[i] = tokens[i].upper()
        elif op == 3:
            tokens[i] += rnd.choice([",", ".", "!", "?"])
        else:
            tokens[i] = rnd.choice(FILLER)
    return " ".join(tokens)


@st.composite
def corpora(draw: st.DrawFn) -> list[str]:
    rnd = draw(st.randoms(use_true_random=False))
    bases = draw(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4, unique=True))
    corpus = [_variant(base, rnd) for base in bases for _ in range(draw(st.integers(1, 4)))]
    corpus += draw(st.lists(st.sampled_from(["", "!!!", "unrelated words here", "x"]), max_size=3))
    return corpus


def _clusters_as_texts(result: DedupResult, texts: list[str]) -> Counter[tuple[str, ...]]:
    return Counter(tuple(sorted(texts[i] for i in group)) for group in result.clusters.groups())


@settings(max_examples=60)
@given(
    corpora(),
    st.data(),
    st.sampled_from([0.3, 0.5, 0.7]),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["first", "longest"]),
)
def test_input_order_changes_no_cluster(
    corpus: list[str],
    data: st.DataObject,
    threshold: float,
    ngram: int,
    verify: bool,
    match_empty: bool,
    keep: str,
) -> None:
    cfg = DedupConfig.create(
        threshold=threshold,
        ngram=ngram,
        num_perm=64,
        verify=verify,
        match_empty=match_empty,
        keep=keep,  # type: ignore[arg-type]
        max_bucket_size=8,
    )
    shuffled = data.draw(st.permutations(corpus))
    before, after = dedup(corpus, cfg), dedup(shuffled, cfg)
    for r in (before, after):
        assume(r.buckets.sizes().max(initial=0) <= cfg.lsh.max_bucket_size)
    assert _clusters_as_texts(before, corpus) == _clusters_as_texts(after, shuffled)
    assert int(before.keep.sum()) == int(after.keep.sum())
