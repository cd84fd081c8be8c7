"""Typed, frozen configuration, validated once when it is made.

The defaults were chosen by measurement on the quality benchmark
(``benchmarks/quality.py``; figures in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from neardup.errors import ConfigError

ShingleMode = Literal["word", "char"]
Tokenizer = Literal["builtin", "jieba"]
KeepPolicy = Literal["first", "longest", "shortest"]
Sketch = Literal["stratified", "classic"]

SHINGLE_MODES: tuple[str, ...] = ("word", "char")
TOKENIZERS: tuple[str, ...] = ("builtin", "jieba")
KEEP_POLICIES: tuple[str, ...] = ("first", "longest", "shortest")
SKETCHES: tuple[str, ...] = ("stratified", "classic")
HASH_VERSION = 1  # bump when any hash, table or signature definition changes


@dataclass(frozen=True)
class TextConfig:
    """How text is normalised before it is cut into tokens."""

    nfkc: bool = True
    """Fold compatibility forms (full-width letters, ligatures, circled digits): NFKD instead of NFD."""
    strip_accents: bool = True
    """Drop nonspacing combining marks after decomposition (é -> e)."""
    lowercase: bool = True
    strip_punctuation: bool = True
    """Treat punctuation, symbols and ``_`` as spaces."""


@dataclass(frozen=True)
class ShingleConfig:
    """How normalised text becomes a set of shingles."""

    mode: ShingleMode = "word"
    """``word``: n consecutive words (a run of CJK/Thai/... letters counts one token per
    character); ``char``: n consecutive characters, spaces included."""
    n: int = 2
    tokenizer: Tokenizer = "builtin"
    """``builtin``: neardup's own word rules; ``jieba``: the text is first cut into words by
    jieba (``pip install 'neardup[zh]'``), each word one token, so Chinese shingles are n words
    instead of n characters. Word mode only."""

    def __post_init__(self) -> None:
        if self.mode not in SHINGLE_MODES:
            raise ConfigError(f"shingle mode must be 'word' or 'char', got {self.mode!r}")
        _check_int("ngram", self.n, 1, 64)
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"tokenizer must be 'builtin' or 'jieba', got {self.tokenizer!r}")
        if self.tokenizer != "builtin" and self.mode != "word":
            raise ConfigError(
                f"tokenizer {self.tokenizer!r} makes words, so it needs shingle mode 'word', "
                f"not {self.mode!r}; character shingles take tokenizer 'builtin'"
            )


@dataclass(frozen=True)
class MinHashConfig:
    """The permutations that make a signature."""

    num_perm: int = 128
    seed: int = 42
    sketch: Sketch = "stratified"
    """``stratified``: each shingle falls in a different stratum of every permutation, which
    makes the Jaccard estimate vary less (about 0.025 instead of 0.035 at J=0.8, 128
    permutations); ``classic``: independent permutations, as indexes and work dirs made before
    the stratified sketch were."""

    def __post_init__(self) -> None:
        _check_int("num_perm", self.num_perm, 1, 8192)
        _check_int("seed", self.seed, 0, 2**64 - 1)
        if self.sketch not in SKETCHES:
            raise ConfigError(f"sketch must be 'stratified' or 'classic', got {self.sketch!r}")


@dataclass(frozen=True)
class LSHConfig:
    """Banding and the similarity threshold."""

    threshold: float = 0.5
    bands: int | None = None
    rows: int | None = None
    fp_weight: float = 0.03
    """Weight of the false-positive integral when choosing (bands, rows); the
    false-negative weight is ``1 - fp_weight``. Low, because exact verification
    drops a false positive for one Jaccard of two sorted arrays, while a false
    negative is a duplicate lost."""
    max_bucket_size: int = 250
    """Buckets with more members are linked as a star to their smallest member."""
    layers: int = 2
    """Band layers the chosen shape may use: 1 bands the signature's values once; 2 may add a
    second layer of bands over the same values in another grouping, which catches pairs near
    the threshold that the first misses (see :mod:`neardup.core.lsh`). A shape given as
    ``bands`` and ``rows`` says its layers itself."""

    def __post_init__(self) -> None:
        t = self.threshold
        if not isinstance(t, (int, float)) or isinstance(t, bool) or math.isnan(t) or not 0 < t <= 1:
            raise ConfigError(f"threshold must be in (0, 1], got {t}")
        if not 0 <= self.fp_weight <= 1:
            raise ConfigError(f"fp_weight must be in [0, 1], got {self.fp_weight}")
        if (self.bands is None) != (self.rows is None):
            raise ConfigError("bands and rows must be given together")
        if self.bands is not None and self.rows is not None:
            _check_int("bands", self.bands, 1, 8192)
            _check_int("rows", self.rows, 1, 8192)
        _check_int("max_bucket_size", self.max_bucket_size, 2, 2**31 - 1)
        _check_int("layers", self.layers, 1, 2)

    @property
    def fn_weight(self) -> float:
        return 1.0 - self.fp_weight


@dataclass(frozen=True)
class DedupConfig:
    """Everything that decides which rows are duplicates."""

    text: TextConfig = field(default_factory=TextConfig)
    shingle: ShingleConfig = field(default_factory=ShingleConfig)
    minhash: MinHashConfig = field(default_factory=MinHashConfig)
    lsh: LSHConfig = field(default_factory=LSHConfig)
    verify: bool = True
    """Compute the exact Jaccard of every candidate pair and drop those below the threshold."""
    keep: KeepPolicy = "first"
    match_empty: bool = False
    """Treat documents with no shingles (empty after normalisation) as duplicates of each other."""
    containment: float | None = None
    """Decide by containment instead of Jaccard: a document is a duplicate when at least this
    share of its shingles is in a larger kept document (which is kept in its place)."""

    def __post_init__(self) -> None:
        if self.keep not in KEEP_POLICIES:
            raise ConfigError(f"keep must be one of first, longest, shortest; got {self.keep!r}")
        c = self.containment
        if c is not None:
            if isinstance(c, bool) or not isinstance(c, (int, float)) or math.isnan(c) or not 0 < c <= 1:
                raise ConfigError(f"containment must be in (0, 1], got {c!r}")
            if self.keep != "first":
                raise ConfigError(
                    f"keep={self.keep} does not apply to a containment run: the larger document "
                    "of a pair is kept, the one contained in it goes"
                )
        lsh = self.lsh
        if lsh.bands is not None and lsh.rows is not None:
            check_shape(lsh.bands, lsh.rows, self.minhash.num_perm)

    @classmethod
    def create(
        cls,
        *,
        threshold: float | None = None,
        shingle: ShingleMode | None = None,
        ngram: int | None = None,
        tokenizer: Tokenizer | None = None,
        num_perm: int | None = None,
        seed: int | None = None,
        sketch: Sketch | None = None,
        bands: int | None = None,
        rows: int | None = None,
        fp_weight: float | None = None,
        max_bucket_size: int | None = None,
        layers: int | None = None,
        nfkc: bool | None = None,
        strip_accents: bool | None = None,
        lowercase: bool | None = None,
        strip_punctuation: bool | None = None,
        verify: bool | None = None,
        keep: KeepPolicy | None = None,
        match_empty: bool | None = None,
        containment: float | None = None,
    ) -> DedupConfig:
        """A config from flat keyword settings; ``None`` keeps the default."""

        def pick(name: str, value: Any, default: Any) -> dict[str, Any]:
            return {name: default if value is None else value}

        d_text, d_sh, d_mh, d_lsh = TextConfig(), ShingleConfig(), MinHashConfig(), LSHConfig()
        return cls(
            text=TextConfig(
                **pick("nfkc", nfkc, d_text.nfkc),
                **pick("strip_accents", strip_accents, d_text.strip_accents),
                **pick("lowercase", lowercase, d_text.lowercase),
                **pick("strip_punctuation", strip_punctuation, d_text.strip_punctuation),
            ),
            shingle=ShingleConfig(
                **pick("mode", shingle, d_sh.mode),
                **pick("n", ngram, d_sh.n),
                **pick("tokenizer", tokenizer, d_sh.tokenizer),
            ),
            minhash=MinHashConfig(
                **pick("num_perm", num_perm, d_mh.num_perm),
                **pick("seed", seed, d_mh.seed),
                **pick("sketch", sketch, d_mh.sketch),
            ),
            lsh=LSHConfig(
                **pick("threshold", threshold, d_lsh.threshold),
                bands=bands,
                rows=rows,
                **pick("fp_weight", fp_weight, d_lsh.fp_weight),
                **pick("max_bucket_size", max_bucket_size, d_lsh.max_bucket_size),
                **pick("layers", layers, d_lsh.layers),
            ),
            **pick("verify", verify, True),
            **pick("keep", keep, "first"),
            **pick("match_empty", match_empty, False),
            containment=containment,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every setting, but ``shingle.tokenizer``, ``containment``,
        ``minhash.sketch`` and ``lsh.layers`` when they are ``builtin``, None, ``classic`` and 1:
        settings added after work dirs and summaries were first written are left out while they
        have the value those earlier versions used, so that such a run writes (and resumes) what
        they wrote.

        >>> DedupConfig.create(tokenizer="jieba").to_dict()["shingle"]
        {'mode': 'word', 'n': 2, 'tokenizer': 'jieba'}
        >>> DedupConfig().to_dict()["shingle"]
        {'mode': 'word', 'n': 2}
        >>> DedupConfig.create(sketch="classic").to_dict()["minhash"]
        {'num_perm': 128, 'seed': 42}
        """
        out = asdict(self)
        if self.shingle.tokenizer == "builtin":
            del out["shingle"]["tokenizer"]
        if self.minhash.sketch == "classic":
            del out["minhash"]["sketch"]
        if self.lsh.layers == 1:
            del out["lsh"]["layers"]
        if self.containment is None:
            del out["containment"]
        return out


def allows_second_layer(rows: int, num_perm: int) -> bool:
    """Whether bands of ``rows`` values over ``num_perm`` may have a second layer: each of its
    bands then meets each first-layer band in at most one value (see :mod:`neardup.core.lsh`)."""
    return rows >= 2 and num_perm % rows == 0 and rows * rows <= num_perm


def check_shape(bands: int, rows: int, num_perm: int) -> None:
    """Raise ConfigError unless (bands, rows) bands ``num_perm`` values: one layer of
    ``num_perm // rows`` bands, and where :func:`allows_second_layer` up to as many again in a
    second layer."""
    if bands * rows == num_perm:
        return
    if not (allows_second_layer(rows, num_perm) and num_perm < bands * rows <= 2 * num_perm):
        raise ConfigError(
            f"bands * rows must equal num_perm: {bands} * {rows} = {bands * rows}, num_perm = "
            f"{num_perm} (or, for a second layer, exceed it by at most num_perm, where rows "
            "divides num_perm and rows * rows <= num_perm)"
        )


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ConfigError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")
