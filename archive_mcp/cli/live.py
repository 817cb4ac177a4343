"""`archive-mcp watch`: the server's follower as a foreground process (see `archive_mcp.live`)."""

from __future__ import annotations

import signal
from types import FrameType

import click

from archive_mcp.cli.common import archive_of, exclude_option, warn
from archive_mcp.live import INTERVAL, Follower, follow_roots


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--wait",
    is_flag=True,
    help="When another follower holds this archive, wait for it to exit instead of exiting.",
)
@click.option("--no-embed", is_flag=True, help="Skip embeddings (search falls back to lexical).")
@exclude_option
@click.option(
    "--interval", type=float, default=INTERVAL, show_default=True, help="Seconds between polls."
)
@click.pass_context
def watch(
    ctx: click.Context,
    paths: tuple[str, ...],
    wait: bool,
    no_embed: bool,
    exclude: tuple[str, ...],
    interval: float,
) -> None:
    """Keep the archive current in the foreground: ingest PATHs (default: every agent's home, as
    `ingest`) at start and whenever they change, until SIGINT or SIGTERM. One line per round
    on stderr. One follower per archive: a second one exits (or waits, with --wait).

    \b
    Example:
      archive-mcp watch
      archive-mcp watch ~/.claude --wait --exclude ~/code/client-secret
    """
    follower = Follower(
        archive_of(ctx),
        paths,
        interval=max(0.05, interval),
        embed=not no_embed,
        status=warn,
        exclude=list(exclude) or None,
    )

    def stop(signum: int, _frame: FrameType | None) -> None:
        warn(f"{signal.Signals(signum).name}: stopping after the current round")
        follower.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second one interrupts
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if not follower.acquire():
        if not wait:
            raise click.ClickException(follower.holder_message())
        warn(f"waiting: {follower.holder_message()}")
        if not follower.acquire(wait=True):
            return  # stopped while waiting
    roots = follow_roots(paths)
    warn(f"following {', '.join(str(r) for r in roots)} into {follower.archive.home}")
    follower.run()
    warn(f"stopped after {follower.rounds} rounds; the archive state is saved")
