"""Following the agents' homes: the server's background follower, `archive-mcp watch`, its lock,
and kill-safety (a follower killed mid-round and restarted archives what a fresh ingest would)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from archive_mcp.workspaces import default_source_roots
from mcp import Client
from test_agent_ingest import PROJECT, claude_home

from archive_mcp import Archive
from archive_mcp.live import Follower, changed_files, scan
from archive_mcp.mcp.server import build_server

pytestmark = pytest.mark.anyio


def user_home() -> Path:
    return Path(os.environ["HOME"])  # the tmp home conftest set


def turn(text: str, sid: str = "c1", sec: int = 30) -> str:
    return (
        json.dumps(
            {
                "type": "user",
                "sessionId": sid,
                "cwd": PROJECT,
                "timestamp": f"2026-03-20T10:05:{sec:02d}Z",
                "message": {"role": "user", "content": text},
            }
        )
        + "\n"
    )


async def search(client: Client, word: str) -> dict[str, Any]:
    r = await client.call_tool(
        "search_context", {"query": word, "all_workspaces": True, "mode": "lexical"}
    )
    assert not r.is_error, r.content
    return r.structured_content


async def found_within(client: Client, word: str, seconds: float) -> float:
    """Seconds until a search for `word` has a hit (fails after `seconds`)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if (await search(client, word))["hits"]:
            return time.monotonic() - t0
        await anyio.sleep(0.1)
    raise AssertionError(f"{word!r} not found within {seconds} s")


async def test_the_server_follows_a_live_session_and_a_new_one_within_5_s() -> None:
    log = claude_home(user_home())  # the default Claude Code home: ~/.claude
    server = build_server(Archive(embedder=None), cwd=PROJECT, follow=True)
    async with Client(server) as client:
        await found_within(client, "dateutil", 10)  # the round at start
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(turn("now the quuxfrobnicator parser"))
        claude_home(user_home(), sid="c2", prompt="the zorblatt migration")
        assert await found_within(client, "quuxfrobnicator", 5) < 5
        assert await found_within(client, "zorblatt", 5) < 5
        r = await search(client, "quuxfrobnicator")
        assert r["catching_up"] is None
        assert r["hits"][0]["session_id"] == "c1" and r["hits"][0]["turn"] == 1


async def test_a_search_during_a_round_answers_from_the_archive_and_says_it_is_catching_up() -> (
    None
):
    log = claude_home(user_home())
    archive = Archive(embedder=None)
    archive.ingest(user_home() / ".claude")
    real_ingest, inside, release = archive.ingest, threading.Event(), threading.Event()

    def slow_ingest(*paths: Any, **kw: Any) -> Any:
        inside.set()
        release.wait(10)
        return real_ingest(*paths, **kw)

    archive.ingest = slow_ingest  # type: ignore[method-assign]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(turn("now the quuxfrobnicator parser"))
    claude_home(user_home(), sid="c2", prompt="the zorblatt migration")
    server = build_server(archive, cwd=PROJECT, follow=True)
    async with Client(server) as client:
        await anyio.to_thread.run_sync(inside.wait, 10)
        r = await client.call_tool(
            "search_context", {"query": "dateutil", "workspace": PROJECT, "mode": "lexical"}
        )
        text = r.content[0].text
        assert r.structured_content["catching_up"] == "archive catching up: 2 files pending"
        assert text.splitlines()[0] == (
            "(archive catching up: 2 files pending; these hits are from what is archived so far)"
        )
        assert [h["session_id"] for h in r.structured_content["hits"]] == ["c1"]
        assert not (await search(client, "zorblatt"))["hits"]  # not archived yet
        release.set()
        await found_within(client, "zorblatt", 5)
        assert (await search(client, "zorblatt"))["catching_up"] is None


def test_scan_sees_appends_new_files_and_only_the_agents_session_folders(tmp_path: Path) -> None:
    home = tmp_path / "u"
    log = claude_home(home)
    (home / ".claude" / "todos").mkdir()
    (home / ".claude" / "todos" / "t.json").write_text("[]")
    roots = [home / ".claude", home / ".codex"]  # the second does not exist
    before = scan(roots)
    assert [p for p in before if not p.endswith(os.sep)] == [str(log)]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(turn("more"))
    new = claude_home(home, sid="c2")
    (home / ".claude" / "todos" / "t.json").write_text("[1]")  # not a session: not followed
    assert changed_files(before, scan(roots)) == sorted([str(log), str(new)])


def test_a_second_follower_of_the_same_archive_stands_by() -> None:
    claude_home(user_home())
    first, second = Follower(Archive(embedder=None)), Follower(Archive(embedder=None))
    assert first.acquire() and not second.acquire()
    assert "is already followed by process" in second.holder_message()
    assert str(os.getpid()) in second.holder_message()
    first.release()
    assert second.acquire()
    second.release()


# --- archive-mcp watch, in subprocesses -------------------------------------------------------


