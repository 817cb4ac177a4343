"""archive-mcp's settings: a flag beats its environment variable, which beats the config file
(`config.toml` in the platform config dir, `$ARCHIVE_MCP_CONFIG_DIR` to move it), which beats
the default. `archive-mcp config path|show|set` reads and writes the file."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from archive_mcp.errors import InvalidArgument
from archive_mcp.workspaces import (
    atomic_write_text,
    config_dir,
    default_source_roots,
    need_file,
)


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    flag: str
    help: str
    kind: str = "str"  # str, int, paths (several paths, os.pathsep-separated in the env var)
    choices: tuple[str, ...] = ()
    secret: bool = False  # shown as "(hidden)" by config show and doctor


SETTINGS = {
    s.name: s
    for s in (
        Setting("home", "ARCHIVE_MCP_HOME", "--home", "the archive home"),
        Setting(
            "embedder",
            "ARCHIVE_MCP_EMBEDDER",
            "--embedder",
            "static, minilm or none",
            choices=("static", "minilm", "none"),
        ),
        Setting("port", "ARCHIVE_MCP_PORT", "serve --port", "the HTTP port of serve --http", "int"),
        Setting(
            "follow",
            "ARCHIVE_MCP_FOLLOW",
            "serve/watch PATH...",
            "the agent homes serve and watch follow (default: every agent's home)",
            "paths",
        ),
        Setting(
            "exclude",
            "ARCHIVE_MCP_EXCLUDE",
            "ingest/serve/watch --exclude",
            "project paths or globs whose sessions are never archived (e.g. a private repo)",
            "paths",
        ),
        Setting(
            "token",
            "ARCHIVE_MCP_TOKEN",
            "serve --token",
            "the bearer token serve --http requires (made and stored here on first start)",
            secret=True,
        ),
    )
}


def config_path() -> Path:
    return config_dir() / "config.toml"


def read_config() -> dict[str, Any]:
    """The config file's settings ({} when there is none)."""
    path = config_path()
    need_file(path)  # a FIFO there would block every command that reads the settings
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InvalidArgument(
            f"{path} cannot be read ({exc}); fix it or delete it (archive-mcp config path)"
        ) from None
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise InvalidArgument(
            f"{path}: unknown setting {', '.join(unknown)}; known: {', '.join(SETTINGS)}"
        )
    return {k: _parse(SETTINGS[k], v) for k, v in data.items()}


def _parse(s: Setting, value: Any) -> Any:
    try:
        if s.kind == "int":
            out: Any = int(value)
        elif s.kind == "paths":
            items = value.split(os.pathsep) if isinstance(value, str) else list(value)
            out = [str(p) for p in items if str(p)]
        else:
            out = str(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{s.name} must be {s.kind}, got {value!r}") from None
    if s.choices and out not in s.choices:
        raise InvalidArgument(f"{s.name} must be one of {', '.join(s.choices)}, got {out!r}")
    return out


def set_value(name: str, value: str) -> dict[str, Any]:
    """Write `name = value` to the config file (an empty value removes the setting)."""
    if name not in SETTINGS:
        raise InvalidArgument(f"unknown setting {name!r}; known: {', '.join(SETTINGS)}")
    data = read_config()
    if value == "":
        data.pop(name, None)
    else:
        data[name] = _parse(SETTINGS[name], value)
    lines = [f"{k} = {_toml(v)}" for k, v in sorted(data.items())]
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    os.chmod(path, 0o600)  # it may hold the HTTP token
    return data


def _toml(value: Any) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)


def resolved(name: str) -> tuple[Any, str]:
    """A setting's value without a flag, and where it came from ("env", "file" or "default")."""
    s = SETTINGS[name]
    env = os.environ.get(s.env)
    if env:
        return _parse(s, env), "env"
    data = read_config()
    if name in data:
        return data[name], "file"
    return default(name), "default"


def default(name: str) -> Any:
    """The value a setting has when neither a flag, its variable nor the file sets it."""
    if name == "home":
        return str(Path(platformdirs.user_data_dir("archive-mcp", appauthor=False)))
    if name == "follow":
        return [str(p) for p in default_source_roots()]
    return {"embedder": "static", "port": 8765, "token": "", "exclude": []}[name]


def shown(name: str, value: Any) -> Any:
    """A setting's value as config show and doctor print it: a secret one is hidden."""
    return "(hidden)" if SETTINGS[name].secret and value else value


def shown_text(name: str, value: Any) -> str:
    """`shown` as one line of text: a list joined by ", ", an empty one "(none)"."""
    value = shown(name, value)
    if isinstance(value, list):
        return ", ".join(value) or "(none)"
    return str(value)


def follow_setting() -> list[Path] | None:
    """The homes to follow when none are given: $ARCHIVE_MCP_FOLLOW, else the file, else None."""
    value, source = resolved("follow")
    return [Path(p).expanduser() for p in value] if value and source != "default" else None


def exclude_setting(given: Sequence[str] = ()) -> tuple[list[str], str]:
    """The excluded paths in force and where they came from: `given` (the --exclude flags),
    else $ARCHIVE_MCP_EXCLUDE, else the file, else none."""
    if given:
        return [str(p) for p in given], "flag"
    value, source = resolved("exclude")
    return list(value), source
