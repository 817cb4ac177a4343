"""What every CLI module shares: the archive from the context, the one error mapping (an
`ArchiveError` is a message on stderr and exit code 1), the options written once, and output."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar

import click

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError, as_os_error, os_message
from archive_mcp.render import dumps, table

__all__ = [
    "PATH",
    "archive_of",
    "call",
    "echo_json",
    "exclude_option",
    "json_option",
    "one_line",
    "progress_bar",
    "table",
    "warn",
    "workspace_option",
]

F = TypeVar("F", bound=Callable[..., Any])


def archive_of(ctx: click.Context) -> Archive:
    return ctx.find_object(Archive) or ctx.ensure_object(Archive)


class _Path(click.ParamType):
    """A path argument: an empty one or one with a NUL byte is a usage error (exit 2), never
    read as the current directory or passed on to the system."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text.strip():
            self.fail("the path is empty; give a path", param, ctx)
        if "\0" in text:
            self.fail("the path holds a NUL byte; no file can be named so", param, ctx)
        return text


PATH = _Path()


def call(ctx: click.Context, fn: Callable[[Archive], Any]) -> Any:
    """Run `fn(archive)` under `one_line`."""
    with one_line():
        return fn(archive_of(ctx))


@contextmanager
def one_line() -> Iterator[None]:
    """Inside, a mistake the user can fix becomes its message and exit code 1, and so does a
    disk error (full, read-only, failing, permission denied), also one a library wrapped: one
    line naming the cause and the fix, no traceback."""
    try:
        yield
    except ArchiveError as exc:
        raise click.ClickException(str(exc)) from exc
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as exc:  # noqa: BLE001 - a disk error, however a library wraps it
        disk = as_os_error(exc)
        if disk is None:
            raise
        raise click.ClickException(os_message(disk)) from exc


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


def exclude_option(f: F) -> F:
    """`--exclude`, repeatable: ingest, serve and watch skip sessions under these paths."""
    return click.option(
        "--exclude",
        multiple=True,
        type=PATH,
        metavar="PATH|GLOB",
        help="Never archive sessions whose work dir is under PATH or a folder matching GLOB "
        "(repeatable; default: the `exclude` setting, $ARCHIVE_MCP_EXCLUDE).",
    )(f)


@contextmanager
def progress_bar() -> Iterator[Callable[[str, int, int], None]]:
    """Progress bars on stderr, one per label, redrawn in place and erased at the end; when stderr
    is not a terminal (a cluster job's log), a plain line every 30 s. A label's text after " · "
    (e.g. a rate) changes; its bar stays."""
    stream = sys.stderr
    bars = _Bars(stream) if stream.isatty() else None
    last = [time.monotonic()]

    def update(label: str, done: int, total: int) -> None:
        if bars is not None:
            bars.update(label.split(" · ")[0], label, done, total)
        elif time.monotonic() - last[0] >= 30:
            last[0] = time.monotonic()
            click.echo(f"{label}: {done:,}/{total:,}", err=True)

    try:
        yield update
    finally:
        if bars is not None:
            bars.clear()


class _Bars:
    """Bars on a terminal: label, bar, done/total and the time left, at most 10 redraws a second."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.rows: dict[str, list[Any]] = {}  # key -> [label, done, total, first seen]
        self.drawn = 0  # lines on screen
        self.last = 0.0

    def update(self, key: str, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        self.rows.setdefault(key, [label, done, total, now])[:3] = label, done, total
        if now - self.last >= 0.1 or done >= total:
            width = shutil.get_terminal_size().columns
            lines = "".join("\x1b[2K" + _bar_line(r, now, width) + "\n" for r in self.rows.values())
            self.stream.write((f"\x1b[{self.drawn}F" if self.drawn else "") + lines)
            self.stream.flush()
            self.drawn, self.last = len(self.rows), now

    def clear(self) -> None:
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.stream.flush()


def _bar_line(row: list[Any], now: float, width: int) -> str:
    label, done, total, start = row
    left = "-:--:--"
    if total and done >= total:
        left = "0:00:00"
    elif done > 0:
        left = str(timedelta(seconds=int((now - start) * (total - done) / done)))
    counts = f"{done}/{total}"
    size = max(10, min(40, width - len(label) - len(counts) - len(left) - 4))
    fill = int(size * min(1.0, done / total)) if total else 0
    return f"{label} {'#' * fill}{'-' * (size - fill)} {counts} {left}"[: max(1, width - 1)]


def engine_options(f: Any) -> Any:
    """`--engine` and `--address`: where parse, refine and embed run (see README, "Team scale")."""
    f = click.option(
        "--address",
        metavar="ADDR",
        help=(
            "Ray cluster address, with --engine ray (default: $RAY_ADDRESS, else a local Ray instance)."
        ),
    )(f)
    return click.option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="local: processes on this machine; ray: a Ray cluster "
        "(pip install 'agent-archive-mcp[ray]').",
    )(f)


SKIPS_SHOWN = 20  # skip lines printed before the rest is only counted


def report_skips(skipped: list[Any], embed_error: str | None) -> None:
    """Skipped lines grouped by file (one line per file: how many, the first reason), then
    skipped files and folders; at most SKIPS_SHOWN lines, the rest counted."""
    groups: dict[tuple[str, bool], list[Any]] = {}
    for s in skipped:
        groups.setdefault((s.path, bool(s.line)), []).append(s)
    out = []
    for (path, lines), items in groups.items():
        if not lines:
            out += [f"skipped {path}: {s.reason}" for s in items]
        elif len(items) == 1:
            out.append(f"skipped {path}:{items[0].line}: {items[0].reason}")
        else:
            out.append(
                f"skipped {len(items)} lines of {path} (first at line {items[0].line}: "
                f"{items[0].reason})"
            )
    for text in out[:SKIPS_SHOWN]:
        warn(text)
    if len(out) > SKIPS_SHOWN:
        warn(f"… and {len(out) - SKIPS_SHOWN} more (use --json for all)")
    if embed_error:
        warn(f"embeddings skipped: {embed_error}")
