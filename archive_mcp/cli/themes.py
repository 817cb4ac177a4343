"""`archive-mcp themes` and `archive-mcp trace`: themes and their timelines."""

from __future__ import annotations

from typing import Any

import click

from archive_mcp.cli.common import call, echo_json, json_option, table, warn


@click.group()
def themes() -> None:
    """Themes: discover, list, show, tag, delete."""


@themes.command("discover")
@click.option("-w", "--workspace")
@click.option("--min-size", default=3, show_default=True)
@json_option
@click.pass_context
def themes_discover(ctx: click.Context, workspace: str | None, min_size: int, as_json: bool) -> None:
    """Cluster a workspace's turns into suggested themes."""
    d = call(ctx, lambda a: a.discover_themes(workspace, min_size))
    if as_json:
        echo_json(d)
        return
    click.echo(f"{len(d.themes)} suggested themes from {d.turns} turns ({d.method}, {d.seconds:.1f} s)")
    for t in d.themes:
        click.echo(f"  {t.slug:12s} {len(t.members):4d} turns  {t.name}")


@themes.command("list")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def themes_list(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """Themes of a workspace."""
    items = call(ctx, lambda a: a.list_themes(workspace))
    if as_json:
        echo_json([{"name": t.name, "slug": t.slug, "status": t.status, "members": len(t.members)} for t in items])
        return
    click.echo(table([{"slug": t.slug, "status": t.status, "turns": len(t.members), "name": t.name} for t in items],
                     ["slug", "status", "turns", "name"], {"name": 60}))


@themes.command("show")
@click.argument("theme")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def themes_show(ctx: click.Context, theme: str, workspace: str | None, as_json: bool) -> None:
    """A theme's members and provenance."""
    t = call(ctx, lambda a: a.themes_store(workspace).require(theme))
    if as_json:
        echo_json(t)
        return
    click.echo(f"{t.name} [{t.status}] {t.description}")
    for m in t.members:
        click.echo(f"  {m.session_id}:{m.turn} {m.agent} {m.provenance} {m.when}")


@themes.command("tag")
@click.argument("theme")
@click.option("-r", "--ref", "refs", multiple=True, help="SESSION:TURN to attach.")
@click.option("-s", "--seed", "seeds", multiple=True, help="Keywords or a question (1-3).")
@click.option("--remove", "removes", multiple=True, help="SESSION:TURN to detach.")
@click.option("--min-score", default=0.5, show_default=True)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def themes_tag(ctx: click.Context, theme: str, refs: tuple[str, ...], seeds: tuple[str, ...], removes: tuple[str, ...],
               min_score: float, workspace: str | None, as_json: bool) -> None:
    """Attach turns to THEME by reference or from seeds."""
    def parse(items: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            sid, sep, turn = item.rpartition(":")
            if not sep or not turn.isdigit():
                raise click.UsageError(f"{item!r} must look like SESSION:TURN")
            out.append({"session_id": sid, "turn": int(turn)})
        return out

    r = call(ctx, lambda a: a.tag_theme(theme, workspace, parse(refs), list(seeds) or None, parse(removes),
                                               None, min_score, who="cli"))
    if as_json:
        echo_json(r)
        return
    click.echo(f"{r.theme}: {r.members} turns (+{len(r.attached)}, -{len(r.removed)})")
    for n in r.near_misses:
        click.echo(f"  near miss {n['ref']} {n['share']:.2f} {n['summary']}")


@themes.command("delete")
@click.argument("theme")
@click.option("-w", "--workspace")
@click.pass_context
def themes_delete(ctx: click.Context, theme: str, workspace: str | None) -> None:
    """Delete a theme (its turns stay archived)."""
    t = call(ctx, lambda a: a.delete_theme(theme, workspace))
    click.echo(f"deleted theme {t.name!r}")


@click.command()
@click.argument("theme", nargs=-1, required=True)
@click.option("-w", "--workspace")
@click.option("--by", "granularity", type=click.Choice(["auto", "day", "week", "session"]), default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "md", "json", "csv"]), default="md", show_default=True)
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Write activity per period as a PNG.")
@click.pass_context
def trace(ctx: click.Context, theme: tuple[str, ...], workspace: str | None, granularity: str, fmt: str,
          plot_path: str | None) -> None:
    """Trace one or several THEMEs over time."""
    timelines = [call(ctx, lambda a, t=t: a.trace_theme(t, a.workspace(workspace), granularity)) for t in theme]
    for tl in timelines:
        if fmt == "md":
            click.echo(tl.markdown(100_000))
        elif fmt == "json":
            echo_json(tl)
        elif fmt == "csv":
            click.echo(tl.frame.select("started_at", "source", "session_id", "agent", "turn", "bucket", "summary",
                                       pl_join("kinds")).write_csv(), nl=False)
        else:
            click.echo(table([{"when": e.at, "source": e.source, "ref": f"{e.session_id}:{e.turn}",
                               "kinds": ",".join(e.kinds), "summary": e.summary} for e in tl.events],
                             ["when", "source", "ref", "kinds", "summary"],
                             {"ref": 48, "summary": 90}))
    if plot_path:
        from archive_mcp.plot import themes_over_time

        themes_over_time(timelines, plot_path)
        warn(f"wrote {plot_path}")


def pl_join(col: str) -> Any:
    import polars as pl

    return pl.col(col).list.join(",")
