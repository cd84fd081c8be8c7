"""The per-code-point table behind normalisation and tokenisation.

neardup normalises text one code point at a time, so the rule fits in a
table that ships with the package (``unicode_table.npz``). Shipping it, rather
than asking the running Python's ``unicodedata``, keeps signatures identical
across Python versions. ``build_table`` regenerates it from ``unicodedata``;
``python -m neardup.core.unicode_table`` writes the file.

The rule for one code point ``c`` (see ``expand_code_point``):

1. decompose: NFD of ``c`` (or NFKD with ``nfkc=True``); Hangul syllables are
   left whole, so Korean is not broken into jamo (the tokeniser composes
   conjoining jamo in the input into syllables, so both spellings agree);
2. drop nonspacing marks (category Mn) when ``strip_accents``;
3. lower-case each remaining code point (``str.lower`` of that code point)
   when ``lowercase``, dropping Mn marks that this produces as well.

Each output code point then has a class that decides how it tokenises:
letters, numbers and spacing marks make words; letters of scripts written
without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, ...) are
one token each; white space and control characters separate; punctuation and
symbols separate when ``strip_punctuation`` (else they are word characters);
format characters (zero-width joiners, soft hyphens, BOM) vanish.
"""

from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

# Code point classes (the low three bits of a table entry).
WORD = 0
UNSPACED = 1
SPACE = 2
PUNCT = 3
DROP = 4
MARK_NONSPACING = 5
MARK_SPACING = 6

HAS_CANON = 1 << 3
HAS_COMPAT = 1 << 4
HAS_LOWER = 1 << 5
RECORD_SHIFT = 8

MAX_CODE_POINT = 0x110000
TABLE_FILE = "unicode_table.npz"

# Blocks of scripts written without spaces between words.
UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x1B00, 0x1B7F),  # Balinese
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration / closing mark / number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31BF),  # Bopomofo extended
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA000, 0xA4CF),  # Yi
    (0xA980, 0xA9DF),  # Javanese
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x1B000, 0x1B16F),  # Kana supplement / extended
    (0x20000, 0x323AF),  # CJK extensions B..H, compatibility supplement
)


class UnicodeTable(NamedTuple):
    """The packed table: one uint32 entry per code point plus mapping records."""

    entries: np.ndarray  # uint32[MAX_CODE_POINT]
    records: np.ndarray  # int32[R, 6]: (start, length) for canon, compat, lower
    pool: np.ndarray  # int32 code points the records point into
    unidata_version: str


def _is_unspaced(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in UNSPACED_RANGES)


def classify(cp: int) -> int:
    """The class of code point ``cp`` as an output character."""
    category = unicodedata.category(chr(cp))
    major = category[0]
    if category == "Mn":
        return MARK_NONSPACING
    if major == "M":
        return MARK_SPACING
    if chr(cp).isspace() or category in ("Zs", "Zl", "Zp", "Cc"):
        return SPACE
    if category == "Cf":
        return DROP
    if major in ("L", "N"):
        return UNSPACED if _is_unspaced(cp) else WORD
    if major in ("P", "S"):
        return PUNCT
    return WORD  # private use, unassigned: kept as word characters


def _is_hangul_syllable(cp: int) -> bool:
    return 0xAC00 <= cp <= 0xD7A3


def decompose(cp: int, *, compat: bool) -> str:
    """NFD (or NFKD) of one code point; Hangul syllables stay whole."""
    ch = chr(cp)
    if _is_hangul_syllable(cp) or 0xD800 <= cp <= 0xDFFF:
        return ch
    return unicodedata.normalize("NFKD" if compat else "NFD", ch)


def lower(cp: int) -> str:
    """Lower-case mapping of one code point (no context, so no final sigma)."""
    if 0xD800 <= cp <= 0xDFFF:
        return chr(cp)
    return chr(cp).lower()


def expand_code_point(cp: int, *, compat: bool, strip_accents: bool, lowercase: bool) -> list[int]:
    """The code points that ``cp`` normalises to: the reference definition."""
    out: list[int] = []
    for c2 in decompose(cp, compat=compat):
        if strip_accents and unicodedata.category(c2) == "Mn":
            continue
        parts = lower(ord(c2)) if lowercase else c2
        for c3 in parts:
            if strip_accents and unicodedata.category(c3) == "Mn":
                continue
            out.append(ord(c3))
    return out


def build_table() -> UnicodeTable:
    """Build the table from the running Python's ``unicodedata``."""
    entries = np.zeros(MAX_CODE_POINT, dtype=np.uint32)
    records: list[tuple[int, int, int, int, int, int]] = []
    pool: list[int] = []

    def put(seq: str) -> tuple[int, int]:
        start = len(pool)
        pool.extend(ord(c) for c in seq)
        return start, len(seq)

    for cp in range(MAX_CODE_POINT):
        ch = chr(cp)
        canon = decompose(cp, compat=False)
        compat = decompose(cp, compat=True)
        low = lower(cp)
        entry = classify(cp)
        flags = 0
        if canon != ch:
            flags |= HAS_CANON
        if compat != ch:
            flags |= HAS_COMPAT
        if low != ch:
            flags |= HAS_LOWER
        if flags:
            records.append((*put(canon), *put(compat), *put(low)))
            entry |= flags | ((len(records) - 1) << RECORD_SHIFT)
        entries[cp] = entry
    return UnicodeTable(
        entries=entries,
        records=np.asarray(records, dtype=np.int32).reshape(-1, 6),
        pool=np.asarray(pool, dtype=np.int32),
        unidata_version=unicodedata.unidata_version,
    )


def write_table(table: UnicodeTable, path: Path) -> None:
    """Write ``table`` as a compressed ``.npz`` file."""
    np.savez_compressed(
        path,
        entries=table.entries,
        records=table.records,
        pool=table.pool,
        unidata_version=np.array(table.unidata_version),
    )


@lru_cache(maxsize=1)
def load_table() -> UnicodeTable:
    """The table shipped with the package."""
    with resources.files("neardup.core").joinpath(TABLE_FILE).open("rb") as fh:
        data = np.load(fh)
        return UnicodeTable(
            entries=np.ascontiguousarray(data["entries"]),
            records=np.ascontiguousarray(data["records"]),
            pool=np.ascontiguousarray(data["pool"]),
            unidata_version=str(data["unidata_version"]),
        )


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    target = Path(__file__).with_name(TABLE_FILE)
    write_table(build_table(), target)
    print(f"wrote {target} (Unicode {unicodedata.unidata_version})", file=sys.stderr)
