"""The Claude Code, Codex CLI and Gemini CLI readers on real logs (tests/fixtures/real) and on
synthetic edge cases written here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from archive_mcp.refiners import RefineContext, claude_code, codex, discover, gemini, refine_turn
from archive_mcp.refiners.redact import redact

REAL = Path(__file__).parent / "fixtures" / "real"
M_THISNESS = REAL / "claude" / "m-thisness"


def write_jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    return path


def user(text: Any, ts: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": "s1",
        "cwd": "/home/a/proj",
        "version": "2.1.9",
        "timestamp": ts,
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(
    mid: str, block: dict[str, Any], ts: str, usage: dict[str, int] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": "s1",
        "cwd": "/home/a/proj",
        "timestamp": ts,
        "requestId": "r-" + mid,
        "message": {
            "id": mid,
            "role": "assistant",
            "content": [block],
            "usage": usage
            or {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 1,
            },
        },
        **extra,
    }


def independent_count(path: Path, subagent: bool = False) -> int:
    """The labelling rule, written out again without the reader's code."""
    n = 0
    for raw in path.read_bytes().splitlines():
        try:
            r = json.loads(raw)
        except ValueError:
            continue
        if r.get("type") != "user" or r.get("isMeta") or (r.get("isSidechain") and not subagent):
            continue
        content = r["message"]["content"]
        if isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content):
            n += 1
    return n


# --- Claude Code --------------------------------------------------------------------------------


def test_real_claude_session_with_subagents_folder() -> None:
    found = discover(REAL / "claude" / "moredip")
    [session] = found.sessions
    assert (session.source, session.session_id, session.work_dirs, session.branch) == (
        "claude-code",
        "4b2030ed-5563-49ea-b703-6a002f2d3cc8",
        ["/Users/pete/git/moredip/session-share"],
        "main",
    )
    assert [(f.agent, f.rel) for f in session.files] == [
        ("main", "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"),
        ("agent-a2018e5", "subagents/agent-a2018e5.jsonl"),
    ]
    main = claude_code.parse_wire(session.files[0].path)
    assert len(main.turns) == independent_count(session.files[0].path) == 1
    turn = main.turns[0]
    assert turn.user_text.startswith("spawn a subagent to perform a websearch")
    assert (
        turn.status,
        [c.name for c in turn.tool_calls],
        [c.status for c in turn.tool_calls],
    ) == ("completed", ["Task"], ["ok"])
    assert turn.final_text.startswith("The search results indicate that **Green")
    sub = claude_code.parse_wire(session.files[1].path)
    assert len(sub.turns) == independent_count(session.files[1].path, subagent=True) == 1


def test_real_claude_usage_counts_each_api_response_once() -> None:
    path = REAL / "claude" / "moredip" / "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    seen: dict[tuple[str, str], int] = {}
    for raw in path.read_bytes().splitlines():
        r = json.loads(raw)
        if r.get("type") == "assistant":
            seen[(r["message"]["id"], r.get("requestId", ""))] = r["message"]["usage"][
                "output_tokens"
            ]
    lines = sum(
        1 for raw in path.read_bytes().splitlines() if json.loads(raw).get("type") == "assistant"
    )
    assert lines > len(seen)  # the file really repeats usage over several lines
    assert claude_code.parse_wire(path).turns[0].usage["output"] == sum(seen.values())


def test_real_lines_cut_mid_json_are_reported_with_their_numbers_and_the_rest_is_read() -> None:
    result = claude_code.parse_wire(M_THISNESS / "e0ce82fa-774f-4827-8cef-17b1b18b9f2a.jsonl")
    assert [(p.line, p.kind) for p in result.problems] == [(n, "malformed") for n in range(3, 10)]
    assert [t.user_text[:22] for t in result.turns] == ["claude --teleport sess"]


