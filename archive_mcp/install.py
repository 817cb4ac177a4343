"""Registering the MCP server in each agent's own configuration, and taking it out again.

`plan_install(agent)` says which file changes and how (`Change`: the text before and after);
`apply(change)` backs the file up, writes it, and records exactly what was inserted (in the
config dir's `installs.json`), so `plan_uninstall(agent)` removes those same bytes: a file left
untouched in between is byte-identical to before `install` afterwards (a file `install` created
is removed). The edit is textual (one member inserted into the JSON object, one table appended to
the TOML file), checked by parsing the result; a file rewritten since (Claude Code rewrites its
`~/.claude.json`) is edited structurally instead, and the change says so.

Where each agent reads user-scope MCP servers:

- claude-code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), `mcpServers`
- codex: `~/.codex/config.toml` (`$CODEX_HOME`), `[mcp_servers.<name>]`
- gemini: `~/.gemini/settings.json`, `mcpServers`
- kimi (the Python Kimi CLI): `~/.kimi/mcp.json` (`$KIMI_SHARE_DIR`), `mcpServers`, what
  `kimi mcp add` writes
- kimi-code (the TypeScript Kimi Code CLI): `~/.kimi-code/mcp.json` (`$KIMI_CODE_HOME`), `mcpServers`
- qwen (Qwen Code, a Gemini CLI fork): `~/.qwen/settings.json`, `mcpServers`
- opencode: `~/.config/opencode/opencode.json` (`$XDG_CONFIG_HOME`), `mcp`, an entry
  `{"type": "local", "command": [...]}`
- copilot (GitHub Copilot CLI): `~/.copilot/mcp-config.json` (`$COPILOT_HOME`), `mcpServers`,
  an entry as `copilot mcp add` writes it (`"type": "local"`, `"tools": ["*"]`)
- kilo (Kilo Code, an OpenCode fork): `~/.config/kilo/kilo.json` (`$XDG_CONFIG_HOME`), `mcp`,
  OpenCode's entry (`kilo mcp list` lists it)
- droid (Factory Droid): `~/.factory/mcp.json`, `mcpServers`, an entry as `droid mcp add` writes
  it (`"type": "stdio"`)
- cursor (Cursor's editor and its CLI, `cursor-agent`): `~/.cursor/mcp.json`, `mcpServers`
- vscode (VS Code's chat, GitHub Copilot's agent): `mcp.json` in VS Code's user folder
  (`~/.config/Code/User`, `~/Library/Application Support/Code/User`, `%APPDATA%\\Code\\User`),
  `servers`, an entry `{"type": "stdio", "command", "args"}` (a workspace's `.vscode/mcp.json`
  has the same shape; `install` edits the user's)
- cline (Cline CLI 3 and its VS Code extension): `~/.cline/data/settings/cline_mcp_settings.json`
  (`$CLINE_DIR`), `mcpServers`, an entry as `cline mcp add --yes` writes it (3.0.65: `{"transport":
  {"type": "stdio", "command", "args"}}`)
- goose: `~/.config/goose/config.yaml` (`$GOOSE_PATH_ROOT/config`, `$XDG_CONFIG_HOME`),
  `extensions`, a stdio extension as Goose's docs show it (`name`, `cmd`, `args`, `enabled`,
  `envs`, `type`, `timeout`); the block is inserted under `extensions:` as text
- crush: `~/.config/crush/crush.json` (`$CRUSH_GLOBAL_CONFIG`, `$XDG_CONFIG_HOME`), `mcp`, a
  `{"type": "stdio", "command", "args"}` entry (its `MCPConfig`; read beside its newer `crushrc`)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from archive_mcp.errors import InvalidArgument, written
from archive_mcp.install_yaml import yaml_insert, yaml_remove
from archive_mcp.workspaces import (
    atomic_write_json,
    atomic_write_text,
    claude_config_dir,
    cline_dir,
    codex_home,
    config_dir,
    copilot_home,
    crush_config_dir,
    cursor_home,
    editor_user_dir,
    factory_dir,
    gemini_dir,
    goose_config_dir,
    kilo_config_dir,
    kimi_code_home,
    kimi_share_dir,
    need_file,
    opencode_config_dir,
    qwen_settings_dir,
    read_json,
)

NAME = "archive-mcp"
AGENTS = (
    "claude-code",
    "codex",
    "gemini",
    "kimi",
    "kimi-code",
    "qwen",
    "opencode",
    "copilot",
    "droid",
    "kilo",
    "cursor",
    "vscode",
    "cline",
    "goose",
    "crush",
)
# the session-end hook installed with an agent's server: Claude Code's and Gemini CLI's
# `SessionEnd` hook (settings.json), Codex's `notify` program (config.toml, run after each turn),
# both Kimi products' `[[hooks]]` table with `event = "SessionEnd"` (their config.toml)
HOOKS = {
    "claude-code": "claude-code-hook",
    "gemini": "gemini-hook",
    "codex": "codex-notify",
    "kimi": "kimi-hook",
    "kimi-code": "kimi-code-hook",
}
HOOK = HOOKS["claude-code"]
TOML = ("codex", "codex-notify", "kimi-hook", "kimi-code-hook")
YAML = ("goose",)  # the others are JSON
MARK = "# archive-mcp session-end"  # ends the hook's command: how uninstall finds its own


def config_file(agent: str) -> Path:
    """The file `agent` reads its user-scope MCP servers from."""
    if agent == "claude-code":
        env = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(env).expanduser() if env else Path.home()) / ".claude.json"
    if agent == HOOK:
        return claude_config_dir() / "settings.json"
    if agent in ("codex", "codex-notify"):
        return codex_home() / "config.toml"
    if agent in ("gemini", "gemini-hook"):
        return gemini_dir() / "settings.json"
    if agent in ("kimi", "kimi-code"):
        return (kimi_share_dir() if agent == "kimi" else kimi_code_home()) / "mcp.json"
    if agent in ("kimi-hook", "kimi-code-hook"):
        return (kimi_share_dir() if agent == "kimi-hook" else kimi_code_home()) / "config.toml"
    if agent == "qwen":
        return qwen_settings_dir() / "settings.json"
    if agent == "opencode":  # the file `opencode mcp add` edits: the one that exists, else .json
        found = [opencode_config_dir() / n for n in ("opencode.json", "opencode.jsonc")]
        return next((p for p in found if p.exists()), found[0])
    if agent == "copilot":
        return copilot_home() / "mcp-config.json"
    if agent == "droid":
        return factory_dir() / "mcp.json"
    if agent == "kilo":
        return kilo_config_dir() / "kilo.json"
    if agent == "cursor":
        return cursor_home() / "mcp.json"
    if agent == "vscode":
        return editor_user_dir("Code") / "mcp.json"
    if agent == "cline":
        return cline_dir() / "data" / "settings" / "cline_mcp_settings.json"
    if agent == "goose":
        return goose_config_dir() / "config.yaml"
    if agent == "crush":
        return crush_config_dir() / "crush.json"
    raise InvalidArgument(f"unknown agent {agent!r}; one of: {', '.join(AGENTS)}")


def server_command() -> list[str]:
    """How an agent starts the server: this installation's `archive-mcp serve`."""
    script = Path(sys.executable).parent / NAME
    return (
        [str(script), "serve"]
        if script.exists()
        else [sys.executable, "-m", "archive_mcp", "serve"]
    )


