"""What every CLI module shares: the archive from the context, the one error mapping (an
`ArchiveError` is a message on stderr and exit code 1), the options written once, and output."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError
from archive_mcp.render import dumps, table

__all__ = [
    "archive_of",
    "call",
    "echo_json",
    "json_option",
    "progress_bar",
    "table",
    "warn",
    "workspace_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def archive_of(ctx: click.Context) -> Archive:
    return ctx.find_object(Archive) or ctx.ensure_object(Archive)


def call(ctx: click.Context, fn: Callable[[Archive], Any]) -> Any:
    """Run `fn(archive)`; a mistake the user can fix becomes its message and exit code 1."""
    try:
        return fn(archive_of(ctx))
    except ArchiveError as exc:
        raise click.ClickException(str(exc)) from exc


def warn(text: str) -> None:
    click.echo(text, err=True)


def echo_json(obj: Any) -> None:
    click.echo(dumps(obj))


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(f)


def workspace_option(f: F) -> F:
    """`-w/--workspace`, the same everywhere."""
    return click.option(
        "-w",
        "--workspace",
        metavar="WS",
        help=(
            "Workspace: a path, id, unique id prefix or name (default: the current directory's)."
        ),
    )(f)


@contextmanager
def progress_bar() -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr; when stderr is not a terminal (a cluster job's log), a
    plain line every 30 s. A label's text after " · " (e.g. a rate) changes; its bar stays."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as prog:
        last = [time.monotonic()]

        def update(label: str, done: int, total: int) -> None:
            key = label.split(" · ")[0]
            if key not in bars:
                bars[key] = prog.add_task(label, total=total)
            prog.update(bars[key], completed=done, total=total, description=label)
            if not console.is_terminal and time.monotonic() - last[0] >= 30:
                last[0] = time.monotonic()
                click.echo(f"{label}: {done:,}/{total:,}", err=True)

        yield update
