"""The settings an index is built with, stored in it, and checked against every signature and query."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from neardup.config import HASH_VERSION, SKETCHES, TOKENIZERS, DedupConfig
from neardup.core.containment import containment_columns
from neardup.core.params import lsh_shape
from neardup.errors import IndexSettingsError

FORMAT_VERSION = 1
"""Version of the index's logical format; bump when what an index stores changes meaning."""

SIGNATURE_FIELDS: tuple[str, ...] = (
    "format_version",
    "hash_version",
    "num_perm",
    "seed",
    "sketch",
    "shingle_mode",
    "ngram",
    "tokenizer",
    "nfkc",
    "strip_accents",
    "lowercase",
    "strip_punctuation",
)
"""The settings that decide a signature: two signatures are comparable only if all of these agree."""

BANDING_FIELDS: tuple[str, ...] = ("bands", "rows", "threshold")


@dataclass(frozen=True)
class IndexSettings:
    """Everything that decides what an index stores.

    ``keep_shingles`` says whether the index keeps each document's shingle hashes (needed for exact
    similarity); ``containment`` whether documents are also filed for containment search (see
    :mod:`neardup.core.containment`), and ``partitions`` which size partitions hold documents
    (it only grows). They are properties of the index, not of a signature, so they are never
    compared. ``tokenizer`` and ``sketch`` came after format 1 was first written: an index stored
    without them was built with the builtin tokenizer and the classic sketch, and :meth:`to_dict`
    leaves each out while it has that value, so that such an index reads (and writes) as before.
    """

    format_version: int
    hash_version: int
    num_perm: int
    seed: int
    shingle_mode: str
    ngram: int
    nfkc: bool
    strip_accents: bool
    lowercase: bool
    strip_punctuation: bool
    bands: int
    rows: int
    threshold: float
    keep_shingles: bool = False
    tokenizer: str = "builtin"
    containment: bool = False
    partitions: tuple[int, ...] = ()
    sketch: str = "classic"

    def __post_init__(self) -> None:
        self.to_config()  # validates every value through the config's own checks
        object.__setattr__(self, "partitions", tuple(sorted({int(p) for p in self.partitions})))

    @property
    def band_columns(self) -> int:
        """Band keys per document: the Jaccard bands, then (in a containment index) the
        containment layouts' bands."""
        return self.bands + (containment_columns(self.num_perm) if self.containment else 0)

    @classmethod
    def from_config(
        cls, config: DedupConfig, *, keep_shingles: bool = False, containment: bool = False
    ) -> IndexSettings:
        """The settings of an index built under ``config`` by this version of neardup."""
        bands, rows = lsh_shape(config.lsh, config.minhash)
        return cls(
            format_version=FORMAT_VERSION,
            hash_version=HASH_VERSION,
            num_perm=config.minhash.num_perm,
            seed=config.minhash.seed,
            sketch=config.minhash.sketch,
            shingle_mode=config.shingle.mode,
            ngram=config.shingle.n,
            nfkc=config.text.nfkc,
            strip_accents=config.text.strip_accents,
            lowercase=config.text.lowercase,
            strip_punctuation=config.text.strip_punctuation,
            bands=bands,
            rows=rows,
            threshold=float(config.lsh.threshold),
            keep_shingles=keep_shingles,
            tokenizer=config.shingle.tokenizer,
            containment=containment,
        )

    def to_config(self) -> DedupConfig:
        """A config that makes the same signatures and band keys (with bands and rows fixed)."""
        if self.shingle_mode not in ("word", "char"):
            raise IndexSettingsError(f"shingle_mode must be 'word' or 'char', got {self.shingle_mode!r}")
        if self.tokenizer not in TOKENIZERS:
            raise IndexSettingsError(f"tokenizer must be 'builtin' or 'jieba', got {self.tokenizer!r}")
        if self.sketch not in SKETCHES:
            raise IndexSettingsError(f"sketch must be 'stratified' or 'classic', got {self.sketch!r}")
        return DedupConfig.create(
            threshold=self.threshold,
            shingle="word" if self.shingle_mode == "word" else "char",
            ngram=self.ngram,
            tokenizer="jieba" if self.tokenizer == "jieba" else "builtin",
            num_perm=self.num_perm,
            seed=self.seed,
            sketch="stratified" if self.sketch == "stratified" else "classic",
            bands=self.bands,
            rows=self.rows,
            nfkc=self.nfkc,
            strip_accents=self.strip_accents,
            lowercase=self.lowercase,
            strip_punctuation=self.strip_punctuation,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every setting; ``tokenizer`` only when it is not ``builtin``,
        ``sketch`` only when it is not ``classic``, and the two containment settings only in a
        containment index, so that releases before them read the others."""
        out = asdict(self)
        out["partitions"] = list(self.partitions)
        if self.tokenizer == "builtin":
            del out["tokenizer"]
        if self.sketch == "classic":
            del out["sketch"]
        if not self.containment:
            del out["containment"], out["partitions"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexSettings:
        """Settings from :meth:`to_dict` output; a missing or unknown setting is an error."""
        names = {f.name for f in fields(cls)}
        required = names - {"keep_shingles", "tokenizer", "containment", "partitions", "sketch"}
        missing = sorted(required - data.keys())
        unknown = sorted(data.keys() - names)
        if missing or unknown:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(missing))
            if unknown:
                parts.append("unknown " + ", ".join(unknown))
            raise IndexSettingsError(
                f"the stored index settings are not readable ({'; '.join(parts)}); "
                "the index may come from another version of neardup"
            )
        if "partitions" in data:
            parts = data["partitions"]
            if not isinstance(parts, (list, tuple)) or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts
            ):
                raise IndexSettingsError(f"the stored index partitions are not readable: {parts!r}")
            data = {**data, "partitions": tuple(parts)}
        return cls(**data)

    def check_compatible(
        self, other: IndexSettings, *, what: str = "signature", banding: bool = False
    ) -> None:
        """Raise :class:`IndexSettingsError` unless ``other`` makes the same signatures as ``self``.

        ``self`` is the index's settings, ``other`` those of a ``what`` (``signature``, ``query``,
        ``config``...). ``banding=True`` also compares bands, rows and threshold.

        >>> a = IndexSettings.from_config(DedupConfig())
        >>> a.check_compatible(IndexSettings.from_config(DedupConfig.create(seed=7)), what="query")
        Traceback (most recent call last):
        ...
        neardup.errors.IndexSettingsError: the index was built with seed=42 but this query uses seed=7
        """
        names = SIGNATURE_FIELDS + (BANDING_FIELDS if banding else ())
        diffs = [
            f"the index was built with {name}={getattr(self, name)!r} "
            f"but this {what} uses {name}={getattr(other, name)!r}"
            for name in names
            if getattr(self, name) != getattr(other, name)
        ]
        if diffs:
            raise IndexSettingsError("; ".join(diffs))
