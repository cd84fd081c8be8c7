"""The tuning sweep behind ``neardup tune``: every setting of a grid run over a labelled sample,
scored against the labels, and the setting to use recommended.

A *feature setting* is what the signatures depend on: the shingle mode, its n and the text
normalisation. A *point* is a feature setting with a threshold. The sweep takes each feature
setting's signatures and shingle counts once, and for each threshold its LSH shape (the one the
pipeline would choose: :func:`~neardup.core.params.lsh_shape` with the default ``fp_weight``) and
candidate pairs; the exact Jaccard of the union of all thresholds' candidates is then computed
once per unique pair, and each threshold keeps its own candidates at or above itself, clusters
them and is scored (:func:`~neardup.report.metrics.pair_scores` and
:func:`~neardup.report.metrics.removal_scores`). Each point's clusters are the ones
:func:`~neardup.pipeline.find_duplicates` gives with that point's config (keeper ``first``,
verification on, empty documents unmatched).

The recommended point has the best pair F1 among the points whose pair precision reaches the
floor; ties go to the higher threshold (stricter), then word shingles over character ones (far
fewer shingles a document), then the smaller n, then the earlier point in the grid's order. With
no point on the floor there is no recommendation: the result names the most precise point (ties
as above) as the ``fallback`` and says why. A point that finds no true pair (pair F1 0) is never
recommended nor the fallback, though its precision is 1.0 by convention (nothing claimed), unless
there are no true pairs at all, or every point is such a point.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neardup.config import (
    SHINGLE_MODES,
    DedupConfig,
    LSHConfig,
    MinHashConfig,
    ShingleConfig,
    ShingleMode,
    TextConfig,
)
from neardup.core.clusters import assign_clusters
from neardup.core.lsh import band_keys, build_buckets, candidate_pairs
from neardup.core.lsh import unpack_pairs as unpack
from neardup.core.minhash import MinHasher
from neardup.core.params import lsh_shape
from neardup.core.shingles import shingle_sets
from neardup.core.sorting import sorted_unique
from neardup.core.text import TextBatch, encode_texts
from neardup.engines.candidates import pack
from neardup.errors import ConfigError, InputError
from neardup.pipeline import Progress, exact_jaccard_in_blocks
from neardup.report.metrics import pair_scores, removal_scores, singletons_apart

_DEFAULTS = DedupConfig()


@dataclass(frozen=True)
class Normalisation:
    """A named set of :class:`~neardup.config.TextConfig` options: ``default`` is every
    normalisation on (the pipeline's default); :meth:`flags` gives the ``neardup dedup`` flags."""

    name: str
    nfkc: bool = True
    strip_accents: bool = True
    lowercase: bool = True
    strip_punctuation: bool = True

    def __post_init__(self) -> None:
        if not self.name or any(c.isspace() for c in self.name):
            raise ConfigError(f"a normalisation needs a name without spaces, got {self.name!r}")

    def text_config(self) -> TextConfig:
        return TextConfig(
            nfkc=self.nfkc,
            strip_accents=self.strip_accents,
            lowercase=self.lowercase,
            strip_punctuation=self.strip_punctuation,
        )

    def flags(self) -> list[str]:
        """The ``neardup dedup`` flags for this normalisation, only those that differ from the
        default (``[]`` for the default).

        >>> KEEP_CASE_PUNCTUATION.flags()
        ['--keep-case', '--keep-punctuation']
        """
        d = _DEFAULTS.text
        out = []
        if self.nfkc != d.nfkc:
            out.append("--nfkc" if self.nfkc else "--no-nfkc")
        if self.strip_accents != d.strip_accents:
            out.append("--keep-accents")  # the CLI can only turn stripping off, the default
        if self.lowercase != d.lowercase:
            out.append("--keep-case")
        if self.strip_punctuation != d.strip_punctuation:
            out.append("--keep-punctuation")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nfkc": self.nfkc,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
            "strip_punctuation": self.strip_punctuation,
            "flags": self.flags(),
        }


