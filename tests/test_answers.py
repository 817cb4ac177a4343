"""The user's words that arrive as tool results (refiners/answers.py): parsed by the readers,
joined to the turn's user text, said in its summary, found by search and shown by
load_turn_context at every detail level; and a proposal the user rejects is said as one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from archive_mcp.refiners import PARSERS
from archive_mcp.refiners.answers import (
    answered,
    approval_response,
    claude_result,
    picked,
    refused,
    said,
)
from archive_mcp.refiners.model import Step, ToolCall, Turn
from archive_mcp.refiners.refine import RefineContext, refine_turn
from mcp import Client

from archive_mcp import Archive
from archive_mcp.mcp.server import build_server
from archive_mcp.search.context import pasted_digest
from tests.cited import refs

FIXTURES = Path(__file__).parent / "fixtures"
SID = "a11ce000-1111-4222-8333-444455556666"
CWD = "/home/alice/projects/sync"
FEEDBACK = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
    "the user said:\nActually, let's keep the sync behavior as-is and fix the retry instead"
)
ASKED = (
    'User has answered your questions: "Which branch is clean?"="main was clean; fix the '
    "issues\". You can now continue with the user's answers in mind."
)


def _call(name: str, args: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id="t1", name=name, arguments=json.dumps(args or {}))


def test_rejection_feedback_is_the_users_words_marked_as_feedback() -> None:
    block = {"type": "tool_result", "content": FEEDBACK, "is_error": True}
    assert claude_result(_call("Edit"), block, {"toolUseResult": "Error: " + FEEDBACK}) == [
        "[feedback on Edit] Actually, let's keep the sync behavior as-is and fix the retry instead"
    ]


def test_an_ask_user_question_answer_comes_from_tool_use_result_else_from_the_text() -> None:
    block = {"type": "tool_result", "content": ASKED}
    record = {"toolUseResult": {"answers": {"Push tag v1.1?": "Yes, push tag"}}}
    assert claude_result(_call("AskUserQuestion"), block, record) == [
        "[answer] Push tag v1.1? → Yes, push tag"
    ]
    assert claude_result(_call("AskUserQuestion"), block, {}) == [
        "[answer] Which branch is clean? → main was clean; fix the issues"
    ]


def test_a_plan_approved_with_edits_says_so_and_names_the_plan() -> None:
    text = "User has approved your plan. You can now start coding.\n\n## Approved Plan:\n# Sync v2"
    block = {"type": "tool_result", "content": text}
    proposed = _call("ExitPlanMode", {"plan": "# Sync v2\n\nretry 3 times"})
    same = {"toolUseResult": {"plan": "# Sync v2\n\nretry 3 times"}}
    edited = {"toolUseResult": {"plan": "# Sync v2\n\nretry 5 times"}}
    assert claude_result(proposed, block, same) == ["[approved plan] Sync v2"]
    assert claude_result(proposed, block, edited) == ["[approved plan, edited by the user] Sync v2"]


def test_a_tools_own_result_holds_no_user_words() -> None:
    block = {"type": "tool_result", "content": "3 files changed"}
    assert claude_result(_call("Bash"), block, {"toolUseResult": {"stdout": "x"}}) == []


def test_kimi_approval_responses_give_feedback_or_a_rejection_and_approvals_give_nothing() -> None:
    shell = _call("Shell")
    assert approval_response(shell, {"response": "reject", "feedback": "use pytest -x"}) == [
        "[feedback on Shell] use pytest -x"
    ]
    assert approval_response(shell, {"response": "reject"}) == ["[rejected Shell]"]
    assert approval_response(shell, {"response": "approve", "feedback": ""}) == []


def test_the_readers_find_the_rejections_in_the_real_fixtures() -> None:
    claude = PARSERS["claude-code"](
        FIXTURES / "real-cli/claude-2.1.197/dot-claude/projects/-home-dev-work-claude"
        "/5e1f0c2a-7b3d-4c8e-9a61-2f4d8b0c6e13.jsonl"
    )
    kimi = PARSERS["kimi"](
        FIXTURES / "kimi/sessions/dc8fa21d3e61040ad8305bf8ed3081c5"
        "/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/wire.jsonl"
    )
    assert [(t.index, t.answers) for t in claude.turns if t.answers] == [(7, ["[rejected Bash]"])]
    assert [(t.index, t.answers) for t in kimi.turns if t.answers] == [(1, ["[rejected Shell]"])]


def test_the_summary_says_feedback_before_answers() -> None:
    assert said(["[answer] Which DB? → Postgres", "[feedback on Edit] keep sync"]) == (
        "rejected Edit: keep sync; Which DB? → Postgres"
    )


def _rec(kind: str, content: Any, sec: int, mid: str = "", extra: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if mid:
        message["id"] = mid
    out = {
        "type": kind,
        "sessionId": SID,
        "cwd": CWD,
        "version": "2.1.9",
        "timestamp": f"2026-03-20T10:00:{sec:02d}Z",
        "uuid": f"u{sec}",
        "message": message,
    }
    if extra is not None:
        out["toolUseResult"] = extra
    return out


def _session(home: Path) -> Path:
    """Turn 0: an Edit the user rejects with feedback, then an AskUserQuestion answered; turn 1:
    the agent proposes a fix the user turns down in turn 2."""
    edit = {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "sync.py"}}
    ask = {
        "type": "tool_use",
        "id": "t2",
        "name": "AskUserQuestion",
        "input": {"questions": [{"question": "Which branch is clean?"}]},
    }
    records = [
        _rec("user", "Make the sync asynchronous", 0),
        _rec("assistant", [edit], 1, "m1"),
        _rec(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": FEEDBACK, "is_error": True}],
            2,
            extra="Error: " + FEEDBACK,
        ),
        _rec("assistant", [ask], 3, "m2"),
        _rec("user", [{"type": "tool_result", "tool_use_id": "t2", "content": ASKED}], 4),
        _rec(
            "assistant", [{"type": "text", "text": "Got it, sync mode stays untouched."}], 5, "m3"
        ),
        _rec("user", "Why do the retries fail?", 6),
        _rec(
            "assistant",
            [{"type": "text", "text": "The fix is in ExtractAgentEvents: map the tool types."}],
            7,
            "m4",
        ),
        _rec("user", "No, that's not it - the backoff resets too early", 8),
        _rec(
            "assistant", [{"type": "text", "text": "You are right: the backoff resets."}], 9, "m5"
        ),
    ]
    path = home / ".claude" / "projects" / "-home-alice-projects-sync" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return home / ".claude"


def _archived_records(tmp_path: Path, records: list[dict[str, Any]]) -> Archive:
    """An archive of one Claude Code session of `records` (in the sync project)."""
    path = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    return archive


def _archived(tmp_path: Path) -> tuple[Archive, list[dict[str, Any]]]:
    archive = Archive(embedder=None)
    archive.ingest(_session(tmp_path))
    return archive, archive.turns(archive.workspace(cwd=CWD).id).collect().sort("turn").to_dicts()


def test_user_decisions_in_tool_results_join_the_user_text_summary_search_and_reading(
    tmp_path: Path,
) -> None:
    archive, rows = _archived(tmp_path)
    assert rows[0]["user_text"] == (
        "Make the sync asynchronous\n"
        "[feedback on Edit] Actually, let's keep the sync behavior as-is and fix the retry instead\n"
        "[answer] Which branch is clean? → main was clean; fix the issues"
    )
    assert rows[0]["summary"] == (
        "Asked: Make the sync asynchronous Did: edited sync.py; 1 failed User: rejected Edit: "
        "Actually, let's keep the sync behavior as-is and fix the retry instead; Which branch is "
        "clean? → main was clean; fix the issues Outcome: Sync mode stays untouched."
    )
    hits = archive.search("keep the sync behavior", workspace=CWD, mode="lexical")
    assert [(h.session_id, h.turn) for h in hits][:1] == [(SID, 0)]

    async def read(detail: str) -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool(
                "load_turn_context", {"references": [f"{SID}:0"], "detail": detail}
            )
            return r.content[0].text

    for detail in ("compact", "normal", "full"):
        text = anyio.run(read, detail)
        assert "[feedback on Edit] Actually, let's keep the sync behavior as-is" in text, detail
        assert "[answer] Which branch is clean? → main was clean; fix the issues" in text, detail


def test_a_proposal_the_user_rejects_next_is_said_as_proposed_and_rejected(tmp_path: Path) -> None:
    _, rows = _archived(tmp_path)
    assert rows[1]["summary"] == (
        "Asked: Why do the retries fail? Outcome: proposed, rejected by the user: The fix is in "
        "ExtractAgentEvents: map the tool types."
    )
    assert "rejected" not in rows[2]["summary"]


def test_a_turn_ending_in_a_refused_call_is_rejected_without_a_next_turn() -> None:
    call = ToolCall(id="t1", name="Shell", arguments="{}", approval="reject")
    call.result = {"is_error": True, "message": "", "output": ""}
    turn = Turn(index=0, started_at=None, user_text="clean up the build dir")
    turn.steps = [Step(n=1, text="I will delete build/.", tool_calls=[call])]
    row = refine_turn(turn, RefineContext("w", "kimi", "s", "main", "f"))
    assert row["summary"] == (
        "Asked: clean up the build dir Did: Shell; 1 failed Outcome: proposed, rejected by the "
        "user: I will delete build/."
    )


def test_a_file_of_no_turns_refines_to_no_rows() -> None:
    from archive_mcp.ingest.jobs import turn_rows

    assert turn_rows("w", "claude-code", "s", "main", "f", [], frozenset(), None) == []


def test_a_search_hit_shows_the_users_words_the_decisions_holding_the_query_the_answer_and_a_rejection(
    tmp_path: Path,
) -> None:
    archive, _ = _archived(tmp_path)

    async def search(args: dict[str, Any]) -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool("search_context", {"mode": "lexical", **args})
            return r.content[0].text

    assert anyio.run(search, {"query": "keep the sync behavior", "limit": 1}) == (
        "1 hits (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":0 10:00 (interrupted) — Make the sync asynchronous\n"
        "  User [feedback on Edit] Actually, let's keep the sync behavior as-is and "
        "fix the retry instead\n"
        "  User (+1 more answer: read the turn)\n"
        "  → Got it, sync mode stays untouched."
    )
    assert anyio.run(search, {"query": "which branch was clean", "limit": 1}) == (
        "1 hits (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":0 10:00 (interrupted) — Make the sync asynchronous\n"
        "  User [answer] Which branch is clean? → main was clean; fix the issues\n"
        "  User (+1 more answer: read the turn)\n"
        "  → Got it, sync mode stays untouched."
    )
    assert anyio.run(search, {"query": "ExtractAgentEvents", "limit": 1}) == (
        "1 hits (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":1 10:00 (rejected by the user) — Why do the retries fail?\n"
        "  → The fix is in ExtractAgentEvents: map the tool types."
    )


def _lexical_search(archive: Archive, args: dict[str, Any]) -> tuple[str, Any]:
    """search_context in lexical mode through a real MCP client: its text and structured content."""

    async def search() -> tuple[str, Any]:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool("search_context", {"mode": "lexical", **args})
            return r.content[0].text, r.structured_content

    return anyio.run(search)


def test_a_hit_found_by_an_also_query_shows_the_decision_holding_that_querys_words(
    tmp_path: Path,
) -> None:
    """Drawn once under the first query, the hit is "(above)" under the second: the decision
    the second query's words are in is shown there."""
    archive, _ = _archived(tmp_path)
    text, _ = _lexical_search(
        archive, {"query": "keep the sync behavior", "also": ["which branch was clean"], "limit": 1}
    )
    assert "main was clean; fix the issues" in text, text


