"""The workspace's working constitution and the calls around it: organize_memories (two
stages), bootstrap_workspace, sync_workspace_index, memory_stats, export and import."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import polars as pl

from archive_mcp.frames import tree_size
from archive_mcp.memory.store import (
    FOLDERS,
    MAX_CONTENT,
    MemoryEntry,
    MemoryStore,
    MemoryStoreError,
    check_fields,
    check_folder,
    check_key,
    slugify,
)
from archive_mcp.workspaces import (
    Workspace,
    atomic_write_json,
    atomic_write_text,
    locked,
    read_json,
)
from archive_mcp.workspaces.clock import file_stamp, now

ESSENCE_SOFT_LIMIT = 15 * 1024
MAX_EXPORT = 64 << 20
MAX_SKIPPED = 50
SOURCE_LINE = re.compile(r"^>\s*source:\s*(memory/([a-z]+)/([A-Za-z0-9._-]+))\s*$", re.M)
EXPORT_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
ESSENCE_RULES = """Write essence.md, the working constitution a new session reads first:
1. Keep it under 15 KB: only what changes how the next session acts (decisions in force, rules,
   hard-won lessons, where things are). Drop what is superseded.
2. One section per topic; newest decision wins; say what it replaced.
3. After each point cite its source on its own line: `> source: memory/<folder>/<key>`.
4. No secrets, no transcripts: link to memories and turns instead of copying them.
Then call organize_memories again with `content` (and `sources`) to store it."""


@dataclass
class OrganizePrepare:
    stage: str
    existing_essence: str
    materials: list[dict[str, Any]]
    rules: str
    output_path: str = "essence/essence.md"
    max_recommended_bytes: int = ESSENCE_SOFT_LIMIT
    omitted: int = 0


@dataclass
class OrganizeStored:
    stage: str
    path: str
    bytes: int
    previous_kept: str | None
    warnings: list[str]
    missing_sources: list[str]
    cited_sources: list[str]


@dataclass
class Bootstrap:
    workspace_id: str
    workspace_name: str
    essence: str
    memory_index: dict[str, list[str]]
    new_since_last_bootstrap: int
    recent_context: list[dict[str, Any]]
    notes: list[str]
    themes: list[str]
    truncated: bool = False
    missing_sources: list[str] = field(
        default_factory=list
    )  # memories the essence cites that are gone


@dataclass
class MemoryStats:
    per_folder: dict[str, int]
    archive_bytes: int
    turns: int
    oldest_turn: str | None
    newest_turn: str | None
    themes: int
    essence_bytes: int


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _citations(ws: Workspace, store: MemoryStore, entries: list[MemoryEntry]) -> dict[str, int]:
    essence = ws.root / "essence" / "essence.md"
    text = essence.read_text(encoding="utf-8", errors="replace") if essence.exists() else ""
    counts: dict[str, int] = {}
    for m in SOURCE_LINE.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    for e in entries:
        for ref in [*e.sources, *e.supersedes]:
            counts[ref] = counts.get(ref, 0) + 1
    return counts


def organize_memories(
    ws: Workspace,
    content: str | None = None,
    sources: list[str] | None = None,
    budget: int = 60_000,
) -> OrganizePrepare | OrganizeStored:
    """Without content: essence, materials and rules. With content: store the new essence."""
    store = MemoryStore(ws)
    essence_path = ws.root / "essence" / "essence.md"
    if content is None:
        entries = store.list()
        cites = _citations(ws, store, entries)
        entries.sort(key=lambda e: (e.updated, cites.get(e.ref, 0)), reverse=True)
        materials, used, omitted = [], 0, 0
        for e in entries:
            item = {
                "ref": e.ref,
                "folder": e.folder,
                "key": e.key,
                "title": e.title,
                "tags": e.tags,
                "updated": e.updated,
                "cited": cites.get(e.ref, 0),
                "content": e.content,
            }
            size = len(json.dumps(item, ensure_ascii=False))
            if used + size > budget:
                omitted += 1
                continue
            materials.append(item)
            used += size
        existing = (
            essence_path.read_text(encoding="utf-8", errors="replace")
            if essence_path.exists()
            else ""
        )
        return OrganizePrepare("prepare", existing, materials, ESSENCE_RULES, omitted=omitted)
    if not content.strip():
        raise MemoryStoreError(
            "content is empty: call organize_memories without content to get the materials"
        )
    warnings: list[str] = []
    data = content.encode("utf-8", errors="replace")
    if len(data) > ESSENCE_SOFT_LIMIT:
        warnings.append(
            f"essence is {len(data):,} bytes, above the recommended {ESSENCE_SOFT_LIMIT:,}: "
            "consider dropping superseded points"
        )
    cited = list(
        dict.fromkeys([m.group(1) for m in SOURCE_LINE.finditer(content)] + list(sources or []))
    )
    missing = []
    for ref in cited:
        parts = ref.split("/")
        ok = len(parts) == 3 and parts[0] == "memory" and parts[1] in FOLDERS
        if ok:
            try:
                ok = (store.root / parts[1] / f"{check_key(parts[2])}.md").exists()
            except MemoryStoreError:
                ok = False
        if not ok:
            missing.append(ref)
    previous = None
    with locked(ws.root):
        if essence_path.exists():
            previous = f"essence/history/essence-{file_stamp()}.md"
            atomic_write_text(
                ws.root / previous, essence_path.read_text(encoding="utf-8", errors="replace")
            )
        atomic_write_text(essence_path, data.decode("utf-8"))
    return OrganizeStored(
        "store", "essence/essence.md", len(data), previous, warnings, missing, cited
    )


def sync_workspace_index(ws: Workspace, remarks: dict[str, str] | None = None) -> dict[str, Any]:
    """Rebuild index.json from the memory files; set folder remarks; keep the bootstrap marker."""
    for folder in remarks or {}:
        check_folder(folder)
    store = MemoryStore(ws)
    with locked(ws.root):
        old = read_json(ws.root / "index.json", {}) or {}
        folders: dict[str, Any] = {}
        for f in FOLDERS:
            entries = store.list(f)
            folders[f] = {
                "remark": (remarks or {}).get(
                    f, old.get("folders", {}).get(f, {}).get("remark", "")
                ),
                "entries": [
                    {"key": e.key, "title": e.title, "tags": e.tags, "updated": e.updated}
                    for e in entries
                ],
            }
        index = {
            "version": 1,
            "synced_at": now("microseconds"),
            "folders": folders,
            "last_bootstrap": old.get("last_bootstrap"),
            "seen": old.get("seen", []),
        }
        atomic_write_json(ws.root / "index.json", index)
    index["folders_needing_remark"] = [
        f for f, v in folders.items() if v["entries"] and not v["remark"]
    ]
    return index


def bootstrap_workspace(
    ws: Workspace, recent: list[dict[str, Any]], themes: list[str], budget: int = 12_000
) -> Bootstrap:
    """What a new session needs first: essence, memory tree ([new] marked), recent turns, notes, themes."""
    index = sync_workspace_index(ws)
    seen = set(index.get("seen", []))
    tree: dict[str, list[str]] = {}
    new = 0
    all_refs = []
    for f, v in index["folders"].items():
        lines = []
        for e in v["entries"]:
            ref = f"memory/{f}/{e['key']}"
            all_refs.append(f"{ref}@{e['updated']}")
            fresh = f"{ref}@{e['updated']}" not in seen
            new += fresh
            lines.append(f"{'[new] ' if fresh else ''}{e['key']}: {e['title']}")
        if lines:
            tree[f] = lines
    essence_path = ws.root / "essence" / "essence.md"
    essence = (
        essence_path.read_text(encoding="utf-8", errors="replace") if essence_path.exists() else ""
    )
    notes_dir = ws.root / "notes"
    notes = sorted(p.name for p in notes_dir.glob("*") if p.is_file()) if notes_dir.is_dir() else []
    present = {f"memory/{f}/{e['key']}" for f, v in index["folders"].items() for e in v["entries"]}
    gone = [m.group(1) for m in SOURCE_LINE.finditer(essence) if m.group(1) not in present]
    result = Bootstrap(
        ws.id,
        ws.name,
        essence,
        tree,
        new,
        recent,
        notes,
        themes,
        missing_sources=list(dict.fromkeys(gone)),
    )
    # fit the budget: recent context first, then the essence's tail
    while len(json.dumps(asdict(result), ensure_ascii=False)) > budget and result.recent_context:
        result.recent_context.pop(0)
        result.truncated = True
    if len(json.dumps(asdict(result), ensure_ascii=False)) > budget:
        keep = max(
            500,
            budget - len(json.dumps({**asdict(result), "essence": ""}, ensure_ascii=False)) - 100,
        )
        result.essence = (
            result.essence[:keep] + "\n[… essence cut to fit the budget; read essence://essence]"
        )
        result.truncated = True
    with locked(ws.root):
        current = read_json(ws.root / "index.json", {}) or {}
        current["last_bootstrap"] = now("microseconds")
        current["seen"] = all_refs
        atomic_write_json(ws.root / "index.json", current)
    return result


def export_memory(
    ws: Workspace,
    include_turns: bool = False,
    filename: str | None = None,
    turns: list[dict[str, Any]] | None = None,
) -> Path:
    name = filename or f"memory-{file_stamp('%Y%m%dT%H%M%SZ')}.json"
    if not EXPORT_NAME.match(name) or name.startswith((".", "-")):
        raise MemoryStoreError(
            f"invalid export filename {name!r}: use letters, digits, '.', '_' and '-' only, not first '.' or '-'"
        )
    store = MemoryStore(ws)
    essence_path = ws.root / "essence" / "essence.md"
    payload = {
        "format": "archive-mcp-memory@1",
        "workspace": {"id": ws.id, "name": ws.name, "paths": ws.paths},
        "exported_at": now("microseconds"),
        "memories": [e.to_json() for e in store.list()],
        "essence": essence_path.read_text(encoding="utf-8", errors="replace")
        if essence_path.exists()
        else None,
    }
    if include_turns:
        payload["turns"] = turns or []
    path = ws.root / "exports" / name
    atomic_write_text(path, json.dumps(payload, ensure_ascii=False, indent=1, default=str))
    return path


def export_file(ws: Workspace, path: str | Path, allow_path: bool = False) -> Path:
    """The export file to read: a name in the workspace's `exports/` or a path inside it; any
    other path only with `allow_path` (the CLI user naming a file explicitly), never from MCP."""
    if "\0" in str(path):
        raise MemoryStoreError("the path holds a NUL byte; no file can be named so: pass the name")
    exports = (ws.root / "exports").resolve()
    given = Path(path)
    candidate = (exports / given) if not given.is_absolute() and len(given.parts) == 1 else given
    resolved = candidate.expanduser().resolve()
    if not allow_path and not resolved.is_relative_to(exports):
        raise MemoryStoreError(
            f"import_memory reads exports from this workspace's exports folder ({exports}); "
            "pass the file's name there (or, from the CLI, `--allow-path` to read another path)"
        )
    return resolved


def read_export(path: Path) -> dict[str, Any]:
    """A whole export: a regular file of at most MAX_EXPORT bytes holding one export object."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise MemoryStoreError(f"cannot read export {path.name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise MemoryStoreError(
                f"{path.name} is not a regular file; pass a file written by an export"
            )
        if st.st_size > MAX_EXPORT:
            raise MemoryStoreError(
                f"{path.name} is {st.st_size:,} bytes; an export holds at most {MAX_EXPORT:,}"
            )
        data = fh.read(MAX_EXPORT + 1)
    try:
        payload = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict) or payload.get("format") != "archive-mcp-memory@1":
        raise MemoryStoreError(f"{path.name} is not an archive-mcp memory export")
    return payload


