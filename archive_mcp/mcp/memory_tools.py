"""MCP tools for workspace memory and the essence: remember, recall, search_memory, … ."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from archive_mcp.mcp.toolkit import (
    DEFAULT_BUDGET,
    DELETE,
    READ,
    TEXT,
    WRITE,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    fit,
    fit_one,
    state,
    workspace_of,
)
from archive_mcp.memory.essence import (
    Bootstrap,
    ImportReport,
    MemoryStats,
    OrganizePrepare,
    OrganizeStored,
)
from archive_mcp.memory.store import MAX_CONTENT, ForgetReport, MemoryEntry, MemoryHit
from archive_mcp.render import entry_text

Folder = Literal["decisions", "rules", "knowledge", "lessons", "reference"]
FolderParam = Folder
OptFolder = Folder | None
Key = Annotated[str, Field(max_length=120)]
Refs = Annotated[
    list[Annotated[str, Field(max_length=TEXT)]] | None,
    Field(
        max_length=100,
        description="SESSION:TURN, theme names or memory/<folder>/<key> it rests on.",
    ),
]


@dataclass
class MemoryList:
    memories: list[MemoryEntry]
    truncated: bool = False


@dataclass
class MemoryHits:
    hits: list[MemoryHit]
    truncated: bool = False


@dataclass
class Organized:
    stage: str
    prepare: OrganizePrepare | None = None
    stored: OrganizeStored | None = None


@dataclass
class Exported:
    path: str
    memories: int


def remember(
    ctx: Context,
    key: Annotated[str, Field(max_length=120, description="Letters, digits, '.', '_', '-'.")],
    content: Annotated[str, Field(max_length=MAX_CONTENT, description="Markdown.")],
    folder: FolderParam = "knowledge",
    tags: Annotated[
        list[Annotated[str, Field(max_length=100)]] | None,
        Field(max_length=50),
    ] = None,
    sources: Refs = None,
    title: Annotated[
        str | None, Field(max_length=200, description="Default: the first line.")
    ] = None,
    supersedes: Annotated[
        list[Annotated[str, Field(max_length=TEXT)]] | None,
        Field(max_length=50, description="memory/<folder>/<key> it replaces."),
    ] = None,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryEntry]:
    """Record a decision, rule, fact or reference for later sessions (an update keeps the old version).
    Use save_lesson for a mistake not to repeat."""
    archive, ws = state(ctx).archive, workspace_of(ctx, workspace, roots)
    e = archive.memory(ws).remember(
        key, content, folder, tags, archive.canonical_sources(ws, sources), title, supersedes
    )
    return fit_one(
        e, f"stored {e.ref} (version {e.versions})" + "".join(f"\nwarning: {w}" for w in e.warnings)
    )


def recall(
    ctx: Context,
    key: Key,
    folder: OptFolder = None,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = DEFAULT_BUDGET,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryEntry]:
    """Read one memory in full by key. Use search_memory or list_memories to find keys."""
    e = state(ctx).archive.memory(workspace_of(ctx, workspace, roots)).recall(key, folder)
    return fit_one(e, entry_text(e), max_output_chars)


def search_memory(
    ctx: Context,
    query: Annotated[str, Field(max_length=TEXT)],
    folder: OptFolder = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryHits]:
    """Search the memories: what was decided, ruled or learned. Check it before deciding;
    search_context searches the sessions."""
    hits: list[MemoryHit] = (
        state(ctx).archive.memory(workspace_of(ctx, workspace, roots)).search(query, folder, limit)
    )
    return fit(
        hits,
        lambda kept, cut: "\n".join(
            [f"{len(kept)} memories for {query[:80]!r}"]
            + [f"- memory/{h.folder}/{h.key}: {h.title} — {h.snippet}" for h in kept]
        ),
        lambda kept, cut: MemoryHits(kept, cut),
        max_output_chars,
        noun="memories",
    )


def recall_recent(
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryList]:
    """The most recently updated memories with their content. Use it to catch up on what changed."""
    items: list[MemoryEntry] = (
        state(ctx).archive.memory(workspace_of(ctx, workspace, roots)).recall_recent(limit)
    )
    return fit(
        items,
        lambda kept, cut: (
            "\n".join(f"- {e.ref} ({e.updated[:19]}): {e.title}" for e in kept) or "no memories yet"
        ),
        lambda kept, cut: MemoryList(kept, cut),
        max_output_chars,
        noun="memories",
    )


def list_memories(
    ctx: Context,
    folder: OptFolder = None,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryList]:
    """Every memory's ref, title and tags, without contents. Use it to browse; recall reads one."""
    items = state(ctx).archive.memory(workspace_of(ctx, workspace, roots)).list(folder)
    shown = [
        MemoryEntry(
            e.folder,
            e.key,
            e.title,
            "",
            e.tags,
            e.sources,
            e.supersedes,
            e.created,
            e.updated,
            e.versions,
        )
        for e in items
    ]
    return fit(
        shown,
        lambda kept, cut: (
            "\n".join(
                f"- {e.ref}: {e.title}" + (f" [{', '.join(e.tags)}]" if e.tags else "")
                for e in kept
            )
            or "no memories yet"
        ),
        lambda kept, cut: MemoryList(kept, cut),
        max_output_chars,
        noun="memories",
        how="raise max_output_chars or give a folder",
    )


