"""How memories link to turns and themes: a memory's turn references written in full, and the
rule by which a theme's trace lists a memory (it cites the theme by name or slug, or one of its
member turns as `session:turn`, or is tagged with the theme's name)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from archive_mcp.memory.store import MemoryStore
from archive_mcp.refs import REF
from archive_mcp.search.context import canonical_ref
from archive_mcp.workspaces import Workspace


class _Turn(Protocol):
    session_id: str
    turn: int


def linked_memories(
    targets: Sequence[Workspace], name: str, slug: str, members: Iterable[_Turn]
) -> list[str]:
    """The references (`folder/key`) of the memories of `targets` linked to the theme `name`
    (file `slug`) whose member turns are `members`."""
    refs = {f"{m.session_id}:{m.turn}" for m in members}
    linked = []
    for ws in targets:
        for e in MemoryStore(ws).list():
            if name in e.sources or slug in e.sources or refs & set(e.sources) or name in e.tags:
                linked.append(e.ref)
    return linked


def canonical_sources(ws: Workspace, sources: Sequence[str] | None) -> list[str] | None:
    """Memory sources with their turn references written in full (`session:turn`), so that a
    memory citing `5dd5f56a:2` links to the theme and trace holding that turn."""
    if sources is None:
        return None
    out = []
    for s in sources:
        if REF.match(s) and not s.startswith("memory/"):
            ref = canonical_ref(ws, s)
            s = f"{ref.session_id}:{ref.turn}" + ("" if ref.agent == "main" else f" [{ref.agent}]")
        out.append(s)
    return out
