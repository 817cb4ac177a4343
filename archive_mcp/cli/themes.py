"""`archive-mcp themes` and `archive-mcp trace`: themes and their timelines."""

from __future__ import annotations

import click

from archive_mcp.cli.common import call, echo_json, json_option, table, warn, workspace_option
from archive_mcp.errors import InvalidArgument
from archive_mcp.refs import TurnRef, parse_ref
from archive_mcp.themes.trace.export import events_csv, events_table


@click.group()
def themes() -> None:
    """Themes: discover, list, show, tag, delete.

    \b
    Example:
      archive-mcp themes discover -w shop
    """


@themes.command("discover")
@workspace_option
@click.option(
    "--min-size",
    default=3,
    type=click.IntRange(min=1),
    show_default=True,
    help="Fewest turns a suggested theme has.",
)
@json_option
@click.pass_context
def themes_discover(
    ctx: click.Context, workspace: str | None, min_size: int, as_json: bool
) -> None:
    """Cluster a workspace's turns into suggested themes.

    \b
    Example:
      archive-mcp themes discover -w shop --min-size 4
    """
    d = call(ctx, lambda a: a.discover_themes(workspace, min_size))
    if as_json:
        echo_json(d)
        return
    click.echo(
        f"{len(d.themes)} suggested themes from {d.turns} turns ({d.method}, {d.seconds:.1f} s)"
    )
    for t in d.themes:
        click.echo(f"  {t.slug:12s} {len(t.members):4d} turns  {t.name}")


@themes.command("list")
@workspace_option
@json_option
@click.pass_context
def themes_list(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """Themes of a workspace.

    \b
    Example:
      archive-mcp themes list -w shop
    """
    items = call(ctx, lambda a: a.list_themes(workspace))
    rows = [
        {"name": t.name, "slug": t.slug, "status": t.status, "members": len(t.members)}
        for t in items
    ]
    if as_json:
        echo_json(rows)
        return
    click.echo(table(rows, ["slug", "status", "members", "name"], {"name": 60}))


@themes.command("show")
@click.argument("theme")
@workspace_option
@json_option
@click.pass_context
def themes_show(ctx: click.Context, theme: str, workspace: str | None, as_json: bool) -> None:
    """A theme's members and provenance.

    \b
    Example:
      archive-mcp themes show "payment retries" -w shop
    """
    t = call(ctx, lambda a: a.themes_store(workspace).require(theme))
    if as_json:
        echo_json(t)
        return
    click.echo(f"{t.name} [{t.status}] {t.description}")
    for m in t.members:
        click.echo(f"  {m.session_id}:{m.turn} {m.agent} {m.provenance} {m.when}")


def _refs(items: tuple[str, ...]) -> list[TurnRef]:
    try:
        return [parse_ref(item) for item in items]
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc


@themes.command("tag")
@click.argument("theme")
@click.option("-r", "--ref", "refs", multiple=True, help="SESSION:TURN to attach (repeatable).")
@click.option(
    "-s", "--seed", "seeds", multiple=True, help="Keywords or a question to search from (1-3)."
)
@click.option("--remove", "removes", multiple=True, help="SESSION:TURN to detach (repeatable).")
@click.option(
    "--min-score",
    default=0.5,
    show_default=True,
    help="Attach seed hits scoring at least this share of the best.",
)
@workspace_option
@json_option
@click.pass_context
def themes_tag(
    ctx: click.Context,
    theme: str,
    refs: tuple[str, ...],
    seeds: tuple[str, ...],
    removes: tuple[str, ...],
    min_score: float,
    workspace: str | None,
    as_json: bool,
) -> None:
    """Attach turns to THEME by reference or from seeds.

    \b
    Example:
      archive-mcp themes tag "payment retries" -s "charge_card retries" -w shop
    """
    attach, detach = _refs(refs), _refs(removes)
    r = call(
        ctx,
        lambda a: a.tag_theme(
            theme,
            workspace,
            references=attach,
            seeds=list(seeds) or None,
            remove=detach,
            min_score=min_score,
            who="cli",
        ),
    )
    if as_json:
        echo_json(r)
        return
    click.echo(f"{r.theme}: {r.members} turns (+{len(r.attached)}, -{len(r.removed)})")
    if r.no_match:
        warn(r.no_match)
    for n in r.near_misses:
        click.echo(f"  near miss {n['ref']} {n['share']:.2f} {n['summary']}")


@themes.command("delete")
@click.argument("theme")
@workspace_option
@json_option
@click.pass_context
def themes_delete(ctx: click.Context, theme: str, workspace: str | None, as_json: bool) -> None:
    """Delete a theme (its turns stay archived).

    \b
    Example:
      archive-mcp themes delete "payment retries" -w shop
    """
    t = call(ctx, lambda a: a.delete_theme(theme, workspace))
    if as_json:
        echo_json({"deleted": t.name, "slug": t.slug, "members": len(t.members)})
    else:
        click.echo(f"deleted theme {t.name!r}")


@click.command()
@click.argument("theme", nargs=-1, required=True)
@workspace_option
@click.option(
    "--by",
    "granularity",
    type=click.Choice(["auto", "day", "week", "session"]),
    default="auto",
    show_default=True,
    help="How events are bucketed; auto picks from the span.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "md", "json", "csv"]),
    default="md",
    show_default=True,
    help="json: one timeline, or an array of them for several THEMEs; csv: one header (with a theme column for several).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="Write turns per --by period as a PNG, decisions on their period.",
)
@click.pass_context
def trace(
    ctx: click.Context,
    theme: tuple[str, ...],
    workspace: str | None,
    granularity: str,
    fmt: str,
    plot_path: str | None,
) -> None:
    """Trace one or several THEMEs over time.

    \b
    Example:
      archive-mcp trace "payment retries" "session cache" -w shop --format json
    """
    if plot_path:
        from archive_mcp.plot import require_matplotlib

        call(ctx, lambda _: require_matplotlib())
    timelines = call(
        ctx,
        lambda a: [
            a.trace_theme(t, a.workspace(workspace), granularity=granularity) for t in theme
        ],
    )
    if fmt == "json":
        echo_json(timelines if len(timelines) > 1 else timelines[0])
    elif fmt == "csv":
        click.echo(events_csv(timelines), nl=False)
    else:
        for tl in timelines:
            click.echo(tl.markdown(100_000) if fmt == "md" else events_table(tl))
    if plot_path:
        from archive_mcp.plot import themes_over_time

        call(ctx, lambda _: themes_over_time(timelines, plot_path))
        warn(f"wrote {plot_path}")
