"""A theme traced as a timeline: the theme read from each workspace it is traced in (members
merged), the memories that cite it, and the member sessions' refined rows, handed to
`timeline.build_timeline`. Cost follows the theme, not the workspace: only the member sessions'
files are read, and a file already parsed in this process is not parsed again."""

from __future__ import annotations

import gc
import hashlib
import io
from collections.abc import Iterator
from contextlib import contextmanager

import polars as pl

from archive_mcp.ingest import store
from archive_mcp.memory.links import linked_memories
from archive_mcp.schema import empty_refined
from archive_mcp.themes.store import Member, Theme, ThemeStore
from archive_mcp.themes.trace.recent import Recent
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules
from archive_mcp.themes.trace.timeline import COLUMNS, Timeline, build_timeline
from archive_mcp.workspaces import Workspace

PARSED_MB = 64  # the parsed session frames kept for the next trace, at most (estimated size)


class ParsedFiles:
    """Refined session files parsed into the timeline's columns, kept by a digest of their bytes.

    A trace reads each member session's file whole (a refine replacing it meanwhile cannot mix
    versions), and parsing those bytes is most of the read. The same bytes parse to the same rows,
    so the frame is kept under their digest: a new ingest, a refine or a merge writes new bytes
    (a miss), a purge removes the file (nothing read). Nothing is invalidated by hand and no
    stale frame can be returned. Least recently used frames go beyond `most_mb`."""

    def __init__(self, most_mb: float = PARSED_MB) -> None:
        self.frames: Recent[bytes, pl.DataFrame] = Recent(
            int(most_mb * 2**20), lambda f: int(f.estimated_size())
        )

    def read(self, ws: Workspace, session_id: str) -> pl.DataFrame:
        """The session's rows (the timeline's columns); empty when it has no refined file."""
        try:
            data = store.refined_path(ws, session_id).read_bytes()
        except FileNotFoundError:  # no exists() first: a purge between the two would fail the read
            return empty_refined().select(COLUMNS)
        key = hashlib.blake2b(data, digest_size=20).digest()
        frame = self.frames.get(key)
        if frame is None:
            frame = self.frames.keep(key, pl.read_parquet(io.BytesIO(data), columns=COLUMNS))
        return frame


PARSED = ParsedFiles()


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


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while a timeline is built. A trace makes tens of
    thousands of short-lived objects (rows, flags, decisions) that reference counting frees when
    it ends; collections started among them find no cycles, and a full one scans every object of
    the process (tens of milliseconds). The collector runs again afterwards as before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def trace_theme(
    theme: str,
    targets: list[Workspace],
    granularity: str = "auto",
    include_turn_content: bool = False,
    rules: TraceRules = TRACE_RULES,
) -> Timeline:
    """The theme as a timeline over `targets` (the theme is read from each), by `rules`."""
    with collector_paused():
        return _trace(theme, targets, granularity, include_turn_content, rules)


def _trace(
    theme: str,
    targets: list[Workspace],
    granularity: str,
    include_turn_content: bool,
    rules: TraceRules,
) -> Timeline:
    merged = merged_theme(theme, targets)
    linked = linked_memories(targets, merged.name, merged.slug, merged.members)
    # Each file read whole (`ParsedFiles`): a refine replacing one meanwhile cannot mix versions.
    # Only the columns the timeline reads are parsed (not the thinking, tool calls, usage …).
    parts = [
        df
        for ws in targets
        for sid in {m.session_id for m in merged.members}
        if (df := PARSED.read(ws, sid)).height
    ]
    frame = (
        pl.concat(parts, how="vertical_relaxed").lazy()
        if parts
        else empty_refined().select(COLUMNS).lazy()
    )
    return build_timeline(
        merged,
        ",".join(w.id for w in targets),
        frame,
        granularity,
        linked,
        include_turn_content,
        [p for ws in targets for p in ws.paths],
        rules,
    )