def test_real_api_error_turns_are_marked() -> None:
    path = M_THISNESS / "0a8fc187-681a-4c42-9538-ba0f628ee289.jsonl"
    turns = claude_code.parse_wire(path).turns
    assert [(t.user_text[:8], t.api_errors, t.status) for t in turns] == [
        ("fix this", 11, "error"),
        ("whoami", 5, "open"),
    ]
    ctx = RefineContext("w", "claude-code", "s", "main", "raw")
    assert "api_error" in refine_turn(turns[1], ctx)["kinds"]
    assert "api_error" in refine_turn(turns[0], ctx)["kinds"]


def test_real_folder_with_empty_summary_only_and_orphan_subagent_logs() -> None:
    found = discover(M_THISNESS)
    by_id = {s.session_id: s for s in found.sessions}
    assert sorted(by_id) == [
        "0a8fc187-681a-4c42-9538-ba0f628ee289",
        "abc757d1-3da3-42fb-bb7b-ffa293a4ba29",
        "e0ce82fa-774f-4827-8cef-17b1b18b9f2a",
        "e6804af6-fe01-478c-9e10-75e94f3e93cb",
        "e87ac024-21a7-42ed-bff4-e19317199c49",
    ]
    orphan = by_id["abc757d1-3da3-42fb-bb7b-ffa293a4ba29"]  # its session log is not in the folder
    assert [f.agent for f in orphan.files] == ["agent-a5c3259"]
    assert orphan.work_dirs == [
        "C:\\Users\\Mischa\\.claude-worktrees\\M-Claude\\unruffled-mcclintock"
    ]
    for sid in ("e6804af6-fe01-478c-9e10-75e94f3e93cb", "e87ac024-21a7-42ed-bff4-e19317199c49"):
        assert claude_code.parse_wire(by_id[sid].files[0].path).turns == []
        assert by_id[sid].work_dirs == [
            "C:\\Users\\Mischa"
        ]  # the folder's most common cwd (ties: first)


def test_real_resumed_file_with_two_session_ids_is_one_session_named_by_its_records() -> None:
    [session] = discover(REAL / "claude" / "vibecodingtracker" / "test_conversation.jsonl").sessions
    assert (
        session.session_id == "e9f146fa-3b20-48d0-9be4-d99ca901cae4"
    )  # the file name is not an id
    result = claude_code.parse_wire(session.files[0].path)
    assert result.protocol_version == "1.0.95"
    assert len(result.turns) == independent_count(session.files[0].path) == 6
    assert [(t.origin, t.status) for t in result.turns[:2]] == [
        ("user", "interrupted"),
        ("interrupt", "completed"),  # the marker itself is no interrupted turn
    ]
    assert result.turns[3].user_text == "/mcp"