def _valid(m: Any) -> tuple[str, dict[str, Any]] | tuple[str, str]:
    """(ref, memory) for an importable entry, else (what it was, why it is skipped)."""
    label = (
        str(m.get("ref") or f"{m.get('folder')}/{m.get('key')}")[:120]
        if isinstance(m, dict)
        else str(m)[:120]
    )
    try:
        if not isinstance(m, dict):
            raise MemoryStoreError("not an object")
        ref = f"memory/{check_folder(cast(str, m.get('folder')))}/{check_key(cast(str, m.get('key')))}"
        content = m.get("content", "")
        if not isinstance(content, str) or not content.strip():
            raise MemoryStoreError("content is missing or not text")
        if len(content.encode("utf-8", errors="replace")) > MAX_CONTENT:
            raise MemoryStoreError(f"content is larger than {MAX_CONTENT:,} bytes")
        title, tags, sources = check_fields(m.get("title"), m.get("tags"), m.get("sources"))
        supersedes = m.get("supersedes") or []
        if not isinstance(supersedes, list) or not all(isinstance(x, str) for x in supersedes):
            raise MemoryStoreError("supersedes must be a list of strings")
    except MemoryStoreError as exc:
        return label, f"{label}: {exc}"
    return ref, {
        "key": m["key"],
        "folder": m["folder"],
        "content": content,
        "title": title,
        "tags": tags,
        "sources": sources,
        "supersedes": supersedes,
    }


