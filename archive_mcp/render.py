"""Rendering for the CLI: JSON for machines, aligned plain tables for people."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_json"):
            return to_jsonable(obj.to_json())
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.repr}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), ensure_ascii=False, indent=2))


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], widths: dict[str, int] | None = None) -> str:
    """A plain aligned table; cells are cut to `widths` where given."""
    widths = widths or {}

    def cell(row: dict[str, Any], col: str) -> str:
        value = row.get(col)
        text = "" if value is None else (value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else str(value))
        text = " ".join(text.split())
        limit = widths.get(col)
        return text if not limit or len(text) <= limit else text[: limit - 1] + "…"

    cells = [[cell(r, c) for c in columns] for r in rows]
    sizes = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(sizes[i]) for i, c in enumerate(columns)).rstrip()]
    lines += ["  ".join(v.ljust(sizes[i]) for i, v in enumerate(r)).rstrip() for r in cells]
    return "\n".join(lines)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(f)


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
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as prog:
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
