"""The report's charts as Plotly figure specifications (plain dicts of ``data`` and ``layout``).

Plotly draws them in the page from its own bundle, inlined (see :mod:`neardup.report.html`);
these functions only turn the report's data into traces, so they are tested without a browser.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

Figure = dict[str, Any]

_BASE: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 90},
    "template": None,
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.32},
    "paper_bgcolor": "white",
    "plot_bgcolor": "#fbfbfd",
}
_VERIFIED = "#2f6fde"
_DROPPED = "#d9534f"


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {**_BASE, "title": {"text": title, "font": {"size": 14}}, **extra}


def _threshold_line(threshold: float, yref: str = "paper") -> dict[str, Any]:
    return {
        "type": "line",
        "x0": threshold,
        "x1": threshold,
        "y0": 0,
        "y1": 1,
        "yref": yref,
        "line": {"color": "#444", "dash": "dash", "width": 1.5},
    }


def s_curve(s: dict[str, Any], candidates: dict[str, Any]) -> Figure:
    """The chance of becoming a candidate against Jaccard for the run's (bands, rows), the
    threshold marked, and where the linked pairs' Jaccard values fall (a histogram behind)."""
    data: list[dict[str, Any]] = [
        {
            "type": "histogram",
            "x": candidates["linked_jaccard_sample"],
            "xbins": {"start": 0, "end": 1.0001, "size": 0.02},
            "name": "linked pairs (Jaccard)",
            "yaxis": "y2",
            "marker": {"color": _VERIFIED},
            "opacity": 0.35,
        },
        {
            "type": "scatter",
            "mode": "lines",
            "x": s["x"],
            "y": s["p"],
            "name": f"P(candidate), {s['bands']} bands x {s['rows']} rows",
            "line": {"color": "#1d2330", "width": 2.5},
        },
    ]
    layout = _layout(
        "S-curve: the chance two documents become a candidate pair",
        xaxis={"title": {"text": "Jaccard similarity"}, "range": [0, 1.02]},
        yaxis={"title": {"text": "probability"}, "range": [0, 1.02]},
        yaxis2={
            "title": {"text": "linked pairs", "standoff": 6},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "automargin": True,
        },
        shapes=[_threshold_line(s["threshold"])],
        annotations=[
            {
                "x": s["threshold"],
                "y": 1.0,
                "yref": "paper",
                "text": f"threshold {s['threshold']}",
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
            }
        ],
    )
    return {"data": data, "layout": layout}


def jaccard_histogram(candidates: dict[str, Any], threshold: float) -> Figure:
    """Candidate pairs by exact Jaccard: linked (kept as edges) and dropped, stacked."""
    edges = candidates["bin_edges"]
    centres = [round((lo + hi) / 2, 4) for lo, hi in itertools.pairwise(edges)]
    width = edges[1] - edges[0] if len(edges) > 1 else 0.02
    data = [
        {
            "type": "bar",
            "x": centres,
            "y": candidates["linked"],
            "width": width,
            "name": "linked",
            "marker": {"color": _VERIFIED},
        },
        {
            "type": "bar",
            "x": centres,
            "y": candidates["dropped"],
            "width": width,
            "name": "dropped",
            "marker": {"color": _DROPPED},
        },
    ]
    sampled = candidates["sampled"]
    title = f"Candidate pairs by exact Jaccard ({sampled:,} of {candidates['candidates']:,})"
    layout = _layout(
        title,
        barmode="stack",
        xaxis={"title": {"text": "Jaccard similarity"}, "range": [0, 1.02]},
        yaxis={"title": {"text": "pairs"}},
        shapes=[_threshold_line(threshold)],
    )
    return {"data": data, "layout": layout}


