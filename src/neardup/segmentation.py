"""Word segmentation for ``tokenizer="jieba"``: Chinese text cut into words by jieba.

The core reads segmented text through :func:`neardup.core.text.segmented`, which calls the
segmenter registered for the tokenizer (``neardup/__init__.py`` registers
:func:`segment_jieba`). Each text is cut with ``jieba.cut`` (its default, precise mode, with
HMM for words not in the dictionary) and the words are joined with single spaces; the
tokeniser then makes one token of each word.

One ``jieba.Tokenizer`` serves the process: made on first use, its dictionary the one in the
jieba package (named by path, so jieba's prefix-dictionary cache is checked against that
file's time), and jieba's logging, which prints to standard error at DEBUG, silenced.
jieba is an optional dependency: ``pip install 'neardup[zh]'``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neardup.errors import ConfigError

EXTRA = "tokenizer 'jieba' needs jieba: pip install 'neardup[zh]'"

_lock = threading.Lock()
_tokenizer: Any = None


def jieba_tokenizer() -> Any:
    """The process's ``jieba.Tokenizer``, its dictionary loaded (once: a second or more)."""
    global _tokenizer
    if _tokenizer is not None:
        return _tokenizer
    with _lock:
        if _tokenizer is None:
            try:
                import jieba
            except ImportError as exc:
                raise ConfigError(EXTRA) from exc
            jieba.setLogLevel(logging.WARNING)  # its own logger: "Building prefix dict..." at DEBUG
            tokenizer = jieba.Tokenizer(str(Path(jieba.__file__).with_name("dict.txt")))
            tokenizer.initialize()
            _tokenizer = tokenizer
    return _tokenizer


def segment_jieba(texts: Sequence[str]) -> list[str]:
    """``texts`` with their words, as jieba cuts them, separated by single spaces.

    >>> segment_jieba(["我来到北京清华大学"])
    ['我 来到 北京 清华大学']
    """
    cut = jieba_tokenizer().cut
    return [" ".join(cut(text)) for text in texts]