def hook_command(hook: str = HOOK) -> str:
    """What a session-end hook runs: a quick incremental ingest of that agent's home."""
    homes = {
        "gemini-hook": gemini_dir,
        "codex-notify": codex_home,
        "kimi-hook": kimi_share_dir,
        "kimi-code-hook": kimi_code_home,
    }
    home = homes.get(hook, claude_config_dir)()
    cmd = [*server_command()[:-1], "ingest", "--no-embed", str(home)]
    # in the background: Claude Code cancels a SessionEnd hook still running when it exits
    return f"nohup {shlex.join(cmd)} >/dev/null 2>&1 & {MARK}"


def entry_for(agent: str, command: list[str]) -> Any:
    if agent == "codex-notify":  # Codex appends a JSON argument: `sh -c` leaves it in $1, unused
        return ["sh", "-c", hook_command(agent), NAME]
    if agent in ("kimi-hook", "kimi-code-hook"):
        return {"event": "SessionEnd", "command": hook_command(agent)}
    if agent in HOOKS.values():
        return {"hooks": [{"type": "command", "command": hook_command(agent)}]}
    if agent == "claude-code":
        return {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
    if agent in ("opencode", "kilo"):
        return {"type": "local", "command": command}
    if agent == "copilot":
        return {"type": "local", "command": command[0], "args": command[1:], "tools": ["*"]}
    if agent in ("droid", "vscode", "crush"):
        return {"type": "stdio", "command": command[0], "args": command[1:]}
    if agent == "cline":
        return {"transport": {"type": "stdio", "command": command[0], "args": command[1:]}}
    if agent == "goose":
        return {
            "name": NAME,
            "cmd": command[0],
            "args": command[1:],
            "enabled": True,
            "envs": {},
            "type": "stdio",
            "timeout": 300,
        }
    return {"command": command[0], "args": command[1:]}


@dataclass
class Change:
    agent: str
    path: str
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is removed
    snippet: str = ""  # the text inserted (install) or removed (uninstall)
    at: int = 0
    note: str = ""  # e.g. "already installed", "edited structurally"
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def changes(self) -> bool:
        return self.before != self.after


def registered(agent: str, path: Path | None = None) -> bool:
    """Whether `agent`'s config file lists the server."""
    text = _read(path or config_file(agent))
    return text is not None and _registered(agent, text)


def servers_key(agent: str) -> str:
    """The member of `agent`'s config that holds its MCP servers."""
    keys = {
        "codex": "mcp_servers",
        "opencode": "mcp",
        "kilo": "mcp",
        "crush": "mcp",
        "vscode": "servers",
        "goose": "extensions",
    }
    return keys.get(agent, "mcpServers")


def _what(agent: str) -> str:
    if agent == "codex-notify":
        return f"the {NAME} notify program"
    return f"the {NAME} SessionEnd hook" if agent in HOOKS.values() else NAME


def installs_path() -> Path:
    return config_dir() / "installs.json"


def plan_install(agent: str, command: list[str] | None = None) -> Change:
    path = config_file(agent)
    before = _read(path)
    entry = entry_for(agent, command or server_command())
    if before is not None and _registered(agent, before):
        return Change(
            agent, str(path), before, before, note=f"{_what(agent)} is already registered"
        )
    if agent == "codex-notify" and "notify" in _loads_or_empty(agent, before):
        note = "Codex runs one notify program and one is set (kept; no session-end ingest added)"
        return Change(agent, str(path), before, before, note=note)
    if agent == "codex":
        after, snippet, at = _toml_insert(before or "", entry)
    elif agent == "codex-notify":  # a top-level key: before the first table
        snippet = f"notify = [{', '.join(json.dumps(a) for a in entry)}]\n"
        after, at = snippet + (before or ""), 0
    elif agent in TOML:  # a `[[hooks]]` table, appended
        after, snippet, at = _toml_append(before or "", "[[hooks]]", entry)
    elif agent in HOOKS.values():
        after, snippet, at = _json_insert_at(before or "", ["hooks", "SessionEnd"], None, entry)
    elif agent in YAML:
        after, snippet, at = yaml_insert(
            before or "", servers_key(agent), {NAME: entry}, lambda t: _load(agent, t)
        )
    else:
        after, snippet, at = _json_insert_at(before or "", [servers_key(agent)], NAME, entry)
    _check(agent, path, after, present=True)
    return Change(agent, str(path), before, after, snippet, at)


def plan_uninstall(agent: str) -> Change:
    path = config_file(agent)
    before = _read(path)
    if before is None or not _registered(agent, before):
        return Change(agent, str(path), before, before, note=f"{_what(agent)} is not registered")
    rec = (read_json(installs_path(), {}) or {}).get(agent) or {}
    if rec.get("path") == str(path) and rec.get("created") and before == rec.get("snippet"):
        return Change(agent, str(path), before, None, before, 0)
    snippet, at = rec.get("snippet", ""), int(rec.get("at", 0))
    if rec.get("path") == str(path) and snippet:
        if before[at : at + len(snippet)] != snippet and before.count(snippet) == 1:
            at = before.index(snippet)
        if before[at : at + len(snippet)] == snippet:
            after = before[:at] + before[at + len(snippet) :]
            if _parses(agent, after) and not _registered(agent, after):
                return Change(agent, str(path), before, after, snippet, at)
    if agent == "codex":
        after = _toml_remove(before)
    elif agent == "codex-notify":
        after = "".join(
            line
            for line in before.splitlines(keepends=True)
            if not (line.startswith("notify") and MARK in line)
        )
    elif agent in TOML:
        after = _toml_remove(before, re.compile(r"^\[\[hooks\]\][ \t]*$", re.M), MARK)
    elif agent in HOOKS.values():
        after = _hook_remove(before)
    elif agent in YAML:
        cut = yaml_remove(before, servers_key(agent), NAME, lambda t: _load(agent, t))
        if cut is None:
            raise InvalidArgument(
                f"could not take {NAME} out of {path} without rewriting the rest of it (its "
                f"comments and layout); delete the `{NAME}:` entry under "
                f"`{servers_key(agent)}:` by hand"
            )
        after = cut
    else:
        after = _json_remove(before, servers_key(agent))
    _check(agent, path, after, present=False)
    how = "its block cut out" if agent in YAML else "edited structurally"
    return Change(agent, str(path), before, after, note=f"{how}: the file changed since install")


def apply(change: Change) -> Path | None:
    """Write `change` (backing up the file first); returns the backup's path, if any."""
    if not change.changes:
        return None
    path = Path(change.path)
    backup = None
    if change.before is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        backup = config_dir() / "backups" / f"{change.agent}-{stamp}-{path.name}"
        backup.parent.mkdir(parents=True, exist_ok=True)
        try:
            with written(backup):
                shutil.copy2(path, backup)
        except BaseException:
            backup.unlink(missing_ok=True)  # no half-written backup left behind
            raise
    if change.after is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, change.after)
        if change.before is not None:
            shutil.copymode(backup or path, path)
    installs = read_json(installs_path(), {}) or {}
    if change.after is not None and change.snippet and _registered(change.agent, change.after):
        installs[change.agent] = {
            "path": change.path,
            "snippet": change.snippet,
            "at": change.at,
            "created": change.before is None,
        }
    else:
        installs.pop(change.agent, None)
    atomic_write_json(installs_path(), installs)
    return backup