def test_a_search_with_more_queries_answers_each_under_its_own_heading(tmp_path: Path) -> None:
    archive, _ = _archived(tmp_path)

    text, data = _lexical_search(
        archive,
        {
            "query": "keep the sync behavior",
            "also": ["ExtractAgentEvents"],
            "limit": 1,
            "detail": "compact",
        },
    )
    assert text == (
        "## 1 hits for 'keep the sync behavior' (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":0 10:00 (interrupted) — Make the sync asynchronous\n"
        "## 1 hits for 'ExtractAgentEvents' (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":1 10:00 (rejected by the user) — Why do the retries fail?"
    )
    assert data["hits"] == []
    assert [(g["query"], [h["turn"] for h in g["hits"]]) for g in data["groups"]] == [
        ("keep the sync behavior", [0]),
        ("ExtractAgentEvents", [1]),
    ]


def test_a_turn_found_by_two_queries_of_one_search_is_shown_once_then_by_reference(
    tmp_path: Path,
) -> None:
    archive, _ = _archived(tmp_path)

    text, data = _lexical_search(
        archive,
        {"query": "sync behavior", "also": ["asynchronous sync"], "limit": 1, "detail": "compact"},
    )
    assert text == (
        "## 1 hits for 'sync behavior' (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":0 10:00 (interrupted) — Make the sync asynchronous\n"
        "## 1 hits for 'asynchronous sync' (mode lexical)\n"
        "a11ce000 2026-03-20\n"
        ":0 10:00 (above)"
    )
    assert [(g["query"], [h["turn"] for h in g["hits"]]) for g in data["groups"]] == [
        ("sync behavior", [0]),
        ("asynchronous sync", [0]),
    ]


