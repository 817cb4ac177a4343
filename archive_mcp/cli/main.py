"""`archive-mcp`: a thin skin over `Archive`. Data to stdout, people-facing text to stderr.

An `ArchiveError` is mapped once (`common.call`): its message on stderr, exit code 1. Usage
mistakes exit 2 (click)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from archive_mcp.archive import Archive
from archive_mcp.cli.common import (
    PATH,
    call,
    echo_json,
    engine_options,
    exclude_option,
    json_option,
    progress_bar,
    report_skips,
    warn,
    workspace_option,
)
from archive_mcp.cli.config import Configured
from archive_mcp.errors import InvalidArgument
from archive_mcp.ingest.pipeline import IngestReport, stop_on_sigterm
from archive_mcp.refiners import SOURCES
from archive_mcp.refs import Citing
from archive_mcp.render import grep_text, hit_text, turn_text
from archive_mcp.search.engine import FILTER_HELP, Filters
from archive_mcp.search.grep import WHERE
from archive_mcp.settings import exclude_setting

DATE = click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"])
TURNS = click.IntRange(0, 1000)  # turns shown around one: a session's worth, bounded
F = TypeVar("F", bound=Callable[..., Any])


@click.group(cls=Configured)
@click.version_option(package_name="archive-mcp")
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    envvar="ARCHIVE_MCP_HOME",
    help="Archive home (default: $ARCHIVE_MCP_HOME or the platform data dir).",
)
@click.option(
    "--embedder",
    type=click.Choice(["static", "minilm", "none"]),
    default="static",
    envvar="ARCHIVE_MCP_EMBEDDER",
    show_default=True,
    help="static: distilled from the packaged MiniLM (fast); minilm: the full model; none: lexical only.",
)
@click.pass_context
def main(ctx: click.Context, home: str | None, embedder: str) -> None:
    """Archive, refine, search and trace AI coding-agent sessions.

    \b
    Example:
      archive-mcp ingest && archive-mcp search "why did the date test fail"
    """
    ctx.obj = Archive(home, embedder=None if embedder == "none" else embedder)


_clock = time.perf_counter  # tests pin it


def say_roots(roots: list[dict]) -> None:
    """Which default agent homes an ingest with no path looked in, found and did not find."""
    if roots:
        found = [r["path"] for r in roots if r["found"]]
        missing = [r["path"] for r in roots if not r["found"]]
        warn(
            f"looked in {len(roots)} default roots; found: {', '.join(found) or 'none'}"
            + (f"; not present: {', '.join(missing)}" if missing else "")
        )


def index_changed(archive: Archive, report: IngestReport) -> float | None:
    """Build the search index of each workspace an ingest changed, so that the first search
    after it does not pay for that (a 100k-turn workspace: tens of seconds); searches running
    meanwhile answer from the index before. Seconds taken, None when nothing changed."""
    if not (report.turns_added or report.turns_updated):
        return None
    t = _clock()
    for ws_id in report.workspaces:
        archive.index(archive.workspace(ws_id)).refresh()
    return _clock() - t


@main.command()
@click.argument("paths", nargs=-1, type=PATH)
@click.option("--no-embed", is_flag=True, help="Skip embeddings (search falls back to lexical).")
@click.option(
    "--no-index", is_flag=True, help="Leave the search index to the first search (it builds it)."
)
@click.option(
    "--include-purged",
    is_flag=True,
    help="Archive purged sessions again too, and forget that they were purged.",
)
@exclude_option
@engine_options
@json_option
@click.pass_context
def ingest(
    ctx: click.Context,
    paths: tuple[str, ...],
    no_embed: bool,
    no_index: bool,
    include_purged: bool,
    exclude: tuple[str, ...],
    engine: str,
    address: str | None,
    as_json: bool,
) -> None:
    """Archive and refine sessions from PATHs (default: every agent's home that exists:
    ~/.kimi, ~/.kimi-code, ~/.claude, ~/.codex, ~/.gemini, ~/.qwen,
    ~/.local/share/opencode; Aider's history is in each repo: give the repo or a folder).

    \b
    Example:
      archive-mcp ingest ~/.kimi --json
      archive-mcp ingest ~/.claude --exclude ~/code/client-secret
      archive-mcp ingest ~/.claude --engine ray --address ray://head:10001
    """
    patterns = call(ctx, lambda _a: exclude_setting(exclude)[0])
    with progress_bar() as bar, stop_on_sigterm():  # SIGTERM: stop, state saved, resumable
        report = call(
            ctx,
            lambda a: a.ingest(
                *paths,
                embed=not no_embed,
                progress=bar,
                engine=engine,
                address=address,
                exclude=patterns,
                include_purged=include_purged,
            ),
        )
        built = None if no_index else call(ctx, lambda a: index_changed(a, report))
    if as_json:
        echo_json(report)
        return
    say_roots(report.roots)
    click.echo(
        f"{report.files} files ({report.files_changed} changed, {report.bytes_archived:,} bytes "
        f"archived), {report.sessions} sessions, {report.turns_added} turns added, "
        f"{report.turns_updated} updated, {report.embedded} embedded in {report.seconds:.1f} s"
    )
    if built is not None:
        click.echo(f"search index built in {built:.1f} s")
    if report.created:
        click.echo(f"new workspaces: {', '.join(sorted(report.created))}")
    if report.excluded:
        click.echo(f"excluded: {report.excluded} sessions under {', '.join(patterns)}")
    if report.purged:
        click.echo(
            f"purged: {report.purged} sessions not archived again "
            "(`archive-mcp sessions unpurge SESSION` or --include-purged re-admits them)"
        )
    report_skips(report.skipped, report.embed_error)
    for hint in report.suggestions:
        warn(f"hint: {hint}")
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise click.ClickException(
            f"{', '.join(missing)}: does not exist; nothing archived from it"
        )


@main.command()
@workspace_option
@click.option("--all", "all_", is_flag=True, help="Every workspace.")
@click.option("--session", help="Only this session id.")
@click.option("--since", type=DATE, help="Only sessions active since DATE.")
@click.option("--force", is_flag=True, help="Refine and embed again even if up to date.")
@click.option("--no-embed", is_flag=True, help="Skip embeddings.")
@engine_options
@json_option
@click.pass_context
def refine(
    ctx: click.Context,
    workspace: str | None,
    all_: bool,
    session: str | None,
    since: datetime | None,
    force: bool,
    no_embed: bool,
    engine: str,
    address: str | None,
    as_json: bool,
) -> None:
    """Batch-refine archived sessions (new refiner, missing embeddings, --force).

    \b
    Example:
      archive-mcp refine --all --since 2026-03-01
      archive-mcp refine --all --force --engine ray
    """
    if workspace and all_:
        raise click.UsageError("give --workspace or --all, not both")
    with progress_bar() as bar:
        report = call(
            ctx,
            lambda a: a.refine(
                "all" if all_ else a.workspace(workspace).id,
                session=session,
                since=since,
                force=force,
                embed=not no_embed,
                progress=bar,
                engine=engine,
                address=address,
            ),
        )
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{report.sessions} sessions refined ({report.turns} turns, {report.rows_changed} rows changed), "
        f"{report.embedded} embedded"
    )
    report_skips(report.skipped, report.embed_error)


@main.command()
@click.option(
    "-w",
    "--workspace",
    metavar="WS",
    help="Workspace: a path, id, unique id prefix or name (default: every workspace).",
)
@json_option
@click.pass_context
def stats(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """What the archive holds.

    \b
    Example:
      archive-mcp stats -w webapp
    """
    result = call(ctx, lambda a: a.stats(workspace or "all"))
    if as_json:
        echo_json(result)
        return
    click.echo(
        f"workspaces: {result.workspaces}\nsessions: {result.sessions}\nturns: {result.turns}\n"
        f"embedded: {result.embedded}\nraw bytes: {result.raw_bytes:,}\n"
        f"span: {result.oldest} .. {result.newest}\n"
        f"status: {', '.join(f'{k} {v}' for k, v in sorted(result.by_status.items()))}"
    )


def filter_options(f: F) -> F:
    """One option per search filter (`Filters`), its help the filter's own."""
    types: dict[str, click.ParamType] = {
        "since": DATE,
        "until": DATE,
        "source": click.Choice(list(SOURCES)),
    }
    for name in reversed(FILTER_HELP):
        f = click.option(f"--{name}", type=types.get(name), help=FILTER_HELP[name])(f)
    return f


@main.command()
@click.argument("query")
@workspace_option
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "lexical", "fuzzy", "semantic"]),
    default="hybrid",
    show_default=True,
    help="hybrid fuses lexical, fuzzy and semantic.",
)
@click.option("--limit", default=10, show_default=True, help="Most hits, best first.")
@filter_options
@click.option(
    "--rerank",
    type=click.Choice(["minilm", "e5"]),
    is_flag=False,
    flag_value="minilm",
    default=None,
    help="Opt-in second stage: minilm (alone: --rerank) re-scores the top 30 with the full MiniLM "
    "(loads torch); e5 the top 20 with multilingual-e5-small (the e5 extra). Slower.",
)
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    workspace: str | None,
    mode: str,
    limit: int,
    rerank: str | None,
    as_json: bool,
    **filters: Any,
) -> None:
    """Search past turns: lexical + fuzzy + semantic, fused. `-w all` searches every workspace.

    \b
    Example:
      archive-mcp search "handleLogin bound twice" -w webapp --limit 3
    """
    found = call(
        ctx,
        lambda a: a.search(
            query,
            workspace if workspace == "all" else a.workspace(workspace).id,
            filters=Filters(**filters),
            mode=mode,
            limit=limit,
            rerank=rerank,
        ),
    )
    if as_json:
        echo_json(found.to_json())
        return
    if found.fallback_reason:
        warn(f"search fell back to {found.realized_mode}: {found.fallback_reason}")
    names = (
        {w.id: w.name for w in call(ctx, lambda a: a.workspaces())} if workspace == "all" else {}
    )
    for h in found:
        click.echo(hit_text(h, indent="    ", where=names.get(h.workspace_id, "")))
    if not found:
        warn("no hits")


