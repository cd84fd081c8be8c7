"""The one-pass tokeniser kernel (``neardup.core.scan``) at its edges.

The reference tests draw short texts; these cover what they rarely reach: tokens
longer than one XXH64 lane or stripe, documents with more tokens than the token
buffer and more shingles than one signature fold, normalisation that makes more
tokens than bytes, raw UTF-8 buffers (malformed bytes, documents cut inside a
character), the thread pool and its size, and the number of compiled variants.
"""

from __future__ import annotations

import itertools
import random
import string
import subprocess
import sys
from collections.abc import Callable

import numba
import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.config import MinHashConfig, ShingleConfig, TextConfig
from neardup.core import jit, scan
from neardup.core.minhash import MinHasher, permutations, signature_of_hashes
from neardup.core.shingles import doc_shingles, shingle_hashes, shingle_sets
from neardup.core.text import TextBatch, _table_args, encode_texts, tokenize, tokenizer_flags
from reference import (
    ref_combine,
    ref_digest,
    ref_permutations,
    ref_shingle_hashes,
    ref_signature,
    ref_tokens,
)

WORD_PIECES = ["a", "é", "ß", "ж", "中", "😀", "x1", "Ｑ", "ﬁ", "İ", "ǅ"]


def _long_words(rng: random.Random, count: int) -> list[str]:
    """Words of every length from 1 to ~100 bytes, ASCII and mixed, so lanes and
    stripes end in the middle of multi-byte characters too."""
    out = []
    for length in range(1, count + 1):
        if length % 3:
            out.append("".join(rng.choice("abcdefghijKLMNOP0123") for _ in range(length)))
        else:
            out.append("".join(rng.choice(WORD_PIECES) for _ in range(max(1, length // 2))))
    return out


def _ref_doc_shingles(text: str, text_cfg: TextConfig, shingle_cfg: ShingleConfig) -> list[int]:
    batch = encode_texts([text])
    flags = tokenizer_flags(text_cfg, shingle_cfg)
    return doc_shingles(batch.data, 0, int(batch.offsets[1]), *_table_args(), flags, shingle_cfg.n).tolist()


def test_space_token_hash() -> None:
    assert int(scan.SPACE_TOKEN_HASH) == xxhash.xxh64_intdigest(b" ")


@pytest.mark.parametrize("lowercase", [True, False])
def test_long_tokens(lowercase: bool) -> None:
    cfg = TextConfig(lowercase=lowercase)
    words = _long_words(random.Random(3), 100)
    text = " ".join(words)
    assert tokenize(text, cfg) == ref_tokens(text, cfg)
    for n in (1, 2, 5):
        scfg = ShingleConfig(n=n)
        assert _ref_doc_shingles(text, cfg, scfg) == ref_shingle_hashes(text, cfg, scfg)
    # every word alone: a token's hash is XXH64 of its normalised bytes, whatever its length
    for word in words:
        got = shingle_hashes(word, cfg, ShingleConfig(n=1)).tolist()
        assert got == sorted(
            {ref_combine([xxhash.xxh64_intdigest(t.encode("utf-8"))]) for t in ref_tokens(word, cfg)}
        )


@pytest.mark.parametrize(
    ("mode", "n"), [("word", 1), ("word", 2), ("word", 3), ("word", 4), ("word", 7), ("char", 3)]
)
def test_long_documents(mode: str, n: int) -> None:
    # more tokens than the token buffer holds, more shingles than one signature fold
    rng = random.Random(n)
    vocab = ["alpha", "beta", "gamma", "δέλτα", "自然", "x", "longerwordthaneightbytes", "ＡＢＣ", "e\u0301"]
    texts = [" ".join(rng.choice(vocab) for _ in range(k)) for k in (1500, 3001, 700)]
    scfg = ShingleConfig(mode=mode, n=n)  # type: ignore[arg-type]
    tcfg = TextConfig()
    refs = [ref_shingle_hashes(t, tcfg, scfg) for t in texts]
    for text, ref in zip(texts, refs, strict=True):
        assert _ref_doc_shingles(text, tcfg, scfg) == ref
    a, b = ref_permutations(5, 19)
    for sketch in ("stratified", "classic"):
        hasher = MinHasher(MinHashConfig(num_perm=19, seed=5, sketch=sketch), tcfg, scfg)
        digests = np.zeros(len(texts), dtype=np.uint64)
        sigs, counts = hasher.signatures_with_counts(encode_texts(texts), digests=digests)
        assert sigs.tolist() == [ref_signature(r, a, b, sketch) for r in refs]
        assert counts.tolist() == [len(r) for r in refs]
        assert digests.tolist() == [ref_digest(r) for r in refs]
    sets = shingle_sets(encode_texts(texts), np.arange(3), counts, tcfg, scfg)
    for k, ref in enumerate(refs):
        assert sets.get(k).tolist() == sorted(set(ref))


def test_normalisation_that_makes_more_tokens_than_bytes() -> None:
    text = "ﷺ" * 40 + " ﷺ x"  # one 3-byte code point, 18 code points (3 of them spaces) under NFKC
    for mode in ("word", "char"):
        assert tokenize(text, TextConfig(), mode) == ref_tokens(text, TextConfig(), mode)
        scfg = ShingleConfig(mode=mode, n=2)  # type: ignore[arg-type]
        assert _ref_doc_shingles(text, TextConfig(), scfg) == ref_shingle_hashes(text, TextConfig(), scfg)


@pytest.mark.parametrize(
    "text",
    [
        "\u1100\u1161\u11a8",  # L V T
        "\u1100\u1161",  # L V
        "\u1100\u11a8",  # L T: no syllable
        "\uac00\u11a8 \uac01\u11a8",  # LV + T composes; LVT + T does not
        "\u1100",  # L at the end of the text
        "\u1100\u1161\u11a8\u11a8",
        "한\u1100\u1161",
    ],
)
def test_hangul_jamo(text: str) -> None:
    for mode in ("word", "char"):
        assert tokenize(text, TextConfig(), mode) == ref_tokens(text, TextConfig(), mode)


def test_truncated_jamo_at_the_end_of_a_document() -> None:
    # the next document starts right after a leading consonant: it is not read into it
    texts = ["\u1100", "\u1161 b", "\uac00", "\u11a8"]
    scfg = ShingleConfig(n=1)
    hasher = MinHasher(MinHashConfig(num_perm=8), TextConfig(), scfg)
    a, b = ref_permutations(MinHashConfig().seed, 8)
    want = [ref_signature(ref_shingle_hashes(t, TextConfig(), scfg), a, b) for t in texts]
    assert hasher.signatures(texts).tolist() == want


@pytest.mark.parametrize("num_perm", [1, 7, 8, 9, 130, 257])
def test_signature_widths(num_perm: int) -> None:
    # the permutations are padded to a multiple of 8 inside; the padding never shows
    texts = ["the quick brown fox", "jumps over the lazy dog", ""]
    hasher = MinHasher(MinHashConfig(num_perm=num_perm, seed=11))
    sigs = hasher.signatures(texts)
    a, b = ref_permutations(11, num_perm)
    assert sigs.shape == (3, num_perm)
    assert sigs.tolist() == [ref_signature(ref_shingle_hashes(t), a, b) for t in texts]
    xs = np.array([1, 2**63, 2**64 - 1, 12345], dtype=np.uint64)
    pa, pb = permutations(MinHashConfig(num_perm=num_perm, seed=11))
    assert signature_of_hashes(xs, pa, pb).tolist() == ref_signature(xs.tolist(), a, b)


def test_parallel_path_equals_serial_path() -> None:
    rng = random.Random(0)
    vocab = ["one", "two", "three", "四", "五", "sechs", "SIEBEN", "acht"]
    # sorted by length, so that a contiguous split would give one thread all the long ones
    texts = sorted(
        (" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 400))) for _ in range(300)), key=len
    )
    assert len(texts) >= scan.SERIAL_BELOW
    for mode in ("word", "char"):
        hasher = MinHasher(MinHashConfig(num_perm=32), shingle=ShingleConfig(mode=mode, n=3))  # type: ignore[arg-type]
        batch = encode_texts(texts)
        sigs, counts = hasher.signatures_with_counts(batch)
        one_by_one = np.vstack([hasher.signatures([t]) for t in texts])
        assert np.array_equal(sigs, one_by_one)
        docs = np.arange(0, len(texts), 2)
        sets = shingle_sets(batch, docs, counts, TextConfig(), hasher.shingle)
        for k, d in enumerate(docs.tolist()):
            assert sets.get(k).tolist() == shingle_hashes(texts[d], TextConfig(), hasher.shingle).tolist()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")  # type: ignore[attr-defined]
def test_numba_thread_count_sets_the_thread_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``neardup dedup --workers N`` calls numba.set_num_threads(N); the kernels' thread pool follows it
    seen: list[int] = []
    real_in_threads = scan.in_threads

    def spy(task: Callable[[int], object], parts: int) -> None:
        seen.append(parts)
        real_in_threads(task, parts)

    monkeypatch.setattr(scan, "in_threads", spy)
    texts = ["some words here"] * 200
    before = numba.get_num_threads()
    try:
        for workers in (1, 2):
            numba.set_num_threads(workers)
            MinHasher().signatures(texts)
            assert seen[-1] == workers
            ranges: list[tuple[int, int]] = []
            jit.in_ranges(lambda lo, hi, out=ranges: out.append((lo, hi)), 1000, serial_below=10)
            want = [(0, 1000)] if workers == 1 else [(0, 500), (500, 1000)]
            assert sorted(ranges) == want
    finally:
        numba.set_num_threads(before)


def test_writable_and_readonly_text_buffers_agree() -> None:
    texts = ["some text here", "and some more text"]
    batch = encode_texts(texts)
    writable = batch._replace(data=batch.data.copy(), offsets=batch.offsets.copy())
    assert writable.data.flags.writeable
    hasher = MinHasher()
    assert np.array_equal(hasher.signatures(batch), hasher.signatures(writable))


_COMPILED_VARIANTS = """
import numpy as np
from neardup.config import ShingleConfig, TextConfig
from neardup.core import jit, scan
from neardup.core.minhash import MinHasher
from neardup.core.shingles import shingle_hashes, shingle_sets
from neardup.core.text import encode_texts, tokenize
from neardup.pipeline import dedup

texts = ["hello world", "", "自然语言"]
MinHasher().signatures(texts)
MinHasher().signatures(texts * 30)
batch = encode_texts(texts)
_, counts = MinHasher().signatures_with_counts(batch)
shingle_sets(batch, np.arange(3), counts, TextConfig(), ShingleConfig())
shingle_hashes("hello world")
tokenize("hello world")
dedup(["a b c", "a b c d", "x"])
print(len(scan.scan_part.signatures))
for dispatcher in (scan.scan_part, scan._flush, scan.sort_unique):
    for sig in dispatcher.signatures:
        assert "Literal" not in str(sig), (dispatcher, sig)
"""


def test_one_compiled_tokeniser() -> None:
    # Compile time: every use shares one compiled scan_part (plus one that records token
    # bytes, for tokenize), and no compiled function gets a variant for a literal
    # argument. A fresh interpreter, so that only these calls count.
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILED_VARIANTS], capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["2"]


# --- raw UTF-8 buffers against the reference ------------------------------------------------------
#
# The reference works on Python strings; the tokeniser reads bytes, cut anywhere (Arrow buffers are
# not checked UTF-8, and a batch's documents sit back to back in one buffer). ``ref_decode`` is how
# the tokeniser reads bytes, so the reference applies to any buffer and any cut.


def ref_decode(raw: bytes) -> str:
    """``raw`` as the tokeniser decodes it: each byte that does not start a well-formed UTF-8
    sequence of at most ``len(raw)`` bytes is one U+FFFD (encoded surrogates are read as such)."""
    out = []
    p, end = 0, len(raw)

    def cont(k: int) -> bool:
        return p + k < end and all(raw[p + i] & 0xC0 == 0x80 for i in range(1, k + 1))

    while p < end:
        b0, cp, size = raw[p], 0xFFFD, 1
        if b0 < 0x80:
            cp = b0
        elif 0xC2 <= b0 <= 0xDF and cont(1):
            cp, size = ((b0 & 0x1F) << 6) | (raw[p + 1] & 0x3F), 2
        elif 0xE0 <= b0 <= 0xEF and cont(2):
            c = ((b0 & 0x0F) << 12) | ((raw[p + 1] & 0x3F) << 6) | (raw[p + 2] & 0x3F)
            if c >= 0x800:
                cp, size = c, 3
        elif 0xF0 <= b0 <= 0xF4 and cont(3):
            c = ((b0 & 0x07) << 18) | ((raw[p + 1] & 0x3F) << 12) | ((raw[p + 2] & 0x3F) << 6)
            c |= raw[p + 3] & 0x3F
            if 0x10000 <= c <= 0x10FFFF:
                cp, size = c, 4
        out.append(chr(cp))
        p += size
    return "".join(out)


def test_ref_decode_agrees_with_python_on_valid_utf8() -> None:
    text = "aé中😀\ud800한\u1100\u1161"
    assert ref_decode(text.encode("utf-8", "surrogatepass")) == text
    assert ref_decode(b"\xc3") == "\ufffd"  # cut inside a character
    assert ref_decode(b"\xe4\xb8") == "\ufffd\ufffd"
    assert ref_decode(b"\xc0\xaf\xe0\x80\xaf") == "\ufffd" * 5  # overlong forms
    assert ref_decode(b"\xf4\x90\x80\x80") == "\ufffd" * 4  # past U+10FFFF


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


JAMO = "\u1100\u1112\u1161\u1175\u11a8\u11c2\uac00\uac01\ud7a3\u1100\u1161"
MIXED = "aé中한ß\u0301Ｑﬁ\u0308İǅ😀ภั\u200d"
SCRIPTS = "自然语言ひらがなカタカナภาษาไทย한국어안녕ＡＢＣａｂｃ１２３नमस्ते"
chunks = st.one_of(
    st.binary(max_size=4),  # malformed bytes, stray continuation bytes
    st.sampled_from([b"\xed\xa0\x80", b"\xc3", b"\xe4\xb8", b"\xf0\x9f\x98", b"\xe1\x84"]),  # cut chars
    st.text(max_size=6).map(_utf8),  # any code point
    st.text(alphabet=JAMO, min_size=1, max_size=6).map(_utf8),  # conjoining jamo, in any order
    st.text(alphabet=MIXED + SCRIPTS, min_size=1, max_size=12).map(_utf8),
    st.text(alphabet="abcXYZ019_.-'", min_size=7, max_size=70).map(_utf8),  # long ASCII words
    st.text(alphabet=MIXED, min_size=9, max_size=40).map(_utf8),  # long words, multi-byte
    st.sampled_from([b" ", b"  ", b"\n", b", ", b"\t", b". "]),
)


@st.composite
def raw_batches(draw: st.DrawFn, max_docs: int = 12) -> tuple[bytes, list[int]]:
    """A buffer and the offsets of the documents in it, cut at arbitrary bytes."""
    blob = b"".join(draw(st.lists(chunks, max_size=6 * max_docs)))
    cuts = draw(st.lists(st.integers(0, len(blob)), max_size=max_docs - 1))
    return blob, [0, *sorted(cuts), len(blob)]


def _ref_raw_shingles(text: str, cfg: TextConfig, scfg: ShingleConfig) -> list[int]:
    """``ref_shingle_hashes``, with lone surrogates hashed as the bytes that encode them."""
    hashes = [xxhash.xxh64_intdigest(_utf8(t)) for t in ref_tokens(text, cfg, scfg.mode)]
    if len(hashes) < scfg.n:
        return [ref_combine(hashes)] if hashes else []
    return [ref_combine(hashes[i : i + scfg.n]) for i in range(len(hashes) - scfg.n + 1)]


def _batch(blob: bytes, offsets: list[int]) -> TextBatch:
    return TextBatch(np.frombuffer(blob + b"\0", dtype=np.uint8), np.array(offsets, dtype=np.int64))


def _check_raw_batch(
    blob: bytes, offsets: list[int], cfg: TextConfig, scfg: ShingleConfig, num_perm: int, seed: int
) -> None:
    docs = [blob[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
    texts = [ref_decode(d) for d in docs]
    refs = [_ref_raw_shingles(t, cfg, scfg) for t in texts]
    batch = _batch(blob, offsets)
    flags = tokenizer_flags(cfg, scfg)
    hasher = MinHasher(MinHashConfig(num_perm=num_perm, seed=seed), cfg, scfg)
    sigs, counts = hasher.signatures_with_counts(batch)
    a, b = ref_permutations(seed, num_perm)
    assert sigs.tolist() == [ref_signature(r, a, b) for r in refs]
    assert counts.tolist() == [len(r) for r in refs]
    every = np.arange(len(docs))
    sets = shingle_sets(batch, every, counts, cfg, scfg)
    for k, ref in enumerate(refs):
        assert sets.get(k).tolist() == sorted(set(ref))
        s, e = offsets[k], offsets[k + 1]
        assert doc_shingles(batch.data, s, e, *_table_args(), flags, scfg.n).tolist() == ref
    for doc, text in zip(docs, texts, strict=True):
        buf, ends = scan.scan_tokens(
            np.frombuffer(doc + b"\0", dtype=np.uint8), len(doc), _table_args(), flags
        )
        bounds = [0, *ends.tolist()]
        got = [bytes(buf[bounds[i] : bounds[i + 1]]) for i in range(len(ends))]
        assert got == [_utf8(t) for t in ref_tokens(text, cfg, scfg.mode)]


TEXT_CONFIGS = [TextConfig(*flags) for flags in itertools.product([True, False], repeat=4)]


@settings(max_examples=300)
@given(
    raw_batches(),
    st.sampled_from(TEXT_CONFIGS),
    st.sampled_from(["word", "char"]),
    st.sampled_from([1, 2, 3, 4, 5, 9, 64]),
    st.integers(1, 20),
)
def test_raw_bytes_match_reference(
    case: tuple[bytes, list[int]], cfg: TextConfig, mode: str, n: int, num_perm: int
) -> None:
    blob, offsets = case
    _check_raw_batch(blob, offsets, cfg, ShingleConfig(mode=mode, n=n), num_perm, seed=n)  # type: ignore[arg-type]


def _random_corpus(rng: random.Random, docs: int) -> tuple[bytes, list[int]]:
    """Random Unicode text, malformed bytes and long words, cut into ``docs`` documents of
    very different lengths (a few longer than the token buffer), in random order."""
    alphabets = [string.ascii_letters + "  ", MIXED + " ", SCRIPTS + " \n", JAMO + " ", "\u0301\u0308ab "]
    parts = []
    for _ in range(docs):
        length = rng.choice([0, 1, 3, 20, 80, 300, 2500 if rng.random() < 0.05 else 40])
        alphabet = rng.choice(alphabets)
        text = "".join(rng.choice(alphabet) for _ in range(length))
        raw = bytearray(_utf8(text))
        for _ in range(rng.choice([0, 0, 1, 3])):  # a few malformed bytes
            raw.insert(rng.randint(0, len(raw)), rng.randint(0x80, 0xFF))
        if rng.random() < 0.1:
            raw += b" " + _utf8("".join(rng.choice(MIXED + string.ascii_letters) for _ in range(150)))
        parts.append(bytes(raw))
    blob = b"".join(parts)
    # cut at the parts' ends, but sometimes a few bytes off, inside a character
    cuts = [sum(len(p) for p in parts[: i + 1]) + rng.choice([0, 0, 0, -1, 1, 2]) for i in range(docs - 1)]
    return blob, [0, *sorted(min(max(c, 0), len(blob)) for c in cuts), len(blob)]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["word", "char"])
@pytest.mark.parametrize("n", [1, 2, 3, 13, 64])
def test_random_corpus_matches_reference(mode: str, n: int) -> None:
    # enough documents for the thread pool, every normalisation setting on the same bytes
    blob, offsets = _random_corpus(random.Random(n), 150)
    assert len(offsets) - 1 >= scan.SERIAL_BELOW
    for k, cfg in enumerate(TEXT_CONFIGS):
        _check_raw_batch(blob, offsets, cfg, ShingleConfig(mode=mode, n=n), num_perm=3 + k, seed=k)  # type: ignore[arg-type]


# --- sorting shingle sets ------------------------------------------------------------------------


@numba.njit
def _sort_unique(v: np.ndarray, lo: int, hi: int) -> int:
    scratch = np.full(scan.SORT_SCRATCH, -7, dtype=np.int64)
    return scan.sort_unique(v, lo, hi, scratch)  # a helper has no Python wrapper of its own


@pytest.mark.parametrize("size", [0, 1, 2, 15, 16, 17, 100, 300, 5000])
@pytest.mark.parametrize("kind", ["hashes", "repeats", "one bucket", "few buckets", "descending"])
def test_sort_unique_gives_numpys_sorted_distinct_values(size: int, kind: str) -> None:
    rng = np.random.default_rng(size * 7 + len(kind))
    values = rng.integers(0, 2**64, size=size, dtype=np.uint64)
    if kind == "repeats":  # a few distinct values many times (repeated shingles)
        values = rng.choice(values[: max(1, size // 50)], size=size) if size else values
    elif kind == "one bucket":  # every value in one bucket of the top-byte counting sort
        values = (values >> np.uint64(8)) | np.uint64(0xAB << 56)
    elif kind == "few buckets":  # buckets past the insertion sort's size, with repeats
        values = (values % np.uint64(3)) << np.uint64(56) | (values % np.uint64(40))
    elif kind == "descending":
        values = np.sort(values)[::-1].copy()
    padded = np.concatenate(([np.uint64(1)], values, [np.uint64(2)]))  # sorts a slice in place
    count = _sort_unique(padded, 1, 1 + size)
    want = np.unique(values)
    assert count == want.size
    assert np.array_equal(padded[1 : 1 + count], want)
    assert padded[0] == 1 and padded[-1] == 2
