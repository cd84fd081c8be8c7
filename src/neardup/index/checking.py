"""Check texts against an index and insert the new ones: what a real-time check service does.

:func:`check_many` answers, for each text in order, the indexed documents it matches (as
:meth:`LSHIndex.query_many` does) and whether it was inserted, as if the texts had been checked
one after another: with ``insert="if_new"`` or ``"always"`` a text also matches the earlier texts
of the same batch that were inserted. ``if_new`` inserts only texts that match nothing, and is
atomic across threads and processes sharing the index: the lookup and the insert run inside
:meth:`LSHIndex.exclusive`, so two callers racing with the same new text insert it once, and the
later one reports the first as its match.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from neardup.core.lsh import band_keys
from neardup.core.shingles import ShingleSets, shingle_sets
from neardup.core.text import encode_texts
from neardup.core.verify import exact_jaccard_pairs
from neardup.errors import ConfigError

if TYPE_CHECKING:
    from neardup.index.lsh_index import LSHIndex, Match

InsertPolicy = Literal["never", "if_new", "always"]
INSERT_POLICIES: tuple[InsertPolicy, ...] = ("never", "if_new", "always")


@dataclass(frozen=True)
class CheckResult:
    """One checked text: its key (None when not given), its matches best first, whether it is a
    duplicate (it matched something) and whether it was inserted."""

    key: str | None
    matches: list[Match]
    is_duplicate: bool
    inserted: bool


@dataclass(frozen=True)
class _Sketches:
    signatures: np.ndarray
    counts: np.ndarray
    sets: ShingleSets | None


def check_many(
    index: LSHIndex,
    texts: Sequence[str],
    keys: Sequence[str | None] | None = None,
    *,
    insert: InsertPolicy = "never",
    top_k: int | None = None,
    exact: bool | None = None,
) -> list[CheckResult]:
    """Check ``texts`` (with their ``keys``) against ``index``; see the module docstring.

    ``exact`` (default: whether the index keeps shingles) ranks by exact Jaccard. Inserting
    needs a key for every text; a key already indexed, or repeated in the batch, is replaced by
    the later text (each is reported as inserted, as it was when its turn came).
    """
    from neardup.index.lsh_index import Match

    keys = checked_keys(texts, keys, insert)
    exact = index.settings.keep_shingles if exact is None else exact
    index._check_query(None, top_k, exact)
    require_keys(keys, insert)
    settings = index.settings
    needs_sets = insert != "never" and (settings.keep_shingles or settings.containment)
    sketches = _sketch(index, texts, shingles=exact or needs_sets)
    if insert == "never":
        found = _lookup(index, sketches, top_k, exact)
        return [CheckResult(k, m, bool(m), False) for k, m in zip(keys, found, strict=True)]
    with index.exclusive() if insert == "if_new" else nullcontext():
        found = _lookup(index, sketches, top_k, exact)
        inserted = np.zeros(len(texts), dtype=bool)
        results: list[CheckResult] = []
        bands = band_keys(sketches.signatures, index.settings.bands, index.settings.rows)
        for i, key in enumerate(keys):
            earlier = _batch_matches(index, sketches, bands, i, inserted, exact)
            matches = sorted(
                [*found[i], *(Match(str(keys[j]), s, exact) for j, s in earlier)],
                key=lambda m: (-m.similarity, m.key),
            )[:top_k]
            inserted[i] = insert == "always" or not matches
            results.append(CheckResult(key, matches, bool(matches), bool(inserted[i])))
        last = {key: i for i, key in enumerate(keys) if inserted[i]}  # a repeated key: its last text
        rows = np.array(sorted(last.values()), dtype=np.int64)
        if rows.size:
            shingles, counts = None, sketches.counts[rows]  # counted as insert_many counts them
            if sketches.sets is not None and (settings.keep_shingles or settings.containment):
                counts = sketches.sets.lengths[rows]
                if settings.keep_shingles:
                    shingles = [sketches.sets.get(int(r)).copy() for r in rows]
            index._insert(
                [str(keys[r]) for r in rows],
                sketches.signatures[rows],
                shingles,
                eligible=sketches.counts[rows] > 0,
                shingle_counts=counts,
            )
    return results


def checked_keys(texts: Sequence[str], keys: Sequence[str | None] | None, insert: object) -> list[str | None]:
    """``keys`` as a list (all None when not given), one per text; ``insert`` a known policy."""
    out: list[str | None] = list(keys) if keys is not None else [None] * len(texts)
    if len(out) != len(texts):
        raise ValueError(f"{len(out)} keys but {len(texts)} texts")
    if insert not in INSERT_POLICIES:
        raise ConfigError(f"insert must be one of {', '.join(INSERT_POLICIES)}, got {insert!r}")
    return out


def require_keys(keys: Sequence[str | None], insert: InsertPolicy) -> None:
    """A :class:`ConfigError` unless every text has a key when ``insert`` inserts."""
    if insert != "never":
        missing = [i for i, k in enumerate(keys) if k is None]
        if missing:
            raise ConfigError(f"insert={insert} needs a key for every text; text [{missing[0]}] has none")


def _sketch(index: LSHIndex, texts: Sequence[str], *, shingles: bool) -> _Sketches:
    batch = encode_texts(list(texts))
    sigs, counts = index._hasher.signatures_with_counts(batch)
    sets = None
    if shingles:
        config = index._config
        sets = shingle_sets(batch, np.arange(len(texts)), counts, config.text, config.shingle)
    return _Sketches(sigs, counts, sets)


def _lookup(index: LSHIndex, sketches: _Sketches, top_k: int | None, exact: bool) -> list[list[Match]]:
    return index._query(
        sketches.signatures,
        sketches.counts > 0,
        threshold=None,
        top_k=top_k,
        sets=sketches.sets if exact else None,
    )


def _batch_matches(
    index: LSHIndex, sketches: _Sketches, bands: np.ndarray, i: int, inserted: np.ndarray, exact: bool
) -> list[tuple[int, float]]:
    """``(j, similarity)`` of the earlier inserted texts of the batch that text ``i`` matches:
    those sharing a band with it (as an index lookup would find them) at the threshold or above."""
    if sketches.counts[i] == 0 or not inserted[:i].any():
        return []
    earlier = np.flatnonzero(inserted[:i] & (sketches.counts[:i] > 0))
    shares_band = np.any(bands[earlier] == bands[i], axis=1)
    candidates = earlier[shares_band]
    if candidates.size == 0:
        return []
    if exact and sketches.sets is not None:
        left = np.full(candidates.size, i, dtype=np.int64)
        sim = exact_jaccard_pairs(sketches.sets, sketches.counts.size, left, candidates)
    else:
        sim = np.count_nonzero(sketches.signatures[candidates] == sketches.signatures[i], axis=1)
        sim = sim / sketches.signatures.shape[1]
    keep = sim >= index.settings.threshold
    return list(zip(candidates[keep].tolist(), sim[keep].tolist(), strict=True))
