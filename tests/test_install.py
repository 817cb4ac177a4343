"""`archive-mcp install/uninstall AGENT`: the server registered where each agent reads it, shown
and asked first, backed up, idempotent, and taken out again leaving the file byte-identical."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.workspaces import config_dir
from click.testing import CliRunner

from archive_mcp.cli.main import main as cli
from archive_mcp.install import (
    AGENTS,
    HOOK,
    HOOKS,
    MARK,
    YAML,
    config_file,
    entry_for,
    hook_command,
    server_command,
    servers_key,
)

HOME = lambda: Path(os.environ["HOME"])  # noqa: E731 - the tmp home conftest set

CLAUDE = (
    '{\n  "numStartups": 3,\n  "mcpServers": {\n    "other": {\n      "command": "x"\n    }\n'
    '  },\n  "projects": {\n    "/p": {\n      "mcpServers": {}\n    }\n  }\n}\n'
)
BEFORE: dict[str, list[str | None]] = {
    "claude-code": [
        None,
        CLAUDE,
        '{"numStartups": 1}',
        '{\n  "mcpServers": {}\n}\n',
        "{}",
        "",
    ],
    "gemini": [None, '{\n    "theme": "Dracula",\n    "mcpServers": {"a": {"command": "b"}}\n}'],
    "codex": [
        None,
        'model = "o3"\n\n[mcp_servers.other]\ncommand = "x"\nargs = []\n',
        'model = "o3"',
        "",
    ],
}
OTHER = {"opencode": '{"type": "local", "command": ["x"]}'}


def json_states(key: str, other: str) -> list[str | None]:
    """Starting states of a JSON config whose MCP servers are under `key`."""
    return [
        None,
        "",
        "{}",
        '{"theme": "x", "name": "é"}',  # one line, no final newline, non-ASCII
        f'{{\n  "{key}": {{}}\n}}\n',
        f'{{\n\t"a": [1, 2],\n\t"{key}": {{"other": {other}}}\n}}\n',  # tabs
        '{\r\n  "$schema": "https://example.invalid/s.json",\r\n  "b": true\r\n}\r\n',
        json.dumps({key: {"y": json.loads(other)}, "z": None}, indent=2),  # as `kimi mcp add`
    ]


for _agent in (a for a in AGENTS if a not in BEFORE and a not in YAML):  # the JSON configs
    BEFORE[_agent] = json_states(
        servers_key(_agent), OTHER.get(_agent, '{"command": "x", "args": []}')
    )
CASES = [(agent, text) for agent, texts in BEFORE.items() for text in texts]


def run(*args: str, input: str | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args), input=input)
    return r.exit_code, r.output


def servers(agent: str) -> dict[str, Any]:
    text = config_file(agent).read_text(encoding="utf-8")
    if agent == "codex":
        return tomllib.loads(text)["mcp_servers"]
    return json.loads(text)[servers_key(agent)]


def test_the_files_are_where_each_agent_reads_user_scope_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert config_file("claude-code") == HOME() / ".claude.json"
    assert config_file("codex") == HOME() / ".codex" / "config.toml"
    assert config_file("gemini") == HOME() / ".gemini" / "settings.json"
    assert config_file("qwen") == HOME() / ".qwen" / "settings.json"
    assert config_file("opencode") == HOME() / ".config" / "opencode" / "opencode.json"
    assert config_file("copilot") == HOME() / ".copilot" / "mcp-config.json"
    assert config_file("droid") == HOME() / ".factory" / "mcp.json"
    assert config_file("kilo") == HOME() / ".config" / "kilo" / "kilo.json"
    assert config_file("cursor") == HOME() / ".cursor" / "mcp.json"  # the editor's and the CLI's
    assert config_file("vscode") == HOME() / ".config" / "Code" / "User" / "mcp.json"
    assert (
        config_file("cline") == HOME() / ".cline" / "data" / "settings" / "cline_mcp_settings.json"
    )
    assert config_file("crush") == HOME() / ".config" / "crush" / "crush.json"
    jsonc = HOME() / ".config" / "opencode" / "opencode.jsonc"  # `opencode mcp add` edits it
    jsonc.parent.mkdir(parents=True)
    jsonc.write_text("{}", encoding="utf-8")
    assert config_file("opencode") == jsonc
    jsonc.with_suffix(".json").write_text("{}", encoding="utf-8")
    assert config_file("opencode") == jsonc.with_suffix(".json")
    monkeypatch.delenv("KIMI_SHARE_DIR")
    monkeypatch.delenv("KIMI_CODE_HOME")
    assert config_file("kimi") == HOME() / ".kimi" / "mcp.json"
    assert config_file("kimi-code") == HOME() / ".kimi-code" / "mcp.json"
    for var, agent, name in [
        ("KIMI_SHARE_DIR", "kimi", "mcp.json"),
        ("KIMI_CODE_HOME", "kimi-code", "mcp.json"),
        ("QWEN_HOME", "qwen", "settings.json"),
        ("XDG_CONFIG_HOME", "opencode", "opencode/opencode.json"),
        ("COPILOT_HOME", "copilot", "mcp-config.json"),
        ("FACTORY_HOME_OVERRIDE", "droid", ".factory/mcp.json"),
        ("XDG_CONFIG_HOME", "vscode", "Code/User/mcp.json"),
        ("CLINE_DIR", "cline", "data/settings/cline_mcp_settings.json"),
        ("XDG_CONFIG_HOME", "crush", "crush/crush.json"),
        ("CRUSH_GLOBAL_CONFIG", "crush", "crush.json"),  # before the XDG folder, as Crush reads it
    ]:
        monkeypatch.setenv(var, str(tmp_path / var))
        assert config_file(agent) == tmp_path / var / name


def test_each_agent_gets_the_entry_its_own_loader_reads() -> None:
    cmd = ["/bin/archive-mcp", "serve"]
    for agent in ("codex", "gemini", "kimi", "kimi-code", "qwen"):
        assert entry_for(agent, cmd) == {"command": "/bin/archive-mcp", "args": ["serve"]}
    assert entry_for("opencode", cmd) == {"type": "local", "command": cmd}
    assert entry_for("kilo", cmd) == {"type": "local", "command": cmd}  # `kilo mcp list` reads it
    # as `copilot mcp add` and `droid mcp add` write them (1.0.102, 0.225.2)
    assert entry_for("copilot", cmd) == {
        "type": "local",
        "command": "/bin/archive-mcp",
        "args": ["serve"],
        "tools": ["*"],
    }
    assert entry_for("droid", cmd) == {
        "type": "stdio",
        "command": "/bin/archive-mcp",
        "args": ["serve"],
    }
    # VS Code's mcp.json: `servers`, each with its `type` (its docs' stdio example); Cursor's
    # ~/.cursor/mcp.json: `mcpServers` of `{command, args}`
    assert entry_for("vscode", cmd) == entry_for("droid", cmd)
    # Crush's crush.json: `mcp`, each server an `MCPConfig` whose `type` is required
    assert (entry_for("crush", cmd), servers_key("crush")) == (entry_for("droid", cmd), "mcp")
    assert (servers_key("vscode"), servers_key("cursor")) == ("servers", "mcpServers")
    assert entry_for("cursor", cmd) == {"command": "/bin/archive-mcp", "args": ["serve"]}
    assert entry_for("claude-code", cmd)["type"] == "stdio"
    assert entry_for("goose", cmd) == {  # a stdio extension as Goose's config docs show one
        "name": "archive-mcp",
        "cmd": "/bin/archive-mcp",
        "args": ["serve"],
        "enabled": True,
        "envs": {},
        "type": "stdio",
        "timeout": 300,
    }
    # as `cline mcp add NAME --yes -- CMD ARGS` writes it (3.0.65)
    assert entry_for("cline", cmd) == {
        "transport": {"type": "stdio", "command": "/bin/archive-mcp", "args": ["serve"]}
    }


@pytest.mark.parametrize(("agent", "before"), CASES)
def test_install_registers_once_and_uninstall_leaves_the_file_byte_identical(
    agent: str, before: str | None
) -> None:
    path = config_file(agent)
    if before is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(before, encoding="utf-8")
        path.chmod(0o600)
    hook = ["--no-hook"] if agent in HOOKS else []
    code, out = run("install", agent, "--yes", *hook)
    assert code == 0, out
    assert (
        f"+++ {path}" in out and f'"{"archive-mcp"}"' in out or "[mcp_servers.archive-mcp]" in out
    )
    assert servers(agent)["archive-mcp"] == entry_for(agent, server_command())
    if before:  # every other server and setting is kept
        old = tomllib.loads(before) if agent == "codex" else json.loads(before)
        new = tomllib.loads(path.read_text()) if agent == "codex" else json.loads(path.read_text())
        key = servers_key(agent)
        new[key].pop("archive-mcp")
        if not new[key] and key not in old:
            del new[key]
        assert new == old
    if before is not None:
        assert path.stat().st_mode & 0o777 == 0o600
        backups = list((config_dir() / "backups").iterdir())
        assert [b.read_bytes() for b in backups] == [before.encode()]
    installed = path.read_bytes()
    assert (b"\r\n" in installed) == ("\r\n" in (before or ""))  # the file's own line ends
    assert b"\n" not in installed.replace(b"\r\n", b"") or "\r\n" not in (before or "")
    code, out = run("install", agent, "--yes", *hook)
    assert (code, path.read_bytes()) == (0, installed)
    assert out == f"{agent}: archive-mcp is already registered in {path}; nothing to do\n"
    code, out = run("uninstall", agent, "--yes")
    assert code == 0, out
    if before is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == before.encode()
    code, out = run("uninstall", agent, "--yes")
    assert f"{agent}: archive-mcp is not registered in {path}; nothing to do" in out.splitlines()


def test_install_shows_the_change_and_asks_first() -> None:
    path = config_file("gemini")
    path.parent.mkdir(parents=True)
    path.write_text('{"theme": "x"}', encoding="utf-8")
    code, out = run("install", "gemini", input="n\n")
    assert code == 1 and out.endswith(f"Change {path}? [y/N]: n\nAborted!\n")
    assert f"--- {path}\n+++ {path}\n" in out and '+  "mcpServers": {' in out
    assert path.read_text() == '{"theme": "x"}'
    code, out = run("install", "gemini", input="y\ny\n")  # the server, then its hook
    assert code == 0 and "archive-mcp" in servers("gemini")
    assert out.count("[y/N]") == 2


def test_a_file_the_agent_rewrote_since_install_is_edited_structurally() -> None:
    path = config_file("claude-code")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CLAUDE, encoding="utf-8")
    run("install", "claude-code", "--yes")
    data = json.loads(path.read_text())
    data["numStartups"] = 4  # rewritten by someone else, in another layout
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    code, out = run("uninstall", "claude-code", "--yes")
    assert code == 0 and "note: edited structurally: the file changed since install" in out
    assert json.loads(path.read_text()) == {**json.loads(CLAUDE), "numStartups": 4}


def test_a_file_that_does_not_parse_is_left_alone_with_what_to_do() -> None:
    path = config_file("codex")
    path.parent.mkdir(parents=True)
    path.write_text("model = \n", encoding="utf-8")
    code, out = run("install", "codex", "--yes")
    assert code == 1 and out.startswith(f"Error: {path} is not valid TOML (")
    assert "register the server by hand: command " in out
    assert path.read_text() == "model = \n"


REAL = os.environ.get("AGENTS_REAL_ROOT", "")  # where the agents-real setup.sh installed the CLIs
LISTED = {  # the CLI, how its `mcp list` line starts, what the line says, whether it shows the command
    "claude-code": ("claude", "archive-mcp: ", "✔ Connected", True),
    "codex": ("codex", "archive-mcp  ", "enabled", True),
    "gemini": ("gemini", "archive-mcp: ", "Connected", True),
    "copilot": ("copilot", "archive-mcp ", "(local)", False),  # COPILOT_OFFLINE=true
    "droid": ("droid", "archive-mcp ", "stdio", False),
}


@pytest.mark.parametrize("agent", list(LISTED))
def test_the_real_cli_lists_the_server_after_install_and_not_after_uninstall(agent: str) -> None:
    import subprocess

    cli_name, line_start, status, shows_command = LISTED[agent]
    binary = Path(REAL) / "npm" / cli_name / "node_modules" / ".bin" / cli_name
    if not REAL or not binary.exists():
        pytest.skip(
            "set $AGENTS_REAL_ROOT to the real agent CLIs (opt-in: they may use the network)"
        )
    env = {**os.environ, "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def listed() -> list[str]:
        done = subprocess.run(
            [str(binary), "mcp", "list"], capture_output=True, text=True, env=env, timeout=120
        )
        out = done.stdout + done.stderr  # gemini prints its list on stderr
        return [line for line in out.splitlines() if line.lstrip("✓○✗ ").startswith(line_start)]

    assert (
        run("install", agent, "--yes")[0] == 0  # with its hook: the real loader must accept it
    )
    lines = listed()
    assert len(lines) == 1 and status in lines[0], lines
    assert server_command()[0] in lines[0] or not shows_command, lines
    assert run("uninstall", agent, "--yes")[0] == 0
    assert listed() == []


HOOKED = '{\n  "model": "opus",\n  "hooks": {\n    "SessionEnd": [\n      {\n        "hooks": [\n          {\n            "type": "command",\n            "command": "notify-send bye"\n          }\n        ]\n      }\n    ]\n  }\n}\n'


@pytest.mark.parametrize("before", [None, '{"model": "opus"}', HOOKED])
def test_claude_code_gets_a_session_end_hook_that_uninstall_takes_out_byte_for_byte(
    before: str | None,
) -> None:
    settings = config_file(HOOK)
    assert settings == HOME() / ".claude" / "settings.json"
    if before is not None:
        settings.parent.mkdir(parents=True)
        settings.write_text(before, encoding="utf-8")
    code, out = run("install", "claude-code", "--yes")
    assert code == 0, out
    ends = json.loads(settings.read_text())["hooks"]["SessionEnd"]
    assert ends[0] == {"hooks": [{"type": "command", "command": hook_command()}]}
    assert hook_command().startswith("nohup ") and hook_command().endswith(
        f" ingest --no-embed {HOME() / '.claude'} >/dev/null 2>&1 & {MARK}"
    )
    assert ends[1:] == (json.loads(HOOKED)["hooks"]["SessionEnd"] if before == HOOKED else [])
    installed = settings.read_bytes()
    code, out = run("install", "claude-code", "--yes")
    assert settings.read_bytes() == installed
    assert out.splitlines()[1] == (
        f"{HOOK}: the archive-mcp SessionEnd hook is already registered in {settings}; "
        "nothing to do"
    )
    assert run("uninstall", "claude-code", "--yes")[0] == 0
    if before is None:
        assert not settings.exists()
    else:
        assert settings.read_bytes() == before.encode()
    assert not config_file("claude-code").exists()


KIMI_REAL = os.environ.get("KIMI_REAL_ROOT", "")  # where kimi-cli-real's setup.sh put kimi-orig
MORE = {  # agent: (the CLI, relative to its root; how its `mcp list` shows our server)
    "kimi": ("kimi-orig", r"^  archive-mcp \(stdio\): {cmd}$"),
    # Qwen Code gives a server 5 s to answer: on a loaded machine it may say Disconnected
    "qwen": ("npm/qwen/node_modules/.bin/qwen", r"^. archive-mcp: {cmd} \(stdio\) - \w+$"),
    "opencode": (
        "npm/opencode/node_modules/.bin/opencode",
        r"^\W*archive-mcp\b.*\n\W*{cmd}$",
    ),
}


@pytest.mark.parametrize("agent", list(MORE))
def test_the_real_kimi_qwen_and_opencode_list_the_server_after_install(agent: str) -> None:
    import re
    import subprocess

    root = KIMI_REAL if agent == "kimi" else REAL
    binary = Path(root) / MORE[agent][0]
    if not root or not binary.exists():
        pytest.skip("set $AGENTS_REAL_ROOT / $KIMI_REAL_ROOT to the real CLIs (opt-in)")
    env = {  # OpenCode: no plugin install, model list or update check over the network
        **os.environ,
        "npm_config_registry": "http://127.0.0.1:9/",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }
    pattern = re.compile(MORE[agent][1].format(cmd=re.escape(" ".join(server_command()))), re.M)

    def listed() -> str:
        done = subprocess.run(
            [str(binary), "mcp", "list"],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            cwd=HOME(),
        )
        return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)

    HOME().mkdir(parents=True, exist_ok=True)
    assert run("install", agent, "--yes")[0] == 0
    out = listed()
    assert len(pattern.findall(out)) == 1, out
    assert run("uninstall", agent, "--yes")[0] == 0
    assert "archive-mcp" not in listed()


GEMINI_HOOKED = HOOKED.replace('"model": "opus"', '"theme": "Dracula"')
HOOK_STATES: dict[str, list[str | None]] = {
    "gemini": [None, "", "{}", '{"theme": "x"}', GEMINI_HOOKED, '{\r\n  "a": 1\r\n}\r\n'],
    "codex": [
        None,
        "",
        'model = "o3"',
        '# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "x"\n',
        '[profiles.fast]\nmodel = "o4-mini"\n',
    ],
}
KIMI_TOML = [  # config.toml of either Kimi product: the hook goes there, the server to mcp.json
    None,
    "",
    'default_model = "k2"',
    '[[hooks]]\nevent = "Stop"\ncommand = "notify-send done"\n\n[models.k2]\nprovider = "x"\n',
]
HOOK_STATES["kimi"] = HOOK_STATES["kimi-code"] = KIMI_TOML


@pytest.mark.parametrize(
    ("agent", "before"), [(a, b) for a, states in HOOK_STATES.items() for b in states]
)
def test_gemini_codex_and_kimi_get_a_session_end_ingest_uninstall_takes_out_byte_for_byte(
    agent: str, before: str | None
) -> None:
    hook = HOOKS[agent]
    path = config_file(hook)
    if agent in ("gemini", "codex"):
        assert path == config_file(agent)  # the same file as the server
    else:
        assert path == config_file(agent).with_name("config.toml")
    if before is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(before.encode())
    code, out = run("install", agent, "--yes")
    assert code == 0, out
    home = {"gemini": HOME() / ".gemini", "codex": HOME() / ".codex"}.get(agent, path.parent)
    assert hook_command(hook).endswith(f" ingest --no-embed {home} >/dev/null 2>&1 & {MARK}")
    text = path.read_text(encoding="utf-8")
    if agent == "gemini":
        ends = json.loads(text)["hooks"]["SessionEnd"]
        assert ends[0] == {"hooks": [{"type": "command", "command": hook_command(hook)}]}
        assert ends[1:] == (
            json.loads(HOOKED)["hooks"]["SessionEnd"] if before == GEMINI_HOOKED else []
        )
    elif agent != "codex":  # the Kimi products: one `[[hooks]]` table, appended
        tables = tomllib.loads(text)["hooks"]
        assert tables[-1] == {"event": "SessionEnd", "command": hook_command(hook)}
        assert tables[:-1] == (
            [{"event": "Stop", "command": "notify-send done"}] if before == KIMI_TOML[3] else []
        )
        assert text.endswith(
            f'[[hooks]]\nevent = "SessionEnd"\ncommand = {json.dumps(hook_command(hook))}\n'
        )
    else:
        data = tomllib.loads(text)
        assert data["notify"] == ["sh", "-c", hook_command(hook), "archive-mcp"]
        assert "archive-mcp" in data["mcp_servers"]  # the table is still where it was
        assert text.startswith("notify = [")  # top-level: before every table
    assert servers(agent)["archive-mcp"] == entry_for(agent, server_command())
    installed = path.read_bytes()
    code, out = run("install", agent, "--yes")
    assert (code, path.read_bytes()) == (0, installed)
    assert out.splitlines()[1].startswith(f"{hook}: the archive-mcp ") and "nothing to do" in out
    assert run("uninstall", agent, "--yes")[0] == 0
    if before is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == before.encode()
    assert agent in ("gemini", "codex") or not config_file(agent).exists()  # nor its mcp.json


def test_a_notify_program_of_the_users_own_is_kept() -> None:
    path = config_file("codex")
    path.parent.mkdir(parents=True)
    path.write_text('notify = ["notify-send", "codex"]\n', encoding="utf-8")
    code, out = run("install", "codex", "--yes")
    assert code == 0 and "codex-notify: Codex runs one notify program and one is set" in out
    assert tomllib.loads(path.read_text())["notify"] == ["notify-send", "codex"]
    assert run("uninstall", "codex", "--yes")[0] == 0
    assert path.read_text() == 'notify = ["notify-send", "codex"]\n'


def test_a_kimi_config_rewritten_since_install_loses_only_the_hook() -> None:
    path = config_file("kimi-hook")
    path.parent.mkdir(parents=True)
    path.write_text('default_model = "k2"\n', encoding="utf-8")
    run("install", "kimi", "--yes")
    text = path.read_text().replace('"k2"', '"k3"')  # the CLI saved its config since
    path.write_text(text.replace('"SessionEnd"', "'SessionEnd'"), encoding="utf-8")
    code, out = run("uninstall", "kimi", "--yes")
    assert code == 0 and "edited structurally" in out
    assert tomllib.loads(path.read_text()) == {"default_model": "k3"}


KIMI_SCRIPTED = """\
default_model = "scripted"
telemetry = false

