"""Agents' SQLite stores are opened read-only whatever characters their folder's name holds, and
their exports are written only to this user's private folder."""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest
from archive_mcp.refiners.stores import export_dir, read_only


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


def test_the_exports_private_folder_is_made_this_users_alone_when_found_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    private = tmp_path / f"archive-mcp-{os.getuid()}"
    private.mkdir(mode=0o777)
    private.chmod(0o777)
    folder = export_dir(tmp_path / "sessions.db", "goose")
    assert folder.parent.parent == private
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_an_exports_folder_that_is_a_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"archive-mcp-{os.getuid()}").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PermissionError, match="is not a folder of this user's"):
        export_dir(tmp_path / "sessions.db", "goose")
    assert list((tmp_path / "elsewhere").iterdir()) == []
