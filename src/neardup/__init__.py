"""neardup: find and remove near-duplicate texts with MinHash and LSH.

>>> import neardup
>>> result = neardup.dedup(["A cat sat on the mat.", "a cat sat on the mat!", "Dogs bark."])
>>> result.groups()
[[0, 1]]
"""

from neardup.config import DedupConfig, LSHConfig, MinHashConfig, ShingleConfig, TextConfig
from neardup.core.minhash import MinHasher, estimate_jaccard
from neardup.core.params import candidate_probability, optimal_shape
from neardup.core.shingles import shingle_hashes
from neardup.core.text import normalize, tokenize
from neardup.engines import ExternalResult, dedup_external
from neardup.errors import ConfigError, InputError, MissingColumnError, NeardupError, OutputError
from neardup.pipeline import DedupResult, Pairs, dedup, find_duplicates, find_duplicates_in_passes
from neardup.similarity import exact_jaccard, signatures

__version__ = "0.1.0.dev0"

__all__ = [
    "ConfigError",
    "DedupConfig",
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
    "optimal_shape",
    "shingle_hashes",
    "signatures",
    "tokenize",
]
