"""Claude Code's task notifications, read one way everywhere: the request text, the kinds, the
themes' noise rule and the overview agree on the same messages, on archives refined before the
refiner marked notification turns `continuation` and after."""

from __future__ import annotations

import time
from datetime import datetime

import numpy as np
import polars as pl
import pytest
from archive_mcp.refiners.kinds import keyword_words, kinds_of, notified_only
from archive_mcp.refiners.model import Step, ToolCall, Turn
from archive_mcp.refiners.notification import Notified, split
from archive_mcp.refiners.refine import RefineContext, refine_turn
from archive_mcp.refiners.summary import user_request

from archive_mcp.mcp.overview import Prompt, prompts
from archive_mcp.search.ranking import NOISE_SHARE, noise_weights
from archive_mcp.themes.noise import noise_kind

BUILD = (
    "<task-notification>\n<task-id>a1f</task-id>\n<output-file>tasks/a1f.output</output-file>\n"
    "<status>completed</status>\n<summary>Build finished</summary>\n</task-notification>\n"
    "Read the output file to retrieve the result: tasks/a1f.output"
)
TESTS = (
    "<task-notification>\n<task-id>b2e</task-id>\n<status>completed</status>\n"
    '<summary>Agent "run the tests" completed</summary>\n<result>All 35 tests pass.</result>\n'
    "</task-notification>\nFull transcript available at: tasks/b2e.output"
)
QUOTING = (
    "<task-notification>\n<task-id>c3d</task-id>\n<status>completed</status>\n"
    '<summary>Agent "tidy" completed</summary>\n<result>overview.py now drops a prompt up to '
    "</task-notification> and the line after it.</result>\n</task-notification>"
)
MID = "Hide turns that are only a <task-notification> and say so once."
UNCLOSED = "<task-notification> turns are noise in the overview: hide them"

# id, message, (summaries, words after), user_request, noise_kind (text rule), kinds, overview line
CASES = [
    ("alone", BUILD, (("Build finished",), ""), "(task notification: Build finished)",
     "continuation", ["continuation"], None),
    ("two", f"{BUILD}\n{TESTS}", (("Build finished", 'Agent "run the tests" completed'), ""),
     '(task notification: Build finished; Agent "run the tests" completed)',
     "continuation", ["continuation"], None),
    ("and-continue", f"{BUILD}\ncontinue", (("Build finished",), "continue"),
     "(task notification: Build finished) continue", "continuation", ["continuation"], None),
    ("and-words", f"{BUILD}\nNow keep the delay at 2 s", (("Build finished",),
     "Now keep the delay at 2 s"), "(task notification: Build finished) Now keep the delay at 2 s",
     None, [], "Now keep the delay at 2 s"),
    ("tag-mid-message", MID, ((), MID), "Hide turns that are only a   and say so once.", None, [],
     MID),
    ("tag-never-closed", UNCLOSED, ((), UNCLOSED), "turns are noise in the overview: hide them",
     None, [], UNCLOSED),
    ("result-quotes-the-closing-tag", QUOTING, (('Agent "tidy" completed',), ""),
     '(task notification: Agent "tidy" completed)', "continuation", ["continuation"], None),
]  # fmt: skip
IDS = [c[0] for c in CASES]
AT = "2026-03-20T10:00:00"


@pytest.mark.parametrize(
    ("name", "text", "parts", "asked", "noise", "kinds", "line"), CASES, ids=IDS
)
def test_every_reader_of_a_user_message_reads_a_task_notification_the_same_way(
    name: str,
    text: str,
    parts: tuple[tuple[str, ...], str],
    asked: str,
    noise: str | None,
    kinds: list[str],
    line: str | None,
) -> None:
    assert split(text) == Notified(*parts)
    assert notified_only(text) is (noise == "continuation")
    assert user_request(text) == asked
    # themes on an archive refined before the kinds said it: the text rule
    assert noise_kind(text, "Done.", (), worked=False) == noise
    assert kinds_of(Turn(0, None, user_text=text), "Done.", []) == kinds
    # the overview, on the refiner's kinds and on an archive refined before (no kinds)
    for stored in (kinds, []):
        listed, left = prompts(_frame([text], [stored]), ["s1"])
        assert (listed, left) == (({"s1": [Prompt(0, AT, line)]}, 0) if line else ({}, 1))


def test_a_turn_of_only_notifications_is_work_not_a_continuation_when_the_agent_called_tools() -> (
    None
):
    turn = Turn(0, None, user_text=f"{BUILD}\n{TESTS}")
    read = ToolCall("c1", "Read", '{"file_path": "tasks/a1f.output"}')
    read.finish(False, "", "build ok", None)
    turn.steps = [Step(0, text="The build log is clean.", tool_calls=[read])]
    assert kinds_of(turn, "The build log is clean.", [read]) == ["explore"]


