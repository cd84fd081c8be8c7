"""A small corpus whose report is known: a light edit, a chain, a pair just below the threshold."""

from __future__ import annotations

import json
from pathlib import Path

WORDS = [f"w{i}" for i in range(40)]
EDITED = [f"x{i}" for i in range(30, 40)]
"""``light`` is ``origin`` with its last ten words replaced by these."""


def chain_records() -> list[dict[str, str]]:
    """Word 2-grams at threshold 0.5 with 64 bands of 2 rows (any pair past J = 0.3 is a candidate):

    - ``origin`` and ``light`` (last 10 of 40 words replaced): J = 29 / 49 = 0.59, linked;
    - ``light`` and ``far`` (words 20-29 of ``light`` replaced): J = 28 / 50 = 0.56, linked, so
      ``far`` joins ``origin``'s cluster though J(origin, far) = 19 / 59 = 0.32: a chain;
    - ``twin-a`` and ``twin-b`` share 26 of 40 words in a row: J = 25 / 53 = 0.47, dropped;
    - ``alone`` shares nothing.
    """
    origin = WORDS
    light = WORDS[:30] + EDITED
    far = light[:20] + [f"y{i}" for i in range(20, 30)] + light[30:]
    twin_a = [f"t{i}" for i in range(40)]
    twin_b = twin_a[:26] + [f"u{i}" for i in range(26, 40)]
    alone = [f"z{i}" for i in range(40)]
    texts = {"origin": origin, "light": light, "far": far, "twin-a": twin_a, "twin-b": twin_b, "alone": alone}
    return [{"id": key, "text": " ".join(words)} for key, words in texts.items()]


CHAIN_FLAGS = ("--id-column", "id", "--threshold", "0.5", "--bands", "64", "--rows", "2", "-q")


def write_jsonl(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
