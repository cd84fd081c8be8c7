"""Convenience functions over a :class:`~neardup.config.DedupConfig`: signatures and exact Jaccard."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.config import DedupConfig
from neardup.core.minhash import MinHasher
from neardup.core.shingles import shingle_hashes
from neardup.core.text import encode_texts


def signatures(texts: Sequence[str], config: DedupConfig | None = None) -> np.ndarray:
    """The MinHash signature matrix (uint32, one row per text) under ``config``.

    >>> signatures(["a b c d e f", "a b c d e f"]).shape
    (2, 128)
    """
    cfg = config or DedupConfig()
    return MinHasher(cfg.minhash, cfg.text, cfg.shingle).signatures(encode_texts(list(texts)))


def exact_jaccard(text_a: str, text_b: str, config: DedupConfig | None = None) -> float:
    """Exact Jaccard similarity of two texts' shingle sets under ``config``.

    Two texts without shingles have similarity 0.0.

    >>> exact_jaccard("the quick brown fox jumps", "The quick brown fox jumps!")
    1.0
    """
    cfg = config or DedupConfig()
    a = shingle_hashes(text_a, cfg.text, cfg.shingle)
    b = shingle_hashes(text_b, cfg.text, cfg.shingle)
    union = np.union1d(a, b).size
    return float(np.intersect1d(a, b, assume_unique=True).size / union) if union else 0.0