# --- JSON: one member inserted into (or removed from) the top-level object, textually ---------
def _nested(keys: list[str], leaf_key: str | None, leaf: Any) -> Any:
    value: Any = [leaf] if leaf_key is None else {leaf_key: leaf}
    for key in reversed(keys):
        value = {key: value}
    return value


def _json_insert_at(
    text: str, keys: list[str], leaf_key: str | None, leaf: Any
) -> tuple[str, str, int]:
    """Insert `leaf` below `keys`: as member `leaf_key` of that object, or (`leaf_key` None) as
    the first element of that array; containers that are missing are inserted with it."""
    if not text.strip():
        body = json.dumps(_nested(keys, leaf_key, leaf), indent=2) + "\n"
        return body, body, 0
    top = _skip_ws(text, 0)
    ind = _indent(text, top)
    obj = top
    for depth, key in enumerate(keys):
        value = _member(text, obj, key)
        want = "[" if depth == len(keys) - 1 and leaf_key is None else "{"
        if value is None or text[value] != want:
            rest = _nested(keys[depth + 1 :], leaf_key, leaf)
            return _insert(text, obj, depth + 1, ind, json.dumps(key), rest)
        obj = value
    return _insert(
        text, obj, len(keys) + 1, ind, None if leaf_key is None else json.dumps(leaf_key), leaf
    )