DEFAULT = Normalisation("default")
"""Every normalisation on: NFKC folding, accents, case and punctuation stripped (no flags)."""
KEEP_CASE_PUNCTUATION = Normalisation("keep-case-punctuation", lowercase=False, strip_punctuation=False)
"""Case and punctuation kept (``--keep-case --keep-punctuation``)."""
RAW = Normalisation("raw", nfkc=False, strip_accents=False, lowercase=False, strip_punctuation=False)
"""No normalisation at all (``--no-nfkc --keep-accents --keep-case --keep-punctuation``)."""
NORMALISATIONS = {norm.name: norm for norm in (DEFAULT, KEEP_CASE_PUNCTUATION, RAW)}
"""The named normalisations, by name (``neardup tune --normalisations``)."""


@dataclass(frozen=True)
class TuneGrid:
    """The settings a sweep tries: every shingle mode with each of its own n (``word_ngrams``
    for ``word``, ``char_ngrams`` for ``char``: a character 2-gram is far too common to tell
    documents apart, so character modes take larger n), with every normalisation, at every
    threshold. The default grid is (3 + 2) x 2 = 10 feature settings x 5 thresholds = 50 points.
    """

    thresholds: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
    shingles: tuple[ShingleMode, ...] = ("word", "char")
    word_ngrams: tuple[int, ...] = (2, 3, 5)
    char_ngrams: tuple[int, ...] = (3, 5)
    normalisations: tuple[Normalisation, ...] = (DEFAULT, KEEP_CASE_PUNCTUATION)

    def __post_init__(self) -> None:
        if not self.thresholds:
            raise ConfigError("the grid needs at least one threshold")
        for t in self.thresholds:
            LSHConfig(threshold=t)  # validates
        if len(set(self.thresholds)) != len(self.thresholds):
            raise ConfigError(f"the grid's thresholds repeat: {self.thresholds}")
        if not self.shingles:
            raise ConfigError("the grid needs at least one shingle mode")
        for mode in self.shingles:
            if mode not in SHINGLE_MODES:
                raise ConfigError(f"shingle mode must be 'word' or 'char', got {mode!r}")
        if len(set(self.shingles)) != len(self.shingles):
            raise ConfigError(f"the grid's shingle modes repeat: {self.shingles}")
        for mode in self.shingles:
            ns = self.ngrams(mode)
            if not ns:
                raise ConfigError(f"the grid has shingle mode {mode!r} but no n for it ({mode}_ngrams)")
            for n in ns:
                ShingleConfig(mode=mode, n=n)  # validates
            if len(set(ns)) != len(ns):
                raise ConfigError(f"the grid's {mode}_ngrams repeat: {ns}")
        if not self.normalisations:
            raise ConfigError("the grid needs at least one normalisation")
        names = [norm.name for norm in self.normalisations]
        if len(set(names)) != len(names):
            raise ConfigError(f"the grid's normalisation names repeat: {names}")

    def ngrams(self, mode: str) -> tuple[int, ...]:
        """The n the grid tries for shingle ``mode``."""
        return self.word_ngrams if mode == "word" else self.char_ngrams

    def feature_settings(self) -> list[tuple[ShingleMode, int, Normalisation]]:
        """(mode, n, normalisation) of each feature setting, in sweep order."""
        return [
            (mode, n, norm)
            for mode in self.shingles
            for n in self.ngrams(mode)
            for norm in self.normalisations
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": list(self.thresholds),
            "shingles": list(self.shingles),
            "word_ngrams": list(self.word_ngrams),
            "char_ngrams": list(self.char_ngrams),
            "normalisations": [norm.to_dict() for norm in self.normalisations],
        }


