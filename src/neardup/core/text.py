"""Normalisation and tokenisation over UTF-8 bytes: the rules, and ``tokenize``.

A document is a byte range of a UTF-8 buffer. Each code point is decoded
(malformed bytes read as U+FFFD; conjoining Hangul jamo are composed) and
normalised through the packed table (``_expand``); the per-code-point rule lives
in :mod:`neardup.core.unicode_table`. Word mode makes a token of each run of
word characters and one token of each letter of an unspaced script (Chinese,
Japanese, Thai, ...); char mode makes a token of each character, with a single
space token between words (but none between two letters of unspaced scripts,
so re-wrapped Chinese text keeps its character n-grams).

A tokenizer other than ``builtin`` (jieba) first cuts each text into words separated by
spaces (``segmented``, through :mod:`neardup.core.segmenters`); the tokeniser then reads it
with ``F_SEGMENTED``, under which letters of unspaced scripts join word runs as Latin letters
do, so each of those words is one token. Every function that reads text for signatures,
shingles or tokens passes its batch through ``segmented``: it is the one place where that
happens, so every path segments alike.

The compiled tokeniser itself is ``neardup.core.scan.scan_part``: it hashes
tokens as it reads them, and only ``tokenize`` asks it for their bytes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from neardup.config import ShingleConfig, TextConfig, Tokenizer
from neardup.core.jit import helper, hot_helper
from neardup.core.segmenters import segmenter
from neardup.core.unicode_table import (
    HAS_CANON,
    HAS_COMPAT,
    HAS_LOWER,
    MARK_NONSPACING,
    RECORD_SHIFT,
    load_table,
)

F_COMPAT = 1
F_STRIP_ACCENTS = 2
F_LOWERCASE = 4
F_STRIP_PUNCT = 8
F_CHAR_MODE = 16
F_SEGMENTED = 32  # the text was cut into words by a segmenter: unspaced letters make word runs

_EXPANSION_CAP = 128  # longer than any decomposition-then-lower-case chain
_MAX_N = 64  # the longest shingle (ShingleConfig checks n)


class TextBatch(NamedTuple):
    """Documents as one UTF-8 buffer: document i is ``data[offsets[i]:offsets[i+1]]``."""

    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, length n + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1


def encode_texts(texts: Sequence[str | None]) -> TextBatch:
    """Pack Python strings into a :class:`TextBatch` (None counts as empty)."""
    encoded = [t.encode("utf-8", "surrogatepass") if t else b"" for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    if data.size == 0:
        data = np.zeros(1, dtype=np.uint8)
    return TextBatch(data=data, offsets=offsets)


def tokenizer_flags(text: TextConfig, shingle: ShingleConfig | None = None) -> int:
    """Pack the settings the compiled tokeniser needs into one integer."""
    flags = 0
    if text.nfkc:
        flags |= F_COMPAT
    if text.strip_accents:
        flags |= F_STRIP_ACCENTS
    if text.lowercase:
        flags |= F_LOWERCASE
    if text.strip_punctuation:
        flags |= F_STRIP_PUNCT
    if shingle is not None and shingle.mode == "char":
        flags |= F_CHAR_MODE
    if shingle is not None and shingle.tokenizer != "builtin":
        flags |= F_SEGMENTED
    return flags


def decode_texts(batch: TextBatch, docs: np.ndarray | None = None) -> list[str]:
    """The texts of documents ``docs`` (all, if None) of ``batch``; malformed UTF-8 reads as U+FFFD."""
    view = batch.data.data  # a memoryview of the bytes
    offsets = batch.offsets
    picked = range(len(batch)) if docs is None else docs.tolist()
    out = []
    for d in picked:
        raw = view[int(offsets[d]) : int(offsets[d + 1])]
        try:
            out.append(str(raw, "utf-8", "surrogatepass"))  # as encode_texts wrote lone surrogates
        except UnicodeDecodeError:
            out.append(str(raw, "utf-8", "replace"))
    return out


def segmented(
    batch: TextBatch, text: TextConfig, shingle: ShingleConfig, docs: np.ndarray | None = None
) -> TextBatch:
    """The batch the tokeniser reads under ``text`` and ``shingle``: documents ``docs`` of
    ``batch`` (all, if None; with the builtin tokenizer, ``batch`` itself), their words cut
    apart by the tokenizer's segmenter. Document k of the result is ``docs[k]``.

    With ``text.nfkc`` the segmenter reads the texts NFKC-folded, so that full-width letters
    and digits make words as ASCII ones do (jieba cuts ``Ｈello`` into ``Ｈ`` and ``ello``).
    """
    if shingle.tokenizer == "builtin":
        if docs is None:
            return batch
        raise ValueError("the builtin tokenizer reads the batch itself, not a copy of some documents")
    segment = segmenter(shingle.tokenizer)
    texts = decode_texts(batch, docs)
    if text.nfkc:
        texts = [unicodedata.normalize("NFKC", t) for t in texts]
    words = segment(texts)
    if len(words) != len(texts):
        raise ValueError(f"the {shingle.tokenizer} segmenter gave {len(words)} texts for {len(texts)}")
    return encode_texts(words)


@hot_helper
def _decode(data: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """One code point from UTF-8 at ``p``, and where the next starts; malformed bytes
    decode as U+FFFD.

    Conjoining Hangul jamo (L V [T]) are composed into a syllable, and a syllable
    without a final consonant takes a following T jamo, so Korean typed as jamo (NFD
    input) reads the same as precomposed Korean.
    """
    b0 = int(data[p])
    cp = 0xFFFD
    q = p + 1
    if b0 < 0x80:
        return b0, q
    if 0xC2 <= b0 <= 0xDF and p + 1 < end:
        b1 = int(data[p + 1])
        if b1 & 0xC0 == 0x80:
            return ((b0 & 0x1F) << 6) | (b1 & 0x3F), p + 2
    elif 0xE0 <= b0 <= 0xEF and p + 2 < end:
        b1 = int(data[p + 1])
        b2 = int(data[p + 2])
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80:
            c3 = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
            if c3 >= 0x800:
                cp = c3
                q = p + 3
    elif 0xF0 <= b0 <= 0xF4 and p + 3 < end:
        b1 = int(data[p + 1])
        b2 = int(data[p + 2])
        b3 = int(data[p + 3])
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80 and b3 & 0xC0 == 0x80:
            c4 = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            if 0x10000 <= c4 <= 0x10FFFF:
                return c4, p + 4
    if 0x1100 <= cp <= 0x1112 or (0xAC00 <= cp <= 0xD7A3 and (cp - 0xAC00) % 28 == 0):
        for _ in range(2):  # a leading consonant takes a vowel, then a syllable a final
            if q + 2 >= end or data[q] != 0xE1:
                break
            b1 = int(data[q + 1])
            b2 = int(data[q + 2])
            if b1 & 0xC0 != 0x80 or b2 & 0xC0 != 0x80:
                break
            jamo = 0x1000 | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
            if cp <= 0x1112:
                if not 0x1161 <= jamo <= 0x1175:
                    break
                cp = 0xAC00 + ((cp - 0x1100) * 21 + (jamo - 0x1161)) * 28
                q += 3
            else:
                if 0x11A8 <= jamo <= 0x11C2:
                    cp += jamo - 0x11A7
                    q += 3
                break
    return cp, q


@helper
def _expand(
    cp: int,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
    out_cp: np.ndarray,
    out_cls: np.ndarray,
) -> int:
    """Normalise one code point into ``out_cp``/``out_cls``; returns the count."""
    e = entries[cp]
    rec = e >> RECORD_SHIFT
    direct = True
    s0 = 0
    n0 = 1
    if (flags & F_COMPAT) and (e & HAS_COMPAT):
        s0 = records[rec, 2]
        n0 = records[rec, 3]
        direct = False
    elif e & HAS_CANON:
        s0 = records[rec, 0]
        n0 = records[rec, 1]
        direct = False
    strip = flags & F_STRIP_ACCENTS
    count = 0
    for k in range(n0):
        c2 = cp if direct else int(pool[s0 + k])
        e2 = entries[c2]
        if strip and (e2 & 7) == MARK_NONSPACING:
            continue
        if (flags & F_LOWERCASE) and (e2 & HAS_LOWER):
            r2 = e2 >> RECORD_SHIFT
            s1 = records[r2, 4]
            for j in range(records[r2, 5]):
                c3 = int(pool[s1 + j])
                e3 = entries[c3]
                if strip and (e3 & 7) == MARK_NONSPACING:
                    continue
                if count < _EXPANSION_CAP:
                    out_cp[count] = c3
                    out_cls[count] = e3 & 7
                    count += 1
        elif count < _EXPANSION_CAP:
            out_cp[count] = c2
            out_cls[count] = e2 & 7
            count += 1
    return count


def _table_args() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    table = load_table()
    return table.entries, table.records, table.pool


def tokenize(
    text: str, config: TextConfig | None = None, mode: str = "word", *, tokenizer: Tokenizer = "builtin"
) -> list[str]:
    """The tokens of ``text``: what shingles are made of (``tokenizer`` as in
    :class:`~neardup.config.ShingleConfig`).

    >>> tokenize("Hello, Wörld! 你好")
    ['hello', 'world', '你', '好']
    """
    from neardup.core.scan import scan_tokens  # the tokeniser's kernel imports this module

    cfg = config or TextConfig()
    shingle = ShingleConfig(mode="char" if mode == "char" else "word", tokenizer=tokenizer)
    flags = tokenizer_flags(cfg, shingle)
    if shingle.tokenizer != "builtin":
        text = decode_texts(segmented(encode_texts([text]), cfg, shingle))[0]
    raw = text.encode("utf-8", "surrogatepass")
    buf, ends = scan_tokens(np.frombuffer(raw or b"\0", dtype=np.uint8), len(raw), _table_args(), flags)
    out = bytes(buf)
    bounds = [0] + [int(e) for e in ends]
    return [out[bounds[i] : bounds[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(ends))]


def normalize(text: str, config: TextConfig | None = None) -> str:
    """``text`` as neardup sees it: normalised, with single spaces between words.

    >>> normalize("  Ｃafé — DÉJÀ_vu!! ")
    'cafe deja vu'
    """
    return "".join(tokenize(text, config, mode="char"))
