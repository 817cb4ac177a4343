"""The CLI: exact output, JSON, exit codes 0 / 1 / 2."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import archive_mcp.cli.main as cli_main
from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.ingest import pipeline

WEBAPP = "131148b1f826743e761a0be6ad66cb94"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_ingest_no_index_leaves_the_index_to_the_first_search(kimi_root: Path) -> None:
    code, out, _ = _run("ingest", "--no-embed", "--no-index", str(kimi_root))
    assert code == 0 and "search index built" not in out
    archive = Archive()
    assert [archive.index(ws).needs_build() for ws in archive.workspaces()] == [True, True]


def test_ingest_then_list_workspaces_sessions_and_stats(
    kimi_root: Path, kimi_code_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "_clock", iter([100.0, 102.34]).__next__)
    monkeypatch.setattr(cli_main, "_clock", iter([200.0, 200.46]).__next__)
    code, out, err = _run("ingest", "--no-embed", str(kimi_root), str(kimi_code_root))
    assert code == 0
    assert out == (
        "6 files (6 changed, 43,256 bytes archived), 5 sessions, 14 turns added, 0 updated, "
        "0 embedded in 2.3 s\n"
        "search index built in 0.5 s\n"
        "new workspaces: ml-pipeline, webapp\n"
    )
    built = Archive()  # the ingest built each changed workspace's search index
    assert [built.index(ws).needs_build() for ws in built.workspaces()] == [False, False]
    assert err.count("last line is incomplete") == 2
    code, out, _ = _run("workspaces", "list")
    assert out.splitlines() == [
        "id                                name         paths",
        "dc8fa21d3e61040ad8305bf8ed3081c5  ml-pipeline  /home/alice/projects/ml-pipeline",
        "131148b1f826743e761a0be6ad66cb94  webapp       /home/alice/projects/webapp",
    ]
    code, out, _ = _run("sessions", "list", "-w", "webapp", "--json")
    data = json.loads(out)
    assert [(s["session_id"], s["turns"]) for s in data] == [
        ("session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13", 3),
        ("b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b", 2),
        ("3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17", 3),
    ]
    code, out, _ = _run("stats", "--json")
    stats = json.loads(out)
    assert (stats["workspaces"], stats["sessions"], stats["turns"]) == (2, 5, 14)
    assert stats["by_status"] == {
        "cancelled": 1,
        "completed": 8,
        "error": 1,
        "interrupted": 1,
        "open": 3,
    }
    code, out, _ = _run("workspaces", "show", "ml-pipeline")
    assert out.splitlines()[0] == "ml-pipeline (dc8fa21d3e61040ad8305bf8ed3081c5)"


def test_refine_reports_and_json(kimi_root: Path) -> None:
    _run("ingest", "--no-embed", str(kimi_root))
    code, out, _ = _run("refine", "--all", "--no-embed", "--force", "--json")
    assert code == 0
    assert json.loads(out) == {
        "sessions": 4,
        "turns": 11,
        "rows_changed": 0,
        "embedded": 0,
        "skipped": [],
        "embed_error": None,
    }


def test_errors_exit_1_with_the_known_workspaces_and_usage_errors_exit_2(kimi_root: Path) -> None:
    _run("ingest", "--no-embed", str(kimi_root))
    code, out, err = _run("sessions", "list", "-w", "nope")
    assert code == 1 and out == ""
    assert err.startswith("Error: no workspace matches 'nope'. Known workspaces: ml-pipeline")
    code, _, err = _run("refine", "--all", "-w", "webapp")
    assert code == 2 and "give --workspace or --all, not both" in err
    code, _, _ = _run("no-such-command")
    assert code == 2


def test_workspaces_link_and_ingest_json_lists_skips(kimi_root: Path, tmp_path: Path) -> None:
    code, out, _ = _run("ingest", "--no-embed", "--json", str(kimi_root), str(tmp_path / "missing"))
    report = json.loads(out)
    assert {"path": str(tmp_path / "missing"), "reason": "does not exist", "line": None} in report[
        "skipped"
    ]
    code, out, _ = _run("workspaces", "link", "/srv/wt/webapp-2", "--into", WEBAPP[:8])
    assert (code, out) == (0, f"webapp ({WEBAPP}): /home/alice/projects/webapp, /srv/wt/webapp-2\n")


def test_every_command_has_help() -> None:
    for cmd in main.commands.values():
        assert cmd.help, f"{cmd.name} lacks help"


def test_ingest_without_paths_reads_both_default_roots(
    kimi_root: Path, kimi_code_root: Path, monkeypatch
) -> None:  # noqa: ANN001
    monkeypatch.setenv("KIMI_SHARE_DIR", str(kimi_root))
    monkeypatch.setenv("KIMI_CODE_HOME", str(kimi_code_root))
    code, out, _ = _run("ingest", "--no-embed", "--json")
    assert code == 0 and json.loads(out)["turns_added"] == 14


def test_search_and_show(kimi_root: Path) -> None:
    _run("ingest", "--no-embed", str(kimi_root))
    code, out, err = _run(
        "--embedder", "none", "search", "turbojpeg", "-w", "ml-pipeline", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["realized_mode"] == "lexical+fuzzy" and data["hits"][0]["turn"] == 0
    session = data["hits"][0]["session_id"]
    code, out, _ = _run(
        "--embedder", "none", "search", "turbojpeg", "-w", "ml-pipeline", "--limit", "1"
    )
    assert code == 0 and out.startswith(
        f"{session}:0 2026-03-15T10:00 [kimi] (explore)\n    User: "
    )
    code, out, _ = _run("show", f"{session}:1", "-w", "ml-pipeline", "--before", "1")
    assert code == 0 and out.count("## ") == 2 and "User: Run the benchmark script." in out
    code, _, err = _run("show", f"{session}:9", "-w", "ml-pipeline")
    assert code == 1 and "valid turns: 0..1" in err
    code, _, err = _run("show", "no-colon", "-w", "ml-pipeline")
    assert code == 2 and "SESSION:TURN" in err
    code, _, err = _run("search", "x", "-w", "ml-pipeline", "--mode", "magic")
    assert code == 2


def _commands(group: click.Group = main, prefix: str = "") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, cmd in group.commands.items():
        out.append((f"{prefix}{name}", cmd))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, f"{prefix}{name} ")
    return out


def test_every_command_shows_an_example_and_every_option_has_help() -> None:
    commands = _commands()
    assert len(commands) >= 30
    for name, cmd in commands:
        assert "Example:\n  archive-mcp " in inspect.cleandoc(cmd.help or ""), (
            f"`{name}` shows no example"
        )
        for param in cmd.params:
            if isinstance(param, click.Option):
                assert param.help, f"`{name} {param.opts[-1]}` has no help"
    for param in main.params:
        assert not isinstance(param, click.Option) or param.help or param.is_flag


def test_every_command_that_prints_data_takes_json() -> None:
    quiet = {
        "serve",
        "ui",
        "watch",
        "install",
        "uninstall",
        "config",
        "config path",
        "config set",
        "demo",
        "trace",
        "workspaces",
        "sessions",
        "memory",
        "themes",
    }  # trace: --format json
    for name, cmd in _commands():
        if name not in quiet:
            assert any(p.name == "as_json" for p in cmd.params), f"`{name}` has no --json"


def test_the_workspace_option_is_one_definition() -> None:
    helps = {
        p.help
        for _, cmd in _commands()
        for p in cmd.params
        if p.name == "workspace" and isinstance(p, click.Option)
    }
    assert helps == {
        "Workspace: a path, id, unique id prefix or name (default: the current directory's).",
        "Workspace: a path, id, unique id prefix or name (default: every workspace).",
    }


def test_memory_export_and_themes_delete_print_json(kimi_root: Path) -> None:
    _run("ingest", "--no-embed", str(kimi_root))
    code, out, _ = _run("memory", "remember", "k", "v", "-w", "webapp")
    code, out, _ = _run("memory", "export", "--filename", "b.json", "-w", "webapp", "--json")
    assert code == 0 and json.loads(out)["path"].endswith("exports/b.json")
    code, _, err = _run(
        "--embedder", "none", "themes", "tag", "login", "-s", "handleLogin", "-w", "webapp"
    )
    assert code == 0 and "no strong match for handleLogin" in err  # nothing matched: no theme
    assert _run("themes", "delete", "login", "-w", "webapp", "--json")[0] == 1
    _run("--embedder", "none", "themes", "tag", "dates", "-s", "formatISODate", "-w", "webapp")
    code, out, _ = _run("themes", "delete", "dates", "-w", "webapp", "--json")
    assert code == 0 and json.loads(out)["deleted"] == "dates"
    code, _, err = _run("themes", "delete", "dates", "-w", "webapp", "--json")
    assert code == 1 and err.startswith("Error: ")


def test_search_rerank_takes_an_optional_model_name(kimi_root: Path, monkeypatch) -> None:  # noqa: ANN001
    from archive_mcp import Archive
    from archive_mcp.search.engine import SearchError

    def search(self, query, workspace, **kw):  # noqa: ANN001, ANN202
        raise SearchError(f"asked rerank={kw['rerank']!r}")

    _run("ingest", "--no-embed", str(kimi_root))
    monkeypatch.setattr(Archive, "search", search)
    assert _run("search", "x", "-w", "ml-pipeline")[2] == "Error: asked rerank=None\n"
    assert (
        _run("search", "x", "-w", "ml-pipeline", "--rerank")[2] == "Error: asked rerank='minilm'\n"
    )
    code, _, err = _run("search", "x", "-w", "ml-pipeline", "--rerank", "e5")
    assert (code, err) == (1, "Error: asked rerank='e5'\n")
    code, _, err = _run("search", "x", "-w", "ml-pipeline", "--rerank", "bge")
    assert code == 2 and "'bge' is not one of 'minilm', 'e5'" in err


def test_every_turn_reference_the_cli_prints_shows_back(
    kimi_root: Path, kimi_code_root: Path
) -> None:
    import re

    _run("ingest", "--no-embed", str(kimi_root), str(kimi_code_root))
    _run("themes", "tag", "login", "-w", "webapp", "-r", "session_2c7d1e94:0", "-r", "b8e1d2c4:1")
    code, out, _ = _run("--embedder", "none", "search", "test", "-w", "all", "--limit", "20")
    assert code == 0
    assert out.splitlines()[0] == (
        "session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13:2 (workspace webapp) 2026-03-16T10:00 "
        "[kimi-code] (test)"
    )
    refs = re.findall(r"^(\S+:\d+) \(workspace [\w-]+\) ", out, re.M)
    _, listed, _ = _run("sessions", "list", "--all")
    refs += [f"{line.split()[0]}:0" for line in listed.splitlines()[1:]]
    _, traced, _ = _run("trace", "login", "-w", "webapp", "--format", "table")
    refs += re.findall(r" (\S{9,}:\d+) ", traced)
    assert len(refs) == 8 + 5 + 2, refs
    for ref in refs:  # no -w: the session is found in whichever workspace holds it
        code, shown, err = _run("show", ref)
        assert code == 0 and shown.startswith(f"## {ref} "), (ref, err)
    code, shown, _ = _run("show", "0a1b2c3d:2")  # a unique prefix, from outside any workspace
    assert code == 0 and shown.startswith("## 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d:2 ")
    code, _, err = _run("show", "nope:0")
    assert code == 1 and err == (
        "Error: no session 'nope' in any workspace; search for its turns or list the sessions\n"
    )
    code, _, err = _run("show", "nope:0", "-w", "webapp")
    assert code == 1 and err == (
        "Error: no session 'nope' in workspace webapp; search for its turns or list the sessions\n"
    )


def _claude_log(path: Path, sid: str, records: list[tuple[str, object]]) -> None:
    """A Claude Code log: (kind, content) pairs, one second apart; kind "summary" is a record."""
    lines = []
    for sec, (kind, content) in enumerate(records):
        if kind == "summary":
            lines.append({"type": "summary", "summary": content, "leafUuid": "x"})
            continue
        message: dict[str, object] = {"role": kind, "content": content}
        if kind == "assistant":
            message["id"] = f"m{sec}"
        lines.append(
            {
                "type": kind,
                "sessionId": sid,
                "cwd": "/home/alice/projects/notes",
                "version": "2.1.9",
                "timestamp": f"2026-03-20T10:00:{sec:02d}Z",
                "uuid": f"u{sec}",
                "message": message,
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


def test_sessions_carry_true_titles_and_statuses(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-notes"
    clear = "<command-name>/clear</command-name>\n<command-args></command-args>"
    answer = [{"type": "text", "text": "Done."}]
    _claude_log(
        folder / "a1a1a1a1-0000-4000-8000-000000000001.jsonl",
        "a1a1a1a1-0000-4000-8000-000000000001",
        [
            ("user", clear),
            ("user", "<local-command-stdout></local-command-stdout>"),
            ("user", "add a search box to the notes page"),
            ("assistant", answer),
            ("user", "now make it fuzzy"),
            ("user", "[Request interrupted by user]"),
            ("user", "ok, plain substring match then"),
            ("assistant", answer),
        ],
    )
    _claude_log(
        folder / "b2b2b2b2-0000-4000-8000-000000000002.jsonl",
        "b2b2b2b2-0000-4000-8000-000000000002",
        [
            ("summary", "Notes page search box"),
            ("user", clear),
            ("user", "hi"),
            ("assistant", answer),
        ],
    )
    code, _, _ = _run("ingest", "--no-embed", str(tmp_path / ".claude"))
    assert code == 0
    code, out, _ = _run("sessions", "list", "-w", "notes", "--json")
    rows = {r["session_id"][:8]: r for r in json.loads(out)}
    assert rows["a1a1a1a1"]["title"] == "add a search box to the notes page"  # not "/clear"
    assert rows["b2b2b2b2"]["title"] == "Notes page search box"  # the agent's own summary
    assert not rows["a1a1a1a1"]["live"]  # its last turn is open, but months old
    code, out, _ = _run("stats", "-w", "notes", "--json")
    assert json.loads(out)["by_status"] == {"completed": 5, "interrupted": 1, "open": 2}
    code, out, _ = _run("memory", "bootstrap", "-w", "notes", "--json")
    recent = [r["summary"][:30] for r in json.loads(out)["recent_context"]]
    assert code == 0 and len(recent) == 4 and not any("/clear" in r for r in recent)


def test_a_session_is_live_only_while_it_is_being_written(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    def log(sid: str, at: datetime) -> None:
        rec = {
            "type": "user",
            "sessionId": sid,
            "cwd": "/home/alice/projects/notes",
            "version": "2.1.9",
            "timestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "uuid": "u0",
            "message": {"role": "user", "content": "index the notes"},
        }
        path = tmp_path / ".claude" / "projects" / "-home-alice-projects-notes" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec) + "\n", encoding="utf-8")

    now = datetime.now(UTC)
    log("c3c3c3c3-0000-4000-8000-000000000003", now - timedelta(minutes=5))
    log("d4d4d4d4-0000-4000-8000-000000000004", now - timedelta(days=3))
    _run("ingest", "--no-embed", str(tmp_path / ".claude"))
    code, out, _ = _run("sessions", "list", "-w", "notes", "--json")
    assert {r["session_id"][:8]: r["live"] for r in json.loads(out)} == {
        "c3c3c3c3": True,  # an open turn written to minutes ago
        "d4d4d4d4": False,  # an open turn, days old
    }


def test_skipped_lines_are_grouped_by_file(capsys: pytest.CaptureFixture[str]) -> None:
    from archive_mcp.cli.common import report_skips

    skips = [pipeline.Skip("a.jsonl", "not JSON", line=n) for n in (3, 7, 9)]
    skips += [pipeline.Skip("b.jsonl", "last line is incomplete", line=4)]
    skips += [pipeline.Skip("c", "could not look for sessions: denied")]
    report_skips(skips, None)
    assert capsys.readouterr().err.splitlines() == [
        "skipped 3 lines of a.jsonl (first at line 3: not JSON)",
        "skipped b.jsonl:4: last line is incomplete",
        "skipped c: could not look for sessions: denied",
    ]
