"""Cursor (editor and CLI) and VS Code's Copilot Chat: sessions built from their documented
formats (tests/fixtures/documented, README there: these products cannot run offline) read
exactly, bad stores and records reported and skipped, and one project worked on by the three
archived as one workspace."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from archive_mcp.refiners import cursor, cursor_cli, discover, vscode, vscode_chat
from archive_mcp.refiners.fields import parse_time
from archive_mcp.refiners.model import Problem, Turn
from archive_mcp.workspaces import workspace_id

from archive_mcp import Archive
from archive_mcp.live import changed_files, scan

DOCUMENTED = Path(__file__).parent / "fixtures" / "documented"
ECHO, FAIL = "echo hi", "ls /nonexistent-archive-mcp-dir"
PROMPTS = [
    "Run echo hi in the shell",
    "Create hello.txt saying hi",
    "Now run a command that will fail",
]
AGAIN, SLEEP = "Run echo hi in the shell again", "Now sleep in the shell"
NONE = {"input_other": 0, "output": 0, "input_cache_read": 0, "input_cache_creation": 0}


def usage(inp: int, out: int) -> dict[str, int]:
    return {"input_other": inp, "output": out, "input_cache_read": 0, "input_cache_creation": 0}


def answer(prompt: str) -> str:
    return f"Done with: {prompt} SCRIPTED-ANSWER"


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    out = []
    for c in turn.tool_calls:
        a = c.args
        arg = a.get("command") or a.get("target_file") or a.get("path") or a.get("filePath")
        out.append((c.name, str(arg), c.status))
    return out


def home(tmp_path: Path, name: str, old: str = "", new: str = "") -> Path:
    """A copy of a documented fixture home with each `.sql` dump built into its SQLite store
    (in WAL mode, as the apps keep them) and the work dir `old` replaced by `new`."""
    dest = tmp_path / name
    shutil.copytree(DOCUMENTED / name, dest)
    for f in sorted(dest.rglob("*")):
        if f.is_file() and old:
            f.write_bytes(f.read_bytes().replace(old.encode(), new.encode()))
        if f.suffix == ".sql":
            con = sqlite3.connect(f.with_suffix(""))
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(f.read_text(encoding="utf-8"))
            con.close()
            f.unlink()
    return dest


@pytest.fixture(autouse=True)
def _exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the stores' exports
    (tmp_path / "tmp").mkdir()


def test_cursor_composer_turns_calls_status_usage_and_its_workspace_folder(tmp_path: Path) -> None:
    user = home(tmp_path, "cursor") / "User"
    vscode = home(tmp_path, "vscode") / "User" / "workspaceStorage"
    chats = user / "workspaceStorage" / "5f1d3c0e9a7b4c2d8e6f1a3b5c7d9e0f" / "chatSessions"
    shutil.copytree(next(vscode.iterdir()) / "chatSessions", chats)  # Cursor keeps VS Code's too
    [session, *chat] = discover(user).sessions  # the composer without a message is no session
    assert [(s.source, s.work_dirs) for s in chat] == [
        ("copilot-chat", ["/rec/user/proj/cursor"])
    ] * 2
    assert (session.source, session.session_id, session.bucket, session.work_dirs) == (
        "cursor",
        "3d0f7a52-6c1e-4b8e-9f2a-7e4c1b9d0a11",
        "5f1d3c0e9a7b4c2d8e6f1a3b5c7d9e0f",
        ["/rec/user/proj/cursor"],
    )
    assert (session.title, [(f.rel, f.whole) for f in session.files]) == (
        "Shell and files",
        [("composer.jsonl", True)],
    )
    result = cursor.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("v10", {}, [])
    assert [t.user_text for t in result.turns] == [*PROMPTS, AGAIN]
    assert [calls(t) for t in result.turns] == [
        [("run_terminal_cmd", ECHO, "ok")],
        [("edit_file", "/rec/user/proj/cursor/hello.txt", "ok")],
        [("run_terminal_cmd", FAIL, "error")],  # status "error"
        [("run_terminal_cmd", ECHO, "rejected")],  # userDecision "rejected"
    ]
    assert [t.final_text for t in result.turns] == [
        *(answer(p) for p in PROMPTS),
        "You declined the command, so I did not run it.",
    ]
    assert [t.status for t in result.turns] == ["completed"] * 4
    assert [t.usage for t in result.turns] == [usage(240, 14)] * 3 + [usage(270, 18)]
    assert result.turns[0].thinking == "The user wants a shell call."
    assert (result.turns[0].started_at, result.turns[0].tool_calls[0].called_at) == (
        1764900001.0,
        1764900002.5,
    )
    assert json.loads(result.turns[2].tool_calls[0].output_text)["output"].startswith("ls: ")


def cursor_db(tmp_path: Path, rows: dict[str, Any]) -> Path:
    user = tmp_path / "Cursor" / "User"
    (user / "globalStorage").mkdir(parents=True)
    con = sqlite3.connect(user / "globalStorage" / "state.vscdb")
    con.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.executemany(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in rows.items()],
    )
    con.commit()
    con.close()
    return user


def test_a_missing_or_broken_cursor_bubble_is_reported_and_the_rest_archived(
    tmp_path: Path,
) -> None:
    heads = [{"bubbleId": b, "type": t} for b, t in (("u1", 1), ("gone", 2), ("bad", 2), ("a1", 2))]
    user = cursor_db(
        tmp_path,
        {
            "composerData:c1": {"_v": 10, "composerId": "c1", "fullConversationHeadersOnly": heads},
            "bubbleId:c1:u1": {"type": 1, "text": "hello"},
            "bubbleId:c1:bad": "{not json",
            "bubbleId:c1:a1": {"type": 2, "text": "hi there"},
        },
    )
    [session] = discover(user).sessions
    assert session.work_dirs == []  # no workspace lists it: archived under the source's bucket
    result = cursor.parse_wire(session.files[0].path)
    assert [(p.line, p.kind, p.error) for p in result.problems] == [
        (3, "bad_record", "ValueError: bubble gone is missing or not JSON"),
        (4, "bad_record", "ValueError: bubble bad is missing or not JSON"),
    ]
    assert [(t.user_text, t.final_text, t.status) for t in result.turns] == [
        ("hello", "hi there", "completed")
    ]
    report = Archive(embedder=None).ingest(user)
    assert (report.sessions, report.turns_added) == (1, 1)
    assert [(s.line, s.reason) for s in report.skipped] == [
        (3, "bad_record: ValueError: bubble gone is missing or not JSON"),
        (4, "bad_record: ValueError: bubble bad is missing or not JSON"),
    ]


def bubbles(cid: str, *specs: tuple[str, int, Any]) -> dict[str, Any]:
    """`bubbleId:` rows of composer `cid`: (bubble id, type, text or toolFormerData)."""
    rows: dict[str, Any] = {}
    for n, (bid, kind, what) in enumerate(specs):
        bubble = {"_v": 3, "type": kind, "createdAt": f"2026-12-05T10:00:{n:02d}Z"}
        bubble.update({"toolFormerData": what} if isinstance(what, dict) else {"text": what})
        rows[f"bubbleId:{cid}:{bid}"] = bubble
    return rows


def heads(*specs: tuple[str, int, Any]) -> list[dict[str, Any]]:
    return [{"bubbleId": b, "type": t} for b, t, _ in specs]


def test_cursor_sub_composers_are_subagents_of_their_turn_and_a_summary_is_a_compaction_turn(
    tmp_path: Path,
) -> None:
    shell = {"name": "run_terminal_cmd", "toolCallId": "t1", "rawArgs": '{"command": "pytest"}'}
    shell |= {"status": "completed", "result": '{"output": "3 passed"}'}
    parent = [("u1", 1, "Run the tests"), ("a1", 2, shell), ("a2", 2, "They pass.")]
    parent += [("u2", 1, "Now tidy up"), ("a3", 2, "Tidied.")]
    scout = [("su1", 1, "Find the test command"), ("sa1", 2, "It is pytest.")]
    alt = [("bu1", 1, "Now tidy up"), ("ba1", 2, "Tidied differently.")]
    summary = {"summary": "Ran the tests: 3 passed.", "truncationLastBubbleIdInclusive": "a2"}
    summary |= {"clientShouldStartSendingFromInclusiveBubbleId": "u2", "includesToolResults": True}
    user = cursor_db(
        tmp_path,
        {
            "composerData:p": {
                "_v": 10,
                "composerId": "p",
                "name": "Tests",
                "status": "completed",
                "fullConversationHeadersOnly": heads(*parent),
                "subComposerIds": ["alt"],
                "subagentComposerIds": ["scout"],
                "latestConversationSummary": {"summary": summary, "lastBubbleId": "a3"},
            },
            # spawned when the parent had two bubbles: in the first turn
            "composerData:scout": {
                "_v": 10,
                "composerId": "scout",
                "status": "completed",
                "subagentInfo": {"parentComposerId": "p", "conversationLengthAtSpawn": 2},
                "fullConversationHeadersOnly": heads(*scout),
            },
            # a Best-of-N sibling the parent lists; it does not say when: the last turn's
            "composerData:alt": {
                "_v": 10,
                "composerId": "alt",
                "status": "completed",
                "isBestOfNSubcomposer": True,
                "fullConversationHeadersOnly": heads(*alt),
            },
            **bubbles("p", *parent),
            **bubbles("scout", *scout),
            **bubbles("alt", *alt),
        },
    )
    [session] = discover(user).sessions  # the sub-composers are no sessions of their own
    assert (session.session_id, session.title) == ("p", "Tests")
    assert [(f.agent, f.rel, f.whole) for f in session.files] == [
        ("main", "composer.jsonl", True),
        ("alt", "subagents/alt.jsonl", True),
        ("scout", "subagents/scout.jsonl", True),
    ]
    result = cursor.parse_wire(session.files[0].path)
    assert (result.problems, result.unknown_types) == ([], {})
    assert [
        (t.index, t.origin, t.user_text, t.final_text, t.status, t.compactions)
        for t in result.turns
    ] == [
        (0, "user", "Run the tests", "They pass.", "completed", 0),
        (1, "compaction", "Ran the tests: 3 passed.", "", "completed", 1),
        (2, "user", "Now tidy up", "Tidied.", "completed", 0),
    ]
    assert result.turns[1].started_at == parse_time("2026-12-05T10:00:02Z")
    assert [
        [(a, r.agent_id, r.subagent_type, r.parent_tool_call_id) for a, r in t.subagents.items()]
        for t in result.turns
    ] == [[("scout", "scout", None, None)], [], [("alt", "alt", "best-of-n", None)]]
    scout_turns = cursor.parse_wire(session.files[2].path).turns
    assert [(t.user_text, t.final_text) for t in scout_turns] == [
        ("Find the test command", "It is pytest.")
    ]
    archive = Archive(embedder=None)
    assert archive.ingest(user).turns_added == 5
    rows = archive.turns("all").sort("agent", "turn").collect()
    assert [
        (r["agent"], r["turn"], "compaction" in r["kinds"]) for r in rows.iter_rows(named=True)
    ] == [
        ("alt", 0, False),
        ("main", 0, False),
        ("main", 1, True),
        ("main", 2, False),
        ("scout", 0, False),
    ]


def test_a_cursor_summary_whose_bubble_is_gone_stays_on_the_last_turn_and_no_sub_composer_is_lost(
    tmp_path: Path,
) -> None:
    talk = [("u1", 1, "hello"), ("a1", 2, "hi")]
    gone = {"summary": {"summary": "Said hello.", "truncationLastBubbleIdInclusive": "old"}}
    user = cursor_db(
        tmp_path,
        {
            "composerData:x": {
                "composerId": "x",
                "fullConversationHeadersOnly": heads(*talk),
                "latestConversationSummary": gone,
                "subComposerIds": ["y"],
            },
            "composerData:y": {
                "composerId": "y",
                "fullConversationHeadersOnly": heads(*talk),
                "subComposerIds": ["x"],
            },
            # spawned by a composer never sent (no bubble): a session of its own
            "composerData:empty": {"composerId": "empty", "fullConversationHeadersOnly": []},
            "composerData:z": {
                "composerId": "z",
                "fullConversationHeadersOnly": heads(*talk),
                "subagentInfo": {"parentComposerId": "empty"},
            },
            **bubbles("x", *talk),
            **bubbles("y", *talk),
            **bubbles("z", *talk),
        },
    )
    found = discover(user)
    assert [(s.session_id, [f.agent for f in s.files]) for s in found.sessions] == [
        ("x", ["main"]),
        ("y", ["main"]),
        ("z", ["main"]),
    ]
    db = user / "globalStorage" / "state.vscdb"
    assert found.skipped == [
        (
            str(db),
            f"sub-session {c}: its parents never reach a top-level session (they loop); "
            "archived as a session of its own",
        )
        for c in ("x", "y")
    ]
    [turn] = cursor.parse_wire(found.sessions[0].files[0].path).turns
    assert (turn.origin, turn.compactions, turn.synthetic_text, turn.status) == (
        "user",
        1,
        "Said hello.",
        "completed",
    )


def test_a_corrupt_or_locked_cursor_store_is_reported_and_vs_code_s_own_store_is_not_cursor(
    tmp_path: Path,
) -> None:
    user = tmp_path / "Cursor" / "User"
    (user / "globalStorage").mkdir(parents=True)
    (user / "globalStorage" / "state.vscdb").write_bytes(b"not a database at all" * 100)
    found = discover(user)
    assert (found.sessions, [why.split(":")[0] for _p, why in found.skipped]) == (
        [],
        ["could not read Cursor's store"],
    )
    vscode = tmp_path / "Code" / "User"
    (vscode / "globalStorage").mkdir(parents=True)
    con = sqlite3.connect(vscode / "globalStorage" / "state.vscdb")
    con.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.close()
    assert cursor.discover(vscode) is None  # VS Code's store has no cursorDiskKV
    locked = cursor_db(tmp_path / "locked", {"composerData:c": {"composerId": "c"}})
    writer = sqlite3.connect(locked / "globalStorage" / "state.vscdb", timeout=0)
    writer.execute("BEGIN EXCLUSIVE")  # Cursor holds a write lock (rollback journal)
    try:
        found = discover(locked)
    finally:
        writer.rollback()
        writer.close()
    assert [why.split(":")[0] for _p, why in found.skipped] == ["could not read Cursor's store"]
    assert discover(locked).skipped == []  # the next ingest reads it


def test_cursor_cli_store_tree_turns_calls_and_work_dir_from_its_md5_folder(tmp_path: Path) -> None:
    dot = home(tmp_path, "cursor-cli") / "dot-cursor"
    [session] = discover(dot).sessions
    work = "/rec/user/proj/cursor-cli"
    assert (session.source, session.session_id, session.bucket, session.work_dirs) == (
        "cursor-cli",
        "7b3e9c1a-2d4f-4e6a-8b0c-1d2e3f4a5b6c",
        workspace_id(work),  # the folder is md5(work dir): the archive's own workspace id
        [work],
    )
    result = cursor_cli.parse_wire(session.files[0].path)
    assert (result.unknown_types, result.problems) == ({}, [])
    assert [t.user_text for t in result.turns] == [*PROMPTS, SLEEP]  # <attached_files> is no turn
    assert [calls(t) for t in result.turns] == [
        [("Shell", ECHO, "ok")],
        [("Write", f"{work}/hello.txt", "ok")],
        [("Shell", FAIL, "error")],
        [("Shell", "sleep 60", "no_result")],
    ]
    assert [t.final_text for t in result.turns] == [*(answer(p) for p in PROMPTS), ""]
    assert [t.status for t in result.turns] == ["completed"] * 3 + ["open"]
    assert [t.usage for t in result.turns] == [NONE] * 4  # the store keeps no usage
    assert (result.turns[0].started_at, result.turns[0].thinking) == (1764900000.0, "Run it.")
    assert result.turns[1].tool_calls[0].output_text == "Wrote contents to hello.txt"


def test_a_cursor_cli_blob_the_tree_names_but_the_store_lacks_is_reported(tmp_path: Path) -> None:
    dot = home(tmp_path, "cursor-cli") / "dot-cursor"
    db = next(dot.rglob("store.db"))
    con = sqlite3.connect(db)
    [bid] = [
        i
        for i, d in con.execute("SELECT id, data FROM blobs")
        if b"<user_query>\\nCreate hello" in d
    ]
    con.execute("DELETE FROM blobs WHERE id = ?", (bid,))
    con.commit()
    con.close()
    [session] = discover(dot).sessions
    result = cursor_cli.parse_wire(session.files[0].path)
    assert [(p.kind, p.error) for p in result.problems] == [
        ("bad_record", f"ValueError: blob {bid} is missing or not JSON")
    ]
    assert [t.user_text for t in result.turns] == [PROMPTS[0], PROMPTS[2], SLEEP]
    (db.parent / "other").mkdir()
    (db.parent / "other" / "store.db").write_bytes(b"garbage" * 200)
    found = discover(dot)
    assert [s.session_id for s in found.sessions] == ["7b3e9c1a-2d4f-4e6a-8b0c-1d2e3f4a5b6c"]


def test_vs_code_chat_json_and_jsonl_sessions_turns_calls_status_usage(tmp_path: Path) -> None:
    user = home(tmp_path, "vscode") / "User"
    sessions = discover(user).sessions
    assert [(s.source, s.session_id, s.bucket, s.work_dirs) for s in sessions] == [
        ("copilot-chat", sid, "0e5c1f2a3b4d5e6f7a8b9c0d1e2f3a4b", ["/rec/user/proj/vscode"])
        for sid in ("c7d1e2f3-a4b5-4c6d-8e9f-0a1b2c3d4e5f", "d8e2f3a4-b5c6-4d7e-9f0a-1b2c3d4e5f60")
    ]
    doc, log = (vscode_chat.parse_wire(s.files[0].path) for s in sessions)
    assert (doc.protocol_version, doc.problems, log.protocol_version, log.problems) == (
        "v3",
        [],
        "v3",
        [],
    )
    assert [t.user_text for t in doc.turns + log.turns] == [*PROMPTS, AGAIN, SLEEP]
    assert [calls(t) for t in doc.turns + log.turns] == [
        [("run_in_terminal", ECHO, "ok")],
        [("copilot_createFile", "/rec/user/proj/vscode/hello.txt", "ok")],
        [("run_in_terminal", FAIL, "error")],  # exit code 2
        [("run_in_terminal", ECHO, "ok")],  # the push with `i` cut the prepared call away
        [("run_in_terminal", "sleep 60", "no_result")],
    ]
    assert [t.final_text for t in doc.turns + log.turns] == [
        answer(PROMPTS[0]),
        answer(PROMPTS[1]),
        "The command failed as expected. " + answer(PROMPTS[2]),
        answer(AGAIN),
        "",
    ]
    assert [t.status for t in doc.turns + log.turns] == ["completed"] * 4 + ["cancelled"]
    assert [t.usage for t in doc.turns + log.turns] == [usage(120, 7)] * 4 + [NONE]
    first = doc.turns[0]
    assert (first.started_at, first.ended_at) == (1764900060.0, 1764900064.0)
    assert doc.turns[1].thinking == "Create the file."
    assert doc.turns[0].tool_calls[0].output_text == "hi"  # toolCallResults


def invocation(cid: str, tool: str, data: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A `toolInvocationSerialized` response part, complete and confirmed."""
    part = {"kind": "toolInvocationSerialized", "toolId": tool, "toolCallId": cid}
    return part | {"isComplete": True, "isConfirmed": True, "toolSpecificData": data} | more