@dataclass(frozen=True)
class TunePoint:
    """One setting of the sweep and its scores against the labels.

    ``candidate_pairs`` are the LSH candidates at this threshold's shape, ``verified_pairs``
    those whose exact Jaccard reaches the threshold (the edges, as in ``summary.json``);
    ``seconds`` is this threshold's own time (banding, candidates, clustering, scoring), the
    feature setting's shared signature and verification time being on the setting."""

    shingle: ShingleMode
    ngram: int
    normalisation: Normalisation
    num_perm: int
    seed: int
    threshold: float
    bands: int
    rows: int
    candidate_pairs: int
    verified_pairs: int
    true_pairs: int
    predicted_pairs: int
    pair_precision: float
    pair_recall: float
    pair_f1: float
    ari: float
    removal_precision: float
    removal_recall: float
    seconds: float

    def config(self) -> DedupConfig:
        """The dedup config of this point."""
        norm = self.normalisation
        return DedupConfig.create(
            threshold=self.threshold,
            shingle=self.shingle,
            ngram=self.ngram,
            num_perm=self.num_perm,
            seed=self.seed,
            nfkc=norm.nfkc,
            strip_accents=norm.strip_accents,
            lowercase=norm.lowercase,
            strip_punctuation=norm.strip_punctuation,
        )

    def describe(self) -> str:
        return f"{self.shingle} {self.ngram}-grams, {self.normalisation.name}, threshold {self.threshold}"

    def scores(self) -> dict[str, Any]:
        """The point's own figures (without its feature setting)."""
        return {
            "threshold": self.threshold,
            "bands": self.bands,
            "rows": self.rows,
            "candidate_pairs": self.candidate_pairs,
            "verified_pairs": self.verified_pairs,
            "true_pairs": self.true_pairs,
            "predicted_pairs": self.predicted_pairs,
            "pair_precision": self.pair_precision,
            "pair_recall": self.pair_recall,
            "pair_f1": self.pair_f1,
            "ari": self.ari,
            "removal_precision": self.removal_precision,
            "removal_recall": self.removal_recall,
            "seconds": round(self.seconds, 4),
        }

    def label(self) -> str:
        """The feature setting in a few words: ``word 3-grams, default``."""
        return f"{self.shingle} {self.ngram}-grams, {self.normalisation.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "shingle": self.shingle,
            "ngram": self.ngram,
            "normalisation": self.normalisation.name,
            "label": self.label(),
            **self.scores(),
            "command": command_args(self),
        }


@dataclass(frozen=True)
class FeatureSweep:
    """One feature setting's points, one per threshold in the grid's order, with the work
    they shared: signatures once, and the exact Jaccard of ``unique_pairs`` pairs (the union
    of every threshold's candidates) once."""

    shingle: ShingleMode
    ngram: int
    normalisation: Normalisation
    points: tuple[TunePoint, ...]
    unique_pairs: int
    signature_seconds: float
    verify_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "shingle": self.shingle,
            "ngram": self.ngram,
            "normalisation": self.normalisation.to_dict(),
            "label": f"{self.shingle} {self.ngram}-grams, {self.normalisation.name}",
            "unique_pairs": self.unique_pairs,
            "signature_seconds": round(self.signature_seconds, 4),
            "verify_seconds": round(self.verify_seconds, 4),
            "points": [p.scores() for p in self.points],
        }


