"""`archive-mcp`: a thin skin over `Archive`. Data to stdout, people-facing text to stderr."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import click

from archive_mcp.archive import Archive
from archive_mcp.cli.common import archive_of, warn
from archive_mcp.errors import ArchiveError
from archive_mcp.render import echo_json, json_option, progress_bar, table
from archive_mcp.workspaces import WorkspaceError

_archive, _warn = archive_of, warn


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group()
@click.version_option(package_name="archive-mcp")
@click.option("--home", type=click.Path(file_okay=False), envvar="ARCHIVE_MCP_HOME",
              help="Archive home (default: $ARCHIVE_MCP_HOME or the platform data dir).")
@click.option("--embedder", type=click.Choice(["static", "minilm", "none"]), default="static",
              envvar="ARCHIVE_MCP_EMBEDDER", show_default=True,
              help="static: distilled from the packaged MiniLM (fast); minilm: the full model; none: lexical only.")
@click.pass_context
def main(ctx: click.Context, home: str | None, embedder: str) -> None:
    """Archive, refine, search and trace AI coding-agent sessions."""
    ctx.obj = Archive(home, embedder=None if embedder == "none" else embedder)


def engine_options(f: Any) -> Any:
    """--engine and --address: where parse, refine and embed run (see README, "Team scale")."""
    f = click.option("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray instance).")(f)
    return click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                        help="local: processes on this machine; ray: a Ray cluster (pip install 'archive-mcp[ray]').")(f)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--no-embed", is_flag=True, help="Skip embeddings (search falls back to lexical).")
@engine_options
@json_option
@click.pass_context
def ingest(ctx: click.Context, paths: tuple[str, ...], no_embed: bool, engine: str, address: str | None,
           as_json: bool) -> None:
    """Archive and refine sessions from PATHs (default: ~/.kimi and ~/.kimi-code)."""
    try:
        with progress_bar() as bar:
            report = _archive(ctx).ingest(*paths, embed=not no_embed, progress=bar, engine=engine,
                                          address=address)
    except ArchiveError as exc:
        raise _fail(exc) from exc
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
@engine_options
@json_option
@click.pass_context
def refine(ctx: click.Context, workspace: str | None, all_: bool, session: str | None,
           since: datetime | None, force: bool, no_embed: bool, engine: str, address: str | None,
           as_json: bool) -> None:
    """Batch-refine archived sessions (new refiner, missing embeddings, --force)."""
    if workspace and all_:
        raise click.UsageError("give --workspace or --all, not both")
    archive = _archive(ctx)
    try:
        target = "all" if all_ else archive.workspace(workspace).id
        with progress_bar() as bar:
            report = archive.refine(target, session=session, since=since, force=force,
                                    embed=not no_embed, progress=bar, engine=engine, address=address)
    except ArchiveError as exc:
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
@click.argument("query")
@click.option("-w", "--workspace", help="Workspace (default: the current directory's); 'all' for every one.")
@click.option("--mode", type=click.Choice(["hybrid", "lexical", "fuzzy", "semantic"]), default="hybrid", show_default=True)
@click.option("--limit", default=10, show_default=True)
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]), help="Only turns started since DATE.")
@click.option("--until", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]), help="Only turns started until DATE.")
@click.option("--session", help="Only this session (id or prefix).")
@click.option("--tool", help="Only turns that called this tool.")
@click.option("--file", "file_", help="Only turns that touched a path containing this.")
@click.option("--kind", help="Only turns of this kind (decision, fix, question, …).")
@json_option
@click.pass_context
def search(ctx: click.Context, query: str, workspace: str | None, mode: str, limit: int,
           since: datetime | None, until: datetime | None, session: str | None, tool: str | None,
           file_: str | None, kind: str | None, as_json: bool) -> None:
    """Search past turns: lexical + fuzzy + semantic, fused."""
    from archive_mcp.search.engine import SearchError

    archive = _archive(ctx)
    try:
        target = workspace if workspace == "all" else archive.workspace(workspace).id
        found = archive.search(query, workspace=target, mode=mode, limit=limit, since=since, until=until,
                               session=session, tool=tool, file=file_, kind=kind)
    except (WorkspaceError, SearchError) as exc:
        raise _fail(exc) from exc
    if as_json:
        echo_json(found.to_json())
        return
    if found.fallback_reason:
        _warn(f"search fell back to {found.realized_mode}: {found.fallback_reason}")
    for h in found:
        click.echo(f"{h.session_id}:{h.turn}{'' if h.agent == 'main' else f' [{h.agent}]'}  "
                   f"{(h.started_at or '')[:16]}  {h.score:.4f}  {'+'.join(h.matched)}")
        click.echo(f"    {h.summary}")
        if h.snippet:
            click.echo(f"    > {h.snippet}")
    if not found:
        _warn("no hits")


@main.command()
@click.argument("reference")
@click.option("-w", "--workspace", help="Workspace (default: the current directory's).")
@click.option("--before", default=0, show_default=True, help="Also show N turns before.")
@click.option("--after", default=0, show_default=True, help="Also show N turns after.")
@click.option("--agent", default="main", show_default=True)
@click.option("--thinking", is_flag=True, help="Include the model's thinking.")
@click.option("--max-chars", default=20000, show_default=True)
@json_option
@click.pass_context
def show(ctx: click.Context, reference: str, workspace: str | None, before: int, after: int,
         agent: str, thinking: bool, max_chars: int, as_json: bool) -> None:
    """Show a turn in full: SESSION:TURN (as printed by `search`)."""
    session, sep, turn = reference.rpartition(":")
    if not sep or not session or not turn.isdigit():
        raise click.UsageError("REFERENCE must look like SESSION:TURN, e.g. 3f2c9a1e-…:2")
    try:
        result = _archive(ctx).load_turn_context([{"session_id": session, "turn": int(turn), "agent": agent}],
                                                 workspace=workspace, before=before, after=after,
                                                 include_thinking=thinking, max_chars=max_chars)
    except WorkspaceError as exc:
        raise _fail(exc) from exc
    if as_json:
        echo_json(result)
    else:
        for t in result.turns:
            click.echo(f"## {t.session_id}:{t.turn} [{t.agent}] {t.started_at} {t.status}")
            click.echo(f"User: {t.user_text}\nAssistant: {t.assistant_text}")
            for c in t.tool_calls:
                click.echo(f"Tool {c.name} [{c.status}] {c.arguments}\n  → {c.result}")
            if t.thinking:
                click.echo(f"Thinking: {t.thinking}")
            click.echo()
    for n in result.not_found:
        _warn(f"not found: {n.session_id}:{n.turn}: {n.reason}")
    if result.not_found and not result.turns:
        raise click.ClickException("nothing to show")


@main.command()
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", default=8765, show_default=True)
@click.pass_context
def serve(ctx: click.Context, http: bool, port: int) -> None:
    """Run the MCP server (stdio by default)."""
    from archive_mcp.mcp.server import serve as run_server

    run_server(_archive(ctx), http=http, port=port)


@main.command()
@click.option("--keep", type=click.Path(file_okay=False), help="Build the demo archive here and keep it.")
@click.option("--no-embed", is_flag=True, help="Skip embeddings.")
def demo(keep: str | None, no_embed: bool) -> None:
    """Ingest the bundled sample into a temporary home and show what the archive holds."""
    from archive_mcp.demo import run_demo

    run_demo(keep, embed=not no_embed)


def _register() -> None:
    from archive_mcp.cli.memory import memory
    from archive_mcp.cli.themes import themes, trace

    main.add_command(themes)
    main.add_command(trace)
    main.add_command(memory)


_register()


def run() -> None:  # pragma: no cover - console entry point
    main(prog_name="archive-mcp")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