def test_a_copilot_chat_run_subagent_call_is_a_subagent_run_whose_answer_is_the_call_s_result(
    tmp_path: Path,
) -> None:
    grep = {"kind": "input", "rawInput": {"query": "def test_"}}
    shell = {"kind": "terminal", "commandLine": {"original": "pytest -q"}}
    shell |= {
        "terminalCommandState": {"exitCode": 1},
        "terminalCommandOutput": {"text": "1 failed"},
    }
    scout = {"kind": "subagent", "description": "Find the tests", "agentName": "Explore"}
    scout |= {"prompt": "Find the tests and run them", "result": "One test fails: test_b."}
    lost = {"kind": "subagent", "description": "Check the docs", "prompt": "Read the docs"}
    response = [
        {"value": "I will ask a subagent."},
        invocation("call_1", "runSubagent", scout),
        invocation("c2", "copilot_findTextInFiles", grep, subAgentInvocationId="call_1"),
        invocation("c3", "run_in_terminal", shell, subAgentInvocationId="call_1"),
        invocation("call_4", "runSubagent", lost, isComplete=False),  # stopped while it ran
        {"value": "test_b fails."},
    ]
    request = {"requestId": "r1", "timestamp": 1764900000000, "message": {"text": "Run the tests"}}
    request |= {"response": response, "modelState": {"value": 1, "completedAt": 1764900009000}}
    chats = tmp_path / "User" / "workspaceStorage" / "h1" / "chatSessions"
    chats.mkdir(parents=True)
    (chats / "s1.json").write_text(json.dumps({"version": 3, "requests": [request]}), "utf-8")
    [turn] = vscode_chat.parse_wire(chats / "s1.json").turns
    assert [(c.name, c.status, c.output_text) for c in turn.tool_calls] == [
        ("runSubagent", "ok", "One test fails: test_b."),  # the subagent's answer
        ("runSubagent", "no_result", ""),
    ]
    assert (turn.final_text, turn.status) == ("test_b fails.", "completed")
    assert [
        (a, r.subagent_type, r.parent_tool_call_id, len(r.turns)) for a, r in turn.subagents.items()
    ] == [("call_1", "Explore", "call_1", 1), ("call_4", None, "call_4", 1)]
    done, stopped = (r.turns[0] for r in turn.subagents.values())
    assert (done.user_text, done.final_text, done.status, calls(done)) == (
        "Find the tests and run them",
        "One test fails: test_b.",
        "completed",
        [("copilot_findTextInFiles", "None", "ok"), ("run_in_terminal", "pytest -q", "error")],
    )
    assert (stopped.user_text, stopped.final_text, stopped.status) == (
        "Read the docs",
        "",
        "interrupted",  # its request ended first
    )
    archive = Archive(embedder=None)
    assert archive.ingest(tmp_path / "User").turns_added == 3
    rows = archive.turns("all").sort("agent").collect()
    assert rows.select("agent", "turn", "user_text").rows() == [
        ("call_1", 0, "Find the tests and run them"),
        ("call_4", 0, "Read the docs"),
        ("main", 0, "Run the tests"),
    ]


