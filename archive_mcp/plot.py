"""Plots for notebooks and `archive-mcp trace --plot`, with matplotlib (the `plot` extra).

matplotlib rather than altair: it writes a PNG with no browser or extra renderer, which is what
a CLI flag and a headless CI need; notebooks show the same figures inline.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from archive_mcp.errors import MissingDependency
from archive_mcp.themes.trace.timeline import Timeline

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


# `trace --by` as polars periods; "session" bins a turn at its session's first turn in the theme
EVERY = {"day": "1d", "week": "1w", "session": "session"}
_COARSE = ["session", "day", "week"]


def _every(timelines: Sequence[Timeline], every: str | None) -> str:
    """The one binning of a shared axis: as asked, else the coarsest of the traces' granularities."""
    if every is not None:
        return EVERY.get(every, every)
    grans = [tl.granularity for tl in timelines if tl.granularity in EVERY]
    return EVERY[max(grans, key=_COARSE.index)] if grans else "1w"


def _binned(frame: pl.DataFrame, every: str) -> pl.DataFrame:
    """Each turn with `x`, the start of its bin."""
    if every == "session":
        return frame.with_columns(pl.col("started_at").min().over("session_id").alias("x"))
    return frame.with_columns(pl.col("started_at").dt.truncate(every).alias("x"))


def plot_data(
    timelines: Sequence[Timeline], every: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What `themes_over_time` draws: `points` (theme, x, turns), one row per bin (quiet bins of a
    day or week axis as zero), and `markers` (theme, x, kind, ref), each decision at the start of
    the bin its turn falls in, so a marker sits on its turn's dot. `every`: day, week, session or a
    polars period ("1d", "1w", "1mo"); None bins by the traces' own granularity (`trace --by`)."""
    step = _every(timelines, every)
    frames = [
        _binned(tl.frame.drop_nulls("started_at").sort("started_at"), step) for tl in timelines
    ]
    xs = pl.concat([f.select("x") for f in frames]) if frames else pl.DataFrame()
    axis: pl.Series | None = None
    if xs.height and step != "session":
        lo, hi = xs["x"].min(), xs["x"].max()
        axis = (
            pl.datetime_range(lo, hi, step, eager=True)  # type: ignore[arg-type,assignment]
            .dt.truncate(step)
            .unique()
            .sort()
        )
    points, markers = [], []
    for tl, frame in zip(timelines, frames, strict=True):
        if frame.height == 0:
            continue
        counts = frame.group_by("x").agg(pl.len().alias("turns"))
        if (
            axis is not None
        ):  # every period on the axis, quiet ones as zero: gaps are part of the story
            counts = (
                pl.DataFrame({"x": axis})
                .join(counts, on="x", how="left")
                .with_columns(pl.col("turns").fill_null(0).cast(pl.UInt32))
            )
        points.append(counts.sort("x").select(pl.lit(tl.theme).alias("theme"), "x", "turns"))
        at = {
            (r["session_id"], r["agent"], r["turn"]): r["x"]
            for r in frame.select("session_id", "agent", "turn", "x").iter_rows(named=True)
        }
        for d in tl.decisions:
            x = at.get((d.session_id, d.agent, d.turn))
            if x is not None:
                undo = d.flag == "reversal" or "reversal" in d.kinds
                kind = "reversal" if undo else "decision"
                markers.append({"theme": tl.theme, "x": x, "kind": kind, "ref": d.ref})
    dtype = xs.schema["x"] if xs.height else pl.Datetime("us", "UTC")
    schema: dict[str, Any] = {"theme": pl.String, "x": dtype, "turns": pl.UInt32}
    point_frame = pl.concat(points) if points else pl.DataFrame(schema=schema)
    marks = pl.DataFrame(
        markers, schema={"theme": pl.String, "x": dtype, "kind": pl.String, "ref": pl.String}
    )
    return point_frame, marks


def themes_over_time(
    timelines: Sequence[Timeline], path: str | Path | None = None, every: str | None = None
) -> Any:
    """Turns per period for one or several themes, decisions and reversals marked on the period
    of their turn (see `plot_data`). Returns the matplotlib Figure; writes a PNG when `path` is
    given."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    points, markers = plot_data(timelines, every)
    step = _every(timelines, every)
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=110)
    for theme in points["theme"].unique(maintain_order=True).to_list():
        mine = points.filter(pl.col("theme") == theme)
        (line,) = ax.plot(
            mine["x"].to_list(),
            mine["turns"].to_list(),
            marker="o",
            linestyle="" if step == "session" else "-",
            label=theme,
        )
        for kind, marker in (("decision", "D"), ("reversal", "X")):
            at = markers.filter(pl.col("theme") == theme, pl.col("kind") == kind)["x"].to_list()
            if at:
                ax.scatter(at, [0] * len(at), marker=marker, s=70, color=line.get_color(), zorder=3)
    per = {"1d": "day", "1w": "week", "session": "session"}.get(step, step)
    ax.set_title(f"Theme activity over time (turns per {per}; ◆ decision, ✕ reversal)")
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
