"""Benchmark corpora with planted near-duplicates, so the right answer is known.

Two sources:

* :func:`load_originals` + :func:`plant`: real texts (the shared corpus, English and
  Chinese) as originals, and variants made from them by named transformations
  (:data:`ALL_KINDS`). A variant shares its original's ``group`` unless it must
  *not* match (``partial_small``), in which case it gets a group of its own.
* :func:`generate_synthetic`: English-like text drawn from a Zipfian vocabulary,
  with lightly edited copies, for speed runs and large tests.

:func:`true_pairs` and :func:`pair_scores` score predicted clusters against the
planted answer by pairs. Only the standard library and numpy are used, and all
randomness comes from explicit seeds.
"""

# (full-width punctuation and look-alike letters are this module's subject matter)
from __future__ import annotations

import gzip
import json
import random
import re
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Record = dict[str, Any]

ALL_KINDS: tuple[str, ...] = (
    "typos",
    "rewording",
    "boilerplate",
    "reformat",
    "fullwidth_accents",
    "reorder",
    "partial_large",
    "partial_small",
    "rewording_heavy",
)
NEGATIVE_KINDS: frozenset[str] = frozenset({"partial_small", "rewording_heavy"})
"""Kinds made from an original that must not be found as its duplicates."""
DUPLICATE_HEAVY_KINDS: tuple[str, ...] = ("exact", *ALL_KINDS)
"""The kinds of a duplicate-heavy corpus: every kind, and verbatim copies as well (exact
copies are what crawls hold most of; the quality sweeps leave them out, being trivial)."""
ORIGINAL = "original"


