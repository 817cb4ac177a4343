"""`archive-mcp memory`: workspace memory and the essence."""

from __future__ import annotations

import click

from archive_mcp.cli.common import call, echo_json, json_option, table, warn


@click.group()
def memory() -> None:
    """Workspace memory: remember, recall, search, recent, forget, list, lesson, organize, bootstrap."""


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
    e = call(ctx, lambda a: a.memory(workspace).remember(key, text, folder, list(tags), list(sources), title))
    if as_json:
        echo_json(e)
    else:
        click.echo(f"stored {e.ref} (version {e.versions})")
        for w in e.warnings:
            warn(f"warning: {w}")


@memory.command("recall")
@click.argument("key")
@click.option("-f", "--folder", type=FOLDER)
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_recall(ctx: click.Context, key: str, folder: str | None, workspace: str | None, as_json: bool) -> None:
    """Print one memory."""
    e = call(ctx, lambda a: a.memory(workspace).recall(key, folder))
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
    hits = call(ctx, lambda a: a.memory(workspace).search(query, folder, limit))
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
    items = call(ctx, lambda a: a.memory(workspace).recall_recent(recent) if recent
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
    r = call(ctx, lambda a: a.memory(workspace).forget(key, folder))
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
    e = call(ctx, lambda a: a.save_lesson(situation, mistake, correction, workspace))
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
    result = call(ctx, lambda a: a.organize_memories(content, None, workspace))
    if as_json:
        echo_json(result)
    elif result.stage == "prepare":
        click.echo(result.rules)
        for m in result.materials:
            click.echo(f"\n### {m['ref']} (cited {m['cited']})\n{m['content']}")
    else:
        click.echo(f"stored {result.path} ({result.bytes:,} bytes)")
        for w in result.warnings:
            warn(f"warning: {w}")
        if result.missing_sources:
            warn("missing sources: " + ", ".join(result.missing_sources))


@memory.command("bootstrap")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_bootstrap(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """What a new session should read first."""
    b = call(ctx, lambda a: a.bootstrap_workspace(workspace))
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
    st = call(ctx, lambda a: a.memory_stats(workspace))
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
    path = call(ctx, lambda a: a.export_memory(include_turns, filename, workspace))
    click.echo(str(path))


@memory.command("import")
@click.argument("path")
@click.option("--allow-path", is_flag=True, help="Read PATH even if it is outside the workspace's exports/.")
@click.option("-w", "--workspace")
@json_option
@click.pass_context
def memory_import(ctx: click.Context, path: str, allow_path: bool, workspace: str | None, as_json: bool) -> None:
    """Read an export (a file name in the workspace's exports/) without duplicating."""
    r = call(ctx, lambda a: a.import_memory(path, workspace, allow_path=allow_path))
    if as_json:
        echo_json(r)
    else:
        click.echo(f"added {len(r.added)}, updated {len(r.updated)}, unchanged {len(r.unchanged)}, skipped {len(r.skipped)}")