def test_a_bad_vs_code_change_line_is_reported_and_the_rest_replayed(tmp_path: Path) -> None:
    user = home(tmp_path, "vscode") / "User"
    log = next(user.rglob("*.jsonl"))
    lines = log.read_bytes().splitlines(keepends=True)
    bad = [b"{not json\n", b'{"kind": 1, "k": ["requests", 9, "result"], "v": {}}\n']
    log.write_bytes(b"".join(lines[:2] + bad + lines[2:]))
    result = vscode_chat.parse_wire(log)
    assert [(p.line, p.kind) for p in result.problems] == [(3, "malformed"), (4, "malformed")]
    assert [t.user_text for t in result.turns] == [AGAIN, SLEEP]
    broken = next(user.rglob("*.json"))
    broken.write_text('{"version": 3, "requests": [', encoding="utf-8")
    assert [p.kind for p in vscode_chat.parse_wire(broken).problems] == ["malformed"]
    missing = broken.with_name("x.json")
    missing.write_text('{"version": 3}', encoding="utf-8")
    assert [p.error for p in vscode_chat.parse_wire(missing).problems] == [
        "no `requests` list: not a VS Code chat session"
    ]


def _request(rid: str, text: str, at: int) -> dict[str, Any]:
    return {"requestId": rid, "timestamp": at, "message": {"text": text}}