def forget(
    ctx: Context,
    key: Key,
    folder: FolderParam,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, ForgetReport]:
    """Move one memory to the recoverable trash. Use it for a memory that is wrong or obsolete."""
    r = state(ctx).archive.memory(workspace_of(ctx, workspace, roots)).forget(key, folder)
    return fit_one(r, f"removed {r.removed} ({r.title}); recoverable at {r.trash_path}")


def save_lesson(
    ctx: Context,
    situation: Annotated[str, Field(max_length=TEXT, description="When this applies.")],
    mistake: Annotated[str, Field(max_length=MAX_CONTENT // 4)],
    correction: Annotated[str, Field(max_length=MAX_CONTENT // 4)],
    key: Annotated[str | None, Field(max_length=120)] = None,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, MemoryEntry]:
    """Record a mistake and its correction (memory/lessons/). Use it when the user corrects you."""
    e = state(ctx).archive.save_lesson(
        situation, mistake, correction, workspace=workspace_of(ctx, workspace, roots), key=key
    )
    return fit_one(e, f"stored lesson {e.ref}")


def organize_memories(
    ctx: Context,
    content: Annotated[
        str | None,
        Field(
            max_length=MAX_CONTENT,
            description="Omit for the materials; give the new essence to store it.",
        ),
    ] = None,
    sources: Refs = None,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 30_000,
    roots: Roots = None,
) -> Annotated[CallToolResult, Organized]:
    """Rewrite the workspace's essence: call without content for the materials, then with it. Use it
    when memories have piled up."""
    r = state(ctx).archive.organize_memories(content, sources, workspace_of(ctx, workspace, roots))
    if isinstance(r, OrganizePrepare):
        head = "\n".join(
            [r.rules, "", "## Current essence", r.existing_essence or "(none)", "", "## Materials"]
        )
        return fit(
            r.materials,
            lambda kept, cut: "\n".join(
                [head]
                + [
                    f"### {m['ref']} (cited {m['cited']}, {m['updated'][:10]})\n{m['content']}"
                    for m in kept
                ]
            ),
            lambda kept, cut: Organized("prepare", prepare=_prepared(r, kept)),
            max_output_chars,
            noun="materials",
        )
    text = f"stored {r.path} ({r.bytes:,} bytes)" + "".join(f"\nwarning: {w}" for w in r.warnings)
    if r.missing_sources:
        text += "\nmissing sources: " + ", ".join(r.missing_sources)
    return fit_one(Organized("store", stored=r), text, max_output_chars)


def _prepared(r: OrganizePrepare, kept: list[dict[str, Any]]) -> OrganizePrepare:
    return OrganizePrepare(
        r.stage,
        r.existing_essence,
        kept,
        r.rules,
        r.output_path,
        r.max_recommended_bytes,
        r.omitted + len(r.materials) - len(kept),
    )


def bootstrap_workspace(
    ctx: Context,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 12_000,
    roots: Roots = None,
) -> Annotated[CallToolResult, Bootstrap]:
    """What a new session reads first: essence, memory tree, recent turns, themes. Call it once at the
    start of a session."""
    b = state(ctx).archive.bootstrap_workspace(
        workspace_of(ctx, workspace, roots), budget=max_output_chars // 2
    )
    parts = [
        f"# {b.workspace_name} ({b.workspace_id})",
        "## Essence",
        b.essence or "(no essence yet: organize_memories)",
    ]
    if b.missing_sources:
        parts.append(
            "The essence cites memories that are gone: "
            + ", ".join(b.missing_sources)
            + " — rewrite it with organize_memories."
        )
    parts.append(f"## Memory ({b.new_since_last_bootstrap} new)")
    parts += [
        f"{f}/\n" + "\n".join(f"  {line}" for line in lines) for f, lines in b.memory_index.items()
    ]
    parts += ["## Recent turns"] + [
        f"- {r['session_id']}:{r['turn']} {(r['at'] or '')[:16]} {r['summary']}"
        for r in b.recent_context
    ]
    parts += [
        "## Themes",
        ", ".join(b.themes) or "(none)",
        "## Notes",
        ", ".join(b.notes) or "(none)",
    ]
    return fit_one(b, "\n".join(parts), max_output_chars)


def sync_workspace_index(
    ctx: Context,
    remarks: Annotated[
        dict[Folder, Annotated[str, Field(max_length=TEXT)]] | None,
        Field(description='A remark per folder, e.g. {"rules": "house rules"}.'),
    ] = None,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, dict[str, Any]]:
    """Rebuild the memory index from the files. Use it after editing memory files by hand."""
    index = state(ctx).archive.sync_workspace_index(
        {str(k): v for k, v in (remarks or {}).items()}, workspace_of(ctx, workspace, roots)
    )
    counts = {f: len(v["entries"]) for f, v in index["folders"].items()}
    return fit_one(
        index,
        f"index rebuilt: {counts}; folders needing a remark: {index['folders_needing_remark']}",
    )


def memory_stats(
    ctx: Context, workspace: WorkspaceParam = None, roots: Roots = None
) -> Annotated[CallToolResult, MemoryStats]:
    """Counts per memory folder, archive size, turn span, themes."""
    st = state(ctx).archive.memory_stats(workspace_of(ctx, workspace, roots))
    return fit_one(
        st,
        f"memories {st.per_folder}; {st.turns} turns ({st.oldest_turn} .. {st.newest_turn}); "
        f"{st.themes} themes; archive {st.archive_bytes:,} bytes; essence {st.essence_bytes:,} bytes",
    )


def export_memory(
    ctx: Context,
    include_turns: Annotated[bool, Field(description="Add every turn's summary.")] = False,
    filename: Annotated[
        str | None, Field(max_length=100, description="[A-Za-z0-9._-] only.")
    ] = None,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, Exported]:
    """Write the memories and essence to one JSON file. Use it to move them with import_memory."""
    archive, ws = state(ctx).archive, workspace_of(ctx, workspace, roots)
    rel = str(archive.export_memory(include_turns, filename, ws).relative_to(ws.root))
    n = len(archive.memory(ws).list())
    return fit_one(Exported(rel, n), f"exported {n} memories to {rel}")


def import_memory(
    ctx: Context,
    path: Annotated[
        str,
        Field(
            max_length=TEXT,
            description="The path export_memory returned, or a name in exports/.",
        ),
    ],
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, ImportReport]:
    """Read an export_memory file into this workspace, skipping what is already there."""
    r = state(ctx).archive.import_memory(path, workspace_of(ctx, workspace, roots))
    return fit_one(
        r,
        f"added {len(r.added)}, updated {len(r.updated)}, unchanged {len(r.unchanged)}, skipped {len(r.skipped)}",
    )


TOOLS = [
    Spec(remember, "Remember", WRITE),
    Spec(recall, "Recall a memory", READ),
    Spec(search_memory, "Search memories", READ),
    Spec(recall_recent, "Recent memories", READ),
    Spec(list_memories, "List memories", READ),
    Spec(forget, "Forget a memory", DELETE),
    Spec(save_lesson, "Save a lesson", WRITE),
    Spec(organize_memories, "Rewrite the essence", WRITE),
    Spec(bootstrap_workspace, "Start a session", WRITE),
    Spec(sync_workspace_index, "Rebuild the memory index", WRITE),
    Spec(memory_stats, "Memory statistics", READ),
    Spec(export_memory, "Export memories", WRITE),
    Spec(import_memory, "Import memories", WRITE),
]
