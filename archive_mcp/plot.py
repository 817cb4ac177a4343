"""Plots for notebooks and `archive-mcp trace --plot`, with matplotlib (the `plot` extra).

matplotlib rather than altair: it writes a PNG with no browser or extra renderer, which is what
a CLI flag and a headless CI need; notebooks show the same figures inline.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from archive_mcp.errors import MissingDependency
from archive_mcp.themes.timeline import Timeline

INSTALL = "pip install 'agent-archive-mcp[plot]'"


def _done(plt: Any, fig: Any, path: str | Path | None) -> Any:
    """Write the PNG when asked; detach the figure from pyplot so a notebook shows it once, where
    it is returned (inline), and a long-running process does not keep every figure alive."""
    if path is not None:
        fig.savefig(path, format="png")
    plt.close(fig)
    return fig


def require_matplotlib() -> None:
    """Fail at once, before any work, when matplotlib is missing: one line naming the command."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingDependency(f"plotting needs matplotlib: {INSTALL}") from None


def _pyplot() -> Any:
    require_matplotlib()
    import matplotlib

    if "ipykernel" not in sys.modules:  # a CLI, a server or CI: draw headless
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def themes_over_time(
    timelines: Sequence[Timeline], path: str | Path | None = None, every: str = "1w"
) -> Any:
    """Turns per period for one or several themes, decisions and reversals marked. Returns the
    matplotlib Figure; writes a PNG when `path` is given."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=110)
    frames = [tl.frame.drop_nulls("started_at").sort("started_at") for tl in timelines]
    starts: list[datetime] = [f["started_at"].min() for f in frames if f.height]  # type: ignore[misc]
    ends: list[datetime] = [f["started_at"].max() for f in frames if f.height]  # type: ignore[misc]
    periods = (
        pl.DataFrame(
            {"started_at": pl.datetime_range(min(starts), max(ends), every, eager=True)}
        ).with_columns(pl.col("started_at").dt.truncate(every))
        if starts
        else None
    )
    for tl, frame in zip(timelines, frames, strict=True):
        if frame.height == 0 or periods is None:
            continue
        counts = frame.group_by_dynamic("started_at", every=every).agg(pl.len().alias("turns"))
        # every period on the axis, quiet ones as zero: gaps are part of the story
        full = (
            periods.unique()
            .sort("started_at")
            .join(counts, on="started_at", how="left")
            .with_columns(pl.col("turns").fill_null(0))
        )
        (line,) = ax.plot(
            full["started_at"].to_list(), full["turns"].to_list(), marker="o", label=tl.theme
        )
        for d in tl.decisions:
            kinds = d.get("kinds", [])
            when = pl.Series([d["at"]]).str.to_datetime(time_zone="UTC")[0] if d.get("at") else None
            if when is None:
                continue
            marker = "X" if "reversal" in kinds else "D"
            ax.scatter([when], [0], marker=marker, s=70, color=line.get_color(), zorder=3)
    ax.set_title("Theme activity over time (turns per period; ◆ decision, ✕ reversal)")
    ax.set_ylabel("turns")
    ax.set_ylim(bottom=-0.3)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if timelines:
        ax.legend(loc="upper left", fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    return _done(plt, fig, path)


def bar(
    frame: pl.DataFrame,
    x: str,
    y: str,
    title: str,
    path: str | Path | None = None,
    horizontal: bool = True,
) -> Any:
    """A simple bar chart of two columns (tool usage, busiest sessions, …)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, max(3, 0.3 * frame.height)), dpi=110)
    labels, values = [str(v) for v in frame[x].to_list()], frame[y].to_list()
    (ax.barh if horizontal else ax.bar)(labels, values)
    if horizontal:
        ax.invert_yaxis()
    ax.set_title(title)
    fig.tight_layout()
    return _done(plt, fig, path)


def activity(
    frame: pl.DataFrame,
    every: str = "1d",
    title: str = "Turns per day",
    path: str | Path | None = None,
) -> Any:
    """Turns over time from `Archive.turns()`."""
    plt = _pyplot()
    counts = (
        frame.drop_nulls("started_at")
        .sort("started_at")
        .group_by_dynamic("started_at", every=every)
        .agg(pl.len().alias("turns"))
    )
    fig, ax = plt.subplots(figsize=(10, 3.5), dpi=110)
    ax.bar(counts["started_at"].to_list(), counts["turns"].to_list(), width=0.8)
    ax.set_title(title)
    ax.set_ylabel("turns")
    fig.autofmt_xdate()
    fig.tight_layout()
    return _done(plt, fig, path)