# A change log as the editor appends it: a session, a request, its end, the next request.
CHANGES = [
    json.dumps(c).encode()
    for c in (
        {"kind": 0, "v": {"version": 3, "requests": []}},
        {"kind": 2, "k": ["requests"], "v": [_request("r1", "First question", 1764900000000)]},
        {"kind": 1, "k": ["requests", 0, "modelState"], "v": {"value": 1, "completedAt": 1}},
        {"kind": 2, "k": ["requests"], "v": [_request("r2", "Second question", 1764900300000)]},
    )
]
# the line after `whole` lines cut mid-write: (whole, the bytes of it written, the error it gives)
CUTS = [
    (0, 30, "Expecting ',' delimiter: line 1 column 31 (char 30)"),
    (3, 60, "Unterminated string starting at: line 1 column 58 (char 57)"),
]


def _change_log(path: Path, whole: int, tail: bytes = b"") -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = b"".join(line + b"\n" for line in CHANGES[:whole]) + tail
    path.write_bytes(body)
    return body


@pytest.mark.parametrize(("whole", "cut", "error"), CUTS, ids=["first-line", "fourth-line"])
def test_a_change_log_s_half_written_last_line_is_a_truncated_tail_and_the_lines_before_it_parse(
    tmp_path: Path, whole: int, cut: int, error: str
) -> None:
    log = tmp_path / "chatSessions" / "s1.jsonl"
    complete = _change_log(log, whole)
    before = vscode_chat.parse_wire(log).turns
    _change_log(log, whole, CHANGES[whole][:cut])
    result = vscode_chat.parse_wire(log)
    assert result.problems == [Problem(whole + 1, "truncated_tail", error)]
    assert result.complete_offset == len(complete)
    assert result.turns == before
    assert [(t.user_text, t.status) for t in result.turns] == (
        [("First question", "completed")] if whole else []
    )


