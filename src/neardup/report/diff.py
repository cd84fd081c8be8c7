"""Two documents side by side as neardup sees them: their tokens, what changed between them, and
which tokens belong to shingles the two share.

The tokens are the normalised ones shingles are made of (:func:`neardup.core.text.tokenize`), so
what the page marks as shared is exactly what the Jaccard similarity counted. Which tokens sit in
a shared shingle is worked out with numpy over the token ids (an n-gram is a rolling hash of ids,
membership is ``np.isin``, coverage a convolution); the edit script is difflib's over token ids.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from neardup.config import ShingleConfig, TextConfig
from neardup.core.text import tokenize

_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class PairDiff:
    """``ops`` are ``(tag, a_lo, a_hi, b_lo, b_hi)`` over the two token lists (tags of difflib:
    equal, replace, delete, insert); ``shared_a`` / ``shared_b`` flag the tokens inside a
    shingle both documents have."""

    ops: list[tuple[str, int, int, int, int]]
    shared_a: np.ndarray
    shared_b: np.ndarray

    def to_dict(self) -> dict[str, object]:
        return {
            "ops": [list(op) for op in self.ops],
            "shared_a": runs(self.shared_a),
            "shared_b": runs(self.shared_b),
        }


def tokens_of(text: str, text_config: TextConfig, shingle: ShingleConfig, limit: int) -> list[str]:
    """The first ``limit`` tokens of ``text`` under the run's settings (characters in char mode)."""
    return tokenize(text, text_config, mode=shingle.mode, tokenizer=shingle.tokenizer)[:limit]


def _ngram_keys(ids: np.ndarray, n: int) -> np.ndarray:
    """One uint64 key per n-gram start (rolling mix of the n ids); empty when shorter than n."""
    count = ids.size - n + 1
    if count <= 0:
        return np.empty(0, np.uint64)
    keys = np.zeros(count, np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):  # n is the shingle length: a handful of vector passes
            keys = keys * _MIX + ids[k : k + count].astype(np.uint64) + np.uint64(1)
    return keys


def _covered(starts: np.ndarray, length: int, n: int) -> np.ndarray:
    """Tokens inside at least one flagged n-gram (``starts`` flags each n-gram start)."""
    if length == 0 or starts.size == 0:
        return np.zeros(length, bool)
    return np.convolve(starts.astype(np.int64), np.ones(n, np.int64))[:length] > 0


def pair_diff(tokens_a: list[str], tokens_b: list[str], n: int) -> PairDiff:
    """What changed from ``tokens_a`` to ``tokens_b`` and which tokens sit in shared n-grams.

    >>> d = pair_diff(["the", "quick", "brown", "fox"], ["the", "quick", "red", "fox"], 2)
    >>> d.ops
    [('equal', 0, 2, 0, 2), ('replace', 2, 3, 2, 3), ('equal', 3, 4, 3, 4)]
    >>> d.shared_a.tolist(), d.shared_b.tolist()
    ([True, True, False, False], [True, True, False, False])
    """
    vocabulary, ids = np.unique(np.array(tokens_a + tokens_b, dtype=object).astype(str), return_inverse=True)
    del vocabulary
    ids_a, ids_b = ids[: len(tokens_a)], ids[len(tokens_a) :]
    n_eff = min(n, max(len(tokens_a), len(tokens_b), 1))
    keys_a, keys_b = _ngram_keys(ids_a, n_eff), _ngram_keys(ids_b, n_eff)
    shared_a = _covered(np.isin(keys_a, keys_b), len(tokens_a), n_eff)
    shared_b = _covered(np.isin(keys_b, keys_a), len(tokens_b), n_eff)
    matcher = difflib.SequenceMatcher(None, ids_a.tolist(), ids_b.tolist(), autojunk=False)
    ops = [(str(tag), a0, a1, b0, b1) for tag, a0, a1, b0, b1 in matcher.get_opcodes()]
    return PairDiff(ops=ops, shared_a=shared_a, shared_b=shared_b)


def runs(flags: np.ndarray) -> list[int]:
    """Boolean flags as run lengths, the first run false (possibly 0): compact in JSON.

    >>> runs(np.array([True, True, False, True]))
    [0, 2, 1, 1]
    """
    if flags.size == 0:
        return []
    change = np.flatnonzero(np.diff(flags.astype(np.int8))) + 1
    bounds = np.concatenate(([0], change, [flags.size]))
    lengths = np.diff(bounds).tolist()
    return [0, *lengths] if flags[0] else lengths
