"""A sub-agent's turn is read by its own reference, agent included: `SESSION:0` is the main
agent's turn 0, `SESSION:0 [agent-…]` the sub-agent's, each with its own calls; the path-query
bench (bench/path_queries.py) reads a hit the same way. Hand-made Claude Code logs, no corpus."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from archive_mcp.archive import Archive

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))

import path_queries  # noqa: E402

SID = "5a1b2c3d-0000-4000-8000-000000000001"
CWD = "/home/a/proj"


def record(kind: str, n: int, content: Any, agent: str | None = None) -> dict[str, Any]:
    """One Claude Code line: the main agent's, or with `agent` a sub-agent's (a sidechain)."""
    rec: dict[str, Any] = {
        "type": kind,
        "sessionId": SID,
        "cwd": CWD,
        "version": "2.1.14",
        "uuid": f"{agent or 'main'}-{n}",
        "parentUuid": f"{agent or 'main'}-{n - 1}" if n else None,
        "isSidechain": agent is not None,
        "timestamp": f"2026-01-21T20:5{n}:00.000Z",
        "message": {"role": kind, "content": content},
    }
    if agent:
        rec["agentId"] = agent
    if kind == "assistant":
        rec["message"]["id"] = f"msg-{agent or 'main'}-{n}"
    return rec


def use(tid: str, name: str, **inputs: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tid, "name": name, "input": inputs}]


def result(tid: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": tid, "content": text}]


def write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def archive_of_a_session_with_a_subagent(tmp_path: Path) -> Archive:
    """The main agent says hello (no call); its sub-agent reads src/app.py and runs the tests."""
    root = tmp_path / "logs" / "-home-a-proj"
    main = [
        record("user", 0, "say hello"),
        record("assistant", 1, [{"type": "text", "text": "Hello."}]),
    ]
    sub = "a7c8fd3"
    agent = [
        record("user", 0, "Find where the app starts.", sub),
        record("assistant", 1, use("t1", "Read", file_path=f"{CWD}/src/app.py"), sub),
        record("user", 2, result("t1", "def main():\n    serve()\n"), sub),
        record("assistant", 3, use("t2", "Bash", command="pytest -q"), sub),
        record("user", 4, result("t2", "3 passed"), sub),
        record("assistant", 5, [{"type": "text", "text": "It starts in src/app.py."}], sub),
    ]
    write(root / f"{SID}.jsonl", main)
    write(root / SID / "subagents" / f"agent-{sub}.jsonl", agent)
    archive = Archive(tmp_path / "home", embedder="none")
    archive.ingest(root, embed=False)
    return archive


def test_a_subagents_turn_read_by_its_printed_reference_shows_its_calls_and_the_bare_one_the_mains(
    tmp_path: Path,
) -> None:
    archive = archive_of_a_session_with_a_subagent(tmp_path)
    ws = archive.workspaces()[0]
    rows = archive.turns(ws.id).select("agent", "turn", "tool_calls").collect()
    refined = {(a, t): len(calls) for a, t, calls in rows.iter_rows()}
    assert refined == {("main", 0): 0, ("agent-a7c8fd3", 0): 2}

    (sub,) = archive.load_turn_context([f"{SID[:8]}:0 [agent-a7c8fd3]"], ws).turns
    assert (sub.agent, sub.user_text, sub.assistant_text) == (
        "agent-a7c8fd3",
        "Find where the app starts.",
        "It starts in src/app.py.",
    )
    assert [(c.name, c.arguments, c.calls) for c in sub.tool_calls or []] == [
        ("Read", "file_path=src/app.py", 1),
        ("Bash", "command=pytest -q", 1),
    ]

    (main,) = archive.load_turn_context([f"{SID[:8]}:0"], ws).turns
    assert (main.agent, main.user_text, main.assistant_text, main.tool_calls) == (
        "main",
        "say hello",
        "Hello.",
        [],
    )


def test_the_path_query_bench_reads_a_subagents_hit_as_that_subagents_turn(
    tmp_path: Path,
) -> None:
    archive = archive_of_a_session_with_a_subagent(tmp_path)
    ws = archive.workspaces()[0].id
    assert path_queries.holds(archive, ws, SID, "agent-a7c8fd3", 0, "src/app.py") is True
    assert path_queries.holds(archive, ws, SID, "main", 0, "src/app.py") is False