@dataclass(frozen=True)
class TuneResult:
    """A sweep's points and what it recommends.

    ``recommended`` is the best pair F1 at or above ``min_precision`` (None when no point gets
    there: then ``fallback`` is the most precise point and ``reason`` says so); ``best`` is the
    best pair F1 of all, floor or not. ``signature_computations`` counts the signature passes
    (one per feature setting), ``jaccard_computations`` the pairs whose exact Jaccard was computed
    (each unique candidate pair once per feature setting)."""

    rows: int
    true_pairs: int
    min_precision: float
    num_perm: int
    seed: int
    grid: TuneGrid
    settings: tuple[FeatureSweep, ...]
    recommended: TunePoint | None
    best: TunePoint
    fallback: TunePoint | None
    reason: str | None
    signature_computations: int
    jaccard_computations: int
    seconds: float

    @property
    def points(self) -> list[TunePoint]:
        """Every point, feature setting by feature setting."""
        return [p for s in self.settings for p in s.points]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the sweep (see the module docstring for the choice)."""
        return {
            "rows": self.rows,
            "true_pairs": self.true_pairs,
            "min_precision": self.min_precision,
            "num_perm": self.num_perm,
            "seed": self.seed,
            "grid": self.grid.to_dict(),
            "signature_computations": self.signature_computations,
            "jaccard_computations": self.jaccard_computations,
            "seconds": round(self.seconds, 4),
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "best": self.best.to_dict(),
            "fallback": self.fallback.to_dict() if self.fallback else None,
            "reason": self.reason,
            "settings": [s.to_dict() for s in self.settings],
        }


def command_args(point: TunePoint) -> list[str]:
    """The ``neardup dedup`` flags that reproduce ``point``: threshold, shingle mode and n always
    (a tuned setting should read as one), the normalisation's flags and ``--num-perm`` /
    ``--seed`` only when they differ from the defaults.

    >>> p = TunePoint("word", 3, KEEP_CASE_PUNCTUATION, 128, 42, 0.7, 9, 14, 0, 0, 0, 0,
    ...               1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0)
    >>> command_args(p)
    ['--threshold', '0.7', '--shingle', 'word', '--ngram', '3', '--keep-case', '--keep-punctuation']
    """
    args = [
        "--threshold",
        repr(float(point.threshold)),
        "--shingle",
        point.shingle,
        "--ngram",
        str(point.ngram),
    ]
    args += point.normalisation.flags()
    if point.num_perm != _DEFAULTS.minhash.num_perm:
        args += ["--num-perm", str(point.num_perm)]
    if point.seed != _DEFAULTS.minhash.seed:
        args += ["--seed", str(point.seed)]
    return args


def sample_rows(truth_labels: np.ndarray, size: int, *, seed: int = 42) -> np.ndarray:
    """Positions (ascending) of about ``size`` rows for ``--sample``, whole true groups at a time:
    a group cut in two would count its missing members' pairs as misses, so pair recall would
    mean nothing.

    The groups (distinct labels) are shuffled with ``numpy.random.default_rng(seed)`` and taken
    in that order while they fit; a group larger than the room left is passed over, and smaller
    ones after it still go in. The sample holds at most ``size`` rows, and fewer only when no
    untaken group is small enough for the room left. Every group is equally likely to be taken,
    so the sample's mix of singletons and groups is the corpus's, in expectation. With ``size`` at
    least the number of rows, every row is taken. The same labels, size and seed give the same rows.

    >>> sample_rows(np.array([0, 1, 1, 2, 2, 2, 3]), 3, seed=0).size <= 3
    True
    """
    labels = np.asarray(truth_labels)
    if labels.ndim != 1:
        raise ConfigError(f"truth labels must be one label per row, got an array of shape {labels.shape}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ConfigError(f"the sample size must be a whole number of rows of at least 1, got {size!r}")
    n = int(labels.size)
    if size >= n:
        return np.arange(n, dtype=np.int64)
    _, group, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    order = np.random.default_rng(seed).permutation(sizes.size)
    chosen = np.zeros(sizes.size, dtype=bool)
    room = size
    # In the shuffled order, the groups that fit are taken; a group too large for the room left is
    # passed over and the next ones tried (a few passes, each over the groups still untaken).
    while room > 0:
        left = order[~chosen[order] & (sizes[order] <= room)]
        if left.size == 0:
            break
        taken = left[: int(np.searchsorted(np.cumsum(sizes[left]), room, side="right"))]  # >= 1 group
        chosen[taken] = True
        room -= int(sizes[taken].sum())
    return np.flatnonzero(chosen[group.ravel()]).astype(np.int64)


def tune(
    texts: TextBatch | Sequence[str | None],
    truth_labels: np.ndarray | Sequence[int],
    *,
    grid: TuneGrid | None = None,
    min_precision: float = 0.9,
    num_perm: int = _DEFAULTS.minhash.num_perm,
    seed: int = _DEFAULTS.minhash.seed,
    progress: Progress | None = None,
) -> TuneResult:
    """Sweep ``grid`` over ``texts`` (a list of strings, None counting as empty, or a batch)
    labelled by ``truth_labels`` (one integer per text; equal labels mark one true group) and
    recommend the point with the best pair F1 whose pair precision is at least
    ``min_precision`` (see the module docstring for ties and for when none is).

    ``progress(stage, done, total)`` is called with ``signatures`` and ``verify`` (counting
    feature settings) and ``points`` (counting points) as the sweep goes.
    """
    started = time.perf_counter()
    grid = grid or TuneGrid()
    if isinstance(min_precision, bool) or not 0.0 <= min_precision <= 1.0:
        raise ConfigError(f"min_precision must be in [0, 1], got {min_precision}")
    minhash = MinHashConfig(num_perm=num_perm, seed=seed)
    batch = _as_batch(texts)
    n = len(batch)
    truth = np.asarray(truth_labels)
    if truth.shape != (n,) or (truth.size and not np.issubdtype(truth.dtype, np.integer)):
        raise InputError(
            f"the truth labels must be one integer per text: {n} texts, labels of shape "
            f"{truth.shape} and type {truth.dtype}"
        )
    truth = truth.astype(np.int64)
    report = progress or _noop

    shapes = {t: lsh_shape(LSHConfig(threshold=t), minhash) for t in grid.thresholds}
    features = grid.feature_settings()
    sweeps: list[FeatureSweep] = []
    signature_computations = 0
    verified = 0
    for k, (mode, ngram, norm) in enumerate(features):
        sweep = _sweep_feature(
            batch,
            truth,
            shingle=ShingleConfig(mode=mode, n=ngram),
            norm=norm,
            minhash=minhash,
            thresholds=grid.thresholds,
            shapes=shapes,
            report=report,
            index=k,
            of=len(features),
        )
        signature_computations += 1
        verified += sweep.unique_pairs
        sweeps.append(sweep)

    points = [p for s in sweeps for p in s.points]
    recommended, best, fallback, reason = _choose(points, min_precision)
    return TuneResult(
        rows=n,
        true_pairs=points[0].true_pairs,
        min_precision=min_precision,
        num_perm=num_perm,
        seed=seed,
        grid=grid,
        settings=tuple(sweeps),
        recommended=recommended,
        best=best,
        fallback=fallback,
        reason=reason,
        signature_computations=signature_computations,
        jaccard_computations=verified,
        seconds=time.perf_counter() - started,
    )


def _noop(stage: str, done: int, total: int) -> None:
    return None


def _as_batch(texts: TextBatch | Sequence[str | None]) -> TextBatch:
    if isinstance(texts, TextBatch):
        return texts
    if isinstance(texts, str):
        raise TypeError("tune takes a list of texts or a batch, not one str")
    items = list(texts)
    for k, item in enumerate(items):
        if item is not None and not isinstance(item, str):
            raise TypeError(f"text {k} is a {type(item).__name__}, not a str (or None)")
    return encode_texts(items)


@dataclass
class _Timer:
    seconds: float = 0.0
    _t0: float = field(default=0.0, repr=False)

    def __enter__(self) -> _Timer:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds += time.perf_counter() - self._t0


def _sweep_feature(
    batch: TextBatch,
    truth: np.ndarray,
    *,
    shingle: ShingleConfig,
    norm: Normalisation,
    minhash: MinHashConfig,
    thresholds: tuple[float, ...],
    shapes: dict[float, tuple[int, int]],
    report: Progress,
    index: int,
    of: int,
) -> FeatureSweep:
    """One feature setting: its signatures once, each threshold's candidates, the exact
    Jaccard of their union once, then each threshold's clusters and scores."""
    n = len(batch)
    text = norm.text_config()
    max_bucket = _DEFAULTS.lsh.max_bucket_size
    with _Timer() as sig_time:
        sigs, counts = MinHasher(minhash, text, shingle).signatures_with_counts(batch)
    report("signatures", index + 1, of)

    packed_of: list[np.ndarray] = []
    own: list[float] = []
    eligible = counts > 0
    for t in thresholds:
        with _Timer() as clock:
            bands, rows = shapes[t]
            buckets = build_buckets(band_keys(sigs, bands, rows), eligible=eligible)
            left, right = candidate_pairs(buckets, max_bucket)
            packed_of.append(pack(left, right))
        own.append(clock.seconds)
    del sigs

    with _Timer() as verify_time:
        union = sorted_unique(np.concatenate(packed_of)) if packed_of else np.zeros(0, np.uint64)
        u_left, u_right = unpack(union)
        jaccard = exact_jaccard_in_blocks(
            u_left, u_right, counts, lambda docs: shingle_sets(batch, docs, counts, text, shingle)
        )
    report("verify", index + 1, of)

    points = []
    for j, t in enumerate(thresholds):
        with _Timer() as clock:
            packed = packed_of[j]
            at = np.searchsorted(union, packed)
            ok = jaccard[at] >= t
            left, right = unpack(packed[ok])
            clusters = assign_clusters(n, left, right, keep="first")
            pairs = pair_scores(singletons_apart(clusters.cluster), truth)
            removal = removal_scores(truth, ~clusters.keep, clusters.representative)
        bands, rows = shapes[t]
        points.append(
            TunePoint(
                shingle=shingle.mode,
                ngram=shingle.n,
                normalisation=norm,
                num_perm=minhash.num_perm,
                seed=minhash.seed,
                threshold=t,
                bands=bands,
                rows=rows,
                candidate_pairs=int(packed.size),
                verified_pairs=int(np.count_nonzero(ok)),
                true_pairs=pairs.true_pairs,
                predicted_pairs=pairs.predicted_pairs,
                pair_precision=pairs.pair_precision,
                pair_recall=pairs.pair_recall,
                pair_f1=pairs.pair_f1,
                ari=pairs.ari,
                removal_precision=removal.removal_precision,
                removal_recall=removal.removal_recall,
                seconds=own[j] + clock.seconds,
            )
        )
        report("points", index * len(thresholds) + j + 1, of * len(thresholds))
    return FeatureSweep(
        shingle=shingle.mode,
        ngram=shingle.n,
        normalisation=norm,
        points=tuple(points),
        unique_pairs=int(union.size),
        signature_seconds=sig_time.seconds,
        verify_seconds=verify_time.seconds,
    )


