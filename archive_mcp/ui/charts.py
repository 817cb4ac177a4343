"""The pages' charts as Vega-Lite specs (plain JSON): the page embeds them with the vendored
vega-embed, and the same dict renders in a notebook (`altair.Chart.from_dict(spec)`).

Written as dicts rather than through Altair: Altair would add a dependency and its import
(jsonschema, narwhals) to every page's first load for the three small specs below, and its
output is this same JSON. Data from a log (a turn's gist) goes only into data values, which Vega
shows as text (tooltips are escaped by vega-tooltip); links are ours (`href` built here)."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"  # an identifier; never fetched


def _base(values: list[dict[str, Any]], height: int = 180) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "data": {"values": values},
        "width": "container",
        "height": height,
        "config": {"view": {"stroke": None}, "axis": {"labelFontSize": 11}},
    }


def turns_per_day(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars: main-agent turns per day, coloured by agent."""
    return {
        **_base(rows),
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "day", "type": "temporal", "timeUnit": "yearmonthdate", "title": None},
            "y": {"field": "turns", "type": "quantitative", "aggregate": "sum", "title": "turns"},
            "color": {"field": "agent", "type": "nominal", "title": "agent"},
        },
    }


def usage_per_day(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars: tokens per day, split into input, cache reads, cache writes and output."""
    values = [
        {"day": r["key"], "kind": kind, "tokens": int(r[kind] or 0)}
        for r in rows
        for kind in ("input", "cache_read", "cache_write", "output")
    ]
    return {
        **_base(values),
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "day", "type": "temporal", "timeUnit": "yearmonthdate", "title": None},
            "y": {"field": "tokens", "type": "quantitative", "aggregate": "sum"},
            "color": {"field": "kind", "type": "nominal", "title": "tokens"},
        },
    }


def theme_timeline(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A theme's member turns over time, one row per session; decisions and changes marked;
    hovering shows the gist, clicking opens the turn."""
    sessions = list(dict.fromkeys(e["session"] for e in events))
    return {
        **_base(events, height=max(120, 22 * len(sessions))),
        "mark": {"type": "point", "filled": True, "size": 90, "cursor": "pointer"},
        "encoding": {
            "x": {"field": "at", "type": "temporal", "title": None},
            "y": {
                "field": "session",
                "type": "nominal",
                "sort": sessions,
                "title": "session",
                "axis": {"labelLimit": 120},
            },
            "color": {
                "field": "flag",
                "type": "nominal",
                "title": "marked",
                "scale": {
                    "domain": ["decision", "change", "reversal", "turn"],
                    "range": ["#d62728", "#1f77b4", "#9467bd", "#999999"],
                },
            },
            "shape": {
                "field": "flag",
                "type": "nominal",
                "scale": {
                    "domain": ["decision", "change", "reversal", "turn"],
                    "range": ["diamond", "square", "triangle-up", "circle"],
                },
                "legend": None,
            },
            "href": {"field": "url", "type": "nominal"},
            "tooltip": [
                {"field": "ref", "type": "nominal", "title": "turn"},
                {"field": "at", "type": "temporal", "format": "%Y-%m-%d %H:%M"},
                {"field": "flag", "type": "nominal", "title": "marked"},
                {"field": "gist", "type": "nominal"},
            ],
        },
    }


def embed(spec: dict[str, Any]) -> str:
    """The spec as JSON for a `<script type="application/json">` block: `<`, `>` and `&` as
    escapes so nothing in it can close the block."""
    return (
        json.dumps(spec, ensure_ascii=False, default=str)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