def _insert(
    text: str, at: int, level: int, ind: str, key: str | None, value: Any
) -> tuple[str, str, int]:
    """One member (`key`: `value`) or element (`key` None) first in the container opening at `at`."""
    body = json.dumps(value, indent=ind).replace("\n", "\n" + ind * level)
    item = body if key is None else f"{key}: {body}"
    at += 1
    empty = text[_skip_ws(text, at)] in "}]"
    snippet = f"\n{ind * level}{item}" + (f"\n{ind * (level - 1)}" if empty else ",")
    if "\r\n" in text:  # the file's own line ends
        snippet = snippet.replace("\n", "\r\n")
    return text[:at] + snippet + text[at:], snippet, at


def _json_remove(text: str, key: str) -> str:
    data = json.loads(text)
    servers = data.get(key) or {}
    servers.pop(NAME, None)
    return json.dumps(data, indent=_indent_width(text), ensure_ascii=False) + "\n"


def _hook_remove(text: str) -> str:
    data = json.loads(text)
    hooks = data.get("hooks") or {}
    kept = [h for h in hooks.get("SessionEnd") or [] if not _is_ours(h)]
    if kept:
        hooks["SessionEnd"] = kept
    else:
        hooks.pop("SessionEnd", None)
        if not hooks:
            data.pop("hooks", None)
    return json.dumps(data, indent=_indent_width(text), ensure_ascii=False) + "\n"


def _is_ours(matcher: Any) -> bool:
    inner = matcher.get("hooks") if isinstance(matcher, dict) else None
    return isinstance(inner, list) and any(
        isinstance(h, dict) and str(h.get("command", "")).endswith(MARK) for h in inner
    )


def _indent(text: str, top: int) -> str:
    m = re.compile(r"[ \t]*\n([ \t]+)\S").match(text, top + 1)
    return m.group(1) if m else "  "


