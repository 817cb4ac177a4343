"""A store's sessions filed with their sub-sessions (`stores.file_sessions`), as Crush and Cursor
file theirs: each sub-session a subagent file of its top session, at any depth, in the store's
order; one whose parents loop archived on its own and reported."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from archive_mcp.refiners.sources import Discovery, SessionSource
from archive_mcp.refiners.stores import file_sessions, store_session, top_session

DB = Path("/stores/agent/agent.db")
LOOP = "its parents never reach a top-level session (they loop); archived as a session of its own"


def _session(sid: str, row: dict[str, Any], export: Path) -> SessionSource:
    return store_session("agent", sid, "agent", row.get("dir"), row.get("title"), DB, export)


def test_sub_sessions_are_filed_under_their_top_session_at_any_depth_and_a_loop_stands_alone() -> (
    None
):
    rows = ["child", "top", "grandchild", "loop-a", "loop-b", "alone"]
    exports = [(sid, {"dir": "/p", "title": sid}, Path(f"/x/{sid}.jsonl")) for sid in rows]
    parent = {"child": "top", "grandchild": "child", "loop-a": "loop-b", "loop-b": "loop-a"}
    found = Discovery()
    file_sessions(exports, parent, _session, found, DB)
    assert [(s.session_id, [(f.agent, f.rel) for f in s.files]) for s in found.sessions] == [
        (
            "top",
            [
                ("main", "session.jsonl"),
                ("child", "subagents/child.jsonl"),
                ("grandchild", "subagents/grandchild.jsonl"),
            ],
        ),
        ("loop-a", [("main", "session.jsonl")]),
        ("loop-b", [("main", "session.jsonl")]),
        ("alone", [("main", "session.jsonl")]),
    ]
    assert found.skipped == [
        (str(DB), f"sub-session loop-a: {LOOP}"),
        (str(DB), f"sub-session loop-b: {LOOP}"),
    ]
    assert all(f.whole for s in found.sessions for f in s.files)


def test_top_session_climbs_to_the_first_top_and_says_none_for_a_loop_or_a_dead_end() -> None:
    parent = {"c": "b", "b": "a", "x": "y", "y": "x", "d": "gone"}
    assert [top_session(sid, parent, {"a"}) for sid in ("c", "b", "x", "d")] == [
        "a",
        "a",
        None,
        None,
    ]


def test_a_store_session_keeps_its_work_dir_and_title_only_when_they_are_text() -> None:
    make = partial(store_session, "agent", "s1", "bucket", db=DB, export=Path("/x/s1.jsonl"))
    kept, dropped = make("/p", "A title"), make("", 7)
    assert (kept.work_dirs, kept.title, kept.session_dir) == (["/p"], "A title", DB.parent)
    assert (dropped.work_dirs, dropped.title) == ([], None)
    assert [(f.agent, f.rel, f.whole) for f in kept.files] == [("main", "session.jsonl", True)]
