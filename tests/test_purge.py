"""Purge means gone: a purged session is remembered in the home and never archived again by an
ingest, the follower or a session-end hook until the user re-admits it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_agent_ingest import PROJECT, claude_home

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.errors import NotFound
from archive_mcp.install import hook_command
from archive_mcp.live import Follower

SID = "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17"  # a Kimi fixture session of webapp


def _home() -> Path:
    return Path(os.environ["HOME"])  # the tmp home conftest set


def _sessions(archive: Archive) -> list[str]:
    return sorted(set(archive.turns("all").collect()["session_id"].to_list()))


def _grow(log: Path, n: int) -> None:
    record = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
    record.update(timestamp=f"2026-03-20T10:05:{n:02d}Z", message={"role": "user", "content": "x"})
    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def test_a_purged_session_stays_out_of_ten_ingests_until_it_is_unpurged(kimi_root: Path) -> None:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    archive.purge_session(SID, "webapp")
    (row,) = archive.purged_sessions()
    assert (row.session_id, row.source, row.workspace) == (
        SID,
        "kimi",
        archive.workspace("webapp").id,
    )
    assert [Path(p).name for p in row.paths] == ["wire.jsonl"]
    for _ in range(10):
        report = archive.ingest(kimi_root)
        assert (report.purged, report.turns_added) == (1, 0)
        assert SID not in _sessions(archive)
    assert not (archive.workspace("webapp").root / "raw" / "kimi" / SID).exists()
    assert [p.session_id for p in archive.unpurge_session(SID[:8])] == [SID]
    assert archive.purged_sessions() == []
    report = archive.ingest(kimi_root)
    assert (report.purged, report.turns_added) == (0, 3)
    assert SID in _sessions(archive)


def test_ingest_include_purged_archives_it_again_and_forgets_the_purge(kimi_root: Path) -> None:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    archive.purge_session(SID, "webapp")
    assert archive.ingest(kimi_root, include_purged=True).turns_added == 3
    assert archive.purged_sessions() == []
    assert archive.ingest(kimi_root).purged == 0 and SID in _sessions(archive)


def test_the_follower_never_archives_a_purged_session_while_its_log_grows() -> None:
    log = claude_home(_home())
    claude_home(_home(), sid="c2", prompt="add a cache")
    archive = Archive(embedder=None)
    follower = Follower(archive, [_home() / ".claude"], debounce=0.0)
    assert follower.step() and _sessions(archive) == ["c1", "c2"]
    archive.purge_session("c1", PROJECT)
    for n in range(5):
        _grow(log, n)
        _grow(log.with_name("c2.jsonl"), n)
        assert follower.step()
        assert follower.last_report is not None and follower.last_report.purged == 1
        assert _sessions(archive) == ["c2"]
    assert archive.stats(PROJECT).turns == 6  # c2 kept growing: 1 turn + 5 more


def test_the_session_end_hooks_ingest_leaves_a_purged_session_out() -> None:
    claude_home(_home())
    archive = Archive(embedder=None)
    argv = hook_command().split(" ingest ", 1)[1].split(" >/dev/null")[0].split()
    assert argv == ["--no-embed", str(_home() / ".claude")]
    assert CliRunner().invoke(main, ["ingest", *argv]).exit_code == 0
    archive.purge_session("c1", PROJECT)
    result = CliRunner().invoke(main, ["ingest", *argv])
    assert result.exit_code == 0
    assert (
        "purged: 1 sessions not archived again (`archive-mcp sessions unpurge SESSION` or "
        "--include-purged re-admits them)\n"
    ) in result.stdout
    assert _sessions(archive) == []


def test_sessions_unpurge_lists_readmits_and_says_what_it_does_not_know(kimi_root: Path) -> None:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    runner = CliRunner()
    result = runner.invoke(main, ["sessions", "purge", SID, "-w", "webapp", "--yes"])
    assert (result.exit_code, result.stdout) == (
        0,
        f"purged {SID} from webapp: 2 paths removed; it stays out of every later ingest "
        "(`sessions unpurge` re-admits it)\n",
    )
    listed = runner.invoke(main, ["sessions", "unpurge", "--json"])
    assert [r["session_id"] for r in json.loads(listed.stdout)] == [SID]
    missing = runner.invoke(main, ["sessions", "unpurge", "nope"])
    assert (missing.exit_code, missing.stderr) == (
        1,
        f"Error: 'nope' is not a purged session; purged sessions: {SID}\n",
    )
    back = runner.invoke(main, ["sessions", "unpurge", SID[:8]])
    assert (back.exit_code, back.stdout) == (
        0,
        f"re-admitted {SID}: the next ingest archives it again\n",
    )
    empty = runner.invoke(main, ["sessions", "unpurge"])
    assert (empty.exit_code, empty.stdout, empty.stderr) == (0, "", "no purged sessions\n")
    with pytest.raises(NotFound):
        archive.unpurge_session(SID)


def test_a_copy_purged_while_another_workspace_holds_the_session_is_not_remembered(
    archive: Archive,
) -> None:
    ml = archive.workspace("ml-pipeline")
    loader = next(iter(archive.raw_files(ml)))
    web = archive.workspace("webapp")
    src = ml.root / "refined" / f"{loader}.parquet"
    (web.root / "refined" / src.name).write_bytes(src.read_bytes())
    archive.purge_session(loader, "webapp")
    assert archive.purged_sessions() == []


def _swapped_meanwhile(monkeypatch: pytest.MonkeyPatch, old: Path) -> None:
    """`old` (an index folder another process swaps out) is removed after a walk listed it and
    before it scans it."""
    (old / "vectors").mkdir(parents=True)
    real = os.scandir

    def swapped(path: Any = ".") -> Any:
        if isinstance(path, str | Path) and Path(path) == old / "vectors":
            shutil.rmtree(old)
        return real(path)

    monkeypatch.setattr(os, "scandir", swapped)


def test_a_purged_session_comes_back_with_include_purged_while_another_process_swaps_an_index(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stress flake: a search in another process swaps the index folder (the old one is
    removed) while the ingest looks for temp files a killed write left; the walk met the folder
    gone, the whole workspace was skipped with its state unsaved, and the session purged before
    stayed out, so the next purge of it raised NotFound."""
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    archive.purge_session(SID, "webapp")
    old = archive.workspace("webapp").cache_dir / "index-old"
    with monkeypatch.context() as patch:
        _swapped_meanwhile(patch, old)
        report = archive.ingest(kimi_root, include_purged=True)
    assert (report.skipped, report.turns_added) == ([], 3)
    assert not old.exists() and SID in _sessions(archive)
    assert archive.purge_session(SID, "webapp").session_id == SID  # no NotFound


def test_memory_stats_count_a_folder_swapped_out_meanwhile_as_gone(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    before = archive.memory_stats("webapp").archive_bytes
    _swapped_meanwhile(monkeypatch, archive.workspace("webapp").cache_dir / "index-old")
    assert archive.memory_stats("webapp").archive_bytes == before