[providers.scripted]
type = "_scripted_echo"
base_url = ""
api_key = ""

[models.scripted]
provider = "scripted"
model = "scripted_echo"
max_context_size = 262144
"""


def test_the_real_kimi_cli_runs_the_session_end_hook_and_the_session_is_archived(
    tmp_path: Path,
) -> None:
    """Opt-in: the real Kimi CLI (kimi-cli-real) with its scripted model, offline."""
    import subprocess
    import time

    from archive_mcp import Archive

    kimi = Path(KIMI_REAL) / "kimi-orig"
    if not KIMI_REAL or not kimi.exists():
        pytest.skip("set $KIMI_REAL_ROOT to the real Kimi CLI (opt-in)")
    share = config_file("kimi-hook").parent
    share.mkdir(parents=True)
    (share / "config.toml").write_text(KIMI_SCRIPTED, encoding="utf-8")
    assert run("install", "kimi", "--yes")[0] == 0
    script = tmp_path / "script.json"
    reply = 'text: hello from the scripted model\nusage: {"input_other": 10, "output": 5}'
    script.write_text(json.dumps([reply]), encoding="utf-8")
    (work := tmp_path / "wd").mkdir()
    done = subprocess.run(
        [str(kimi), "--work-dir", str(work), "--print", "--input-format", "stream-json"],
        input=json.dumps({"role": "user", "content": "say hi zebrafish"}) + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "KIMI_SCRIPTED_ECHO_SCRIPTS": str(script)},
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120  # the hook's ingest runs in the background
    found: list[Any] = []
    while not found and time.monotonic() < deadline:
        time.sleep(1)
        try:
            texts = Archive().turns("all").collect()["user_text"].to_list()
        except Exception:  # noqa: BLE001 - nothing archived yet
            texts = []
        found = [t for t in texts if "zebrafish" in (t or "")]
    assert found, "the SessionEnd hook did not archive the session"
    assert run("uninstall", "kimi", "--yes")[0] == 0
    assert (share / "config.toml").read_text(encoding="utf-8") == KIMI_SCRIPTED


GOOSE = [
    None,
    "",
    "GOOSE_MODEL: x",  # no final newline
    "GOOSE_PROVIDER: openai\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n",
    "extensions:  # mine\n    developer:\n        type: builtin\nGOOSE_MODEL: x\n",  # 4 spaces
]


@pytest.mark.parametrize("before", GOOSE)
def test_goose_gets_an_extension_under_extensions_and_uninstall_restores_the_yaml(
    before: str | None,
) -> None:
    import yaml

    path = config_file("goose")
    assert path == HOME() / ".config" / "goose" / "config.yaml"
    if before is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(before, encoding="utf-8")
    code, out = run("install", "goose", "--yes")
    assert code == 0, out
    new = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert new["extensions"].pop("archive-mcp") == entry_for("goose", server_command())
    old = yaml.safe_load(before or "") or {}
    assert {k: v for k, v in new.items() if v or k in old} == old  # the rest kept
    code, out = run("install", "goose", "--yes")
    assert out == f"goose: archive-mcp is already registered in {path}; nothing to do\n"
    code, out = run("uninstall", "goose", "--yes")
    assert code == 0, out
    assert (path.read_bytes() if path.exists() else None) == (
        None if before is None else before.encode()
    )


def test_a_goose_extensions_mapping_written_inline_is_edited_structurally() -> None:
    import yaml

    path = config_file("goose")
    path.parent.mkdir(parents=True)
    path.write_text("extensions: {developer: {type: builtin}}\nX: 1\n", encoding="utf-8")
    assert run("install", "goose", "--yes")[0] == 0
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(data["extensions"]) == ["archive-mcp", "developer"] and data["X"] == 1
    assert run("uninstall", "goose", "--yes")[0] == 0
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == {
        "extensions": {"developer": {"type": "builtin"}},
        "X": 1,
    }


GOOSE_BY_HAND = """# Goose's config
GOOSE_PROVIDER: openai  # the provider
extensions:
  # built-in tools
  developer:
    enabled: true
    type: builtin

  "archive-mcp":
    cmd: archive-mcp
    args: [serve]   # stdio
    enabled: true
    # a note under it
    type: stdio

  memory:
    enabled: false
