"""Excluded paths (the `exclude` setting, $ARCHIVE_MCP_EXCLUDE, `--exclude` on ingest, serve and
watch): a session whose work dir is under one is never archived, only counted."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_agent_ingest import PROJECT, claude_home

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli
from archive_mcp.ingest.exclude import Excluder
from archive_mcp.live import Follower

PRIVATE = "/home/alice/projects/private"


def user_home() -> Path:
    return Path(os.environ["HOME"])  # the tmp home conftest set


def two_projects() -> None:
    claude_home(user_home())  # webapp: "fix the date parser"
    claude_home(user_home(), cwd=PRIVATE + "/api", sid="p1", prompt="rotate the vault secret")


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.output


def archived() -> tuple[list[str], list[str]]:
    """The archive's session ids, and every file under the workspaces' raw/ folders."""
    archive = Archive(embedder=None)
    sessions = sorted(archive.turns("all").collect()["session_id"].unique().to_list())
    raw = sorted(str(p) for ws in archive.workspaces() for p in ws.raw_dir.rglob("*.jsonl"))
    return sessions, raw


def test_a_pattern_is_a_folder_and_everything_under_it_or_a_glob_over_the_folders() -> None:
    ex = Excluder(["/w/private", "~/x/secret-*", "*/scratch/*", ""])
    assert ex.patterns == ["/w/private", "~/x/secret-*", "*/scratch/*"]
    home = os.environ["HOME"]
    assert [
        ex.match(wd)
        for wd in (
            "/w/private",
            "/w/private/sub/dir",
            "/w/privateer",
            "/w/x/../private/a",
            f"{home}/x/secret-1/b",
            f"{home}/x/secrets",
            "/a/scratch/b",
            "/a/scratch",
            None,
        )
    ] == [
        "/w/private",
        "/w/private",
        None,
        "/w/private",
        "~/x/secret-*",
        None,
        "*/scratch/*",
        None,
        None,
    ]
    assert not Excluder([]) and Excluder(["/"]).match("/anything") == "/"


def test_ingest_exclude_skips_and_counts_the_sessions_and_copies_nothing_of_them() -> None:
    two_projects()
    code, out = run("ingest", "--no-embed", "--exclude", PRIVATE, str(user_home() / ".claude"))
    assert code == 0, out
    assert out.splitlines()[0].startswith("1 files (1 changed, ")
    assert out.splitlines()[1].startswith("search index built in ")
    assert out.splitlines()[2:] == [
        "new workspaces: webapp",
        f"excluded: 1 sessions under {PRIVATE}",
    ]
    sessions, raw = archived()
    assert sessions == ["c1"] and len(raw) == 1 and "private" not in raw[0]
    assert not any(
        "vault" in p.read_text()
        for p in Path(os.environ["ARCHIVE_MCP_HOME"]).rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json")
    )
    code, out = run("ingest", "--no-embed", "--json", "--exclude", "*/projects/priv*")
    assert code == 0 and '"excluded": 1' in out
    code, out = run("ingest", "--no-embed")  # no flag, no setting: archived now
    assert code == 0 and "excluded" not in out
    assert archived()[0] == ["c1", "p1"]


def test_the_setting_from_the_file_or_its_variable_is_honoured_and_doctor_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    two_projects()
    path = Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml"
    assert "info    setting exclude: (none) (from default)\n" in run("doctor")[1]
    assert run("config", "set", "exclude", f"{PRIVATE}:/tmp/x-*") == (
        0,
        f"{path}: exclude = {PRIVATE}, /tmp/x-*\n",
    )
    assert path.read_text() == f'exclude = ["{PRIVATE}", "/tmp/x-*"]\n'
    code, out = run("ingest", "--no-embed")
    assert code == 0 and f"excluded: 1 sessions under {PRIVATE}, /tmp/x-*\n" in out
    assert archived()[0] == ["c1"]
    assert f"info    setting exclude: {PRIVATE}, /tmp/x-* (from config file)\n" in run("doctor")[1]
    code, out = run("config", "show")
    assert code == 0 and (
        f"exclude = {PRIVATE}, /tmp/x-*  [file; $ARCHIVE_MCP_EXCLUDE, ingest/serve/watch --exclude]\n"
        in out
    )
    monkeypatch.setenv("ARCHIVE_MCP_EXCLUDE", "/elsewhere")
    assert "info    setting exclude: /elsewhere (from $ARCHIVE_MCP_EXCLUDE)\n" in run("doctor")[1]
    code, out = run("ingest", "--no-embed")
    assert code == 0 and "excluded" not in out
    assert archived()[0] == ["c1", "p1"]


def test_the_follower_skips_excluded_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    two_projects()
    seen: list[str] = []
    monkeypatch.setenv("ARCHIVE_MCP_EXCLUDE", PRIVATE)  # the setting, read each round
    follower = Follower(Archive(embedder=None), status=seen.append)
    assert follower.step()
    assert follower.last_report.excluded == 1 and archived()[0] == ["c1"]
    assert re.search(
        r": 1 files changed, 1 turns added, 0 updated, 1 sessions excluded \(\d+\.\d s\)$", seen[-1]
    ), seen
    given = Follower(Archive(embedder=None), [user_home() / ".claude"], exclude=[PROJECT])
    claude_home(user_home(), cwd=PRIVATE, sid="p2", prompt="a second private one")
    assert given.step() and given.last_report.excluded == 1  # webapp now; private archived
    assert archived()[0] == ["c1", "p1", "p2"]


def test_serve_takes_the_homes_to_follow_and_exclude_as_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import archive_mcp.mcp.server as server

    got: dict[str, Any] = {}
    monkeypatch.setattr(server, "serve", lambda archive, **kw: got.update(kw))
    home = str(user_home() / ".claude")
    code, out = run("serve", home, "/x/codex", "--exclude", PRIVATE, "--exclude", "/y")
    assert code == 0, out
    assert (got["paths"], got["exclude"], got["follow"]) == (
        (home, "/x/codex"),
        [PRIVATE, "/y"],
        True,
    )
    run("serve")
    assert (got["paths"], got["exclude"]) == ((), None)  # the settings then
    code, out = run("serve", home, "--no-follow")
    assert code == 2 and "PATHs are the homes to follow; they cannot go with --no-follow" in out
