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
@click.option("--embedder", type=click.Choice(["static", "minilm", "none"]), default="static",
              envvar="ARCHIVE_MCP_EMBEDDER", show_default=True,
              help="static: distilled from the packaged MiniLM (fast); minilm: the full model; none: lexical only.")
@click.pass_context
def main(ctx: click.Context, home: str | None, embedder: str) -> None:
    """Archive, refine, search and trace AI coding-agent sessions."""
    ctx.obj = Archive(home, embedder=None if embedder == "none" else embedder)


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
    from .search import SearchError

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


def _theme_call(ctx: click.Context, fn: Any) -> Any:
    from .themes import ThemeError

    try:
        return fn(_archive(ctx))
    except (WorkspaceError, ThemeError) as exc:
        raise _fail(exc) from exc


@main.group()
def themes() -> None:
    """Themes: discover, list, show, tag, delete."""


@themes.command("discover")
@click.option("-w", "--workspace")
@click.option("--min-size", default=3, show_default=True)
@json_option
@click.pass_context
def themes_discover(ctx: click.Context, workspace: str | None, min_size: int, as_json: bool) -> None:
    """Cluster a workspace's turns into suggested themes."""
    d = _theme_call(ctx, lambda a: a.discover_themes(workspace, min_size))
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
    items = _theme_call(ctx, lambda a: a.list_themes(workspace))
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
    t = _theme_call(ctx, lambda a: a.themes_store(workspace).require(theme))
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

    r = _theme_call(ctx, lambda a: a.tag_theme(theme, workspace, parse(refs), list(seeds) or None, parse(removes),
                                               None, min_score, who="cli"))
    if as_json:
        echo_json(r)
        return
    click.echo(f"{r.theme}: {r.members} turns (+{len(r.attached)}, -{len(r.removed)})")
    for n in r.near_misses:
        click.echo(f"  near miss {n['session_id']}:{n['turn']} {n['score']:.2f} {n['summary'][:80]}")


@themes.command("delete")
@click.argument("theme")
@click.option("-w", "--workspace")
@click.pass_context
def themes_delete(ctx: click.Context, theme: str, workspace: str | None) -> None:
    """Delete a theme (its turns stay archived)."""
    t = _theme_call(ctx, lambda a: a.delete_theme(theme, workspace))
    click.echo(f"deleted theme {t.name!r}")


@main.command()
@click.argument("theme", nargs=-1, required=True)
@click.option("-w", "--workspace")
@click.option("--by", "granularity", type=click.Choice(["auto", "day", "week", "session"]), default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "md", "json", "csv"]), default="md", show_default=True)
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), help="Write activity per period as a PNG.")
@click.pass_context
def trace(ctx: click.Context, theme: tuple[str, ...], workspace: str | None, granularity: str, fmt: str,
          plot_path: str | None) -> None:
    """Trace one or several THEMEs over time."""
    timelines = [_theme_call(ctx, lambda a, t=t: a.trace_theme(t, a.workspace(workspace), granularity)) for t in theme]
    for tl in timelines:
        if fmt == "md":
            click.echo(tl.markdown(100_000))
        elif fmt == "json":
            echo_json(tl)
        elif fmt == "csv":
            click.echo(tl.frame.select("started_at", "session_id", "agent", "turn", "bucket", "summary",
                                       pl_join("kinds")).write_csv(), nl=False)
        else:
            click.echo(table([{"when": e.at, "ref": f"{e.session_id}:{e.turn}", "kinds": ",".join(e.kinds),
                               "summary": e.summary} for e in tl.events], ["when", "ref", "kinds", "summary"],
                             {"ref": 48, "summary": 90}))
    if plot_path:
        from .plot import themes_over_time

        themes_over_time(timelines, plot_path)
        _warn(f"wrote {plot_path}")


def pl_join(col: str) -> Any:
    import polars as pl

    return pl.col(col).list.join(",")


@main.group()
def memory() -> None:
    """Workspace memory: remember, recall, search, recent, forget, list, lesson, organize, bootstrap."""


def _memory_call(ctx: click.Context, fn: Any) -> Any:
    from .memory import MemoryError as MemError

    try:
        return fn(_archive(ctx))
    except (WorkspaceError, MemError) as exc:
        raise _fail(exc) from exc


FOLDER = click.Choice(["decisions", "rules", "knowledge", "lessons", "reference"])


@memory.command("remember")
@click.argument("key")
@click.argument("content", required=False)
@click.option("-f", "--folder", type=FOLDER, default="knowledge", show_default=True)
@click.option("-t", "--tag", "tags", multiple=True)
@click.option("-s", "--source", "sources", multiple=True, help="session:turn or a theme name.")
@click.option("--title")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_remember(ctx: click.Context, key: str, content: str | None, folder: str, tags: tuple[str, ...],
                    sources: tuple[str, ...], title: str | None, workspace: str | None, as_json: bool) -> None:
    """Store CONTENT (or stdin) under KEY."""
    text = content if content is not None else click.get_text_stream("stdin").read()
    e = _memory_call(ctx, lambda a: a.memory(workspace).remember(key, text, folder, list(tags), list(sources), title))
    if as_json:
        echo_json(e)
    else:
        click.echo(f"stored {e.ref} (version {e.versions})")
        for w in e.warnings:
            _warn(f"warning: {w}")


