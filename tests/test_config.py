"""`archive-mcp config path|show|set` (a flag beats its variable, which beats the file, which beats
the default) and `archive-mcp doctor`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from archive_mcp.workspaces import default_source_roots
from click.testing import CliRunner
from test_agent_ingest import claude_home

from archive_mcp.cli.main import main as cli
from archive_mcp.live import follow_roots


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.output


def shown() -> dict[str, tuple[object, str]]:
    code, out = run("config", "show", "--json")
    assert code == 0, out
    return {r["name"]: (r["value"], r["source"]) for r in json.loads(out)}


def test_config_path_set_and_show_with_each_value_s_source(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml"
    assert run("config", "path") == (0, f"{path}\n")
    home = os.environ["ARCHIVE_MCP_HOME"]
    assert shown() == {
        "home": (home, "env"),
        "embedder": ("static", "default"),
        "port": (8765, "default"),
        "follow": ([str(p) for p in default_source_roots()], "default"),
        "exclude": ([], "default"),
        "token": ("", "default"),
    }
    assert run("config", "set", "embedder", "minilm") == (0, f"{path}: embedder = minilm\n")
    assert run("config", "set", "port", "9000")[0] == 0
    assert run("config", "set", "follow", "/a:/b")[0] == 0
    assert path.read_text() == 'embedder = "minilm"\nfollow = ["/a", "/b"]\nport = 9000\n'
    got = shown()
    assert (got["embedder"], got["port"], got["follow"]) == (
        ("minilm", "file"),
        (9000, "file"),
        (["/a", "/b"], "file"),
    )
    assert follow_roots() == [Path("/a"), Path("/b")]
    monkeypatch.setenv("ARCHIVE_MCP_EMBEDDER", "none")
    monkeypatch.setenv("ARCHIVE_MCP_FOLLOW", "/c")
    assert shown()["embedder"] == ("none", "env") and follow_roots() == [Path("/c")]
    code, out = run("--embedder", "static", "config", "show", "--json")
    assert {r["name"]: r["source"] for r in json.loads(out)}["embedder"] == "flag"
    assert follow_roots(["/d"]) == [Path("/d")]
    assert run("config", "set", "port", "")[0] == 0
    assert "port" not in path.read_text()


def test_the_file_s_values_reach_the_commands_and_bad_values_are_refused() -> None:
    code, out = run("config", "set", "port", "many")
    assert (code, out) == (1, "Error: port must be int, got 'many'\n")
    code, out = run("config", "set", "embedder", "big")
    assert code == 1 and out == "Error: embedder must be one of static, minilm, none, got 'big'\n"
    other = Path(os.environ["HOME"]) / "other-archive"
    run("config", "set", "home", str(other))
    os.environ.pop("ARCHIVE_MCP_HOME")  # conftest's monkeypatch restores it
    claude_home(Path(os.environ["HOME"]))
    assert run("ingest", "--no-embed")[0] == 0
    assert (other / "workspaces").is_dir()  # the file's home was used


def test_doctor_says_what_is_stale_and_what_to_run() -> None:
    log = claude_home(Path(os.environ["HOME"]))
    code, out = run("doctor")
    assert code == 0, out
    assert "warn    freshness: 1 log files changed since they were archived\n" in out
    assert "        fix: archive-mcp ingest (or keep archive-mcp serve / watch running)\n" in out
    assert f"ok      home {log.parents[2]}: present\n" in out
    assert "info    agent codex: not registered" in out
    run("ingest", "--no-embed")
    run("install", "codex", "--yes")
    code, out = run("doctor", "--json")
    checks = {c["what"]: c for c in json.loads(out)}
    assert checks["freshness"]["status"] == "ok"
    assert checks["archive"] == {
        "what": "archive",
        "status": "ok",
        "detail": f"{os.environ['ARCHIVE_MCP_HOME']}: 1 workspaces, 1 sessions, 1 turns, newest "
        "turn 2026-03-20T10:00:00+00:00",
        "fix": "",
    }
    assert checks["agent codex"]["status"] == "ok"
    assert checks["follower"]["detail"] == "no follower running"
