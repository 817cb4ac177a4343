"""Which flagged turns may claim a change of course: an approval or follow-up accepts what was
offered and claims none (`claim_accept`), a turn the walk attached claims none (`claim_from`), and
a correction alters the last course of its conversation only when it shares words or a file with
it (`change_near`); a turn that claims none stays a flagged decision a later change can undo."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from archive_mcp.themes.store import Member, Theme
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules
from archive_mcp.themes.trace.timeline import build_timeline

# The claims are off by default (`TraceRules.claim_changes`); these tests measure their rules.
CLAIMING = replace(TRACE_RULES, claim_changes=True)


def _trace(
    turns: list[tuple[str, str, str]],
    files: list[str] | None = None,
    rules: TraceRules = CLAIMING,
) -> dict[str, tuple[str, str | None]]:
    """Trace one conversation of (user, answer, provenance) turns, each touching its file of
    `files` (default: one file for all), by `rules`; ref -> (flag, what it undoes)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    n = len(turns)
    theme = Theme(
        "t",
        "t",
        members=[Member("s", "main", i, p, "test", "", None) for i, (*_, p) in enumerate(turns)],
    )
    frame = pl.DataFrame(
        {
            "session_id": ["s"] * n,
            "agent": ["main"] * n,
            "turn": list(range(n)),
            "started_at": [start + timedelta(hours=i) for i in range(n)],
            "summary": [f"Asked: {u} Outcome: {a}" for u, a, _ in turns],
            "kinds": [[] for _ in turns],
            "files": [[f] for f in files or ["src/cache.py"] * n],
            "keywords": [u.split()[:3] for u, _, _ in turns],
            "status": ["ok"] * n,
            "user_text": [u for u, _, _ in turns],
            "assistant_text": [a for _, a, _ in turns],
            "source": ["kimi"] * n,
        }
    ).lazy()
    tl = build_timeline(theme, "ws", frame, rules=rules)
    return {d.ref: (d.flag, d.undoes) for d in tl.decisions}


AGREED = [
    (
        "let's poll the price feed every 5 seconds from the REST endpoint",
        "Polling the REST price feed every 5 s. Shall I add a retry to the poller?",
        "seed:price feed",
    ),
    ("yes, proceed", "Added a retry to the REST price feed poller.", "seed:price feed"),
    ("ok", "The REST price feed poller retries 3 times now.", "seed:price feed"),
]


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        (True, {"s:0": ("decision", None), "s:1": ("change", "s:0"), "s:2": ("change", "s:1")}),
        (False, {"s:0": ("decision", None), "s:1": ("decision", None), "s:2": ("decision", None)}),
    ],
)
def test_a_follow_up_that_only_agrees_claims_no_change_of_course(
    accept: bool, want: dict[str, tuple[str, str | None]]
) -> None:
    assert _trace(AGREED, rules=replace(CLAIMING, claim_accept=accept)) == want


CACHE = ("use redis for the session cache", "Redis holds the sessions.", "seed:session cache")
SWITCH = (
    "wait, the redis session cache is too slow, switch to memcached",
    "Switched to memcached.",
)


@pytest.mark.parametrize(
    ("claim_from", "attached", "want"),
    [
        ("any", "walk:session cache", ("change", "s:0")),
        ("no-walk", "walk:session cache", ("decision", None)),
        ("no-walk", "neighbour:session cache", ("change", "s:0")),
        ("no-walk", "seed:session cache", ("change", "s:0")),
        ("strong", "neighbour:session cache", ("decision", None)),
        ("strong", "reference", ("change", "s:0")),
    ],
)
def test_a_turn_the_walk_attached_claims_no_change_of_course(
    claim_from: str, attached: str, want: tuple[str, str | None]
) -> None:
    flags = _trace([CACHE, (*SWITCH, attached)], rules=replace(CLAIMING, claim_from=claim_from))
    assert flags == {"s:0": ("decision", None), "s:1": want}


ELSEWHERE = (
    "don't touch the login page styles",
    "Left the stylesheet alone.",
    "seed:session cache",
)


@pytest.mark.parametrize(
    ("near", "files", "want"),
    [
        (False, ["src/cache.py", "src/login.css"], ("change", "s:0")),
        (True, ["src/cache.py", "src/login.css"], ("decision", None)),
        (True, ["src/cache.py", "src/cache.py"], ("change", "s:0")),  # the same file: about it
    ],
)
def test_a_correction_alters_the_last_course_only_when_it_is_about_it(
    near: bool, files: list[str], want: tuple[str, str | None]
) -> None:
    rules = replace(CLAIMING, change_near=near)
    assert _trace([CACHE, ELSEWHERE], files, rules) == {"s:0": ("decision", None), "s:1": want}


ASKED = (
    "so we don't restart the redis session cache after a deploy?",
    "Right: it survives deploys.",
    "seed:session cache",
)


@pytest.mark.parametrize(
    ("question", "want"), [(True, ("change", "s:0")), (False, ("decision", None))]
)
def test_a_question_with_a_change_word_claims_no_change_of_course(
    question: bool, want: tuple[str, str | None]
) -> None:
    rules = replace(CLAIMING, claim_question=question)
    assert _trace([CACHE, ASKED], rules=rules) == {"s:0": ("decision", None), "s:1": want}
