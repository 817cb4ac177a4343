"""What every MCP tool shares: the server state, workspace resolution from the client's roots,
the common parameters and annotations, and results held within their budget."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, cast
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context, ListRoots, Resolve
from mcp_types import CallToolResult, ListRootsResult, TextContent, ToolAnnotations
from pydantic import Field

from archive_mcp.archive import Archive
from archive_mcp.live import Follower
from archive_mcp.mcp.offload import Offload
from archive_mcp.refiners.text import clip
from archive_mcp.refs import Citing, short_ids
from archive_mcp.render import more_line, to_jsonable
from archive_mcp.workspaces import Workspace

# Hints at their MCP defaults (read_only false, idempotent false) are left out: tools/list is lean.
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)  # the rest mean nothing then
UPDATE = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(destructive_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(destructive_hint=True, open_world_hint=False)

DEFAULT_BUDGET = 20_000  # tools without a max_output_chars parameter
TEXT = 2_000  # longest free-text argument (queries, names, seeds); memory content has its own cap
T = TypeVar("T")


@dataclass
class State:
    """What the server's lifespan holds: one Archive, and the cwd that is the last fallback workspace."""

    archive: Archive
    cwd: str
    follower: Follower | None = None  # keeps the archive current (`serve --follow`)
    offload: Offload = field(default_factory=Offload)  # heavy calls away from the event loop
    sessions: Sessions = field(default_factory=lambda: Sessions())  # what `citing` reads


@dataclass
class Spec:
    """One row of a tool table: the plain function, its title and its annotations."""

    fn: Callable[..., Any]
    title: str
    annotations: ToolAnnotations


def roots_request(workspace: str | None, ctx: Context) -> ListRoots | None:
    """Ask for the client's roots only when no workspace was given and the client has roots."""
    caps = ctx.client_capabilities
    if workspace or caps is None or caps.roots is None:
        return None
    return ListRoots()


WorkspaceParam = Annotated[
    str | None, Field(max_length=TEXT)
]  # a path, id, unique id prefix or name; default: the client's roots, then the cwd (INSTRUCTIONS)
Roots = Annotated[ListRootsResult | None, Resolve(roots_request)]
Budget = Annotated[int, Field(ge=500, le=200_000)]  # on the text and on the structured content


@dataclass
class Sessions:
    """Every workspace's sessions (id -> the agent that wrote it), read from its ingest state
    again only when that file changed: what `citing` names sessions among."""

    seen: dict[str, tuple[tuple[int, int], dict[str, str]]] = field(default_factory=dict)
    short: tuple[tuple[tuple[str, tuple[int, int]], ...], dict[str, str]] = ((), {})

    def of(self, archive: Archive, ws: Workspace) -> dict[str, str]:
        return self._known(archive, ws)[1]

    def _known(self, archive: Archive, ws: Workspace) -> tuple[tuple[int, int], dict[str, str]]:
        """(the ingest state's stat, the sessions read from it); ((0, 0), {}) without one."""
        try:
            st = (ws.state_dir / "ingest.json").stat()
        except OSError:
            return (0, 0), {}
        key = (st.st_mtime_ns, st.st_size)
        known = self.seen.get(ws.id)
        if known is None or known[0] != key:
            files = archive.raw_files(ws)
            known = (key, {s: str(f[0][1].get("source") or "") for s, f in files.items() if f})
            self.seen[ws.id] = known
        return known

    def short_ids(self, archive: Archive) -> dict[str, str]:
        """Every archived session's shortest unique prefix, computed again only when a
        workspace's ingest state changed (a call costs a stat per workspace, not a sort of every
        session id)."""
        spaces = archive.workspaces()
        # the key from the very states the ids were read from: `seen` may be newer by now (a
        # concurrent call), and a key of it would keep these older ids as current
        known = [(w.id, self._known(archive, w)) for w in spaces]
        key = tuple((wid, stat) for wid, (stat, _) in known)
        short = self.short
        if key != short[0]:
            short = (key, short_ids(s for _, (_, found) in known for s in found))
            self.short = short
        return short[1]


def citing(ctx: Context, spaces: Sequence[Workspace]) -> Citing:
    """How a tool's text names the sessions of `spaces`: each by its shortest prefix unique in
    the whole archive (so it loads back whichever workspace a reader tries first), and by the
    agent that wrote it where the sessions of `spaces` come from more than one."""
    st = state(ctx)
    sources = {s for w in spaces for s in st.sessions.of(st.archive, w).values()}
    return Citing(st.sessions.short_ids(st.archive), len(sources) > 1)


def state(ctx: Context) -> State:
    return cast(State, ctx.request_context.lifespan_context)


def root_paths(roots: ListRootsResult | None) -> list[str]:
    return [
        unquote(urlparse(str(r.uri)).path)
        for r in (roots.roots if roots else [])
        if urlparse(str(r.uri)).scheme == "file"
    ]


def workspace_of(
    ctx: Context, workspace: str | None, roots: ListRootsResult | None = None
) -> Workspace:
    """The explicit workspace, else the client's roots, else the server's cwd."""
    st = state(ctx)
    if workspace:
        return st.archive.workspace(workspace)
    return st.archive.workspace(cwd=st.cwd, roots=root_paths(roots))


