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
    """Claude Code's main root (where `install` writes its settings): the first of
    `claude_config_dirs()`."""
    return claude_config_dirs()[0]


def claude_config_dirs() -> list[Path]:
    """Every root of Claude Code (sessions under `projects/`): the comma-separated paths of
    `$CLAUDE_CONFIG_DIR`, else `~/.claude` and the XDG `$XDG_CONFIG_HOME/claude` (or
    `~/.config/claude`), where newer Claude Code builds may keep them (ccusage reads both)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    if env and env.strip(" ,"):
        return [Path(p.strip()).expanduser() for p in env.split(",") if p.strip()]
    return [Path.home() / ".claude", _env_or("XDG_CONFIG_HOME", Path.home() / ".config") / "claude"]


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


def cline_dir() -> Path:
    """Cline's folder (CLI 3 sessions under `data/sessions/`, older tasks under `data/tasks/`):
    `$CLINE_DIR` or `~/.cline`."""
    return _env_or("CLINE_DIR", Path.home() / ".cline")


# VS Code-shaped editors: their `User` folders (chats, `mcp.json`, the globalStorage of the
# extensions that keep Cline's task format) are read whole; Windsurf's only for those extensions
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor")
CLINE_EDITORS = ("Windsurf",)
CLINE_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline", "kilocode.kilo-code")


def editors_config_dir() -> Path:
    """Where Electron places the editors' folders: `~/Library/Application Support` on macOS,
    `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` (`~/.config`) elsewhere."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return _env_or("APPDATA", Path.home() / "AppData" / "Roaming")
    return _env_or("XDG_CONFIG_HOME", Path.home() / ".config")


def editor_user_dir(app: str, config: Path | None = None) -> Path:
    """The `User` folder of the VS Code-shaped editor `app` (its chats and `mcp.json`) in
    `config` (default: `editors_config_dir()`)."""
    return (config if config is not None else editors_config_dir()) / app / "User"


def editor_extension_dirs(config: Path | None = None) -> list[Path]:
    """The globalStorage folders of Cline, Roo Code and Kilo Code under the user folder of each
    VS Code-family editor whose `User` folder is not read whole (Windsurf's) in `config` (default:
    `editors_config_dir()`) that exist: the other editors' are read with their `User` folder."""
    return [
        d
        for editor in CLINE_EDITORS
        for ext in CLINE_EXTENSIONS
        if (d := editor_user_dir(editor, config) / "globalStorage" / ext).is_dir()
    ]


def cursor_home() -> Path:
    """The Cursor CLI's folder (`chats/`) and Cursor's `mcp.json`: `~/.cursor`."""
    return Path.home() / ".cursor"


def goose_dir() -> Path:
    """Goose's data folder (`sessions/`): `$GOOSE_PATH_ROOT/data`, else the XDG data folder's
    `goose` (`~/.local/share/goose`)."""
    root = os.environ.get("GOOSE_PATH_ROOT")
    if root:
        return Path(root).expanduser() / "data"
    return _env_or("XDG_DATA_HOME", Path.home() / ".local" / "share") / "goose"


def goose_config_dir() -> Path:
    """Goose's config folder (`config.yaml`): `$GOOSE_PATH_ROOT/config`, else the XDG config
    folder's `goose` (`~/.config/goose`)."""
    root = os.environ.get("GOOSE_PATH_ROOT")
    if root:
        return Path(root).expanduser() / "config"
    return _env_or("XDG_CONFIG_HOME", Path.home() / ".config") / "goose"


def crush_data_dir() -> Path:
    """Crush's global data folder (`projects.json`: each project's folder and data folder):
    `$CRUSH_GLOBAL_DATA`, else the XDG data folder's `crush` (`~/.local/share/crush`)."""
    env = os.environ.get("CRUSH_GLOBAL_DATA")
    if env:
        return Path(env).expanduser()
    return _env_or("XDG_DATA_HOME", Path.home() / ".local" / "share") / "crush"


def crush_config_dir() -> Path:
    """Crush's global config folder (`crush.json`): `$CRUSH_GLOBAL_CONFIG`, else the XDG config
    folder's `crush` (`~/.config/crush`)."""
    env = os.environ.get("CRUSH_GLOBAL_CONFIG")
    if env:
        return Path(env).expanduser()
    return _env_or("XDG_CONFIG_HOME", Path.home() / ".config") / "crush"


WINDOWS_MOUNTS = Path("/mnt")  # where WSL mounts the Windows drives (`/mnt/c`)
_NOT_USERS = frozenset({"all users", "default", "default user", "defaultuser0", "public"})


def in_wsl() -> bool:
    """Running under the Windows Subsystem for Linux (WSL sets `$WSL_DISTRO_NAME`; its kernel's
    release names Microsoft even where the variables are not passed on)."""
    if os.environ.get("WSL_DISTRO_NAME") or os.environ.get("WSL_INTEROP"):
        return True
    return sys.platform == "linux" and "microsoft" in platform.release().lower()


def windows_homes() -> list[Path]:
    """The Windows users' folders seen from WSL (`/mnt/<drive>/Users/<name>`); none elsewhere."""
    if not in_wsl():
        return []
    try:
        drives = sorted(d for d in WINDOWS_MOUNTS.iterdir() if len(d.name) == 1)
    except OSError:
        return []
    homes = []
    for drive in drives:
        try:
            users = sorted((drive / "Users").iterdir())
        except OSError:
            continue
        homes += [u for u in users if u.name.lower() not in _NOT_USERS and u.is_dir()]
    return homes


def also_in_windows_homes(roots: list[Path]) -> list[Path]:
    """`roots`, then each root kept under the home folder also under every Windows user's
    folder seen from WSL (`~/.claude` -> `/mnt/c/Users/<name>/.claude`), and the Windows
    editors' `User` and extension folders that exist; a root reached twice (a link) is listed
    once."""
    home, out = Path.home(), list(roots)
    for win in windows_homes():
        roaming = win / "AppData" / "Roaming"
        out += [win / r.relative_to(home) for r in roots if r.is_relative_to(home)]
        out += [d for app in EDITORS if (d := editor_user_dir(app, roaming)).is_dir()]
        out += editor_extension_dirs(roaming)
    seen: set[str] = set()
    unique = []
    for root in out:
        key = os.path.realpath(root)
        if key not in seen:
            seen.add(key)
            unique.append(root)
    return unique


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
    return also_in_windows_homes(
        [
            kimi_share_dir(),
            kimi_code_home(),
            *claude_config_dirs(),
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
            cline_dir(),
            *editor_extension_dirs(),
            goose_dir(),
            crush_data_dir(),
        ]
    )


def config_dir() -> Path:
    """Where archive-mcp's own settings live: `$ARCHIVE_MCP_CONFIG_DIR`, else the platform
    config dir (`~/.config/archive-mcp` on Linux)."""
    env = os.environ.get("ARCHIVE_MCP_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir("archive-mcp", appauthor=False))
