"""Crush: its `crush.db` (tests/fixtures/crush: Crush's own migration SQL and rows written as
its code writes them, docs/formats.md) read exactly, found from every place Crush keeps it, read
while Crush writes, followed while it grows, bad rows reported."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import polars as pl
from archive_mcp.refiners import crush, discover
from archive_mcp.refiners.model import Problem, Turn
from archive_mcp.workspaces import default_source_roots, workspace_id
from click.testing import CliRunner
from expected import looping_subsessions
from test_agent_ingest import AIDER_REPO, claude_home, codex_home

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli
from archive_mcp.live import changed_files, scan

FIXTURE = Path(__file__).parent / "fixtures" / "crush"
SID = "8d0c3f4e-5b7a-4c1d-9e2f-0a1b2c3d4e5f"
CHILD = "m17$$call_5"  # the agent tool's sub-session: <assistant message id>$$<tool call id>
CWD = "/rec/user/proj/crush"  # the folder the recorded tool calls name
NONE = {"input_other": 0, "output": 0, "input_cache_read": 0, "input_cache_creation": 0}


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    return [(c.name, json.dumps(c.args, ensure_ascii=False), c.status) for c in turn.tool_calls]


def crush_db(db: Path, *more: str) -> Path:
    """A `crush.db` as Crush makes it: WAL mode, its migrations, then the fixture's rows."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    for sql in ("schema.sql", "sessions.sql"):
        con.executescript((FIXTURE / sql).read_text(encoding="utf-8"))
    for statement in more:
        con.execute(statement)
    con.commit()
    con.close()
    return db


def message(mid: str, role: str, parts: list[dict[str, object]], at: int, summary: int = 0) -> str:
    """An INSERT of one message as Crush's `CreateMessage` writes it."""
    text = json.dumps(parts, ensure_ascii=False).replace("'", "''")
    return (
        "INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at,"
        f" is_summary_message) VALUES ('{mid}', '{SID}', '{role}', '{text}', '', {at}, {at},"
        f" {summary})"
    )


def test_a_crush_database_reads_turns_calls_decisions_the_sub_agent_and_the_summary(
    tmp_path: Path,
) -> None:
    project = tmp_path / "crush"
    crush_db(project / ".crush" / "crush.db")
    [session] = discover(project).sessions
    assert (session.source, session.session_id, session.work_dirs, session.title) == (
        "crush",
        SID,
        [str(project)],
        "Echo hi and write a file",
    )
    assert [(f.agent, f.rel, f.whole) for f in session.files] == [
        ("main", "session.jsonl", True),
        (CHILD, f"subagents/{CHILD}.jsonl", True),
    ]
    result = crush.parse_wire(session.files[0].path)
    assert (result.protocol_version, result.unknown_types) == ("sqlite", {})
    assert result.problems == [
        Problem(26, "bad_record", "ValueError: message m25: parts are not a JSON list")
    ]
    turns = result.turns
    assert [t.user_text for t in turns] == [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Run echo hi in the shell, if I allow it",
        "Ask a sub-agent to list the files",
        "Écris « héllo » 🌍 dans hello.txt",
        "Thanks",
    ]
    assert [calls(t) for t in turns] == [
        [("bash", json.dumps({"description": "Echo hi", "command": "echo hi"}), "ok")],
        [("write", json.dumps({"file_path": f"{CWD}/hello.txt", "content": "hi\n"}), "ok")],
        [
            (
                "bash",
                json.dumps(
                    {
                        "description": "List a missing folder",
                        "command": "ls /nonexistent-archive-mcp-dir",
                    }
                ),
                "error",  # Crush stores is_error false with "Exit code 2" in the text
            )
        ],
        [("bash", json.dumps({"description": "Echo hi", "command": "echo hi"}), "rejected")],
        [("agent", json.dumps({"prompt": "List the files in the project"}), "ok")],
        [
            (
                "edit",
                json.dumps(
                    {
                        "file_path": f"{CWD}/hello.txt",
                        "old_string": "hi",
                        "new_string": "héllo 🌍",
                    },
                    ensure_ascii=False,
                ),
                "ok",
            )
        ],
        [],
    ]
    assert [t.final_text for t in turns] == [
        "The command printed hi.",
        "hello.txt now says hi.",
        "The command failed with exit code 2.",
        "",  # the denial ends the turn (StopTurn): no answer
        "The sub-agent found hello.txt.",
        "J'ai écrit « héllo » 🌍 dans hello.txt.",
        "You're welcome.",
    ]
    assert turns[0].tool_calls[0].output_text == f"hi\n\n\n<cwd>{CWD}</cwd>"
    first = turns[0].tool_calls[0]  # its result at the bash metadata's end_time (ms)
    assert (first.called_at, first.result_at) == (1796400001.0, 1796400003.1)
    assert [(t.status, t.reason) for t in turns] == [("completed", "completed")] * 7
    assert [t.answers for t in turns] == [[], [], [], ["[rejected bash]"], [], [], []]
    assert [t.compactions for t in turns] == [0, 0, 0, 0, 1, 0, 0]
    assert turns[4].synthetic_text.startswith("Summary: the user ran echo hi")
    assert [
        (r.agent_id, r.subagent_type, r.parent_tool_call_id) for r in turns[4].subagents.values()
    ] == [(CHILD, "agent", "call_5")]
    assert turns[0].thinking == "The user wants a shell command run."
    assert turns[5].user_media == [{"type": "image", "url_prefix": "image/png", "bytes_b64": 12}]
    assert [t.started_at for t in turns] == [
        1796400000.0,
        1796400040.0,
        1796400080.0,
        1796400130.0,
        1796400170.0,
        1796400240.0,
        1796400300.0,
    ]
    assert [t.ended_at for t in turns][:2] == [1796400005.0, 1796400044.0]
    assert [t.usage for t in turns] == [NONE] * 7  # Crush keeps no usage per message
    child = crush.parse_wire(session.files[1].path)
    assert [(t.user_text, calls(t), t.final_text) for t in child.turns] == [
        (
            "List the files in the project",
            [("ls", json.dumps({"path": CWD}), "ok")],
            "The project holds hello.txt.",
        )
    ]