def test_a_task_summary_gives_no_work_kind_the_user_did_not_ask_for() -> None:
    failed = BUILD.replace("Build finished", 'Background command "Restart dev with TSL fix" failed')
    assert user_request(failed) == (
        '(task notification: Background command "Restart dev with TSL fix" failed)'
    )
    assert kinds_of(Turn(0, None, user_text=failed), "It was killed.", []) == ["continuation"]
    asked = f"{failed}\nFix the plan for the dev server"
    assert kinds_of(Turn(0, None, user_text=asked), "Fixed.", []) == ["fix", "plan"]


def test_a_notification_whose_result_runs_past_the_request_head_is_still_read_whole() -> None:
    long = BUILD.replace(
        "</task-notification>", f"<result>{'x' * 5000}</result></task-notification>"
    )
    assert user_request(f"{long}\nship it") == "(task notification: Build finished) ship it"


def test_a_notification_never_closed_whose_result_quotes_the_closing_tag_is_the_users_words() -> (
    None
):
    text = QUOTING[: QUOTING.rindex("</task-notification>")]
    assert split(text) == Notified((), text.strip())
    assert not notified_only(text)


def test_the_request_labels_of_notifications_are_not_keywords() -> None:
    plain = BUILD.replace("<summary>Build finished</summary>\n", "")
    assert user_request(plain) == "(task notification)"
    assert keyword_words(user_request(plain)) == []
    assert keyword_words(user_request(f"{BUILD}\n{TESTS}")) == [
        "Build", "finished", "Agent", "run", "the", "tests", "completed",
    ]  # fmt: skip


def test_search_weighs_a_refined_notification_turn_as_noise_and_the_users_words_after_one_not() -> (
    None
):
    ctx = RefineContext("w", "bench", "s", "main", "raw")
    rows = [
        refine_turn(Turn(0, None, user_text=text, steps=[Step(0, text="Done.")]), ctx)
        for text in (BUILD, f"{BUILD}\ncontinue", f"{BUILD}\nNow keep the delay at 2 s")
    ]
    assert [r["kinds"] for r in rows] == [["continuation"], ["continuation"], []]
    weights = noise_weights(pl.DataFrame({"kinds": [r["kinds"] for r in rows]}))
    assert weights.tolist() == [NOISE_SHARE, NOISE_SHARE, 1.0]
    assert weights.dtype == np.float32


def _frame(texts: list[str], kinds: list[list[str]]) -> pl.LazyFrame:
    """A refined frame's columns the overview reads, one main-agent turn a text, in session s1."""
    return pl.LazyFrame(
        {
            "session_id": ["s1"] * len(texts),
            "agent": ["main"] * len(texts),
            "turn": list(range(len(texts))),
            "started_at": [datetime.fromisoformat(AT)] * len(texts),
            "user_text": texts,
            "kinds": kinds,
        },
        schema_overrides={"kinds": pl.List(pl.String)},
    )


def test_themes_count_a_notification_turn_as_noise_only_when_the_agent_did_no_work() -> None:
    # kinds as refined before this rule ([]) and after it (`continuation`): the same verdict
    for kinds in ([], ["continuation"]):
        assert noise_kind(f"{BUILD}\ncontinue", "Done.", kinds, worked=False) == "continuation"
    for kinds in ([], ["continuation", "explore"]):
        assert noise_kind(BUILD, "The build log is clean.", kinds, worked=True) is None
    # a bare "continue" the user typed keeps its rule: its kind says continuation, work or not
    assert noise_kind("continue", "Going on.", ["continuation", "explore"], worked=True) == (
        "continuation"
    )


def test_a_long_message_that_opens_a_notification_and_never_closes_it_is_read_in_one_pass() -> None:
    # 3,000 closed results and no closing tag: a pattern that backtracks into them never returns
    text = "<task-notification>" + "<result>a</result>" * 3000 + "\nthanks"
    assert split(text) == Notified((), text)
    assert not notified_only(text)


_T, _C = "<task-notification>", "</task-notification>"
_READ = "\nRead the output file to retrieve the result: "
# 100k characters each; each shape took 40-65 s (loaded box) with `<summary>(.*?)</summary>`
# searched over the notification with its results cut by `<result>.*?</result>`
HOSTILE = [
    ("unclosed-summaries", _T + "<summary>" * 11_000 + _C + " go", (("",), "go")),
    ("results-then-unclosed-summaries",
     _T + "<result>x</result>" * 1_000 + "<summary>" * 9_000 + _C + " go", (("",), "go")),
    ("trailer-of-unclosed-tags", _T + _C + _READ + "<result><summary>" * 6_000, (("",), "")),
    ("summary-closed-inside-a-result",
     _T + "<summary>a<result></summary>" + "<summary>" * 11_000 + "</result>b</summary>" + _C,
     (("ab",), "")),
]  # fmt: skip


@pytest.mark.parametrize(("text", "parts"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_a_notification_s_summary_is_found_in_one_pass_whatever_tags_it_holds(
    text: str, parts: tuple[tuple[str, ...], str]
) -> None:
    start = time.perf_counter()
    assert split(text) == Notified(*parts)
    assert time.perf_counter() - start < 0.5
