"""Segmenters: what cuts texts into words before the compiled tokeniser reads them.

A tokenizer other than ``builtin`` (``ShingleConfig.tokenizer``) names a segmenter: a function
from texts to the same texts with their words separated by single spaces, which the tokeniser
then reads with ``F_SEGMENTED`` (every word one token). The core knows segmenters by name
only, so that it imports no third-party segmenter: the package that provides one registers it
(``neardup/__init__.py`` registers jieba's, from ``neardup.segmentation``, before any module of
the core is imported). Standard library only, so registering does not load numba.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from neardup.errors import ConfigError

Segmenter = Callable[[Sequence[str]], list[str]]
"""Texts -> the same texts, their words separated by single spaces (one output per input)."""

_REGISTERED: dict[str, Segmenter] = {}


def register_segmenter(name: str, segment: Segmenter) -> None:
    """Make ``segment`` the segmenter of tokenizer ``name`` (replacing any before it)."""
    _REGISTERED[name] = segment


def segmenter(name: str) -> Segmenter:
    """The segmenter of tokenizer ``name``."""
    found = _REGISTERED.get(name)
    if found is None:
        raise ConfigError(f"no segmenter is registered for tokenizer {name!r}")
    return found