def test_crush_sessions_archive_with_the_sub_agent_as_its_agent(tmp_path: Path) -> None:
    project = tmp_path / "crush"
    crush_db(project / ".crush" / "crush.db")
    archive = Archive(embedder=None)
    report = archive.ingest(project)
    assert (report.sessions, [s.line for s in report.skipped]) == (1, [26])  # the bad row
    [ws] = archive.workspaces()
    assert (ws.id, ws.sources) == (workspace_id(str(project)), ["crush"])
    turns = archive.turns(ws.id).sort("agent", "turn").collect()
    assert turns.group_by("agent").len().sort("agent").rows() == [(CHILD, 1), ("main", 7)]
    status = archive.tool_calls(ws.id).sort("turn").collect()
    assert status.filter(pl.col("agent") == "main")["status"].to_list() == [
        "ok",
        "ok",
        "error",
        "rejected",
        "ok",
        "ok",
    ]


def test_crush_is_found_from_its_project_data_folder_database_and_global_projects_list(
    tmp_path: Path,
) -> None:
    project = tmp_path / "crush"
    db = crush_db(project / ".crush" / "crush.db")
    elsewhere = tmp_path / "state" / "crush-data"  # options.data_directory set outside
    other = tmp_path / "other"
    other.mkdir()
    crush_db(elsewhere / "crush.db")
    data_home = Path(os.environ["HOME"]) / ".local" / "share" / "crush"
    data_home.mkdir(parents=True)
    listed = [
        {"path": str(other), "data_dir": str(elsewhere), "last_accessed": "2026-12-05T12:00:00Z"},
        {"path": str(project), "data_dir": str(db.parent), "last_accessed": "2026-12-05T11:00:00Z"},
        {"path": str(tmp_path / "gone"), "data_dir": str(tmp_path / "gone" / ".crush")},
    ]
    (data_home / "projects.json").write_text(json.dumps({"projects": listed}), encoding="utf-8")
    assert data_home in default_source_roots()
    for path, work_dir in [
        (project, project),
        (db.parent, project),
        (db, project),
        (elsewhere, other),  # projects.json names its project
        (elsewhere / "crush.db", other),
    ]:
        assert [s.work_dirs for s in discover(path).sessions] == [[str(work_dir)]], path
    found = discover(data_home)
    assert (found.skipped, sorted(s.work_dirs[0] for s in found.sessions)) == (
        [],
        sorted([str(other), str(project)]),
    )
    report = Archive(embedder=None).ingest()  # the global folder is a default root
    assert (report.sessions, sorted(report.created)) == (2, ["crush", "other"])
    # the follower watches the stores the global list names, though they are kept elsewhere
    assert crush.named_stores(data_home) == [
        elsewhere / "crush.db",
        elsewhere / "crush.db-wal",
        db,
        db.with_name("crush.db-wal"),
        tmp_path / "gone" / ".crush" / "crush.db",
        tmp_path / "gone" / ".crush" / "crush.db-wal",
    ]
    before = scan([data_home])
    con = sqlite3.connect(db)
    con.execute(message("m99", "user", [{"type": "text", "data": {"text": "More"}}], 1796400400))
    con.commit()
    assert changed_files(before, scan([data_home])) == [str(db) + "-wal"]
    con.close()