@main.command()
@click.argument("reference")
@workspace_option
@click.option(
    "--before", default=0, type=TURNS, show_default=True, help="Also show N turns before."
)
@click.option("--after", default=0, type=TURNS, show_default=True, help="Also show N turns after.")
@click.option("--agent", help='"main" or a subagent id (default: the reference\'s, else main).')
@click.option("--thinking", is_flag=True, help="Include the model's thinking.")
@click.option(
    "--max-chars", default=20000, show_default=True, help="Budget for all turns' text together."
)
@json_option
@click.pass_context
def show(
    ctx: click.Context,
    reference: str,
    workspace: str | None,
    before: int,
    after: int,
    agent: str | None,
    thinking: bool,
    max_chars: int,
    as_json: bool,
) -> None:
    """Show a turn in full: SESSION:TURN as `search`, `trace` and `sessions list` print it (a unique
    session-id prefix will do). Without -w, the session is looked up in every workspace.

    \b
    Example:
      archive-mcp show 3f2c9a1e:2 --before 1
    """
    from archive_mcp.refs import parse_ref

    try:
        ref = parse_ref(reference)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from exc
    if agent:
        ref.agent = agent
    result = call(
        ctx,
        lambda a: a.load_turn_context(
            [ref],
            workspace=workspace,
            before=before,
            after=after,
            include_thinking=thinking,
            max_chars=max_chars,
            anywhere=workspace is None,
            full_tools=True,
        ),
    )
    if as_json:
        echo_json(result)
    else:
        click.echo("\n\n".join(turn_text(t) for t in result.turns))
    for n in result.not_found:
        warn(f"not found: {n.session_id}:{n.turn}: {n.reason}")


