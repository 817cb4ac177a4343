"""The readers on genuine logs of Claude Code 2.1 and the Kimi products, driven by
bench/cli_scenarios (tests/fixtures/real-cli, README there): several turns, a file edit, a
failing command, a resumed session, a subagent, a compaction and an interruption where the CLI
allows them."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from archive_mcp.refiners import (
    claude_code,
    codex,
    discover,
    gemini,
    kimi_cli,
    kimi_code,
    opencode,
    qwen_code,
)
from archive_mcp.refiners.model import Turn
from archive_mcp.refiners.refine import files_of

from archive_mcp import Archive

REAL_CLI = Path(__file__).parent / "fixtures" / "real-cli"
ECHO, FAIL = "echo hi", "ls /nonexistent-archive-mcp-dir"


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    return [
        (
            c.name,
            str(c.args.get("command") or c.args.get("file_path") or c.args.get("path")),
            c.status,
        )
        for c in turn.tool_calls
    ]


def answer(prompt: str) -> str:
    return f"Done with: {prompt} SCRIPTED-ANSWER"


def in_time_order(turns: list[Turn]) -> bool:
    stamps = [t.started_at for t in turns]
    return all(
        a is not None and b is not None and a < b for a, b in zip(stamps, stamps[1:], strict=False)
    )


def usage(calls: int, cached: int = 20, fresh: int = 100) -> dict[str, int]:
    return {
        "input_other": fresh * calls,
        "input_cache_read": cached * calls,
        "output": 7 * calls,
        "input_cache_creation": 0,
    }


CLAUDE = REAL_CLI / "claude-2.1.197" / "dot-claude"
CLAUDE_ID = "5e1f0c2a-7b3d-4c8e-9a61-2f4d8b0c6e13"
CLAUDE_WD = "/home/dev/work/claude"


def test_claude_code_2_1_scenario_turns_calls_files_usage_and_order() -> None:
    for where in (CLAUDE, CLAUDE / "projects"):
        [session] = discover(where).sessions
        assert (session.source, session.session_id, session.work_dirs) == (
            "claude-code",
            CLAUDE_ID,
            [CLAUDE_WD],
        )
    main, sub = session.files
    assert (main.agent, sub.agent, sub.rel) == (
        "main",
        "agent-ad15e8f7408df0bd4",
        "subagents/agent-ad15e8f7408df0bd4.jsonl",
    )
    assert [s.rel for s in session.snapshots] == ["subagents/agent-ad15e8f7408df0bd4.meta.json"]
    result = claude_code.parse_wire(main.path)
    # `last-prompt` and `mode` (new in 2.1) are known bookkeeping records
    assert (result.protocol_version, result.unknown_types, result.problems) == ("2.1.197", {}, [])
    turns = result.turns
    assert [(t.index, t.user_text[:40], t.origin, t.status) for t in turns] == [
        (0, "Run echo hi in the shell", "user", "completed"),
        (1, "Create hello.txt saying hi", "user", "completed"),
        (2, "Now run a command that will fail", "user", "completed"),
        (3, "Use a subagent to print hi", "user", "completed"),
        # 2.1 writes the summary before the command that asked for it: archived in time order
        (4, "/compact", "command", "completed"),
        (5, "This session is being continued from a p", "compaction", "completed"),
        (6, "<local-command-stdout>Compacted (ctrl+o ", "command_output", "completed"),
        (7, "Now sleep in the shell", "user", "interrupted"),
        (8, "[Request interrupted by user for tool us", "interrupt", "completed"),
        (9, "Run echo hi in the shell again", "user", "completed"),
    ]
    assert in_time_order(turns)
    assert [calls(t) for t in turns] == [
        [("Bash", ECHO, "ok")],
        [("Write", f"{CLAUDE_WD}/hello.txt", "ok")],
        [("Bash", FAIL, "error")],
        [("Agent", "None", "ok")],
        [],
        [],
        [],
        [("Bash", "sleep 30", "error")],  # rejected when interrupted (SIGINT)
        [],
        [("Bash", ECHO, "ok")],
    ]
    assert files_of(turns[1], turns[1].final_text, turns[1].tool_calls) == [
        f"{CLAUDE_WD}/hello.txt"
    ]
    finals = [t.final_text for t in turns]
    assert finals[:4] == [answer(t.user_text) for t in turns[:4]]
    assert finals[4:9] == ["", "", "", "", ""]  # the "No response requested." filler is no answer
    assert finals[9] == answer("Run echo hi in the shell again")
    two = usage(2)
    # the compaction's model call is in no log record; the interrupted turn made one call
    assert [t.usage for t in turns] == [two] * 4 + [usage(0)] * 3 + [usage(1), usage(0), two]
    assert [t.compactions for t in turns] == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert "hi" in str(turns[0].tool_calls[0].output_text)
    # the subagent's own log: its turn runs between the Agent call and its result
    [sub_turn] = claude_code.parse_wire(sub.path).turns
    assert (sub_turn.user_text, calls(sub_turn), sub_turn.status, sub_turn.usage) == (
        "Run echo hi in the shell",
        [("Bash", ECHO, "ok")],
        "completed",
        two,
    )
    agent_call = turns[3].tool_calls[0]
    assert agent_call.called_at < sub_turn.started_at < sub_turn.last_at < agent_call.result_at


def test_claude_code_2_1_resumes_at_the_compact_command_and_reads_the_summary_again() -> None:
    [session] = discover(CLAUDE).sessions
    path = session.files[0].path
    whole = claude_code.parse_wire(path)
    command, summary = whole.turns[4], whole.turns[5]
    assert command.byte_start == summary.byte_start  # the command's turn went in before it
    again = claude_code.parse_wire(path, command.byte_start, 1, command.index)
    assert [(t.index, t.origin) for t in again.turns[:3]] == [
        (4, "command"),
        (5, "compaction"),
        (6, "command_output"),
    ]
    assert [calls(t) for t in again.turns] == [calls(t) for t in whole.turns[4:]]


KIMI = REAL_CLI / "kimi-1.52.0" / "dot-kimi"


def test_kimi_cli_1_52_scenario_through_an_openai_compatible_provider() -> None:
    [session] = discover(KIMI).sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "kimi",
        "9711b419-f6b6-4030-b5c8-ebe06cd2dbf4",
        ["/home/dev/work/kimi"],
    )
    result = kimi_cli.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("1.10", {}, [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "/compact",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in turns] == prompts
    assert in_time_order(turns)
    assert [calls(t) for t in turns] == [
        [("Shell", ECHO, "ok")],
        [("WriteFile", "/home/dev/work/kimi/hello.txt", "ok")],
        [("Shell", FAIL, "error")],
        [],
        [("Shell", ECHO, "ok")],
    ]
    assert [t.status for t in turns] == ["completed"] * 5
    assert [t.compactions for t in turns] == [0, 0, 0, 1, 0]
    # the second process (resumed with --continue) starts at the third prompt
    assert turns[2].started_at - turns[1].last_at > 0
    assert [t.final_text for t in turns] == [
        answer(prompts[0]),
        answer(prompts[1]),
        answer(prompts[2]),
        "",  # "The context has been compacted." is the CLI's, outside any step
        answer(prompts[4]),
    ]
    no_cache = usage(2, cached=0, fresh=120)
    assert [t.usage for t in turns] == [no_cache] * 3 + [usage(0)] + [no_cache]


KIMI_CODE = REAL_CLI / "kimi-code-2.1.0" / "dot-kimi-code"


def test_kimi_code_2_1_scenario_and_its_new_record_families() -> None:
    [session] = discover(KIMI_CODE).sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "kimi-code",
        "session_2ef9a476-d707-4fc8-8659-a2717eb92369",
        ["/home/dev/work/kimi-code"],  # state.json's `cwd` (2.1), no session index needed
    )
    result = kimi_code.parse_wire(session.files[0].path)
    # agent.*, plugin.* and file_history.* (new in 2.1) are known and repeat what is read
    assert (result.protocol_version, result.unknown_types, result.problems) == ("1.5", {}, [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        "/compact",  # prompt mode sends it to the model as text: no compaction
    ]
    assert [t.user_text for t in turns] == prompts
    assert in_time_order(turns)
    assert [calls(t) for t in turns] == [
        [("Bash", ECHO, "ok")],
        [("Write", "/home/dev/work/kimi-code/hello.txt", "ok")],
        [("Bash", FAIL, "error")],
        [("Agent", "None", "error")],  # the scripted subagent type is not one Kimi Code has
        [("Bash", ECHO, "ok")],
    ]
    assert "subagent error" in str(turns[3].tool_calls[0].output_text)
    assert [t.status for t in turns] == ["completed"] * 5
    assert [t.final_text for t in turns] == [answer(p) for p in prompts]
    assert [t.usage for t in turns] == [usage(2, cached=0, fresh=120)] * 5


CODEX = REAL_CLI / "codex-0.171.0-scenario" / "sessions"
CODEX_ID, CODEX_SUB = "01a23ba0-9e15-77e3-84ea-dfc2224e5dcd", "01a23ba0-fc9d-7c13-b6af-198329bb489d"


def shell(turn: Turn) -> list[tuple[str, str, str]]:
    return [
        (c.name, str(c.args.get("cmd") or c.args.get("message")), c.status) for c in turn.tool_calls
    ]


def test_codex_0_171_scenario_edit_subagent_compaction_interruption() -> None:
    [session] = discover(CODEX).sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "codex",
        CODEX_ID,
        ["/rec/user/proj/codex"],
    )
    # the subagent's own rollout (source.subagent.thread_spawn) is a file of its parent session
    main, sub = session.files
    assert (main.agent, sub.agent) == ("main", CODEX_SUB)
    assert sub.rel.startswith("subagents/rollout-") and sub.rel.endswith(f"{CODEX_SUB}.jsonl")
    result = codex.parse_wire(main.path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("0.171.0", {}, [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        "Run echo hi in the shell after the compaction",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in turns] == prompts
    assert in_time_order(turns)
    assert [shell(t) for t in turns] == [
        [("exec_command", ECHO, "ok")],
        # no apply_patch is offered to an unknown model: the edit goes through the shell
        [("exec_command", "printf 'hi\\n' > hello.txt", "ok")],
        [("exec_command", FAIL, "error")],
        [("spawn_agent", "Run echo hi in the shell", "ok"), ("wait_agent", "None", "ok")],
        # after the compaction the scripted model reads the handoff (it names a failing ls)
        [("exec_command", ECHO, "ok"), ("exec_command", FAIL, "error")],
        [("exec_command", "sleep 60", "error")],  # SIGINT: aborted by user
        [("exec_command", ECHO, "ok")],
    ]
    assert turns[5].tool_calls[0].output_text.endswith("aborted by user")
    assert [t.status for t in turns] == ["completed"] * 5 + ["interrupted", "completed"]
    assert [t.compactions for t in turns] == [0, 0, 0, 0, 1, 0, 0]
    # the compaction's summary is the model's, not the turn's answer
    assert turns[4].synthetic_text.startswith("<analysis>The user ran shell commands.")
    assert "SCRIPTED-SUMMARY" not in turns[4].final_text
    finals = [t.final_text for t in turns]
    assert finals[:4] + finals[6:] == [answer(p) for p in prompts[:4]] + [answer(prompts[6])]
    assert finals[5] == ""
    # model calls a turn: 2 (a shell call, the answer), 3 with the subagent (spawn, wait); the
    # compacted turn 4, one of them the compaction's and one reporting a full context (5000)
    assert [t.usage for t in turns[:4] + turns[5:]] == [usage(n) for n in (2, 2, 2, 3, 1, 2)]
    full = 5000 - 120
    assert turns[4].usage == {
        "input_other": 4 * 100 + full,
        "input_cache_read": 4 * 20,
        "output": 4 * 7,
        "input_cache_creation": 0,
    }
    # the spawn_agent result names the subagent's thread: its rollout, run inside the call
    spawn = turns[3].tool_calls[0]
    [(agent, run)] = turns[3].subagents.items()
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (CODEX_SUB, None, spawn.id)
    [sub_turn] = codex.parse_wire(sub.path).turns
    assert (sub_turn.user_text, shell(sub_turn), sub_turn.status, sub_turn.usage) == (
        "Run echo hi in the shell",
        [("exec_command", ECHO, "ok")],
        "completed",
        usage(2),
    )
    wait = turns[3].tool_calls[1]
    assert spawn.called_at < sub_turn.started_at < sub_turn.last_at < wait.result_at
    # given alone (its parent's rollout not there), it is still its parent session's subagent
    [alone] = discover(sub.path).sessions
    assert (alone.session_id, [(f.agent, f.rel) for f in alone.files]) == (
        CODEX_ID,
        [(CODEX_SUB, sub.rel)],
    )


def _rollouts(folder: Path, *names: str) -> Path:
    """A Codex home holding the scenario's rollouts whose names end with one of `names`."""
    day = folder / ".codex" / "sessions" / "2026" / "12" / "03"
    day.mkdir(parents=True)
    for f in sorted((CODEX / "2026" / "12" / "03").glob("rollout-*.jsonl")):
        if f.stem.endswith(names):
            shutil.copy(f, day / f.name)
    return folder / ".codex"