def test_claude_turn_kinds_lines_and_byte_ranges(tmp_path: Path) -> None:
    records = [
        {"type": "summary", "summary": "old chat", "leafUuid": "x"},
        user(
            "<local-command-caveat>Caveat</local-command-caveat>",
            "2026-01-02T10:00:00Z",
            isMeta=True,
        ),
        user(
            "<command-name>/clear</command-name>\n<command-args></command-args>",
            "2026-01-02T10:00:01Z",
        ),
        user("<local-command-stdout></local-command-stdout>", "2026-01-02T10:00:02Z"),
        user(
            [
                {"type": "text", "text": "Fix the flaky test"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                },
            ],
            "2026-01-02T10:01:00Z",
        ),
        assistant("m1", {"type": "thinking", "thinking": "look at it"}, "2026-01-02T10:01:01Z"),
        assistant(
            "m1",
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}},
            "2026-01-02T10:01:02Z",
        ),
        user(
            [{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed", "is_error": True}],
            "2026-01-02T10:01:05Z",
            toolUseResult="Error: exit 1",
        ),
        {
            "type": "progress",
            "sessionId": "s1",
            "timestamp": "2026-01-02T10:01:06Z",
            "cwd": "/home/a/proj/sub",
        },
        assistant(
            "m2",
            {"type": "text", "text": "Fixed the race in conftest."},
            "2026-01-02T10:01:09Z",
            usage={
                "input_tokens": 3,
                "output_tokens": 7,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        ),
        {
            "type": "system",
            "subtype": "turn_duration",
            "timestamp": "2026-01-02T10:01:10Z",
            "durationMs": 10000,
        },
        {"type": "system", "subtype": "compact_boundary", "timestamp": "2026-01-02T11:00:00Z"},
        user(
            "This session is being continued from a previous conversation. Summary: …",
            "2026-01-02T11:00:01Z",
            isCompactSummary=True,
        ),
        user("[Request interrupted by user]", "2026-01-02T11:00:05Z"),
        {"type": "brand-new-record", "sessionId": "s1"},
    ]
    path = write_jsonl(tmp_path / "s1.jsonl", records, tail='{"type":"user","message":{"ro')
    result = claude_code.parse_wire(path)
    turns = result.turns
    assert [(t.origin, t.user_text[:14]) for t in turns] == [
        ("command", "/clear"),
        ("command_output", "<local-command"),
        ("user", "Fix the flaky "),
        ("compaction", "This session i"),
        ("interrupt", "[Request inter"),
    ]
    fix = turns[2]
    assert fix.user_media == [{"type": "image", "url_prefix": "image/png", "bytes_b64": 4}]
    assert (len(fix.steps), fix.thinking, fix.final_text) == (
        2,
        "look at it",
        "Fixed the race in conftest.",
    )
    assert [(c.name, c.args, c.status, c.duration_s) for c in fix.tool_calls] == [
        ("Bash", {"command": "pytest -x"}, "error", 3.0)
    ]
    assert fix.usage == {
        "input_other": 13,
        "output": 12,
        "input_cache_read": 100,
        "input_cache_creation": 1,
    }
    assert (fix.end, fix.status) == ("ended", "completed")
    assert turns[3].compactions == 1 and turns[3].status == "interrupted"
    lines = path.read_bytes().splitlines(keepends=True)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    assert [t.byte_start for t in turns] == [
        starts[2],
        starts[3],
        starts[4],
        starts[12],
        starts[13],
    ]
    assert [(p.line, p.kind) for p in result.problems] == [(16, "truncated_tail")]
    assert result.unknown_types == {"brand-new-record": 1}
    kinds = [
        refine_turn(t, RefineContext("w", "claude-code", "s1", "main", "r"))["kinds"] for t in turns
    ]
    assert "command" in kinds[0] and "command" in kinds[1]
    assert {"compaction", "continuation"} <= set(kinds[3]) and "interrupted" in kinds[4]


def test_claude_discovery_uses_the_first_cwd_and_archives_offloaded_tool_outputs(
    tmp_path: Path,
) -> None:
    project = tmp_path / ".claude" / "projects" / "-home-a-proj"
    write_jsonl(
        project / "s1.jsonl",
        [
            {"type": "file-history-snapshot", "snapshot": {}},
            user("go", "2026-01-02T10:00:00Z", gitBranch="feat-x"),
            {**user("more", "2026-01-02T10:05:00Z"), "cwd": "/home/a/proj/apps/web"},
        ],
    )
    (project / "s1" / "tool-results").mkdir(parents=True)
    (project / "s1" / "tool-results" / "toolu_1.txt").write_text("big output", encoding="utf-8")
    [session] = discover(tmp_path / ".claude").sessions
    assert (session.session_id, session.work_dirs, session.branch) == (
        "s1",
        ["/home/a/proj"],
        "feat-x",
    )
    assert [s.rel for s in session.snapshots] == ["tool-results/toolu_1.txt"]


def test_inline_sidechain_records_nest_under_the_turn(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "s1.jsonl",
        [
            user("research X", "2026-01-02T10:00:00Z"),
            {**user("sub task", "2026-01-02T10:00:01Z"), "isSidechain": True, "agentId": "a1"},
            {
                **assistant("m9", {"type": "text", "text": "sub answer"}, "2026-01-02T10:00:02Z"),
                "isSidechain": True,
                "agentId": "a1",
            },
            assistant("m1", {"type": "text", "text": "done"}, "2026-01-02T10:00:03Z"),
        ],
    )
    [turn] = claude_code.parse_wire(path).turns
    assert turn.final_text == "done" and turn.usage["output"] == 5
    assert [(a, [t.final_text for t in r.turns]) for a, r in turn.subagents.items()] == [
        ("sidechain-a1", ["sub answer"])
    ]


# --- Codex CLI ----------------------------------------------------------------------------------


def test_real_codex_rollout_without_turn_context() -> None:
    [path] = list((REAL / "codex" / "openprintkit").glob("*.jsonl"))
    [session] = discover(path).sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "codex",
        "97b66f6c-a160-40e0-bd0f-1fdcbbb9498b",
        ["/home/randy/projects/python-3/OpenPrintKit"],
    )
    result = codex.parse_wire(path)
    [turn] = result.turns
    assert (result.protocol_version, turn.user_text, turn.byte_start) == (
        "0.34.0",
        "continue",
        1000,
    )
    assert len(turn.tool_calls) == 9 and {c.name for c in turn.tool_calls} == {"shell"}
    assert turn.status == "open"  # the prefix stops mid-turn


def test_real_codex_ide_preamble_is_stripped_and_events_are_not_counted_twice() -> None:
    path = REAL / "codex" / "vibecodingtracker" / "test_conversation_oai.jsonl"
    [turn] = codex.parse_wire(path).turns
    assert turn.user_text.startswith("幫我檢查一下 go.mod 裡面 為何 go版本是 1.24?")
    assert "Context from my IDE setup" not in turn.user_text
    items = [json.loads(x) for x in path.read_bytes().splitlines()]
    said = [r["payload"]["message"] for r in items if r["payload"].get("type") == "agent_message"]
    assert turn.assistant_text.count(said[0]) == 1


def test_codex_turns_usage_and_endings(tmp_path: Path) -> None:
    def rec(kind: str, payload: dict[str, Any], sec: int) -> dict[str, Any]:
        return {"timestamp": f"2026-03-18T08:00:{sec:02d}.000Z", "type": kind, "payload": payload}

    def tokens(total: int, last: int) -> dict[str, Any]:
        return {
            "type": "token_count",
            "info": {
                "total_token_usage": {
                    "input_tokens": total,
                    "cached_input_tokens": 0,
                    "output_tokens": 1,
                },
                "last_token_usage": {
                    "input_tokens": last,
                    "cached_input_tokens": last // 2,
                    "output_tokens": 1,
                },
            },
        }

    path = write_jsonl(
        tmp_path / "rollout-2026-03-18T09-00-00-x.jsonl",
        [
            rec("session_meta", {"id": "sid", "cwd": "/w", "cli_version": "0.98.0"}, 0),
            rec("event_msg", {"type": "user_message", "message": "first"}, 1),
            rec(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": "c1",
                    "arguments": '{"command": ["false"]}',
                },
                2,
            ),
            rec(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": '{"output": "", "metadata": {"exit_code": 1}}',
                },
                3,
            ),
            rec("event_msg", tokens(100, 100), 4),
            rec("event_msg", tokens(100, 100), 4),
            rec("event_msg", {"type": "agent_message", "message": "it failed"}, 5),
            rec("event_msg", {"type": "task_complete"}, 6),
            rec("event_msg", {"type": "user_message", "message": "/review"}, 7),
            rec("compacted", {"message": "summary"}, 8),
            rec("event_msg", {"type": "turn_aborted", "reason": "interrupted"}, 9),
        ],
    )
    first, second = codex.parse_wire(path).turns
    assert [c.status for c in first.tool_calls] == ["error"] and first.final_text == "it failed"
    assert first.usage == {
        "input_other": 50,
        "output": 1,
        "input_cache_read": 50,
        "input_cache_creation": 0,
    }
    assert (first.status, second.status, second.origin, second.compactions) == (
        "completed",
        "interrupted",
        "command",
        1,
    )


