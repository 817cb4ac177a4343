"""`archive-mcp demo`: the whole pipeline on the bundled sample, in a throwaway home."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

import click

from archive_mcp.archive import Archive
from archive_mcp.render import table


def sample_root() -> Path:
    return Path(str(resources.files("archive_mcp") / "sample"))


def sample_archive(home: str | Path | None = None, embed: bool = True) -> Archive:
    """An archive of the bundled sample (both Kimi formats and a project with planted themes),
    built in `home` or in a new temporary directory. For demos, notebooks and trying things."""
    home = Path(home) if home else Path(tempfile.mkdtemp(prefix="archive-mcp-sample-"))
    archive = Archive(home)
    sample = sample_root()
    archive.last_report = archive.ingest(
        sample / "kimi", sample / "kimi-code", sample / "kimi-themes", embed=embed, exclude=()
    )
    return archive


def run_demo(keep: str | None = None, embed: bool = True) -> Archive:
    archive = sample_archive(keep, embed)
    click.echo(f"# archive-mcp demo (archive home: {archive.home})\n")
    report = archive.last_report
    assert report is not None  # sample_archive always ingests
    click.echo(
        f"Ingested {report.files} wire logs: {report.sessions} sessions, "
        f"{report.turns_added} turns refined, {report.embedded} embedded."
    )
    for s in report.skipped:
        click.echo(f"  noted {Path(s.path).name}{f':{s.line}' if s.line else ''}: {s.reason}")
    if report.embed_error:
        click.echo(f"  embeddings skipped: {report.embed_error}")
    click.echo("\n## Workspaces")
    click.echo(
        table(
            [
                {"id": w.id[:12], "name": w.name, "paths": ", ".join(w.paths)}
                for w in archive.workspaces()
            ],
            ["id", "name", "paths"],
        )
    )
    click.echo("\n## Sessions")
    click.echo(
        table(
            archive.sessions("all").collect().to_dicts(),
            ["source", "first_at", "turns", "title"],
            {"title": 60},
        )
    )
    click.echo("\n## Refined turns (summary, kinds)")
    rows = archive.turns("all").sort("started_at").collect().to_dicts()
    click.echo(
        table(
            [{**r, "kinds": ",".join(r["kinds"]), "when": r["started_at"]} for r in rows],
            ["when", "agent", "turn", "status", "kinds", "summary"],
            {"summary": 90},
        )
    )
    for query, ws in (
        ("why does the date test fail", "webapp"),
        ("会话缓存 回滚", "shop"),
        ("num_wrokers regression", "ml-pipeline"),
    ):
        found = archive.search(query, workspace=ws, limit=3)
        click.echo(f"\n## search {query!r} in {ws} ({found.realized_mode})")
        for h in found:
            click.echo(
                f"  {h.session_id[:13]}:{h.turn} {h.score:.4f} {'+'.join(h.matched):24s} {h.summary[:80]}"
            )
    click.echo("\n## Themes discovered in 'shop' (suggested; k not chosen)")
    discovered = archive.discover_themes("shop")
    for t in discovered.themes:
        click.echo(f"  {t.slug:11s} {len(t.members):3d} turns  {t.name}")
    tagged = archive.tag_theme(
        "payment retries", "shop", seeds=["charge_card retries PSP"], who="demo"
    )
    click.echo(
        f"\n## tag_theme('payment retries', seeds=[...]): {len(tagged.attached)} turns attached, "
        f"{len(tagged.near_misses)} near misses to confirm"
    )
    click.echo("\n" + archive.trace_theme("payment retries", "shop").markdown(4000))
    stats = archive.stats("all")
    click.echo(
        f"\n{stats.turns} turns in {stats.sessions} sessions across {stats.workspaces} "
        f"workspaces, {stats.raw_bytes:,} raw bytes archived."
    )
    return archive