@pytest.mark.parametrize(("whole", "cut", "error"), CUTS, ids=["first-line", "fourth-line"])
def test_a_change_log_s_last_line_once_completed_is_taken_in_by_the_next_ingest(
    tmp_path: Path, whole: int, cut: int, error: str
) -> None:
    user = tmp_path / "User"
    log = user / "workspaceStorage" / "h1" / "chatSessions" / "s1.jsonl"
    _change_log(log, whole, CHANGES[whole][:cut])
    archive = Archive(embedder=None)
    report = archive.ingest(user)
    assert [(s.reason, s.line) for s in report.skipped] == [(f"truncated_tail: {error}", whole + 1)]
    kept = ["First question"] if whole else []
    assert report.turns_added == len(kept)
    assert archive.turns("all").collect()["user_text"].to_list() == kept
    _change_log(log, len(CHANGES))
    report = archive.ingest(user)
    assert (report.skipped, report.turns_added) == ([], 2 - len(kept))
    assert archive.turns("all").sort("turn").collect()["user_text"].to_list() == [
        "First question",
        "Second question",
    ]


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (CHANGES[3][:60] + b"\n" + CHANGES[2], CUTS[1][2]),  # a line cut in the middle
        (CHANGES[3][:60] + b"\n", CUTS[1][2]),  # a last line cut, then ended
        (b"not json\n", "Expecting value: line 1 column 1 (char 0)"),
    ],
    ids=["middle", "ended-last", "ended-not-json"],
)
def test_a_change_line_that_does_not_decode_followed_by_a_newline_stays_malformed(
    tmp_path: Path, tail: bytes, error: str
) -> None:
    log = tmp_path / "chatSessions" / "s1.jsonl"
    body = _change_log(log, 2, tail)
    result = vscode_chat.parse_wire(log)
    assert result.problems == [Problem(3, "malformed", error)]
    assert result.complete_offset == len(body)
    assert [t.user_text for t in result.turns] == ["First question"]


