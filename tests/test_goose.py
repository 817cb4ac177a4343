"""Goose: its JSONL logs and its `sessions.db` (tests/fixtures/goose, built from block/goose's
session code: docs/formats.md) read exactly, followed while they grow, bad lines reported."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import polars as pl
from archive_mcp.refiners import discover, goose
from archive_mcp.refiners.model import Turn

from archive_mcp import Archive

FIXTURE = Path(__file__).parent / "fixtures" / "goose"
LOG = FIXTURE / "sessions" / "20261205_120000.jsonl"
CWD = "/rec/user/proj/goose"
NONE = {"input_other": 0, "output": 0, "input_cache_read": 0, "input_cache_creation": 0}


def calls(turn: Turn) -> list[tuple[str, str, str]]:
    return [(c.name, json.dumps(c.args), c.status) for c in turn.tool_calls]


def goose_home(dest: Path, with_db: bool = True) -> Path:
    """A Goose data folder: the JSONL log and, as newer builds keep it, `sessions.db` (WAL)."""
    shutil.copytree(FIXTURE / "sessions", dest / "sessions")
    if with_db:
        con = sqlite3.connect(dest / "sessions" / "sessions.db")
        con.execute("PRAGMA journal_mode=WAL")
        con.executescript((FIXTURE / "sessions.sql").read_text(encoding="utf-8"))
        con.close()
    return dest


def test_a_goose_jsonl_log_reads_turns_calls_decisions_and_the_compaction() -> None:
    [session] = discover(LOG.parent).sessions
    assert (session.source, session.session_id, session.work_dirs, session.title) == (
        "goose",
        "20261205_120000",
        [CWD],
        "Echo hi in the shell",
    )
    result = goose.parse_wire(LOG)
    assert (result.protocol_version, result.problems, result.unknown_types) == ("jsonl", [], {})
    turns = result.turns
    assert [t.user_text for t in turns] == [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
        "Now run a command that will fail",
        "Run echo hi in the shell, if I allow it",
    ]
    assert [calls(t) for t in turns] == [
        [("developer__shell", json.dumps({"command": "echo hi"}), "ok")],
        [
            (
                "developer__text_editor",
                json.dumps({"command": "write", "path": f"{CWD}/hello.txt", "file_text": "hi\n"}),
                "ok",
            )
        ],
        [("developer__shell", json.dumps({"command": "ls /nonexistent-archive-mcp-dir"}), "error")],
        [("developer__shell", json.dumps({"command": "echo hi"}), "rejected")],
    ]
    assert [t.final_text for t in turns] == [
        "The command printed hi.",
        "hello.txt now says hi.",
        "The command failed with exit code 2.",
        "You declined the command, so I did not run it.",
    ]
    assert turns[0].tool_calls[0].output_text == "hi\n"  # the model's copy, not the user's too
    assert [t.status for t in turns] == ["completed"] * 4
    assert [t.answers for t in turns] == [[], [], [], ["[rejected developer__shell]"]]
    assert [t.compactions for t in turns] == [0, 0, 1, 0]
    assert turns[2].synthetic_text.startswith("Summary of the conversation so far")
    assert turns[1].thinking == "A write with the text editor."
    assert [t.started_at for t in turns] == [1796400000.0, 1796400040.0, 1796400080.0, 1796400130.0]
    assert [t.usage for t in turns] == [NONE] * 4  # Goose logs session totals only


def test_goose_database_sessions_are_read_while_goose_holds_a_write(tmp_path: Path) -> None:
    home = goose_home(tmp_path / "goose")
    writer = sqlite3.connect(home / "sessions" / "sessions.db")
    writer.execute("BEGIN IMMEDIATE")  # Goose writing: a WAL reader is not blocked
    writer.execute(
        "INSERT INTO messages (session_id, role, content_json, created_timestamp) "
        "VALUES ('20261205_2', 'user', '[]', 0)"
    )
    found = discover(home)
    writer.rollback()
    writer.close()
    assert found.skipped == []
    by_id = {s.session_id: s for s in found.sessions}
    assert sorted(by_id) == ["20261205_120000", "20261205_2"]
    db = by_id["20261205_2"]
    assert (db.work_dirs, db.title, [(f.rel, f.whole) for f in db.files]) == (
        [CWD],
        "Echo again",
        [("session.jsonl", True)],
    )
    [turn] = goose.parse_wire(db.files[0].path).turns
    assert (turn.user_text, calls(turn), turn.final_text, turn.status) == (
        "Run echo hi in the shell again",
        [("developer__shell", json.dumps({"command": "echo hi"}), "ok")],
        "It printed hi again.",
        "completed",
    )


def test_a_log_imported_into_the_database_is_archived_once(tmp_path: Path) -> None:
    home = goose_home(tmp_path / "goose")
    con = sqlite3.connect(home / "sessions" / "sessions.db")
    con.execute(
        "INSERT INTO sessions (id, working_dir) VALUES ('20261205_120000', ?)", ("/elsewhere",)
    )
    con.commit()
    con.close()
    found = discover(home)
    assert sorted((s.session_id, s.work_dirs[0]) for s in found.sessions) == [
        ("20261205_120000", "/elsewhere"),  # the database's copy wins
        ("20261205_2", CWD),
    ]


def test_a_growing_goose_log_is_followed_and_a_bad_line_is_reported_and_skipped(
    tmp_path: Path,
) -> None:
    home = goose_home(tmp_path / "goose", with_db=False)
    log = home / "sessions" / LOG.name
    lines = LOG.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:7]))  # into the second turn: its answer not written yet
    archive = Archive(embedder=None)
    archive.ingest(home)
    assert archive.turns("all").collect()["user_text"].to_list() == [
        "Run echo hi in the shell",
        "Create hello.txt saying hi",
    ]
    log.write_bytes(b"".join(lines[:9]) + b"{not json\n" + b"".join(lines[9:]))
    report = archive.ingest(home)
    turns = archive.turns("all").sort("turn").collect()
    assert turns.height == 4
    assert turns.filter(pl.col("turn") == 1)["assistant_text"].to_list() == [
        "hello.txt now says hi."
    ]
    assert [(Path(s.path).name, s.line) for s in report.skipped] == [(log.name, 10)]


def test_the_follower_sees_goose_write_its_database(tmp_path: Path) -> None:
    from archive_mcp.live import changed_files, scan

    home = goose_home(tmp_path / "goose")
    db = home / "sessions" / "sessions.db"
    before = scan([home])
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO messages (session_id, role, content_json, created_timestamp) "
        'VALUES (\'20261205_2\', \'user\', \'[{"type": "text", "text": "One more"}]\', 0)'
    )
    con.commit()
    changed = changed_files(before, scan([home]))
    con.close()
    assert str(db) + "-wal" in changed  # WAL mode: the write lands in the -wal file
    [session] = [s for s in discover(home).sessions if s.session_id == "20261205_2"]
    turns = goose.parse_wire(session.files[0].path).turns
    assert [t.user_text for t in turns] == ["Run echo hi in the shell again", "One more"]
