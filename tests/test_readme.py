"""Every Python block in README.md runs as written, and the values its comments show are the
values it computes (a comment that starts with a Python literal is checked against the line's
expression)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def _shown(comment: str) -> tuple[bool, Any]:
    """The literal a comment starts with, if it starts with one."""
    text = comment.lstrip("#").strip()
    for candidate in (text, text.split(": ")[0], text.split("  ")[0]):
        try:
            return True, ast.literal_eval(candidate)
        except (ValueError, SyntaxError):
            continue
    return False, None


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_python_block_runs(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files a block writes (idx.db) land in a fresh folder
    source = BLOCKS[number]
    lines = source.splitlines()
    namespace: dict[str, Any] = {"__name__": "readme"}
    for node in ast.parse(source).body:
        code = ast.get_source_segment(source, node)
        assert code is not None
        line = lines[(node.end_lineno or node.lineno) - 1]
        if isinstance(node, ast.Expr) and "#" in line:
            known, shown = _shown(line[line.index("#", len(line) - len(line.lstrip()) + 1) :])
            value = eval(compile(ast.Expression(node.value), "README.md", "eval"), namespace)
            if known:
                assert _plain(value) == shown, f"README block {number}: {code} gives {value!r}, not {shown!r}"
            continue
        exec(compile(ast.Module([node], type_ignores=[]), "README.md", "exec"), namespace)