def test_a_vs_code_change_log_sets_pushes_cuts_and_deletes_and_reports_a_change_that_does_not_fit() -> (
    None
):
    changes = [
        {"kind": 0, "v": {"requests": [], "title": "a"}},
        {"kind": 2, "k": ["requests"], "v": [{"id": 1}, {"id": 2}]},
        {"kind": 2, "k": ["requests"], "v": [{"id": 3}], "i": 1},
        {"kind": 1, "k": ["requests", 0, "done"], "v": True},
        {"kind": 3, "k": ["title"]},
        {"kind": 2, "k": ["title"], "v": []},
    ]
    problems: list[Problem] = []
    log = b"\n".join(json.dumps(c).encode() for c in changes)
    assert vscode.replay(log, problems) == (
        {"requests": [{"id": 1, "done": True}, {"id": 3}]},
        len(log),
    )
    assert problems == [Problem(6, "malformed", "push onto ['title'] that is not an array")]


def test_the_keys_under_a_prefix_are_read_by_the_rest_of_their_key_with_their_json(
    tmp_path: Path,
) -> None:
    con = sqlite3.connect(tmp_path / "state.vscdb")
    con.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE, value BLOB)")
    rows = [
        ("bubbleId:c1", "{}"),
        ("bubbleId:c1:b1", '{"type": 1}'),
        ("bubbleId:c1:b:2", "[1]"),
        ("bubbleId:c1:b3", "not json"),
        ("bubbleId:c10:b1", "{}"),
        ("bubbleId:c2:b1", "{}"),
    ]
    con.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
    got = vscode.prefixed(con, "cursorDiskKV", "bubbleId:c1:")
    assert got == {"b1": {"type": 1}, "b:2": [1], "b3": None}
    con.close()


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///home/a/my%20app", "/home/a/my app"),
        ("file:///c%3A/Users/a/app", "c:/Users/a/app"),
        ("vscode-remote://wsl%2Bubuntu/home/a/app", "/home/a/app"),
        ("not a uri", None),
    ],
)
def test_a_workspace_folder_uri_is_read_as_its_local_path(uri: str, path: str | None) -> None:
    assert vscode.folder_path(uri) == path