@memory.command("recall")
@click.argument("key")
@click.option("-f", "--folder", type=FOLDER)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_recall(ctx: click.Context, key: str, folder: str | None, workspace: str | None, as_json: bool) -> None:
    """Print one memory."""
    e = _memory_call(ctx, lambda a: a.memory(workspace).recall(key, folder))
    if as_json:
        echo_json(e)
    else:
        click.echo(f"# {e.title}\n{e.ref} v{e.versions} {e.updated}\n\n{e.content}")


@memory.command("search")
@click.argument("query")
@click.option("-f", "--folder", type=FOLDER)
@click.option("--limit", default=10, show_default=True)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_search(ctx: click.Context, query: str, folder: str | None, limit: int, workspace: str | None, as_json: bool) -> None:
    """Search memories."""
    hits = _memory_call(ctx, lambda a: a.memory(workspace).search(query, folder, limit))
    if as_json:
        echo_json(hits)
    else:
        for h in hits:
            click.echo(f"memory/{h.folder}/{h.key}  {h.score:.3f}  {h.title}")


@memory.command("list")
@click.option("-f", "--folder", type=FOLDER)
@click.option("--recent", type=int, help="Only the N most recently updated.")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_list(ctx: click.Context, folder: str | None, recent: int | None, workspace: str | None, as_json: bool) -> None:
    """List memories (or the most recent)."""
    items = _memory_call(ctx, lambda a: a.memory(workspace).recall_recent(recent) if recent
                         else a.memory(workspace).list(folder))
    if as_json:
        echo_json(items)
    else:
        click.echo(table([{"ref": e.ref, "updated": e.updated[:19], "title": e.title} for e in items],
                         ["ref", "updated", "title"], {"title": 60}))


@memory.command("forget")
@click.argument("key")
@click.option("-f", "--folder", type=FOLDER, required=True)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_forget(ctx: click.Context, key: str, folder: str, workspace: str | None, as_json: bool) -> None:
    """Move exactly one memory to the trash."""
    r = _memory_call(ctx, lambda a: a.memory(workspace).forget(key, folder))
    if as_json:
        echo_json(r)
    else:
        click.echo(f"removed {r.removed}; recoverable at {r.trash_path}")


@memory.command("lesson")
@click.option("--situation", required=True)
@click.option("--mistake", required=True)
@click.option("--correction", required=True)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_lesson(ctx: click.Context, situation: str, mistake: str, correction: str, workspace: str | None,
                  as_json: bool) -> None:
    """Record a lesson: a correction that must not be repeated."""
    e = _memory_call(ctx, lambda a: a.save_lesson(situation, mistake, correction, workspace))
    if as_json:
        echo_json(e)
    else:
        click.echo(f"stored {e.ref}")


@memory.command("organize")
@click.option("--content-file", type=click.Path(exists=True, dir_okay=False), help="Store this as essence.md.")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_organize(ctx: click.Context, content_file: str | None, workspace: str | None, as_json: bool) -> None:
    """Without --content-file: print materials and rules. With it: store the essence."""
    from pathlib import Path as _Path

    content = _Path(content_file).read_text(encoding="utf-8") if content_file else None
    result = _memory_call(ctx, lambda a: a.organize_memories(content, None, workspace))
    if as_json:
        echo_json(result)
    elif result.stage == "prepare":
        click.echo(result.rules)
        for m in result.materials:
            click.echo(f"\n### {m['ref']} (cited {m['cited']})\n{m['content']}")
    else:
        click.echo(f"stored {result.path} ({result.bytes:,} bytes)")
        for w in result.warnings:
            _warn(f"warning: {w}")
        if result.missing_sources:
            _warn("missing sources: " + ", ".join(result.missing_sources))


@memory.command("bootstrap")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_bootstrap(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """What a new session should read first."""
    b = _memory_call(ctx, lambda a: a.bootstrap_workspace(workspace))
    if as_json:
        echo_json(b)
        return
    click.echo(f"# {b.workspace_name}\n\n{b.essence or '(no essence yet)'}\n")
    for folder, lines in b.memory_index.items():
        click.echo(f"{folder}/")
        for line in lines:
            click.echo(f"  {line}")
    for r in b.recent_context:
        click.echo(f"- {r['session_id']}:{r['turn']} {r['summary']}")


@memory.command("stats")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_stats(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """Counts per folder, archive size, turn span, themes."""
    st = _memory_call(ctx, lambda a: a.memory_stats(workspace))
    if as_json:
        echo_json(st)
    else:
        click.echo("\n".join(f"{k}: {v}" for k, v in st.to_json().items()))


@memory.command("export")
@click.option("--filename")
@click.option("--include-turns", is_flag=True)
@click.option("-w", "--workspace")
@click.pass_context
def memory_export(ctx: click.Context, filename: str | None, include_turns: bool, workspace: str | None) -> None:
    """Write memories (and essence) to one JSON file under the workspace's exports/."""
    path = _memory_call(ctx, lambda a: a.export_memory(include_turns, filename, workspace))
    click.echo(str(path))


@memory.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_import(ctx: click.Context, path: str, workspace: str | None, as_json: bool) -> None:
    """Read an export into a workspace without duplicating."""
    r = _memory_call(ctx, lambda a: a.import_memory(path, workspace))
    if as_json:
        echo_json(r)
    else:
        click.echo(f"added {len(r.added)}, updated {len(r.updated)}, unchanged {len(r.unchanged)}, skipped {len(r.skipped)}")


@main.command()
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", default=8765, show_default=True)
@click.pass_context
def serve(ctx: click.Context, http: bool, port: int) -> None:
    """Run the MCP server (stdio by default)."""
    from .server import serve as run_server

    run_server(_archive(ctx), http=http, port=port)


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
