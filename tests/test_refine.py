"""Refinement on realistic turns: the ask's request clause, the outcome that states a result,
abbreviation-aware sentences, kinds (work and noise) and keywords; `refine` redoes the sessions an
older refiner wrote."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from archive_mcp.refiners import RefineContext, Step, ToolCall, Turn, refine_turn
from archive_mcp.refiners.actions import describe_actions
from archive_mcp.refiners.kinds import Cue, keywords_of
from archive_mcp.refiners.refine import REFINER
from archive_mcp.refiners.summary import (
    SUMMARY_MAX,
    ExtractiveSummarizer,
    compose,
    outcome,
    pack,
    strip_reply_ack,
)
from archive_mcp.refiners.text import Folded, dense, sentences, shorten
from click.testing import CliRunner

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.ingest import store
from archive_mcp.ingest.store import carry_over

CTX = RefineContext("w", "claude-code", "s1", "main", "raw/s1.jsonl")


def call(name: str, result: str = "ok", is_error: bool = False, **args: object) -> ToolCall:
    return ToolCall(
        id=name,
        name=name,
        arguments=json.dumps(args),
        result={"is_error": is_error, "message": "", "output": result},
    )


def turn(
    user: str,
    *texts: str,
    calls: list[ToolCall] | None = None,
    origin: str = "user",
    reason: str | None = "completed",
) -> Turn:
    steps = [Step(n=1, text="", tool_calls=calls)] if calls else []
    steps += [Step(n=len(steps) + i + 1, text=t) for i, t in enumerate(texts)]
    return Turn(
        index=0,
        started_at=None,
        user_text=user,
        steps=steps,
        origin=origin,
        reason=reason,
        end="ended",
    )


def summary(t: Turn) -> str:
    return ExtractiveSummarizer().summarize(t)


def test_sentences_respect_initials_and_abbreviations_in_any_script() -> None:
    assert sentences("Письмо подписал Г. Нехризов. Ответа нет.") == [
        "Письмо подписал Г. Нехризов.",
        "Ответа нет.",
    ]
    assert sentences("Ask J. R. Smith, e.g. by mail. Then wait! Done?") == [
        "Ask J. R. Smith, e.g. by mail.",
        "Then wait!",
        "Done?",
    ]
    assert sentences("修好了。测试通过！") == ["修好了。", "测试通过！"]
    assert sentences("Edit config.py. then run it") == ["Edit config.py. then run it"]
    assert sentences("Edited retry_test.py. The U.S. office, i.e. Bob, ran it.") == [
        "Edited retry_test.py.",
        "The U.S. office, i.e. Bob, ran it.",
    ]


def test_the_ask_skips_acknowledgements_and_keeps_the_request() -> None:
    t = turn("Great!! Thanks a lot. Can you compose a /compact message please?", "Here it is.")
    assert summary(t).startswith("Asked: Can you compose a /compact message please? Outcome:")
    assert (
        summary(turn("yes", "Done. Committed `4ce79a1`."))
        == "Asked: yes Outcome: Committed 4ce79a1."
    )


def test_the_outcome_skips_filler_and_takes_the_content_after_a_lead_in() -> None:
    answer = (
        "Now I have a comprehensive view. Let me summarise.\n\n"
        "Here's a summary of findings for your review:\n\n"
        "- The retry loop in `charge_card` double-charges on timeouts\n"
        "- PSP calls have no idempotency key\n\n"
        "Would you like me to fix it?"
    )
    s = summary(turn("review the payment retries", answer))
    assert s == (
        "Asked: review the payment retries Outcome: The retry loop in charge_card double-charges on "
        "timeouts; PSP calls have no idempotency key"
    )


def test_a_lead_in_that_states_a_fact_is_said_without_its_colon_one_that_announces_is_dropped() -> (
    None
):
    answer = (
        "The Performance stats bar now always shows 5 columns:\n\n- Trades, Win Rate, Unrealized"
    )
    assert summary(turn("always show unrealised", answer)) == (
        "Asked: always show unrealised Outcome: The Performance stats bar now always shows 5 columns; "
        "Trades, Win Rate, Unrealized"
    )
    answer = "Root cause found:\n\n- The cache key ignored the locale\n\nChanges include:\n\n- Keyed it by locale"
    assert summary(turn("fix it", answer)) == (
        "Asked: fix it Outcome: The cache key ignored the locale; Keyed it by locale"
    )


EXPORTERS = turn(
    "add the exporters",
    "Implemented the CSV exporter and wired it into the CLI run command. "
    "The JSON exporter now streams rows instead of building one list in memory. "
    "Renamed export_all to export_rows across the package and updated the docs. "
    "I committed after each exporter and verified with tests (35 passing). "
    "The Parquet exporter is left for later because pyarrow is not installed on the build box.",
)


def test_a_test_count_is_kept_over_a_longer_statement() -> None:
    assert outcome(EXPORTERS, 230) == (
        "Implemented the CSV exporter and wired it into the CLI run command. Renamed export_all to export_rows "
        "across the package and updated the docs. I committed after each exporter and verified with tests (35 passing)."
    )


def test_the_packer_prefers_what_the_answer_keeps_coming_back_to() -> None:
    """A word weighs the number of units that say it: the unit naming `processOHLCV`, which three
    other units repeat, beats an equally dense one whose names are said once."""
    units = [
        "Renamed log_util to log_kit, dropped colour_map",
        "Added processOHLCV for the candle based rule path",
        "The engine now calls processOHLCV whenever a rule asks for candles",
        "Every OHLCV update from the feed goes through processOHLCV first",
        "Rules without requiresOHLCV never reach processOHLCV in the engine",
    ]
    candidates = [(1.0, i, u) for i, u in enumerate(units)]
    assert pack(candidates, 60, set()) == "Added processOHLCV for the candle based rule path"
    assert (
        pack(candidates, 60, {"processohlcv"}) == "Renamed log_util to log_kit, dropped colour_map"
    )


def test_short_labels_and_acknowledgement_fragments_are_dropped_from_units() -> None:
    assert summary(turn("review", "Good point. The cache key ignored the locale.")) == (
        "Asked: review Outcome: The cache key ignored the locale."
    )
    answer = "Task 2: Created setupLinearMessageListener() with issue ID extraction\n\nError: Cannot find module foo"
    assert summary(turn("go", answer)) == (
        "Asked: go Outcome: Created setupLinearMessageListener() with issue ID extraction; Error: Cannot find module foo"
    )
    assert summary(turn("go", "CAPTURE: two words")) == "Asked: go Outcome: CAPTURE: two words"


def test_a_cjk_statement_after_an_acknowledgement_is_kept() -> None:
    # CJK has no spaces: "one word" after the acknowledgement is a whole sentence, not a fragment
    assert summary(turn("检查一下", "好的，缓存键忽略了语言环境。现在测试全部通过了。")) == (
        "Asked: 检查一下 Outcome: 缓存键忽略了语言环境。 现在测试全部通过了。"
    )


def test_a_label_that_says_what_was_done_stays() -> None:
    assert summary(turn("go", "Removed: the legacy v1 endpoint and its tests")) == (
        "Asked: go Outcome: Removed: the legacy v1 endpoint and its tests"
    )
    assert summary(turn("go", "Fixed: null check in the parser loop")) == (
        "Asked: go Outcome: Fixed: null check in the parser loop"
    )
    assert summary(turn("go", "Task 2: Created the listener with issue ID extraction")) == (
        "Asked: go Outcome: Created the listener with issue ID extraction"
    )


def test_units_are_said_densely_without_self_talk_hedges_or_long_path_heads() -> None:
    assert dense("I've successfully fixed /home/u/proj/src/api/server.ts") == "Fixed api/server.ts"
    assert dense("docs/overview.md is basically done; see https://example.com/a/b/c/d") == (
        "docs/overview.md is done; see https://example.com/a/b/c/d"
    )
    assert (
        dense(r"Script: C:\Users\u\tools\rebase.ps1 (Phase complete)")
        == r"Script: tools\rebase.ps1 (Phase complete)"
    )
    # a URL is kept whole (a hyphen in it used to start a "path": https://my-c/d)
    assert dense("see https://my-host.com/a/b/c/d and https://example.com/some-dir/a/b/c") == (
        "see https://my-host.com/a/b/c/d and https://example.com/some-dir/a/b/c"
    )


def test_dense_is_linear_on_a_long_run_of_hyphens() -> None:
    import time

    start = time.perf_counter()  # a path could start after every "-": minutes for this before
    assert dense("-" * 200_000 + " a/b/c") == "-" * 200_000 + " a/b/c"
    assert time.perf_counter() - start < 5


def test_a_unit_the_answer_repeats_from_an_earlier_step_is_said_once() -> None:
    t = turn(
        "run the tests",
        "All 12 retry tests pass.",
        "All 12 retry tests pass. The flaky timeout is fixed.",
    )
    assert (
        summary(t)
        == "Asked: run the tests Outcome: All 12 retry tests pass. The flaky timeout is fixed."
    )


def test_a_table_gives_its_rows_not_its_header() -> None:
    answer = (
        "Fixed. The deployment table now shows:\n\n| Mode | Trigger | Target |\n|---|---|---|\n"
        "| Local | `bun dev` | localhost:8080 |\n| Remote | Push to main | Cloud Run |\n"
    )
    s = summary(turn("the readme is still wrong", answer))
    assert (
        s
        == "Asked: the readme is still wrong Outcome: Local bun dev, localhost:8080; Remote Push to main, Cloud Run"
    )
    status = "| Item | Status | Note |\n|---|---|---|\n| Events | ✅ | 9 event types |\n| Polling | - | 5 endpoints |\n"
    assert (
        summary(turn("status", status))
        == "Asked: status Outcome: Events 9 event types; Polling 5 endpoints"
    )


def test_did_names_file_base_names_commands_and_state_changes_and_tools_only_when_nothing_else() -> (
    None
):
    calls = [
        call("Edit", file_path="/home/u/proj/src/api/server.ts"),
        call("Edit", file_path="/home/u/proj/README.md"),
        call("Bash", command="git commit -m 'fix' && git push"),
    ]
    assert describe_actions(calls) == "edited server.ts, README.md; committed, pushed"
    codex = call(
        "shell",
        command=[
            "bash",
            "-lc",
            "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: docs/PDL_SPEC.md\n",
        ],
    )
    assert describe_actions([codex]) == "edited PDL_SPEC.md"
    failed = call("Bash", "exit 255: Network is unreachable", True, command="ssh slate whoami")
    assert describe_actions([failed]) == "ran `ssh slate whoami`; 1 failed"
    reads = [
        call("Read", file_path="a.py"),
        call("Grep", pattern="x"),
        call("Read", file_path="b.py"),
        call("Task"),
    ]
    assert describe_actions(reads) == "Read, Grep, Task"
    commit = call(
        "Bash",
        "[feat/retry 4ce79a1] Retry once\n 1 file changed",
        command="git commit -am 'Retry once'",
    )
    assert describe_actions([commit]) == "ran `git commit -am 'Retry once'`; committed 4ce79a1"


def test_summaries_stay_within_budget_and_cut_at_a_word() -> None:
    long = " ".join(f"word{i}" for i in range(200))
    s = compose(long, "Read×3", long)
    assert len(s) <= SUMMARY_MAX and s.endswith("…") and " word" in s and not s.endswith("wor…")
    assert SUMMARY_MAX == 600 and 400 < len(s) <= 600
    assert shorten("alpha beta gamma", 12) == "alpha beta…"


def test_a_compaction_summary_is_summarised_from_its_own_content() -> None:
    user = (
        "This session is being continued from a previous conversation that ran out of context. "
        "The conversation is summarized below:\nThe QA Coordination Hub roadmap has 8 phases; "
        "phase 1 adds types.ts."
    )
    row = refine_turn(turn(user, origin="compaction", reason=None), CTX)
    assert row["kinds"] == ["compaction", "continuation"]
    assert row["summary"] == (
        "Recap of an earlier session. Asked: (continued session: summary of the earlier "
        "conversation) Outcome: The QA Coordination Hub roadmap has 8 phases; phase 1 adds types.ts."
    )


def test_noise_kinds() -> None:
    assert refine_turn(turn("/clear", origin="command"), CTX)["kinds"] == ["command"]
    assert refine_turn(
        turn("<local-command-stdout></local-command-stdout>", origin="command_output"), CTX
    )["kinds"] == ["command"]
    compacted = "<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m</local-command-stdout>"
    assert refine_turn(turn(compacted, origin="command_output"), CTX)["kinds"] == [
        "command",
        "compaction",
    ]
    assert refine_turn(turn("[Request interrupted by user]", origin="interrupt"), CTX)["kinds"] == [
        "interrupted"
    ]
    timeout = turn("whoami", "Request timed out")
    timeout.api_errors = 3
    assert refine_turn(timeout, CTX)["kinds"] == ["api_error"]
    assert refine_turn(turn("continue", "Picking up where we left off: tests pass."), CTX)[
        "kinds"
    ] == ["continuation"]
    compact = turn(
        "Great!! can you compose a /compact message please?", "Handoff: phase 2 is done."
    )
    assert refine_turn(compact, CTX)["kinds"] == ["compaction"]
    decides = turn(
        "Option 2 please - build a full comprehensive manifest of every data file, "
        "then give me a /compact message",
        "Built the manifest.",
    )
    assert "compaction" not in refine_turn(decides, CTX)["kinds"]  # it decides: work, not noise


def test_work_kinds_read_the_request_and_what_happened() -> None:
    edit = [call("Edit", file_path="src/slider.tsx")]
    undo = turn(
        "no, that's not what I meant - put it back the way it was",
        "Done. Reverted to the original.",
        calls=edit,
    )
    assert refine_turn(undo, CTX)["kinds"] == ["reversal", "change"]
    pick = turn("2", "Option 2 it is: we'll use the MSYS2 rebase.")
    assert refine_turn(pick, CTX)["kinds"] == ["decision"]
    bug = turn(
        "the login form submits twice",
        "Fixed: the root cause was a missing preventDefault.",
        calls=edit,
    )
    assert refine_turn(bug, CTX)["kinds"] == ["fix", "change"]
    ask = turn("where do I enter my API key", "In Settings → LLM.")
    assert refine_turn(ask, CTX)["kinds"] == ["question"]
    look = turn(
        "how is the cache invalidated?",
        "On every write.",
        calls=[call("Grep", pattern="invalidate")],
    )
    assert refine_turn(look, CTX)["kinds"] == ["question", "explore"]
    install = turn(
        "install the WARP client",
        "Installed.",
        calls=[call("Bash", command="winget install Cloudflare.Warp")],
    )
    assert refine_turn(install, CTX)["kinds"] == ["change"]


def test_bug_reports_and_choices_that_are_only_implicit() -> None:
    edit = [call("Edit", file_path="src/widget.tsx")]
    pasted = turn(
        "[Autopilot] P&L calc: {realized: 0}\n[WS] Data feed received: cvd_update",
        "SOL price was 0.",
        calls=edit,
    )
    assert refine_turn(pasted, CTX)["kinds"] == ["fix", "change"]
    debugging = turn("resume", calls=edit)
    debugging.steps.insert(
        0, Step(n=0, text="I can see the issue - the hook needs Python. Let me fix this.")
    )
    assert refine_turn(debugging, CTX)["kinds"] == ["continuation", "fix", "change"]
    assert refine_turn(turn("yes fix it for me", "Fixed: PAI_DIR is set.", calls=edit), CTX)[
        "kinds"
    ] == ["fix", "change"]
    redirect = turn(
        "don't block the commit, instead redact each secret",
        "Secrets are redacted in place.",
        calls=edit,
    )
    assert refine_turn(redirect, CTX)["kinds"] == ["decision", "reversal", "change"]
    link = turn("[the docs](https://example.com) say what about retries?", "Three retries.")
    assert refine_turn(link, CTX)["kinds"] == ["question"]


def test_keywords_have_no_path_fragments_stopwords_or_wrapper_tags() -> None:
    words = keywords_of(
        "<local-command-stdout>edited /Users/someone/Documents/proj/src/charge_card.py "
        "and the retry policy for charge_card with the PSP</local-command-stdout>"
    )
    assert words[0] == "charge_card.py" and "charge_card" in words
    assert not {
        "Users",
        "users",
        "someone",
        "documents",
        "the",
        "and",
        "local-command-stdout",
    } & set(words)
    words = keywords_of(
        "(command output) see C:\\Users\\mischa\\rebase-msys2.ps1, ~/Documents/M-Claude and CI/CD; "
        "[Request interrupted by user] added https://example.com"
    )
    assert words == ["rebase-msys2.ps1", "M-Claude", "CI/CD", "example.com"]


def test_refresh_keeps_a_model_written_summary_of_an_unchanged_turn_and_counts_changes() -> None:
    old = [
        {
            "agent": "main",
            "turn": 0,
            "summary": "Asked: x Outcome: by the model",
            "kinds": [],
            "keywords": [],
            "files": [],
            "refiner": "extractive@2+sampling@1",
            "content_hash": "h0",
        },
        {
            "agent": "main",
            "turn": 1,
            "summary": "old",
            "kinds": [],
            "keywords": [],
            "files": [],
            "refiner": "extractive@2",
            "content_hash": "h1",
        },
    ]
    new = [
        {
            "agent": "main",
            "turn": 0,
            "summary": "new",
            "kinds": [],
            "keywords": [],
            "files": [],
            "refiner": REFINER,
            "content_hash": "h0",
        },
        {
            "agent": "main",
            "turn": 1,
            "summary": "new",
            "kinds": ["fix"],
            "keywords": [],
            "files": [],
            "refiner": REFINER,
            "content_hash": "h1",
        },
        {
            "agent": "main",
            "turn": 2,
            "summary": "added",
            "kinds": [],
            "keywords": [],
            "files": [],
            "refiner": REFINER,
            "content_hash": "h2",
        },
    ]
    assert carry_over(old, new) == 2
    assert (new[0]["summary"], new[0]["refiner"]) == (
        "Asked: x Outcome: by the model",
        f"{REFINER}+sampling@1",
    )
    assert new[1]["summary"] == "new"


def test_refine_redoes_only_sessions_an_older_refiner_wrote_with_progress_and_counts_changed_rows(
    kimi_root: Path,
) -> None:
    archive = Archive(Path(os.environ["ARCHIVE_MCP_HOME"]), embedder=None)
    archive.ingest(kimi_root)
    ws = archive.workspace("webapp")
    sid = sorted(archive.raw_files(ws))[0]
    rows = store.read_refined(ws, sid).to_dicts()
    stale = [
        {**r, "refiner": "extractive@3", "summary": "old" if i < 2 else r["summary"]}
        for i, r in enumerate(rows)
    ]
    store.merge_refined(ws, sid, stale, replace_all=True)
    seen: list[tuple[str, int, int]] = []
    report = archive.refine(
        "all", embed=False, progress=lambda label, done, total: seen.append((label, done, total))
    )
    assert (report.sessions, report.turns, report.rows_changed) == (1, len(rows), 2)
    assert (
        seen
        and seen[-1][1] == seen[-1][2]
        and all(label.startswith("refine") for label, _, _ in seen)
    )
    assert set(store.read_refined(ws, sid)["refiner"]) == {REFINER}
    assert store.read_refined(ws, sid)["summary"].to_list() == [r["summary"] for r in rows]
    again = CliRunner().invoke(main, ["refine", "--all", "--no-embed"])
    assert (
        again.exit_code == 0
        and again.stdout == "0 sessions refined (0 turns, 0 rows changed), 0 embedded\n"
    )


def test_an_answers_acknowledgement_goes_whole_and_never_leaves_a_fragment() -> None:
    """Real openings (Codex and Claude Code answers): the old rule cut "Thanks" off "Thanks for the
    details — we're close." and left "for the details — we're close."."""
    cases = {
        "Thanks for the details — we’re close.": "We’re close.",
        "Thanks for the stack trace. You were right": "You were right",
        'You\'re right to call that out - "internalize" was vague.': '"internalize" was vague.',
        "Good question - you're right to push back on this.": "",
        "Great list — I’ve expanded PDL to support custom G-code": "Great list — I’ve expanded PDL to support custom G-code",
        "Great progress. File: slicers/orca.py": "File: slicers/orca.py",
        "Good news: Autopilot integration is working!": "Autopilot integration is working!",
        "Perfect! Fixed it.": "Fixed it.",
        "Yes - all 3 original Notion links are in": "All 3 original Notion links are in",
        "ccusage is installed": "ccusage is installed",
    }
    assert {text: strip_reply_ack(text) for text in cases} == cases
    answer = "Thanks for flagging that — sorry for the friction. Great catch! Let me look at the Qt plugin."
    assert outcome(turn("it crashes", answer), 200) == "Sorry for the friction."
    assert dense("Successfully removed all traces of OpenVPN") == "Removed all traces of OpenVPN"