def test_a_search_with_more_queries_keeps_the_same_hits_in_its_text_and_structured_content(
    tmp_path: Path,
) -> None:
    records = []
    for i in range(8):
        records.append(_rec("user", f"alpha question {i} about the gateway retry policy", 2 * i))
        text = f"beta answer {i}: the retry policy uses exponential backoff with jitter"
        records.append(_rec("assistant", [{"type": "text", "text": text}], 2 * i + 1, f"m{i}"))
    archive = _archived_records(tmp_path, records)

    async def search() -> tuple[str, Any]:
        async with Client(build_server(archive, cwd=CWD)) as client:
            args = {"query": "alpha", "also": ["beta"], "limit": 8, "max_output_chars": 3000}
            r = await client.call_tool(
                "search_context", {**args, "mode": "lexical", "detail": "compact"}
            )
            return r.content[0].text, r.structured_content

    text, data = anyio.run(search)
    shown = [f"{SID[:8]}:{h['turn']}" for g in data["groups"] for h in g["hits"]]
    assert refs(text) == shown
    assert [(g["query"], len(g["hits"])) for g in data["groups"]] == [("alpha", 5), ("beta", 5)]
    assert data["truncated"] is True


def test_a_bare_number_answering_a_menu_keeps_the_option_it_picked_wherever_it_is_shown(
    tmp_path: Path,
) -> None:
    menu = (
        "Three ways to reach the box:\n\n1. Cloudflare Tunnel for SSH\n2. Port-forward 22\n"
        "3. **Tailscale** on the router as a subnet router\n\nWhich one?"
    )
    records = [
        _rec("user", "How do I reach the home server from outside?", 0),
        _rec("assistant", [{"type": "text", "text": menu}], 1, "m1"),
        _rec("user", "3", 2),
        _rec("assistant", [{"type": "text", "text": "Setting it up now."}], 3, "m2"),
    ]
    archive = _archived_records(tmp_path, records)

    async def call(name: str, args: dict[str, Any]) -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            return (await client.call_tool(name, args)).content[0].text

    read = anyio.run(
        call,
        "load_turn_context",
        {"references": [f"{SID}:0-1"], "detail": "compact", "matching": "setting"},
    )
    assert read.splitlines()[1:4] == [
        "User: 3",
        "[picked] 3. Tailscale on the router as a subnet router",
        "Assistant: Setting it up now.",
    ]
    hit = anyio.run(
        call,
        "search_context",
        {"query": "subnet router", "mode": "lexical", "detail": "compact", "limit": 1},
    )
    assert hit.splitlines()[1:3] == [
        "a11ce000 2026-03-20",
        ":1 10:00 (decision) — 3 [picked] 3. Tailscale on the router as a subnet router",
    ]