def _indent_width(text: str) -> int:
    return len(_indent(text, _skip_ws(text, 0)).expandtabs(4))


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def _string_end(s: str, i: int) -> int:
    i += 1
    while s[i] != '"':
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _value_end(s: str, i: int) -> int:
    if s[i] == '"':
        return _string_end(s, i)
    if s[i] in "{[":
        depth = 0
        while True:
            if s[i] == '"':
                i = _string_end(s, i)
                continue
            depth += s[i] in "{["
            depth -= s[i] in "}]"
            i += 1
            if depth == 0:
                return i
    while i < len(s) and s[i] not in ",}] \t\r\n":
        i += 1
    return i


def _member(s: str, obj: int, key: str) -> int | None:
    """Where the value of `key` starts in the (valid JSON) object opening at `obj`."""
    i = _skip_ws(s, obj + 1)
    while s[i] != "}":
        j = _string_end(s, i)
        name = json.loads(s[i:j])
        i = _skip_ws(s, _skip_ws(s, j) + 1)
        if name == key:
            return i
        i = _skip_ws(s, _value_end(s, i))
        if s[i] == ",":
            i = _skip_ws(s, i + 1)
    return None


# --- TOML (Codex): one table appended, or removed ---------------------------------------------
def _toml_insert(text: str, entry: dict[str, Any]) -> tuple[str, str, int]:
    return _toml_append(text, f"[mcp_servers.{NAME}]", entry)


def _toml_append(text: str, header: str, entry: dict[str, Any]) -> tuple[str, str, int]:
    """`header` and `entry`'s keys (strings and lists of strings) appended as a table."""
    lead = ("" if not text or text.endswith("\n") else "\n") + ("\n" if text.strip() else "")
    rows = [
        f"{k} = [{', '.join(json.dumps(a) for a in v)}]"
        if isinstance(v, list)
        else f"{k} = {json.dumps(v)}"
        for k, v in entry.items()
    ]
    snippet = lead + "\n".join([header, *rows]) + "\n"
    return text + snippet, snippet, len(text)


def _toml_remove(text: str, header: re.Pattern[str] | None = None, mark: str = "") -> str:
    """`text` without the first table under `header` (holding `mark`)."""
    header = header or re.compile(
        rf'^\[mcp_servers\.(?:{re.escape(NAME)}|"{re.escape(NAME)}")\][ \t]*$', re.M
    )
    for m in header.finditer(text):
        nxt = re.compile(r"^\[", re.M).search(text, m.end())
        end = nxt.start() if nxt else len(text)
        if mark in text[m.end() : end]:
            return text[: m.start()] + text[end:]
    return text


def _kind(agent: str) -> str:
    return "TOML" if agent in TOML else "YAML" if agent in YAML else "JSON"


# --- checks -----------------------------------------------------------------------------------
def _read(path: Path) -> str | None:
    need_file(path)  # a FIFO there would block the read; a folder is no config
    try:
        return path.read_bytes().decode("utf-8")  # as is: CRLF files stay CRLF
    except FileNotFoundError:
        return None


def _load(agent: str, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    if agent in YAML:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(str(exc)) from None
        data = {} if data is None else data
    else:
        data = tomllib.loads(text) if agent in TOML else json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the top level is not an object")
    return data


def _loads_or_empty(agent: str, text: str | None) -> dict[str, Any]:
    try:
        return _load(agent, text or "")
    except ValueError:
        return {}


def _parses(agent: str, text: str) -> bool:
    try:
        _load(agent, text)
    except ValueError:
        return False
    return True


def _registered(agent: str, text: str) -> bool:
    try:
        data = _load(agent, text)
    except ValueError:
        return False
    if agent == "codex-notify":
        notify = data.get("notify")
        return isinstance(notify, list) and any(str(a).endswith(MARK) for a in notify)
    if agent in ("kimi-hook", "kimi-code-hook"):
        tables = data.get("hooks")
        return isinstance(tables, list) and any(
            isinstance(t, dict) and str(t.get("command", "")).endswith(MARK) for t in tables
        )
    if agent in HOOKS.values():
        hooks = data.get("hooks")
        ends = hooks.get("SessionEnd") if isinstance(hooks, dict) else None
        return isinstance(ends, list) and any(_is_ours(h) for h in ends)
    servers = data.get(servers_key(agent))
    return isinstance(servers, dict) and NAME in servers


def _check(agent: str, path: Path, text: str, present: bool) -> None:
    try:
        _load(agent, text)
    except ValueError as exc:
        raise InvalidArgument(
            f"{path} is not valid {_kind(agent)} ({exc}); fix it or "
            f"register the server by hand: command {' '.join(server_command())}"
        ) from None
    if _registered(agent, text) != present:
        raise InvalidArgument(f"could not edit {path} safely; register the server by hand")
