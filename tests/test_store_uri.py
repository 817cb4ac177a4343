"""Agents' SQLite stores are opened read-only whatever characters their folder's name holds, and
their exports are written only to this user's private folder, whole even when two processes
export one session at once."""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
import threading
from pathlib import Path

import pytest
from archive_mcp.refiners.stores import export_dir, export_path, read_only, write_export


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


def test_two_exporters_of_one_session_at_once_each_leave_a_whole_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ingests (a follower and a hook) export the same session at the same moment: each
    writes its own temporary file and renames it into place, so neither renames the other's
    half-written one nor finds its own gone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    export = export_path(export_dir(tmp_path / "sessions.db", "goose"), "s1")
    versions = [b'{"rows": "old"}\n' * 50_000, b'{"rows": "new"}\n' * 60_000]
    renaming = threading.Barrier(2, timeout=10)
    real = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == export:
            renaming.wait()  # both writers' bytes are down before either renames
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    seen: list[bytes] = []
    errors: list[BaseException] = []

    def exporter(data: bytes) -> None:
        try:
            write_export(export, data)
            seen.append(export.read_bytes())
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=exporter, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(seen) == 2 and all(s in versions for s in seen)  # never a torn export
    assert export.read_bytes() in versions
    assert [p.name for p in export.parent.iterdir()] == [export.name]  # no temporary file left