@main.command()
@click.argument("paths", nargs=-1, type=PATH)
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option(
    "--port",
    default=8765,
    envvar="ARCHIVE_MCP_PORT",
    type=click.IntRange(1, 65535),
    show_default=True,
    help="The HTTP port (with --http).",
)
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="Keep the archive current: ingest PATHs (default: the `follow` setting, else every "
    "agent's home, as `ingest`) at start and whenever they change, in the background.",
)
@exclude_option
@click.option(
    "--token",
    envvar="ARCHIVE_MCP_TOKEN",
    help="The bearer token HTTP clients must send (default: the config file's `token`, made and "
    "printed on the first start).",
)
@click.option("--no-auth", is_flag=True, help="Serve HTTP without requiring a token.")
@click.pass_context
def serve(
    ctx: click.Context,
    paths: tuple[str, ...],
    http: bool,
    port: int,
    follow: bool,
    exclude: tuple[str, ...],
    token: str | None,
    no_auth: bool,
) -> None:
    """Run the MCP server (stdio by default), following PATHs (default: the `follow` setting,
    else every agent's home). Over HTTP every request must carry `Authorization: Bearer <token>`.

    \b
    Example:
      archive-mcp serve ~/.claude ~/.codex --exclude ~/code/client-secret
      archive-mcp serve --http --port 8765
    """
    from archive_mcp.mcp.server import serve as run_server

    auth = None
    if http:
        warn(f"archive-mcp: serving MCP over HTTP at http://127.0.0.1:{port}/mcp")
        auth = http_token_of(ctx, token, no_auth)
    if paths and not follow:
        raise click.UsageError("PATHs are the homes to follow; they cannot go with --no-follow")
    run_server(
        ctx.find_object(Archive),
        http=http,
        port=port,
        follow=follow,
        token=auth,
        paths=paths,
        exclude=list(exclude) or None,
    )