PROJECT = "/home/alice/projects/webapp"


def test_one_project_worked_on_by_cursor_its_cli_and_copilot_chat_is_one_workspace(
    tmp_path: Path,
) -> None:
    cli_home = home(tmp_path, "cursor-cli", "/rec/user/proj/cursor-cli", PROJECT)
    chats = cli_home / "dot-cursor" / "chats"
    next(chats.iterdir()).rename(chats / workspace_id(PROJECT))  # the CLI's folder: md5(cwd)
    homes = [
        home(tmp_path, "cursor", "/rec/user/proj/cursor", PROJECT) / "User",
        cli_home / "dot-cursor",
        home(tmp_path, "vscode", "/rec/user/proj/vscode", PROJECT) / "User",
    ]
    archive = Archive(embedder=None)
    report = archive.ingest(*homes)
    assert (report.sessions, report.skipped) == (4, [])
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(PROJECT),
        [PROJECT],
        ["copilot-chat", "cursor", "cursor-cli"],
    )
    per_source = archive.turns(ws.id).group_by("source").len().sort("source").collect()
    assert per_source.rows() == [("copilot-chat", 5), ("cursor", 4), ("cursor-cli", 4)]
    errors = archive.tool_calls(ws.id).filter(pl.col("status") == "error").collect()
    assert errors["name"].sort().to_list() == ["Shell", "run_in_terminal", "run_terminal_cmd"]
    assert archive.ingest(*homes).files_changed == 0  # idempotent: the exports are unchanged


