"""Each unreadable file or folder is reported as unreadable, with its path, by every reader
(never as "not a session", never dropped without a word)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners import discover
from test_hostile_homes import DENIED, deny

from archive_mcp import Archive

FIXTURES = Path(__file__).parent / "fixtures" / "real-cli"
FILE = "permission denied; fix the file's permissions and ingest again"


def deny_file(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Make the file `path` unreadable: chmod 000 for a user; for root (who reads anything), its
    open fails the way it does for a user."""
    if os.geteuid() != 0:
        path.chmod(0)
        return
    real_open, target = os.open, os.fspath(path)

    def guarded(p: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(p) == target:
            raise PermissionError(13, "Permission denied", target)
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


def home(tmp_path: Path, fixture: str) -> Path:
    target = tmp_path / fixture.split("/")[-1]
    shutil.copytree(FIXTURES / fixture, target)
    return target


def skipped(root: Path) -> list[tuple[str, str]]:
    return sorted((os.path.relpath(p, root), why) for p, why in discover(root).skipped)


def test_an_unreadable_codex_rollout_or_day_folder_is_reported_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "codex-0.171.0/sessions")
    [rollout] = root.rglob("rollout-*.jsonl")
    other = root / "2026" / "12" / "03"
    other.mkdir()
    shutil.copy(rollout, other / rollout.name.replace("02T", "03T"))
    deny_file(monkeypatch, rollout)
    deny(monkeypatch, other)
    assert skipped(root) == [
        ("2026/12/02/" + rollout.name, FILE),
        ("2026/12/03", DENIED),
    ]


def test_an_unreadable_kimi_session_folder_is_reported_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "kimi-1.52.0/dot-kimi")
    [session] = root.glob("sessions/*/*/wire.jsonl")
    deny(monkeypatch, session.parent)
    assert skipped(root) == [(os.path.relpath(session.parent, root), DENIED)]


def test_an_unreadable_kimi_code_session_folder_is_reported_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "kimi-code-2.1.0/dot-kimi-code")
    [session] = root.glob("sessions/*/session_*")
    deny(monkeypatch, session)
    assert skipped(root) == [(os.path.relpath(session, root), DENIED)]


def test_an_unreadable_gemini_chat_chats_folder_or_project_is_reported_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "gemini-0.61.0/dot-gemini")
    [chat] = root.glob("tmp/gemini/chats/session-*.jsonl")
    for name in ("second", "third"):
        shutil.copytree(chat.parent.parent, root / "tmp" / name)
    deny_file(monkeypatch, chat)
    deny(monkeypatch, root / "tmp" / "second" / "chats")
    deny(monkeypatch, root / "tmp" / "third")
    assert skipped(root) == [
        ("tmp/gemini/chats/" + chat.name, FILE),
        ("tmp/second/chats", DENIED),
        ("tmp/third", DENIED),
    ]


def test_an_unreadable_qwen_chat_or_chats_folder_is_reported_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "qwen-0.15.10/dot-qwen")
    [chat] = root.glob("projects/*/chats/*.jsonl")
    shutil.copytree(chat.parent.parent, root / "projects" / "-second")
    shutil.copy(chat, chat.parent / "b-unreadable.jsonl")
    deny_file(monkeypatch, chat.parent / "b-unreadable.jsonl")
    deny(monkeypatch, root / "projects" / "-second" / "chats")
    project = os.path.relpath(chat.parent, root)
    assert skipped(root) == [
        ("projects/-second/chats", DENIED),
        (project + "/b-unreadable.jsonl", FILE),
    ]


def test_an_unreadable_claude_session_log_is_reported_even_when_it_is_its_projects_only_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = home(tmp_path, "claude-2.1.197/dot-claude")
    [log] = root.glob("projects/*/*.jsonl")
    lone = root / "projects" / "-home-dev-lone"
    lone.mkdir()
    shutil.copy(log, lone / log.name)
    shutil.copy(log, log.parent / "second.jsonl")
    deny_file(monkeypatch, log.parent / "second.jsonl")
    deny_file(monkeypatch, lone / log.name)
    found = discover(root)
    assert sorted((os.path.relpath(p, root), why) for p, why in found.skipped) == [
        ("projects/-home-dev-lone/" + log.name, FILE),
        (os.path.relpath(log.parent, root) + "/second.jsonl", FILE),
    ]
    assert [s.session_id for s in found.sessions] == [log.stem]


def test_an_unreadable_aider_history_is_reported_as_unreadable_by_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = home(tmp_path, "aider-0.86.2/repo")
    deny_file(monkeypatch, repo / ".aider.chat.history.md")
    report = Archive(embedder=None).ingest(repo)
    assert [(os.path.relpath(s.path, repo), s.reason) for s in report.skipped] == [
        (".aider.chat.history.md", FILE)
    ]