def http_token_of(ctx: click.Context, token: str | None, no_auth: bool) -> str | None:
    """The token `serve --http` requires (None with --no-auth); says on stderr where it is."""
    from archive_mcp.mcp.http_auth import NO_AUTH_WARNING, http_token

    given = ctx.get_parameter_source("token")
    if no_auth:
        if given == click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError("--token and --no-auth cannot go together")
        warn(NO_AUTH_WARNING)
        return None
    where = "--token" if given == click.core.ParameterSource.COMMANDLINE else "$ARCHIVE_MCP_TOKEN"
    token, line = call(ctx, lambda _a: http_token(token, where))
    warn(line)
    return token


@main.command()
@click.option(
    "--keep", type=click.Path(file_okay=False), help="Build the demo archive here and keep it."
)
@click.option("--no-embed", is_flag=True, help="Skip embeddings.")
def demo(keep: str | None, no_embed: bool) -> None:
    """Ingest the bundled sample into a temporary home and show what the archive holds.

    \b
    Example:
      archive-mcp demo --keep ./demo-archive
    """
    from archive_mcp.demo import run_demo

    run_demo(keep, embed=not no_embed)


@main.command()
@click.argument("pattern")
@workspace_option
@click.option(
    "--session",
    "sessions",
    multiple=True,
    help="A session id or prefix, or a turn SESSION:TURN (repeatable).",
)
@click.option(
    "--where",
    multiple=True,
    type=click.Choice(WHERE),
    help="A part to search (repeatable; default all): input is a tool's input, output its result.",
)
@json_option
@click.pass_context
def grep(
    ctx: click.Context,
    pattern: str,
    workspace: str | None,
    sessions: tuple[str, ...],
    where: tuple[str, ...],
    as_json: bool,
) -> None:
    """Print the lines of past turns matching a regular expression (case-insensitive), oldest
    first, each under its SESSION:TURN: the user's words, answers, thinking, tool inputs and
    outputs.

    \b
    Example:
      archive-mcp grep "git (commit|push)" --where input
    """
    found = call(
        ctx,
        lambda a: a.grep_turns(pattern, workspace, sessions=sessions, where=where or WHERE),
    )
    if as_json:
        echo_json(found)
        return
    click.echo(grep_text(found, found.turns, Citing()))


def _register() -> None:
    from archive_mcp.cli.config import config, doctor
    from archive_mcp.cli.install import install, uninstall
    from archive_mcp.cli.live import watch
    from archive_mcp.cli.memory import memory
    from archive_mcp.cli.themes import themes, trace
    from archive_mcp.cli.ui import ui
    from archive_mcp.cli.workspaces import sessions, workspaces

    main.add_command(workspaces)
    main.add_command(sessions)
    main.add_command(themes)
    main.add_command(trace)
    main.add_command(memory)
    main.add_command(watch)
    main.add_command(install)
    main.add_command(uninstall)
    main.add_command(config)
    main.add_command(doctor)
    main.add_command(ui)


_register()


def run() -> None:  # pragma: no cover - console entry point
    main(prog_name="archive-mcp")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
