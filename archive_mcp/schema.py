"""Column names and dtypes of the frames the archive hands out. A test pins them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


COLUMNAR_MIN = 32  # rows from which a frame is built a column at a time (`refined_frame`)


def refined_frame(rows: list[dict]) -> pl.DataFrame:
    """Rows from `refiners.refine_turn` (times in epoch µs) as a frame with the REFINED schema.

    From COLUMNAR_MIN rows on, built a column at a time: polars builds a Series for every list
    cell of a row-wise frame (four a turn here, 0.05-0.10 ms a turn), a list column from its
    flattened items once (`_list_column`) at a fixed 1.8 ms a frame, which fewer rows do not
    repay (measured in bench/results/readers.md)."""
    build = {k: (pl.Int64() if k in _TIMES else v) for k, v in REFINED.items()}
    if len(rows) < COLUMNAR_MIN:
        df = pl.DataFrame(rows, schema=build)
        return df.with_columns([pl.col(c).cast(UTC_US) for c in _TIMES])
    columns = []
    for name, dtype in build.items():
        values = [r.get(name) for r in rows]
        if name == "tool_calls":
            columns.append(_list_column(name, values, _calls_column))
        elif dtype == pl.List(pl.String()):
            columns.append(
                _list_column(name, values, lambda items: pl.Series(items, dtype=pl.String()))
            )
        else:
            series = pl.Series(name, values, dtype=dtype)
            columns.append(series.cast(UTC_US) if name in _TIMES else series)
    return pl.DataFrame(columns)


def _list_column(
    name: str, cells: list[Any], items_of: Callable[[list[Any]], pl.Series]
) -> pl.Series:
    """A list column from its cells (lists, or None for a null cell): all cells' items built into
    one Series by `items_of`, then gathered back by cell; an empty cell holds a placeholder item
    that is filtered out, so every cell keeps its place."""
    cell_of: list[int] = []
    items: list[Any] = []
    kept: list[bool] = []
    for i, cell in enumerate(cells):
        if cell:
            cell_of += [i] * len(cell)
            items += cell
            kept += [True] * len(cell)
        else:
            cell_of.append(i)
            items.append(None)
            kept.append(False)
    lists = (
        pl.DataFrame(
            [
                pl.Series("cell", cell_of, dtype=pl.Int64()),
                items_of(items).alias("item"),
                pl.Series("kept", kept, dtype=pl.Boolean()),
            ]
        )
        .group_by("cell", maintain_order=True)
        .agg(pl.col("item").filter(pl.col("kept")))
        .get_column("item")
    )
    if None in cells:
        nulls = pl.Series([c is None for c in cells])
        lists = pl.select(pl.when(nulls).then(None).otherwise(lists)).to_series()
    return lists.alias(name)


def _calls_column(calls: list[dict[str, Any] | None]) -> pl.Series:
    """The tool calls (dicts of TOOL_CALL's fields; None for a placeholder) as one struct Series."""
    fields = [
        _list_column(
            field,
            [None if c is None else c.get(field) for c in calls],
            lambda p: pl.Series(p, dtype=pl.String()),
        )
        if dtype == pl.List(pl.String())
        else pl.Series(field, [None if c is None else c.get(field) for c in calls], dtype=dtype)
        for field, dtype in TOOL_CALL.to_schema().items()
    ]
    return pl.struct(fields, eager=True)


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
