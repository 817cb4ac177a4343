"""Where a theme stands now (`Timeline.now` and the **Now** block): its latest substantive turns,
newest first, each with its date, ref and a quote; never a follow-up, a status table, an
interruption, an API error or a member tagging was unsure of."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from archive_mcp.themes.store import Member, Theme
from archive_mcp.themes.trace.model import Standing
from archive_mcp.themes.trace.output import NowTurn
from archive_mcp.themes.trace.rules import TRACE_RULES
from archive_mcp.themes.trace.standing import line, quote, short_line, standing, substantive
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


def test_follow_ups_tables_and_commands_are_not_substantive() -> None:
    for text in ("yes, please proceed", "Perfect, thanks!", "ok go ahead", "works great"):
        assert not substantive({"user_text": text, "kinds": []}), text
    assert not substantive({"user_text": "| a | b |\n|---|---|\n| 1 | 2 |", "kinds": []})
    assert not substantive({"user_text": "/context", "kinds": []})
    assert substantive({"user_text": "Option 2 please - build the full manifest", "kinds": []})
    assert substantive({"user_text": "yes, but use SQLite for the cache", "kinds": []})


def test_now_names_the_latest_three_substantive_turns_newest_first() -> None:
    rows = _rows(
        [
            "use redis for sessions",
            "switch sessions to sqlite",
            "add an expiry to the session rows",
            "yes, proceed",
            "log the session store's misses",
            "thanks!",
        ]
    )
    now = standing(rows)
    assert now == [
        Standing("s", 4, "2026-03-01T04:00:00+00:00", "log the session store's misses", "done."),
        Standing("s", 2, "2026-03-01T02:00:00+00:00", "add an expiry to the session rows", "done."),
        Standing("s", 1, "2026-03-01T01:00:00+00:00", "switch sessions to sqlite", "done."),
    ]
    assert line(now) == (
        "latest substantive turns, newest first: "
        "2026-03-01 (s:4): log the session store's misses → done.; "
        "2026-03-01 (s:2): add an expiry to the session rows → done.; "
        "2026-03-01 (s:1): switch sessions to sqlite → done."
    )
    assert short_line(now) == "latest substantive turns, newest first (in `now`)"
    assert [s.ref for s in standing(rows, most=1)] == ["s:4"]


def test_a_quote_gives_the_asking_half_and_a_narrow_one_only_the_outcome() -> None:
    asked = "rename the settings panel heading to Preferences and the tab label too"
    s = Standing("s", 0, None, asked, "Renamed both.")
    assert quote(s) == f"{asked} → Renamed both."
    assert quote(s, 100) == "rename the settings panel heading to Preferences… → Renamed both."
    assert quote(s, 99) == "Renamed both."
    assert quote(Standing("s", 0, None, "profile the webpack step", ""), 40) == (
        "profile the webpack step"
    )


def test_an_interruption_and_an_api_error_are_never_named_in_now() -> None:
    rows = _rows(
        [
            "use redis for sessions",
            "switch sessions to sqlite",
            "[Request interrupted by user for tool use]",
            "add an expiry to the session rows",
            "retry the session migration",
        ]
    )
    rows[4]["kinds"] = ["api_error"]  # the refiner saw the answer was an API error
    answers = ["", "", "", "", "API Error: 500 Internal server error"]
    assert [s.ref for s in standing(rows, answers)] == ["s:3", "s:1", "s:0"]
    rows[4]["kinds"] = []  # recognised from the answer's text too
    assert [s.ref for s in standing(rows, answers)] == ["s:3", "s:1", "s:0"]


def test_a_theme_of_follow_ups_and_noise_names_no_turn() -> None:
    rows = _rows(["thanks", "/context", "ok go ahead"])
    assert standing(rows) == []
    assert line([]) == "no substantive turn in this theme (only follow-ups, approvals or noise)"
    assert short_line([]) == line([])
    assert standing([]) == []


def test_the_timeline_carries_now_in_its_structure_and_its_now_block() -> None:
    texts = [
        "let's poll the price feed every 5 s",
        "stop polling, switch to the websocket",
        "API error",
        "[Request interrupted by user]",
        "yes",
    ]
    n = len(texts)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "session_id": ["s"] * n,
            "agent": ["main"] * n,
            "turn": list(range(n)),
            "started_at": [start + timedelta(hours=i) for i in range(n)],
            "summary": [f"Asked: {t} Outcome: done." for t in texts],
            "kinds": [[], [], ["api_error"], ["interrupted"], []],
            "files": [["feed.ts"]] * n,
            "keywords": [t.split()[:3] for t in texts],
            "status": ["ok"] * n,
            "user_text": texts,
            "assistant_text": ["Polling.", "Websocket.", "API Error: 500", "", "Done."],
            "source": ["kimi"] * n,
        }
    ).lazy()
    theme = Theme(
        "feed", "feed", members=[Member("s", "main", i, "reference", "t", "") for i in range(n)]
    )
    tl = build_timeline(theme, "ws", frame)
    assert [s.ref for s in tl.now] == ["s:1", "s:0"]
    assert tl.current_state == (
        "latest substantive turns, newest first: "
        "2026-01-01 (s:1): stop polling, switch to the websocket → done.; "
        "2026-01-01 (s:0): let's poll the price feed every 5 s → done."
    )
    data = tl.budgeted()
    assert data.current_state == "latest substantive turns, newest first (in `now`)"
    assert data.now == [
        NowTurn(
            "s:1", "2026-01-01T01:00:00+00:00", "stop polling, switch to the websocket → done."
        ),
        NowTurn("s:0", "2026-01-01T00:00:00+00:00", "let's poll the price feed every 5 s → done."),
    ]
    md = tl.markdown()
    assert (
        "**Now** (latest substantive turns, newest first):\n"
        '- s:1 (2026-01-01): "stop polling, switch to the websocket → done."\n'
        '- s:0 (2026-01-01): "let\'s poll the price feed every 5 s → done."\n'
    ) in md


def test_a_member_the_score_was_unsure_of_is_never_named_in_now() -> None:
    """The last turn asks something of its own, but tagging's score gave it under `now_min` (a turn
    of another topic at the theme's tail): Now leaves it out, as if it were not there."""
    rows = _rows(["use redis for sessions", "rewrite the release notes for v2"])
    rows[0]["probability"] = 0.9
    rows[1]["probability"] = TRACE_RULES.now_min - 0.01
    assert [s.ref for s in standing(rows)] == ["s:0"]
    rows[1]["probability"] = TRACE_RULES.now_min
    assert [s.ref for s in standing(rows)] == ["s:1", "s:0"]
    del rows[1]["probability"]  # tagged by hand or by the rules: no probability, no doubt
    assert [s.ref for s in standing(rows)] == ["s:1", "s:0"]
