"""`archive-mcp doctor`: what is in force and where it came from, which homes exist, what is
archived and how stale, who holds a lock, and each problem with its fix."""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive_mcp.install import AGENTS, config_file, registered
from archive_mcp.live import LOCK_NAME, archived_snapshot, changed_files, follow_roots, scan
from archive_mcp.refiners.embed import INSTALL_HINT, STATIC_MODEL
from archive_mcp.settings import SETTINGS, config_path, resolved, shown_text
from archive_mcp.workspaces import lock_holder


@dataclass
class Check:
    what: str
    status: str  # ok, info, warn, problem
    detail: str
    fix: str = ""


def settings_in_force(flags: dict[str, tuple[Any, str]]) -> list[Check]:
    """Each setting's value and source; `flags` holds the values the caller's flags decided."""
    out = [
        Check(
            "config file",
            "info",
            f"{config_path()}" + ("" if config_path().exists() else " (none)"),
        )
    ]
    for name, s in SETTINGS.items():
        value, source = flags.get(name) or resolved(name)
        where = {"env": f"${s.env}", "file": "config file", "flag": s.flag}.get(source, "default")
        out.append(Check(f"setting {name}", "info", f"{shown_text(name, value)} (from {where})"))
    return out


def diagnose(archive: Any, flags: dict[str, tuple[Any, str]] | None = None) -> list[Check]:
    checks = settings_in_force(flags or {})
    roots = follow_roots()
    for root in roots:
        if not root.exists():
            checks.append(Check(f"home {root}", "info", "not present"))
        elif not os.access(root, os.R_OK | os.X_OK):
            checks.append(Check(f"home {root}", "problem", "not readable", f"chmod u+rx '{root}'"))
        else:
            checks.append(Check(f"home {root}", "ok", "present"))
    if not any(r.exists() for r in roots):
        checks.append(
            Check(
                "homes",
                "warn",
                "no agent home to follow",
                "archive-mcp config set follow PATH (or $ARCHIVE_MCP_FOLLOW)",
            )
        )
    home = Path(archive.home)
    if home.exists() and not os.access(home, os.W_OK):
        checks.append(
            Check("archive home", "problem", f"{home} is not writable", f"chmod u+w '{home}'")
        )
    stats = archive.stats("all")
    checks.append(
        Check(
            "archive",
            "ok" if stats.sessions else "warn",
            f"{home}: {stats.workspaces} workspaces, {stats.sessions} sessions, {stats.turns} "
            f"turns, newest turn {stats.newest or 'none'}",
            "" if stats.sessions else "archive-mcp ingest",
        )
    )
    behind = changed_files(archived_snapshot(home), scan(roots))
    checks.append(
        Check(
            "freshness",
            "warn" if behind else "ok",
            f"{len(behind)} log files changed since they were archived"
            if behind
            else "every followed log file is archived",
            "archive-mcp ingest (or keep archive-mcp serve / watch running)" if behind else "",
        )
    )
    follower = lock_holder_of(home / LOCK_NAME)
    checks.append(
        Check("follower", "info", f"followed by {follower}" if follower else "no follower running")
    )
    for ws in archive.workspaces():
        holder = lock_holder(ws.root)
        if holder:
            checks.append(
                Check(
                    f"lock {ws.name}",
                    "warn",
                    f"held by process {holder.get('pid')} (`{holder.get('command')}`, since "
                    f"{holder.get('since')})",
                    "wait for it; if that process is gone, the lock frees itself",
                )
            )
    model = STATIC_MODEL / "model.safetensors"
    checks.append(
        Check(
            "model",
            "ok" if model.is_file() else "problem",
            f"the shipped static model {'is present' if model.is_file() else 'is missing'}"
            f" ({STATIC_MODEL.name})",
            ""
            if model.is_file()
            else "reinstall the package: pip install --force-reinstall agent-archive-mcp",
        )
    )
    full = all(importlib.util.find_spec(m) for m in ("torch", "sentence_transformers"))
    checks.append(
        Check(
            "full MiniLM",
            "info",
            "installed (--embedder minilm, --rerank minilm)"
            if full
            else "not installed (optional)",
            "" if full else INSTALL_HINT,
        )
    )
    for agent in AGENTS:
        path = config_file(agent)
        yes = registered(agent, path)
        checks.append(
            Check(
                f"agent {agent}",
                "ok" if yes else "info",
                f"registered in {path}" if yes else f"not registered ({path})",
                "" if yes else f"archive-mcp install {agent}",
            )
        )
    return checks


def lock_holder_of(lock: Path) -> str | None:
    """Who holds `lock` by its holder note; None when there is none or its process is gone."""
    try:
        info = json.loads(lock.with_name(lock.name + ".holder").read_text(encoding="utf-8"))
        os.kill(int(info["pid"]), 0)
        return f"process {info['pid']} (`{info['command']}`, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return None