def import_memory(
    ws: Workspace, path: str | os.PathLike[str], allow_path: bool = False
) -> ImportReport:
    """Read an export back; memories already present with the same content are left alone.

    The whole file is read and every entry checked before anything is written; entries that
    fail a check are listed in `skipped` (at most MAX_SKIPPED, then a count) and the rest land.
    `path` is a file name in the workspace's `exports/`, or the path export_memory returned
    (`exports/NAME`, relative to the workspace); any other path only with `allow_path`.
    """
    p = Path(path).expanduser()
    if not p.is_absolute() and len(p.parts) > 1:
        p = ws.root / p
    payload = read_export(export_file(ws, p, allow_path))
    memories = payload.get("memories", [])
    if not isinstance(memories, list):
        raise MemoryStoreError(
            "the export's `memories` is not a list; pass a file written by an export"
        )
    store = MemoryStore(ws)
    report = ImportReport()
    good: list[tuple[str, dict[str, Any]]] = []
    bad: list[str] = []
    for m in memories:
        ref, checked = _valid(m)
        if isinstance(checked, str):
            bad.append(checked)
        else:
            good.append((ref, checked))
    report.skipped = bad[:MAX_SKIPPED] + (
        [f"... and {len(bad) - MAX_SKIPPED} more"] if len(bad) > MAX_SKIPPED else []
    )
    for ref, m in good:
        try:
            current = store.recall(m["key"], m["folder"])
        except MemoryStoreError:
            current = None
        if current and _digest(current.content) == _digest(m["content"]):
            report.unchanged.append(ref)
            continue
        store.remember(
            m["key"],
            m["content"],
            m["folder"],
            m["tags"],
            m["sources"],
            m["title"],
            m["supersedes"],
        )
        (report.updated if current else report.added).append(ref)
    return report


