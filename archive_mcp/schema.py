"""Column names and dtypes of the frames the archive hands out. A test pins them."""

from __future__ import annotations

import polars as pl

UTC_US = pl.Datetime("us", "UTC")

TOOL_CALL = pl.Struct(
    {
        "name": pl.String,
        "args_summary": pl.String,
        "status": pl.String,
        "result_summary": pl.String,
        "duration_ms": pl.Int64,
        "files": pl.List(pl.String),
    }
)
USAGE = pl.Struct(
    {"input": pl.Int64, "output": pl.Int64, "cache_read": pl.Int64, "cache_creation": pl.Int64}
)
RAW_REF = pl.Struct({"file": pl.String, "byte_start": pl.Int64, "byte_end": pl.Int64})

# One refined turn per row (DESIGN.md "Refined turn"), plus the session title for listings.
REFINED: dict[str, pl.DataType] = {
    "workspace_id": pl.String(),
    "source": pl.String(),
    "session_id": pl.String(),
    "title": pl.String(),
    "agent": pl.String(),
    "turn": pl.Int64(),
    "started_at": UTC_US,
    "ended_at": UTC_US,
    "status": pl.String(),
    "origin": pl.String(),
    "user_text": pl.String(),
    "assistant_text": pl.String(),
    "thinking_text": pl.String(),
    "tool_calls": pl.List(TOOL_CALL),
    "files": pl.List(pl.String()),
    "usage": USAGE,
    "steps": pl.Int64(),
    "summary": pl.String(),
    "keywords": pl.List(pl.String()),
    "kinds": pl.List(pl.String()),
    "redactions": pl.Int64(),
    "refiner": pl.String(),
    "content_hash": pl.String(),
    "raw_ref": RAW_REF,
}
_TIMES = ("started_at", "ended_at")


def refined_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows from `refiners.refine_turn` (times in epoch µs) as a frame with the REFINED schema."""
    build = {k: (pl.Int64() if k in _TIMES else v) for k, v in REFINED.items()}
    df = pl.DataFrame(rows, schema=build)
    return df.with_columns([pl.col(c).cast(UTC_US) for c in _TIMES])


def empty_refined() -> pl.DataFrame:
    return pl.DataFrame(schema=REFINED)


THEME_SCHEMA: dict[str, pl.DataType] = {
    "workspace_id": pl.String(),
    "theme": pl.String(),
    "slug": pl.String(),
    "status": pl.String(),
    "session_id": pl.String(),
    "agent": pl.String(),
    "turn": pl.Int64(),
    "provenance": pl.String(),
    "who": pl.String(),
    "tagged_at": pl.String(),
    "score": pl.Float64(),
    "probability": pl.Float64(),  # the learned score's, for turns topic seeds attached
}

# One row per tool call (Archive.tool_calls).
TOOL_CALLS: dict[str, pl.DataType] = {
    "workspace_id": pl.String(),
    "session_id": pl.String(),
    "agent": pl.String(),
    "turn": pl.Int64(),
    "call": pl.Int64(),
    "started_at": UTC_US,
    "name": pl.String(),
    "status": pl.String(),
    "duration_ms": pl.Int64(),
    "files": pl.List(pl.String()),
    "args_summary": pl.String(),
    "result_summary": pl.String(),
}

# One row per session (Archive.sessions).
SESSIONS: dict[str, pl.DataType] = {
    "workspace_id": pl.String(),
    "source": pl.String(),
    "session_id": pl.String(),
    "title": pl.String(),
    "first_at": UTC_US,
    "last_at": UTC_US,
    "turns": pl.UInt32(),
    "subagent_turns": pl.UInt32(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "live": pl.Boolean(),
    "statuses": pl.List(pl.String()),
}
