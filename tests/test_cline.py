"""Cline: the CLI 3's genuine session (tests/fixtures/real-cli/cline-3.0.65, README there) read
exactly; the VS Code extensions' task format (Cline, Roo Code, Kilo Code: tests/fixtures/
cline-tasks, built from the documented format, docs/formats.md) read the same way; one project
worked on by Cline, Roo Code and Pi archived as one workspace."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from archive_mcp.refiners import cline, cline_tasks, discover
from archive_mcp.refiners.cline_turns import ClineTurns
from archive_mcp.refiners.model import ToolCall, Turn
from archive_mcp.workspaces import workspace_id
from test_new_agents import copy_as

from archive_mcp import Archive
from archive_mcp.live import changed_files, scan

FIXTURES = Path(__file__).parent / "fixtures"
CLINE = FIXTURES / "real-cli" / "cline-3.0.65" / "dot-cline"
TASKS = FIXTURES / "cline-tasks"
PI = FIXTURES / "real-cli" / "pi-0.73.1" / "dot-pi"
SID = "1796439758053_671bh"
AGENT = "agent_1796439786279_pckodf"
TWO_CALLS = {"input_other": 240, "output": 14, "input_cache_read": 0, "input_cache_creation": 0}
ONE_CALL = {"input_other": 120, "output": 7, "input_cache_read": 0, "input_cache_creation": 0}
PROMPTS = [
    "Run echo hi in the shell",
    "Create hello.txt saying hi",
    "Now run a command that will fail",
    "Use a subagent to print hi",
    "Run echo hi in the shell, if I allow it",
    "Now sleep in the shell",
    "Run echo hi in the shell again",
]
PROJECT = "/home/alice/projects/webapp"


def answer(prompt: str) -> str:
    return f"Done with: {prompt} SCRIPTED-ANSWER"


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    return [(c.name, json.dumps(c.args), c.status) for c in turn.tool_calls]


def shell(cmd: str) -> str:
    return json.dumps({"commands": [cmd]})


def test_cline_3_session_turns_calls_usage_subagent_denial_and_interruption() -> None:
    [session] = discover(CLINE).sessions
    assert (session.source, session.session_id, session.work_dirs, session.title) == (
        "cline",
        SID,
        ["/rec/user/proj/cline"],
        "Run echo hi in the shell",
    )
    assert [(f.agent, f.rel, f.whole) for f in session.files] == [
        ("main", f"{SID}.messages.json", True),
        (AGENT, f"{AGENT}.messages.json", True),
    ]
    assert [f.rel for f in session.snapshots] == [f"{SID}.json"]
    result = cline.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.problems) == ("3.0.65", [])
    assert [t.user_text for t in result.turns] == PROMPTS
    assert [calls(t) for t in result.turns] == [
        [("run_commands", shell("echo hi"), "ok")],
        [
            (
                "editor",
                json.dumps({"path": "/rec/user/proj/cline/hello.txt", "new_text": "hi\n"}),
                "ok",
            )
        ],
        [("run_commands", shell("ls /nonexistent-archive-mcp-dir"), "error")],
        [
            (
                "spawn_agent",
                json.dumps(
                    {"systemPrompt": "You run shell commands.", "task": "Run echo hi in the shell"}
                ),
                "ok",
            )
        ],
        [("run_commands", shell("echo hi"), "rejected")],
        [("run_commands", shell("sleep 60"), "error")],
        [("run_commands", shell("echo hi"), "ok")],
    ]
    turns = result.turns
    assert [t.final_text for t in turns] == [
        answer(p) if p != "Now sleep in the shell" else "" for p in PROMPTS
    ]
    assert [t.status for t in turns] == ["completed"] * 5 + ["interrupted", "completed"]
    assert [t.usage for t in turns] == [TWO_CALLS] * 5 + [ONE_CALL, TWO_CALLS]
    assert [t.answers for t in turns] == [[], [], [], [], ["[rejected run_commands]"], [], []]
    assert turns[3].tool_calls[0].output_text == answer("Run echo hi in the shell")
    assert turns[5].tool_calls[0].output_text == "Command failed: Command was aborted"
    assert turns[2].tool_calls[0].output_text.startswith("[Command exited with code 2]")
    [run] = turns[3].subagents.values()
    assert (run.agent_id, run.subagent_type, run.parent_tool_call_id) == (
        AGENT,
        "spawn_agent",
        "call_e7a9d2cd9e6d499eac84",
    )
    assert turns[0].started_at == 1796439758.982
    [sub] = cline.parse_wire(session.files[1].path).turns
    assert (sub.user_text, calls(sub), sub.final_text, sub.usage) == (
        "Run echo hi in the shell",
        [("run_commands", shell("echo hi"), "ok")],
        answer("Run echo hi in the shell"),
        TWO_CALLS,
    )


EXTENSIONS = [
    ("saoudrizwan.claude-dev", "cline", "1796400000000", "/rec/user/proj/cline-vscode"),
    ("rooveterinaryinc.roo-cline", "roo-code", "0f5e6a3c-roo-task", "/rec/user/proj/roo"),
    ("kilocode.kilo-code", "kilo-code", "7c1d2e4f-kilo-task", "/rec/user/proj/kilo-vscode"),
]


BASIC = {  # a basic compaction's first message (cline/cline sdk fixtures' shape)
    "role": "user",
    "content": [
        {"type": "text", "text": "Run echo hi in the shell"},
        {
            "type": "text",
            "text": "<SYSTEM_NOTICE>\nEarlier context was compacted. Ran echo hi.\n</SYSTEM_NOTICE>",
        },
    ],
    "metadata": {"kind": "compaction", "reason": "manual_compaction", "messagesRemoved": 10},
}
AGENTIC = {  # an agentic compaction's summary message
    "role": "user",
    "content": [{"type": "text", "text": "Context summary:\n\n## Goal\nRun commands."}],
    "metadata": {
        "kind": "compaction_summary",
        "summary": "## Goal\nRun commands.",
        "tokensBefore": 9,
    },
}


@pytest.mark.parametrize(
    ("count", "first", "summary", "cut"),
    [
        (12, BASIC, "Earlier context was compacted. Ran echo hi.", False),  # between two turns
        (11, AGENTIC, "## Goal\nRun commands.", True),  # mid-turn, before the model's answer
    ],
)
def test_a_cline_3_compaction_is_a_compaction_turn_after_the_messages_it_replaced(
    tmp_path: Path, count: int, first: dict[str, Any], summary: str, cut: bool
) -> None:
    home = tmp_path / "dot-cline"
    shutil.copytree(CLINE, home)
    folder = home / "data" / "sessions" / SID
    state = {"version": 1, "updated_at": "2026-12-05T10:00:00.000Z", "agent": "lead"}
    state |= {"sessionId": SID, "source_message_count": count, "messages": [first]}
    (folder / f"{SID}.compaction.json").write_text(json.dumps(state), encoding="utf-8")
    [session] = discover(home).sessions
    assert [f.rel for f in session.snapshots] == [f"{SID}.json", f"{SID}.compaction.json"]
    turns = cline.parse_wire(session.files[0].path).turns
    assert [(t.index, t.origin, t.user_text) for t in turns] == [
        (0, "user", PROMPTS[0]),
        (1, "user", PROMPTS[1]),
        (2, "user", PROMPTS[2]),
        (3, "compaction", summary),
        *((k + 1, "user", p) for k, p in enumerate(PROMPTS[3:], 3)),
    ]
    third, compaction = turns[2], turns[3]
    assert (compaction.compactions, compaction.started_at, compaction.status) == (
        1,
        1796464800.0,
        "completed",
    )
    assert calls(third) == [
        ("run_commands", shell("ls /nonexistent-archive-mcp-dir"), "error")
    ]  # its result kept
    # the model's answer after the compaction is the compaction turn's when it cut in
    assert (third.final_text, compaction.final_text) == (
        ("", answer(PROMPTS[2])) if cut else (answer(PROMPTS[2]), "")
    )
    assert third.status == "completed"
    archive = Archive(embedder=None)
    archive.ingest(home)
    kinds = archive.turns("all").filter(pl.col("agent") == "main").sort("turn").collect()["kinds"]
    assert ["compaction" in k for k in kinds.to_list()] == [False] * 3 + [True] + [False] * 4


def task_messages(*texts: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"role": r, "content": [{"type": "text", "text": t}]} for r, t in texts]


@pytest.mark.parametrize(
    ("tool", "result", "kept"),
    [
        ("summarize_task", "This session is being continued from a previous conversation", True),
        (
            "condense",
            "The user has accepted the condensed conversation summary you generated.",
            True,
        ),
        (
            "condense",
            "The user provided feedback on the summary:\n<feedback>\nshorter\n</feedback>",
            False,
        ),
    ],
)
def test_an_extension_task_s_condense_or_summarize_task_summary_is_a_compaction_turn(
    tmp_path: Path, tool: str, result: str, kept: bool
) -> None:
    task = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1764900000000"
    task.mkdir(parents=True)
    env = "<environment_details>\n# Current Working Directory (/w/p) Files\n</environment_details>"
    messages = task_messages(
        ("user", f"<task>\nFix the bug\n</task>\n{env}"),
        ("assistant", "<execute_command>\n<command>pytest</command>\n</execute_command>"),
        ("user", "[execute_command for 'pytest'] Result:\n1 failed"),
        ("assistant", f"<{tool}>\n<context>Fixing test_b; pytest fails.</context>\n</{tool}>"),
        ("user", f"[{tool}] Result:\n{result}"),
        ("assistant", "<attempt_completion>\n<result>Fixed.</result>\n</attempt_completion>"),
    )
    (task / "api_conversation_history.json").write_text(json.dumps(messages), encoding="utf-8")
    [session] = discover(tmp_path / "saoudrizwan.claude-dev").sessions
    turns = cline.parse_wire(session.files[0].path).turns
    if not kept:  # the user asked for another summary: no compaction
        assert [(t.origin, t.user_text, t.final_text) for t in turns] == [
            ("user", "Fix the bug", "Fixed.")
        ]
        return
    assert [(t.origin, t.user_text, t.final_text, t.status, t.compactions) for t in turns] == [
        ("user", "Fix the bug", "", "completed", 0),
        ("compaction", "Fixing test_b; pytest fails.", "Fixed.", "completed", 1),
    ]
    assert [(c.name, c.status) for c in turns[0].tool_calls] == [
        ("execute_command", "ok"),
        (tool, "ok"),
    ]


@pytest.mark.parametrize(("folder", "source", "task", "cwd"), EXTENSIONS)
def test_an_extension_task_reads_turns_calls_answers_and_usage(
    folder: str, source: str, task: str, cwd: str
) -> None:
    [session] = discover(TASKS / folder).sessions
    assert (session.source, session.session_id, session.work_dirs) == (source, task, [cwd])
    result = cline.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.problems) == ("task", [])
    first, second = result.turns
    assert (first.user_text, second.user_text) == (
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
    )
    assert (first.final_text, second.final_text) == (
        "The command printed hi.",
        "I saved notes/hello.txt and did not commit it.",
    )
    assert first.thinking == "The user wants echo hi run."
    assert [
        (c.name, c.args.get("path") or c.args.get("command"), c.status)
        for c in first.tool_calls + second.tool_calls
    ] == [
        ("execute_command", "echo hi", "ok"),
        ("write_to_file", "hello.txt", "rejected"),
        ("write_to_file", "notes/hello.txt", "ok"),
        ("ask_followup_question", None, "ok"),
        ("read_file", "missing.txt", "error"),
    ]
    assert second.answers == [
        "[feedback on write_to_file] put it in notes/ instead",
        "[answer] Commit it too? → No",
    ]
    assert [t.status for t in result.turns] == ["completed", "completed"]
    # each model call's tokens from ui_messages.json, in the order of the replies (k * 100 in)
    assert first.usage == {
        "input_other": 100 + 200,
        "output": 10 + 20,
        "input_cache_read": 100,
        "input_cache_creation": 10,
    }
    assert second.usage["input_other"] == sum(100 * k for k in range(3, 8))


def test_the_tasks_of_the_three_extensions_are_told_apart_by_their_folder() -> None:
    found = discover(TASKS)
    assert sorted((s.source, s.session_id) for s in found.sessions) == [
        ("cline", "1796400000000"),
        ("kilo-code", "7c1d2e4f-kilo-task"),
        ("roo-code", "0f5e6a3c-roo-task"),
    ]
    assert cline.discover_as("roo-code", TASKS / "saoudrizwan.claude-dev") is None


def test_one_project_worked_on_by_cline_roo_code_and_pi_is_one_workspace(tmp_path: Path) -> None:
    homes = [
        copy_as(CLINE, tmp_path / "cline", "/rec/user/proj/cline", PROJECT),
        copy_as(
            TASKS / "rooveterinaryinc.roo-cline",
            tmp_path / "rooveterinaryinc.roo-cline",
            "/rec/user/proj/roo",
            PROJECT,
        ),
        copy_as(PI, tmp_path / "pi", "/rec/user/proj/pi", PROJECT),
    ]
    archive = Archive(embedder=None)
    report = archive.ingest(*homes)
    assert (report.sessions, report.skipped) == (3, [])
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(PROJECT),
        [PROJECT],
        ["cline", "pi", "roo-code"],
    )
    per_source = archive.turns(ws.id).collect().group_by("source", "agent").len()
    assert sorted(per_source.rows()) == [
        ("cline", AGENT, 1),
        ("cline", "main", 7),
        ("pi", "main", 6),
        ("roo-code", "main", 2),
    ]
    rejected = archive.tool_calls(ws.id).filter(pl.col("status") == "rejected").collect()
    sessions = archive.sessions(ws.id).collect()
    source = dict(zip(sessions["session_id"], sessions["source"], strict=True))
    assert sorted(source[s] for s in rejected["session_id"]) == ["cline", "roo-code"]
    assert archive.ingest(*homes).files_changed == 0  # idempotent


def test_a_rewritten_cline_session_is_followed_and_a_broken_one_is_reported(
    tmp_path: Path,
) -> None:
    home = copy_as(CLINE, tmp_path / ".cline", "/rec/user/proj/cline", PROJECT)
    [doc] = home.rglob(f"{SID}.messages.json")
    whole = json.loads(doc.read_text(encoding="utf-8"))
    doc.write_text(json.dumps(dict(whole, messages=whole["messages"][:8])), encoding="utf-8")
    before = scan([home])
    archive = Archive(embedder=None)
    assert archive.ingest(home).turns_added == 2 + 1  # two turns and the subagent's one
    doc.write_text(json.dumps(whole), encoding="utf-8")  # Cline rewrites the whole document
    assert changed_files(before, scan([home])) == [str(doc)]
    assert archive.ingest(home).files_changed == 1
    texts = archive.turns("all").filter(pl.col("agent") == "main").sort("turn").collect()
    joined = [p + ("\n[rejected run_commands]" if "allow" in p else "") for p in PROMPTS]
    assert texts["user_text"].to_list() == joined  # the user's decision joins the prompt
    doc.write_text('{"messages": [', encoding="utf-8")
    report = archive.ingest(home)
    assert [(Path(s.path).name, s.reason.split(":")[0], s.line) for s in report.skipped] == [
        (doc.name, "malformed", 1)
    ]  # reported; the turns archived before are kept
    assert archive.turns("all").filter(pl.col("agent") == "main").collect().height == 7


def test_ingest_without_paths_reads_each_editor_folder_once_with_its_extensions_tasks(
    tmp_path: Path, monkeypatch: Any
) -> None:
    home = tmp_path / "user-home"  # $HOME in the tests
    shutil.copytree(CLINE, home / ".cline")
    user = home / ".config" / "Code" / "User"
    roo = user / "globalStorage" / "rooveterinaryinc.roo-cline"
    shutil.copytree(TASKS / "rooveterinaryinc.roo-cline", roo)
    kilo = home / ".config" / "Windsurf" / "User" / "globalStorage" / "kilocode.kilo-code"
    shutil.copytree(TASKS / "kilocode.kilo-code", kilo)  # Windsurf: only its extensions are read
    reads: Counter[Path] = Counter()
    task = cline_tasks.task

    def counted(folder: Path, source: str, label: str, history: dict[str, str], found: Any) -> None:
        reads[folder] += 1
        task(folder, source, label, history, found)

    monkeypatch.setattr(cline_tasks, "task", counted)
    report = Archive(embedder=None).ingest()
    assert [Path(r["path"]) for r in report.roots if r["found"]] == [
        user,  # Code's `User` folder, read whole: its chats and its extensions' tasks
        home / ".cline",
        kilo,
    ]
    assert reads == {
        roo / "tasks" / "0f5e6a3c-roo-task": 1,
        kilo / "tasks" / "7c1d2e4f-kilo-task": 1,
    }
    assert (report.sessions, report.skipped) == (3, [])
    assert sorted(s.source for s in discover(user).sessions) == ["roo-code"]
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "elsewhere"))
    roots = {Path(r["path"]) for r in Archive(embedder=None).ingest().roots}
    assert tmp_path / "elsewhere" in roots and home / ".cline" not in roots


def test_a_cline_reply_is_a_step_of_the_turn_with_its_calls_waiting_its_time_and_tokens() -> None:
    built = ClineTurns()
    built.open("fix it", 1.0)
    read, edit = ToolCall("c1", "read_file"), ToolCall("c2", "replace_in_file")
    first = built.reply("reading", "hm", [read], 2.0, {"tokensIn": 5, "outputTokens": 2})
    second = built.reply("editing", "", [edit], None, {"inputTokens": 1, "cacheReads": 4})
    turn = built.turns[0]
    assert [(s.n, s.text, s.think, s.tool_calls) for s in (first, second)] == [
        (1, "reading", "hm", [read]),
        (2, "editing", "", [edit]),
    ]
    assert turn.steps == [first, second] and built.calls == {"c1": read, "c2": edit}
    assert turn.last_at == 2.0  # a reply without a time keeps the turn's last
    assert turn.usage == {
        "input_other": 6,
        "output": 2,
        "input_cache_read": 4,
        "input_cache_creation": 0,
    }