def test_many_answers_the_user_gave_are_read_whole_not_as_a_pasted_block(tmp_path: Path) -> None:
    choices = {
        f"Which {part} should the deploy pipeline use for staging?": f"the {part} we already run"
        for part in ("registry", "runner", "cache", "region", "secrets", "image", "DNS", "CDN")
    }
    records = [_rec("user", "Set up the deploy pipeline", 0)]
    for n, questions in enumerate((list(choices)[:4], list(choices)[4:])):
        ask = {
            "type": "tool_use",
            "id": f"q{n}",
            "name": "AskUserQuestion",
            "input": {"questions": [{"question": q} for q in questions]},
        }
        result = {"type": "tool_result", "tool_use_id": f"q{n}", "content": "User has answered"}
        answers = {"answers": {q: choices[q] for q in questions}}
        records += [
            _rec("assistant", [ask], 1 + 2 * n, f"m{n}"),
            _rec("user", [result], 2 + 2 * n, extra=answers),
        ]
    records.append(_rec("assistant", [{"type": "text", "text": "Pipeline set up."}], 9, "m9"))
    archive = _archived_records(tmp_path, records)

    async def read() -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            args = {"references": [f"{SID}:0"], "detail": "normal"}
            return (await client.call_tool("load_turn_context", args)).content[0].text

    lines = anyio.run(read).splitlines()
    assert [ln for ln in lines if ln.startswith("[answer] ")] == [
        f"[answer] {q} → {a}" for q, a in choices.items()
    ]


def test_a_pasted_log_in_the_users_words_is_one_line_in_a_read_and_whole_in_full(
    tmp_path: Path,
) -> None:
    log = "\n".join(
        f"2026-01-17 12:00:{i:02d} ERROR blocky: upstream 10.0.0.{i} timed out after 2s"
        for i in range(20)
    )
    asked = f"DNS keeps failing, the log:\n\n{log}\n\nShould the upstream be Mullvad DoH?"
    records = [
        _rec("user", asked, 0),
        _rec("assistant", [{"type": "text", "text": "Yes: switching to DoH."}], 1, "m1"),
    ]
    archive = _archived_records(tmp_path, records)

    async def read(detail: str) -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            args = {"references": [f"{SID}:0"], "detail": detail}
            return (await client.call_tool("load_turn_context", args)).content[0].text

    assert anyio.run(read, "normal").splitlines()[1:6] == [
        "User: DNS keeps failing, the log:",
        "",
        "[pasted block, 20 lines, 1,429 chars: 2026-01-17 12:00:00 ERROR blocky: upstream "
        "10.0.0.0 timed out after 2s … 2026-01-17 12:00:19 ERROR blocky: upstream 10.0.0.19 timed "
        "out after 2s; detail=full shows it whole]",
        "",
        "Should the upstream be Mullvad DoH?",
    ]
    assert log in anyio.run(read, "full")


