"""The report as one self-contained HTML file: the data, the charts, the page's script and style
and Plotly's bundle all inline, so it opens from disk and works offline.

Charts are drawn by Plotly (the ``plotly`` package ships the plotly.js bundle, so nothing is
fetched from a CDN or kept in this repository): interactive hover, zoom and log axes for the
S-curve, histograms and cluster sizes, with one well-kept dependency. The bundle costs about
4.8 MB per page; the data is capped by :class:`neardup.report.data.ReportLimits`.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from neardup.errors import ConfigError, OutputError
from neardup.report.charts import precision_recall, report_charts

_EXTRA = "the HTML report needs plotly: pip install 'neardup[report]'"


def plotly_bundle() -> str:
    """plotly.js, from the installed ``plotly`` package."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise ConfigError(_EXTRA) from None
    return str(get_plotlyjs())


def _asset(name: str) -> str:
    return resources.files("neardup.report").joinpath("assets", name).read_text(encoding="utf-8")


_SCRIPT_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def _script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element whatever the corpus holds."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escaped in _SCRIPT_ESCAPES:
        text = text.replace(char, escaped)
    return text


_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
"""The page may run and style only what it holds inline: a browser refuses any fetch."""


def _page(title: str, subtitle: str, body: str, payload: dict[str, Any]) -> str:
    return "".join(
        (
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # nothing may come from the network: the page's own inline code only
            f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
            f"<title>{html.escape(title)}</title><style>{_asset('report.css')}</style></head><body>",
            f'<header><h1>{html.escape(title)}</h1><div class="sub">{html.escape(subtitle)}</div></header>',
            body,
            f'<script type="application/json" id="report-data">{_script_json(payload)}</script>',
            f"<script>{plotly_bundle()}</script>",
            f"<script>{_asset('report.js')}</script>",
            "</body></html>\n",
        )
    )


def render_report(data: dict[str, Any]) -> str:
    """The HTML page of a run's report (:func:`neardup.report.data.build_report`)."""
    inputs = ", ".join(data["run"].get("inputs") or [])
    payload = {"data": {**data, "kind": "run"}, "charts": report_charts(data)}
    return _page(
        "neardup report", f"{inputs} -> {data['run'].get('output_dir')}", _asset("run.html"), payload
    )


def render_tune(tune: dict[str, Any]) -> str:
    """The HTML page of a tuning sweep (its ``to_dict()``)."""
    payload = {"data": {"kind": "tune", "tune": tune}, "charts": {"pr": precision_recall(tune)}}
    return _page("neardup tune", str(tune.get("corpus", "")), _asset("tune.html"), payload)


def write_html(page: str, path: str | os.PathLike[str]) -> Path:
    """Write ``page`` to ``path`` whole or not at all (a temporary file renamed into place)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".neardup-report-", suffix=".html", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write the report: {exc.strerror or exc}") from exc
    return target
