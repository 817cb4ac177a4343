"""Agents' SQLite stores are opened read-only whatever characters their folder's name holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from archive_mcp.refiners.stores import read_only


def test_a_store_under_a_folder_named_with_hash_percent_and_question_mark_is_read_not_created(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "a#b%20?c"
    folder.mkdir()
    db = folder / "sessions.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.execute("INSERT INTO t VALUES (7)")
    con.commit()
    con.close()
    with read_only(db) as ro:
        assert ro.execute("SELECT x FROM t").fetchall() == [(7,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a#b%20?c"]
    assert sorted(p.name for p in folder.iterdir()) == ["sessions.db"]
