"""A slow, plain-Python reference of neardup's whole definition.

Everything here follows the module docstrings of ``neardup.core`` and uses
only ``unicodedata`` (through ``expand_code_point`` / ``classify``, the
per-code-point definition), ``xxhash`` and Python ints: no numba, no numpy,
no packed table. The tests compare the compiled hot path against it.

The tokeniser is written declaratively rather than as a copy of the compiled
state machine: after normalisation, white space (and punctuation, when it is
stripped) cuts the text into runs; inside a run a token is either one
unspaced letter followed by its marks (``UM*``) or a stretch of word
characters and marks (``[WM]+``).
"""

from __future__ import annotations

import re
import struct
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache

import xxhash

from neardup.config import ShingleConfig, TextConfig
from neardup.core.unicode_table import (
    DROP,
    MARK_NONSPACING,
    MARK_SPACING,
    PUNCT,
    SPACE,
    UNSPACED,
    WORD,
    classify,
    expand_code_point,
)

M64 = (1 << 64) - 1
EMPTY_VALUE = 0xFFFFFFFF
SM_GAMMA = 0x9E3779B97F4A7C15
SM_M1 = 0xBF58476D1CE4E5B9
SM_M2 = 0x94D049BB133111EB

_TOKEN_RE = re.compile(r"UM*|[WM]+")


@cache
def _expand(cp: int, compat: bool, strip_accents: bool, lowercase: bool) -> tuple[tuple[str, int], ...]:
    out = expand_code_point(cp, compat=compat, strip_accents=strip_accents, lowercase=lowercase)
    return tuple((chr(c), classify(c)) for c in out)


_JAMO_RE = re.compile("[\u1100-\u1112][\u1161-\u1175][\u11a8-\u11c2]?|[\uac00-\ud7a3][\u11a8-\u11c2]")


def compose_hangul(text: str) -> str:
    """NFC applied to conjoining-jamo sequences only (the tokeniser reads them as syllables)."""
    return _JAMO_RE.sub(lambda m: unicodedata.normalize("NFC", m.group()), text)


def ref_normalized(text: str, config: TextConfig) -> list[tuple[str, str]]:
    """Normalised characters with their role: ``S`` space, ``W`` word, ``U`` unspaced, ``M`` mark.

    Format characters (class DROP) are left out entirely.
    """
    out: list[tuple[str, str]] = []
    for ch in compose_hangul(text):
        for c, cls in _expand(ord(ch), config.nfkc, config.strip_accents, config.lowercase):
            if cls == DROP:
                continue
            if cls == PUNCT:
                role = "S" if config.strip_punctuation else "W"
            elif cls == SPACE:
                role = "S"
            elif cls == UNSPACED:
                role = "U"
            elif cls in (MARK_NONSPACING, MARK_SPACING):
                role = "M"
            else:
                assert cls == WORD, cls
                role = "W"
            out.append((c, role))
    return out