def test_a_hit_without_the_users_words_shows_its_summary_whole_in_normal_and_a_line_in_compact() -> (
    None
):
    from archive_mcp.render import hit_text
    from archive_mcp.search.hits import Hit

    summary = compose(" ".join(f"word{i}" for i in range(200)), "Read", "done " * 200)
    hit = Hit("w", "s1", "main", 2, "2026-01-08T10:00", 0.5, summary, "", ["bm25"], "ok", [], {})
    assert 400 < len(summary) <= 600
    assert hit_text(hit, "normal").splitlines()[1] == f"  {summary}"
    assert hit_text(hit, "compact") == (
        "s1:2 2026-01-08T10:00 — Asked: word0 word1 word2 word3 word4 word5 "
        "word6 word7 word8 word9 word10 word11… Did: Read…"
    )


def test_a_legacy_turn_is_interrupted_only_when_its_last_step_stopped_short() -> None:
    """A call earlier in the turn without a result (its log line unreadable) does not make a turn
    interrupted when the work went on (agents-dev: a long turn its compaction continued)."""

    def turn(last_answered: bool) -> Turn:
        ok = {"is_error": False, "message": "", "output": "done"}
        steps = [
            Step(1, tool_calls=[ToolCall("a", "Bash", result=None)]),
            Step(2, tool_calls=[ToolCall("b", "Bash", result=ok if last_answered else None)]),
        ]
        return Turn(0, None, "run the tests", end="superseded", legacy=True, steps=steps)

    assert turn(last_answered=True).status == "completed"
    assert turn(last_answered=False).status == "interrupted"
    assert Turn(0, None, "hi", end="superseded", legacy=True).status == "interrupted"


