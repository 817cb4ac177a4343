"""Timelines as rows for people: the events as CSV (one header for several themes) or as a plain
table. The CLI prints these; a notebook or a script can call them the same way."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from archive_mcp.render import table
from archive_mcp.themes.trace.model import TimelineData

# The event columns a CSV holds, in order (`kinds` joined with commas).
CSV_COLUMNS = ("started_at", "source", "session_id", "agent", "turn", "bucket", "summary", "kinds")


def events_csv(timelines: Sequence[TimelineData]) -> str:
    """The events of one or several timelines as CSV: one header, with a `theme` column first when
    there are several."""
    several = len(timelines) > 1
    frames = [
        tl.frame.select(
            *([pl.lit(tl.theme).alias("theme")] if several else []),
            *CSV_COLUMNS[:-1],
            pl.col("kinds").list.join(","),
        )
        for tl in timelines
    ]
    return pl.concat(frames).write_csv()


def events_table(tl: TimelineData, summary_width: int = 90) -> str:
    """The events of a timeline as an aligned table: when, source, ref, kinds, summary."""
    rows = [
        {
            "when": e.at,
            "source": e.source,
            "ref": f"{e.session_id}:{e.turn}",
            "kinds": ",".join(e.kinds),
            "summary": e.summary,
        }
        for e in tl.events
    ]
    return table(rows, ["when", "source", "ref", "kinds", "summary"], {"summary": summary_width})