def json_len(data: Any) -> int:
    return len(json.dumps(data, ensure_ascii=False))


def shrink(data: Any, cap: int | None, list_cap: int | None, whole: int = 0) -> tuple[Any, bool]:
    """`data` with every string clipped to `cap` and every list to `list_cap` items; whether anything
    was cut. Lists in the first `whole` levels stay whole: `fit` passes 2 so that the reply's list of
    items (the hits, the sessions: the top level or one of its fields) is never clipped here; it
    drops items from the end instead, from the text and the structured content alike."""
    if isinstance(data, str):
        out = data if cap is None else clip(data, cap)
        return out, out != data
    if isinstance(data, dict):
        pairs = {k: shrink(v, cap, list_cap, whole - 1) for k, v in data.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    if isinstance(data, list):
        kept = data if list_cap is None or whole > 0 else data[:list_cap]
        items = [shrink(v, cap, list_cap, whole - 1) for v in kept]
        return [v for v, _ in items], len(kept) < len(data) or any(c for _, c in items)
    return data, False


# Steps from a light to a heavy cut: (longest string, longest nested list).
STEPS: tuple[tuple[int | None, int | None], ...] = (
    (None, None),
    (2_000, None),
    (500, 50),
    (160, 20),
    (60, 5),
)


def fit(
    items: Sequence[T],
    render: Callable[[list[T], bool], str],
    shape: Callable[[list[T], bool], Any],
    budget: int,
    whole: int = 2,
    noun: str = "items",
    how: str = "raise max_output_chars",
    total: int | None = None,
) -> CallToolResult:
    """The result for the longest prefix of `items` whose text and structured content both fit `budget`.

    `render(kept, cut)` is the text, `shape(kept, cut)` the structured content; `cut` says items were
    left out (clipped strings in the structured content set its `truncated` instead). Long strings and
    nested lists in the structured content are clipped first (step by step), then items are
    dropped from the end; the text is cut at a word boundary as a last resort. `whole` is passed
    to `shrink`: 2 keeps the list of items whole (`fit_one` passes 0: its object's lists may be clipped).
    Whenever fewer than `total` (default: all the items) are kept, the text ends with `more_line`:
    how many `noun` are not shown and `how` to get them; the structured content says `truncated`."""
    whole_count = len(items) if total is None else total

    def attempt(k: int, step: tuple[int | None, int | None]) -> tuple[str, Any]:
        kept, cut = list(items[:k]), k < len(items)
        data, clipped = shrink(to_jsonable(shape(kept, cut)), *step, whole)
        if (clipped or k < whole_count) and isinstance(data, dict) and "truncated" in data:
            data["truncated"] = True
        text = render(kept, cut)
        if k < whole_count:  # the text says so only when items were left out
            text += ("\n" if text else "") + more_line(k, whole_count, noun, how)
        return text, data

    def fits(text: str, data: Any) -> bool:
        return len(text) <= budget and json_len(data) <= budget

    for step in STEPS:
        text, data = attempt(len(items), step)
        if fits(text, data):
            return result(text, data)
    lo, hi = 0, len(items)
    while lo < hi:  # the longest prefix that fits at the heaviest step
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(*attempt(mid, STEPS[-1])) else (lo, mid - 1)
    text, data = attempt(lo, STEPS[-1])
    return result(cut_text(text, budget, how), data)


MORE_ROOM = 200  # characters an overview keeps for its header and its closing lines


def first_lines(lines: list[str], budget: int) -> list[str]:
    """The first of `lines` that fit `budget` (less MORE_ROOM), then how many are left out."""
    room, used = budget - MORE_ROOM, 0
    for k, line in enumerate(lines):
        used += len(line) + 1
        if used > room:
            return [
                *lines[:k],
                f"  … {len(lines) - k} more turns not shown; raise max_output_chars",
            ]
    return lines


def first_fitting(items: list[T], budget: int) -> list[T]:
    """The first of `items` whose structured content fits `budget` together."""
    used = 0
    for k, m in enumerate(items):
        used += json_len(to_jsonable(m)) + 1
        if used > budget:
            return items[:k]
    return items


def cut_text(text: str, budget: int, how: str = "raise max_output_chars") -> str:
    """`text` within `budget`; when cut, its last line says how much is not shown and `how` to
    get it, as `more_line`."""
    if len(text) <= budget:
        return text
    note = more_line(0, len(text), "characters", how)
    head = clip(text, max(0, budget - len(note) - 1 - len(str(len(text)))))  # room for its digits
    return head + "\n" + more_line(len(head), len(text), "characters", how)


def fit_one(obj: Any, text: str, budget: int = DEFAULT_BUDGET) -> CallToolResult:
    """A single object's result within `budget`: its long strings and lists clipped step by step
    until its JSON fits (`truncated` set), its text cut with the note of `cut_text`."""
    data: Any = None
    for step in STEPS:
        data, clipped = shrink(to_jsonable(obj), *step, 0)
        if clipped and isinstance(data, dict) and "truncated" in data:
            data["truncated"] = True
        if json_len(data) <= budget:
            break
    return result(cut_text(text, budget), data)


def result(text: str, data: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