def _runs(chars: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Maximal runs of non-space characters."""
    runs: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for c, role in chars:
        if role == "S":
            if current:
                runs.append(current)
            current = []
        else:
            current.append((c, role))
    if current:
        runs.append(current)
    return runs


def ref_tokens(text: str, text_config: TextConfig | None = None, mode: str = "word") -> list[str]:
    """The tokens of ``text`` in ``word`` or ``char`` mode."""
    cfg = text_config or TextConfig()
    runs = _runs(ref_normalized(text, cfg))
    if mode == "char":
        # every character is a token, with one space token between words, except
        # between a run ending and a run starting with a letter of an unspaced script
        out: list[str] = []
        for i, run in enumerate(runs):
            if i and not (runs[i - 1][-1][1] == "U" and run[0][1] == "U"):
                out.append(" ")
            out.extend(c for c, _ in run)
        return out
    tokens: list[str] = []
    for run in runs:
        chars = "".join(c for c, _ in run)
        roles = "".join(r for _, r in run)
        pos = 0
        for m in _TOKEN_RE.finditer(roles):
            assert m.start() == pos, (roles, pos)  # the two patterns cover every run
            tokens.append(chars[m.start() : m.end()])
            pos = m.end()
        assert pos == len(roles)
    return tokens


def ref_token_hash(token: str) -> int:
    return xxhash.xxh64_intdigest(token.encode("utf-8"))


def ref_combine(hashes: Sequence[int]) -> int:
    """A shingle's hash: XXH64 of its tokens' hashes as little-endian uint64s."""
    return xxhash.xxh64_intdigest(struct.pack(f"<{len(hashes)}Q", *hashes))


def ref_shingle_hashes(
    text: str, text_config: TextConfig | None = None, shingle_config: ShingleConfig | None = None
) -> list[int]:
    """Shingle hashes in text order, repeats kept."""
    scfg = shingle_config or ShingleConfig()
    hashes = [ref_token_hash(t) for t in ref_tokens(text, text_config, scfg.mode)]
    if not hashes:
        return []
    if len(hashes) < scfg.n:
        return [ref_combine(hashes)]
    return [ref_combine(hashes[i : i + scfg.n]) for i in range(len(hashes) - scfg.n + 1)]


def ref_splitmix64(seed: int, count: int) -> list[int]:
    state = seed & M64
    out = []
    for _ in range(count):
        state = (state + SM_GAMMA) & M64
        z = state
        z = ((z ^ (z >> 30)) * SM_M1) & M64
        z = ((z ^ (z >> 27)) * SM_M2) & M64
        out.append(z ^ (z >> 31))
    return out


def ref_permutations(seed: int, num_perm: int) -> tuple[list[int], list[int]]:
    stream = ref_splitmix64(seed, 2 * num_perm)
    return [x | 1 for x in stream[0::2]], stream[1::2]


def _ref_mix(h: int) -> int:
    z = ((h ^ (h >> 30)) * SM_M1) & M64
    z = ((z ^ (z >> 27)) * SM_M2) & M64
    return z ^ (z >> 31)


def ref_signature(
    shingles: Iterable[int], a: Sequence[int], b: Sequence[int], sketch: str = "stratified"
) -> list[int]:
    """MinHash as the docs define it: permutation i's value of shingle x is the top 32 bits of
    ``a_i * x + b_i`` (classic); stratified, its top t bits are replaced by the stratum
    ``(start + i * step) mod 2**t`` from a SplitMix64 mix of x (2**t >= num_perm)."""
    xs = list(shingles)
    if not xs:
        return [EMPTY_VALUE] * len(a)
    t = (len(a) - 1).bit_length() if sketch == "stratified" else 0
    out = []
    for i, (ai, bi) in enumerate(zip(a, b, strict=True)):
        best = EMPTY_VALUE + 1
        for x in xs:
            value = ((ai * x + bi) & M64) >> 32
            if t:
                z = _ref_mix(x)
                start, step = (z >> 32) >> (32 - t), ((z & 0xFFFFFFFF) >> (32 - t)) | 1
                value = (((start + i * step) % (1 << t)) << (32 - t)) | (value >> t)
            best = min(best, value)
        out.append(best)
    return out


def ref_digest(shingles: Iterable[int]) -> int:
    """A document's shingle digest: the sum of its shingles' SplitMix64 mixes, repeats included,
    mod 2**64."""
    return sum(_ref_mix(x) for x in shingles) & M64


def ref_jaccard(set_a: Iterable[int], set_b: Iterable[int]) -> float:
    sa, sb = set(set_a), set(set_b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 0.0


def ref_band_key(sig: Sequence[int], band: int, rows: int) -> int:
    """A band of the first layer is ``rows`` neighbouring values; band ``per_layer + k`` of the
    second takes every ``per_layer``-th value from the ``k``-th."""
    per_layer = len(sig) // rows
    if band < per_layer:
        values = sig[band * rows : (band + 1) * rows]
    else:
        values = [sig[band - per_layer + i * per_layer] for i in range(rows)]
    return xxhash.xxh64_intdigest(struct.pack(f"<{rows}I", *values))


def ref_buckets(
    sigs: Sequence[Sequence[int]], bands: int, rows: int, eligible: Sequence[bool] | None = None
) -> dict[tuple[int, int], list[int]]:
    """``(band, key) -> ascending members`` for every bucket of two or more eligible documents."""
    out: dict[tuple[int, int], list[int]] = {}
    for j in range(bands):
        groups: dict[int, list[int]] = defaultdict(list)
        for d, sig in enumerate(sigs):
            if eligible is None or eligible[d]:
                groups[ref_band_key(sig, j, rows)].append(d)
        for key, members in groups.items():
            if len(members) >= 2:
                out[(j, key)] = members
    return out


def ref_candidate_pairs(
    sigs: Sequence[Sequence[int]],
    bands: int,
    rows: int,
    max_bucket_size: int,
    eligible: Sequence[bool] | None = None,
) -> list[tuple[int, int]]:
    """Sorted unique pairs ``(i, j)``, ``i < j``; big buckets give a star from their smallest member."""
    pairs: set[tuple[int, int]] = set()
    for members in ref_buckets(sigs, bands, rows, eligible).values():
        if len(members) <= max_bucket_size:
            pairs.update((x, y) for i, x in enumerate(members) for y in members[i + 1 :])
        else:
            hub = min(members)
            pairs.update((hub, y) for y in members if y != hub)
    return sorted(pairs)


def ref_components(n: int, edges: Iterable[tuple[int, int]]) -> list[frozenset[int]]:
    """Connected components (singletons included), by graph search."""
    adj: list[set[int]] = [set() for _ in range(n)]
    for x, y in edges:
        adj[x].add(y)
        adj[y].add(x)
    seen = [False] * n
    out = []
    for s in range(n):
        if seen[s]:
            continue
        seen[s] = True
        stack, comp = [s], {s}
        while stack:
            for y in adj[stack.pop()]:
                if not seen[y]:
                    seen[y] = True
                    comp.add(y)
                    stack.append(y)
        out.append(frozenset(comp))
    return out


def ref_clusters(
    n: int,
    edges: Iterable[tuple[int, int]],
    keep: str = "first",
    lengths: Sequence[int] | None = None,
) -> tuple[list[int], list[int], list[bool]]:
    """``(cluster, representative, keep)`` per document, as ``assign_clusters`` defines them."""
    representative = list(range(n))
    for comp in ref_components(n, edges):
        if keep == "first" or lengths is None:
            rep = min(comp)
        elif keep == "longest":
            rep = min(comp, key=lambda i: (-lengths[i], i))
        else:
            rep = min(comp, key=lambda i: (lengths[i], i))
        for i in comp:
            representative[i] = rep
    sizes: dict[int, int] = defaultdict(int)
    for r in representative:
        sizes[r] += 1
    reps = sorted(r for r, s in sizes.items() if s >= 2)
    dense = {r: k for k, r in enumerate(reps)}
    cluster = [dense.get(representative[i], -1) for i in range(n)]
    return cluster, representative, [representative[i] == i for i in range(n)]
