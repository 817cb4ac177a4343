"""Where state lives. The only module that reads the environment for paths."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import platformdirs


def archive_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The archive home: the argument, else `$ARCHIVE_MCP_HOME`, else the platform data dir."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get("ARCHIVE_MCP_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("archive-mcp", appauthor=False))


def kimi_share_dir() -> Path:
    """Root of the Python Kimi Code CLI: `$KIMI_SHARE_DIR` or `~/.kimi`."""
    env = os.environ.get("KIMI_SHARE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".kimi"


def kimi_code_home() -> Path:
    """Root of the TypeScript Kimi Code app: `$KIMI_CODE_HOME` or `~/.kimi-code`."""
    env = os.environ.get("KIMI_CODE_HOME")
    return Path(env).expanduser() if env else Path.home() / ".kimi-code"


def claude_config_dir() -> Path:
    """Root of Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude` (sessions under `projects/`)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def codex_home() -> Path:
    """Root of the Codex CLI: `$CODEX_HOME` or `~/.codex` (rollouts under `sessions/`)."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def gemini_dir() -> Path:
    """Root of the Gemini CLI: `~/.gemini` (chats under `tmp/<project>/chats/`)."""
    return Path.home() / ".gemini"


def qwen_home() -> Path:
    """Where Qwen Code writes its chats (`projects/<cwd>/chats/`): `$QWEN_RUNTIME_DIR`, else
    `$QWEN_HOME`, else `~/.qwen` (Qwen Code's own order for its runtime data)."""
    for name in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        env = os.environ.get(name)
        if env:
            return Path(env).expanduser()
    return Path.home() / ".qwen"


def opencode_data_dir() -> Path:
    """OpenCode's data folder (`opencode.db`): `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`."""
    env = os.environ.get("XDG_DATA_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".local" / "share") / "opencode"


def _env_or(name: str, default: Path) -> Path:
    env = os.environ.get(name)
    return Path(env).expanduser() if env else default


def kilo_data_dir() -> Path:
    """Kilo Code's data folder (`kilo.db`): `$XDG_DATA_HOME/kilo` or `~/.local/share/kilo`."""
    return _env_or("XDG_DATA_HOME", Path.home() / ".local" / "share") / "kilo"


def pi_agent_dir() -> Path:
    """Pi's agent folder (sessions under `sessions/`): `$PI_CODING_AGENT_DIR` or `~/.pi/agent`."""
    return _env_or("PI_CODING_AGENT_DIR", Path.home() / ".pi" / "agent")


def copilot_home() -> Path:
    """The GitHub Copilot CLI's folder (`session-state/`): `$COPILOT_HOME` or `~/.copilot`."""
    return _env_or("COPILOT_HOME", Path.home() / ".copilot")


def continue_home() -> Path:
    """Continue's folder (`sessions/`): `$CONTINUE_GLOBAL_DIR` or `~/.continue`."""
    return _env_or("CONTINUE_GLOBAL_DIR", Path.home() / ".continue")


def factory_dir() -> Path:
    """Factory Droid's folder (`sessions/`): `.factory` under `$FACTORY_HOME_OVERRIDE` or home."""
    return _env_or("FACTORY_HOME_OVERRIDE", Path.home()) / ".factory"


EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor")  # VS Code's layout: `User/` folders


def editor_user_dir(app: str) -> Path:
    """The `User` folder of the VS Code-shaped editor `app` (its chats and `mcp.json`):
    `~/Library/Application Support/<app>/User` on macOS, `%APPDATA%\\<app>\\User` on Windows,
    `$XDG_CONFIG_HOME/<app>/User` (`~/.config`) elsewhere, as Electron places them."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        base = _env_or("APPDATA", Path.home() / "AppData" / "Roaming")
    else:
        base = _env_or("XDG_CONFIG_HOME", Path.home() / ".config")
    return base / app / "User"


def windows_editor_dirs() -> list[Path]:
    """Under WSL, the editors' `User` folders of the Windows homes
    (`/mnt/c/Users/*/AppData/Roaming/<app>/User`) that exist; none elsewhere."""
    if "microsoft" not in platform.release().lower():
        return []
    users = Path("/mnt/c/Users")
    found = sorted(users.glob("*/AppData/Roaming/*/User")) if users.is_dir() else []
    return [p for p in found if p.parent.name in EDITORS]


def cursor_home() -> Path:
    """The Cursor CLI's folder (`chats/`) and Cursor's `mcp.json`: `~/.cursor`."""
    return Path.home() / ".cursor"


def qwen_settings_dir() -> Path:
    """Where Qwen Code reads its user settings (`settings.json`): `$QWEN_HOME`, else `~/.qwen`."""
    env = os.environ.get("QWEN_HOME")
    return Path(env).expanduser() if env else Path.home() / ".qwen"


def kilo_config_dir() -> Path:
    """Kilo Code's config folder (`kilo.json`): `$XDG_CONFIG_HOME/kilo` or `~/.config/kilo`."""
    return _env_or("XDG_CONFIG_HOME", Path.home() / ".config") / "kilo"


def opencode_config_dir() -> Path:
    """OpenCode's global config folder (`opencode.json`): `$XDG_CONFIG_HOME/opencode` or
    `~/.config/opencode`."""
    env = os.environ.get("XDG_CONFIG_HOME")
    return (Path(env).expanduser() if env else Path.home() / ".config") / "opencode"


def default_source_roots() -> list[Path]:
    """The roots `archive-mcp ingest` reads when no path is given: every agent's default home."""
    return [
        kimi_share_dir(),
        kimi_code_home(),
        claude_config_dir(),
        codex_home(),
        gemini_dir(),
        qwen_home(),
        opencode_data_dir(),
        pi_agent_dir(),
        copilot_home(),
        continue_home(),
        factory_dir(),
        kilo_data_dir(),
        *(editor_user_dir(app) for app in EDITORS),
        cursor_home(),
        *windows_editor_dirs(),
    ]


def config_dir() -> Path:
    """Where archive-mcp's own settings live: `$ARCHIVE_MCP_CONFIG_DIR`, else the platform
    config dir (`~/.config/archive-mcp` on Linux)."""
    env = os.environ.get("ARCHIVE_MCP_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir("archive-mcp", appauthor=False))