GOOSE_MODEL: x
"""


def test_goose_uninstall_without_its_install_record_cuts_only_the_block_comments_kept() -> None:
    path = config_file("goose")
    path.parent.mkdir(parents=True)
    path.write_text(GOOSE_BY_HAND, encoding="utf-8")  # added by hand: no install record
    code, out = run("uninstall", "goose", "--yes")
    assert code == 0, out
    assert path.read_text(encoding="utf-8") == GOOSE_BY_HAND.replace(
        GOOSE_BY_HAND[GOOSE_BY_HAND.index('  "archive-mcp":') : GOOSE_BY_HAND.index("\n  memory:")],
        "",
    )
    assert path.read_text(encoding="utf-8").count("\n\n\n") == 1  # both blank lines kept


def test_goose_uninstall_of_the_only_extension_by_hand_leaves_an_empty_mapping() -> None:
    path = config_file("goose")
    path.parent.mkdir(parents=True)
    path.write_text(
        "extensions:  # mine\n  archive-mcp:\n    cmd: archive-mcp\n\nGOOSE_MODEL: x\n",
        encoding="utf-8",
    )
    assert run("uninstall", "goose", "--yes")[0] == 0
    assert path.read_text(encoding="utf-8") == "extensions: {}  # mine\n\nGOOSE_MODEL: x\n"


@pytest.mark.parametrize(
    "text",
    [
        "extensions: {archive-mcp: {cmd: archive-mcp}}  # mine\n",  # a dump would lose the comment
        "extensions:\n  archive-mcp: &ours\n    cmd: archive-mcp\n  copy: *ours\n",  # an alias to it
    ],
)
def test_goose_uninstall_refuses_when_it_cannot_cut_the_block_out_alone(text: str) -> None:
    path = config_file("goose")
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    code, out = run("uninstall", "goose", "--yes")
    assert (code, out) == (
        1,
        f"Error: could not take archive-mcp out of {path} without rewriting the rest of it (its "
        "comments and layout); delete the `archive-mcp:` entry under `extensions:` by hand\n",
    )
    assert path.read_text(encoding="utf-8") == text