def _digest(text: str) -> str:
    return hashlib.sha1(text.strip().encode("utf-8", errors="replace")).hexdigest()


def save_lesson(
    memory: MemoryStore, situation: str, mistake: str, correction: str, key: str | None = None
) -> MemoryEntry:
    """A correction that must not be repeated, stored under memory/lessons/."""
    content = f"## Situation\n{situation}\n\n## Mistake\n{mistake}\n\n## Correction\n{correction}\n"
    return memory.remember(
        key or slugify(situation), content, "lessons", tags=["lesson"], title=situation[:80]
    )


def recent_requests(turns: pl.LazyFrame, recent: int) -> list[dict[str, Any]]:
    """The last `recent` requests of the main agent (no slash command, output or summary), oldest
    first, as `bootstrap_workspace` lists them."""
    rows = (
        turns.filter(pl.col("agent") == "main")
        .filter(pl.col("origin") == "user")
        .sort("started_at", descending=True, nulls_last=True)
        .head(recent)
        .select("session_id", "turn", "started_at", "summary")
        .collect()
        .to_dicts()
    )
    return [
        {
            "session_id": r["session_id"],
            "turn": r["turn"],
            "at": r["started_at"].isoformat() if r["started_at"] else None,
            "summary": r["summary"],
        }
        for r in reversed(rows)
    ]


def export_turns(turns: pl.LazyFrame) -> list[dict[str, Any]]:
    """The turns an export with `include_turns` carries."""
    return (
        turns.select("session_id", "agent", "turn", "started_at", "summary", "kinds")
        .collect()
        .to_dicts()
    )


def memory_stats(
    ws: Workspace, turns: int, oldest: str | None, newest: str | None, themes: int
) -> MemoryStats:
    """Memories per folder, the workspace's bytes on disk, its turns and span, themes, essence."""
    counts = {f: len(list((ws.root / "memory" / f).glob("*.md"))) for f in FOLDERS}
    essence = ws.root / "essence" / "essence.md"
    size = tree_size(ws.root)  # a folder an index swap or a purge removes meanwhile: gone
    return MemoryStats(
        counts,
        size,
        turns,
        oldest,
        newest,
        themes,
        essence.stat().st_size if essence.exists() else 0,
    )
