"""HTML (``.html``, ``.htm``): one document per file, its visible text.

Columns ``path``, ``title`` and ``text``. Scripts, styles, ``<head>`` and other
invisible parts are dropped; block elements end lines, so words from adjacent
blocks never run together. Bytes that are not UTF-8 are replaced, as a browser
would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from neardup.errors import InputError
from neardup.io._common import BOM, Format, Part, Problems, read_bytes

_FORMAT = Format("html")

_HIDDEN = frozenset({"head", "title", "script", "style", "noscript", "template", "svg", "math", "iframe"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
        "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav",
        "ol", "option", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead", "tr",
        "ul",
    }
)  # fmt: skip
_CELLS = frozenset({"td", "th"})
_PREFORMATTED = frozenset({"pre", "textarea", "listing", "plaintext"})
_SPACES = re.compile(r"[ \t\n\r\f]+")
_RUNS = re.compile(r"[ \t\r\f]+")


def html_to_text(html: str) -> tuple[str | None, str]:
    """``(title, visible text)`` of an HTML document; ``title`` is ``None`` when absent or empty.

    >>> html_to_text("<title>T</title><p>a <b>b</b></p><p>c</p><script>x()</script>")
    ('T', 'a b\\nc')
    """
    from selectolax.lexbor import LexborHTMLParser  # here: 4-6 ms a run without HTML need not pay

    tree = LexborHTMLParser(html)
    node = tree.css_first("title")
    title = _SPACES.sub(" ", node.text(deep=True)).strip() if node is not None else ""
    pieces: list[str] = []
    if tree.root is not None:
        _collect(tree.root, pieces)
    lines = (_RUNS.sub(" ", line).strip() for line in "".join(pieces).split("\n"))
    return title or None, "\n".join(line for line in lines if line)


def _collect(root: Any, pieces: list[str]) -> None:
    """Append the visible text under ``root``, with ``\\n`` around blocks and spaces around cells."""
    # An explicit stack rather than recursion: deeply nested pages exist.
    stack: list[tuple[Any, bool] | str] = [(root, False)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            pieces.append(item)
            continue
        node, preformatted = item
        tag = node.tag
        if tag == "-text":
            text = node.text_content or ""
            pieces.append(text if preformatted else _SPACES.sub(" ", text))
            continue
        if tag is None or tag.startswith("-") or tag in _HIDDEN:
            continue
        if tag == "br":
            pieces.append("\n")
            continue
        edge = "\n" if tag in _BLOCKS else " " if tag in _CELLS else ""
        pieces.append(edge)
        stack.append(edge)
        inner = preformatted or tag in _PREFORMATTED
        children = []
        child = node.child
        while child is not None:
            children.append((child, inner))
            child = child.next
        stack.extend(reversed(children))


def read_html_files(paths: Sequence[Path], *, problems: Problems) -> Part:
    """One document per file."""
    names: list[str] = []
    titles: list[str | None] = []
    texts: list[str] = []
    for path in paths:
        html = read_bytes(path, _FORMAT).removeprefix(BOM).decode("utf-8", "replace")
        try:
            title, text = html_to_text(html)
        except (ValueError, RuntimeError) as exc:
            problems.add(InputError(f"cannot parse HTML: {exc}", path=path))
            continue
        names.append(str(path))
        titles.append(title)
        texts.append(text)
    table = pa.table(
        {
            "path": pa.array(names, pa.string()),
            "title": pa.array(titles, pa.string()),
            "text": pa.array(texts, pa.string()),
        }
    )
    return Part(table, str(paths[0]), row_paths=names)