def test_a_folded_pattern_finds_what_the_ignorecase_pattern_finds_in_any_text() -> None:
    pattern = r"\b(?:fixed|passes|tests?)\b\W*[:：]?"
    folded, ignorecase = Folded(pattern), re.compile(pattern, re.I)
    texts = [
        "All TESTS pass",  # ASCII: run on the lowercased text
        "Fixed: the bug",
        "prefixed",
        "",
        "paſſes now",  # the long s folds to "s" under IGNORECASE, not under str.lower
        "\u212aelvin FIXED",  # the Kelvin sign
        "修复 Passes：",
    ]
    found = [folded.search(t) for t in texts]
    assert found == [ignorecase.search(t) is not None for t in texts]
    assert found == [True, True, False, False, True, True, True]


def test_a_cue_finds_its_cjk_phrase_and_refuses_an_ascii_one() -> None:
    cue = Cue(r"\bfix\b", "修复 修正")
    assert (cue.search("请修复这个"), cue.search("please fix it"), cue.search("plain text")) == (
        True,
        True,
        False,
    )
    assert (cue.match("修正它"), cue.match("fix it"), cue.match("it 修正")) == (True, True, False)
    with pytest.raises(ValueError, match="Cue phrases are CJK"):
        Cue("x", "修复 fix")
