"""Pi, GitHub Copilot CLI, Continue (`cn`) and Factory Droid: their genuine logs
(tests/fixtures/real-cli, README there) read exactly, and one project worked on by several of
them archived as one workspace."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
from archive_mcp.refiners import continue_cli, copilot, discover, droid, kilo, pi
from archive_mcp.refiners.model import Turn
from archive_mcp.workspaces import workspace_id

from archive_mcp import Archive

REAL_CLI = Path(__file__).parent / "fixtures" / "real-cli"
PI = REAL_CLI / "pi-0.73.1" / "dot-pi"
COPILOT = REAL_CLI / "copilot-1.0.102" / "dot-copilot"
CONTINUE = REAL_CLI / "continue-1.5.47" / "dot-continue"
DROID = REAL_CLI / "droid-0.225.2" / "dot-factory"
KILO_SQL = REAL_CLI / "kilo-7.7.7" / "kilo.sql"
ECHO, FAIL = "echo hi", "ls /nonexistent-archive-mcp-dir"
ONE_CALL = {"input_other": 120, "output": 7, "input_cache_read": 0, "input_cache_creation": 0}
TWO_CALLS = {"input_other": 240, "output": 14, "input_cache_read": 0, "input_cache_creation": 0}
FIRST = [
    "Run echo hi in the shell",
    "Create hello.txt saying hi",
    "Now run a command that will fail",
]
NONE = {"input_other": 0, "output": 0, "input_cache_read": 0, "input_cache_creation": 0}


def answer(prompt: str) -> str:
    return f"Done with: {prompt} SCRIPTED-ANSWER"


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    out = []
    for c in turn.tool_calls:
        arg = c.args.get("command") or c.args.get("path") or c.args.get("filepath")
        arg = arg or c.args.get("filePath")
        out.append((c.name, str(arg or c.args.get("file_path") or c.args.get("prompt")), c.status))
    return out


def test_pi_0_73_session_turns_calls_usage_compaction_and_interruption() -> None:
    [session] = discover(PI).sessions
    assert (session.source, session.session_id, session.bucket, session.work_dirs) == (
        "pi",
        "01a2439e-4d47-74d6-9656-0707e386941f",
        "--rec-user-proj-pi--",
        ["/rec/user/proj/pi"],
    )
    result = pi.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == (
        "session-v3",
        {},
        [],
    )
    prompts = [
        *FIRST,
        "Run echo hi in the shell after the compaction",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in result.turns] == prompts
    assert [calls(t) for t in result.turns] == [
        [("bash", ECHO, "ok")],
        [("write", "/rec/user/proj/pi/hello.txt", "ok")],
        [("bash", FAIL, "error")],
        [("bash", ECHO, "ok")],
        [("bash", "sleep 60", "no_result")],  # SIGINT: pi wrote no result
        [("bash", ECHO, "ok")],
    ]
    assert [t.status for t in result.turns] == ["completed"] * 4 + ["interrupted", "completed"]
    assert [t.final_text for t in result.turns] == [
        answer(p) if p != "Now sleep in the shell" else "" for p in prompts
    ]
    full = {"input_other": 10000, "output": 14, "input_cache_read": 0, "input_cache_creation": 0}
    # the scripted model reports 5000 input tokens a call for the prompt naming the compaction
    assert [t.usage for t in result.turns] == [TWO_CALLS] * 3 + [full, ONE_CALL, TWO_CALLS]
    assert [t.compactions for t in result.turns] == [0, 0, 0, 1, 0, 0]
    assert result.turns[3].synthetic_text.endswith("SCRIPTED-SUMMARY</summary>")
    assert result.turns[2].tool_calls[0].output_text.endswith("Command exited with code 2")
    assert "open" not in {t.end for t in result.turns}
    # the next read starts at the last turn, complete: it is refined again with the next one
    assert (result.resume_offset, result.resume_index) == (result.turns[-1].byte_start, 5)
    assert result.complete_offset == session.files[0].path.stat().st_size


def test_copilot_1_0_events_turns_calls_usage_subagent_and_abort() -> None:
    [session] = discover(COPILOT).sessions
    sid = "cc528782-168d-4523-b542-73d313858544"
    assert (session.source, session.session_id, session.work_dirs, session.branch) == (
        "copilot",
        sid,
        ["/rec/user/proj/copilot"],
        "master",
    )
    result = copilot.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("1.0.102", {}, [])
    prompts = [
        *FIRST,
        "Use a subagent to print hi",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in result.turns] == prompts
    assert [calls(t) for t in result.turns] == [
        [("bash", ECHO, "ok")],
        [("create", "/rec/user/proj/copilot/hello.txt", "ok")],
        [("bash", FAIL, "error")],  # exit code 2 (Copilot says success: the tool ran)
        [("task", "Run echo hi in the shell", "ok")],
        [("bash", "sleep 60", "no_result")],
        [("bash", ECHO, "ok")],
    ]
    assert [t.status for t in result.turns] == ["completed"] * 4 + ["interrupted", "completed"]
    assert [t.final_text for t in result.turns] == [
        answer(p) if p != "Now sleep in the shell" else "" for p in prompts
    ]
    assert [t.usage for t in result.turns] == [TWO_CALLS] * 4 + [ONE_CALL, TWO_CALLS]
    [(agent, run)] = result.turns[3].subagents.items()
    assert (agent, run.subagent_type, run.parent_tool_call_id) == (
        "1c9ecf52-bab6-4853-8acd-e5f9b367d4c5",
        "general-purpose",
        "call_f8fd4bac776f4cd18f46",
    )
    [sub] = run.turns
    assert (sub.user_text, calls(sub), sub.final_text, sub.usage, sub.status) == (
        "Run echo hi in the shell",
        [("bash", ECHO, "ok")],
        answer("Run echo hi in the shell"),
        TWO_CALLS,
        "completed",
    )


def test_continue_1_5_session_document_turns_calls_and_usage() -> None:
    [session] = discover(CONTINUE).sessions
    assert (session.source, session.session_id, session.work_dirs, session.title) == (
        "continue",
        "a62e79a0-ba88-443d-b01a-8a1fcee70e90",
        ["/rec/user/proj/continue"],
        "Untitled Session",
    )
    assert session.files[0].whole  # rewritten in place: archived as a snapshot
    result = continue_cli.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.problems) == ("json", [])
    prompts = [
        *FIRST,
        "Use a subagent to print hi",  # cn has no subagent tool: the model used the shell
        "Run echo hi in the shell again",  # the SIGINT'd run before it was never saved
    ]
    assert [t.user_text for t in result.turns] == prompts
    assert [calls(t) for t in result.turns] == [
        [("Bash", ECHO, "ok")],
        [("Write", "/rec/user/proj/continue/hello.txt", "ok")],
        [("Bash", FAIL, "error")],
        [("Bash", ECHO, "ok")],
        [("Bash", ECHO, "ok")],
    ]
    assert [t.final_text for t in result.turns] == [answer(p) for p in prompts]
    assert [t.status for t in result.turns] == ["completed"] * 5
    assert [t.usage for t in result.turns] == [TWO_CALLS] * 5


def test_droid_0_225_session_turns_calls_and_the_failed_subagent() -> None:
    [session] = discover(DROID).sessions
    sid = "2eebd06c-0ad0-48a4-a3cf-7572166e27fc"
    assert (session.source, session.session_id, session.work_dirs, session.title) == (
        "droid",
        sid,
        ["/rec/user/proj/droid"],
        "Run echo hi in the shell",
    )
    assert [f.rel for f in session.snapshots] == [f"{sid}.settings.json"]
    result = droid.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == (
        "session-v2",
        {},
        [],
    )
    prompts = [
        *FIRST,
        "Use a subagent to print hi",
    ]
    assert [t.user_text for t in result.turns] == prompts  # the `context-` reminders are no turn
    assert [calls(t) for t in result.turns] == [
        [("Execute", ECHO, "ok")],
        [("Create", "/rec/user/proj/droid/hello.txt", "ok")],
        [("Execute", FAIL, "error")],
        # offline the Task tool cannot reach Droid's daemon: the call fails
        [("Task", "Run echo hi in the shell", "error")],
    ]
    assert [t.final_text for t in result.turns] == [answer(p) for p in prompts]
    assert [t.status for t in result.turns] == ["completed"] * 4
    assert [t.usage for t in result.turns] == [NONE] * 4  # the log holds no per-call usage


def kilo_home(dest: Path, cwd: str = "/rec/user/proj/kilo") -> Path:
    """Kilo's data folder with the genuine kilo.db rebuilt from its dump (in WAL mode, as Kilo
    keeps it), its work dir `cwd`."""
    dest.mkdir(parents=True)
    con = sqlite3.connect(dest / "kilo.db")
    con.execute("PRAGMA journal_mode=WAL")
    sql = KILO_SQL.read_text(encoding="utf-8").replace("/rec/user/proj/kilo", cwd)
    con.executescript(sql)
    con.close()
    return dest


def test_kilo_7_7_database_read_by_the_opencode_reader(tmp_path: Path, monkeypatch: Any) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the exports go here
    [session] = discover(kilo_home(tmp_path / "kilo")).sessions
    child = "ses_dbc340315ffeifyRuZeeRa293q"  # the `task` subagent's session
    assert (session.source, session.session_id, session.work_dirs) == (
        "kilo",
        "ses_dbc3b26f1ffelcvpKE0a6u6pC5",
        ["/rec/user/proj/kilo"],
    )
    assert [(f.agent, f.rel, f.whole) for f in session.files] == [
        ("main", "session.jsonl", True),
        (child, f"subagents/{child}.jsonl", True),
    ]
    result = kilo.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types, result.problems) == ("7.7.7", {}, [])
    prompts = [
        *FIRST,
        "Use a subagent to print hi",
        "Now sleep in the shell",
        "Run echo hi in the shell again",
    ]
    assert [t.user_text for t in result.turns] == [f'"{p}"' for p in prompts]  # Kilo quotes them
    assert [calls(t) for t in result.turns] == [
        [("bash", ECHO, "ok")],
        [("write", "/rec/user/proj/kilo/hello.txt", "ok")],
        [("bash", FAIL, "error")],
        [("task", "Run echo hi in the shell", "ok")],
        [("bash", "sleep 60", "no_result")],  # SIGINT: the call never finished
        [("bash", ECHO, "ok")],
    ]
    assert [t.status for t in result.turns] == ["completed"] * 4 + ["interrupted", "completed"]
    assert [t.final_text for t in result.turns] == [
        answer(f'"{p}"') if p != "Now sleep in the shell" else "" for p in prompts
    ]
    assert [t.usage for t in result.turns] == [TWO_CALLS] * 4 + [NONE, TWO_CALLS]
    [sub] = kilo.parse_wire(session.files[1].path).turns
    assert (calls(sub), sub.status) == ([("bash", ECHO, "ok")], "completed")


def copy_as(src: Path, dest: Path, old: str, new: str) -> Path:
    """A copy of an agent home with its recorded work dir `old` replaced by `new`."""
    shutil.copytree(src, dest)
    for f in dest.rglob("*"):
        if f.is_file():
            f.write_bytes(f.read_bytes().replace(old.encode(), new.encode()))
    return dest


PROJECT = "/home/alice/projects/webapp"


def test_one_project_worked_on_by_five_new_agents_is_one_workspace_with_all_their_turns(
    tmp_path: Path,
) -> None:
    homes = [
        copy_as(PI, tmp_path / "pi", "/rec/user/proj/pi", PROJECT),
        copy_as(COPILOT, tmp_path / "copilot", "/rec/user/proj/copilot", PROJECT),
        copy_as(CONTINUE, tmp_path / "continue", "/rec/user/proj/continue", PROJECT),
        copy_as(DROID, tmp_path / "droid", "/rec/user/proj/droid", PROJECT),
        kilo_home(tmp_path / "kilo", PROJECT),
    ]
    archive = Archive(embedder=None)
    report = archive.ingest(*homes)
    assert (report.sessions, report.skipped) == (5, [])
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(PROJECT),
        [PROJECT],
        ["continue", "copilot", "droid", "kilo", "pi"],
    )
    turns = archive.turns(ws.id).collect()
    per_source = turns.group_by("source", "agent").len().sort("source", "agent")
    assert per_source.rows() == [
        ("continue", "main", 5),
        ("copilot", "1c9ecf52-bab6-4853-8acd-e5f9b367d4c5", 1),
        ("copilot", "main", 6),
        ("droid", "main", 4),
        ("kilo", "main", 6),
        ("kilo", "ses_dbc340315ffeifyRuZeeRa293q", 1),
        ("pi", "main", 6),
    ]
    hits = archive.search("nonexistent", workspace=ws.id, mode="lexical")
    assert sorted({h.source for h in hits}) == ["continue", "copilot", "droid", "kilo", "pi"]
    status = archive.tool_calls(ws.id).filter(pl.col("agent") == "main")
    failed = status.filter(pl.col("status") == "error").collect()["session_id"].to_list()
    sessions = archive.sessions(ws.id).collect()
    source = dict(zip(sessions["session_id"], sessions["source"], strict=True))
    assert sorted(source[s] for s in failed) == [
        "continue",
        "copilot",
        "droid",
        "droid",
        "kilo",
        "pi",
    ]
    assert archive.ingest(*homes).files_changed == 0  # idempotent


def grow(path: Path, lines: list[bytes], upto: int) -> None:
    path.write_bytes(b"".join(lines[:upto]))


def test_a_growing_pi_and_copilot_log_is_followed_and_a_bad_line_is_reported_and_skipped(
    tmp_path: Path,
) -> None:
    pi_log = next(PI.rglob("*.jsonl"))
    cp_log = next(COPILOT.rglob("events.jsonl"))
    live: list[tuple[Path, list[bytes]]] = []
    for src, rel in ((pi_log, pi_log.relative_to(PI)), (cp_log, cp_log.relative_to(COPILOT))):
        dest = tmp_path / ("pi" if src == pi_log else "copilot") / rel
        dest.parent.mkdir(parents=True)
        live.append((dest, src.read_bytes().splitlines(keepends=True)))
    (pi_dest, pi_lines), (cp_dest, cp_lines) = live
    grow(pi_dest, pi_lines, 10)  # into the second turn: its answer not written yet
    grow(cp_dest, cp_lines, 20)
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / "pi", tmp_path / "copilot")
    first: Any = archive.turns("all").group_by("source").len().sort("source").collect()
    assert first.rows() == [("copilot", 2), ("pi", 2)]
    pi_dest.write_bytes(b"".join(pi_lines[:12]) + b"{not json\n" + b"".join(pi_lines[12:]))
    grow(cp_dest, cp_lines, len(cp_lines))
    report = archive.ingest(tmp_path / "pi", tmp_path / "copilot")
    turns = archive.turns("all").filter(pl.col("agent") == "main")
    done = turns.group_by("source").len().sort("source").collect()
    assert done.rows() == [("copilot", 6), ("pi", 6)]
    second = turns.filter(pl.col("turn") == 1).sort("source").collect()
    assert second["assistant_text"].to_list() == [answer("Create hello.txt saying hi")] * 2
    assert [(Path(s.path).name, s.line) for s in report.skipped] == [(pi_dest.name, 13)]


def test_ingest_without_paths_reads_the_new_agents_default_homes_or_their_env(
    tmp_path: Path, monkeypatch: Any
) -> None:
    home = tmp_path / "user-home"  # $HOME in the tests
    shutil.copytree(PI, home / ".pi")
    shutil.copytree(COPILOT, home / ".copilot")
    shutil.copytree(CONTINUE, tmp_path / "cn")
    shutil.copytree(DROID, tmp_path / "factory-home" / ".factory")
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(tmp_path / "cn"))
    monkeypatch.setenv("FACTORY_HOME_OVERRIDE", str(tmp_path / "factory-home"))
    report = Archive(embedder=None).ingest()
    assert [Path(r["path"]) for r in report.roots if r["found"]] == [
        home / ".pi" / "agent",
        home / ".copilot",
        tmp_path / "cn",
        tmp_path / "factory-home" / ".factory",
    ]
    assert (report.sessions, report.skipped) == (4, [])
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "elsewhere"))
    roots = {Path(r["path"]) for r in Archive(embedder=None).ingest().roots}
    assert tmp_path / "elsewhere" in roots and home / ".copilot" not in roots


def test_a_rewritten_continue_session_replaces_its_turns_and_a_broken_one_is_reported(
    tmp_path: Path,
) -> None:
    home = copy_as(CONTINUE, tmp_path / "cn", "/rec/user/proj/continue", PROJECT)
    [doc_path] = sorted(home.rglob("????????-*.json"))
    whole = json.loads(doc_path.read_text(encoding="utf-8"))
    first = dict(whole, history=whole["history"][:6])  # two turns written so far
    doc_path.write_text(json.dumps(first), encoding="utf-8")
    archive = Archive(embedder=None)
    assert archive.ingest(home).turns_added == 2
    doc_path.write_text(json.dumps(whole), encoding="utf-8")  # cn rewrites the whole document
    assert archive.ingest(home).files_changed == 1  # parsed whole again: replaces its turns
    texts = archive.turns("all").sort("turn").collect()["user_text"].to_list()
    assert texts == [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Use a subagent to print hi",
        "Run echo hi in the shell again",
    ]
    broken = tmp_path / "broken.json"
    broken.write_text('{"sessionId": "x", "history": [', encoding="utf-8")
    result = continue_cli.parse_wire(broken)
    assert (result.turns, [p.kind for p in result.problems]) == ([], ["malformed"])
    assert discover(broken).sessions == []  # not a session: not taken for one


def test_a_pi_bang_command_is_a_command_turn_and_an_aborted_reply_interrupts(
    tmp_path: Path,
) -> None:
    # shapes from Pi 0.73's docs/session-format.md (BashExecutionMessage, stopReason "aborted")
    def line(rec: dict[str, Any]) -> str:
        return json.dumps(rec) + "\n"

    log = tmp_path / "s.jsonl"
    log.write_text(
        line({"type": "session", "version": 3, "id": "s1", "cwd": PROJECT})
        + line(
            {
                "type": "message",
                "timestamp": "2026-12-05T00:00:01Z",
                "message": {
                    "role": "bashExecution",
                    "command": "ls nope",
                    "output": "ls: nope: No such file",
                    "exitCode": 2,
                    "cancelled": False,
                    "truncated": False,
                },
            }
        )
        + line({"type": "message", "message": {"role": "user", "content": "go on"}})
        + line(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Star"}],
                    "usage": {"input": 3, "output": 1, "cacheRead": 2, "cacheWrite": 4},
                    "stopReason": "aborted",
                },
            }
        ),
        encoding="utf-8",
    )
    bang, prompt = pi.parse_wire(log).turns
    assert (bang.user_text, bang.origin, bang.status, calls(bang)) == (
        "!ls nope",
        "command",
        "completed",
        [("bash", "ls nope", "error")],
    )
    assert (prompt.user_text, prompt.status, prompt.assistant_text) == (
        "go on",
        "interrupted",
        "Star",
    )
    assert prompt.usage == {
        "input_other": 3,
        "output": 1,
        "input_cache_read": 2,
        "input_cache_creation": 4,
    }
