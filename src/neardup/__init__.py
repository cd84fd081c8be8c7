"""neardup: find and remove near-duplicate texts with MinHash and LSH.

>>> import neardup
>>> result = neardup.dedup(["A cat sat on the mat.", "a cat sat on the mat!", "Dogs bark."])
>>> result.groups()
[[0, 1]]

The names below are imported when first used, so ``import neardup`` (and ``neardup --help``)
does not load numba.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0.dev0"

_WHERE = {
    "ConfigError": "neardup.errors",
    "DedupConfig": "neardup.config",
    "DedupJob": "neardup.jobs",
    "DedupResult": "neardup.pipeline",
    "ExternalResult": "neardup.engines",
    "InputError": "neardup.errors",
    "LSHConfig": "neardup.config",
    "MinHashConfig": "neardup.config",
    "MinHasher": "neardup.core.minhash",
    "MissingColumnError": "neardup.errors",
    "NeardupError": "neardup.errors",
    "OutputError": "neardup.errors",
    "Pairs": "neardup.pipeline",
    "RayOptions": "neardup.jobs",
    "ShingleConfig": "neardup.config",
    "TextConfig": "neardup.config",
    "candidate_probability": "neardup.core.params",
    "dedup": "neardup.pipeline",
    "dedup_external": "neardup.engines",
    "estimate_jaccard": "neardup.core.minhash",
    "exact_jaccard": "neardup.similarity",
    "find_duplicates": "neardup.pipeline",
    "find_duplicates_in_passes": "neardup.pipeline",
    "normalize": "neardup.core.text",
    "open_index": "neardup.jobs",
    "optimal_shape": "neardup.core.params",
    "run_dedup": "neardup.jobs",
    "shingle_hashes": "neardup.core.shingles",
    "signatures": "neardup.similarity",
    "tokenize": "neardup.core.text",
}

__all__ = [
    "ConfigError",
    "DedupConfig",
    "DedupJob",
    "DedupResult",
    "ExternalResult",
    "InputError",
    "LSHConfig",
    "MinHashConfig",
    "MinHasher",
    "MissingColumnError",
    "NeardupError",
    "OutputError",
    "Pairs",
    "RayOptions",
    "ShingleConfig",
    "TextConfig",
    "__version__",
    "candidate_probability",
    "dedup",
    "dedup_external",
    "estimate_jaccard",
    "exact_jaccard",
    "find_duplicates",
    "find_duplicates_in_passes",
    "normalize",
    "open_index",
    "optimal_shape",
    "run_dedup",
    "shingle_hashes",
    "signatures",
    "tokenize",
]


def _segment_jieba(texts: Sequence[str]) -> list[str]:
    segmented: list[str] = import_module("neardup.segmentation").segment_jieba(texts)  # imports jieba
    return segmented


# The core knows segmenters by name only (it imports no third-party segmenter); this package
# module runs before any of the core's, so every path that reads text finds jieba's here.
import_module("neardup.core.segmenters").register_segmenter("jieba", _segment_jieba)


# the helper imported by module, not by name: the names imported from neardup's modules here are its API
__getattr__, __dir__ = import_module("neardup.lazy_names").lazy_names(__name__, _WHERE, __all__, globals())


if TYPE_CHECKING:
    from neardup.config import DedupConfig, LSHConfig, MinHashConfig, ShingleConfig, TextConfig
    from neardup.core.minhash import MinHasher, estimate_jaccard
    from neardup.core.params import candidate_probability, optimal_shape
    from neardup.core.shingles import shingle_hashes
    from neardup.core.text import normalize, tokenize
    from neardup.engines import ExternalResult, dedup_external
    from neardup.errors import ConfigError, InputError, MissingColumnError, NeardupError, OutputError
    from neardup.jobs import DedupJob, RayOptions, open_index, run_dedup
    from neardup.pipeline import DedupResult, Pairs, dedup, find_duplicates, find_duplicates_in_passes
    from neardup.similarity import exact_jaccard, signatures
