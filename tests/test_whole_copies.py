"""A session an agent rewrites whole (Cline, Gemini CLI, Continue, VS Code chats) caught halfway
through a rewrite never replaces the archived copy: it is reported, the copy that parsed is kept,
and the file is read again at the next ingest; a rewrite that parses replaces it, even shorter."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from archive_mcp.refiners import PARSERS, gemini
from archive_mcp.workspaces import workspace_id
from test_agent_ingest import gemini_home
from test_cline import CLINE, PROJECT, PROMPTS, SID
from test_documented_agents import CHANGES, _change_log
from test_new_agents import copy_as

from archive_mcp import Archive
from archive_mcp.ingest.pipeline import Skip
from archive_mcp.ingest.raw import NotWhole, snapshot_file
from archive_mcp.live import Follower

CUT = "malformed: Unterminated string starting at: line 346 column 9 (char 8441)"


def kept(copy: Path, cut: str = CUT) -> str:
    when = datetime.fromtimestamp(copy.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"{cut}; not a whole document (being written?): the copy archived {when} UTC is kept, "
        "and the file is read again at the next ingest"
    )


def cline_session(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """The Cline fixture's home with its session's first two turns written, the session's
    document and the whole session's bytes."""
    home = copy_as(CLINE, tmp_path / ".cline", "/rec/user/proj/cline", PROJECT)
    [doc] = home.rglob(f"{SID}.messages.json")
    whole = doc.read_bytes()
    first = json.loads(whole)
    doc.write_text(json.dumps(dict(first, messages=first["messages"][:8])), encoding="utf-8")
    return home, doc, whole


def archived(archive: Archive, name: str) -> Path:
    [copy] = archive.workspaces()[0].raw_dir.rglob(name)
    return copy


def ingested(tmp_path: Path) -> tuple[Archive, Path, Path, bytes, Path]:
    """`cline_session` ingested: the archive, the home, the document, the whole session's bytes
    and the document's archived copy."""
    home, doc, whole = cline_session(tmp_path)
    archive = Archive(embedder=None)
    archive.ingest(home)
    return archive, home, doc, whole, archived(archive, doc.name)


def main_texts(archive: Archive) -> list[str]:
    rows = archive.turns("all").filter(pl.col("agent") == "main").sort("turn").collect()
    return rows["user_text"].to_list()