class Watcher:
    """`archive-mcp watch` in a subprocess, its stderr collected line by line."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "ARCHIVE_MCP_EMBEDDER": "none", "ARCHIVE_MCP_LOCK_TIMEOUT": "60"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "archive_mcp", "watch", "--interval", "0.2", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # its ingest workers too can be killed with it (killpg)
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def saw(self, pattern: str, seconds: float = 30) -> str:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            for line in list(self.lines):
                if re.search(pattern, line):
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} in {self.lines}")

    def finish(self, seconds: float = 30) -> int:
        code = self.proc.wait(seconds)
        self._reader.join(5)
        return code


ROUND = r"following 1 of \d+ homes: \d+ files changed, \d+ turns added"


def test_watch_follows_in_the_foreground_and_stops_cleanly_on_sigterm_and_sigint() -> None:
    log = claude_home(user_home())
    w = Watcher()
    w.saw(ROUND)
    roots = ", ".join(str(r) for r in default_source_roots())
    assert w.lines[0] == f"following {roots} into {os.environ['ARCHIVE_MCP_HOME']}"
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(turn("now the quuxfrobnicator parser"))
    w.saw(r"1 files changed, 1 turns added, 1 updated")
    w.proc.send_signal(signal.SIGTERM)
    assert w.finish() == 0
    assert w.lines[-2:] == [
        "SIGTERM: stopping after the current round",
        f"stopped after {len(re.findall(ROUND, chr(10).join(w.lines)))} rounds; "
        "the archive state is saved",
    ]
    turns = Archive(embedder=None).turns("all").collect().sort("turn")
    assert turns["user_text"].to_list() == ["fix the date parser", "now the quuxfrobnicator parser"]
    again = Watcher()
    again.saw(r"0 files changed, 0 turns added")
    again.proc.send_signal(signal.SIGINT)
    assert again.finish() == 0 and again.lines[-2] == "SIGINT: stopping after the current round"


def test_a_second_watch_exits_with_who_follows_or_waits_for_it_with_wait() -> None:
    claude_home(user_home())
    first = Watcher()
    first.saw(ROUND)
    second = Watcher()
    assert second.finish() == 1
    assert re.fullmatch(
        rf"Error: {re.escape(os.environ['ARCHIVE_MCP_HOME'])} is already followed by process "
        rf"{first.proc.pid} \(`.*watch --interval 0.2`, since \S+\); one follower per archive is "
        r"enough \(stop it first, or pass --wait to take over when it exits\)",
        second.lines[-1],
    ), second.lines
    waiting = Watcher("--wait")
    waiting.saw(rf"^waiting: .* is already followed by process {first.proc.pid} ")
    time.sleep(0.5)
    assert not re.search(ROUND, "\n".join(waiting.lines))  # it does not follow meanwhile
    first.proc.send_signal(signal.SIGTERM)
    assert first.finish() == 0
    waiting.saw(ROUND)
    waiting.proc.send_signal(signal.SIGTERM)
    assert waiting.finish() == 0


# --- kill-safety ------------------------------------------------------------------------------


def digest(home: Path) -> dict[str, Any]:
    """Everything an ingest leaves: the refined rows, each raw copy's hash, each file's state."""
    archive = Archive(home, embedder=None)
    rows = archive.turns("all").collect().sort("workspace_id", "session_id", "agent", "turn")
    raw, states = {}, {}
    for ws in archive.workspaces():
        for p in sorted(ws.raw_dir.rglob("*")):
            if p.is_file():
                raw[f"{ws.id}/{p.relative_to(ws.root)}"] = hashlib.sha256(
                    p.read_bytes()
                ).hexdigest()
        state = json.loads((ws.state_dir / "ingest.json").read_text(encoding="utf-8"))
        states[ws.id] = state["files"]
    return {
        "rows": rows.height,
        "rows_sha": hashlib.sha256(rows.write_ndjson().encode()).hexdigest(),
        "raw": raw,
        "states": states,
    }


@pytest.mark.slow  # end to end (processes, a server): CI runs it; the fast loop does not
def test_a_watcher_killed_mid_catch_up_then_restarted_archives_what_a_fresh_ingest_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive_mcp.synthetic.sessions import generate_share_dir

    share = tmp_path / "kimi-live"
    generate_share_dir(share, 2000, big_every=0, small=(200, 1500), turns_per_session=(5, 20))
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    delay = random.uniform(0.1, 1.0)
    first = Watcher()
    first.saw("^following ")
    time.sleep(delay)
    os.killpg(first.proc.pid, signal.SIGKILL)
    assert first.finish() == -signal.SIGKILL
    assert not any(re.search(ROUND, line) for line in first.lines), (delay, first.lines)
    again = Watcher()
    again.saw(ROUND, 120)
    again.proc.send_signal(signal.SIGTERM)
    assert again.finish() == 0
    fresh = tmp_path / "fresh"
    Archive(fresh, embedder=None).ingest(share)
    got, want = digest(Path(os.environ["ARCHIVE_MCP_HOME"])), digest(fresh)
    assert got["rows"] == want["rows"] == 2000
    assert got == want, f"killed after {delay:.2f} s"


def test_a_search_whose_index_rebuild_races_an_ingest_indexes_what_it_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from archive_mcp.search.index import WorkspaceIndex

    claude_home(user_home())
    archive = Archive(embedder=None)
    archive.ingest(user_home() / ".claude")
    listed = WorkspaceIndex._file_stats
    raced: list[bool] = []

    def racing(self: WorkspaceIndex) -> dict[str, list[int]]:
        out = listed(self)
        if not raced:  # the follower writes a new session between the listing and the build
            raced.append(True)
            claude_home(user_home(), sid="c2", prompt="the zorblatt migration")
            Archive(embedder=None).ingest(user_home() / ".claude")
        return out

    monkeypatch.setattr(WorkspaceIndex, "_file_stats", racing)
    first = archive.search("dateutil", workspace="all", mode="lexical")  # raised KeyError: 'c2'
    assert raced and "c1" in {h.session_id for h in first}
    found = archive.search("zorblatt", workspace="all", mode="lexical")
    assert [h.session_id for h in found] == ["c2"]