def test_a_bare_number_picks_only_a_numbered_item_of_a_list_that_asks_a_choice() -> None:
    day = "Your day:\n\n10:30 standup\n11:00 review\n\nAnything to move?"
    assert picked("10", day) == []
    done = "Steps done:\n\n1. Built the image\n2. Pushed the tag\n3. Deployed staging\n\nAll set."
    assert picked("3", done) == []
    asked = "Which should I do first?\n1. Build the image\n2. Push the tag"
    assert picked("2", asked) == ["[picked] 2. Push the tag"]
    menu = "Options:\n\n- **1.** Keep it\n- **2.** Drop the cache\n  (frees 2 GB)\n\nWhich one?"
    assert picked("2", menu) == ["[picked] 2. Drop the cache"]
    assert picked("2", "1) Keep it\n2) Drop it\n\nOk?") == ["[picked] 2. Drop it"]


def test_an_indented_list_the_user_wrote_is_kept_while_an_indented_traceback_is_one_line() -> None:
    steps = "\n".join(
        f"  {mark} move the {part} service to the new cluster and check its health page"
        for mark, part in zip(
            ["-", "*", "1.", "2.", "-", "-", "3.", "-", "-", "-"], "abcdefghij", strict=True
        )
    )
    plain = "\n".join(f"   then the {part} team signs off on the move" for part in "abcdefghij")
    assert pasted_digest(f"The plan:\n\n{steps}\n\n{plain}") == f"The plan:\n\n{steps}\n\n{plain}"
    frames = "".join(
        f'  File "app/step{i}.py", line {i + 10}, in run\n    result = handler(request, {i})\n'
        for i in range(10)
    )
    trace = f"Traceback (most recent call last):\n{frames}ValueError: no such request"
    assert pasted_digest(f"It fails:\n\n{trace}") == (
        "It fails:\n\n[pasted block, 22 lines, 782 chars: Traceback (most recent call last): … "
        "ValueError: no such request; detail=full shows it whole]"
    )


def test_a_search_names_an_empty_also_entry_and_runs_a_repeated_query_once(
    tmp_path: Path,
) -> None:
    archive, _ = _archived(tmp_path)

    async def search(args: dict[str, Any]) -> tuple[bool, str, Any]:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool("search_context", {"mode": "lexical", **args})
            return r.is_error, r.content[0].text, r.structured_content

    empty = anyio.run(search, {"query": "sync", "also": ["retries", "  "], "limit": 1})
    assert empty[:2] == (True, "also[1] is empty: drop it or give words")
    is_error, text, data = anyio.run(
        search,
        {
            "query": "keep the sync behavior",
            "also": ["ExtractAgentEvents", " Keep the SYNC  behavior", "extractagentevents"],
            "limit": 1,
            "detail": "compact",
        },
    )
    assert not is_error
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## 1 hits for 'keep the sync behavior' (mode lexical)",
        "## 1 hits for 'ExtractAgentEvents' (mode lexical)",
    ]
    assert [g["query"] for g in data["groups"]] == ["keep the sync behavior", "ExtractAgentEvents"]
    alone = anyio.run(search, {"query": "sync", "also": ["SYNC"], "limit": 1, "detail": "compact"})
    assert alone[1].splitlines()[0] == "1 hits (mode lexical)"
    assert alone[2]["groups"] is None


def test_a_refused_call_is_marked_rejected_with_the_users_words_when_there_are_any() -> None:
    edit, unnamed, run = ToolCall("c1", "Edit"), ToolCall("c2", ""), ToolCall("c3", "bash")
    assert refused(edit, "  keep the old name ") == ["[feedback on Edit] keep the old name"]
    assert refused(unnamed) == ["[rejected a tool call]"]
    assert refused(run, "   ") == ["[rejected bash]"]
    assert [c.approval for c in (edit, unnamed, run)] == ["reject", "reject", "reject"]
    assert answered("Push the tag? → Yes") == "[answer] Push the tag? → Yes"