def test_a_session_caught_mid_rewrite_keeps_its_archived_copy_and_is_read_again_next_time(
    tmp_path: Path,
) -> None:
    archive, home, doc, whole, copy = ingested(tmp_path)
    good, folder = copy.read_bytes(), sorted(p.name for p in copy.parent.iterdir())
    doc.write_bytes(whole[: len(whole) // 2])  # Cline is halfway through rewriting it
    for _ in range(2):  # not taken as read: the next ingest reads it again
        report = archive.ingest(home)
        assert report.skipped == [Skip(str(doc), kept(copy), 1)]
        assert (report.files_changed, report.turns_added, report.turns_updated) == (0, 0, 0)
        assert copy.read_bytes() == good
        assert sorted(p.name for p in copy.parent.iterdir()) == folder  # no staged copy left
    ctx = archive.load_turn_context([f"{SID}:1"], workspace=workspace_id(PROJECT))
    assert [(t.turn, t.user_text) for t in ctx.turns] == [(1, PROMPTS[1])]
    assert main_texts(archive) == PROMPTS[:2]
    doc.write_bytes(whole)  # the rewrite is finished
    done = archive.ingest(home)
    assert (done.files_changed, done.skipped) == (1, [])
    assert copy.read_bytes() == whole
    assert main_texts(archive)[:2] == PROMPTS[:2] and len(main_texts(archive)) == 7
    hits = archive.search("sleep in the shell", "all")
    assert (hits[0].session_id, hits[0].turn) == (SID, 5)


def test_a_session_never_archived_that_does_not_parse_is_reported_as_malformed(
    tmp_path: Path,
) -> None:
    home, doc, whole = cline_session(tmp_path)
    doc.write_bytes(whole[: len(whole) // 2])
    archive = Archive(embedder=None)
    report = archive.ingest(home)
    assert report.skipped == [Skip(str(doc), CUT, 1)]
    assert main_texts(archive) == []
    assert archived(archive, doc.name).read_bytes() == whole[: len(whole) // 2]


def test_a_rewrite_that_parses_to_fewer_turns_replaces_the_archived_copy(tmp_path: Path) -> None:
    home = tmp_path / "user"
    chat = gemini_home(home)
    doc = json.loads(chat.read_text(encoding="utf-8"))
    one = chat.read_bytes()
    turn = {"id": "u2", "type": "user", "timestamp": "2026-03-22T10:02:00Z", "content": "and DST?"}
    chat.write_text(json.dumps(dict(doc, messages=[*doc["messages"], turn])), encoding="utf-8")
    archive = Archive(embedder=None)
    assert archive.ingest(home / ".gemini").turns_added == 2
    chat.write_bytes(one)  # the user deleted the last message: one turn, a whole document
    report = archive.ingest(home / ".gemini")
    assert (report.files_changed, report.skipped) == (1, [])
    assert archived(archive, chat.name).read_bytes() == one
    assert archive.turns("all").collect()["user_text"].to_list() == [
        "what timezone does the date parser use"
    ]


def test_a_gemini_chat_rewritten_between_discovery_and_its_copy_keeps_the_archived_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    chat = gemini_home(home)
    archive = Archive(embedder=None)
    archive.ingest(home / ".gemini")
    copy = archived(archive, chat.name)
    good = copy.read_bytes()
    gemini_home(home, answer="Actually it keeps the local timezone.")
    meta = gemini.chat_meta

    def then_rewritten(path: Path) -> Any:
        found = meta(path)  # discovery read the whole new version ...
        path.write_bytes(path.read_bytes()[:100])  # ... then Gemini began writing the next
        return found

    monkeypatch.setattr(gemini, "chat_meta", then_rewritten)
    report = archive.ingest(home / ".gemini")
    cut = "malformed: Unterminated string starting at: line 1 column 36 (char 35)"
    assert report.skipped == [Skip(str(chat), kept(copy, cut), 1)]
    assert copy.read_bytes() == good
    ctx = archive.load_turn_context(["g1:0"], workspace=workspace_id(PROJECT))
    assert [t.assistant_text for t in ctx.turns] == ["The date parser uses UTC."]


def test_the_follower_keeps_the_archived_copy_of_a_session_caught_mid_rewrite(
    tmp_path: Path,
) -> None:
    home, doc, whole = cline_session(tmp_path)
    archive = Archive(embedder=None)
    follower = Follower(archive, [home], debounce=0.0, embed=False)
    assert follower.step()
    copy = archived(archive, doc.name)
    good = copy.read_bytes()
    doc.write_bytes(whole[: len(whole) // 2])
    assert follower.step()
    assert follower.last_report.skipped == [Skip(str(doc), kept(copy), 1)]
    assert copy.read_bytes() == good
    doc.write_bytes(whole)
    assert follower.step()
    assert (follower.last_report.skipped, copy.read_bytes()) == ([], whole)
    assert len(main_texts(archive)) == 7


def test_a_staging_folder_a_killed_ingest_left_is_removed_at_the_next_ingest(
    tmp_path: Path,
) -> None:
    archive, home, doc, _, copy = ingested(tmp_path)
    old, new = (copy.parent / f".{doc.name}.{tag}.tmp" for tag in ("abc123", "def456"))
    for folder in (old, new):
        folder.mkdir()
        (folder / doc.name).write_bytes(b'{"messages": [')
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    archive.ingest(home)
    assert (old.exists(), new.exists()) == (False, True)  # a fresh one may be a live ingest's


def test_a_change_log_caught_writing_its_first_line_is_reported_as_its_truncated_tail(
    tmp_path: Path,
) -> None:
    user = tmp_path / "User"
    log = user / "workspaceStorage" / "h1" / "chatSessions" / "s1.jsonl"
    _change_log(log, len(CHANGES))
    archive = Archive(embedder=None)
    archive.ingest(user)
    copy = archived(archive, log.name)
    good = copy.read_bytes()
    _change_log(log, 0, CHANGES[0][:30])  # no turn yet, the first line half written
    report = archive.ingest(user)
    cut = "truncated_tail: Expecting ',' delimiter: line 1 column 31 (char 30)"
    assert (report.skipped, report.files_changed) == ([Skip(str(log), kept(copy, cut), 1)], 0)
    assert copy.read_bytes() == good
    assert archive.turns("all").sort("turn").collect()["user_text"].to_list() == [
        "First question",
        "Second question",
    ]


def test_a_jsonl_session_read_whole_caught_writing_its_first_line_keeps_its_archived_copy(
    tmp_path: Path,
) -> None:
    line = json.dumps(
        {"type": "user", "sessionId": "c1", "cwd": PROJECT, "timestamp": "2026-03-20T10:00:00Z",
         "uuid": "u1", "message": {"role": "user", "content": "rename the flag"}}
    ).encode() + b"\n"  # fmt: skip
    src, dst = tmp_path / "c1.jsonl", tmp_path / "raw" / "c1.jsonl"
    src.write_bytes(line)
    parse = PARSERS["claude-code"]
    assert snapshot_file(src, dst, tmp_path / "raw", parse=parse) and parse(dst).turns
    src.write_bytes(line[:40])  # rewritten whole: caught halfway through its first line
    with pytest.raises(NotWhole) as caught:
        snapshot_file(src, dst, tmp_path / "raw", parse=parse)
    assert (caught.value.line, caught.value.why.split(":")[0]) == (1, "truncated_tail")
    assert dst.read_bytes() == line
    assert [p.name for p in dst.parent.iterdir()] == ["c1.jsonl"]  # no staged copy left
