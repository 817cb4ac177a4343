"""The readers on genuine logs of the current CLIs (tests/fixtures/real-cli, README there): a
two-prompt session, a passing and a failing shell call, resumed once."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from archive_mcp.refiners import READERS, aider, codex, discover, gemini, opencode, qwen_code
from archive_mcp.refiners.lines import Record
from archive_mcp.refiners.model import Turn

REAL_CLI = Path(__file__).parent / "fixtures" / "real-cli"
PROMPTS = ["Run echo hi in the shell", "Now run a command that will fail"]
# every model call of the scripted model: 120 input tokens (20 cached), 7 output; two per turn
TWO_CALLS = {"input_other": 200, "input_cache_read": 40, "output": 14, "input_cache_creation": 0}


def only(folder: Path, pattern: str) -> Path:
    [path] = sorted(folder.rglob(pattern))
    return path


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    return [
        (c.name, str(c.args.get("command") or c.args.get("cmd")), c.status) for c in turn.tool_calls
    ]


def in_time_order(turns: list[Turn]) -> bool:
    stamps = [t.started_at for t in turns]
    return all(
        a is not None and b is not None and a < b for a, b in zip(stamps, stamps[1:], strict=False)
    )


def test_codex_0_171_rollout_opens_turns_at_user_message_items() -> None:
    path = only(REAL_CLI / "codex-0.171.0", "rollout-*.jsonl")
    [session] = discover(REAL_CLI / "codex-0.171.0" / "sessions").sessions
    assert (session.source, session.session_id) == ("codex", "01a23579-6365-7713-a839-bc5eb61b2e8d")
    assert session.work_dirs == ["/tmp/ar-readers/s/work/codex"]
    result = codex.parse_wire(path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("0.171.0", {}, [])
    assert [t.user_text for t in result.turns] == [*PROMPTS, "Now sleep in the shell"]
    assert in_time_order(result.turns)
    first, second, third = result.turns
    assert calls(first) == [("exec_command", "echo hi", "ok")]
    assert calls(second) == [("exec_command", "ls /nonexistent-archive-mcp-dir", "error")]
    # the third run was interrupted (SIGINT) during `sleep 30`: turn_aborted, exit code -1
    assert calls(third) == [("exec_command", "sleep 30", "error")]
    assert third.tool_calls[0].output_text.endswith("aborted by user")
    assert [t.status for t in result.turns] == ["completed", "completed", "interrupted"]
    assert [t.final_text for t in result.turns] == [
        f"Done with: {p} SCRIPTED-ANSWER" for p in PROMPTS
    ] + [""]
    one_call = {"input_other": 100, "input_cache_read": 20, "output": 7, "input_cache_creation": 0}
    assert [t.usage for t in result.turns] == [TWO_CALLS, TWO_CALLS, one_call]
    assert "hi" in first.tool_calls[0].output_text
    assert first.tool_calls[0].duration_s is not None


def test_codex_exit_code_of_a_command_item_marks_its_call_failed() -> None:
    builder = codex.CodexTurnBuilder()
    item = {"type": "CommandExecution", "id": "c1", "exit_code": 1, "status": "failed"}
    records = [
        {"type": "session_meta", "payload": {"cli_version": "0.171.0"}},
        {
            "type": "event_msg",
            "payload": {
                "type": "item_completed",
                "item": {"type": "UserMessage", "content": [{"type": "text", "text": "go"}]},
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c1",
                "arguments": "{}",
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "no exit line"},
        },
        {"type": "event_msg", "payload": {"type": "item_completed", "item": item}},
    ]
    for n, rec in enumerate(records):
        builder.feed(Record(n + 1, n, n + 1, rec))
    [turn] = builder.turns
    assert (turn.user_text, calls(turn)) == ("go", [("exec_command", "None", "error")])


def test_codex_user_message_event_and_item_open_one_turn() -> None:
    builder = codex.CodexTurnBuilder()
    text = [{"type": "text", "text": "go"}]
    for n, rec in enumerate(
        [
            {"type": "event_msg", "payload": {"type": "user_message", "message": "go"}},
            {
                "type": "event_msg",
                "payload": {
                    "type": "item_completed",
                    "item": {"type": "UserMessage", "content": text},
                },
            },
        ]
    ):
        builder.feed(Record(n + 1, n, n + 1, rec))
    assert [t.user_text for t in builder.turns] == ["go"]


def test_gemini_0_61_tool_results_are_not_turns_and_the_short_name_finds_the_cwd() -> None:
    home = REAL_CLI / "gemini-0.61.0" / "dot-gemini"
    path = only(home, "session-*.jsonl")
    for where in (home, path.parent, path):  # the home, its chats folder, the chat file
        [session] = discover(where).sessions
        assert (session.source, session.session_id) == (
            "gemini",
            "7c226aec-5286-444b-99d4-d9a6820dfc00",
        )
        assert session.work_dirs == ["/tmp/ar-readers/s/work/gemini"]
        assert session.bucket == "8b9897e7581ec7bc647792a9faaf98fd84705795762c8144282d2b6d7e7e3b65"
    result = gemini.parse_wire(path)
    assert (result.unknown_types, result.problems) == ({}, [])
    assert [t.user_text for t in result.turns] == PROMPTS
    assert in_time_order(result.turns)
    first, second = result.turns
    assert calls(first) == [("run_shell_command", "echo hi", "ok")]
    assert calls(second) == [("run_shell_command", "ls /nonexistent-archive-mcp-dir", "error")]
    assert [t.status for t in result.turns] == ["completed", "open"]  # no end marker: still open
    assert second.final_text == "Done with: Now run a command that will fail SCRIPTED-ANSWER"
    assert [t.usage for t in result.turns] == [TWO_CALLS, TWO_CALLS]


def test_gemini_a_lone_function_response_fills_a_missing_result() -> None:
    def msg(mid: str, kind: str, content: object, **extra: object) -> tuple[dict, int, int]:
        return ({"id": mid, "type": kind, "content": content, **extra}, 0, 1)

    response = {"id": "t1", "name": "run_shell_command", "response": {"output": "Exit Code: 0"}}
    turns = gemini.build_turns(
        [
            msg("u1", "user", [{"text": "go"}]),
            msg("g1", "gemini", "", toolCalls=[{"id": "t1", "name": "run_shell_command"}]),
            msg("u2", "user", [{"functionResponse": response}]),
            msg("g2", "gemini", "done"),
        ]
    )
    [turn] = turns
    assert (calls(turn), turn.tool_calls[0].output_text) == (
        [("run_shell_command", "None", "ok")],
        "Exit Code: 0",
    )


def test_qwen_code_0_15_chat_turns_calls_usage_and_its_project_folder() -> None:
    home = REAL_CLI / "qwen-0.15.10" / "dot-qwen"
    path = only(home, "*.jsonl")
    for where in (home, home / "projects", path.parent.parent, path.parent, path):
        [session] = discover(where).sessions
        assert (session.source, session.session_id, session.bucket) == (
            "qwen-code",
            "ee3aaffc-d643-474f-a207-b6a01e2ae0d3",
            "-tmp-ar-readers-s-work-qwen",
        )
        assert session.work_dirs == ["/tmp/ar-readers/s/work/qwen"]
    result = qwen_code.parse_wire(path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("0.15.10", {}, [])
    prompts = [*PROMPTS, "Use a subagent to print hi"]
    assert [t.user_text for t in result.turns] == prompts
    assert in_time_order(result.turns)
    first, second, third = result.turns
    assert calls(first) == [("run_shell_command", "echo hi", "ok")]
    assert calls(second) == [("run_shell_command", "ls /nonexistent-archive-mcp-dir", "error")]
    assert [(c.name, c.status) for c in third.tool_calls] == [("agent", "ok")]
    assert [t.status for t in result.turns] == ["completed", "completed", "open"]
    assert [t.final_text for t in result.turns] == [
        f"Done with: {p} SCRIPTED-ANSWER" for p in prompts
    ]
    no_cache = {"input_other": 240, "input_cache_read": 0, "output": 14, "input_cache_creation": 0}
    assert [t.usage for t in result.turns] == [no_cache] * 3
    assert first.tool_calls[0].duration_s is not None and first.tool_calls[0].duration_s > 0
    # the subagent, rebuilt from the telemetry between the `agent` call and its result
    [(agent, run)] = third.subagents.items()
    call = third.tool_calls[0]
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (
        f"agent-{call.id}",
        "general-purpose",
        call.id,
    )
    [sub] = run.turns
    assert (sub.user_text, calls(sub), sub.status, sub.usage) == (
        "Run echo hi in the shell",
        [("run_shell_command", "echo hi", "ok")],
        "completed",
        no_cache,
    )
    assert sub.final_text == "Done with: Run echo hi in the shell SCRIPTED-ANSWER"
    assert third.started_at < sub.started_at < sub.last_at < third.last_at


def test_qwen_code_resumes_from_the_open_turn() -> None:
    path = only(REAL_CLI / "qwen-0.15.10", "*.jsonl")
    whole = qwen_code.parse_wire(path)
    again = qwen_code.parse_wire(path, whole.resume_offset, whole.resume_line, whole.resume_index)
    assert [t.user_text for t in again.turns] == ["Use a subagent to print hi"]
    assert calls(again.turns[0]) == calls(whole.turns[2])
    assert list(again.turns[0].subagents) == list(whole.turns[2].subagents)


def test_aider_0_86_history_turns_edits_runs_and_times() -> None:
    repo = REAL_CLI / "aider-0.86.2" / "repo"
    path = repo / ".aider.chat.history.md"
    for where in (repo, path):
        [session] = discover(where).sessions
        assert (session.source, session.work_dirs) == ("aider", [str(repo.resolve())])
        assert [f.rel for f in session.snapshots] == [".aider.input.history"]
    result = aider.parse_wire(path)
    assert (result.protocol_version, result.problems) == ("0.86.2", [])
    assert [t.user_text for t in result.turns] == [
        "Create hello.txt saying hi",
        "/run ls /nonexistent-archive-mcp-dir",
        "What did the command print?",
    ]
    assert [t.origin for t in result.turns] == ["user", "command", "user"]
    assert in_time_order(result.turns)
    edit, run, answer = result.turns
    assert [(c.name, c.args, c.status) for c in edit.tool_calls] == [
        ("edit", {"path": "hello.txt"}, "ok")
    ]
    assert edit.final_text.startswith("I will create hello.txt.")
    assert "Commit 35575b8" in edit.synthetic_text and "ASSISTANT:" not in edit.final_text
    # the history does not say how a /run ended: the call has no result
    assert calls(run) == [("run", "ls /nonexistent-archive-mcp-dir", "no_result")]
    assert "Aider v0.86.2" not in run.synthetic_text  # the next run's banner is no turn's
    assert answer.final_text.startswith("Done with: What did the command print?")
    assert [t.status for t in result.turns] == ["completed", "completed", "open"]
    assert [t.usage["input_other"] for t in result.turns] == [2400, 0, 2500]
    assert [t.usage["output"] for t in result.turns] == [22, 0, 24]
    again = aider.parse_wire(path, result.resume_offset, result.resume_line, result.resume_index)
    assert [(t.index, t.user_text) for t in again.turns] == [(2, "What did the command print?")]


def test_aider_history_edge_cases_read_by_blocks(tmp_path: Path) -> None:
    """Read by blocks, the history means what it meant line by line: a message that runs across
    a prompt line, a CRLF answer line, a no-break-space blank line, invalid UTF-8, a line that
    only looks like a run's start, an input-history time that cannot be read, an unfinished
    last line."""
    history = tmp_path / ".aider.chat.history.md"
    history.write_bytes(
        b"# aider chat started at 2026-12-02 06:46:53\n"
        b"> Aider v0.86.2  \n> banner line  \n"
        b"#### first line  \n#### second line\n"
        b"\n"
        b"answer one\r\n"
        b"> Commit abc multi\n"
        b"line two of the message\n"
        b"#### /run ls /x\n"
        b"still the message  \n"
        b"\xc2\xa0\n"
        b"text after \xff bytes\n"
        b"> Tokens: 1.5k sent, 20 received.  \n"
        b"> Applied edit to a b.py  \n"
        b"# aider chat started at not a time\n"
        b"> Aider v0.87.0\n"
        b"#### last"
    )
    (tmp_path / ".aider.input.history").write_bytes(
        b"# 2026-12-02 06:46:55.1\n+first line\n+second line\n# bad\n+/run ls /x\n"
    )
    result = aider.parse_wire(history)
    assert (result.protocol_version, result.complete_offset) == ("0.87.0", 341)
    assert (result.resume_offset, result.resume_line, result.resume_index) == (169, 10, 1)
    first, run = result.turns
    local = datetime.fromisoformat  # Aider writes local times
    assert (first.user_text, first.started_at, first.end, first.byte_start, first.byte_end) == (
        "first line\nsecond line",
        local("2026-12-02 06:46:55.1").timestamp(),
        "superseded",
        78,
        169,
    )
    assert [s.text for s in first.steps] == ["answer one\r\n"]
    assert first.synthetic_text == "Commit abc multi\nline two of the message\n"
    # the message went on past the prompt line; "# bad" is no time: the run's start instead
    assert (run.user_text, run.origin, run.started_at) == (
        "/run ls /x",
        "command",
        local("2026-12-02 06:46:53").timestamp(),
    )
    assert [
        (s.text, [(c.name, c.arguments, c.status) for c in s.tool_calls]) for s in run.steps
    ] == [
        ("", [("run", '{"command": "ls /x"}', "no_result")]),
        ("text after \ufffd bytes\n", []),
        ("", [("edit", '{"path": "a b.py"}', "ok")]),
        ("# aider chat started at not a time\n", []),
    ]
    assert run.synthetic_text == (
        "still the message\nTokens: 1.5k sent, 20 received.\nApplied edit to a b.py\n"
        "Aider v0.87.0\n"
    )
    assert (run.usage["input_other"], run.usage["output"]) == (1500, 20)


def test_aider_usage_line_whose_digits_make_no_count_is_kept_as_text(tmp_path: Path) -> None:
    """`1.2.3k` or 400 digits in a `> Tokens:` line: no usage, the turn and the line kept (the
    whole parse raised ValueError/OverflowError before)."""
    history = tmp_path / ".aider.chat.history.md"
    huge = "9" * 400
    history.write_text(
        "#### hi\n\n> Tokens: 1.2.3k sent, 5 received.  \n"
        f"> Tokens: {huge} sent, 7 received.  \n> Tokens: 2k sent, 3 received.  \n",
        encoding="utf-8",
    )
    [turn] = aider.parse_wire(history).turns
    assert (turn.usage["input_other"], turn.usage["output"]) == (2000, 3)
    assert turn.synthetic_text == (
        f"Tokens: 1.2.3k sent, 5 received.\nTokens: {huge} sent, 7 received.\n"
        "Tokens: 2k sent, 3 received.\n"
    )


def test_opencode_1_18_database_read_only_into_turns(tmp_path: Path, monkeypatch: Any) -> None:
    import sqlite3
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = tmp_path / "opencode"
    data.mkdir()
    con = sqlite3.connect(data / "opencode.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript((REAL_CLI / "opencode-1.18.33" / "opencode.sql").read_text(encoding="utf-8"))
    # OpenCode is running (its connection open: the -wal and -shm files exist)
    before = sorted(p.name for p in data.iterdir()), (data / "opencode.db").read_bytes()
    [session] = discover(data).sessions
    after = sorted(p.name for p in data.iterdir()), (data / "opencode.db").read_bytes()
    assert after == before  # nothing written
    con.execute(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes)"
        " VALUES ('p2', '/x', 0, 0, '[]')"
    )  # and OpenCode still writes
    con.commit()
    con.close()
    assert (session.source, session.session_id, session.work_dirs) == (
        "opencode",
        "ses_dca6cf916ffeIbCrW56Nq31yNx",
        ["/tmp/ar-readers/s/work/opencode"],
    )
    child = "ses_dca6c67baffe4N7pq0wb9had6C"  # the subagent's session: archived with its parent
    main, sub = session.files
    assert (main.agent, sub.agent, sub.rel) == ("main", child, f"subagents/{child}.jsonl")
    assert main.whole and sub.whole and main.path.is_relative_to(tmp_path)
    assert discover(data / "opencode.db").sessions[0].files[0].path == main.path
    result = opencode.parse_wire(main.path)
    assert (result.protocol_version, result.problems) == ("1.18.33", [])
    prompts = [*PROMPTS, "Use a subagent to print hi"]
    assert [t.user_text for t in result.turns] == [f'"{p}"' for p in prompts]  # quoted, as kept
    assert in_time_order(result.turns)
    first, second, third = result.turns
    assert calls(first) == [("bash", "echo hi", "ok")]
    assert calls(second) == [("bash", "ls /nonexistent-archive-mcp-dir", "error")]
    assert [(c.name, c.status) for c in third.tool_calls] == [("task", "ok")]
    [(agent, run)] = third.subagents.items()
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (
        child,
        "general",
        third.tool_calls[0].id,
    )
    assert [t.status for t in result.turns] == ["completed"] * 3
    assert second.final_text == 'Done with: "Now run a command that will fail" SCRIPTED-ANSWER'
    no_cache = {"input_other": 240, "input_cache_read": 0, "output": 14, "input_cache_creation": 0}
    assert [t.usage for t in result.turns] == [no_cache] * 3
    assert all(c.duration_s and c.duration_s > 0 for t in result.turns for c in t.tool_calls)
    [sub_turn] = opencode.parse_wire(sub.path).turns
    assert (sub_turn.user_text, calls(sub_turn)) == (
        "Run echo hi in the shell",
        [("bash", "echo hi", "ok")],
    )
    assert third.started_at < sub_turn.started_at < third.last_at


def test_every_reader_is_registered() -> None:
    assert {
        "aider",
        "codex",
        "gemini",
        "opencode",
        "qwen-code",
        "pi",
        "copilot",
        "continue",
        "droid",
    } <= set(READERS)


def test_the_genuine_logs_hold_no_credentials() -> None:
    from archive_mcp.refiners.redact import redact

    files = [p for p in REAL_CLI.rglob("*") if p.is_file() and p.name != "README.md"]
    assert len(files) == 39  # Cline 3.0.65: its manifest, messages and a subagent's
    for p in files:
        assert redact(p.read_text(encoding="utf-8"))[1] == 0, p.name