def test_codex_subagent_without_its_parent_rollout_is_archived_under_the_parent_session(
    tmp_path: Path,
) -> None:
    home = _rollouts(tmp_path, CODEX_SUB)  # the parent's rollout is elsewhere (not yet copied)
    found = discover(home)
    [session] = found.sessions
    assert (session.session_id, session.work_dirs, found.skipped) == (
        CODEX_ID,
        ["/rec/user/proj/codex"],
        [],
    )
    [sub] = session.files
    assert (sub.agent, sub.rel) == (CODEX_SUB, f"subagents/{sub.path.name}")
    archive = Archive(tmp_path / "archive", embedder=None)
    first = archive.ingest(home)
    assert (first.sessions, first.turns_added) == (1, 1)
    # the parent turns up later: one session, the subagent's turn under its own agent, once
    for f in (CODEX / "2026" / "12" / "03").glob(f"*{CODEX_ID}.jsonl"):
        shutil.copy(f, home / "sessions" / "2026" / "12" / "03" / f.name)
    second = archive.ingest(home)
    assert (second.sessions, second.turns_added) == (1, 7)
    turns = archive.turns("all").collect()
    assert sorted(set(turns["session_id"])) == [CODEX_ID]
    assert sorted(Counter(turns["agent"]).items()) == [(CODEX_SUB, 1), ("main", 7)]


