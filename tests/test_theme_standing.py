"""Where a theme stands now (`Timeline.now` and the **Now:** line): the latest course no later
change undid, never a follow-up or a status table; a theme whose work went on past its last course
ends open."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import polars as pl

from archive_mcp.themes.store import Member, Theme
from archive_mcp.themes.trace.model import Decision
from archive_mcp.themes.trace.rules import TRACE_RULES
from archive_mcp.themes.trace.standing import line, standing, substantive
from archive_mcp.themes.trace.timeline import build_timeline


def _rows(texts: list[str]) -> list[dict]:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    return [
        {
            "session_id": "s",
            "turn": i,
            "started_at": start + timedelta(hours=i),
            "user_text": t,
            "summary": f"Asked: {t} Outcome: done.",
            "kinds": [],
        }
        for i, t in enumerate(texts)
    ]


def _decision(turn: int, gist: str, undoes: str | None = None, cue: str = "let's use") -> Decision:
    return Decision(
        session_id="s",
        agent="main",
        source="kimi",
        turn=turn,
        ref=f"s:{turn}",
        at=f"2026-03-01T{turn:02d}:00:00+00:00",
        flag="change" if undoes else "decision",
        by="user",
        cue=cue,
        gist=gist,
        summary=f"Asked: {gist}",
        kinds=[],
        undoes=undoes,
    )


def test_follow_ups_tables_and_commands_are_not_substantive() -> None:
    for text in ("yes, please proceed", "Perfect, thanks!", "ok go ahead", "works great"):
        assert not substantive({"user_text": text, "kinds": []}), text
    assert not substantive({"user_text": "| a | b |\n|---|---|\n| 1 | 2 |", "kinds": []})
    assert not substantive({"user_text": "/context", "kinds": []})
    assert substantive({"user_text": "Option 2 please - build the full manifest", "kinds": []})
    assert substantive({"user_text": "yes, but use SQLite for the cache", "kinds": []})


def test_the_theme_stands_at_its_latest_course_that_no_change_undid() -> None:
    rows = _rows(["use redis for sessions", "switch sessions to sqlite", "yes, proceed", "thanks!"])
    decisions = [_decision(0, "use redis"), _decision(1, "switch to sqlite", undoes="s:0")]
    now = standing(rows, decisions)
    assert [(s.ref, s.state, s.gist) for s in now] == [("s:1", "decided", "switch to sqlite")]
    assert line(now) == "decided 2026-03-01 (s:1): switch to sqlite"


def test_an_approval_is_not_where_a_theme_stands() -> None:
    rows = _rows(["offer two options for the cache", "Option 2"])
    decisions = [_decision(0, "use an LRU cache"), _decision(1, "Option 2", cue="approval")]
    assert [s.ref for s in standing(rows, decisions)] == ["s:0"]


def test_work_past_the_last_course_leaves_the_theme_open() -> None:
    rows = _rows(
        [
            "let's use redis for sessions",
            "the session expiry is wrong after login",
            "check the logs of the session store",
            "sessions still drop after a deploy, look again",
            "ok",
        ]
    )
    now = standing(
        rows, [_decision(0, "use redis for sessions")], rules=replace(TRACE_RULES, open_after=2)
    )
    assert [(s.ref, s.state) for s in now] == [("s:3", "open"), ("s:0", "decided")]
    assert line(now) == (
        "open: last asked 2026-03-01 (s:3): sessions still drop after a deploy, look again; "
        "standing course 2026-03-01 (s:0): use redis for sessions"
    )
    assert [
        s.ref for s in standing(rows, [_decision(0, "x")], rules=replace(TRACE_RULES, open_after=3))
    ] == ["s:0"]


def test_a_theme_with_no_course_is_open_at_its_latest_substantive_turn() -> None:
    rows = _rows(["why is the build slow?", "profile the webpack step", "thanks"])
    assert [(s.ref, s.state) for s in standing(rows, [])] == [("s:1", "open")]
    assert standing([], []) == []


def test_the_timeline_carries_now_in_its_structure_and_its_now_line() -> None:
    texts = ["let's poll the price feed every 5 s", "stop polling, switch to the websocket", "yes"]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "session_id": ["s"] * 3,
            "agent": ["main"] * 3,
            "turn": [0, 1, 2],
            "started_at": [start + timedelta(hours=i) for i in range(3)],
            "summary": [f"Asked: {t} Outcome: done." for t in texts],
            "kinds": [[], [], []],
            "files": [["feed.ts"]] * 3,
            "keywords": [t.split()[:3] for t in texts],
            "status": ["ok"] * 3,
            "user_text": texts,
            "assistant_text": ["Polling.", "The feed now comes from the websocket.", "Done."],
            "source": ["kimi"] * 3,
        }
    ).lazy()
    theme = Theme(
        "feed", "feed", members=[Member("s", "main", i, "reference", "t", "") for i in range(3)]
    )
    tl = build_timeline(theme, "ws", frame)
    assert [(s.ref, s.state) for s in tl.now] == [("s:1", "decided")]
    assert tl.current_state.startswith("decided 2026-01-01 (s:1): ")
    assert tl.budgeted()["now"] == [
        {"ref": "s:1", "at": s.at, "state": "decided", "gist": s.gist} for s in tl.now
    ]
    assert "**Now:** decided 2026-01-01 (s:1)" in tl.markdown()


def test_a_member_the_score_was_unsure_of_is_never_where_the_theme_stands() -> None:
    """The last turn asks something of its own, but tagging's score gave it under `now_min` (a turn
    of another topic at the theme's tail): Now is the course before it, as if it were not there."""
    rows = _rows(["use redis for sessions", "rewrite the release notes for v2"])
    rows[0]["probability"] = 0.9
    rows[1]["probability"] = TRACE_RULES.now_min - 0.01
    now = standing(rows, [_decision(0, "use redis")])
    assert [(s.ref, s.state) for s in now] == [("s:0", "decided")]
    rows[1]["probability"] = TRACE_RULES.now_min
    assert [(s.ref, s.state) for s in standing(rows, [_decision(0, "use redis")])] == [
        ("s:1", "open"),
        ("s:0", "decided"),
    ]
    del rows[1]["probability"]  # tagged by hand or by the rules: no probability, no doubt
    assert standing(rows, [_decision(0, "use redis")])[0].ref == "s:1"