def default_corpus_path() -> Path:
    """``<repo>/../shared/corpus/texts.jsonl.gz``."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "texts.jsonl.gz"


# --------------------------------------------------------------------------- loading


def load_originals(
    path: str | Path | None = None,
    lang: str | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[Record]:
    """Documents (``id``, ``text``, ``lang``, ``source``) from the gzip JSONL corpus.

    ``lang`` keeps one language; ``limit`` keeps a seeded random sample of that
    many, in file order.
    """
    rows: list[Record] = []
    with gzip.open(path or default_corpus_path(), "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            if lang is not None and d.get("lang") != lang:
                continue
            rows.append(
                {"id": d["id"], "text": d["text"], "lang": d.get("lang", ""), "source": d.get("source", "")}
            )
    if limit is not None and limit < len(rows):
        picked = sorted(random.Random(seed).sample(range(len(rows)), limit))
        rows = [rows[i] for i in picked]
    return rows


# --------------------------------------------------------------------------- text units

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_SPLIT = re.compile(r"(\s+)")
_EN_SENT_SPLIT = re.compile(r"((?<=[.!?])\s+|\n\s*)")
_ZH_SENT_SPLIT = re.compile(r"((?<=[。！？；])\s*|\n\s*)")


def is_unspaced(rec: Record) -> bool:
    """Chinese-like text: edits work on characters rather than words."""
    lang = rec.get("lang") or ""
    if lang:
        return lang in ("zh", "ja")
    text = rec["text"]
    return len(_CJK.findall(text)) > 0.3 * max(1, len(text))


def _units(text: str, zh: bool) -> int:
    """Words, or for unspaced text, characters other than whitespace."""
    return sum(map(len, text.split())) if zh else len(text.split())


class _Editor:
    """A text as editable units: words (with their following whitespace) or CJK characters."""

    def __init__(self, text: str, zh: bool) -> None:
        self.zh = zh
        if zh:
            self.parts = list(text)
            self.slots = [i for i, c in enumerate(self.parts) if _CJK.match(c)]
        else:
            self.parts = _WORD_SPLIT.split(text)
            self.slots = [i for i in range(0, len(self.parts), 2) if self.parts[i]]

    def pick(self, rng: random.Random, rate: float) -> list[int]:
        """About ``rate`` of the units (at least one, if there are any)."""
        if not self.slots:
            return []
        k = min(len(self.slots), max(1, round(rate * len(self.slots))))
        return rng.sample(self.slots, k)

    def replace(self, i: int, unit: str) -> None:
        self.parts[i] = unit

    def delete(self, i: int) -> None:
        self.parts[i] = ""
        if self.zh:
            return
        if i + 1 < len(self.parts):  # the whitespace after the word goes with it
            self.parts[i + 1] = ""
        elif i >= 1:
            self.parts[i - 1] = ""

    def insert_after(self, i: int, unit: str) -> None:
        self.parts[i] = self.parts[i] + ("" if self.zh else " ") + unit

    def text(self) -> str:
        return "".join(self.parts)


# --------------------------------------------------------------------------- context


class _FillerStream:
    """Unit-wise text from held-back donor documents, never reused."""

    def __init__(self, texts: Iterable[str], zh: bool, vocab: Sequence[str], rng: random.Random) -> None:
        self.zh = zh
        self.vocab = vocab
        self.rng = rng
        self.units: list[str] = []
        for t in texts:
            self.units.extend(list(t.replace("\n", "")) if zh else t.split())
        self.pos = 0

    def take(self, k: int) -> str:
        if k <= 0:
            return ""
        got = self.units[self.pos : self.pos + k]
        self.pos += len(got)
        if len(got) < k:  # donors exhausted: random vocabulary words are still other text
            got += self.rng.choices(self.vocab, k=k - len(got))
        return ("" if self.zh else " ").join(got)


@dataclass
class _Ctx:
    rng: random.Random
    zh: bool
    vocab: Sequence[str]
    filler: _FillerStream


def _vocabulary(texts: Iterable[str], zh: bool) -> list[str]:
    """Every unit occurrence, so that ``choice`` samples by frequency."""
    out: list[str] = []
    for t in texts:
        if zh:
            out.extend(_CJK.findall(t))
        else:
            out.extend(w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", t) if len(w) > 1)
    return out or (["的", "是", "在"] if zh else ["the", "of", "and"])


# --------------------------------------------------------------------------- kinds

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _typo_word(word: str, rng: random.Random) -> str:
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    if not letters:
        return word + rng.choice(_LETTERS)
    i = rng.choice(letters)
    op = rng.randrange(4)
    if op == 0 and i + 1 < len(word):  # swap two neighbours
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == 1 and len(word) > 2:  # drop a letter
        return word[:i] + word[i + 1 :]
    if op == 2:  # double or insert a letter
        return word[: i + 1] + rng.choice((word[i], rng.choice(_LETTERS))) + word[i + 1 :]
    return word[:i] + rng.choice(_LETTERS.replace(word[i].lower(), "")) + word[i + 1 :]


def typos(text: str, ctx: _Ctx) -> str:
    """About 2-3% of words (or CJK characters) get a small typo."""
    ed = _Editor(text, ctx.zh)
    for i in ed.pick(ctx.rng, ctx.rng.uniform(0.02, 0.03)):
        if ctx.zh:
            r = ctx.rng.random()
            if r < 0.7:
                ed.replace(i, ctx.rng.choice(ctx.vocab))
            elif r < 0.85:
                ed.insert_after(i, ctx.rng.choice(ctx.vocab))
            else:
                ed.delete(i)
        else:
            ed.replace(i, _typo_word(ed.parts[i], ctx.rng))
    return ed.text()


def rewording(text: str, ctx: _Ctx) -> str:
    """About 10-15% of words (or CJK characters) replaced, inserted or deleted."""
    return _reword(text, ctx, ctx.rng.uniform(0.10, 0.15))


def rewording_heavy(text: str, ctx: _Ctx) -> str:
    """About 40-50% of words (or CJK characters) replaced, inserted or deleted (a negative:
    the same skeleton, but a different text)."""
    return _reword(text, ctx, ctx.rng.uniform(0.40, 0.50))


def _reword(text: str, ctx: _Ctx, rate: float) -> str:
    ed = _Editor(text, ctx.zh)
    for i in ed.pick(ctx.rng, rate):
        r = ctx.rng.random()
        if r < 0.5:
            ed.replace(i, ctx.rng.choice(ctx.vocab))
        elif r < 0.75:
            ed.insert_after(i, ctx.rng.choice(ctx.vocab))
        else:
            ed.delete(i)
    return ed.text()


_EN_USERS = ("admin", "editor", "jsmith", "webmaster", "Maria K.", "guest")
_EN_SITES = ("example.com", "DocsHub", "TechNotes Daily", "The Archive", "mirror.example.org")
_EN_HEADERS = (
    "Posted by {user} on {date} | Share this article",
    "{site} - Home | News | Docs | Contact\nPublished {date} by {user}",
    "Originally published on {site} on {date}. Reading time: {mins} min",
)
_EN_FOOTERS = (
    "Copyright © {year} {site}. All rights reserved.",
    "Share this: Twitter | Facebook | Email\nRelated posts | Leave a comment | Back to top",
    "This page was last edited on {date}. Content is available under CC BY-SA 4.0 unless otherwise noted.",
)
_ZH_USERS = ("管理员", "编辑部", "小王", "网站编辑", "匿名用户")
_ZH_SITES = ("文学网", "技术文档站", "古诗词网", "知识库", "开源中国镜像")
_ZH_HEADERS = (
    "发布者：{user} 发布时间：{date} | 分享本文",
    "{site} 首页 > 文章 > 正文\n更新时间：{date} 作者：{user}",
    "本文转载自{site}，发布于{date}，阅读约需{mins}分钟",
)
_ZH_FOOTERS = (
    "版权所有 © {year} {site} 保留所有权利",
    "分享到：微博 | 微信 | 邮件\n相关文章 | 发表评论 | 返回顶部",
    "本页面最后修改于{date}，内容遵循知识共享署名协议，转载请注明出处。",
)


def boilerplate(text: str, ctx: _Ctx) -> str:
    """A site header and footer around the unchanged body."""
    rng = ctx.rng
    year = rng.randint(2015, 2025)
    fields = {
        "user": rng.choice(_ZH_USERS if ctx.zh else _EN_USERS),
        "site": rng.choice(_ZH_SITES if ctx.zh else _EN_SITES),
        "date": f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "year": year,
        "mins": rng.randint(2, 15),
    }
    header = rng.choice(_ZH_HEADERS if ctx.zh else _EN_HEADERS).format(**fields)
    footer = rng.choice(_ZH_FOOTERS if ctx.zh else _EN_FOOTERS).format(**fields)
    return f"{header}\n\n{text}\n\n{footer}"


def _rewrap(text: str, rng: random.Random, zh: bool) -> str:
    paras = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    joiner = rng.choice(("\n\n", "\n"))
    if zh:
        width = rng.randint(12, 40)
        flat = ["".join(p.split()) for p in paras]
        if rng.random() < 0.5:  # lines joined, no wrapping
            return joiner.join(flat)
        return joiner.join("\n".join(p[i : i + width] for i in range(0, len(p), width)) for p in flat)
    width = rng.randint(40, 100)
    return joiner.join(textwrap.fill(" ".join(p.split()), width=width) for p in paras)


def _recase(text: str, rng: random.Random) -> str:
    mode = rng.randrange(3)
    if mode == 0:
        return text.lower()
    lines = text.split("\n")
    for i in range(len(lines)):
        if rng.random() < 0.25:
            lines[i] = lines[i].upper() if mode == 1 else lines[i].title()
    return "\n".join(lines)


def _repunctuate(text: str, rng: random.Random, zh: bool) -> str:
    swaps: tuple[tuple[str, str], ...]
    if zh:
        swaps = (("，", "、"), ("。", "！"), ("，", ""), ("。", "；"), ("：", "，"))
    else:
        swaps = (('"', "“"), ("'", "’"), (",", ""), (". ", "; "), (" - ", " — "), ("...", "…"), (":", " -"))
    for old, new in rng.sample(swaps, k=3):
        text = _swap_some(text, old, new, rng)
    return text


def _swap_some(text: str, old: str, new: str, rng: random.Random) -> str:
    """Each occurrence of ``old`` becomes ``new`` with probability 1/2."""

    def repl(m: re.Match[str]) -> str:
        return new if rng.random() < 0.5 else m.group(0)

    return re.sub(re.escape(old), repl, text)


def _respace(text: str, rng: random.Random, zh: bool) -> str:
    out = []
    for ch in text:
        if ch == " " and rng.random() < 0.15:
            out.append(rng.choice(("  ", "\t", "   ")))
        elif ch == "\n" and rng.random() < 0.3:
            out.append(rng.choice(("  \n", "\n\n", "\n   ")))
        elif zh and ch in "，。" and rng.random() < 0.2:
            out.append(ch + " ")
        else:
            out.append(ch)
    lead = "\u3000\u3000" if zh else rng.choice(("  ", "\n", "\t"))
    return lead + "".join(out) + rng.choice(("\n", "  \n\n", " "))


def reformat(text: str, ctx: _Ctx) -> str:
    """Case, punctuation and whitespace changes, lines re-wrapped."""
    rng = ctx.rng
    steps: list[Callable[[str], str]] = [
        lambda t: _rewrap(t, rng, ctx.zh),
        lambda t: _recase(t, rng),
        lambda t: _repunctuate(t, rng, ctx.zh),
        lambda t: _respace(t, rng, ctx.zh),
    ]
    chosen = sorted(rng.sample(range(len(steps)), k=rng.randint(2, 4)))
    if 0 not in chosen and rng.random() < 0.5:
        chosen.insert(0, 0)
    for s in chosen:
        text = steps[s](text)
    return text


_ACCENTS = {"a": "áàâä", "e": "éèêë", "i": "íìîï", "o": "óòôö", "u": "úùûü", "c": "ç", "n": "ñ"}
_ZH_PUNCT = {"，": ",", "。": ".", "：": ":", "；": ";", "！": "!", "？": "?", "（": "(", "）": ")"}
_ZH_PUNCT_BACK = {v: k for k, v in _ZH_PUNCT.items()}


def _fullwidth(s: str) -> str:
    """ASCII ``!``..``~`` to U+FF01..U+FF5E."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def _accent(word: str, rng: random.Random) -> str:
    spots = [i for i, c in enumerate(word) if c.lower() in _ACCENTS]
    if not spots:
        return word
    i = rng.choice(spots)
    acc = rng.choice(_ACCENTS[word[i].lower()])
    return word[:i] + (acc.upper() if word[i].isupper() else acc) + word[i + 1 :]


