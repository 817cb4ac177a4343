"""`archive-mcp workspaces` and `archive-mcp sessions`: what the archive holds, and purging it."""

from __future__ import annotations

import click

from archive_mcp.cli.common import (
    PATH,
    call,
    echo_json,
    json_option,
    table,
    warn,
    workspace_option,
)


@click.group()
def workspaces() -> None:
    """List, show, link and merge workspaces.

    \b
    Example:
      archive-mcp workspaces list
    """


@workspaces.command("list")
@json_option
@click.pass_context
def workspaces_list(ctx: click.Context, as_json: bool) -> None:
    """Every archived workspace.

    \b
    Example:
      archive-mcp workspaces list --json
    """
    items = call(ctx, lambda a: a.workspaces())
    if as_json:
        echo_json(items)
        return
    click.echo(
        table(
            [{"id": w.id, "name": w.name, "paths": ", ".join(w.paths)} for w in items],
            ["id", "name", "paths"],
        )
    )


@workspaces.command("show")
@click.argument("workspace")
@json_option
@click.pass_context
def workspaces_show(ctx: click.Context, workspace: str, as_json: bool) -> None:
    """One workspace and its counts.

    \b
    Example:
      archive-mcp workspaces show webapp
    """
    ws, stats = call(ctx, lambda a: (a.workspace(workspace), a.stats(a.workspace(workspace).id)))
    if as_json:
        echo_json({**ws.to_json(), "stats": stats})
        return
    click.echo(
        f"{ws.name} ({ws.id})\npaths: {', '.join(ws.paths) or 'unknown'}\n"
        f"sources: {', '.join(ws.sources)}\nsessions: {stats.sessions}  turns: {stats.turns}  "
        f"embedded: {stats.embedded}  raw: {stats.raw_bytes:,} bytes\n"
        f"span: {stats.oldest} .. {stats.newest}"
    )


@workspaces.command("link")
@click.argument("path", type=PATH)
@click.option("--into", required=True, metavar="WS", help="The workspace PATH belongs to.")
@json_option
@click.pass_context
def workspaces_link(ctx: click.Context, path: str, into: str, as_json: bool) -> None:
    """Add PATH (a worktree, a moved checkout) to a workspace.

    \b
    Example:
      archive-mcp workspaces link ~/src/webapp-wt --into webapp
    """
    ws = call(ctx, lambda a: a.link(path, into))
    if as_json:
        echo_json(ws)
    else:
        click.echo(f"{ws.name} ({ws.id}): {', '.join(ws.paths)}")


@workspaces.command("merge")
@click.argument("src")
@click.option("--into", required=True, metavar="WS", help="The workspace SRC joins.")
@json_option
@click.pass_context
def workspaces_merge(ctx: click.Context, src: str, into: str, as_json: bool) -> None:
    """Move workspace SRC (a worktree's, a moved checkout's) into WS: its paths, sessions and
    themes; SRC is removed and a later ingest of its paths lands in WS.

    \b
    Example:
      archive-mcp workspaces merge ~/src/webapp/.worktrees/feat --into webapp
    """
    report = call(ctx, lambda a: a.merge_workspaces(src, into))
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"merged {report.source} into {report.into}: {len(report.sessions)} "
        + ("session" if len(report.sessions) == 1 else "sessions")
        + (f", themes {', '.join(report.themes)}" if report.themes else "")
        + f"\npaths: {', '.join(report.paths)}"
    )
    for rel in report.renamed:
        warn(f"kept {rel} under that name: {report.into} had a different file of the same name")


@click.group()
def sessions() -> None:
    """Sessions in the archive.

    \b
    Example:
      archive-mcp sessions list -w webapp
    """


@sessions.command("list")
@workspace_option
@click.option("--all", "all_", is_flag=True, help="Every workspace.")
@click.option("--limit", default=50, show_default=True, help="Most sessions to list, newest first.")
@json_option
@click.pass_context
def sessions_list(
    ctx: click.Context, workspace: str | None, all_: bool, limit: int, as_json: bool
) -> None:
    """Sessions, newest first.

    \b
    Example:
      archive-mcp sessions list --all --limit 10
    """
    rows = call(
        ctx,
        lambda a: (
            a.sessions("all" if all_ else a.workspace(workspace).id)
            .head(limit)
            .collect()
            .to_dicts()
        ),
    )
    if as_json:
        echo_json(rows)
        return
    click.echo(
        table(
            rows,
            ["session_id", "source", "first_at", "turns", "title"],
            {"title": 60},
        )
    )


@sessions.command("purge")
@click.argument("session")
@workspace_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def sessions_purge(
    ctx: click.Context, session: str, workspace: str | None, yes: bool, as_json: bool
) -> None:
    """Delete SESSION's raw copies (they keep its secrets), refined rows, embeddings and state.

    \b
    Example:
      archive-mcp sessions purge 4f1c2a9e -w webapp --yes
    """
    ws = call(ctx, lambda a: a.workspace(workspace))
    if not yes:
        click.confirm(
            f"Delete everything archived for session {session} in {ws.name}?", abort=True, err=True
        )
    report = call(ctx, lambda a: a.purge_session(session, ws))
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"purged {session} from {ws.name}: {len(report.removed)} paths removed"
        + (f", dropped from themes {', '.join(report.themes)}" if report.themes else "")
        + "; it stays out of every later ingest (`sessions unpurge` re-admits it)"
    )


@sessions.command("unpurge")
@click.argument("session", required=False)
@json_option
@click.pass_context
def sessions_unpurge(ctx: click.Context, session: str | None, as_json: bool) -> None:
    """Re-admit purged SESSION (an id or unique prefix): the next ingest archives it again if the
    agent's log still holds it. Without SESSION, list the purged sessions.

    \b
    Example:
      archive-mcp sessions unpurge 4f1c2a9e
    """
    if session is None:
        rows = call(ctx, lambda a: a.purged_sessions())
        if as_json:
            echo_json(rows)
            return
        for p in rows:
            click.echo(f"{p.session_id} {p.source or '?'} purged {p.purged_at} from {p.workspace}")
        if not rows:
            warn("no purged sessions")
        return
    back = call(ctx, lambda a: a.unpurge_session(session))
    if as_json:
        echo_json(back)
        return
    click.echo(f"re-admitted {back[0].session_id}: the next ingest archives it again")
