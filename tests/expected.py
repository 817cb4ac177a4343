"""Render parsed turns in the shape of fixtures/kimi/EXPECTED_turns.json."""

from __future__ import annotations

from typing import Any

from archive_mcp.refiners.model import ParseResult, Turn


def turn_json(t: Turn) -> dict[str, Any]:
    return {
        "index": t.index,
        "started_at": t.started_at,
        "ended_at": t.ended_at,
        "end": t.end,
        "user_text": t.user_text,
        "user_media": t.user_media,
        "is_slash_command": t.is_slash_command,
        "steer_inputs": t.steer_inputs,
        "compactions": t.compactions,
        "assistant_text": t.assistant_text,
        "final_text": t.final_text,
        "synthetic_text": t.synthetic_text,
        "thinking": t.thinking,
        "steps": [
            {
                "n": s.n,
                "retries": s.retries,
                "interrupted": s.interrupted,
                "compacted": s.compacted,
                "tool_calls": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "arguments": c.arguments,
                        "result": None
                        if c.result is None
                        else {
                            "is_error": c.result["is_error"],
                            "message": c.result["message"],
                            "output_chars": len(c.output_text),
                        },
                        "approval": c.approval,
                        "arguments_valid_json": c.arguments_valid_json,
                    }
                    for c in s.tool_calls
                ],
            }
            for s in t.steps
        ],
        "usage": t.usage,
        "subagents": {
            aid: {
                "subagent_type": r.subagent_type,
                "parent_tool_call_id": r.parent_tool_call_id,
                "turns": [turn_json(x) for x in r.turns],
            }
            for aid, r in t.subagents.items()
        },
    }


def result_json(r: ParseResult) -> dict[str, Any]:
    return {
        "protocol_version": r.protocol_version,
        "problems": [p.to_json() for p in r.problems],
        "turns": [turn_json(t) for t in r.turns],
    }


def looping_subsessions(db: object, sids: tuple[str, ...] = ("loop-a", "loop-b")) -> list[Any]:
    """What discovery reports of a store's sub-sessions whose parents loop: each archived alone."""
    return [
        (
            str(db),
            f"sub-session {sid}: its parents never reach a top-level session (they loop); "
            "archived as a session of its own",
        )
        for sid in sids
    ]
