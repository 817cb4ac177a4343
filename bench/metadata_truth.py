"""How true the session metadata is on a real archive: titles that are slash commands (or their
output), `interrupted` turns against the interruption markers, sessions marked live.

    ARCHIVE_MCP_HOME=<home> python bench/metadata_truth.py

Prints counts only (never a title or a turn's text: real logs may hold secrets)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl

from archive_mcp import Archive


def main() -> None:
    a = Archive(embedder=None)
    turns = a.turns("all").collect()
    sessions = a.sessions("all").collect()
    title = pl.col("title").fill_null("")
    slash = sessions.filter(title.str.strip_chars_start().str.starts_with("/")).height
    tagged = sessions.filter(title.str.contains("<command-|<local-command-|Caveat:")).height
    main_turns = turns.filter(pl.col("agent") == "main")
    markers = main_turns.filter(pl.col("origin") == "interrupt").height
    interrupted = main_turns.filter(pl.col("status") == "interrupted")
    by_origin = dict(interrupted.group_by("origin").len().iter_rows())
    week = datetime.now(UTC) - timedelta(days=7)
    stale_live = sessions.filter(
        pl.col("live") & (pl.col("last_at").dt.replace_time_zone(None) < week.replace(tzinfo=None))
    ).height
    print(
        json.dumps(
            {
                "sessions": sessions.height,
                "titles_slash": slash,
                "titles_command_markup": tagged,
                "titles_none": sessions.filter(pl.col("title").is_null()).height,
                "main_turns": main_turns.height,
                "interruption_markers": markers,
                "interrupted_turns": interrupted.height,
                "interrupted_by_origin": by_origin,
                "live_sessions": sessions.filter(pl.col("live")).height,
                "live_sessions_older_than_a_week": stale_live,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
