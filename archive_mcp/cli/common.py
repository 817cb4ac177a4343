"""What every CLI module shares: the archive from the context, errors as exit codes, output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from archive_mcp.archive import USER_ERRORS, Archive
from archive_mcp.render import echo_json, json_option, table

__all__ = ["archive_of", "call", "echo_json", "json_option", "table", "warn"]


def archive_of(ctx: click.Context) -> Archive:
    return ctx.find_object(Archive) or ctx.ensure_object(Archive)


def call(ctx: click.Context, fn: Callable[[Archive], Any]) -> Any:
    """Run `fn(archive)`; a mistake the user can fix becomes an error message and exit code 1."""
    try:
        return fn(archive_of(ctx))
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from exc


def warn(text: str) -> None:
    click.echo(text, err=True)
