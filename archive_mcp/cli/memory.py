"""`archive-mcp memory`: workspace memory and the essence."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from archive_mcp.cli.common import PATH, call, echo_json, json_option, table, warn, workspace_option
from archive_mcp.render import entry_text, to_jsonable


@click.group()
def memory() -> None:
    """Workspace memory: remember, recall, search, list, forget, lesson, organize, bootstrap, stats, export, import.

    \b
    Example:
      archive-mcp memory remember date-lib "Use date-fns." -f decisions -w webapp
    """


FOLDER = click.Choice(["decisions", "rules", "knowledge", "lessons", "reference"])


def folder_option(required: bool = False, default: str | None = None) -> Any:
    return click.option(
        "-f",
        "--folder",
        type=FOLDER,
        required=required,
        default=default,
        show_default=bool(default),
        help="The memory folder: decisions, rules, knowledge, lessons or reference.",
    )


@memory.command("remember")
@click.argument("key")
@click.argument("content", required=False)
@folder_option(default="knowledge")
@click.option(
    "-t",
    "--tag",
    "tags",
    multiple=True,
    help="A label (repeatable); an update without tags keeps them.",
)
@click.option(
    "-s",
    "--source",
    "sources",
    multiple=True,
    help="session:turn or a theme name it rests on (repeatable); an update without sources keeps them.",
)
@click.option("--title", help="A one-line title (default: the first line of the content).")
@workspace_option
@json_option
@click.pass_context
def memory_remember(
    ctx: click.Context,
    key: str,
    content: str | None,
    folder: str,
    tags: tuple[str, ...],
    sources: tuple[str, ...],
    title: str | None,
    workspace: str | None,
    as_json: bool,
) -> None:
    """Store CONTENT (or stdin) under KEY; an update keeps the previous version.

    \b
    Example:
      archive-mcp memory remember date-lib "Use date-fns." -f decisions -s 3f2c9a1e:2
    """
    text = content if content is not None else sys.stdin.read()
    e = call(
        ctx,
        lambda a: a.memory(workspace).remember(
            key,
            text,
            folder,
            list(tags) or None,
            a.canonical_sources(a.workspace(workspace), list(sources) or None),
            title,
        ),
    )
    if as_json:
        echo_json(e)
        return
    click.echo(f"stored {e.ref} (version {e.versions})")
    for w in e.warnings:
        warn(f"warning: {w}")


@memory.command("recall")
@click.argument("key")
@folder_option()
@workspace_option
@json_option
@click.pass_context
def memory_recall(
    ctx: click.Context, key: str, folder: str | None, workspace: str | None, as_json: bool
) -> None:
    """Print one memory.

    \b
    Example:
      archive-mcp memory recall date-lib
    """
    e = call(ctx, lambda a: a.memory(workspace).recall(key, folder))
    echo_json(e) if as_json else click.echo(entry_text(e))


@memory.command("search")
@click.argument("query")
@folder_option()
@click.option("--limit", default=10, show_default=True, help="Most memories, best first.")
@workspace_option
@json_option
@click.pass_context
def memory_search(
    ctx: click.Context,
    query: str,
    folder: str | None,
    limit: int,
    workspace: str | None,
    as_json: bool,
) -> None:
    """Search memories (lexical + typo-tolerant, Chinese works).

    \b
    Example:
      archive-mcp memory search "date library" -f decisions
    """
    hits = call(ctx, lambda a: a.memory(workspace).search(query, folder, limit))
    if as_json:
        echo_json(hits)
        return
    for h in hits:
        click.echo(f"memory/{h.folder}/{h.key}  {h.score:.3f}  {h.title}")


@memory.command("list")
@folder_option()
@click.option("--recent", type=int, help="Only the N most recently updated.")
@workspace_option
@json_option
@click.pass_context
def memory_list(
    ctx: click.Context, folder: str | None, recent: int | None, workspace: str | None, as_json: bool
) -> None:
    """List memories (or the most recent).

    \b
    Example:
      archive-mcp memory list --recent 5
    """
    items = call(
        ctx,
        lambda a: (
            a.memory(workspace).recall_recent(recent)
            if recent
            else a.memory(workspace).list(folder)
        ),
    )
    if as_json:
        echo_json(items)
        return
    click.echo(
        table(
            [{"ref": e.ref, "updated": e.updated[:19], "title": e.title} for e in items],
            ["ref", "updated", "title"],
            {"title": 60},
        )
    )


@memory.command("forget")
@click.argument("key")
@folder_option(required=True)
@workspace_option
@json_option
@click.pass_context
def memory_forget(
    ctx: click.Context, key: str, folder: str, workspace: str | None, as_json: bool
) -> None:
    """Move exactly one memory to the trash.

    \b
    Example:
      archive-mcp memory forget date-lib -f decisions
    """
    r = call(ctx, lambda a: a.memory(workspace).forget(key, folder))
    echo_json(r) if as_json else click.echo(f"removed {r.removed}; recoverable at {r.trash_path}")


@memory.command("lesson")
@click.option("--situation", required=True, help="When this applies.")
@click.option("--mistake", required=True, help="What went wrong.")
@click.option("--correction", required=True, help="What to do instead.")
@workspace_option
@json_option
@click.pass_context
def memory_lesson(
    ctx: click.Context,
    situation: str,
    mistake: str,
    correction: str,
    workspace: str | None,
    as_json: bool,
) -> None:
    """Record a lesson: a correction that must not be repeated.

    \b
    Example:
      archive-mcp memory lesson --situation "date tests" --mistake "local time" --correction "use UTC"
    """
    e = call(ctx, lambda a: a.save_lesson(situation, mistake, correction, workspace=workspace))
    echo_json(e) if as_json else click.echo(f"stored {e.ref}")


@memory.command("organize")
@click.option(
    "--content-file",
    type=click.Path(exists=True, dir_okay=False),
    help="Store this file as essence.md.",
)
@workspace_option
@json_option
@click.pass_context
def memory_organize(
    ctx: click.Context, content_file: str | None, workspace: str | None, as_json: bool
) -> None:
    """Without --content-file: print materials and rules. With it: store the essence.

    \b
    Example:
      archive-mcp memory organize --content-file essence.md
    """
    content = Path(content_file).read_text(encoding="utf-8") if content_file else None
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
@workspace_option
@json_option
@click.pass_context
def memory_bootstrap(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """What a new session should read first.

    \b
    Example:
      archive-mcp memory bootstrap -w webapp
    """
    b = call(ctx, lambda a: a.bootstrap_workspace(workspace))
    if as_json:
        echo_json(b)
        return
    click.echo(f"# {b.workspace_name}\n\n{b.essence or '(no essence yet)'}\n")
    for folder, lines in b.memory_index.items():
        click.echo(f"{folder}/\n" + "\n".join(f"  {line}" for line in lines))
    for r in b.recent_context:
        click.echo(f"- {r['session_id']}:{r['turn']} {r['summary']}")
    if b.missing_sources:
        warn("the essence cites memories that are gone: " + ", ".join(b.missing_sources))


@memory.command("stats")
@workspace_option
@json_option
@click.pass_context
def memory_stats(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """Counts per folder, archive size, turn span, themes.

    \b
    Example:
      archive-mcp memory stats --json
    """
    st = call(ctx, lambda a: a.memory_stats(workspace))
    if as_json:
        echo_json(st)
    else:
        click.echo("\n".join(f"{k}: {v}" for k, v in to_jsonable(st).items()))


@memory.command("export")
@click.option(
    "--filename",
    help="[A-Za-z0-9._-] only (default: memory-<time>.json), under the workspace's exports/.",
)
@click.option("--include-turns", is_flag=True, help="Also export every turn's summary.")
@workspace_option
@json_option
@click.pass_context
def memory_export(
    ctx: click.Context,
    filename: str | None,
    include_turns: bool,
    workspace: str | None,
    as_json: bool,
) -> None:
    """Write memories (and essence) to one JSON file under the workspace's exports/.

    \b
    Example:
      archive-mcp memory export --filename backup.json
    """
    path = call(ctx, lambda a: a.export_memory(include_turns, filename, workspace))
    echo_json({"path": str(path)}) if as_json else click.echo(str(path))


@memory.command("import")
@click.argument("path", type=PATH)
@click.option(
    "--allow-path",
    is_flag=True,
    help="Read PATH even if it is outside the workspace's exports/ folder.",
)
@workspace_option
@json_option
@click.pass_context
def memory_import(
    ctx: click.Context, path: str, allow_path: bool, workspace: str | None, as_json: bool
) -> None:
    """Read an export (a file name in the workspace's exports/) without duplicating.

    \b
    Example:
      archive-mcp memory import backup.json -w webapp
      archive-mcp memory import ~/Downloads/backup.json --allow-path -w webapp
    """
    r = call(ctx, lambda a: a.import_memory(path, workspace, allow_path=allow_path))
    if as_json:
        echo_json(r)
    else:
        click.echo(
            f"added {len(r.added)}, updated {len(r.updated)}, unchanged {len(r.unchanged)}, skipped {len(r.skipped)}"
        )
