"""Pairing a change with the course it undoes: the most recent course of the conversation first,
courses only (not questions, bug fixes or checks), reversals back to a course someone set, and a
new course by the user revising the one just before it only when the two share a term."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from archive_mcp.themes.trace.decisions import Flag, courses_before, flag_turn, pair_changes
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules


def _row(
    turn: int,
    user: str,
    did: str = "",
    session: str = "s",
    kinds: list[str] | None = None,
    files: list[str] | None = None,
) -> dict[str, Any]:
    summary = f"Asked: {user} Did: {did}" if did else f"Asked: {user}"
    return {
        "session_id": session,
        "turn": turn,
        "user_text": user,
        "summary": summary,
        "keywords": [],
        "kinds": kinds or [],
        "files": files or [],
    }


# the recency rule on its own: a correction may undo the last course of its conversation with no
# word in common (tests/test_theme_claims.py has `change_near` on)
NEAR_OFF = replace(TRACE_RULES, change_near=False)


def _pairs(
    rows: list[dict[str, Any]],
    flags: list[Flag | None] | None = None,
    rules: TraceRules = TRACE_RULES,
) -> list[tuple[int, int]]:
    flags = (
        flags if flags is not None else [flag_turn(r["user_text"], "", r["kinds"]) for r in rows]
    )
    return [(i, j) for i, j, *_ in pair_changes(rows, flags, rules=rules)]


def test_a_change_undoes_the_latest_course_of_its_conversation_over_an_older_slightly_more_alike_one() -> (
    None
):
    rows = [
        _row(0, "use a green glow on the signal rows of the screener", "edited widget.tsx"),
        _row(
            1, "all of the above", "edited widget.tsx"
        ),  # answers the assistant's options: a course
        _row(2, "no, that's wrong: the rows are far too bright"),
    ]
    # "all of the above" carried no cue, but a change undid it: it is a step of the same thread
    # and changed the course before it in turn
    assert _pairs(rows, rules=NEAR_OFF) == [(2, 1), (1, 0)]


def test_a_change_that_opens_its_conversation_undoes_the_latest_course_of_the_theme_it_shares_words_with() -> (
    None
):
    rows = [
        _row(0, "make the pnl box larger in the header", "edited header.tsx"),
        _row(1, "rename the settings panel heading", "edited settings.tsx", session="t"),
        _row(2, "move the pnl box into the performance section", "edited stats.tsx", session="u"),
    ]
    found = [
        (i, j, v)
        for i, j, v, *_ in pair_changes(rows, [flag_turn(r["user_text"], "", []) for r in rows])
    ]
    # turn 2 is conversation u's first course: the theme's courses count, the latest (1) at OPEN in
    # full, the one before at OPEN / 2; the pnl box course wins on its words (cosine 0.289 + 0.1)
    assert found == [(2, 0, 0.389)]
    # the latest course of the theme, with no word in common, is not undone
    assert _pairs([rows[1], {**rows[2], "turn": 1}]) == []
    # once the conversation set a course of its own, other conversations' courses earn no recency:
    # its own last course (0.4) outranks the alike one (0.289), and shares nothing, so nothing is undone
    own = [
        rows[0],
        _row(1, "rename the settings panel heading", "edited settings.tsx", session="u"),
        rows[2],
    ]
    assert _pairs(own) == []


def test_questions_checks_and_bug_fixes_set_no_course() -> None:
    rows = [
        _row(0, "add a retry with backoff to the price fetch", "edited fetch.ts"),
        _row(1, "check if the CI checks pass", "committed 1a2b3c"),
        _row(2, "what does the retry log say?"),
        _row(3, "the page crashes on load", "edited page.tsx", kinds=["fix"]),
        _row(4, "wait, stop: the backoff makes the prices lag"),
    ]
    assert _pairs(rows) == [(4, 0)]


def test_a_reversal_goes_back_on_a_course_someone_set_or_on_the_last_course_of_its_conversation() -> (
    None
):
    rows = [
        _row(0, "cache the sessions in process", kinds=["decision"]),
        _row(
            1,
            "sessions differ between instances after the deploy",
            "edited cache.py",
            kinds=["fix"],
        ),
        _row(2, "go back to redis for the sessions"),
    ]
    flags = [flag_turn(r["user_text"], "", r["kinds"]) for r in rows]
    assert [f.kind if f else None for f in flags] == ["decision", None, "reversal"]
    assert _pairs(rows, flags, NEAR_OFF) == [(2, 0)]  # not the bug report and its fix
    # "it was working a second ago": what broke it is the last course of the conversation, cue or not
    rows = [
        _row(0, "show the chat name in blue", "edited App.tsx"),
        _row(1, "seems to work now", "edited App.tsx"),
        _row(2, "man it was working a second ago, now i have lines again"),
    ]
    flags = [flag_turn(r["user_text"], "", r["kinds"]) for r in rows]
    assert [f.kind if f else None for f in flags] == ["decision", None, "reversal"]
    assert _pairs(rows, flags, NEAR_OFF) == [(2, 1), (1, 0)]
    # an older course without a cue is still no course to go back on
    rows.insert(2, _row(2, "show the author name in white", "edited App.tsx"))
    rows[3] = {**rows[3], "turn": 3}
    assert (3, 1) not in _pairs(rows, rules=NEAR_OFF)


def test_a_new_course_revises_the_one_just_before_it_only_when_they_share_a_term() -> None:
    rows = [
        _row(0, "make the pnl box larger in the header", "edited header.tsx"),
        _row(
            1,
            "move it into the performance section next to the lifetime pnl figure",
            "edited stats.tsx",
        ),
    ]
    assert [
        (i, j, v)
        for i, j, v, *_ in pair_changes(rows, [flag_turn(r["user_text"], "", []) for r in rows])
    ] == [(1, 0, 0.505)]  # alike 0.105 (under the 0.2 an older course needs) + RECENT 0.4
    # opening another conversation: the theme's last course, at OPEN instead of RECENT
    assert [
        (i, j, v)
        for i, j, v, *_ in pair_changes(
            [rows[0], {**rows[1], "session_id": "t"}],
            [flag_turn(r["user_text"], "", []) for r in rows],
        )
    ] == [(1, 0, 0.305)]
    other = [rows[0], _row(1, "rename the settings panel heading", "edited settings.tsx")]
    assert _pairs(other) == []
    # no word in common, but the two touched the same file: the same subject
    same_file = [
        _row(
            0,
            "make the pnl box larger in the header",
            "edited header.tsx",
            files=["src/ui/header.tsx"],
        ),
        _row(
            1,
            "rename the settings panel heading",
            "edited header.tsx",
            files=["web/src/ui/header.tsx"],
        ),
    ]
    assert _pairs(same_file) == [(1, 0)]
    approval = [rows[0], _row(1, "yes")]  # accepting a course does not change it
    assert _pairs(approval) == []


def test_a_course_in_another_conversation_between_them_does_not_make_a_course_less_recent() -> None:
    # Conversations run side by side: the theme's rows interleave them in time order. Turn 0 is
    # still the last course of conversation s when conversation t sets one in between.
    rows = [
        _row(0, "make the pnl box larger in the header", "edited header.tsx"),
        _row(1, "rename the settings panel heading", "edited settings.tsx", session="t"),
        _row(
            2,
            "move it into the performance section next to the lifetime pnl figure",
            "edited stats.tsx",
        ),
    ]
    found = [
        (i, j, v)
        for i, j, v, *_ in pair_changes(rows, [flag_turn(r["user_text"], "", []) for r in rows])
    ]
    assert [(i, j) for i, j, _ in found] == [(2, 0)]
    assert found[0][2] >= 0.4  # RECENT in full: the most recent course of its conversation


def test_courses_before_counts_only_the_rows_own_conversation() -> None:
    codes = np.array([0, 1, 0, 1, 1, 0])
    course = np.array([True, True, False, True, False, True])
    assert courses_before(codes, course).tolist() == [0, 0, 1, 1, 2, 1]


def test_a_change_by_the_assistant_never_undoes_a_question() -> None:
    rows = [
        _row(0, "show the sol price next to the market conditions box", "edited widget.tsx"),
        _row(1, "what command can i use to monitor the logs of the backend"),
        _row(2, ""),
    ]
    flags: list[Flag | None] = [None, None, Flag("change", "assistant", "instead")]
    assert _pairs(rows, flags, NEAR_OFF) == [
        (2, 0)
    ]  # the course, not the question just before the change


def test_a_question_sets_no_course_but_a_proposal_or_a_request_may() -> None:
    assert flag_turn("what command can i use to monitor the logs", "", []) is None
    assert flag_turn("show me the summary of phase 24, we need it", "", []) is None
    assert flag_turn("how about we use redis for the sessions", "", []) is not None
    assert flag_turn("can you use redis for the sessions?", "", []) is not None
    assert flag_turn("use redis for the sessions", "", []) is not None


def test_a_pair_names_the_next_best_courses_as_alternatives_never_a_question_or_the_pair_itself() -> (
    None
):
    rows = [
        _row(0, "add a flash when a new signal arrives on the screener rows", "edited widget.tsx"),
        _row(1, "use a green glow on the signal rows", "edited widget.tsx"),
        _row(2, "what does the glow look like on dark mode?"),
        _row(3, "sort the screener by signal count", "edited table.tsx"),
        _row(4, "wait, the flash is far too slow"),
    ]
    pairs = {
        p.change: p
        for p in pair_changes(
            rows, [flag_turn(r["user_text"], "", r["kinds"]) for r in rows], rules=NEAR_OFF
        )
    }
    # the change revises the last course (3) on recency; the flash course (0), which an agent would
    # pick on meaning, and the glow (1) are named next, best first; the question (2) never is
    assert (pairs[4].undone, pairs[4].score, pairs[4].alternatives) == (3, 0.4, [0, 1])
    assert pairs[3].alternatives == [0]
    # a course with nothing before it to choose from has no alternatives
    assert pairs[1].alternatives == [] and pairs[1].undone == 0
