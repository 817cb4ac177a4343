"""`archive-mcp`: a thin skin over `Archive`. Data to stdout, people-facing text to stderr."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import click

from workspaces import WorkspaceError

from .archive import Archive
from .output import echo_json, json_option, progress_bar, table


def _archive(ctx: click.Context) -> Archive:
    return ctx.find_object(Archive) or ctx.ensure_object(Archive)


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def _warn(text: str) -> None:
    click.echo(text, err=True)


@click.group()
@click.version_option(package_name="archive-mcp")
@click.option("--home", type=click.Path(file_okay=False), envvar="ARCHIVE_MCP_HOME",
              help="Archive home (default: $ARCHIVE_MCP_HOME or the platform data dir).")
@click.option("--embedder", type=click.Choice(["static", "minilm"]), default="static",
              envvar="ARCHIVE_MCP_EMBEDDER", show_default=True,
              help="static: distilled from the packaged MiniLM (fast); minilm: the full model.")
@click.pass_context
def main(ctx: click.Context, home: str | None, embedder: str) -> None:
    """Archive, refine, search and trace AI coding-agent sessions."""
    ctx.obj = Archive(home, embedder=embedder)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--no-embed", is_flag=True, help="Skip embeddings (search falls back to lexical).")
@json_option
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[str, ...], no_embed: bool, as_json: bool) -> None:
    """Archive and refine sessions from PATHs (default: ~/.kimi and ~/.kimi-code)."""
    with progress_bar() as bar:
        report = _archive(ctx).ingest(*paths, embed=not no_embed, progress=bar)
    if as_json:
        echo_json(report)
        return
    click.echo(f"{report.files} files ({report.files_changed} changed, {report.bytes_archived:,} bytes "
               f"archived), {report.sessions} sessions, {report.turns_added} turns added, "
               f"{report.turns_updated} updated, {report.embedded} embedded")
    _report_skips(report.skipped, report.embed_error)


def _report_skips(skipped: list[Any], embed_error: str | None) -> None:
    for s in skipped[:20]:
        _warn(f"skipped {s.path}{f':{s.line}' if s.line else ''}: {s.reason}")
    if len(skipped) > 20:
        _warn(f"… and {len(skipped) - 20} more (use --json for all)")
    if embed_error:
        _warn(f"embeddings skipped: {embed_error}")


@main.command()
@click.option("-w", "--workspace", help="Workspace (path, id, id prefix or name).")
@click.option("--all", "all_", is_flag=True, help="Every workspace.")
@click.option("--session", help="Only this session id.")
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
              help="Only sessions active since DATE.")
@click.option("--force", is_flag=True, help="Refine and embed again even if up to date.")
@click.option("--no-embed", is_flag=True, help="Skip embeddings.")
@json_option
@click.pass_context
def refine(ctx: click.Context, workspace: str | None, all_: bool, session: str | None,
           since: datetime | None, force: bool, no_embed: bool, as_json: bool) -> None:
    """Batch-refine archived sessions (new refiner, missing embeddings, --force)."""
    if workspace and all_:
        raise click.UsageError("give --workspace or --all, not both")
    archive = _archive(ctx)
    try:
        target = "all" if all_ else archive.workspace(workspace).id
        with progress_bar() as bar:
            report = archive.refine(target, session=session, since=since, force=force,
                                    embed=not no_embed, progress=bar)
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    if as_json:
        echo_json(report)
        return
    click.echo(f"{report.sessions} sessions refined ({report.turns} turns), {report.embedded} embedded")
    _report_skips(report.skipped, report.embed_error)


@main.group()
def workspaces() -> None:
    """List, show and link workspaces."""


@workspaces.command("list")
@json_option
@click.pass_context
def workspaces_list(ctx: click.Context, as_json: bool) -> None:
    """Every archived workspace."""
    items = _archive(ctx).workspaces()
    if as_json:
        echo_json(items)
        return
    click.echo(table([{"id": w.id, "name": w.name, "paths": ", ".join(w.paths)} for w in items],
                     ["id", "name", "paths"]))


@workspaces.command("show")
@click.argument("workspace")
@json_option
@click.pass_context
def workspaces_show(ctx: click.Context, workspace: str, as_json: bool) -> None:
    """One workspace and its counts."""
    archive = _archive(ctx)
    try:
        ws = archive.workspace(workspace)
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    stats = archive.stats(ws.id)
    if as_json:
        echo_json({**ws.to_json(), "stats": stats})
        return
    click.echo(f"{ws.name} ({ws.id})\npaths: {', '.join(ws.paths) or 'unknown'}\n"
               f"sources: {', '.join(ws.sources)}\nsessions: {stats.sessions}  turns: {stats.turns}  "
               f"embedded: {stats.embedded}  raw: {stats.raw_bytes:,} bytes\n"
               f"span: {stats.oldest} .. {stats.newest}")


@workspaces.command("link")
@click.argument("path")
@click.option("--into", required=True, help="The workspace PATH belongs to.")
@json_option
@click.pass_context
def workspaces_link(ctx: click.Context, path: str, into: str, as_json: bool) -> None:
    """Add PATH (a worktree, a moved checkout) to a workspace."""
    try:
        ws = _archive(ctx).link(path, into)
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    if as_json:
        echo_json(ws)
    else:
        click.echo(f"{ws.name} ({ws.id}): {', '.join(ws.paths)}")


@main.group()
def sessions() -> None:
    """Sessions in the archive."""


@sessions.command("list")
@click.option("-w", "--workspace", help="Workspace (default: the current directory's).")
@click.option("--all", "all_", is_flag=True, help="Every workspace.")
@click.option("--limit", default=50, show_default=True)
@json_option
@click.pass_context
def sessions_list(ctx: click.Context, workspace: str | None, all_: bool, limit: int, as_json: bool) -> None:
    """Sessions, newest first."""
    archive = _archive(ctx)
    try:
        target = "all" if all_ else archive.workspace(workspace).id
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    rows = archive.sessions(target).head(limit).collect().to_dicts()
    if as_json:
        echo_json(rows)
        return
    click.echo(table(rows, ["session_id", "source", "first_at", "turns", "title"],
                     {"session_id": 40, "title": 60}))


@main.command()
@click.option("-w", "--workspace", help="Workspace (default: every workspace).")
@json_option
@click.pass_context
def stats(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """What the archive holds."""
    try:
        result = _archive(ctx).stats(workspace)
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    if as_json:
        echo_json(result)
        return
    click.echo(f"workspaces: {result.workspaces}\nsessions: {result.sessions}\nturns: {result.turns}\n"
               f"embedded: {result.embedded}\nraw bytes: {result.raw_bytes:,}\n"
               f"span: {result.oldest} .. {result.newest}\n"
               f"status: {', '.join(f'{k} {v}' for k, v in sorted(result.by_status.items()))}")


@main.command()
@click.option("--keep", type=click.Path(file_okay=False), help="Build the demo archive here and keep it.")
@click.option("--no-embed", is_flag=True, help="Skip embeddings.")
def demo(keep: str | None, no_embed: bool) -> None:
    """Ingest the bundled sample into a temporary home and show what the archive holds."""
    from .demo import run_demo

    run_demo(keep, embed=not no_embed)


def run() -> None:  # pragma: no cover - console entry point
    main(prog_name="archive-mcp")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
