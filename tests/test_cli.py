"""The CLI: exact output, JSON, exit codes 0 / 1 / 2."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import click
from click.testing import CliRunner

from archive_mcp.cli.main import main

WEBAPP = "131148b1f826743e761a0be6ad66cb94"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_ingest_then_list_workspaces_sessions_and_stats(
    kimi_root: Path, kimi_code_root: Path
) -> None:
    code, out, err = _run("ingest", "--no-embed", str(kimi_root), str(kimi_code_root))
    assert code == 0
    assert (
        out
        == "6 files (6 changed, 43,256 bytes archived), 5 sessions, 14 turns added, 0 updated, 0 embedded\n"
    )
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
    assert code == 0 and out.startswith(f"{session}:0 2026-03-15T10:00 score=")
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
    _run("--embedder", "none", "themes", "tag", "login", "-s", "handleLogin", "-w", "webapp")
    code, out, _ = _run("themes", "delete", "login", "-w", "webapp", "--json")
    assert code == 0 and json.loads(out)["deleted"] == "login"
    code, _, err = _run("themes", "delete", "login", "-w", "webapp", "--json")
    assert code == 1 and err.startswith("Error: ")


def test_search_rerank_takes_an_optional_model_name(kimi_root: Path, monkeypatch) -> None:  # noqa: ANN001
    from archive_mcp import Archive
    from archive_mcp.search.engine import SearchError

    def search(self, query, **kw):  # noqa: ANN001, ANN202
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
