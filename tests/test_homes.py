"""Claude Code's other homes (`~/.config/claude`, several `CLAUDE_CONFIG_DIR` paths) and the
agents' homes in the Windows users' folders seen from WSL, all under fake homes in tmp_path; one
session seen through two homes is archived once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.workspaces import home as homes

from archive_mcp import Archive

CLAUDE = Path(__file__).parent / "fixtures" / "real-cli" / "claude-2.1.197" / "dot-claude"
CLINE = Path(__file__).parent / "fixtures" / "real-cli" / "cline-3.0.65" / "dot-cline"
SESSION = "5e1f0c2a-7b3d-4c8e-9a61-2f4d8b0c6e13"


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    return tmp_path / "user-home"  # $HOME in the tests (conftest)


def sessions(report: Any) -> list[tuple[str, str]]:
    frame = Archive(embedder=None).sessions("all").collect()
    return sorted(zip(frame["source"], frame["session_id"], strict=True))


def test_the_xdg_claude_home_is_read_beside_the_dot_claude_one(user_home: Path) -> None:
    shutil.copytree(CLAUDE, user_home / ".config" / "claude")
    assert homes.claude_config_dirs() == [user_home / ".claude", user_home / ".config" / "claude"]
    report = Archive(embedder=None).ingest()
    assert [Path(r["path"]) for r in report.roots if r["found"]] == [
        user_home / ".config" / "claude"
    ]
    assert (report.sessions, report.skipped) == (1, [])
    assert sessions(report) == [("claude-code", SESSION)]


def test_claude_config_dir_may_name_several_homes(tmp_path: Path, monkeypatch: Any) -> None:
    shutil.copytree(CLAUDE, tmp_path / "work-claude")
    (tmp_path / "empty-claude").mkdir()
    monkeypatch.setenv(
        "CLAUDE_CONFIG_DIR", f"{tmp_path / 'empty-claude'}, {tmp_path / 'work-claude'},"
    )
    assert homes.claude_config_dirs() == [tmp_path / "empty-claude", tmp_path / "work-claude"]
    assert homes.claude_config_dir() == tmp_path / "empty-claude"  # where `install` writes
    report = Archive(embedder=None).ingest()
    found = [Path(r["path"]) for r in report.roots if r["found"]]
    assert found == [tmp_path / "empty-claude", tmp_path / "work-claude"]
    assert report.sessions == 1


def test_a_home_linked_under_another_name_is_archived_once(user_home: Path) -> None:
    shutil.copytree(CLAUDE, user_home / ".claude")
    (user_home / ".config").mkdir()
    (user_home / ".config" / "claude").symlink_to(user_home / ".claude")
    assert homes.default_source_roots().count(user_home / ".config" / "claude") == 0
    report = Archive(embedder=None).ingest(user_home / ".claude", user_home / ".config" / "claude")
    assert (report.sessions, report.files, report.skipped) == (1, 2, [])  # a log and its subagent
    assert sessions(report) == [("claude-code", SESSION)]
    again = Archive(embedder=None).ingest(user_home / ".config" / "claude")
    assert again.files_changed == 0  # the same files, already archived


def test_windows_homes_seen_from_wsl_are_read_for_every_agent(
    tmp_path: Path, user_home: Path, monkeypatch: Any
) -> None:
    mounts = tmp_path / "mnt"
    alice = mounts / "c" / "Users" / "Alice"
    shutil.copytree(CLAUDE, alice / ".claude")
    shutil.copytree(CLINE, alice / ".cline")
    (mounts / "c" / "Users" / "Public" / ".claude").mkdir(parents=True)  # not a user's
    (mounts / "wsl").mkdir()  # not a drive
    monkeypatch.setattr(homes, "WINDOWS_MOUNTS", mounts)
    monkeypatch.setattr(homes.platform, "release", lambda: "6.1.0-13-amd64")
    assert homes.windows_homes() == []  # not under WSL: nothing looked for
    monkeypatch.setenv("WSL_DISTRO_NAME", "Ubuntu")
    assert homes.windows_homes() == [alice]
    roots = homes.default_source_roots()
    native = [r for r in roots if not r.is_relative_to(mounts)]
    assert roots[: len(native)] == native  # this home's first, then the Windows users' ones
    assert alice / ".claude" in roots and alice / ".config" / "claude" in roots
    assert alice / ".cline" in roots and alice / ".copilot" in roots
    report = Archive(embedder=None).ingest()
    assert [Path(r["path"]) for r in report.roots if r["found"]] == [
        alice / ".claude",
        alice / ".cline",
    ]
    assert (report.sessions, report.skipped) == (2, [])
    assert sessions(report) == [("claude-code", SESSION), ("cline", "1796439758053_671bh")]


def test_the_windows_editors_extension_folders_are_read_from_wsl(
    tmp_path: Path, monkeypatch: Any
) -> None:
    mounts = tmp_path / "mnt"
    roaming = mounts / "c" / "Users" / "Bob" / "AppData" / "Roaming"
    (roaming / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev").mkdir(parents=True)
    ext = roaming / "Windsurf" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
    ext.mkdir(parents=True)
    (roaming / "Cursor" / "User").mkdir(parents=True)
    (roaming / "Slack" / "User").mkdir(parents=True)  # no VS Code-shaped editor
    monkeypatch.setattr(homes, "WINDOWS_MOUNTS", mounts)
    monkeypatch.setenv("WSL_DISTRO_NAME", "Ubuntu")
    roots = homes.default_source_roots()
    assert [r for r in roots if r.is_relative_to(roaming)] == [
        roaming / "Code" / "User",  # Copilot Chat's and Cursor's `User` folders, read whole
        roaming / "Cursor" / "User",  # (with their extensions' folders: no roots of their own)
        ext,  # and Windsurf's extensions keeping Cline's task format
    ]


def test_wsl_is_known_by_its_kernel_when_its_variables_are_not_passed_on(
    tmp_path: Path, monkeypatch: Any
) -> None:
    alice = tmp_path / "mnt" / "c" / "Users" / "Alice"
    alice.mkdir(parents=True)
    monkeypatch.setattr(homes, "WINDOWS_MOUNTS", tmp_path / "mnt")
    monkeypatch.setattr(homes.sys, "platform", "linux")
    monkeypatch.setattr(homes.platform, "release", lambda: "6.1.0-13-amd64")
    assert (homes.in_wsl(), homes.windows_homes()) == (False, [])
    monkeypatch.setattr(homes.platform, "release", lambda: "5.15.167.4-microsoft-standard-WSL2")
    assert (homes.in_wsl(), homes.windows_homes()) == (True, [alice])


def test_under_a_wsl_kernel_a_test_sees_no_real_windows_drive(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(homes.platform, "release", lambda: "5.15.167.4-microsoft-standard-WSL2")
    assert homes.in_wsl() is True
    assert homes.WINDOWS_MOUNTS == tmp_path / "no-windows-drives"
    assert homes.windows_homes() == []
