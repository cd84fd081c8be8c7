"""Normalisation and tokenisation over UTF-8 bytes, one pass, compiled.

A document goes in as a byte range of a UTF-8 buffer; the tokeniser writes the
normalised tokens, back to back, into a byte buffer and records where each one
starts. Word mode makes a token of each run of word characters and one token
of each letter of an unspaced script (Chinese, Japanese, Thai, ...); char mode
makes a token of each character, with a single space token between words
(but none between two letters of unspaced scripts, so re-wrapped Chinese
text keeps its character n-grams).
The per-code-point rule lives in :mod:`neardup.core.unicode_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from neardup.config import ShingleConfig, TextConfig
from neardup.core.unicode_table import (
    DROP,
    HAS_CANON,
    HAS_COMPAT,
    HAS_LOWER,
    MARK_NONSPACING,
    MARK_SPACING,
    PUNCT,
    RECORD_SHIFT,
    SPACE,
    UNSPACED,
    load_table,
)

F_COMPAT = 1
F_STRIP_ACCENTS = 2
F_LOWERCASE = 4
F_STRIP_PUNCT = 8
F_CHAR_MODE = 16

_EXPANSION_CAP = 128  # longer than any decomposition-then-lower-case chain


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
    return flags


@njit(inline="always", cache=True)
def _decode(data: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """One code point from UTF-8 at ``p``; malformed bytes decode as U+FFFD."""
    b0 = int(data[p])
    if b0 < 0x80:
        return b0, p + 1
    if 0xC2 <= b0 <= 0xDF and p + 1 < end:
        b1 = int(data[p + 1])
        if b1 & 0xC0 == 0x80:
            return ((b0 & 0x1F) << 6) | (b1 & 0x3F), p + 2
    elif 0xE0 <= b0 <= 0xEF and p + 2 < end:
        b1 = int(data[p + 1])
        b2 = int(data[p + 2])
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80:
            cp = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
            if cp >= 0x800:
                return cp, p + 3
    elif 0xF0 <= b0 <= 0xF4 and p + 3 < end:
        b1 = int(data[p + 1])
        b2 = int(data[p + 2])
        b3 = int(data[p + 3])
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80 and b3 & 0xC0 == 0x80:
            cp = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            if 0x10000 <= cp <= 0x10FFFF:
                return cp, p + 4
    return 0xFFFD, p + 1


@njit(inline="always", cache=True)
def _decode_composed(data: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """Like ``_decode``, but composes conjoining Hangul jamo (L V [T]) into syllables,
    so Korean typed as jamo (NFD input) reads the same as precomposed Korean."""
    cp, q = _decode(data, p, end)
    if 0x1100 <= cp <= 0x1112 and q < end:
        v, q2 = _decode(data, q, end)
        if 0x1161 <= v <= 0x1175:
            cp = 0xAC00 + ((cp - 0x1100) * 21 + (v - 0x1161)) * 28
            q = q2
        else:
            return cp, q
    elif not (0xAC00 <= cp <= 0xD7A3 and (cp - 0xAC00) % 28 == 0):
        return cp, q
    if q < end:
        t, q3 = _decode(data, q, end)
        if 0x11A8 <= t <= 0x11C2:
            return cp + t - 0x11A7, q3
    return cp, q


@njit(inline="always", cache=True)
def _encode(cp: int, buf: np.ndarray, pos: int) -> int:
    """Write ``cp`` as UTF-8 into ``buf`` at ``pos``; returns the new end."""
    if cp < 0x80:
        buf[pos] = cp
        return pos + 1
    if cp < 0x800:
        buf[pos] = 0xC0 | (cp >> 6)
        buf[pos + 1] = 0x80 | (cp & 0x3F)
        return pos + 2
    if cp < 0x10000:
        buf[pos] = 0xE0 | (cp >> 12)
        buf[pos + 1] = 0x80 | ((cp >> 6) & 0x3F)
        buf[pos + 2] = 0x80 | (cp & 0x3F)
        return pos + 3
    buf[pos] = 0xF0 | (cp >> 18)
    buf[pos + 1] = 0x80 | ((cp >> 12) & 0x3F)
    buf[pos + 2] = 0x80 | ((cp >> 6) & 0x3F)
    buf[pos + 3] = 0x80 | (cp & 0x3F)
    return pos + 4


@njit(inline="always", cache=True)
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


@njit(cache=True)
def _grow(arr: np.ndarray, need: int) -> np.ndarray:
    if need <= arr.size:
        return arr
    bigger = np.empty(max(need, 2 * arr.size), dtype=arr.dtype)
    bigger[: arr.size] = arr
    return bigger


@njit(cache=True)
def tokenize_range(
    data: np.ndarray,
    start: int,
    end: int,
    entries: np.ndarray,
    records: np.ndarray,
    pool: np.ndarray,
    flags: int,
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Tokenise ``data[start:end]``.

    Returns ``(buf, starts, ntok, blen)``: token i is
    ``buf[starts[i]:starts[i + 1]]``, the last one ending at ``blen``.
    """
    buf = np.empty(max(16, 2 * (end - start) + 8), dtype=np.uint8)
    starts = np.empty(max(8, (end - start) + 2), dtype=np.int64)
    exp_cp = np.empty(_EXPANSION_CAP, dtype=np.int64)
    exp_cls = np.empty(_EXPANSION_CAP, dtype=np.int64)
    char_mode = flags & F_CHAR_MODE
    strip_punct = flags & F_STRIP_PUNCT
    blen = 0
    ntok = 0
    in_tok = False
    tok_unspaced = False
    pending_space = False
    last_cls = -1
    p = start
    while p < end:
        cp, p = _decode_composed(data, p, end)
        count = _expand(cp, entries, records, pool, flags, exp_cp, exp_cls)
        for k in range(count):
            c = exp_cp[k]
            cls = exp_cls[k]
            if cls == DROP:
                continue
            if cls == PUNCT:
                cls = SPACE if strip_punct else 0
            if blen + 8 > buf.size:
                buf = _grow(buf, blen + 8)
            if ntok + 2 > starts.size:
                starts = _grow(starts, ntok + 2)
            if char_mode:
                if cls == SPACE:
                    pending_space = ntok > 0
                    continue
                # no space token between two letters of unspaced scripts: a line break
                # inside Chinese text is layout, not a word boundary
                if pending_space and not (cls == UNSPACED and last_cls == UNSPACED):
                    starts[ntok] = blen
                    ntok += 1
                    buf[blen] = 32
                    blen += 1
                pending_space = False
                last_cls = cls
                starts[ntok] = blen
                ntok += 1
                blen = _encode(c, buf, blen)
                continue
            if cls == SPACE:
                in_tok = False
            elif cls == MARK_NONSPACING or cls == MARK_SPACING:  # noqa: SIM109 (numba)
                if not in_tok:
                    starts[ntok] = blen
                    ntok += 1
                    in_tok = True
                    tok_unspaced = False
                blen = _encode(c, buf, blen)
            elif cls == UNSPACED:
                starts[ntok] = blen
                ntok += 1
                in_tok = True
                tok_unspaced = True
                blen = _encode(c, buf, blen)
            else:
                if not in_tok or tok_unspaced:
                    starts[ntok] = blen
                    ntok += 1
                    in_tok = True
                    tok_unspaced = False
                blen = _encode(c, buf, blen)
    return buf, starts, ntok, blen


def _table_args() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    table = load_table()
    return table.entries, table.records, table.pool


def tokenize(text: str, config: TextConfig | None = None, mode: str = "word") -> list[str]:
    """The tokens of ``text``: what shingles are made of.

    >>> tokenize("Hello, Wörld! 你好")
    ['hello', 'world', '你', '好']
    """
    cfg = config or TextConfig()
    flags = tokenizer_flags(cfg, ShingleConfig(mode="char" if mode == "char" else "word"))
    raw = text.encode("utf-8", "surrogatepass")
    data = np.frombuffer(raw or b"\0", dtype=np.uint8)
    buf, starts, ntok, blen = tokenize_range(data, 0, len(raw), *_table_args(), flags)
    bounds = [int(s) for s in starts[:ntok]] + [int(blen)]
    out = bytes(buf[:blen])
    return [out[bounds[i] : bounds[i + 1]].decode("utf-8", "surrogatepass") for i in range(ntok)]


def normalize(text: str, config: TextConfig | None = None) -> str:
    """``text`` as neardup sees it: normalised, with single spaces between words.

    >>> normalize("  Ｃafé — DÉJÀ_vu!! ")
    'cafe deja vu'
    """
    return "".join(tokenize(text, config, mode="char"))