def test_a_new_cursor_bubble_or_cli_message_is_seen_by_the_follower_s_scan(tmp_path: Path) -> None:
    user = home(tmp_path, "cursor") / "User"
    dot = home(tmp_path, "cursor-cli") / "dot-cursor"
    before = scan([user, dot])
    con = sqlite3.connect(user / "globalStorage" / "state.vscdb")
    con.execute("INSERT INTO cursorDiskKV VALUES ('bubbleId:x:y', '{}')")  # Cursor writes on
    con.commit()
    [store] = dot.rglob("store.db")
    cli = sqlite3.connect(store)
    cli.execute("INSERT INTO blobs VALUES ('00', X'7b7d')")
    cli.commit()
    changed = {Path(p).name for p in changed_files(before, scan([user, dot]))}
    cli.close()
    con.close()
    assert changed == {
        "state.vscdb-wal",
        "store.db-wal",
    }  # WAL: the main files wait for a checkpoint


def test_an_older_cursor_composer_with_its_bubbles_inline_is_read(tmp_path: Path) -> None:
    tool = {"name": "run_terminal_cmd", "status": "completed", "params": '{"command": "ls"}'}
    conversation = [
        {"type": 1, "bubbleId": "b1", "text": "list the files"},
        {"type": 2, "bubbleId": "b2", "text": "", "toolFormerData": tool},
        {"type": 2, "bubbleId": "b3", "text": "Two files."},
    ]
    user = cursor_db(
        tmp_path, {"composerData:old": {"composerId": "old", "conversation": conversation}}
    )
    [session] = discover(user).sessions
    result = cursor.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.problems) == ("unknown", [])
    assert [(t.user_text, calls(t), t.final_text, t.status) for t in result.turns] == [
        ("list the files", [("run_terminal_cmd", "ls", "ok")], "Two files.", "completed")
    ]
