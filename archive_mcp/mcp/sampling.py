"""refine_session_turns with MCP sampling: one request to the client's model for a few turns'
summaries, asked by a resolver before the tool body runs, applied when the answer is usable (the
prompt and the reading of the answer are the refiners': `refiners/sampling.py`)."""

from __future__ import annotations

from typing import Any

import polars as pl
from mcp.server.mcpserver import Context, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError, InvalidArgument
from archive_mcp.mcp.toolkit import state
from archive_mcp.refiners.sampling import (
    SAMPLED_REFINER,
    parse_sampled,
    sampling_prompt,
    sampling_tokens,
)
from archive_mcp.workspaces import Workspace


def session_rows(
    archive: Archive, ws: Workspace, session_id: str, turns: list[int] | None
) -> list[dict[str, Any]]:
    """The refined rows of a session (only `turns` when given; unknown turns are an error)."""
    df = (
        archive.turns(ws.id)
        .filter(pl.col("session_id") == session_id)
        .sort("agent", "turn")
        .collect()
    )
    if turns:
        bad = sorted(set(turns) - set(df["turn"].to_list()))
        if bad:
            valid = f"{df['turn'].min()!s}..{df['turn'].max()!s}" if df.height else "none"
            raise InvalidArgument(
                f"turns {bad[:20]} are not in session {session_id}; valid turns: {valid}"
            )
    return [r for r in df.iter_rows(named=True) if not turns or r["turn"] in turns]


def sampling_request(
    session_id: str,
    workspace: str | None,
    turns: list[int] | None,
    use_sampling: bool,
    max_sampled_turns: int,
    ctx: Context,
) -> Sample | None:
    """One sampling request for up to `max_sampled_turns` turns, when opted in and offered."""
    caps = ctx.client_capabilities
    if not use_sampling or caps is None or caps.sampling is None:
        return None
    st = state(ctx)
    try:
        ws = st.archive.workspace(workspace) if workspace else st.archive.workspace(cwd=st.cwd)
        rows = session_rows(st.archive, ws, session_id, turns)[:max_sampled_turns]
    except ArchiveError:
        return None  # the tool body reports the same mistake with its message
    if not rows:
        return None
    return Sample(
        [
            SamplingMessage(
                role="user", content=TextContent(type="text", text=sampling_prompt(rows))
            )
        ],
        max_tokens=sampling_tokens(rows),
    )


def apply_sampled(
    archive: Archive,
    ws: Workspace,
    session_id: str,
    rows: list[dict[str, Any]],
    sampled: CreateMessageResult | None,
) -> tuple[int, str | None]:
    """Store the client's summaries; (how many, why none when none)."""
    if sampled is None:
        return 0, "the client does not support sampling: kept the extractive summaries"
    chosen = parse_sampled(getattr(sampled.content, "text", "") or "", rows)
    if chosen is None:
        return (
            0,
            "the client's model did not answer with one summary per turn: kept the extractive summaries",
        )
    return archive.set_summaries(ws, session_id, chosen, refiner=SAMPLED_REFINER), None
