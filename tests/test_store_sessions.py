"""A store's sessions filed with their sub-sessions (`stores.file_sessions`), as Crush, Cursor and
OpenCode file theirs: each sub-session a subagent file of its top session, at any depth, in the
store's order; one whose parents loop archived on its own and reported. With them the other
helpers the readers share: a session of one log file, a store's sessions with their messages and
their discovery (`stores.Store`), JSON that may not be JSON (`fields.json_value`, `disk.load_object`)."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners.disk import load_object
from archive_mcp.refiners.fields import json_object, json_value
from archive_mcp.refiners.sources import Discovery, SessionSource, log_session
from archive_mcp.refiners.stores import (
    Store,
    export_bytes,
    file_sessions,
    read_only,
    session_lines,
    session_records,
    store_session,
    sub_sessions,
    top_session,
    with_messages,
)

DB = Path("/stores/agent/agent.db")
LOOP = "its parents never reach a top-level session (they loop); archived as a session of its own"


def _session(sid: str, row: dict[str, Any], export: Path) -> SessionSource:
    return store_session("agent", sid, "agent", row.get("dir"), row.get("title"), DB, export)


def test_sub_sessions_are_filed_under_their_top_session_at_any_depth_and_a_loop_stands_alone() -> (
    None
):
    rows = ["child", "top", "grandchild", "loop-a", "loop-b", "alone"]
    exports = [(sid, {"dir": "/p", "title": sid}, Path(f"/x/{sid}.jsonl")) for sid in rows]
    parent = {"child": "top", "grandchild": "child", "loop-a": "loop-b", "loop-b": "loop-a"}
    found = Discovery()
    file_sessions(exports, parent, _session, found, DB)
    assert [(s.session_id, [(f.agent, f.rel) for f in s.files]) for s in found.sessions] == [
        (
            "top",
            [
                ("main", "session.jsonl"),
                ("child", "subagents/child.jsonl"),
                ("grandchild", "subagents/grandchild.jsonl"),
            ],
        ),
        ("loop-a", [("main", "session.jsonl")]),
        ("loop-b", [("main", "session.jsonl")]),
        ("alone", [("main", "session.jsonl")]),
    ]
    assert found.skipped == [
        (str(DB), f"sub-session loop-a: {LOOP}"),
        (str(DB), f"sub-session loop-b: {LOOP}"),
    ]
    assert all(f.whole for s in found.sessions for f in s.files)


def test_top_session_climbs_to_the_first_top_and_says_none_for_a_loop_or_a_dead_end() -> None:
    parent = {"c": "b", "b": "a", "x": "y", "y": "x", "d": "gone"}
    assert [top_session(sid, parent, {"a"}) for sid in ("c", "b", "x", "d")] == [
        "a",
        "a",
        None,
        None,
    ]


def test_a_store_session_keeps_its_work_dir_and_title_only_when_they_are_text() -> None:
    make = partial(store_session, "agent", "s1", "bucket", db=DB, export=Path("/x/s1.jsonl"))
    kept, dropped = make("/p", "A title"), make("", 7)
    assert (kept.work_dirs, kept.title, kept.session_dir) == (["/p"], "A title", DB.parent)
    assert (dropped.work_dirs, dropped.title) == ([], None)
    assert [(f.agent, f.rel, f.whole) for f in kept.files] == [("main", "session.jsonl", True)]


def test_a_log_session_is_its_one_file_named_as_it_is_unless_given_a_name() -> None:
    log = Path("/home/a/.agent/sessions/s2.json")
    plain = log_session("agent", "s2", "bucket", "/p", "", log)
    named = log_session("agent", "s2", "b", None, "T", log, whole=True, rel="x.jsonl", folder=DB)
    assert (plain.work_dirs, plain.title, plain.session_dir) == (["/p"], None, log.parent)
    assert [(f.agent, f.rel, f.path, f.whole) for f in plain.files] == [
        ("main", "s2.json", log, False)
    ]
    assert (named.work_dirs, named.title, named.session_dir) == ([], "T", DB)
    assert [(f.rel, f.whole) for f in named.files] == [("x.jsonl", True)]


def test_sessions_come_with_their_messages_in_order_and_sub_sessions_with_a_known_parent() -> None:
    con = sqlite3.connect(":memory:")
    con.executescript(
        """
        CREATE TABLE s (id TEXT, parent TEXT);
        CREATE TABLE m (sid TEXT, n INTEGER);
        INSERT INTO s VALUES ('a', NULL), ('b', 'a'), ('c', 'gone'), ('d', 'b');
        INSERT INTO m VALUES ('b', 2), ('a', 1), ('b', 1), ('z', 9);
        """
    )
    sessions = with_messages(con, "s", "SELECT sid, n FROM m ORDER BY n, sid")
    assert [(s["id"], s["messages"]) for s in sessions] == [
        ("a", [{"n": 1}]),
        ("b", [{"n": 1}, {"n": 2}]),
        ("c", []),
        ("d", []),
    ]
    assert sub_sessions(sessions, "parent") == {"b": "a", "d": "b"}


def test_a_stored_json_object_is_empty_when_the_value_is_not_one() -> None:
    assert json_object('{"a": 1}') == {"a": 1}
    assert json_object(b'{"a": "\\ud800"}') == {"a": "\ufffd"}
    assert [json_object(v) for v in ("[1]", "{", None, 3)] == [{}, {}, {}, {}]


def test_a_stored_json_value_is_the_default_when_it_is_not_json_or_is_null() -> None:
    assert json_value('[1, "\\ud800"]') == [1, "\ufffd"]
    assert math.isnan(json_value(b"NaN"))  # the careful path reads what orjson does not
    assert [json_value(v, []) for v in ("{", "null", None, 3, b"\xff")] == [[], [], [], [], []]
    assert json_value('"text"', []) == "text"


def _rows(db: Path) -> list[dict[str, Any]] | None:
    with read_only(db) as con:
        return with_messages(con, "s", "SELECT sid, n FROM m ORDER BY n")


def test_a_store_files_its_sessions_exported_with_sub_sessions_under_their_top(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    db = tmp_path / "agent.db"
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE s (id TEXT, parent TEXT, title TEXT);
        CREATE TABLE m (sid TEXT, n INTEGER);
        INSERT INTO s VALUES ('top', NULL, 'T'), ('sub', 'top', NULL), ('', NULL, 'no id');
        INSERT INTO m VALUES ('top', 1), ('sub', 2);
        """
    )
    con.commit()
    con.close()
    made = partial(store_session, "agent", bucket="agent", work_dir=None, db=db, name="s.jsonl")
    found = Store("agent", "the store", _rows, parent="parent").sessions(
        db, lambda sid, row, export: made(sid=sid, title=row["title"], export=export)
    )
    assert found is not None and found.skipped == []
    [top] = found.sessions
    assert (top.session_id, top.title, [f.rel for f in top.files]) == (
        "top",
        "T",
        ["s.jsonl", "subagents/sub.jsonl"],
    )
    assert top.files[0].path.read_bytes() == export_bytes(
        [
            {"type": "session", "session": {"id": "top", "parent": None, "title": "T"}},
            {"type": "message", "n": 1},
        ]
    )


