"""`archive-mcp ui`: the web UI for people, on 127.0.0.1 (see `archive_mcp.ui`)."""

from __future__ import annotations

import click

from archive_mcp.cli.common import PATH, archive_of, exclude_option, warn


@click.command()
@click.argument("paths", nargs=-1, type=PATH)
@click.option(
    "--port",
    default=8766,
    type=click.IntRange(0, 65535),
    show_default=True,
    help="The port on 127.0.0.1 (0: any free one).",
)
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="Keep the archive current as `serve` does: ingest PATHs (default: the `follow` "
    "setting, else every agent's home) at start and whenever they change.",
)
@exclude_option
@click.option("--token", help="The token the browser must present (default: a new one each start).")
@click.option("--no-auth", is_flag=True, help="Require no token (any local process can read).")
@click.pass_context
def ui(
    ctx: click.Context,
    paths: tuple[str, ...],
    port: int,
    follow: bool,
    exclude: tuple[str, ...],
    token: str | None,
    no_auth: bool,
) -> None:
    """Browse, search, read and trace the archive in a browser: open the URL it prints (it
    carries the token once; a cookie after). Binds 127.0.0.1 only.

    \b
    Example:
      archive-mcp ui
      archive-mcp ui ~/.claude --port 8800 --no-follow
    """
    from archive_mcp.ui import serve_ui
    from archive_mcp.ui.security import NO_AUTH_WARNING

    if no_auth and token:
        raise click.UsageError("--token and --no-auth cannot go together")
    if paths and not follow:
        raise click.UsageError("PATHs are the homes to follow; they cannot go with --no-follow")
    if no_auth:
        warn(NO_AUTH_WARNING)
    try:
        server = serve_ui(
            archive_of(ctx),
            port=port,
            token=None if no_auth else (token or ""),
            follow=follow,
            paths=paths,
            exclude=list(exclude) or None,
        )
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; pick another --port"
        ) from exc
    warn(f"archive-mcp: the archive in a browser (Ctrl-C stops): {server.url()}")
    server.run()
