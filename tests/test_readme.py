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


SERVICE = "neardup.client"
"""Blocks that talk to ``neardup serve``: tests/test_server_readme.py runs them beside a server."""


@pytest.mark.parametrize("number", [i for i, block in enumerate(BLOCKS) if SERVICE not in block])
def test_readme_python_block_runs(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files a block writes (idx.db) land in a fresh folder
    run_block(BLOCKS[number], f"README block {number}")


def run_block(source: str, name: str) -> None:
    """Run a README block statement by statement, checking each value a comment shows."""
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
                assert _plain(value) == shown, f"{name}: {code} gives {value!r}, not {shown!r}"
            continue
        exec(compile(ast.Module([node], type_ignores=[]), "README.md", "exec"), namespace)


# -- the command-line examples ---------------------------------------------------------------------

SHELL_BLOCKS = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
EXAMPLES = [
    line.split("  #")[0].strip()
    for block in SHELL_BLOCKS
    for line in block.splitlines()
    if line.startswith("neardup ") and "..." not in line and "[" not in line
]
_TEXTS = [
    "The harbour opens at dawn for the fishing boats.",
    "the harbour opens at dawn for the fishing boats!",
    "Bread rises slowly in a cold kitchen overnight.",
    "A long walk along the river ends at the old mill.",
]


def _files(folder: Path) -> None:
    """The files the README's examples name, made small."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    def jsonl(name: str, texts: list[str], start: int = 0) -> None:
        lines = [json.dumps({"id": f"d{start + i}", "text": t}) for i, t in enumerate(texts)]
        (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    jsonl("corpus.jsonl", _TEXTS)
    (folder / "truth.csv").write_text(
        "id,group\nd0,harbour\nd1,harbour\nd2,bread\nd3,walk\n", encoding="utf-8"
    )
    jsonl("new.jsonl", [_TEXTS[1].upper(), "Something else entirely, about the weather in the hills."], 10)
    jsonl(
        "chinese.jsonl",
        ["自然语言处理是人工智能的一个分支", "自然语言处理是人工智能的一个分支。", "今天天气很好"],
    )
    (folder / "crawl").mkdir()
    for i, part in enumerate((_TEXTS[:2], _TEXTS[2:])):
        rows = "".join(f'"{t}",https://example.org/{i}/{j}\n' for j, t in enumerate(part))
        (folder / "crawl" / f"part-{i}.csv").write_text("body,url\n" + rows, encoding="utf-8")
        table = pa.table({"url": [f"https://example.org/{i}/{j}" for j in range(len(part))], "text": part})
        pq.write_table(table, folder / "crawl" / f"part-{i}.parquet")
    (folder / "pages").mkdir()
    for i, text in enumerate(_TEXTS):
        page = f"<html><head><script>var x = 1;</script></head><body><p>{text}</p></body></html>"
        (folder / "pages" / f"page-{i}.html").write_text(page, encoding="utf-8")


def test_the_readme_has_command_examples() -> None:
    assert len(EXAMPLES) >= 8
    assert any("--against" in e for e in EXAMPLES) and any("--memory-limit" in e for e in EXAMPLES)


def test_readme_command_examples_run(tmp_path: Path) -> None:
    """Every concrete ``neardup`` line of the README runs, in order, on files made for it."""
    import shlex
    import subprocess
    import sys

    _files(tmp_path)
    command = str(Path(sys.executable).with_name("neardup"))
    for example in EXAMPLES:
        args = shlex.split(example)[1:]
        done = subprocess.run([command, *args], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{example}\n{done.stderr}"
    import json

    against = json.loads((tmp_path / "out-new" / "summary.json").read_text())
    assert against["duplicates_removed"] == 1  # the new copy of an indexed text
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["input_rows"] == 4
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "tune.html").is_file()
