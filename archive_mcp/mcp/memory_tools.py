"""MCP tools, resources and the decision-check prompt for workspace memory and the essence."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import CallToolResult, ListRootsResult
from pydantic import Field

from archive_mcp.archive import Archive
from archive_mcp.mcp.toolkit import DELETE, READ, WRITE, Budget, WorkspaceParam, guard, tool_result
from archive_mcp.memory.essence import (
    Bootstrap,
    ImportReport,
    MemoryStats,
    OrganizePrepare,
    OrganizeStored,
)
from archive_mcp.memory.store import MemoryEntry, MemoryError, MemoryHit
from archive_mcp.workspaces import Workspace, WorkspaceError

Folder = Literal["decisions", "rules", "knowledge", "lessons", "reference"]


@dataclass
class MemoryList:
    memories: list[MemoryEntry]
    truncated: bool = False


@dataclass
class MemoryHits:
    hits: list[MemoryHit]


@dataclass
class Removed:
    removed: str
    trash_path: str
    title: str


@dataclass
class Organized:
    stage: str
    prepare: OrganizePrepare | None = None
    stored: OrganizeStored | None = None


@dataclass
class Exported:
    path: str
    memories: int


def _entry_text(e: MemoryEntry) -> str:
    head = f"# {e.title} ({e.ref}, v{e.versions}, updated {e.updated[:19]})"
    meta = []
    if e.tags:
        meta.append(f"tags: {', '.join(e.tags)}")
    if e.sources:
        meta.append(f"sources: {', '.join(e.sources)}")
    if e.supersedes:
        meta.append(f"supersedes: {', '.join(e.supersedes)}")
    return "\n".join([head, *meta, "", e.content, *[f"warning: {w}" for w in e.warnings]])


def register_memory(server: MCPServer, archive: Archive,
                    resolve: Callable[[str | None, ListRootsResult | None], Workspace],
                    roots_request: Callable[..., Any], server_cwd: str) -> None:
    """Add the memory tools, resources and prompt to `server`."""
    Roots = Annotated[ListRootsResult | None, Resolve(roots_request)]  # noqa: N806

    @server.tool(annotations=WRITE)
    def remember(key: Annotated[str, Field(description="A slug: letters, digits, '.', '_', '-'.")],
                 content: Annotated[str, Field(description="Markdown; at most 256 KB.")],
                 folder: Folder = "knowledge", tags: list[str] | None = None,
                 sources: Annotated[list[str] | None, Field(description="Turn references (session:turn) or theme names.")] = None,
                 title: str | None = None,
                 supersedes: Annotated[list[str] | None, Field(description="memory/<folder>/<key> this replaces.")] = None,
                 workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, MemoryEntry]:
        """Record a decision, rule, fact, lesson or reference; an update keeps the previous version."""
        ws = resolve(workspace, roots)
        e = guard(lambda: archive.memory(ws).remember(key, content, folder, tags, sources, title, supersedes))
        return tool_result(e, f"stored {e.ref} (version {e.versions})" + "".join(f"\nwarning: {w}" for w in e.warnings))

    @server.tool(annotations=READ)
    def recall(key: str, folder: Folder | None = None, workspace: WorkspaceParam = None,
               roots: Roots = None) -> Annotated[CallToolResult, MemoryEntry]:
        """Read one memory by key (and folder when the key exists in several)."""
        ws = resolve(workspace, roots)
        e = guard(lambda: archive.memory(ws).recall(key, folder))
        return tool_result(e, _entry_text(e))

    @server.tool(annotations=READ)
    def search_memory(query: str, folder: Folder | None = None, limit: Annotated[int, Field(ge=1, le=50)] = 10,
                      workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, MemoryHits]:
        """Search memories (lexical + typo-tolerant, Chinese works); check before deciding."""
        ws = resolve(workspace, roots)
        hits = guard(lambda: archive.memory(ws).search(query, folder, limit))
        lines = [f"{len(hits)} memories for {query!r}"] + [f"- memory/{h.folder}/{h.key}: {h.title} — {h.snippet}" for h in hits]
        return tool_result(MemoryHits(hits), "\n".join(lines))

    @server.tool(annotations=READ)
    def recall_recent(limit: Annotated[int, Field(ge=1, le=100)] = 10, workspace: WorkspaceParam = None,
                      roots: Roots = None) -> Annotated[CallToolResult, MemoryList]:
        """The most recently updated memories."""
        ws = resolve(workspace, roots)
        items = guard(lambda: archive.memory(ws).recall_recent(limit))
        return tool_result(MemoryList(items), "\n".join(f"- {e.ref} ({e.updated[:19]}): {e.title}" for e in items) or "no memories yet")

    @server.tool(annotations=READ)
    def list_memories(folder: Folder | None = None, workspace: WorkspaceParam = None,
                      max_output_chars: Budget = 6000, roots: Roots = None) -> Annotated[CallToolResult, MemoryList]:
        """Every memory (or one folder's), with titles and tags; contents via recall."""
        ws = resolve(workspace, roots)
        items = guard(lambda: archive.memory(ws).list(folder))
        shown = [MemoryEntry(e.folder, e.key, e.title, "", e.tags, e.sources, e.supersedes, e.created,
                             e.updated, e.versions) for e in items]
        text = "\n".join(f"- {e.ref}: {e.title}" + (f" [{', '.join(e.tags)}]" if e.tags else "") for e in shown)
        return tool_result(MemoryList(shown), text or "no memories yet", max_output_chars)

    @server.tool(annotations=DELETE)
    def forget(key: Annotated[str, Field(description="The exact key.")], folder: Folder,
               workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, Removed]:
        """Move exactly one memory to the recoverable trash; an unknown key is an error."""
        ws = resolve(workspace, roots)
        r = guard(lambda: archive.memory(ws).forget(key, folder))
        return tool_result(Removed(r.removed, r.trash_path, r.title), f"removed {r.removed} ({r.title}); recoverable at {r.trash_path}")

    @server.tool(annotations=WRITE)
    def save_lesson(situation: str, mistake: str, correction: str, key: str | None = None,
                    workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, MemoryEntry]:
        """Record a correction that must not be repeated (memory/lessons/)."""
        ws = resolve(workspace, roots)
        e = guard(lambda: archive.save_lesson(situation, mistake, correction, ws, key))
        return tool_result(e, f"stored lesson {e.ref}")

    @server.tool(annotations=WRITE)
    def organize_memories(content: Annotated[str | None, Field(description="Omit to get the materials; give the new essence to store it.")] = None,
                          sources: list[str] | None = None, workspace: WorkspaceParam = None,
                          max_output_chars: Budget = 30_000, roots: Roots = None) -> Annotated[CallToolResult, Organized]:
        """Two stages: without content, the current essence + materials + rules; with content, store essence.md."""
        ws = resolve(workspace, roots)
        result = guard(lambda: archive.organize_memories(content, sources, ws))
        if isinstance(result, OrganizePrepare):
            text = "\n".join([result.rules, "", "## Current essence", result.existing_essence or "(none)", "",
                              "## Materials"] + [f"### {m['ref']} (cited {m['cited']}, {m['updated'][:10]})\n{m['content']}"
                                                 for m in result.materials])
            return tool_result(Organized("prepare", prepare=result), text, max_output_chars)
        text = f"stored {result.path} ({result.bytes:,} bytes)"
        text += "".join(f"\nwarning: {w}" for w in result.warnings)
        if result.missing_sources:
            text += "\nmissing sources: " + ", ".join(result.missing_sources)
        return tool_result(Organized("store", stored=result), text)

    @server.tool(annotations=WRITE)
    def bootstrap_workspace(workspace: WorkspaceParam = None, max_output_chars: Budget = 12_000,
                            roots: Roots = None) -> Annotated[CallToolResult, Bootstrap]:
        """Everything a new session should read first: essence, memory tree ([new] since last time), recent turns, notes, themes."""
        ws = resolve(workspace, roots)
        b = guard(lambda: archive.bootstrap_workspace(ws, budget=max_output_chars))
        parts = [f"# {b.workspace_name} ({b.workspace_id})", "## Essence", b.essence or "(no essence yet: organize_memories)",
                 f"## Memory ({b.new_since_last_bootstrap} new)"]
        parts += [f"{f}/\n" + "\n".join(f"  {line}" for line in lines) for f, lines in b.memory_index.items()]
        parts += ["## Recent turns"] + [f"- {r['session_id']}:{r['turn']} {(r['at'] or '')[:16]} {r['summary']}" for r in b.recent_context]
        parts += ["## Themes", ", ".join(b.themes) or "(none)", "## Notes", ", ".join(b.notes) or "(none)"]
        return tool_result(b, "\n".join(parts), max_output_chars)

    @server.tool(annotations=WRITE)
    def sync_workspace_index(remarks: Annotated[dict[str, str] | None, Field(description="folder -> remark")] = None,
                             workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, dict[str, Any]]:
        """Rebuild index.json from the memory files and set folder remarks."""
        ws = resolve(workspace, roots)
        index = guard(lambda: archive.sync_workspace_index(remarks, ws))
        counts = {f: len(v["entries"]) for f, v in index["folders"].items()}
        return tool_result(index, f"index rebuilt: {counts}; folders needing a remark: {index['folders_needing_remark']}")

    @server.tool(annotations=READ)
    def memory_stats(workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, MemoryStats]:
        """Counts per memory folder, archive size, oldest/newest turn, themes."""
        ws = resolve(workspace, roots)
        st = guard(lambda: archive.memory_stats(ws))
        return tool_result(st, f"memories {st.per_folder}; {st.turns} turns ({st.oldest_turn} .. {st.newest_turn}); "
                        f"{st.themes} themes; archive {st.archive_bytes:,} bytes; essence {st.essence_bytes:,} bytes")

    @server.tool(annotations=WRITE)
    def export_memory(include_turns: bool = False,
                      filename: Annotated[str | None, Field(description="[A-Za-z0-9._-] only; written under the workspace's exports/.")] = None,
                      workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, Exported]:
        """Write the workspace's memories (and essence, optionally turn summaries) to one JSON file."""
        ws = resolve(workspace, roots)
        path = guard(lambda: archive.export_memory(include_turns, filename, ws))
        n = len(archive.memory(ws).list())
        return tool_result(Exported(str(path.relative_to(ws.root)), n), f"exported {n} memories to {path.relative_to(ws.root)}")

    @server.tool(annotations=WRITE)
    def import_memory(path: Annotated[str, Field(description="The name of a file in this workspace's exports/ (written by export_memory).")],
                      workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, ImportReport]:
        """Read an export into this workspace without duplicating what is already there."""
        ws = resolve(workspace, roots)
        r = guard(lambda: archive.import_memory(path, ws))
        return tool_result(r, f"added {len(r.added)}, updated {len(r.updated)}, unchanged {len(r.unchanged)}, skipped {len(r.skipped)}")

    def _cwd_ws() -> Workspace:
        try:
            return archive.workspace(cwd=server_cwd)
        except WorkspaceError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource("essence://essence", mime_type="text/markdown", description="The workspace's essence.md")
    def essence_resource() -> str:
        path = _cwd_ws().root / "essence" / "essence.md"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    @server.resource("memory://{folder}/{key}", mime_type="text/markdown", description="One memory file")
    def memory_resource(folder: str, key: str) -> str:
        try:
            return _entry_text(archive.memory(_cwd_ws()).recall(key, folder))
        except MemoryError as exc:
            raise ResourceError(str(exc)) from exc

    @server.prompt("memory-decision-check", description="Before a decision: search memory and past turns, cite or ask.")
    def memory_decision_check(decision: str) -> str:
        return (f"You are about to decide: {decision}\n\n"
                "1. search_memory with the key terms of this decision (decisions and rules first).\n"
                "2. search_context for past turns about it; load_turn_context for the best two or three.\n"
                "3. If an earlier decision or rule covers it, follow it and cite it "
                "(memory/<folder>/<key> or session:turn). If your decision contradicts it, say so "
                "explicitly and ask the user before proceeding.\n"
                "4. If nothing covers it, decide, then remember(folder='decisions') with the reasons and "
                "the turns as sources.")