def fullwidth_accents(text: str, ctx: _Ctx) -> str:
    """Full-width letters and digits, accented letters, ligatures; for Chinese also
    half-width <-> full-width punctuation."""
    rng = ctx.rng
    parts = _WORD_SPLIT.split(text)
    p_wide = rng.uniform(0.2, 0.5)
    for i in range(0, len(parts), 2):
        w = parts[i]
        if not w:
            continue
        if ctx.zh:
            w = "".join(
                (_ZH_PUNCT.get(c) or _ZH_PUNCT_BACK.get(c) or c) if rng.random() < 0.7 else c for c in w
            )
            parts[i] = _fullwidth(w) if re.search("[A-Za-z0-9]", w) and rng.random() < p_wide else w
            continue
        r = rng.random()
        if r < p_wide:
            w = _fullwidth(w)
        elif r < p_wide + 0.25:
            w = _accent(w, rng)
        elif "fi" in w and r < p_wide + 0.4:
            w = w.replace("fi", "\ufb01")
        parts[i] = w
    if ctx.zh:
        for i in range(1, len(parts), 2):
            if parts[i] == " " and rng.random() < 0.5:
                parts[i] = "\u3000"
    return "".join(parts)


def reorder(text: str, ctx: _Ctx) -> str:
    """A few adjacent sentences swapped (halves swapped if there is one sentence)."""
    rng = ctx.rng
    parts = (_ZH_SENT_SPLIT if ctx.zh else _EN_SENT_SPLIT).split(text)
    sents = [i for i in range(0, len(parts), 2) if parts[i].strip()]
    if len(sents) < 2:
        cut = _cut_point(text, ctx.zh, rng.uniform(0.3, 0.7))
        return text[cut:].lstrip() + ("" if ctx.zh else " ") + text[:cut].rstrip()
    swaps = max(1, len(sents) // 8)
    for p in rng.sample(range(len(sents) - 1), k=min(swaps, len(sents) - 1)):
        a, b = sents[p], sents[p + 1]
        parts[a], parts[b] = parts[b], parts[a]
    return "".join(parts)


def _cut_point(text: str, zh: bool, frac: float) -> int:
    """A character offset about ``frac`` into the text, on a word boundary for spaced text."""
    if zh:
        return round(frac * len(text))
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    return starts[min(len(starts) - 1, round(frac * len(starts)))] if starts else 0


def _span(text: str, zh: bool, frac: float, rng: random.Random) -> str:
    """A contiguous stretch covering about ``frac`` of the text's units."""
    if zh:
        m = max(1, round(frac * len(text)))
        s = rng.randint(0, len(text) - m)
        return text[s : s + m]
    words = list(re.finditer(r"\S+", text))
    if not words:
        return text
    m = max(1, round(frac * len(words)))
    s = rng.randint(0, len(words) - m)
    return text[words[s].start() : words[s + m - 1].end()]


def partial_large(text: str, ctx: _Ctx) -> str:
    """80-90% of the document, copied as one stretch."""
    return _span(text, ctx.zh, ctx.rng.uniform(0.80, 0.90), ctx.rng)


def partial_small(text: str, ctx: _Ctx) -> str:
    """20-30% of the document inside other text about as long as the original (a negative)."""
    rng = ctx.rng
    part = _span(text, ctx.zh, rng.uniform(0.20, 0.30), rng)
    other = max(1, _units(text, ctx.zh) - _units(part, ctx.zh))
    before = round(other * rng.uniform(0.2, 0.8))
    sep = "\n" if ctx.zh else "\n\n"
    return ctx.filler.take(before) + sep + part + sep + ctx.filler.take(other - before)


def exact(text: str, ctx: _Ctx) -> str:
    """The document copied verbatim."""
    return text


TRANSFORMS: dict[str, Callable[[str, _Ctx], str]] = {
    "exact": exact,
    "typos": typos,
    "rewording": rewording,
    "boilerplate": boilerplate,
    "reformat": reformat,
    "fullwidth_accents": fullwidth_accents,
    "reorder": reorder,
    "partial_large": partial_large,
    "partial_small": partial_small,
    "rewording_heavy": rewording_heavy,
}


# --------------------------------------------------------------------------- planting


def plant(
    originals: Sequence[Record],
    *,
    seed: int,
    variants_per_doc: int = 2,
    dup_fraction: float = 0.5,
    kinds: Sequence[str] = ALL_KINDS,
    donors: Sequence[Record] | None = None,
) -> list[Record]:
    """Originals plus planted variants, in a seeded shuffled order.

    ``dup_fraction`` of the originals get ``variants_per_doc`` variants each, of
    distinct kinds spread evenly over ``kinds``. Records are
    ``{"id", "text", "lang", "group", "kind", "parent"}``: an original's group
    is its own id and its kind is ``"original"``; a variant has its original's
    group, except the kinds in :data:`NEGATIVE_KINDS`, which get a fresh group.
    ``parent`` is the id of the original a record was made from.

    Filler text for ``partial_small`` comes from ``donors`` (same language,
    never emitted); if ``donors`` is None, enough originals that get no
    variant are held back as donors and are left out of the output.
    """
    unknown = [k for k in kinds if k not in TRANSFORMS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; choose from {', '.join(ALL_KINDS)}")
    if not kinds or variants_per_doc < 0 or variants_per_doc > len(kinds):
        raise ValueError(f"variants_per_doc must be from 0 to {len(kinds)} (the number of kinds)")
    rng = random.Random(seed)
    by_lang: dict[str, list[Record]] = defaultdict(list)
    for rec in originals:
        by_lang[rec.get("lang") or ""].append(rec)
    donors_by_lang: dict[str, list[Record]] = defaultdict(list)
    for rec in donors or ():
        donors_by_lang[rec.get("lang") or ""].append(rec)
    out: list[Record] = []
    for lang in sorted(by_lang):
        out.extend(
            _plant_lang(
                by_lang[lang],
                donors_by_lang[lang] if donors is not None else None,
                rng=random.Random(rng.getrandbits(64)),
                variants_per_doc=variants_per_doc,
                dup_fraction=dup_fraction,
                kinds=list(kinds),
            )
        )
    rng.shuffle(out)
    return out


def _plant_lang(
    docs: list[Record],
    donors: list[Record] | None,
    *,
    rng: random.Random,
    variants_per_doc: int,
    dup_fraction: float,
    kinds: list[str],
) -> list[Record]:
    zh = is_unspaced(docs[0])
    order = list(range(len(docs)))
    rng.shuffle(order)
    n_dup = round(dup_fraction * len(docs)) if variants_per_doc else 0
    chosen, rest = order[:n_dup], order[n_dup:]
    start = rng.randrange(len(kinds))
    plan = [
        (d, kinds[(start + j * variants_per_doc + v) % len(kinds)])
        for j, d in enumerate(chosen)
        for v in range(variants_per_doc)
    ]
    if donors is None:
        need = sum(_units(docs[d]["text"], zh) for d, k in plan if k == "partial_small")
        held: set[int] = set()
        have = 0
        while rest and have < 1.1 * need + 50:
            d = rest.pop()
            held.add(d)
            have += _units(docs[d]["text"], zh)
        donor_texts = [docs[d]["text"] for d in sorted(held)]
    else:
        held = set()
        donor_texts = [d["text"] for d in donors]
    kept = [d for d in range(len(docs)) if d not in held]
    vocab = _vocabulary((docs[d]["text"] for d in kept), zh)
    ctx = _Ctx(rng=rng, zh=zh, vocab=vocab, filler=_FillerStream(donor_texts, zh, vocab, rng))
    out = [_record(docs[d], docs[d]["text"], ORIGINAL, docs[d]["id"]) for d in kept]
    for d, kind in plan:
        src = docs[d]
        group = f"{src['id']}~{kind}" if kind in NEGATIVE_KINDS else src["id"]
        out.append(_record(src, TRANSFORMS[kind](src["text"], ctx), kind, group))
    return out


def _record(src: Record, text: str, kind: str, group: str) -> Record:
    rid = src["id"] if kind == ORIGINAL else f"{src['id']}~{kind}"
    return {
        "id": rid,
        "text": text,
        "lang": src.get("lang", ""),
        "group": group,
        "kind": kind,
        "parent": src["id"],
    }


# --------------------------------------------------------------------------- scoring


def true_pairs(records: Sequence[Record]) -> set[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of records in the same group."""
    members: dict[Any, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        members[rec["group"]].append(i)
    return {(a, b) for idx in members.values() for k, a in enumerate(idx) for b in idx[k + 1 :]}


def labels_from_groups(groups: Iterable[Iterable[int]], n: int) -> np.ndarray:
    """Cluster labels (``-1`` for singletons) from lists of member positions."""
    labels = np.full(n, -1, dtype=np.int64)
    for c, members in enumerate(groups):
        labels[np.asarray(list(members), dtype=np.int64)] = c
    return labels


@dataclass
class Scores:
    """Pair precision / recall of predicted clusters against planted groups.

    ``kind_recall[k]``: share of true pairs involving a variant of kind ``k``
    that are predicted. ``source_match[k]``: share of kind-``k`` variants put in
    the same cluster as their original (for a negative kind this is a false
    match rate and should be low). ``negative_fp_pairs``: predicted pairs with a
    negative-kind record in them (all of them false).
    """

    precision: float
    recall: float
    f1: float
    true_pairs: int
    predicted_pairs: int
    tp: int
    negative_fp_pairs: int
    kind_recall: dict[str, float] = field(default_factory=dict)
    source_match: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def pair_scores(records: Sequence[Record], labels: np.ndarray | Sequence[int]) -> Scores:
    """Score cluster ``labels`` (one per record, ``-1`` for singletons) by pairs.

    All pairs within a predicted cluster count as predicted, so transitive
    merges are rewarded or punished exactly as a user would see them.
    """
    lab = np.asarray(labels, dtype=np.int64)
    if lab.shape != (len(records),):
        raise ValueError(f"need one label per record: {lab.shape} labels for {len(records)} records")
    sizes = np.bincount(lab[lab >= 0]) if (lab >= 0).any() else np.zeros(0, np.int64)
    predicted = int((sizes * (sizes - 1) // 2).sum())
    truth = true_pairs(records)
    kinds = [r["kind"] for r in records]
    hit_by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tp = 0
    for i, j in truth:
        hit = bool(lab[i] >= 0 and lab[i] == lab[j])
        tp += hit
        for k in {kinds[i], kinds[j]} - {ORIGINAL}:
            hit_by_kind[k][0] += hit
            hit_by_kind[k][1] += 1
    neg = np.array([k in NEGATIVE_KINDS for k in kinds], dtype=bool)
    neg_fp = 0
    if neg.any() and sizes.size:
        k_neg = np.bincount(lab[(lab >= 0) & neg], minlength=sizes.size)
        rest = sizes - k_neg
        neg_fp = int((sizes * (sizes - 1) // 2 - rest * (rest - 1) // 2).sum())
    precision = tp / predicted if predicted else 1.0
    recall = tp / len(truth) if truth else 1.0
    return Scores(
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        true_pairs=len(truth),
        predicted_pairs=predicted,
        tp=tp,
        negative_fp_pairs=neg_fp,
        kind_recall={k: h / t for k, (h, t) in sorted(hit_by_kind.items())},
        source_match=_source_match(records, lab),
    )


def _source_match(records: Sequence[Record], lab: np.ndarray) -> dict[str, float]:
    where = {r["id"]: i for i, r in enumerate(records) if r["kind"] == ORIGINAL}
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, rec in enumerate(records):
        p = where.get(rec.get("parent", ""))
        if rec["kind"] == ORIGINAL or p is None:
            continue
        tally[rec["kind"]][0] += bool(lab[i] >= 0 and lab[i] == lab[p])
        tally[rec["kind"]][1] += 1
    return {k: h / t for k, (h, t) in sorted(tally.items())}


# --------------------------------------------------------------------------- synthetic


def _pseudo_words(count: int, rng: random.Random) -> list[str]:
    onsets = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr"]
    onsets += ["pl", "br", "ch", "sh", "th"]
    vowels = ["a", "e", "i", "o", "u", "ea", "ou", "io", "ai"]
    codas = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m"]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        w = "".join(
            rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
            for _ in range(rng.choice((1, 1, 2, 2, 3)))
        )
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def generate_synthetic(
    n: int,
    *,
    dup_fraction: float,
    seed: int,
    words_per_doc: int = 300,
    vocab_size: int = 30_000,
    edit_rate: float = 0.01,
) -> list[Record]:
    """``n`` English-like documents from a Zipfian vocabulary, ``dup_fraction`` of
    them near-duplicates (``edit_rate`` of the words replaced) of the others.

    Records are ``{"id", "text", "lang", "group", "kind", "parent"}`` with kind
    ``"original"`` or ``"near_dup"``; the order is shuffled by ``seed``.
    """
    if not 0 <= dup_fraction < 1:
        raise ValueError(f"dup_fraction must be in [0, 1), got {dup_fraction}")
    rng = random.Random(seed)
    nrng = np.random.default_rng(rng.getrandbits(64))
    vocab = np.array(_pseudo_words(vocab_size, rng), dtype=object)
    dotted = np.array([w + "." for w in vocab], dtype=object)
    ranks = np.arange(1, vocab_size + 1, dtype=np.float64)
    p = 1.0 / (ranks + 2.7)  # Zipf-Mandelbrot, s = 1
    p /= p.sum()
    n_dup = round(dup_fraction * n)
    n_orig = n - n_dup
    lengths = nrng.integers(max(1, words_per_doc // 2), words_per_doc * 3 // 2 + 1, size=n_orig)
    words = nrng.choice(vocab_size, size=int(lengths.sum()), p=p)
    ends = nrng.random(words.size) < 1 / 14  # sentence ends, roughly every 14 words
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    records: list[Record] = []
    for i in range(n_orig):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        toks = np.where(ends[lo:hi], dotted[words[lo:hi]], vocab[words[lo:hi]])
        rid = f"syn-{i:07d}"
        records.append({"id": rid, "text": " ".join(toks.tolist()), "lang": "en", "group": rid})
        records[-1].update(kind=ORIGINAL, parent=rid)
    parents = nrng.integers(0, max(1, n_orig), size=n_dup)
    swaps = iter(
        nrng.choice(vocab_size, size=n_dup * (round(edit_rate * words_per_doc * 1.5) + 1), p=p).tolist()
    )
    for j, par in enumerate(parents.tolist()):
        src = records[par]
        toks = src["text"].split(" ")
        k = min(len(toks), max(1, round(edit_rate * len(toks))))
        for pos in nrng.choice(len(toks), size=k, replace=False).tolist():
            toks[pos] = str(vocab[next(swaps)])
        rid = f"syn-{n_orig + j:07d}"
        records.append(
            {"id": rid, "text": " ".join(toks), "lang": "en", "group": src["group"], "kind": "near_dup"}
        )
        records[-1]["parent"] = src["id"]
    rng.shuffle(records)
    return records