def test_a_data_folder_two_listed_projects_share_is_read_once_as_the_latest_ones(
    tmp_path: Path,
) -> None:
    # Crush run in a subfolder uses the closest `.crush` above it (config.setDefaults,
    # fsext.LookupClosest): projects.json then lists both folders with the one data folder
    project = tmp_path / "repo"
    db = crush_db(project / ".crush" / "crush.db")
    (project / "web").mkdir()
    data_home = Path(os.environ["HOME"]) / ".local" / "share" / "crush"
    data_home.mkdir(parents=True)
    listed = [
        {"path": str(project / "web"), "data_dir": str(db.parent)},  # the latest first
        {"path": str(project), "data_dir": str(db.parent)},
    ]
    (data_home / "projects.json").write_text(json.dumps({"projects": listed}), encoding="utf-8")
    found = discover(data_home)
    assert [(s.session_id, s.work_dirs) for s in found.sessions] == [(SID, [str(project / "web")])]
    assert [s.work_dirs for s in discover(project).sessions] == [[str(project)]]
    assert [s.work_dirs for s in discover(db).sessions] == [[str(project / "web")]]
    assert crush.named_stores(data_home) == [db, db.with_name("crush.db-wal")]


def test_a_relative_data_folder_in_the_projects_list_is_the_projects_not_the_servers(
    tmp_path: Path,
) -> None:
    project = tmp_path / "repo"
    db = crush_db(project / ".crush" / "crush.db")
    data_home = Path(os.environ["HOME"]) / ".local" / "share" / "crush"
    data_home.mkdir(parents=True)
    listed = [{"path": str(project), "data_dir": ".crush"}]  # as Crush's default writes it
    (data_home / "projects.json").write_text(json.dumps({"projects": listed}), encoding="utf-8")
    assert crush.project_stores(data_home) == [(project, db)]
    assert [(s.session_id, s.work_dirs) for s in discover(data_home).sessions] == [
        (SID, [str(project)])
    ]


def test_sub_sessions_whose_parents_loop_are_reported_and_archived_as_their_own_sessions(
    tmp_path: Path,
) -> None:
    row = (
        "INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at)"
        " VALUES ('{}', '{}', 'Looped', 1796400500, 1796400500)"
    )
    asked = message("ma", "user", [{"type": "text", "data": {"text": "Find the retry bug"}}], 1)
    project = tmp_path / "crush"
    db = crush_db(
        project / ".crush" / "crush.db",
        row.format("loop-a", "loop-b"),
        row.format("loop-b", "loop-a"),
        asked.replace(SID, "loop-a"),
    )
    found = discover(db)
    assert sorted(s.session_id for s in found.sessions) == [SID, "loop-a", "loop-b"]
    assert found.skipped == looping_subsessions(db)
    archive = Archive(embedder=None)
    archive.ingest(project)
    turns = archive.turns(workspace_id(str(project))).collect()
    assert turns.filter(pl.col("session_id") == "loop-a")["user_text"].to_list() == [
        "Find the retry bug"
    ]


def test_another_programs_crush_db_is_not_claimed_and_a_broken_one_is_reported(
    tmp_path: Path,
) -> None:
    foreign = tmp_path / "a" / "crush.db"
    foreign.parent.mkdir()
    sqlite3.connect(foreign).execute("CREATE TABLE notes (body TEXT)").connection.close()
    assert crush.discover(foreign) is None
    (tmp_path / "c" / ".crush").mkdir(parents=True)
    foreign.rename(tmp_path / "c" / ".crush" / "crush.db")
    assert crush.discover(tmp_path / "c") is None  # nor the folder holding it
    broken = tmp_path / "b" / ".crush" / "crush.db"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not a database, " * 64)
    found = crush.discover(tmp_path / "b")
    assert found is not None and found.sessions == []
    assert found.skipped == [
        (str(broken), "could not read the Crush database: file is not a database")
    ]


def test_crush_sessions_are_read_while_crush_holds_a_write(tmp_path: Path) -> None:
    db = crush_db(tmp_path / "crush" / ".crush" / "crush.db")
    writer = sqlite3.connect(db)
    writer.execute("BEGIN IMMEDIATE")  # Crush writing: a WAL reader is not blocked
    writer.execute(message("m98", "user", [], 1796400500))
    found = discover(tmp_path / "crush")
    writer.rollback()
    writer.close()
    assert (found.skipped, [s.session_id for s in found.sessions]) == ([], [SID])


