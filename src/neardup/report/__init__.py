"""Seeing and trusting a run: its output folder read back, the report's data and its HTML page,
evaluation against labels and the tuning sweep.

:func:`write_report` is the one call behind ``neardup report`` and ``neardup dedup --report``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

REPORT_FILE = "report.html"


def write_report(
    out_dir: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    evaluation: dict[str, Any] | None = None,
    limits: Any = None,
) -> Path:
    """Write the HTML report of the run in ``out_dir`` to ``path`` (default
    ``out_dir/report.html``) and return where it went. ``evaluation`` (an evaluation's
    ``to_dict()``) adds its section; ``limits`` is a :class:`~neardup.report.data.ReportLimits`."""
    from neardup.report.data import build_report
    from neardup.report.html import plotly_bundle, render_report, write_html

    plotly_bundle()  # a missing extra is said before any work
    data = build_report(out_dir, limits=limits, evaluation=evaluation)
    return write_html(render_report(data), Path(path) if path is not None else Path(out_dir) / REPORT_FILE)
