"""The compiled hot path equals the plain-Python reference, bit for bit."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import unicodedata
from functools import cache
from itertools import combinations, product
from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from neardup.config import DedupConfig, MinHashConfig, ShingleConfig, TextConfig
from neardup.core.clusters import assign_clusters
from neardup.core.hashing import WINDOW_SCRATCH, splitmix64_stream, xxh64_bytes, xxh64_lanes, xxh64_windows
from neardup.core.lsh import band_keys, build_buckets, candidate_pairs
from neardup.core.minhash import MinHasher, permutations, signature_of_hashes
from neardup.core.shingles import doc_shingles, shingle_hashes, shingle_sets
from neardup.core.text import _table_args, encode_texts, tokenize, tokenizer_flags
from neardup.core.unicode_table import (
    HAS_CANON,
    HAS_COMPAT,
    HAS_LOWER,
    MARK_NONSPACING,
    RECORD_SHIFT,
    build_table,
    classify,
    expand_code_point,
    load_table,
)
from neardup.core.verify import exact_jaccard_pairs
from neardup.pipeline import dedup
from reference import (
    ref_band_key,
    ref_buckets,
    ref_candidate_pairs,
    ref_clusters,
    ref_jaccard,
    ref_permutations,
    ref_shingle_hashes,
    ref_signature,
    ref_splitmix64,
    ref_tokens,
)

TEXT_CONFIGS = [TextConfig(*flags) for flags in product([True, False], repeat=4)]
TABLE_MATCHES = unicodedata.unidata_version == load_table().unidata_version
CLASS_MASK = 0b111  # the low bits of a table entry hold the class

# --- text strategies ---------------------------------------------------------------------------

PIECES = [
    "Hello", "WORLD", "it's", "naïve", "Café", "déjà-vu", "ŒUVRE", "straße", "İstanbul", "ΣΟΦΊΑ",
    "ﬁnance", "Ǆemal", "ⅻ", "①②", "㎏", "ﷺ", "x²", "½", "№",
    "自然语言处理", "日本語のテキスト", "ｶﾀｶﾅ", "ひらがな", "カタカナー", "ภาษาไทย", "สวัสดี", "ພາສາລາວ",
    "한국어", "안녕하세요", "가", "ＡＢＣ", "ａｂｃ１２３", "！？",
    "😀", "👍🏽", "👨\u200d👩\u200d👧", "❤️", "🇫🇷",
    "नमस्ते", "مَرْحَبًا", "שָׁלוֹם", "ខ្មែរ", "မြန်မာ", "e\u0301", "a\u0308\u0323",
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
    " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u1680", "\u2003", "\u2028",
    "\u2029", "\u202f", "\u3000", "\x00", "\x7f",
    ",", ".", "...", "—", "–", "_", "__init__", "«", "»", "“", "”", "¿", "¡", "#", "$", "%", "&", "@",
    "(", ")", "[", "]", "'", '"', "/", "\\", "+", "=", "~", "|", "^", "`", "·", "•", "°", "€", "©",
    "0", "42", "3.14", "1,000", "٣", "၃", "๓",
]  # fmt: skip
ALPHABET = "".join(sorted(set("".join(PIECES)))) + "abcdefxyzABCXYZ"


@cache
def _table_expansion(cp: int, compat: bool, strip: bool, lower: bool) -> list[tuple[int, int]]:
    """What the shipped table says ``cp`` becomes, decoded in Python (for version gating only)."""
    table = load_table()
    entries, records, pool = table.entries, table.records, table.pool
    e = int(entries[cp])
    rec = e >> RECORD_SHIFT
    if compat and e & HAS_COMPAT:
        seq = pool[records[rec, 2] : records[rec, 2] + records[rec, 3]].tolist()
    elif e & HAS_CANON:
        seq = pool[records[rec, 0] : records[rec, 0] + records[rec, 1]].tolist()
    else:
        seq = [cp]
    out = []
    for c2 in seq:
        e2 = int(entries[c2])
        if strip and e2 & CLASS_MASK == MARK_NONSPACING:
            continue
        if lower and e2 & HAS_LOWER:
            r2 = e2 >> RECORD_SHIFT
            low = pool[records[r2, 4] : records[r2, 4] + records[r2, 5]].tolist()
        else:
            low = [c2]
        classes = [(c3, int(entries[c3]) & CLASS_MASK) for c3 in low]
        out += [(c3, k) for c3, k in classes if not (strip and k == MARK_NONSPACING)]
    return out


@cache
def table_agrees(ch: str) -> bool:
    """Whether the shipped table and the running ``unicodedata`` treat ``ch`` alike."""
    cp = ord(ch)
    for compat, strip, lower in product([True, False], repeat=3):
        want = [
            (c, classify(c))
            for c in expand_code_point(cp, compat=compat, strip_accents=strip, lowercase=lower)
        ]
        if _table_expansion(cp, compat, strip, lower) != want:
            return False
    return True


def _agreeing(s: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    if TABLE_MATCHES:
        return s
    return s.map(_keep_agreeing)


def _keep_agreeing(text: str) -> str:
    return text if TABLE_MATCHES else "".join(c for c in text if table_agrees(c))


texts = _agreeing(
    st.lists(
        st.one_of(
            st.sampled_from(PIECES),
            st.text(alphabet=ALPHABET, max_size=8),
            st.text(max_size=4),
        ),
        max_size=14,
    ).map("".join)
)
any_texts = _agreeing(st.text())
text_configs = st.sampled_from(TEXT_CONFIGS)
modes = st.sampled_from(["word", "char"])


# --- the shipped table ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not TABLE_MATCHES, reason="the running Python has another Unicode version")
def test_shipped_table_equals_build_table() -> None:
    shipped, built = load_table(), build_table()
    assert shipped.unidata_version == built.unidata_version
    assert np.array_equal(shipped.entries, built.entries)
    assert np.array_equal(shipped.records, built.records)
    assert np.array_equal(shipped.pool, built.pool)


def test_version_gate_decodes_the_table() -> None:
    # The gate must agree with the definition on characters every Unicode version shares.
    assert all(table_agrees(c) for c in "aZé ,_自ภั한Ａ\u200d\u00ad")


# --- hashing ------------------------------------------------------------------------------------


def test_xxh64_bytes_all_lengths() -> None:
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, size=140, dtype=np.uint8)
    for length in range(101):
        for seed in (0, 1, 2**64 - 1, int(rng.integers(0, 2**63)) * 2 + 1):
            for start in (0, 3):
                got = int(xxh64_bytes(data, start, length, np.uint64(seed)))
                want = xxhash.xxh64_intdigest(data[start : start + length].tobytes(), seed=seed)
                assert got == want, (length, seed, start)


@given(st.binary(max_size=300), st.integers(0, 2**64 - 1))
def test_xxh64_bytes_random(payload: bytes, seed: int) -> None:
    data = np.frombuffer(payload + b"\0", dtype=np.uint8)
    assert int(xxh64_bytes(data, 0, len(payload), np.uint64(seed))) == xxhash.xxh64_intdigest(
        payload, seed=seed
    )


def test_xxh64_lanes_all_counts() -> None:
    rng = np.random.default_rng(8)
    lanes = rng.integers(0, 2**64 - 1, size=110, dtype=np.uint64, endpoint=True)
    for count in range(101):
        for start in (0, 5):
            values = lanes[start : start + count].tolist()
            want = xxhash.xxh64_intdigest(struct.pack(f"<{count}Q", *values))
            assert int(xxh64_lanes(lanes, start, count)) == want, (count, start)
            raw = np.frombuffer(struct.pack(f"<{count}Q", *values) + b"\0", dtype=np.uint8)
            assert int(xxh64_bytes(raw, 0, 8 * count, np.uint64(0))) == want


@njit
def _windows(
    lanes: np.ndarray, start: int, count: int, n: int, out: np.ndarray, pos: int, work: np.ndarray
) -> None:
    xxh64_windows(lanes, start, count, n, out, pos, work)  # a helper: compiled callers only


def test_xxh64_windows_all_sizes() -> None:
    rng = np.random.default_rng(9)
    lanes = rng.integers(0, 2**64 - 1, size=80, dtype=np.uint64, endpoint=True)
    work = rng.integers(0, 2**64 - 1, size=(WINDOW_SCRATCH, 40), dtype=np.uint64, endpoint=True)
    for n in range(1, 14):
        for count in (0, 1, 2, 7, 8, 9, 33, 40):
            for start in (0, 3):
                out = np.full(count + 5, 7, dtype=np.uint64)
                _windows(lanes, start, count, n, out, 2, work)
                want = [
                    xxhash.xxh64_intdigest(struct.pack(f"<{n}Q", *lanes[start + j : start + j + n].tolist()))
                    for j in range(count)
                ]
                assert out[2 : 2 + count].tolist() == want, (n, count, start)
                assert out[:2].tolist() == [7, 7] and out[2 + count :].tolist() == [7, 7, 7]


def test_splitmix64_known_values() -> None:
    # Published SplitMix64 outputs for seed 0 (Vigna's reference implementation).
    assert ref_splitmix64(0, 3) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


@given(st.integers(0, 2**64 - 1), st.integers(1, 64))
def test_permutations_match_reference(seed: int, num_perm: int) -> None:
    a, b = permutations(MinHashConfig(num_perm=num_perm, seed=seed))
    ra, rb = ref_permutations(seed, num_perm)
    assert a.dtype == np.uint64 and b.dtype == np.uint64
    assert a.tolist() == ra
    assert b.tolist() == rb
    assert splitmix64_stream(seed, 2 * num_perm).tolist() == ref_splitmix64(seed, 2 * num_perm)


# --- tokens and shingles -------------------------------------------------------------------------


@settings(max_examples=400)
@given(texts, text_configs, modes)
def test_tokens_match_reference(text: str, cfg: TextConfig, mode: str) -> None:
    assert tokenize(text, cfg, mode) == ref_tokens(text, cfg, mode)


@settings(max_examples=300)
@given(any_texts, text_configs, modes)
def test_tokens_match_reference_any_text(text: str, cfg: TextConfig, mode: str) -> None:
    assert tokenize(text, cfg, mode) == ref_tokens(text, cfg, mode)


@pytest.mark.parametrize(
    "cfg", TEXT_CONFIGS, ids=lambda c: "".join("1" if v else "0" for v in vars(c).values())
)
@pytest.mark.parametrize("mode", ["word", "char"])
def test_tokens_match_reference_on_every_piece(cfg: TextConfig, mode: str) -> None:
    text = _keep_agreeing(" ".join(PIECES) + "".join(PIECES))
    assert tokenize(text, cfg, mode) == ref_tokens(text, cfg, mode)


@given(texts, text_configs, modes, st.integers(1, 7))
def test_shingle_hashes_match_reference(text: str, cfg: TextConfig, mode: str, n: int) -> None:
    scfg = ShingleConfig(mode=mode, n=n)  # type: ignore[arg-type]
    want = ref_shingle_hashes(text, cfg, scfg)
    batch = encode_texts([text])
    raw = doc_shingles(batch.data, 0, int(batch.offsets[1]), *_table_args(), tokenizer_flags(cfg, scfg), n)
    assert raw.tolist() == want  # in text order, repeats kept
    assert shingle_hashes(text, cfg, scfg).tolist() == sorted(set(want))


@given(
    st.lists(texts, max_size=6),
    text_configs,
    modes,
    st.integers(1, 5),
    st.integers(1, 40),
    st.integers(0, 2**64 - 1),
)
def test_signatures_match_reference(
    batch: list[str], cfg: TextConfig, mode: str, n: int, num_perm: int, seed: int
) -> None:
    scfg = ShingleConfig(mode=mode, n=n)  # type: ignore[arg-type]
    hasher = MinHasher(MinHashConfig(num_perm=num_perm, seed=seed), cfg, scfg)
    got = hasher.signatures(batch)
    assert got.dtype == np.uint32
    assert got.shape == (len(batch), num_perm)
    a, b = ref_permutations(seed, num_perm)
    want = [ref_signature(ref_shingle_hashes(t, cfg, scfg), a, b) for t in batch]
    assert got.tolist() == want


@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=50),
    st.integers(1, 64),
    st.integers(0, 2**64 - 1),
)
def test_signature_of_hashes_matches_reference(shingles: list[int], num_perm: int, seed: int) -> None:
    a, b = permutations(MinHashConfig(num_perm=num_perm, seed=seed))
    got = signature_of_hashes(np.array(shingles, dtype=np.uint64), a, b)
    assert got.tolist() == ref_signature(shingles, *ref_permutations(seed, num_perm))


_OTHER_MULTIPLY = """
import json, sys
import numpy as np
from neardup.core.hashing import VECTOR_MULTIPLY64
from neardup.config import MinHashConfig
from neardup.core.minhash import permutations, signature_of_hashes
cases = json.loads(sys.stdin.read())
out = []
for shingles, num_perm, seed in cases:
    a, b = permutations(MinHashConfig(num_perm=num_perm, seed=seed))
    out.append(signature_of_hashes(np.array(shingles, dtype=np.uint64), a, b).tolist())