def cluster_sizes(clusters: dict[str, Any]) -> Figure:
    """How many clusters have each size: bars on a logarithmic count axis (and a logarithmic
    size axis once sizes pass 50, where a long tail of giant clusters would squeeze the rest)."""
    sizes = clusters["size_values"]
    data = [
        {
            "type": "bar",
            "x": sizes,
            "y": clusters["size_counts"],
            "name": "clusters",
            "marker": {"color": _VERIFIED},
            "hovertemplate": "%{y:,} clusters of %{x} members<extra></extra>",
        }
    ]
    wide = bool(sizes) and max(sizes) > 50
    top = max(clusters["size_counts"] or [1])
    layout = _layout(
        f"Cluster sizes ({clusters['count']:,} clusters)",
        xaxis={
            "title": {"text": "members"},
            "type": "log" if wide else "linear",
            "dtick": None if wide else 1,
        },
        # bars on a log axis start at its bottom: below 1, so that a count of 1 shows
        yaxis={
            "title": {"text": "clusters"},
            "type": "log",
            "range": [-0.3, math.log10(top) + 0.3],
            "dtick": "D2",
        },
        showlegend=False,
        bargap=0.15,
    )
    return {"data": data, "layout": layout}


def stage_seconds(seconds: dict[str, float]) -> Figure:
    """Seconds per stage of the run."""
    stages = [k for k in seconds if k != "total"]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "y": stages,
            "x": [seconds[k] for k in stages],
            "marker": {"color": "#5b6475"},
            "name": "seconds",
        }
    ]
    total = seconds.get("total")
    title = "Seconds per stage" + (f" (total {total:.2f} s)" if isinstance(total, int | float) else "")
    layout = _layout(
        title,
        xaxis={"title": {"text": "seconds"}},
        yaxis={"autorange": "reversed", "automargin": True},
        showlegend=False,
    )
    return {"data": data, "layout": layout}


def report_charts(data: dict[str, Any]) -> dict[str, Figure]:
    """Every chart of a run's report, keyed by the name of the element it is drawn into."""
    return {
        "s-curve": s_curve(data["s_curve"], data["candidates"]),
        "jaccard": jaccard_histogram(data["candidates"], data["s_curve"]["threshold"]),
        "sizes": cluster_sizes(data["clusters"]),
        "stages": stage_seconds(data["run"]["seconds"]),
    }


def precision_recall(tune: dict[str, Any]) -> Figure:
    """A precision/recall curve per feature setting of a sweep (one point per threshold), the
    precision floor and the recommended point marked."""
    data: list[dict[str, Any]] = []
    for setting in tune["settings"]:
        points = sorted(setting["points"], key=lambda p: p["threshold"])
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [p["pair_recall"] for p in points],
                "y": [p["pair_precision"] for p in points],
                "text": [f"t={p['threshold']} F1={p['pair_f1']:.3f}" for p in points],
                "hovertemplate": "%{text}<br>recall %{x:.3f}, precision %{y:.3f}<extra>"
                + setting["label"]
                + "</extra>",
                "name": setting["label"],
            }
        )
    rec = tune.get("recommended")
    if rec:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [rec["pair_recall"]],
                "y": [rec["pair_precision"]],
                "name": "recommended",
                "marker": {
                    "symbol": "star",
                    "size": 18,
                    "color": "#f0ad4e",
                    "line": {"color": "#333", "width": 1},
                },
            }
        )
    floor = tune.get("min_precision")
    shapes = []
    if floor is not None:
        shapes.append(
            {
                "type": "line",
                "x0": 0,
                "x1": 1,
                "xref": "paper",
                "y0": floor,
                "y1": floor,
                "line": {"dash": "dot", "color": "#d9534f"},
            }
        )
    precisions = [p["pair_precision"] for s in tune["settings"] for p in s["points"]]
    # the precision axis starts just below the lowest point (or the floor): settings often differ
    # in the third decimal, which a 0-1 axis would flatten into one line
    bottom = max(0.0, min([*precisions, 1.0 if floor is None else floor]) - 0.02)
    layout = _layout(
        "Precision and recall of each setting across thresholds",
        xaxis={"title": {"text": "pair recall"}, "range": [0, 1.02]},
        yaxis={"title": {"text": "pair precision"}, "range": [bottom, 1.0 + (1.0 - bottom) * 0.03]},
        shapes=shapes,
        height=480,
    )
    return {"data": data, "layout": layout}