def test_codex_subagent_of_a_subagent_joins_the_top_session(tmp_path: Path) -> None:
    """A depth-2 subagent names a subagent as its parent thread: it joins that one's session."""
    home = _rollouts(tmp_path, CODEX_ID, CODEX_SUB)
    day = home / "sessions" / "2026" / "12" / "03"
    [child] = day.glob(f"*{CODEX_SUB}.jsonl")
    grand = "01a23ba0-ffff-7000-8000-000000000002"
    lines = child.read_text(encoding="utf-8").splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["id"] = grand
    meta["payload"]["parent_thread_id"] = CODEX_SUB
    meta["payload"]["source"]["subagent"]["thread_spawn"].update(
        parent_thread_id=CODEX_SUB, depth=2
    )
    deeper = day / f"rollout-2026-12-03T11-19-10-{grand}.jsonl"
    deeper.write_text(json.dumps(meta) + "\n" + "".join(lines[1:]), encoding="utf-8")
    for where in (home, day, home / "sessions"):
        [session] = discover(where).sessions
        assert (session.session_id, [f.agent for f in session.files]) == (
            CODEX_ID,
            ["main", CODEX_SUB, grand],
        )
    # without the rollouts above it, it is kept under the top thread it can reach
    child.unlink()
    [session] = discover(deeper).sessions
    assert (session.session_id, [f.agent for f in session.files]) == (CODEX_SUB, [grand])


