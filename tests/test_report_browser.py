"""The report opened in a real headless Chromium (Debian's ``chromium``, driven by playwright):
no console errors, no network requests, every chart drawn, the diff of a known pair, search.

Screenshots go to ``test-artifacts/report/`` (or ``$NEARDUP_ARTIFACTS/report/``) for a person to
look at. Without a chromium the tests are skipped, except under CI, where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neardup.cli import main
from report_helpers import CHAIN_FLAGS, EDITED, chain_records, write_jsonl
from synthetic import planted_corpus

CHROMIUM = os.environ.get("NEARDUP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("NEARDUP_ARTIFACTS") or ROOT / "test-artifacts")

if CHROMIUM is None and os.environ.get("CI"):
    raise RuntimeError("the report's browser tests need chromium (apt-get install chromium)")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")


def run(*args: str | Path) -> None:
    done = CliRunner().invoke(main, [str(a) for a in args])
    assert done.exit_code == 0, done.output


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@dataclass
class Opened:
    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def shot(self, name: str, *, full_page: bool = True) -> Path:
        target = ARTIFACTS / "report" / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(target), full_page=full_page)
        assert target.stat().st_size > 10_000
        return target


def open_report(browser: Any, path: Path) -> Opened:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    opened = Opened(page)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))

    def refuse(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://") and url.split("#")[0] == path.resolve().as_uri():
            route.continue_()
        else:
            opened.requests.append(url)
            route.abort()

    page.route("**/*", refuse)
    page.goto(path.resolve().as_uri())
    page.wait_for_function("window.neardupReport && window.neardupReport.ready", timeout=60_000)
    return opened


CHARTS_DRAWN = """() => [...document.querySelectorAll('.chart')].map(div => {
  const svg = div.querySelector('svg.main-svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const marks = div.querySelectorAll('.trace path, .trace .point, .bars path, g.barlayer path').length;
  return {id: div.id, traces: (div.data || []).length, width: box.width, height: box.height, marks};
})"""


def assert_charts_drawn(opened: Opened, expected: set[str]) -> None:
    charts = opened.page.evaluate(CHARTS_DRAWN)
    assert {c["id"] for c in charts} == expected
    for chart in charts:
        assert chart["traces"] > 0 and chart["width"] > 200 and chart["height"] > 200, chart
        assert chart["marks"] > 0, chart


def tokens(opened: Opened, side: str, kind: str) -> list[str]:
    column = 1 if side == "a" else 2
    return opened.page.eval_on_selector_all(
        f"#diff .diff-cols > div:nth-child({column}) .tok.{kind}", "els => els.map(e => e.textContent)"
    )


RUN_CHARTS = {"chart-stages", "chart-s-curve", "chart-jaccard", "chart-sizes"}


def test_the_demo_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    run("dedup", "--demo", "-o", tmp_path / "out", "--report", "-q")
    opened = open_report(browser, tmp_path / "out" / "report.html")
    assert_charts_drawn(opened, RUN_CHARTS)
    opened.shot("demo")
    page = opened.page
    page.fill("#search-input", "doc-05")
    result = page.locator('.search-result[data-id="doc-05"]')
    assert "removed: duplicate of doc-04" in result.inner_text()
    result.locator("button.compare").first.click()
    assert page.inner_text("#diff h2") == "doc-04 vs doc-05"
    assert tokens(opened, "a", "del") == [] and tokens(opened, "b", "ins") == []  # the same after normalising
    every = opened.page.eval_on_selector_all("#diff .diff-cols > div:nth-child(1) .tok", "e => e.length")
    assert len(tokens(opened, "a", "shared")) == every == 28  # every 2-gram of doc-04 is doc-05's
    opened.shot("demo-diff", full_page=False)
    page.fill("#search-input", "jaccard similarity")  # text search
    assert page.locator(".search-result").count() >= 3
    assert opened.errors == [] and opened.requests == []


def test_a_chain_its_diff_filters_and_evaluation_in_chromium(browser: Any, tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", chain_records())
    run("dedup", corpus, "-o", tmp_path / "out", *CHAIN_FLAGS)
    truth = tmp_path / "truth.csv"
    truth.write_text("id,group\norigin,a\nlight,a\nfar,b\ntwin-a,c\ntwin-b,c\nalone,d\n", encoding="utf-8")
    run("report", tmp_path / "out", "--truth", truth, "-q")
    opened = open_report(browser, tmp_path / "out" / "report.html")
    page = opened.page
    assert_charts_drawn(opened, RUN_CHARTS)
    assert "chain" in page.inner_text("#chain-warnings") and "far has Jaccard 0.3220" in page.inner_text(
        "#chain-warnings"
    )
    page.locator("#cluster-table tbody tr").first.click()
    assert "far" in page.inner_text("#cluster-detail")
    page.select_option("#pair-kind", "dropped")
    assert page.locator("#pair-table tbody tr").count() == 2
    page.fill("#pair-min", "0.4")
    assert page.locator("#pair-table tbody tr").count() == 1  # the twins, 0.4717
    page.locator("#pair-table tbody tr").first.click()
    assert page.inner_text("#diff h2") == "twin-a vs twin-b"
    page.fill("#search-input", "light")
    page.locator('.search-result[data-id="light"] button.compare', has_text="origin").click()
    assert page.inner_text("#diff h2") == "origin vs light"
    assert tokens(opened, "a", "del") == [f"w{i}" for i in range(30, 40)]
    assert tokens(opened, "b", "ins") == EDITED
    assert "band" in page.inner_text("#diff") and "Jaccard 0.5918" in page.inner_text("#diff")
    evaluation = page.inner_text("#evaluation")
    assert "pair precision" in evaluation and "0.3333" in evaluation  # 1 true of 3 predicted pairs
    opened.shot("chain")
    assert opened.errors == [] and opened.requests == []


KNOWN_WORDS = [f"known{i}" for i in range(120)]
CHANGED = {10: "zebra", 50: "quokka", 90: "axolotl"}


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100,000 documents: the planted corpus plus a cluster of 30 copies of one known text, one of
    them with three words changed (the farthest member from the representative, so shown)."""
    base = tmp_path_factory.mktemp("big")
    records: list[dict[str, Any]] = [
        {"id": r["id"], "text": r["text"]} for r in planted_corpus(100_000 - 31, seed=3)
    ]
    changed = [CHANGED.get(i, w) for i, w in enumerate(KNOWN_WORDS)]
    records.append({"id": "known-original", "text": " ".join(KNOWN_WORDS)})
    records += [{"id": f"known-copy-{k:02d}", "text": " ".join(KNOWN_WORDS)} for k in range(29)]
    records.append({"id": "known-edited", "text": " ".join(changed)})
    with (base / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    run("dedup", base / "corpus.jsonl", "-o", base / "out", "--id-column", "id", "--report", "-q")
    return base / "out"


@pytest.mark.slow
def test_a_100k_report_in_chromium(browser: Any, big_run: Path) -> None:
    page_file = big_run / "report.html"
    assert page_file.stat().st_size < 20e6
    summary = json.loads((big_run / "summary.json").read_text())
    assert summary["input_rows"] == 100_000
    opened = open_report(browser, page_file)
    page = opened.page
    assert_charts_drawn(opened, RUN_CHARTS)
    assert "100,000" in page.inner_text("#run-table")
    notes = page.inner_text("#sampling")
    assert "of 100,000 documents are included" in notes
    opened.shot("100k")
    page.locator("#cluster-table tbody tr").first.click()  # the largest: the known text's 31
    detail = page.inner_text("#cluster-detail")
    assert "31 members, representative known-original" in detail
    page.locator("#cluster-detail tr.clickable", has_text="known-edited").first.click()
    assert page.inner_text("#diff h2") == "known-original vs known-edited"
    assert tokens(opened, "a", "del") == [KNOWN_WORDS[i] for i in sorted(CHANGED)]
    assert tokens(opened, "b", "ins") == [CHANGED[i] for i in sorted(CHANGED)]
    opened.shot("100k-diff", full_page=False)
    duplicate = next(
        json.loads(line)
        for line in (big_run / "duplicates.jsonl").open(encoding="utf-8")
        if not json.loads(line)["id"].startswith("known")
    )
    page.fill("#search-input", duplicate["id"])
    found = page.locator(f'.search-result[data-id="{duplicate["id"]}"]')
    assert f"duplicate of {duplicate['duplicate_of']}" in found.inner_text()
    assert opened.errors == [] and opened.requests == []