def test_a_store_that_is_another_programs_is_none_and_one_that_cannot_be_read_is_reported(
    tmp_path: Path,
) -> None:
    other = Store("agent", "the store", lambda db: None)
    assert other.sessions(tmp_path / "x.db", _session) is None
    (tmp_path / "bad.db").write_bytes(b"not SQLite at all, but long enough to be read" * 50)
    found = Store("agent", "the store", _rows).sessions(tmp_path / "bad.db", _session)
    assert found is not None and found.sessions == []
    assert [(p, why.split(":")[0]) for p, why in found.skipped] == [
        (str(tmp_path / "bad.db"), "could not read the store")
    ]


def test_a_session_export_is_its_row_then_a_message_record_each() -> None:
    session = {"id": "s", "title": "T", "messages": [{"n": 1}, {"n": 2}]}
    assert session_records(session) == [
        {"type": "session", "session": {"id": "s", "title": "T"}},
        {"type": "message", "n": 1},
        {"type": "message", "n": 2},
    ]
    assert session_lines(session) == (
        b'{"session":{"id":"s","title":"T"},"type":"session"}\n'
        b'{"n":1,"type":"message"}\n{"n":2,"type":"message"}\n'
    )


def test_a_session_keeps_the_named_files_beside_its_log_that_exist(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / "c.json").mkdir()
    session = log_session("agent", "s", "b", None, None, tmp_path / "s.jsonl")
    session.keep(tmp_path, ("a.json", "b.json", "c.json"))
    assert [(f.agent, f.rel, f.path, f.whole) for f in session.snapshots] == [
        ("main", "a.json", tmp_path / "a.json", True)
    ]


def test_a_json_files_object_is_empty_when_the_file_holds_none_or_cannot_be_read(
    tmp_path: Path,
) -> None:
    for name, text in (("obj.json", '{"cwd": "/p"}'), ("list.json", "[1]"), ("bad.json", "{")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "folder.json").mkdir()
    names = ("obj.json", "list.json", "bad.json", "folder.json", "gone.json")
    assert [load_object(tmp_path / n) for n in names] == [{"cwd": "/p"}, {}, {}, {}, {}]
