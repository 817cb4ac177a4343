"""A theme traced as a timeline: the theme read from each workspace it is traced in (members
merged), the memories that cite it, and the member sessions' refined rows, handed to
`timeline.build_timeline`. Cost follows the theme, not the workspace: only the member sessions'
files are read."""

from __future__ import annotations

import polars as pl

from archive_mcp.ingest import store
from archive_mcp.memory.links import linked_memories
from archive_mcp.schema import REFINED, empty_refined
from archive_mcp.themes.store import Member, Theme, ThemeStore
from archive_mcp.themes.timeline import Timeline, build_timeline
from archive_mcp.workspaces import Workspace


def merged_theme(theme: str, targets: list[Workspace]) -> Theme:
    """The theme as the first workspace holding it names it, with the members of every one."""
    members: list[Member] = []
    found: Theme | None = None
    for ws in targets:
        t = ThemeStore(ws).get(theme)
        if t is not None:
            found = found or t
            members += t.members
    if found is None:
        ThemeStore(targets[0]).require(theme)
    assert found is not None
    return Theme(found.name, found.slug, found.description, found.seeds, found.status, members)


def trace_theme(
    theme: str,
    targets: list[Workspace],
    granularity: str = "auto",
    include_turn_content: bool = False,
) -> Timeline:
    """The theme as a timeline over `targets` (the theme is read from each)."""
    merged = merged_theme(theme, targets)
    linked = linked_memories(targets, merged.name, merged.slug, merged.members)
    # Each file read whole (`read_refined`): a refine replacing one meanwhile cannot mix versions.
    parts = [
        df.select(list(REFINED))
        for ws in targets
        for sid in {m.session_id for m in merged.members}
        if (df := store.read_refined(ws, sid)).height
    ]
    frame = pl.concat(parts, how="vertical_relaxed").lazy() if parts else empty_refined().lazy()
    return build_timeline(
        merged,
        ",".join(w.id for w in targets),
        frame,
        granularity,
        linked,
        include_turn_content,
        [p for ws in targets for p in ws.paths],
    )