GEMINI = REAL_CLI / "gemini-0.61.0-scenario" / "dot-gemini"
GEMINI_ID, GEMINI_SUB = (
    "f4da05ef-2511-44aa-bc17-ce5b7a2a5ee0",
    "f09c80a8-837c-46ac-b549-82df1508d192",
)


def test_gemini_0_61_scenario_compression_stubs_subagent_interruption() -> None:
    found = discover(GEMINI)
    # each resume in a later minute left a start-up stub with the chat's id and no message:
    # passed over, and not reported (it holds nothing the chat lacks)
    chats = sorted(p.name for p in (GEMINI / "tmp" / "gemini" / "chats").glob("session-*"))
    assert chats == [f"session-2026-12-03T11-{minute}-f4da05ef.jsonl" for minute in range(17, 22)]
    assert found.skipped == []
    [session] = found.sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "gemini",
        GEMINI_ID,
        ["/rec/user/proj/gemini"],
    )
    main, sub = session.files
    assert (main.rel, sub.agent, sub.rel) == (
        "session-2026-12-03T11-17-f4da05ef.jsonl",
        GEMINI_SUB,
        f"{GEMINI_ID}/{GEMINI_SUB}.jsonl",
    )
    result = gemini.parse_wire(main.path)
    assert (result.unknown_types, result.problems) == ({}, [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        "Run echo hi in the shell after the compression",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in turns] == prompts
    assert in_time_order(turns)
    assert [calls(t) for t in turns] == [
        [("run_shell_command", ECHO, "ok")],
        [("write_file", "/rec/user/proj/gemini/hello.txt", "ok")],
        [("run_shell_command", FAIL, "error")],
        [("invoke_agent", "None", "ok")],
        [("run_shell_command", ECHO, "ok")],
        [],  # SIGINT during `sleep 60`: the call was never written
        [("run_shell_command", ECHO, "ok")],
    ]
    assert turns[3].tool_calls[0].args["agent_name"] == "generalist"
    # the invoke_agent record names the subagent's chat (`agentId`): linked to the call, as
    # Codex's spawn_agent and Claude Code's Agent calls are; no other turn has a subagent
    invoke = turns[3].tool_calls[0]
    [(agent, run)] = turns[3].subagents.items()
    assert (agent, run.subagent_type, run.parent_tool_call_id, run.turns) == (
        GEMINI_SUB,
        "generalist",
        invoke.id,
        [],  # its turns are in its own file, archived as that agent's
    )
    assert [bool(t.subagents) for t in turns] == [False, False, False, True, False, False, False]
    # no end marker: a turn ends when the next starts; the SIGINT left a model call, no step
    assert [t.status for t in turns] == ["completed"] * 5 + ["interrupted", "open"]
    # the compression ran as the fifth prompt was sent: a `$set` of the rewritten history
    assert [t.compactions for t in turns] == [0, 0, 0, 0, 1, 0, 0]
    assert turns[4].synthetic_text.startswith("<analysis>The user ran shell commands.")
    finals = [t.final_text for t in turns]
    assert finals == [answer(p) for p in prompts[:5]] + ["", answer(prompts[6])]
    # the compression's model calls are in no record; the interrupted turn made one call
    assert [t.usage for t in turns] == [usage(2)] * 5 + [usage(1), usage(2)]
    # the subagent's chat (kind "subagent"): it ends by complete_task, inside the turn
    [sub_turn] = gemini.parse_wire(sub.path).turns
    assert (sub_turn.user_text, calls(sub_turn), sub_turn.usage) == (
        "Run echo hi in the shell",
        [("run_shell_command", ECHO, "ok"), ("complete_task", "None", "ok")],
        usage(2),
    )
    assert turns[3].started_at < sub_turn.started_at < sub_turn.last_at < turns[3].last_at


def test_gemini_start_up_stubs_are_not_reported_at_any_ingest(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    shutil.copytree(GEMINI, home)
    chats = home / "tmp" / "gemini" / "chats"
    (chats / "session-2026-12-03T11-22-00000000.jsonl").write_text("not json\n", encoding="utf-8")
    archive = Archive(tmp_path / "archive", embedder=None)
    first, again = archive.ingest(home), archive.ingest(home)
    # the four stubs lose nothing: never listed; a file that is no chat still is, every time
    bad = (str(chats / "session-2026-12-03T11-22-00000000.jsonl"), "not a Gemini CLI chat")
    for report in (first, again):
        assert [(s.path, s.reason.split(" (")[0]) for s in report.skipped] == [bad]
    assert (first.sessions, first.turns_added, again.turns_added) == (1, 8, 0)
    turns = archive.turns("all").collect()
    assert sorted(Counter(turns["agent"]).items()) == [(GEMINI_SUB, 1), ("main", 7)]


OPENCODE = REAL_CLI / "opencode-1.18.33-scenario" / "opencode.sql"
OPENCODE_SUB = "ses_dc455a3d8ffeWJGiPSAFG3X4n0"


def test_opencode_1_18_scenario_compaction_subagent_interruption(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the exports go here
    data = tmp_path / "opencode"
    data.mkdir()
    con = sqlite3.connect(data / "opencode.db")
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(OPENCODE.read_text(encoding="utf-8"))
    con.close()
    [session] = discover(data).sessions
    assert (session.source, session.session_id, session.work_dirs) == (
        "opencode",
        "ses_dc45847a9ffexuUM2Q46rc27y0",
        ["/rec/user/proj/opencode"],
    )
    main, sub = session.files
    assert (main.agent, sub.agent, sub.rel) == (
        "main",
        OPENCODE_SUB,
        f"subagents/{OPENCODE_SUB}.jsonl",
    )
    result = opencode.parse_wire(main.path)
    assert (result.protocol_version, result.problems) == ("1.18.33", [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        "Run echo hi in the shell after the compaction",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    # the compaction's user messages (a `compaction` part, the synthetic "Continue …") are none
    assert [t.user_text for t in turns] == [f'"{p}"' for p in prompts]  # quoted, as kept
    assert in_time_order(turns)
    assert [calls(t) for t in turns] == [
        [("bash", ECHO, "ok")],
        [("write", "None", "ok")],
        [("bash", FAIL, "error")],
        [("task", "None", "ok")],
        [("bash", ECHO, "ok"), ("bash", ECHO, "ok")],  # the second after "Continue"
        [("bash", "sleep 60", "no_result")],  # SIGINT: the part stays `running`
        [("bash", ECHO, "ok")],
    ]
    assert turns[1].tool_calls[0].args["filePath"] == "/rec/user/proj/opencode/hello.txt"
    assert [t.status for t in turns] == ["completed"] * 5 + ["interrupted", "completed"]
    assert [t.compactions for t in turns] == [0, 0, 0, 0, 1, 0, 0]
    assert turns[4].synthetic_text.startswith("<analysis>The user ran shell commands.")
    finals = [t.final_text for t in turns]
    assert finals[:4] + finals[6:] == [f'Done with: "{p}" SCRIPTED-ANSWER' for p in prompts[:4]] + [
        f'Done with: "{prompts[6]}" SCRIPTED-ANSWER'
    ]
    assert finals[4].startswith("Done with: Continue if you have next steps")
    assert finals[5] == ""
    two = usage(2, cached=0, fresh=120)
    # the compacted turn: the call that filled the context (5000), the summary's, two more
    compacted = {"input_other": 5000 + 3 * 120, "input_cache_read": 0, "output": 4 * 7}
    assert [t.usage for t in turns] == [two] * 4 + [
        {**compacted, "input_cache_creation": 0},
        usage(0),  # the interrupted reply was never completed: no tokens
        two,
    ]
    [(agent, run)] = turns[3].subagents.items()
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (
        OPENCODE_SUB,
        "general",
        turns[3].tool_calls[0].id,
    )
    [sub_turn] = opencode.parse_wire(sub.path).turns
    assert (sub_turn.user_text, calls(sub_turn), sub_turn.usage) == (
        "Run echo hi in the shell",
        [("bash", ECHO, "ok")],
        two,
    )
    assert turns[3].started_at < sub_turn.started_at < sub_turn.last_at < turns[3].last_at


QWEN = REAL_CLI / "qwen-0.15.10-scenario" / "dot-qwen"


def test_qwen_code_0_15_scenario_compress_cancelled_call_subagent() -> None:
    [session] = discover(QWEN).sessions
    assert (session.source, session.session_id, session.bucket, session.work_dirs) == (
        "qwen-code",
        "765dcfef-1741-4bc0-aa1b-b5abbb32635a",
        "-rec-user-proj-qwen",
        ["/rec/user/proj/qwen"],
    )
    result = qwen_code.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("0.15.10", {}, [])
    turns = result.turns
    prompts = [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        # `qwen -p "/compress"` ran here: no prompt record, no turn
        "Now wait a minute in the shell",  # Qwen Code refuses `sleep 60`: a Python wait
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in turns] == prompts
    assert in_time_order(turns)
    wait = "python3 -c 'import time; time.sleep(60)'"
    assert [calls(t) for t in turns] == [
        [("run_shell_command", ECHO, "ok")],
        [("write_file", "/rec/user/proj/qwen/hello.txt", "ok")],
        [("run_shell_command", FAIL, "error")],
        [("agent", "None", "ok")],
        [("run_shell_command", wait, "error")],  # cancelled by SIGINT
        [("run_shell_command", ECHO, "ok")],
    ]
    assert "User cancelled tool execution" in turns[4].tool_calls[0].output_text
    assert [t.status for t in turns] == ["completed"] * 4 + ["interrupted", "open"]
    # the compression's model call, known from its telemetry only, after the fourth turn
    assert [t.compactions for t in turns] == [0, 0, 0, 1, 0, 0]
    assert turns[3].synthetic_text.startswith("<analysis>The user ran shell commands.")
    finals = [t.final_text for t in turns]
    assert finals == [answer(p) for p in prompts[:4]] + ["", answer(prompts[5])]
    call = usage(1, cached=0, fresh=120)
    two, three = usage(2, cached=0, fresh=120), usage(3, cached=0, fresh=120)
    assert [t.usage for t in turns] == [two, two, two, three, call, two]
    # the subagent, rebuilt from the telemetry between the `agent` call and its result
    [(agent, run)] = turns[3].subagents.items()
    agent_call = turns[3].tool_calls[0]
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (
        f"agent-{agent_call.id}",
        "general-purpose",
        agent_call.id,
    )
    [sub] = run.turns
    assert (sub.user_text, calls(sub), sub.usage, sub.final_text) == (
        "Run echo hi in the shell",
        [("run_shell_command", ECHO, "ok")],
        two,
        answer("Run echo hi in the shell"),
    )
    assert turns[3].started_at < sub.started_at < sub.last_at < turns[3].last_at
