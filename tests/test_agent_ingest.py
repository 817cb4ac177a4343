"""Ingest of Claude Code, Codex CLI and Gemini CLI homes: one workspace per project whatever the
agent, live files, snapshots of rewritten chats, default roots, worktree links, source filters."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
from archive_mcp.workspaces import workspace_id
from click.testing import CliRunner
from expected import looping_subsessions

from archive_mcp import Archive, Filters
from archive_mcp.cli.main import main as cli

REAL = Path(__file__).parent / "fixtures" / "real"
PROJECT = "/home/alice/projects/webapp"


def jsonl(path: Path, records: list[dict[str, Any]], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return path


def claude_home(
    home: Path, cwd: str = PROJECT, sid: str = "c1", prompt: str = "fix the date parser"
) -> Path:
    def rec(kind: str, content: Any, sec: int, **extra: Any) -> dict[str, Any]:
        return {
            "type": kind,
            "sessionId": sid,
            "cwd": cwd,
            "version": "2.1.9",
            "timestamp": f"2026-03-20T10:00:{sec:02d}Z",
            "message": {"role": kind, "content": content},
            **extra,
        }

    folder = home / ".claude" / "projects" / ("-" + cwd.strip("/").replace("/", "-"))
    return jsonl(
        folder / f"{sid}.jsonl",
        [
            rec("user", prompt, 0),
            {
                **rec(
                    "assistant", [{"type": "text", "text": "Parsed dates with dateutil now."}], 1
                ),
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Parsed dates with dateutil now."}],
                    "usage": {"input_tokens": 5, "output_tokens": 9},
                },
            },
        ],
    )


def codex_home(home: Path, cwd: str = PROJECT) -> Path:
    def rec(kind: str, payload: dict[str, Any], sec: int) -> dict[str, Any]:
        return {"timestamp": f"2026-03-21T10:00:{sec:02d}.000Z", "type": kind, "payload": payload}

    return jsonl(
        home
        / ".codex"
        / "sessions"
        / "2026"
        / "03"
        / "21"
        / "rollout-2026-03-21T11-00-00-x1.jsonl",
        [
            rec("session_meta", {"id": "x1", "cwd": cwd, "cli_version": "0.98.0"}, 0),
            rec(
                "event_msg",
                {"type": "user_message", "message": "why does the date parser drop timezones"},
                1,
            ),
            rec(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "It strips tzinfo in parse_date."}],
                },
                2,
            ),
            rec("event_msg", {"type": "task_complete"}, 3),
        ],
    )


def gemini_home(home: Path, cwd: str = PROJECT, answer: str = "The date parser uses UTC.") -> Path:
    chats = home / ".gemini" / "tmp" / "webapp" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (chats.parent / ".project_root").write_text(cwd, encoding="utf-8")
    doc = {
        "sessionId": "g1",
        "projectHash": hashlib.sha256(cwd.encode()).hexdigest(),
        "startTime": "2026-03-22T10:00:00Z",
        "lastUpdated": "2026-03-22T10:01:00Z",
        "messages": [
            {
                "id": "u1",
                "type": "user",
                "timestamp": "2026-03-22T10:00:00Z",
                "content": "what timezone does the date parser use",
            },
            {"id": "g1", "type": "gemini", "timestamp": "2026-03-22T10:00:05Z", "content": answer},
        ],
    }
    path = chats / "session-2026-03-22T10-00-g1.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_three_agents_of_one_project_share_its_workspace_and_filter_by_source(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    claude_home(home), codex_home(home), gemini_home(home)
    archive = Archive(embedder=None)
    report = archive.ingest(home / ".claude", home / ".codex", home / ".gemini")
    assert (report.sessions, report.turns_added, report.skipped) == (3, 3, [])
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(PROJECT),
        [PROJECT],
        ["claude-code", "codex", "gemini"],
    )
    sessions = archive.sessions(ws.id).collect()
    assert sorted(zip(sessions["source"], sessions["session_id"], strict=True)) == [
        ("claude-code", "c1"),
        ("codex", "x1"),
        ("gemini", "g1"),
    ]
    hits = archive.search("date parser", workspace=ws.id, mode="lexical")
    assert sorted(h.source for h in hits) == ["claude-code", "codex", "gemini"]
    only = archive.search("date parser", ws.id, mode="lexical", filters=Filters(source="codex"))
    assert [(h.source, h.session_id) for h in only] == [("codex", "x1")]
    archive.tag_theme(
        "dates", ws.id, references=[{"session_id": s, "turn": 0} for s in ("c1", "x1", "g1")]
    )
    timeline = archive.trace_theme("dates", ws.id)
    assert [e.source for e in timeline.events] == ["claude-code", "codex", "gemini"]
    out = CliRunner().invoke(
        cli,
        [
            "--embedder",
            "none",
            "search",
            "date parser",
            "-w",
            ws.id,
            "--mode",
            "lexical",
            "--source",
            "gemini",
        ],
    )
    assert (
        out.exit_code == 0
        and out.stdout.startswith("g1:0 2026-03-22T10:00")
        and "gemini" in out.stdout
    )
    bad = CliRunner().invoke(
        cli, ["--embedder", "none", "search", "x", "-w", ws.id, "--source", "vim"]
    )
    assert bad.exit_code == 2


def test_second_run_does_no_work_and_a_growing_claude_log_is_read_from_its_open_turn(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    log = claude_home(home)
    archive = Archive(embedder=None)
    archive.ingest(home / ".claude")
    again = archive.ingest(home / ".claude")
    assert (again.files_changed, again.bytes_archived, again.turns_added, again.turns_updated) == (
        0,
        0,
        0,
        0,
    )
    line = {
        "type": "user",
        "sessionId": "c1",
        "cwd": PROJECT,
        "timestamp": "2026-03-20T10:05:00Z",
        "message": {"role": "user", "content": "now the time parser"},
    }
    size = log.stat().st_size
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line)[:40])  # the agent is still writing this line
    live = archive.ingest(home / ".claude")
    assert live.turns_added == 0 and [s.reason[:23] for s in live.skipped] == [
        "last line is incomplete"
    ]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line)[40:] + "\n")
    done = archive.ingest(home / ".claude")
    assert (done.turns_added, done.turns_updated) == (1, 1)
    rows = archive.turns("all").collect().sort("turn")
    assert rows["user_text"].to_list() == ["fix the date parser", "now the time parser"]
    ref = rows["raw_ref"][1]
    raw = (archive.workspaces()[0].root / ref["file"]).read_bytes()
    assert ref["byte_start"] == size and raw[ref["byte_start"] :].startswith(b'{"type": "user"')


def test_a_rewritten_gemini_chat_is_archived_as_a_snapshot_and_replaces_its_turns(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    chat = gemini_home(home)
    archive = Archive(embedder=None)
    first = archive.ingest(home / ".gemini")
    assert (first.files_changed, first.turns_added) == (1, 1)
    assert archive.ingest(home / ".gemini").files_changed == 0
    gemini_home(home, answer="Actually it keeps the local timezone.")
    second = archive.ingest(home / ".gemini")
    assert second.files_changed == 1 and second.skipped == []
    rows = archive.turns("all").collect()
    assert rows["assistant_text"].to_list() == ["Actually it keeps the local timezone."]
    ws = archive.workspaces()[0]
    assert (ws.root / rows["raw_ref"][0]["file"]).read_bytes() == chat.read_bytes()


def test_load_turn_context_reads_a_later_turn_of_a_whole_file_chat(tmp_path: Path) -> None:
    home = tmp_path / "user"
    chat = gemini_home(home)
    doc = json.loads(chat.read_text(encoding="utf-8"))
    doc["messages"] += [
        {"id": "u2", "type": "user", "timestamp": "2026-03-22T10:02:00Z", "content": "and DST?"},
        {
            "id": "g2",
            "type": "gemini",
            "timestamp": "2026-03-22T10:02:05Z",
            "content": "DST is ignored.",
        },
    ]
    chat.write_text(json.dumps(doc), encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(home / ".gemini")
    ctx = archive.load_turn_context(
        [{"session_id": "g1", "turn": 1}], workspace=workspace_id(PROJECT)
    )
    assert [(t.turn, t.user_text, t.assistant_text) for t in ctx.turns] == [
        (1, "and DST?", "DST is ignored.")
    ]


def test_real_logs_report_every_invalid_line_with_file_and_line(tmp_path: Path) -> None:
    archive = Archive(embedder=None)
    report = archive.ingest(REAL / "claude" / "m-thisness", REAL / "claude" / "moredip")
    cut = [(Path(s.path).name, s.line) for s in report.skipped if s.line]
    assert cut == [("e0ce82fa-774f-4827-8cef-17b1b18b9f2a.jsonl", n) for n in range(3, 10)]
    assert report.sessions == 4  # the empty and the summary-only logs hold no turn
    names = {ws.id: ws.name for ws in archive.workspaces()}
    assert names[workspace_id("C:\\Users\\Mischa")] == "Mischa"
    assert names[workspace_id("/Users/pete/git/moredip/session-share")] == "session-share"
    assert report.suggestions == []  # the worktree's repo (M-Claude) is not archived here


def test_a_linked_worktree_lands_in_its_repo_workspace_and_ingest_suggests_unlinked_ones(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    repo, feat = "/home/alice/web", "/home/alice/web/.worktrees/feat-dates"
    claude_home(home, cwd=repo, sid="c1")
    claude_home(home, cwd=feat, sid="c2", prompt="date parsing on the branch")
    archive = Archive(embedder=None)
    report = archive.ingest(home / ".claude")
    assert report.suggestions == [
        f"{feat} looks like a worktree or branch of {repo}: "
        f"`archive-mcp workspaces merge {workspace_id(feat)} --into {workspace_id(repo)}` joins "
        "their sessions"
    ]
    shutil.rmtree(archive.home)
    archive = Archive(embedder=None)
    archive.registry.ensure(workspace_id(repo), path=repo)
    archive.link(feat, workspace_id(repo))
    report = archive.ingest(home / ".claude")
    assert report.suggestions == [] and len(archive.workspaces()) == 1
    sessions = archive.sessions(workspace_id(repo)).collect()
    assert sorted(sessions["session_id"]) == ["c1", "c2"]


def test_ingest_without_paths_reads_every_agents_default_home_and_says_which(
    tmp_path: Path, monkeypatch: Any
) -> None:
    home = tmp_path / "user-home"  # $HOME in the tests
    claude_home(home), codex_home(home)
    result = CliRunner().invoke(cli, ["--embedder", "none", "ingest"])
    assert result.exit_code == 0
    assert result.stdout.startswith("2 files (2 changed")
    looked = [line for line in result.stderr.splitlines() if line.startswith("looked in")]
    assert looked == [
        f"looked in 21 default roots; found: {home / '.claude'}, {home / '.codex'}; not present: "
        f"{tmp_path / 'no-kimi'}, {tmp_path / 'no-kimi-code'}, {home / '.config' / 'claude'}, "
        f"{home / '.gemini'}, {home / '.qwen'}, "
        f"{home / '.local' / 'share' / 'opencode'}, {home / '.pi' / 'agent'}, {home / '.copilot'}, "
        f"{home / '.continue'}, {home / '.factory'}, {home / '.local' / 'share' / 'kilo'}, "
        f"{home / '.config' / 'Code' / 'User'}, {home / '.config' / 'Code - Insiders' / 'User'}, "
        f"{home / '.config' / 'VSCodium' / 'User'}, {home / '.config' / 'Cursor' / 'User'}, "
        f"{home / '.cursor'}, {home / '.cline'}, {home / '.local' / 'share' / 'goose'}, "
        f"{home / '.local' / 'share' / 'crush'}"
    ]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    report = Archive(embedder=None).ingest()
    assert [(Path(r["path"]).name, r["found"]) for r in report.roots] == [
        ("no-kimi", False),
        ("no-kimi-code", False),
        (".claude", True),
        ("claude", False),
        ("elsewhere", False),
        (".gemini", False),
        (".qwen", False),
        ("opencode", False),
        ("agent", False),
        (".copilot", False),
        (".continue", False),
        (".factory", False),
        ("kilo", False),
        *[("User", False)] * 4,  # VS Code, Insiders, VSCodium, Cursor (~/.config/<App>/User)
        (".cursor", False),
        (".cline", False),
        ("goose", False),
        ("crush", False),
    ]
    frame = Archive(embedder=None).sessions("all").collect()
    assert frame.select(pl.col("source").unique().sort()).to_series().to_list() == [
        "claude-code",
        "codex",
    ]


QWEN_CHAT = next(
    (Path(__file__).parent / "fixtures" / "real-cli" / "qwen-0.15.10").rglob("*.jsonl")
)
QWEN_CWD = "/tmp/ar-readers/s/work/qwen"  # where the genuine log was written


def qwen_home(home: Path, cwd: str = PROJECT) -> Path:
    """The genuine Qwen Code 0.15.10 chat, moved to `cwd` (its folder named as Qwen names it)."""
    chats = home / ".qwen" / "projects" / cwd.replace("/", "-") / "chats"
    chats.mkdir(parents=True)
    path = chats / QWEN_CHAT.name
    path.write_text(QWEN_CHAT.read_text(encoding="utf-8").replace(QWEN_CWD, cwd), encoding="utf-8")
    return path


def test_qwen_code_joins_the_projects_workspace_from_its_default_home_or_env(
    tmp_path: Path, monkeypatch: Any
) -> None:
    home = tmp_path / "user-home"  # $HOME in the tests
    claude_home(home), qwen_home(home)
    result = CliRunner().invoke(cli, ["--embedder", "none", "ingest"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("2 files (2 changed")
    assert f"found: {home / '.claude'}, {home / '.qwen'};" in result.stderr
    archive = Archive(embedder=None)
    [ws] = archive.workspaces()
    assert (ws.id, ws.paths, sorted(ws.sources)) == (
        workspace_id(PROJECT),
        [PROJECT],
        ["claude-code", "qwen-code"],
    )
    sessions = archive.sessions(ws.id).collect()
    assert sorted(zip(sessions["source"], sessions["session_id"], strict=True)) == [
        ("claude-code", "c1"),
        ("qwen-code", "ee3aaffc-d643-474f-a207-b6a01e2ae0d3"),
    ]
    turns = archive.turns(ws.id).filter(pl.col("source") == "qwen-code").sort("agent", "turn")
    assert turns.select("agent", "turn").collect().rows()[0][0].startswith("agent-call_")
    assert turns.collect().height == 4  # three prompts and the subagent's turn
    calls = archive.tool_calls(ws.id).filter(pl.col("session_id") != "c1")
    calls = calls.filter(pl.col("agent") == "main").sort("turn").collect()
    assert calls["status"].to_list() == ["ok", "error", "ok"]
    assert archive.ingest().files_changed == 0  # idempotent
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "qwen-runtime"))
    roots = {Path(r["path"]).name: r["found"] for r in Archive(embedder=None).ingest().roots}
    assert roots["qwen-runtime"] is False and ".qwen" not in roots


AIDER_REPO = Path(__file__).parent / "fixtures" / "real-cli" / "aider-0.86.2" / "repo"


def test_aider_histories_found_below_a_folder_join_their_repos_workspace(tmp_path: Path) -> None:
    repo = tmp_path / "src" / "webapp"
    shutil.copytree(AIDER_REPO, repo)
    (tmp_path / "src" / "no-history").mkdir()
    claude_home(tmp_path / "user", cwd=str(repo.resolve()))
    archive = Archive(embedder=None)
    report = archive.ingest(tmp_path / "src", tmp_path / "user" / ".claude")
    assert (report.sessions, report.turns_added, report.skipped) == (2, 4, [])
    [ws] = archive.workspaces()
    assert (ws.id, sorted(ws.sources)) == (
        workspace_id(str(repo.resolve())),
        ["aider", "claude-code"],
    )
    turns = archive.turns(ws.id).filter(pl.col("source") == "aider").sort("turn").collect()
    assert turns["user_text"].to_list()[0] == "Create hello.txt saying hi"
    assert archive.ingest(repo).files_changed == 0  # the repo itself: nothing new
    with open(repo / ".aider.chat.history.md", "a", encoding="utf-8") as fh:
        fh.write("\n#### and one more  \n\nSure.\n")
    again = archive.ingest(repo)
    assert (again.files_changed, again.turns_added) == (1, 1)
    assert archive.turns(ws.id).filter(pl.col("source") == "aider").collect().height == 4


OPENCODE_SQL = Path(__file__).parent / "fixtures" / "real-cli" / "opencode-1.18.33" / "opencode.sql"


def opencode_sql() -> str:
    """The genuine OpenCode database's SQL, its project (the folder its sessions were recorded
    in, as its top session names it) moved to PROJECT."""
    import sqlite3

    sql = OPENCODE_SQL.read_text(encoding="utf-8")
    con = sqlite3.connect(":memory:")
    con.executescript(sql)
    (recorded,) = con.execute("SELECT directory FROM session WHERE parent_id IS NULL").fetchone()
    con.close()
    return sql.replace(recorded, PROJECT)


def test_opencode_database_is_read_while_opencode_writes_and_changes_are_seen(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import sqlite3
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    data = tmp_path / "user-home" / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    sql = opencode_sql()
    writer = sqlite3.connect(data / "opencode.db", isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.executescript(sql)
    claude_home(tmp_path / "user-home")
    writer.execute("BEGIN IMMEDIATE")  # OpenCode is writing during the ingest
    writer.execute("UPDATE session SET title = 'in flight' WHERE parent_id IS NULL")
    result = CliRunner().invoke(cli, ["--embedder", "none", "ingest"])
    assert result.exit_code == 0, result.output
    assert f"{data}" in result.stderr.split("not present")[0]  # found
    writer.execute("COMMIT")  # the agent was not locked out
    archive = Archive(embedder=None)
    [ws] = archive.workspaces()
    assert sorted(ws.sources) == ["claude-code", "opencode"]
    turns = archive.turns(ws.id).filter(pl.col("source") == "opencode").sort("agent", "turn")
    assert turns.select("agent", "user_text").collect().rows() == [
        ("main", '"Run echo hi in the shell"'),
        ("main", '"Now run a command that will fail"'),
        ("main", '"Use a subagent to print hi"'),
        ("ses_dca6c67baffe4N7pq0wb9had6C", "Run echo hi in the shell"),  # the subagent
    ]
    calls = archive.tool_calls(ws.id).filter(pl.col("session_id") != "c1")
    calls = calls.sort("agent", "turn").select("agent", "name", "status").collect()
    assert [r[1:] for r in calls.rows()] == [("bash", "ok"), ("bash", "error"), ("task", "ok")] + [
        ("bash", "ok")
    ]
    assert archive.ingest(data).files_changed == 1  # the committed title is a change
    assert archive.ingest(data).files_changed == 0  # the same rows: the same export
    sid, when = "ses_dca6cf916ffeIbCrW56Nq31yNx", 1796195300000
    user_msg = json.dumps({"role": "user", "time": {"created": when}})
    writer.execute("INSERT INTO message VALUES ('msg_zz', ?, ?, ?, ?)", (sid, when, when, user_msg))
    text = json.dumps({"type": "text", "text": "one more"})
    writer.execute(
        "INSERT INTO part VALUES ('prt_zz', 'msg_zz', ?, ?, ?, ?)", (sid, when, when, text)
    )
    assert archive.ingest(data).files_changed == 1  # re-parsed whole, like a Gemini JSON chat
    rows = archive.turns(ws.id).filter(pl.col("agent") == "main").sort("turn").collect()
    assert rows["user_text"].to_list()[-1] == "one more"
    writer.close()


def test_opencode_subagent_sessions_whose_parents_loop_are_reported_and_archived_alone(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import sqlite3
    import tempfile

    from archive_mcp.refiners.opencode import discover

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    db = tmp_path / "opencode" / "opencode.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.executescript(opencode_sql())
    sub, asked = "ses_dca6c67baffe4N7pq0wb9had6C", "msg_235939884001LCjU46VlxBEJnt"

    def copy(table: str, key: str, value: str, **changed: str) -> None:
        cur = con.execute(f"SELECT * FROM {table} WHERE {key} = ?", (value,))
        cols = [d[0] for d in cur.description]
        row = [changed.get(c, v) for c, v in zip(cols, cur.fetchone(), strict=True)]
        con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)

    copy("session", "id", sub, id="loop-a", parent_id="loop-b")
    copy("session", "id", sub, id="loop-b", parent_id="loop-a")
    copy("message", "id", asked, id="msg_loop", session_id="loop-a")
    copy("part", "message_id", asked, id="prt_loop", message_id="msg_loop", session_id="loop-a")
    con.commit()
    con.close()
    found = discover(db.parent)
    assert sorted(s.session_id for s in found.sessions) == [
        "loop-a",
        "loop-b",
        "ses_dca6cf916ffeIbCrW56Nq31yNx",
    ]
    assert found.skipped == looping_subsessions(db)
    archive = Archive(embedder=None)
    report = archive.ingest(db.parent)
    assert [(s.path, s.reason) for s in report.skipped] == [
        (
            str(db),
            f"sub-session {sid}: its parents never reach a top-level session (they loop); "
            "archived as a session of its own",
        )
        for sid in ("loop-a", "loop-b")
    ]
    turns = archive.turns(workspace_id(PROJECT)).filter(pl.col("session_id") == "loop-a")
    assert turns.select("agent", "user_text").collect().rows() == [
        ("main", "Run echo hi in the shell")
    ]