print(json.dumps({"vector_multiply64": VECTOR_MULTIPLY64, "signatures": out}))
"""


def test_signatures_without_a_vector_multiply64(tmp_path: Path) -> None:
    """The signature kernel has two ways to its products; the host's CPU picks one. The other
    (32-bit products, for CPUs without AVX-512DQ) runs here with that feature turned off."""
    from llvmlite import binding

    features = binding.get_host_cpu_features().flatten().replace("+avx512dq", "-avx512dq")
    rng = np.random.default_rng(11)
    cases = [
        (rng.integers(0, 2**64 - 1, size=size, dtype=np.uint64, endpoint=True).tolist(), num_perm, seed)
        for size, num_perm, seed in [(0, 8, 1), (1, 128, 42), (2, 3, 7), (37, 128, 2**64 - 1), (600, 64, 5)]
    ]
    env = {**os.environ, "NUMBA_CPU_FEATURES": features, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_MULTIPLY],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got["vector_multiply64"] is False
    want = [ref_signature(shingles, *ref_permutations(seed, num_perm)) for shingles, num_perm, seed in cases]
    assert got["signatures"] == want


# --- LSH ------------------------------------------------------------------------------------------


@st.composite
def signature_matrices(draw: st.DrawFn) -> tuple[list[list[int]], int, int, int]:
    """Signatures over a tiny value range, so that bands collide often; with a second layer of
    bands when the shape allows one."""
    rows = draw(st.integers(1, 4))
    per_layer = draw(st.integers(1, 5))
    num_perm = per_layer * rows
    second = draw(st.integers(0, per_layer)) if 2 <= rows <= per_layer else 0
    bands = per_layer + second
    n = draw(st.integers(0, 16))
    values = st.one_of(st.integers(0, 2), st.integers(0, 2**32 - 1))
    sigs = draw(st.lists(st.lists(values, min_size=num_perm, max_size=num_perm), min_size=n, max_size=n))
    return sigs, bands, rows, num_perm


def _matrix(sigs: list[list[int]], width: int) -> np.ndarray:
    return np.array(sigs, dtype=np.uint32).reshape(len(sigs), width)


@given(signature_matrices())
def test_band_keys_match_reference(case: tuple[list[list[int]], int, int, int]) -> None:
    sigs, bands, rows, num_perm = case
    keys = band_keys(_matrix(sigs, num_perm), bands, rows)
    assert keys.shape == (len(sigs), bands)
    assert keys.tolist() == [[ref_band_key(s, j, rows) for j in range(bands)] for s in sigs]


@given(signature_matrices(), st.integers(2, 6), st.data())
def test_candidate_pairs_match_reference(
    case: tuple[list[list[int]], int, int, int], max_bucket_size: int, data: st.DataObject
) -> None:
    sigs, bands, rows, num_perm = case
    eligible = data.draw(st.none() | st.lists(st.booleans(), min_size=len(sigs), max_size=len(sigs)))
    keys = band_keys(_matrix(sigs, num_perm), bands, rows)
    buckets = build_buckets(keys, None if eligible is None else np.array(eligible, dtype=bool))

    got_buckets = {}
    for i in range(len(buckets)):
        members = buckets.members[buckets.offsets[i] : buckets.offsets[i + 1]].tolist()
        got_buckets[(int(buckets.band[i]), int(buckets.key[i]))] = members
    assert len(got_buckets) == len(buckets)  # no (band, key) twice
    assert got_buckets == ref_buckets(sigs, bands, rows, eligible)

    left, right = candidate_pairs(buckets, max_bucket_size)
    assert left.dtype == np.int64 and right.dtype == np.int64
    got = list(zip(left.tolist(), right.tolist(), strict=True))
    assert got == ref_candidate_pairs(sigs, bands, rows, max_bucket_size, eligible)


# --- clusters -------------------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(0, 30))
    if n < 2:
        return n, []
    edge = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1])
    return n, draw(st.lists(edge, max_size=2 * n))


@given(graphs(), st.sampled_from(["first", "longest", "shortest"]), st.data())
def test_clusters_match_reference(
    graph: tuple[int, list[tuple[int, int]]], keep: str, data: st.DataObject
) -> None:
    n, edges = graph
    lengths = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))  # small range: many ties
    left = np.array([e[0] for e in edges], dtype=np.int64)
    right = np.array([e[1] for e in edges], dtype=np.int64)
    got = assign_clusters(n, left, right, keep=keep, lengths=np.array(lengths, dtype=np.int64))  # type: ignore[arg-type]
    cluster, representative, kept = ref_clusters(n, edges, keep, lengths)
    assert got.cluster.tolist() == cluster
    assert got.representative.tolist() == representative
    assert got.keep.tolist() == kept


# --- known gaps -------------------------------------------------------------------------------------


def test_tokenize_lone_surrogate() -> None:
    assert tokenize("a\ud800b", TextConfig(), "word") == ["a\ud800b"]


# --- exact Jaccard and the whole pipeline ------------------------------------------------------------


@settings(max_examples=60)
@given(st.lists(texts, min_size=1, max_size=6), modes, st.integers(1, 4), st.data())
def test_exact_jaccard_matches_reference(batch: list[str], mode: str, n: int, data: st.DataObject) -> None:
    scfg = ShingleConfig(mode=mode, n=n)  # type: ignore[arg-type]
    hasher = MinHasher(MinHashConfig(num_perm=4), TextConfig(), scfg)
    packed = encode_texts(batch)
    _, counts = hasher.signatures_with_counts(packed)
    ref_sets = [ref_shingle_hashes(t, TextConfig(), scfg) for t in batch]
    assert counts.tolist() == [len(s) for s in ref_sets]
    docs = sorted(data.draw(st.sets(st.integers(0, len(batch) - 1), min_size=1)))
    sets = shingle_sets(packed, np.array(docs, dtype=np.int64), counts, TextConfig(), scfg)
    for k, d in enumerate(docs):
        assert sets.get(k).tolist() == sorted(set(ref_sets[d]))
    pairs = list(combinations(docs, 2))
    left = np.array([p[0] for p in pairs], dtype=np.int64)
    right = np.array([p[1] for p in pairs], dtype=np.int64)
    got = exact_jaccard_pairs(sets, len(batch), left, right)
    assert got.tolist() == [ref_jaccard(ref_sets[x], ref_sets[y]) for x, y in pairs]


def _near_copy(text: str, how: int) -> str:
    return [text, text.upper(), text + " !", "  " + text.replace(" ", "  "), text + " extra"][how]


@st.composite
def corpora(draw: st.DrawFn) -> list[str]:
    words = st.lists(
        st.sampled_from(["one", "two", "three", "four", "five", "six", "seven", "eight"]), max_size=12
    )
    bases = draw(st.lists(words.map(" ".join) | texts, min_size=1, max_size=5))
    corpus = list(bases)
    for base in bases:
        corpus += [_near_copy(base, how) for how in draw(st.lists(st.integers(0, 4), max_size=3))]
    return draw(st.permutations(corpus))


@settings(max_examples=60)
@given(
    corpora(),
    st.sampled_from([0.3, 0.5, 0.8, 1.0]),
    st.integers(1, 3),
    st.sampled_from([8, 16, 24]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["first", "longest", "shortest"]),
    st.integers(2, 4),
)
def test_pipeline_matches_reference(
    corpus: list[str],
    threshold: float,
    ngram: int,
    num_perm: int,
    verify: bool,
    match_empty: bool,
    keep: str,
    max_bucket_size: int,
) -> None:
    cfg = DedupConfig.create(
        threshold=threshold,
        ngram=ngram,
        num_perm=num_perm,
        seed=7,
        verify=verify,
        match_empty=match_empty,
        keep=keep,  # type: ignore[arg-type]
        max_bucket_size=max_bucket_size,
    )
    result = dedup(corpus, cfg)
    a, b = ref_permutations(7, num_perm)
    shingles = [ref_shingle_hashes(t, cfg.text, cfg.shingle) for t in corpus]
    sigs = [ref_signature(s, a, b) for s in shingles]
    assert result.signatures.tolist() == sigs
    assert result.shingle_counts.tolist() == [len(s) for s in shingles]

    eligible = [bool(s) for s in shingles]
    candidates = ref_candidate_pairs(sigs, result.bands, result.rows, max_bucket_size, eligible)
    assert result.candidate_count == len(candidates)
    if verify:
        edges = [(x, y) for x, y in candidates if ref_jaccard(shingles[x], shingles[y]) >= threshold]
    else:
        edges = candidates
    if match_empty:
        empty = [i for i, s in enumerate(shingles) if not s]
        edges += [(empty[0], e) for e in empty[1:]]
    assert list(zip(result.pairs.left.tolist(), result.pairs.right.tolist(), strict=True)) == edges

    cluster, representative, kept = ref_clusters(len(corpus), edges, keep, [len(t) for t in corpus])
    assert result.clusters.cluster.tolist() == cluster
    assert result.clusters.representative.tolist() == representative
    assert result.keep.tolist() == kept


def test_xxh64_bytes_with_a_plain_int_seed() -> None:
    data = np.frombuffer(b"hello world", dtype=np.uint8)
    seed = 0  # a plain int, against the annotation: the point of this test
    assert int(xxh64_bytes(data, 0, 11, seed)) == xxhash.xxh64_intdigest(b"hello world")  # type: ignore[arg-type]
