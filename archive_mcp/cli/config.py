"""`archive-mcp config path|show|set` and `archive-mcp doctor` (see `archive_mcp.settings`).

`Configured` is the top-level group's class: the config file's values become click's
`default_map`, so a flag beats its environment variable, which beats the file."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from archive_mcp.cli.common import archive_of, call, echo_json, json_option, warn
from archive_mcp.errors import ArchiveError
from archive_mcp.settings import (
    SETTINGS,
    config_path,
    read_config,
    resolved,
    set_value,
    shown,
    shown_text,
)

SOURCES = {
    ParameterSource.COMMANDLINE: "flag",
    ParameterSource.ENVIRONMENT: "env",
    ParameterSource.DEFAULT_MAP: "file",
}


class Configured(click.Group):
    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        why = None
        if "default_map" not in extra:
            try:
                data = read_config()
            except ArchiveError as exc:
                why, data = str(exc), {}
            top: dict[str, Any] = {k: data[k] for k in ("home", "embedder") if k in data}
            if "port" in data:
                top["serve"] = {"port": data["port"]}
            extra["default_map"] = top
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[UNREAD] = why
        return ctx

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        why = ctx.meta.pop(UNREAD, None)
        if why and name != "config":  # `config` reads the file itself and says what is wrong
            warn(f"warning: {why}")
        return name, cmd, rest


UNREAD = "archive_mcp.config_unread"  # why the config file could not be read, in ctx.meta


def _flags(ctx: click.Context) -> dict[str, tuple[Any, str]]:
    """The top-level options' values and sources (flag, env, file), as this run parsed them."""
    root = ctx.find_root()
    out = {}
    for name in ("home", "embedder"):
        source = SOURCES.get(root.get_parameter_source(name))  # type: ignore[arg-type]
        if source:
            out[name] = (root.params.get(name), source)
    return out


@click.group()
def config() -> None:
    """The config file: where it is, what is in force, set a value.

    \b
    Example:
      archive-mcp config set follow ~/.claude
    """


@config.command("path")
def config_path_cmd() -> None:
    """Print the config file's path (it may not exist yet).

    \b
    Example:
      archive-mcp config path
    """
    click.echo(str(config_path()))


@config.command("show")
@json_option
@click.pass_context
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Every setting in force, where it came from (flag, env, file, default) and its variable.

    \b
    Example:
      archive-mcp config show --json
    """
    flags = _flags(ctx)
    rows = []
    for name, s in SETTINGS.items():

        def value_of(_a: Any, n: str = name) -> tuple[Any, str]:
            return flags.get(n) or resolved(n)

        value, source = call(ctx, value_of)
        value = shown(name, value)
        rows.append({"name": name, "value": value, "source": source, "env": s.env, "flag": s.flag})
    if as_json:
        echo_json(rows)
        return
    for r in rows:
        value = shown_text(r["name"], r["value"])
        click.echo(f"{r['name']} = {value}  [{r['source']}; ${r['env']}, {r['flag']}]")


@config.command("set")
@click.argument("name", type=click.Choice(list(SETTINGS)))
@click.argument("value")
@click.pass_context
def config_set(ctx: click.Context, name: str, value: str) -> None:
    """Write NAME = VALUE to the config file ("" removes it; follow and exclude take PATHs
    joined by ':').

    \b
    Example:
      archive-mcp config set port 9000
    """
    data = call(ctx, lambda _a: set_value(name, value))
    text = shown_text(name, data[name]) if name in data else "(removed)"
    warn(f"{config_path()}: {name} = {text}")


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """What is in force and where it came from, which homes exist, what is archived and how
    stale, locks held, agents registered, and every problem with its fix.

    \b
    Example:
      archive-mcp doctor
    """
    from archive_mcp.doctor import diagnose

    flags = _flags(ctx)
    checks = call(ctx, lambda _a: diagnose(archive_of(ctx), flags))
    if as_json:
        echo_json(checks)
        return
    for c in checks:
        click.echo(
            f"{c.status:7} {c.what}: {c.detail}" + (f"\n        fix: {c.fix}" if c.fix else "")
        )
    if any(c.status == "problem" for c in checks):
        ctx.exit(1)