# --- Gemini CLI ---------------------------------------------------------------------------------


def test_real_gemini_single_json_chat() -> None:
    path = REAL / "gemini" / "json" / "test_conversation_gemini.json"
    [session] = discover(path).sessions
    assert (session.session_id, session.bucket[:10], session.files[0].whole) == (
        "2d9ea14f-1e4e-44f6-8bf5-7a7819cb1cd9",
        "ab14fe397f",
        True,
    )
    [turn] = gemini.parse_wire(path).turns
    assert turn.user_text.startswith("## 任務：將專案描述中的")
    assert (len(turn.steps), turn.usage["output"] > 0, turn.thinking != "") == (13, True, True)


def test_real_gemini_jsonl_chat() -> None:
    [turn] = gemini.parse_wire(REAL / "gemini" / "jsonl" / "test_conversation_gemini.jsonl").turns
    assert turn.user_text.lstrip().startswith("You are an AI agent that brings the power of Gemini")
    assert turn.usage["input_other"] == 13906


def test_gemini_jsonl_last_copy_wins_and_rewind_drops_the_tail(tmp_path: Path) -> None:
    def msg(mid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
        return {
            "id": mid,
            "timestamp": "2026-03-19T14:02:00Z",
            "type": kind,
            "content": content,
            **extra,
        }

    path = write_jsonl(
        tmp_path / "tmp" / "proj" / "chats" / "session-2026-03-19T14-02-abcd1234.jsonl",
        [
            {
                "sessionId": "abcd1234-0000",
                "projectHash": "f" * 64,
                "startTime": "2026-03-19T14:02:00Z",
            },
            msg("u1", "user", [{"text": "first question"}]),
            msg("g1", "gemini", "partial"),
            {"$set": {"lastUpdated": "2026-03-19T14:03:00Z"}},
            msg(
                "g1",
                "gemini",
                "complete answer",
                toolCalls=[
                    {
                        "id": "c1",
                        "name": "read_file",
                        "args": {"path": "a.py"},
                        "status": "error",
                        "result": [],
                    }
                ],
            ),
            msg("u2", "user", "second"),
            msg("g2", "gemini", "gone"),
            {"$rewindTo": "u2"},
            msg("u3", "user", "third"),
            "{not json",
        ],
    )
    result = gemini.parse_wire(path)
    assert [(t.index, t.user_text, t.final_text) for t in result.turns] == [
        (0, "first question", ""),
        (1, "third", ""),
    ]
    assert [(c.name, c.status) for c in result.turns[0].tool_calls] == [("read_file", "error")]
    assert result.turns[0].assistant_text == "complete answer"
    assert [(p.line, p.kind) for p in result.problems] == [(10, "malformed")]
    [session] = discover(tmp_path / "tmp").sessions
    assert (session.session_id, session.bucket) == ("abcd1234-0000", "f" * 64)


# --- the copied real files hold nothing secret ----------------------------------------------------

_EMAIL = re.compile(
    r"(?<!git)@[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z]{2,}"
)  # git@host remotes are not people


def test_real_fixtures_hold_no_credentials() -> None:
    files = [p for p in REAL.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")]
    assert len(files) == 12
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        assert redact(text)[1] == 0, p.name
        assert [
            m.group(0) for m in _EMAIL.finditer(text) if not m.group(0).startswith("@github.com")
        ] == [], p.name


def test_the_reader_registry_imports_no_reader() -> None:
    import ast

    from archive_mcp.refiners import READERS

    tree = ast.parse(
        (Path(__file__).parent.parent / "refiners" / "sources.py").read_text(encoding="utf-8")
    )
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported.isdisjoint(
        {
            "kimi_cli",
            "kimi_code",
            "claude_code",
            "codex",
            "gemini",
            "qwen_code",
            "aider",
            "opencode",
            "pi",
            "copilot",
            "continue_cli",
            "droid",
            "kilo",
            "cursor",
            "cursor_cli",
            "vscode_chat",
            "cline",
            "goose",
            "crush",
        }
    )
    assert sorted(READERS) == [
        "aider",
        "claude-code",
        "cline",
        "codex",
        "continue",
        "copilot",
        "copilot-chat",
        "crush",
        "cursor",
        "cursor-cli",
        "droid",
        "gemini",
        "goose",
        "kilo",
        "kilo-code",
        "kimi",
        "kimi-code",
        "opencode",
        "pi",
        "qwen-code",
        "roo-code",
    ]
