"""`archive-mcp install AGENT` and `archive-mcp uninstall AGENT` (see `archive_mcp.install`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable

import click

from archive_mcp.cli.common import one_line, warn
from archive_mcp.install import AGENTS, HOOKS, Change, apply, plan_install, plan_uninstall

AGENT = click.Choice(list(AGENTS))
YES = click.option("--yes", is_flag=True, help="Do not ask before changing the file.")


def _diff(change: Change) -> str:
    lines = difflib.unified_diff(
        (change.before or "").splitlines(keepends=True),
        (change.after or "").splitlines(keepends=True),
        change.path if change.before is not None else "/dev/null",
        change.path if change.after is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _run(plan: Callable[[str], Change], agent: str, yes: bool, verb: str) -> None:
    with one_line():
        change = plan(agent)
    if not change.changes:
        warn(f"{agent}: {change.note} in {change.path}; nothing to do")
        return
    warn(_diff(change).rstrip("\n"))
    if change.note:
        warn(f"note: {change.note}")
    if not yes:
        click.confirm(f"{verb} {change.path}?", abort=True, err=True)
    with one_line():
        backup = apply(change)
    warn(
        f"{agent}: {'removed' if change.after is None else 'updated'} {change.path}"
        + (f" (backup: {backup})" if backup else "")
    )


@click.command()
@click.argument("agent", type=AGENT)
@YES
@click.option(
    "--no-hook",
    is_flag=True,
    help="claude-code, gemini, codex: register the server only, without the hook that ingests "
    "the agent's home when a session ends (Codex: its `notify` program, after each turn).",
)
def install(agent: str, yes: bool, no_hook: bool) -> None:
    """Register the MCP server (`archive-mcp serve`) in AGENT's user-scope configuration, and for
    claude-code and gemini a SessionEnd hook (their settings.json), for codex a `notify` program,
    that runs a quick incremental ingest in the background: shows each change, asks, backs the
    file up. Running it again changes nothing.

    \b
    AGENT: claude-code, codex, gemini, kimi (the Python Kimi CLI), kimi-code (the TypeScript
    Kimi Code CLI), qwen (Qwen Code), opencode.

    \b
    Example:
      archive-mcp install claude-code
      archive-mcp install codex --yes
    """
    _run(plan_install, agent, yes, "Change")
    if agent in HOOKS and not no_hook:
        _run(plan_install, HOOKS[agent], yes, "Change")


@click.command()
@click.argument("agent", type=AGENT)
@YES
def uninstall(agent: str, yes: bool) -> None:
    """Take out exactly what `install` added to AGENT's configuration (its hook too; a file it
    created is removed).

    \b
    Example:
      archive-mcp uninstall claude-code --yes
    """
    if agent in HOOKS:  # last in, first out: a file install created is then removed whole
        _run(plan_uninstall, HOOKS[agent], yes, "Change")
    _run(plan_uninstall, agent, yes, "Change")