def _choose(
    points: list[TunePoint], min_precision: float
) -> tuple[TunePoint | None, TunePoint, TunePoint | None, str | None]:
    """(recommended, best, fallback, reason) of the points, as the module docstring says."""

    def by_f1(k: int) -> tuple[float, float, bool, int, int]:
        p = points[k]
        return (p.pair_f1, p.threshold, p.shingle == "word", -p.ngram, -k)

    best = points[max(range(len(points)), key=by_f1)]
    # a point that finds no true pair has precision 1.0 by convention, and nothing to recommend it
    useful = [k for k, p in enumerate(points) if p.pair_f1 > 0 or p.true_pairs == 0]
    eligible = [k for k in useful if points[k].pair_precision >= min_precision]
    if eligible:
        return points[max(eligible, key=by_f1)], best, None, None
    pool = useful or list(range(len(points)))
    fallback = points[max(pool, key=lambda k: (points[k].pair_precision, *by_f1(k)))]
    if not useful:
        found = "no setting found a single true pair"
    else:
        found = (
            f"no setting that finds true pairs reached pair precision {min_precision}: the most "
            f"precise, {fallback.describe()}, has {fallback.pair_precision:.4f} "
            f"(pair F1 {fallback.pair_f1:.4f})"
        )
    reason = f"{found}; lower --min-precision or widen the grid (higher thresholds, longer shingles)"
    return None, best, fallback, reason
