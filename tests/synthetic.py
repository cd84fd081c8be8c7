"""Generated corpora with planted near-duplicates and a known answer, for tests."""

from __future__ import annotations

import random
from itertools import accumulate, combinations


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))))
    return sorted(words)


def _edit(rng: random.Random, words: list[str], vocab: list[str], edits: int) -> list[str]:
    out = list(words)
    for _ in range(edits):
        i = rng.randrange(len(out))
        action = rng.random()
        if action < 0.4:
            out[i] = rng.choice(vocab)
        elif action < 0.7:
            out.insert(i, rng.choice(vocab))
        elif len(out) > 10:
            del out[i]
    return out


def _reformat(rng: random.Random, words: list[str]) -> str:
    text = " ".join(w.upper() if rng.random() < 0.1 else w for w in words)
    return text.replace(" ", ", ", 3) + rng.choice([".", "!", " ...", ""])


def planted_corpus(n_docs: int, *, dup_fraction: float = 0.3, seed: int = 0) -> list[dict[str, object]]:
    """``n_docs`` records ``{"id", "text", "group"}``; rows of one group are near-duplicates.

    Originals are 150-300 words drawn from a Zipf-like vocabulary; a planted
    copy gets one or two word edits and case/punctuation changes.
    """
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 20_000)
    cum: list[float] = list(accumulate(1.0 / (rank + 1) for rank in range(len(vocab))))
    n_dups = int(n_docs * dup_fraction)
    originals: list[list[str]] = [
        rng.choices(vocab, cum_weights=cum, k=rng.randint(150, 300)) for _ in range(n_docs - n_dups)
    ]
    records: list[dict[str, object]] = [
        {"text": " ".join(words), "group": g} for g, words in enumerate(originals)
    ]
    for _ in range(n_dups):
        g = rng.randrange(len(originals))
        variant = _edit(rng, originals[g], vocab, rng.randint(1, 2))
        records.append({"text": _reformat(rng, variant), "group": g})
    rng.shuffle(records)
    for i, rec in enumerate(records):
        rec["id"] = f"d{i:06d}"
    return records


def pairs_of(groups: list[list[int]]) -> set[tuple[int, int]]:
    """Every pair (i < j) inside each group."""
    return {pair for g in groups for pair in combinations(sorted(g), 2)}


def true_groups(records: list[dict[str, object]]) -> list[list[int]]:
    by_group: dict[object, list[int]] = {}
    for i, rec in enumerate(records):
        by_group.setdefault(rec["group"], []).append(i)
    return [g for g in by_group.values() if len(g) > 1]


def precision_recall(predicted: list[list[int]], truth: list[list[int]]) -> tuple[float, float]:
    """Pair precision and recall of predicted clusters against true groups."""
    p, t = pairs_of(predicted), pairs_of(truth)
    hit = len(p & t)
    return (hit / len(p) if p else 1.0), (hit / len(t) if t else 1.0)