def test_a_growing_crush_session_is_followed_through_an_automatic_summary(tmp_path: Path) -> None:
    project = tmp_path / "crush"
    db = crush_db(project / ".crush" / "crush.db")
    archive = Archive(embedder=None)
    archive.ingest(project)
    text = "Run the tests"
    rows = [  # a prompt, a call, its summary when the context fills, Crush's own prompt, the end
        message("n1", "user", [{"type": "text", "data": {"text": text}}], 1796400600),
        message(
            "n2",
            "assistant",
            [
                {
                    "type": "tool_call",
                    "data": {"id": "call_9", "name": "bash", "input": '{"command":"pytest"}'},
                },
                {"type": "finish", "data": {"reason": "tool_use", "time": 1796400602}},
            ],
            1796400601,
        ),
        message(
            "n3",
            "tool",
            [
                {
                    "type": "tool_result",
                    "data": {"tool_call_id": "call_9", "name": "bash", "content": "1 passed"},
                }
            ],
            1796400603,
        ),
        message(
            "n4",
            "assistant",
            [{"type": "text", "data": {"text": "Summary: the tests ran."}}],
            1796400604,
            summary=1,
        ),
        message(
            "n5",
            "user",
            [
                {
                    "type": "text",
                    "data": {
                        "text": "The previous session was interrupted because it got too long,"
                        f" the initial user request was: `{text}`"
                    },
                }
            ],
            1796400605,
        ),
        message(
            "n6",
            "assistant",
            [
                {"type": "text", "data": {"text": "One test passed."}},
                {"type": "finish", "data": {"reason": "end_turn", "time": 1796400607}},
            ],
            1796400606,
        ),
        message(  # a `!` command the user ran: no prompt, its output for the next one
            "n7",
            "user",
            [{"type": "shell_command", "data": {"command": "ls", "output": "a\n", "exit_code": 0}}],
            1796400700,
        ),
    ]
    con = sqlite3.connect(db)
    for row in rows:
        con.execute(row)
    con.commit()
    con.close()
    archive.ingest(project)
    turns = archive.turns("all").filter(pl.col("agent") == "main").sort("turn").collect()
    assert turns["user_text"].to_list()[-3:] == ["Thanks", text, "$ ls\na\n\n(exit code 0)"]
    [session] = discover(project).sessions
    last = crush.parse_wire(session.files[0].path).turns
    assert [(t.compactions, t.final_text, t.origin) for t in last[-2:]] == [
        (1, "One test passed.", "user"),
        (0, "", "command_output"),
    ]


def test_one_project_worked_on_by_claude_code_codex_aider_and_crush_is_one_workspace(
    tmp_path: Path,
) -> None:
    project = tmp_path / "src" / "webapp"
    shutil.copytree(AIDER_REPO, project)  # Aider's history in the project folder, beside .crush
    crush_db(project / ".crush" / "crush.db")
    home = tmp_path / "user"
    claude_home(home, cwd=str(project)), codex_home(home, cwd=str(project))
    archive = Archive(embedder=None)
    report = archive.ingest(home / ".claude", home / ".codex", tmp_path / "src")
    assert report.sessions == 4
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(str(project)),
        [str(project)],
        ["aider", "claude-code", "codex", "crush"],
    )
    per_source = archive.turns(ws.id).collect().group_by("source").len().sort("source")
    assert per_source.rows() == [("aider", 3), ("claude-code", 1), ("codex", 1), ("crush", 8)]
    assert sorted(s.source for s in discover(project).sessions) == ["aider", "crush"]


def test_install_registers_the_server_in_crush_json_and_doctor_sees_it() -> None:
    from archive_mcp.install import config_file, entry_for, server_command

    path = config_file("crush")
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "$schema": "https://charm.land/crush.json"\n}\n', encoding="utf-8")
    before = path.read_bytes()
    runner = CliRunner()
    assert runner.invoke(cli, ["install", "crush", "--yes"]).exit_code == 0
    assert json.loads(path.read_text(encoding="utf-8"))["mcp"] == {
        "archive-mcp": entry_for("crush", server_command())
    }
    out = runner.invoke(cli, ["doctor", "--json"]).stdout
    [check] = [c for c in json.loads(out) if c["what"] == "agent crush"]
    assert (check["status"], check["detail"]) == ("ok", f"registered in {path}")
    assert runner.invoke(cli, ["uninstall", "crush", "--yes"]).exit_code == 0
    assert path.read_bytes() == before
