"""The archive's core MCP tools: search_context, load_turn_context, list_workspaces,
list_sessions, refine_session_turns. Each parses, calls one `Archive` method and renders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, Resolve
from mcp_types import CallToolResult, CreateMessageResult
from pydantic import Field

from archive_mcp.errors import ArchiveError
from archive_mcp.mcp import overview
from archive_mcp.mcp.sampling import apply_sampled, sampling_request, session_rows
from archive_mcp.mcp.toolkit import (
    READ,
    TEXT,
    UPDATE,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    citing,
    first_fitting,
    first_lines,
    fit,
    json_len,
    state,
    workspace_of,
)
from archive_mcp.refs import Citing, TurnRef
from archive_mcp.render import COMPACT_SUMMARY, hit_groups, more_line, to_jsonable, turn_text
from archive_mcp.search.context import at_most
from archive_mcp.search.engine import FILTER_HELP, Filters, Hit, SearchError
from archive_mcp.search.highlight import clip_marked
from archive_mcp.search.hits import SearchResults
from archive_mcp.search.span import SPAN
from archive_mcp.search.turn_detail import MissingTurn, TurnContext, TurnDetail
from archive_mcp.workspaces import Workspace

Detail = Literal["compact", "normal", "full"]
SEARCH_LIMIT = 6  # a default search's hits: about 2,500 characters at detail=normal
SEARCH_BUDGET = 6000  # holds the structured content of SEARCH_LIMIT hits unclipped
READ_MAX = 6000  # the most one read shows: an agent's context holds many reads, not a few long ones
DetailParam = Annotated[
    Detail,
    Field(
        description="compact: the user's words on a line; normal: + the answer's best passage; "
        "full: + score, summary."
    ),
]


@dataclass
class QueryHits:  # the hits of one of several queries asked in one call (`also`)
    query: str
    hits: list[Hit]


@dataclass
class SearchOutput:
    hits: list[Hit]
    realized_mode: str
    fallback_reason: str | None
    truncated: bool = False
    catching_up: str | None = None  # "archive catching up: N files pending" while following
    groups: list[QueryHits] | None = None  # with `also`: every query's hits (`hits` is empty)


@dataclass
class TurnContextOutput:
    turns: list[TurnDetail]
    not_found: list[MissingTurn]
    truncated: bool = False


@dataclass
class WorkspaceInfo:
    id: str
    name: str
    paths: list[str]
    sessions: int | None = None
    turns: int | None = None


@dataclass
class WorkspacesOutput:
    workspaces: list[WorkspaceInfo]
    truncated: bool = False


@dataclass
class SessionInfo:
    session_id: str
    source: str
    title: str | None
    first_at: str | None
    last_at: str | None
    turns: int
    subagent_turns: int
    live: bool
    prompts: list[overview.Prompt] = field(default_factory=list)  # with `prompts=true`


@dataclass
class SessionsOutput:
    workspace_id: str
    sessions: list[SessionInfo]
    truncated: bool = False


@dataclass
class RefineOutput:
    workspace_id: str
    session_id: str
    refined: int
    sampled: int
    fallback_reason: str | None = None
    summaries: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False


def _queries(query: str, also: tuple[str, ...]) -> list[str]:
    """The query then each `also` entry not asked already (words compared without case or
    extra spaces); an empty `also` entry is an error naming it."""
    for i, q in enumerate(also):
        if not q.strip():
            raise SearchError(f"also[{i}] is empty: drop it or give words")
    seen: set[str] = set()
    out = []
    for q in [query, *also]:
        key = " ".join(q.split()).casefold()
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out


def search_context(
    ctx: Context,
    query: Annotated[
        str,
        Field(
            max_length=TEXT,
            description="Keywords, an identifier or a question.",
        ),
    ],
    workspace: WorkspaceParam = None,
    also: Annotated[
        tuple[Annotated[str, Field(max_length=TEXT)], ...],
        Field(
            max_length=5,
            description="More queries, each with its hits under its heading and its own "
            "max_output_chars.",
        ),
    ] = (),
    limit: Annotated[int, Field(ge=1, le=100)] = SEARCH_LIMIT,
    order: Annotated[
        Literal["rank", "time"],
        Field(
            description="time: oldest first; the earliest and latest strong hits replace the weakest."
        ),
    ] = "rank",
    mode: Annotated[
        Literal["hybrid", "lexical", "fuzzy", "semantic"],
        Field(description="lexical: exact identifiers; semantic: paraphrases; hybrid fuses all."),
    ] = "hybrid",
    session: Annotated[
        str | None, Field(max_length=TEXT, description=FILTER_HELP["session"])
    ] = None,
    agent: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["agent"])] = None,
    since: Annotated[datetime | None, Field(description=FILTER_HELP["since"])] = None,
    until: Annotated[datetime | None, Field(description=FILTER_HELP["until"])] = None,
    tool: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["tool"])] = None,
    file: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["file"])] = None,
    theme: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["theme"])] = None,
    kind: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["kind"])] = None,
    source: Annotated[str | None, Field(max_length=TEXT, description=FILTER_HELP["source"])] = None,
    rerank: Annotated[
        Literal["minilm", "e5"] | None,
        Field(description="Slower second stage: embeds the top hits."),
    ] = None,
    all_workspaces: bool = False,
    detail: DetailParam = "normal",
    max_output_chars: Budget = SEARCH_BUDGET,
    roots: Roots = None,
) -> Annotated[CallToolResult, SearchOutput]:
    """Find past turns by topic: under each session's line (SESSION DATE) a hit is ":TURN HH:MM —
    the user's words" and → the answer's best passage; read it as SESSION:TURN with
    load_turn_context. How X evolved: order=time (several topics: also), then matching."""
    archive = state(ctx).archive
    target: str = (
        "all" if all_workspaces or workspace == "all" else workspace_of(ctx, workspace, roots).id
    )
    spaces = archive._selected(target)
    state(ctx).offload.fresh_indexes(archive, spaces)
    cite = citing(ctx, spaces)
    filters = Filters(
        session=session,
        agent=agent,
        since=since,
        until=until,
        tool=tool,
        file=file,
        theme=theme,
        kind=kind,
        source=source,
    )
    span = SPAN if order == "time" else None  # the story's ends in place of the weakest hits
    founds = [
        archive.search(q, target, filters=filters, limit=limit, mode=mode, rerank=rerank, span=span)
        for q in _queries(query, also)
    ]
    batched = len(founds) > 1  # `also` asked something new: each query under its own heading
    ranked = _rank_by_rank(founds, detail)
    names = {w.id: w.name for w in archive.workspaces()} if target == "all" else {}
    behind = follower.catching_up() if (follower := state(ctx).follower) else None

    shown = by_time if order == "time" else list  # the budget keeps the best; time orders them

    def of(kept: list[tuple[int, Hit]], g: int) -> list[Hit]:
        return shown([h for i, h in kept if i == g])

    def render(kept: list[tuple[int, Hit]], cut: bool) -> str:
        lines = [f"({behind}; these hits are from what is archived so far)"] if behind else []
        shown_refs: set[str] = set()
        for g, found in enumerate(founds):
            group = of(kept, g)
            # one query: the line that ends a cut says how many are shown
            head = found.headline(len(group) if batched else None, quoted=batched)
            lines.append(f"## {head}" if batched else head)
            lines += hit_groups(group, detail, cite, names, shown_refs)
        return "\n".join(lines)

    def shape(kept: list[tuple[int, Hit]], cut: bool) -> SearchOutput:
        first, hits = founds[0], [] if batched else of(kept, 0)
        groups = (
            [QueryHits(f.query, of(kept, g)) for g, f in enumerate(founds)] if batched else None
        )
        return SearchOutput(hits, first.realized_mode, first.fallback_reason, cut, behind, groups)

    return fit(
        ranked,
        render,
        shape,
        max_output_chars * len(founds),  # each query its own budget
        whole=4 if batched else 2,  # each group's hits dropped from the end, as the text's are
        noun="hits",
        how="raise max_output_chars or use detail=compact",
    )


def load_turn_context(
    ctx: Context,
    references: Annotated[
        list[TurnRef | Annotated[str, Field(max_length=TEXT)]],
        Field(
            min_length=1,
            max_length=20,
            description='"SESSION:TURN" as the tools print them (a subagent\'s with its " [agent]"), '
            '"SESSION:11-31" for a range, or {session_id, turn, agent?}.',
        ),
    ],
    workspace: WorkspaceParam = None,
    before: Annotated[
        int, Field(ge=0, le=10, description="Neighbour turns to add before each.")
    ] = 0,
    after: Annotated[int, Field(ge=0, le=10)] = 0,
    include_tools: bool = True,
    include_thinking: Annotated[
        bool, Field(description="With matching, its passages holding the words come anyway.")
    ] = False,
    max_chars: Annotated[int, Field(ge=1000, le=READ_MAX)] = 4000,
    detail: Annotated[
        Detail,
        Field(
            description="compact: the words only; normal: + a line per tool (its targets); "
            "full: + each call's input and output. With matching: the calls holding the words "
            "(compact and normal a line each, full their lines)."
        ),
    ] = "normal",
    matching: Annotated[
        str | None,
        Field(
            max_length=TEXT,
            description="Words: only the passages (and turns) that hold them: one or two words, "
            "any; three or more, the most of them (a rarer word counts more).",
        ),
    ] = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, TurnContextOutput]:
    """Read past turns from the raw log: one reference whole (words, a line per tool), a range or
    several scanned (the user's words, the answers as far as max_chars holds them); matching keeps
    passages with them (a few hundred characters). Paths are relative to the project's
    folder."""
    try:  # without an explicit workspace, a session elsewhere is read where it is unique
        ws: Workspace | None = workspace_of(ctx, workspace, roots)
    except ArchiveError:
        if workspace:
            raise
        ws = None

    unshown = [0]  # references not found whose notes the budget left out
    capped = max_chars >= READ_MAX  # raising max_chars is then no way to get more

    def load(budget: int) -> TurnContext:
        got = state(ctx).archive.load_turn_context(
            references,
            workspace=ws,
            anywhere=not workspace,
            before=before,
            after=after,
            # with `matching` even compact shows the calls that hold the words, a line each
            include_tools=include_tools and (detail != "compact" or bool(matching)),
            include_thinking=include_thinking,
            max_chars=budget,
            full_tools=detail == "full",
            matching=(matching or "").split(),
        )
        # the notes of references not found (or, with `matching`, without a passage) are kept
        # whole by `fit`: a share of the budget holds as many as fit, the turns the rest
        noted = first_fitting(got.not_found, max_chars // 3)
        unshown[0] = len(got.not_found) - len(noted)
        # the byte offsets in the log are the reader's, not the agent's: kept at detail=full only,
        # as a search hit keeps them (they cost a read of many turns a turn's worth of room)
        turns = got.turns if detail == "full" else [replace(t, raw_ref={}) for t in got.turns]
        if capped:  # a note says how to get more: the other ways
            turns = [replace(t, left_out=at_most(t.left_out)) for t in turns]
        return TurnContext(turns, noted)

    def text(kept: list[TurnDetail]) -> str:
        out = _turns_text(kept, found.not_found, cite)
        if unshown[0]:
            n = len(found.not_found)
            out += "\n" + more_line(
                n, n + unshown[0], "not-found notes", "ask for fewer references"
            )
        return out

    found, cite = _within(load, max_chars, lambda: citing(ctx, [ws] if ws else []))
    return fit(
        found.turns,
        lambda kept, cut: text(kept),
        lambda kept, cut: TurnContextOutput(kept, found.not_found, cut or bool(unshown[0])),
        max_chars,
        noun="turns",
        how="ask for fewer references" + ("" if capped else " or raise max_chars"),
    )


def list_workspaces(
    ctx: Context,
    detail: Annotated[Detail, Field(description="compact leaves out the counts.")] = "normal",
    max_output_chars: Budget = 6000,
) -> Annotated[CallToolResult, WorkspacesOutput]:
    """The archived workspaces with paths and counts."""
    archive = state(ctx).archive
    infos = []
    for w in archive.workspaces():
        info = WorkspaceInfo(w.id, w.name, w.paths)
        if detail != "compact":
            st = archive.stats(w.id)
            info.sessions, info.turns = st.sessions, st.turns
        infos.append(info)

    def render(kept: list[WorkspaceInfo], cut: bool) -> str:
        lines = [
            f"- {w.name} ({w.id}) {', '.join(w.paths) or 'path unknown'}"
            + (f" — {w.sessions} sessions, {w.turns} turns" if w.sessions is not None else "")
            for w in kept
        ]
        return "\n".join(lines) or "The archive is empty: run `archive-mcp ingest`."

    return fit(
        infos,
        render,
        lambda kept, cut: WorkspacesOutput(kept, cut),
        max_output_chars,
        2,
        "workspaces",
    )


def list_sessions(
    ctx: Context,
    workspace: WorkspaceParam = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 20,
    detail: Annotated[Detail, Field(description="compact leaves out the titles.")] = "normal",
    prompts: Annotated[
        bool,
        Field(
            description="Each session's turns, one line each with the user's words (about 170 "
            "characters a turn: raise max_output_chars): a whole project in one call."
        ),
    ] = False,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, SessionsOutput]:
    """A workspace's sessions, newest first, with titles and turn counts (prompts: every turn's
    user words). Use it to browse them."""
    ws = workspace_of(ctx, workspace, roots)
    archive = state(ctx).archive
    frame = archive.sessions(ws.id).collect()
    rows = frame.head(limit).to_dicts()
    said, routine = (
        overview.prompts(archive.turns(ws.id), [r["session_id"] for r in rows])
        if prompts
        else ({}, 0)
    )
    infos = [
        SessionInfo(
            r["session_id"],
            r["source"],
            r["title"],
            _iso(r["first_at"]),
            _iso(r["last_at"]),
            int(r["turns"]),
            int(r["subagent_turns"]),
            bool(r["live"]),
            said.get(r["session_id"], []),
        )
        for r in rows
    ]

    cite = citing(ctx, [ws])

    note = [overview.ROUTINE_NOTE] if routine else []
    room = max_output_chars - sum(len(n) + 1 for n in note)  # a lone session's turns, the note's

    def render(kept: list[SessionInfo], cut: bool) -> str:
        lines = []
        for s in kept:
            head = f"- {cite.sid(s.session_id)} {(s.first_at or '')[:16].replace('T', ' ')}"
            if prompts:  # the turns' words say what the title would
                lines += [f"{head} {s.turns} turns"]
                day = (s.first_at or "")[:10]  # a turn of a later day says its date
                said = [f"  :{p.turn} {overview.when(p.at, day)} {p.said}" for p in s.prompts]
                # a lone session longer than the budget shows its first turns, not nothing
                lines += first_lines(said, room) if len(kept) == 1 else said
                continue
            lines.append(
                f"{head} {s.turns} turns" + ("" if detail == "compact" else f" — {s.title or ''}")
            )
        return "\n".join([f"{ws.name}: {frame.height} sessions", *note, *lines])

    return fit(
        infos,
        render,
        lambda kept, cut: SessionsOutput(ws.id, kept, cut),
        max_output_chars,
        noun="sessions",
        how="raise limit" if frame.height > limit else "raise max_output_chars",
        total=frame.height,
    )


def refine_session_turns(
    ctx: Context,
    session_id: Annotated[str, Field(max_length=TEXT)],
    workspace: WorkspaceParam = None,
    turns: Annotated[list[int] | None, Field(max_length=1000, description="Default: all.")] = None,
    use_sampling: Annotated[
        bool, Field(description="Ask your model (MCP sampling) for the summaries.")
    ] = False,
    max_sampled_turns: Annotated[int, Field(ge=1, le=20)] = 5,
    detail: Annotated[Detail, Field(description="compact leaves out the summaries.")] = "normal",
    max_output_chars: Budget = 8000,
    roots: Roots = None,
    sampled: Annotated[CreateMessageResult | None, Resolve(sampling_request)] = None,
) -> Annotated[CallToolResult, RefineOutput]:
    """Rewrite a session's turn summaries from its raw log, optionally by your model. Use it when
    summaries read poorly."""
    archive = state(ctx).archive
    ws = workspace_of(ctx, workspace, roots)
    report = archive.refine(ws.id, session=session_id, force=True)
    rows = session_rows(archive, ws, session_id, turns)
    n_sampled, reason = 0, None
    if use_sampling:
        n_sampled, reason = apply_sampled(
            archive, ws, session_id, rows[:max_sampled_turns], sampled
        )
        if len(rows) > max_sampled_turns:
            reason = (
                reason + "; " if reason else ""
            ) + f"only the first {max_sampled_turns} turns were sampled (max_sampled_turns)"
        rows = session_rows(archive, ws, session_id, turns)
    summaries = [
        {
            "agent": r["agent"],
            "turn": r["turn"],
            "refiner": r["refiner"],
            "summary": "" if detail == "compact" else r["summary"],
        }
        for r in rows
    ]
    head = (
        f"refined {report.turns} turns of {session_id}; {n_sampled} summarised by the client's model"
        + (f" ({reason})" if reason else "")
    )
    return fit(
        summaries,
        lambda kept, cut: "\n".join(
            [head] + [f"- {s['turn']}: {s['summary'] or s['refiner']}" for s in kept]
        ),
        lambda kept, cut: RefineOutput(
            ws.id, session_id, report.turns, n_sampled, reason, kept, cut
        ),
        max_output_chars,
        noun="turns",
    )


def _turns_text(turns: list[TurnDetail], not_found: list[MissingTurn], cite: Citing) -> str:
    return "\n\n".join(
        [turn_text(t, cite) for t in turns]
        + [f"Not found: {n.session_id}:{n.turn} — {n.reason}" for n in not_found]
    )


MIN_TEXT = 40  # the least a loaded turn's text is given: at a small max_chars its head, not nothing


def _within(
    load: Callable[[int], TurnContext], max_chars: int, cite_of: Callable[[], Citing]
) -> tuple[TurnContext, Citing]:
    """The turns loaded with as much of `max_chars` as their text leaves (the budget of their
    texts starts at the whole and shrinks by what overflowed, a few tries), and how their text
    names their sessions (`cite_of`). The text is what an agent reads: the structured content,
    whose keys and ids cost some 400 characters a turn, is fitted after it by clipping its
    strings (`fit`), so that it never starves the text of a read of many turns."""
    budget = max_chars - 120
    found = load(max(MIN_TEXT, budget))
    cite = cite_of()
    # the structure counts when its own cost (keys, ids) leaves the text most of the budget
    bare = TurnContextOutput([t.bare() for t in found.turns], found.not_found)
    counts = json_len(to_jsonable(bare)) <= max_chars // 4
    last = None
    for _ in range(4):
        text = _turns_text(found.turns, found.not_found, cite)
        data = (
            json_len(to_jsonable(TurnContextOutput(found.turns, found.not_found))) if counts else 0
        )
        over = max(len(text), data) - max_chars
        if over <= 0 or (last is not None and over >= last * 0.9):
            break  # fits, or a smaller budget no longer shrinks the text (each turn at its floor)
        last = over
        budget -= over + 20
        found = load(max(MIN_TEXT, budget))
    return found, cite


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _shape_hit(h: Hit, detail: Detail) -> Hit:
    """A hit's structured content as its text shows it: compact keeps the user's words cut;
    normal the user's words, decisions and the answer's passage; full everything."""
    if detail == "full":
        return h
    compact = detail == "compact"
    return replace(
        h,
        summary="",
        snippet="",
        raw_ref={},
        evidence=None,
        asked=clip_marked(h.asked or h.summary, COMPACT_SUMMARY) if compact else h.asked,
        answer="" if compact else h.answer,
        decisions=[] if compact else h.decisions,
    )


def _rank_by_rank(founds: list[SearchResults], detail: Detail) -> list[tuple[int, Hit]]:
    """The hits of every query (its index beside each) taken rank by rank, so that a budget cut
    leaves each query its best."""
    return [
        (g, _shape_hit(f[r], detail))
        for r in range(max(map(len, founds)))
        for g, f in enumerate(founds)
        if r < len(f)
    ]


def by_time(hits: list[Hit]) -> list[Hit]:
    """The hits oldest first (a hit without a time first), ties by session and turn."""
    return sorted(hits, key=lambda h: (h.started_at or "", h.session_id, h.turn))


TOOLS = [
    Spec(search_context, "Search past sessions", READ),
    Spec(load_turn_context, "Read past turns", READ),
    Spec(list_workspaces, "List archived workspaces", READ),
    Spec(list_sessions, "List sessions", READ),
    Spec(refine_session_turns, "Refine a session's summaries", UPDATE),
]
