"""Read exact turns back from the archived raw log, by byte range, within a character budget."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from archive_mcp.errors import ArchiveError, InvalidArgument, NotFound
from archive_mcp.ingest import store
from archive_mcp.refiners.answers import PICKED, joined
from archive_mcp.refiners.model import ToolCall
from archive_mcp.refiners.redact import redact, secret_values
from archive_mcp.refiners.text import clip
from archive_mcp.refs import RefLike, TurnRef, parse_ref, resolve_session
from archive_mcp.search.highlight import split_answers
from archive_mcp.search.matching import Matcher, line_passages, lines_of, passages
from archive_mcp.search.parsed import parse_turn
from archive_mcp.search.pastes import pasted_digest
from archive_mcp.search.tool_text import (
    FIRST_WORDS,
    ToolDetail,
    digest,
    grouped,
    plain_arguments,
    plain_output,
    redacted_input,
    relative,
    relative_word,
    tool_output,
)
from archive_mcp.search.turn_detail import (
    MissingTurn,
    TurnContext,
    TurnDetail,
    cut,
    cut_keep_end,
    share,
    size,
    tool_size,
)
from archive_mcp.workspaces import Workspace

TOOL_FLOOR = 200  # a call shown in full gets at least this much of its input and output
THINK_MIN = 80  # the least room thinking is shown in (less: it is named, not stubbed)
DIGEST_SHARE = 0.2  # of a turn's budget, kept for its tool digests when its words would take it all


SCAN = 600  # characters of an answer a scan (a range, several references, a neighbour) shows
SCAN_USER = 300  # characters of the user's words a scan always shows, whatever its budget
SCAN_MIN = 200  # ... and of the answer's digest
NOTE = 160  # about what a scan's "left out: …" line takes
ANSWER_CUT = " answer chars"  # how that line names an answer it cut ("1,200 of 3,400 answer chars")


RAISE = "raise max_chars"  # how a turn's note says to get what its budget left out
RAISE_OR_FULL = "raise max_chars or use detail=full"
# ... and what it says instead where max_chars is at the most its caller may ask (the MCP tool's)
AT_MOST = {RAISE_OR_FULL: "use detail=full or matching", RAISE: "use matching"}


def at_most(note: str | None) -> str | None:
    """A turn's note for a read whose `max_chars` cannot be raised: the other ways to get what
    the budget left out."""
    if note:
        for raise_, instead in AT_MOST.items():  # RAISE_OR_FULL first: it holds RAISE
            note = note.replace(raise_, instead)
    return note


def answer_digest(text: str, width: int = SCAN) -> str:
    """An answer within `width` for a scan: whole when it fits; else its opening paragraphs and its
    last one (the head and end of one long paragraph), `…` between."""
    if len(text) <= width:
        return text
    paras = [p.strip("\n") for p in re.split(r"\n\s*\n", text) if p.strip()]
    if len(paras) < 2:
        return cut_keep_end(text, width)[0]
    last = cut_keep_end(paras[-1], width // 2)[0]
    head = clip("\n".join(paras[:-1]), width - len(last) - 3)  # a heading takes what follows it
    return f"{head}\n…\n{last}"


def _full_calls(
    calls: list[ToolCall], args: list[str], outs: list[str], room: int
) -> tuple[list[ToolDetail], int]:
    """The first calls whose input and output fit `room` with TOOL_FLOOR each at least (the rest
    are left out, never shown as empty stubs), and how many were left out."""
    needs = [len(a) + len(o) for a, o in zip(args, outs, strict=True)]

    def fits(k: int) -> bool:  # a call more only shrinks each share: the first k that fail
        return not any(
            n < min(need, TOOL_FLOOR)
            for n, need in zip(share(needs[:k], room), needs[:k], strict=True)
        )

    lo, hi = 0, len(calls)  # the most calls that fit, found by halving
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    k = lo
    kept = []
    for c, a, o, n in zip(calls[:k], args, outs, share(needs[:k], room), strict=False):
        a_cut = cut(a, max(n // 2, n - len(o)))[0]
        kept.append(ToolDetail(c.name, a_cut, c.status, cut(o, n - len(a_cut))[0]))
    return kept, len(calls) - k


def _detail(
    ws: Workspace,
    row: dict[str, Any],
    budget: int,
    include_tools: bool,
    include_thinking: bool,
    requested: bool,
    full_tools: bool = False,
    matching: Sequence[str] = (),
    scan: bool = False,
    width: int = SCAN,
    keep_user: int = 0,
) -> TurnDetail | None:
    """One turn within `budget`: the user's and the assistant's words first (the answers the user
    gave as tool results with them), then thinking, then each tool call as a one-line digest (or
    whole with `full_tools`) while they fit; what is left out is said in `left_out`. With
    `matching`, only the passages that hold one of the words (None when no passage does). A
    `scan` shows the user's words and the answer's digest (`answer_digest`) and no tool calls, and
    says how to read the turn whole; its answer within `width` when the budget holds that."""
    turn = parse_turn(ws, row)
    # the option a bare "3" picked is found at ingest, with the turn before (answers.picked)
    picks = [ln for ln in (row.get("user_text") or "").splitlines() if ln.startswith(PICKED)]
    user = joined(turn.user_text, turn.answers + picks) if turn else row["user_text"]
    assistant = (turn.assistant_text or turn.synthetic_text) if turn else row["assistant_text"]
    calls = turn.tool_calls if turn else []
    outputs = [
        tool_output(c.output_text or str((c.result or {}).get("message", ""))) for c in calls
    ]
    plains = [plain_arguments(c.arguments) for c in calls]  # escapes undone: secrets in clear
    known = secret_values(
        [user, assistant, turn.thinking if turn else "", *(c.arguments for c in calls), *plains]
        + outputs
    )

    def clean(text: str) -> str:
        return redact(text, known)[0]

    said = clean(user)
    if not full_tools:  # a pasted log must not fill the read: the user's own sentences first
        own, decisions = split_answers(said)  # the answers they gave are no paste
        said = "\n".join([pasted_digest(own), *decisions] if own else decisions)
    roots = ws.paths  # paths under the project's folder read relative to it
    assistant = relative(clean(assistant), roots)
    # with `matching`, the thinking's passages that hold the words are shown unasked: a reason
    # the assistant gave only there is what such a read looks for
    thought = (
        relative(clean(turn.thinking), roots) if (include_thinking or matching) and turn else None
    )
    # the calls' input and output as a read shows them; `matching` cuts the input to lines, so
    # as `key: value` lines (whole, it stays JSON: a face parses it, the agent's renders it so)
    plain = plain_arguments if matching else str
    shown = full_tools or bool(matching)
    args = (
        [relative(plain(redacted_input(c.arguments, known)), roots) for c in calls] if shown else []
    )
    outs = [relative(plain_output(clean(o)), roots) for o in outputs] if shown else []
    texts = [said, assistant, thought or "", *(args + outs if include_tools else [])]
    # with `matching`, the lines holding the most of the words set the bar (`Matcher.over`)
    # a path asked from the project's folder down reads as the texts show it, relative to it
    words = [relative_word(w, roots) for w in matching]
    matcher = Matcher.over(words, texts) if matching else Matcher.any_of(())
    user = passages(said, matcher)
    assistant = passages(assistant, matcher)
    if thought is not None:
        thought = passages(thought, matcher)
    if matching and include_tools:
        kept = [
            i
            for i, c in enumerate(calls)
            if matcher.names(c.name) or matcher.holds(args[i]) or matcher.holds(outs[i])
        ]
        calls, outputs = [calls[i] for i in kept], [outputs[i] for i in kept]
        args, outs = [args[i] for i in kept], [outs[i] for i in kept]
    if matching and not (user or assistant or thought or (include_tools and calls)):
        return None
    if not user:  # what the user said frames the passages kept: its head when none holds a word
        user = clip(said, SCAN_USER)
    digests = []

    def matched(c: ToolCall, out: str) -> ToolDetail:  # a line: around the word it was kept for
        line = next((ln for ln in lines_of(out) if matcher.keeps(ln)), None)
        first = out if line is None else matcher.around(line.strip(), FIRST_WORDS - 4)
        return digest(c, first, known, roots)

    if include_tools and not full_tools and matching:  # a line a call
        digests = [matched(c, o) for c, o in zip(calls, outs, strict=True)]
    elif include_tools and not full_tools:  # a line a tool
        digests = grouped(calls, [clean(o[:2000]) for o in outputs], known, roots)
    if scan:  # under `matching`, the calls that hold the words as their digests
        found = (digests, thought or None) if matching else ([], None)
        return _scanned(
            row, ws, said, assistant, len(calls), found, budget, requested, width, keep_user
        )
    # the words come first, but a share of the budget (DIGEST_SHARE) is kept for what was done
    room = budget - min(sum(map(tool_size, digests)), int(budget * DIGEST_SHARE))
    u_max = max(room // 3, room - len(assistant))
    user, c1 = cut(user, min(len(user), u_max))
    assistant, c2 = cut_keep_end(assistant, max(0, room - len(user)))
    room = budget - len(user) - len(assistant)
    thinking, c5, stubbed = None, False, 0
    think_room = room // 2 if calls and include_tools else room
    if thought and think_room < THINK_MIN:  # no room for a passage: said, not stubbed
        stubbed = len(thought)
    elif thought:
        thinking, c5 = cut(thought, think_room)
        room -= len(thinking)
    tools: list[ToolDetail] = []
    left, cut_tools = 0, False
    if include_tools and full_tools:
        args = [line_passages(a, matcher) for a in args]
        outs = [line_passages(o, matcher, head=False) for o in outs]
        tools, left = _full_calls(calls, args, outs, room)
        if left and matching:  # not all whole: a third of the room for the rest, a line each
            tools, left = _full_calls(calls, args, outs, room * 2 // 3)
        cut_tools = any(
            len(t.arguments) < len(a) or len(t.result) < len(o)
            for t, a, o in zip(tools, args, outs, strict=False)
        )
        room -= sum(map(tool_size, tools))
        for c, o in zip(calls[len(tools) :], outs[len(tools) :], strict=True) if matching else ():
            line = matched(c, o)  # a call no room was left for whole: a line, while they fit
            if tool_size(line) > room:
                break
            tools.append(line)
            room, left = room - tool_size(line), left - 1
    elif include_tools:
        for d in digests:
            n = tool_size(d)
            if n > room:
                break
            tools.append(d)
            room -= n
        left = len(calls) - sum(t.calls for t in tools)
    notes = []
    if left:
        how = RAISE if full_tools else RAISE_OR_FULL
        notes.append(f"{left} of {len(calls)} tool calls left out for the budget; {how}")
    if thought is None and turn and (unasked := len(turn.thinking.strip())):
        notes.append(f"thinking left out ({unasked:,} chars): include_thinking=true shows it")
    if stubbed:
        notes.append(f"thinking left out for the budget ({stubbed:,} chars); {RAISE}")
    note = "; ".join(notes) or None
    was_cut = c1 or c2 or c5 or cut_tools or bool(left) or bool(stubbed)
    return _of_row(ws, row, user, assistant, tools, thinking, requested, was_cut, note)


def _of_row(
    ws: Workspace,
    row: dict[str, Any],
    user: str,
    assistant: str,
    tools: list[ToolDetail],
    thinking: str | None,
    requested: bool,
    truncated: bool,
    note: str | None,
) -> TurnDetail:
    """The detail of a refined `row` with the words and calls shown."""
    started = row["started_at"]
    return TurnDetail(
        ws.id,
        row["session_id"],
        row["agent"],
        row["turn"],
        started.isoformat() if started else None,
        row["status"],
        user,
        assistant,
        tools,
        thinking,
        requested,
        truncated,
        dict(row["raw_ref"]),
        note,
    )


def _scanned(
    row: dict[str, Any],
    ws: Workspace,
    user: str,
    assistant: str,
    calls: int,
    matched: tuple[list[ToolDetail], str | None],
    budget: int,
    requested: bool,
    width: int = SCAN,
    keep_user: int = 0,
) -> TurnDetail:
    """A turn as a scan shows it: the user's words whole (within `budget`, whatever `matching`
    kept), the answer's digest, what `matching` kept of the rest (`matched`: the calls holding
    the words as digests, while they fit, the first always; the thinking's passages, at least
    SCAN_MIN of them) and one line saying what was left out and how to read it whole. The
    user's words come first (who asked for what is the point of a scan): up to `SCAN_USER` of
    them whatever the budget, and the digest takes what is left, at least `SCAN_MIN`."""
    digests, thought = matched
    user, was_cut = cut(user, max(SCAN_USER, max(budget, keep_user) // 2))
    shown = answer_digest(assistant, min(width, max(SCAN_MIN, budget - len(user) - NOTE)))
    room, tools = budget - len(user) - len(shown) - NOTE, list[ToolDetail]()
    for d in digests:
        if tools and tool_size(d) > room:
            break
        tools.append(d)
        room -= tool_size(d)
    thinking, cut_thought = cut(thought, max(SCAN_MIN, room)) if thought else (None, False)
    left = []
    if len(shown) < len(assistant):
        left.append(f"{len(assistant) - len(shown):,} of {len(assistant):,}{ANSWER_CUT}")
    if calls > len(tools):
        n = calls - len(tools)
        left.append(f"{n}{' more' if tools else ''} tool call{'s' if n > 1 else ''}")
    note = f"left out: {', '.join(left)}" if left else None  # one reference reads it whole
    was_cut = was_cut or cut_thought or bool(left)
    return _of_row(ws, row, user, shown, tools, thinking, requested, was_cut, note)


RANGE_MAX = 50  # turns one `SESSION:A-B` reference reads
READ_WHOLE = 3500  # a budget share this large reads a requested turn of several, not a scan
FILL_ROUNDS = 3  # rounds in which a scan's spare room goes to the answers it cut


def load_turn_context(
    ws: Workspace,
    references: list[TurnRef],
    before: int = 0,
    after: int = 0,
    include_tools: bool = True,
    include_thinking: bool = False,
    max_chars: int = 6000,
    full_tools: bool = False,
    matching: Sequence[str] = (),
) -> TurnContext:
    """Turns for the references (a reference with `last` is the range turn..last), plus
    neighbours; their texts together hold `max_chars`, cut at word boundaries with `…`. Tool
    calls are one-line digests unless `full_tools`; with `matching`, only the passages holding
    one of those words, and only the turns that have one."""
    if matching and not Matcher.any_of(matching).words:
        raise InvalidArgument(
            f"matching {' '.join(matching)!r} holds no word (`-`, `_` and spaces are left out "
            "of a word); give a word the turns would hold, or read them without matching"
        )
    wanted: list[tuple[dict[str, Any], bool]] = []
    spans: list[tuple[TurnRef, list[int]]] = []  # each found reference and the turns it asked
    missing: list[MissingTurn] = []
    seen: set[tuple[str, str, int]] = set()
    for ref in references:
        df = store.read_refined(ws, ref.session_id)
        if df.height == 0:
            missing.append(
                MissingTurn(
                    ref.session_id,
                    ref.turn,
                    ref.agent,
                    f"no session {ref.session_id!r} in workspace {ws.name}; search for its turns "
                    "or list the sessions",
                )
            )
            continue
        agent_rows = df.filter(pl.col("agent") == ref.agent).sort("turn")
        turns = agent_rows["turn"].to_list()
        last = min(ref.last, ref.turn + RANGE_MAX - 1) if ref.last is not None else ref.turn
        asked = [t for t in turns if ref.turn <= t <= last]
        if not asked:
            valid = f"{turns[0]}..{turns[-1]}" if turns else "none"
            span = f"turn {ref.turn} is" if last == ref.turn else f"turns {ref.turn}-{last} are"
            missing.append(
                MissingTurn(
                    ref.session_id,
                    ref.turn,
                    ref.agent,
                    f"{span} not in session {ref.session_id} (agent {ref.agent}); "
                    f"valid turns: {valid}",
                )
            )
            continue
        spans.append((ref, asked))
        for t in range(ref.turn - before, last + after + 1):
            key = (ref.session_id, ref.agent, t)
            if t in turns and key not in seen:
                seen.add(key)
                wanted.append((agent_rows.row(turns.index(t), named=True), t in asked))
    details, left, widen = [], max_chars, []
    asked_n = sum(req for _, req in wanted)
    whole = asked_n == 1  # one turn asked: it is read whole, the rest scanned ...
    each = max_chars // max(1, asked_n)  # ... unless the budget gives each asked READ_WHOLE

    def read(
        row: dict[str, Any], req: bool, budget: int, scan: bool, width: int = SCAN, keep: int = 0
    ) -> TurnDetail | None:
        flags = (include_tools, include_thinking, req, full_tools, list(matching), scan, width)
        return _detail(ws, row, budget, *flags, keep)

    for k, (row, req) in enumerate(wanted):  # what a short turn leaves goes to the next ones
        scan = not full_tools and not (req and (whole or each >= READ_WHOLE))
        share_ = left // (len(wanted) - k)
        d = read(row, req, share_, scan)
        if d is None:  # `matching` left nothing of it
            continue
        left -= size(d)
        details.append(d)
        if scan and req and _answer_cut(d):
            widen.append((len(details) - 1, row, share_))
    _fill(
        details,
        widen,
        max_chars,
        lambda row, budget, width, keep: read(row, True, budget, True, width, keep),
    )
    if matching:
        missing += _unmatched(spans, details, matching)
    return TurnContext(details, missing)


def _fill(
    details: list[TurnDetail],
    widen: list[tuple[int, dict[str, Any], int]],
    max_chars: int,
    read: Callable[[dict[str, Any], int, int, int], TurnDetail | None],
) -> None:
    """The room a scan left given to the answers it cut (`widen`: their places in `details` and
    rows), evenly, in a few rounds: an answer that needs less than its part leaves the rest to
    the others. A scan the agent gave room for shows what fits, not SCAN of each answer."""
    widths = {i: SCAN for i, _, _ in widen}
    rows = {i: row for i, row, _ in widen}
    firsts = {i: first for i, _, first in widen}
    for _ in range(FILL_ROUNDS):
        spare = max_chars - sum(map(size, details))
        if not widths or spare < SCAN_MIN:
            return
        extra = spare // len(widths)
        if extra <= NOTE:  # a share this small grows no answer (`_scanned` keeps NOTE for its note)
            return
        for i in list(widths):
            was = size(details[i])
            d = read(rows[i], was + extra, widths[i] + extra, firsts[i])
            if d is None or size(d) <= was or size(d) > was + extra:
                del widths[i]  # nothing more of it to show (or no more fits)
                continue
            details[i], widths[i] = d, widths[i] + extra
            if not _answer_cut(d):
                del widths[i]


def _answer_cut(d: TurnDetail) -> bool:
    """Whether a scanned turn's answer was cut (its note says so): its calls left out are no
    reason to widen it."""
    return ANSWER_CUT in (d.left_out or "")


def _unmatched(
    spans: list[tuple[TurnRef, list[int]]], shown: list[TurnDetail], matching: Sequence[str]
) -> list[MissingTurn]:
    """The references of which `matching` left no turn, each saying so (a range is one)."""
    kept = {(d.session_id, d.agent, d.turn) for d in shown}
    words = ", ".join(repr(w) for w in matching)
    out = []
    for ref, asked in spans:
        if any((ref.session_id, ref.agent, t) in kept for t in asked):
            continue
        which = f"turn {asked[0]}" if len(asked) == 1 else f"turns {asked[0]}-{asked[-1]}"
        out.append(
            MissingTurn(
                ref.session_id,
                ref.turn,
                ref.agent,
                f"{which} of session {ref.session_id}: no passage holds {words}; read "
                f"{'it' if len(asked) == 1 else 'them'} without matching or with other words",
            )
        )
    return out


def canonical_ref(ws: Workspace, r: RefLike) -> TurnRef:
    """`r` parsed, its session prefix expanded when it names one session of `ws`."""
    ref = parse_ref(r)
    found = resolve_session(store.raw_files(ws), ref.session_id)
    return replace(ref, session_id=found[0]) if len(found) == 1 else ref


def locate(
    sid: str, ws: Workspace | None, anywhere: bool, every: Callable[[], list[Workspace]]
) -> tuple[Workspace | None, str, str]:
    """The workspace and full id of the session `sid` names (an id or a unique prefix), else
    (None, sid, why): in `ws`, then (with `anywhere`) in `every()` workspace."""
    pools: list[Workspace | None] = [ws] if ws is not None else []
    if anywhere:
        pools.append(None)  # None: every workspace
    for pool in pools:
        spaces = [pool] if pool is not None else every()
        found = [(w, s) for w in spaces for s in resolve_session(store.raw_files(w), sid)]
        if len(found) == 1:
            return found[0][0], found[0][1], ""
        if len(found) > 1:
            names = ", ".join(f"{s} ({w.name})" for w, s in found[:5])
            return None, sid, f"session {sid!r} is ambiguous: {names}; give more of the id"
    where = f"workspace {ws.name}" if ws is not None and not anywhere else "any workspace"
    return (
        None,
        sid,
        f"no session {sid!r} in {where}; search for its turns or list the sessions",
    )


def load_references(
    references: Sequence[RefLike],
    workspace: Callable[[], Workspace],
    named: bool,
    every: Callable[[], list[Workspace]],
    before: int = 0,
    after: int = 0,
    include_tools: bool = True,
    include_thinking: bool = False,
    max_chars: int = 6000,
    anywhere: bool = False,
    full_tools: bool = False,
    matching: Sequence[str] = (),
) -> TurnContext:
    """`load_turn_context` of references in any workspace: each session is looked up in
    `workspace()` (a `named` one, or the cwd's), then with `anywhere` in `every()` workspace; the
    turns come back in the references' order, `max_chars` shared by the workspaces' turns. When
    no reference is found, `NotFound` with the reasons."""
    try:
        ws: Workspace | None = workspace()
    except ArchiveError:
        if not anywhere or named:
            raise
        ws = None
    groups: dict[str, tuple[Workspace, list[TurnRef]]] = {}
    missing: list[MissingTurn] = []
    order: dict[tuple[str, str, str], int] = {}  # the turns come back in the references' order
    asked: dict[tuple[str, int, str], int] = {}  # and so do the references not found
    for raw in references:
        ref = parse_ref(raw)
        where, sid, why = locate(ref.session_id, ws, anywhere, every)
        asked.setdefault((sid, ref.turn, ref.agent), len(asked))
        if where is None:
            missing.append(MissingTurn(ref.session_id, ref.turn, ref.agent, why))
            continue
        groups.setdefault(where.id, (where, []))[1].append(replace(ref, session_id=sid))
        order.setdefault((where.id, sid, ref.agent), len(order))
    turns, total = [], max(1, sum(len(r) for _, r in groups.values()))
    for where, refs in groups.values():
        part = load_turn_context(
            where,
            refs,
            before,
            after,
            include_tools,
            include_thinking,
            max_chars * len(refs) // total,
            full_tools,
            matching,
        )
        turns += part.turns
        missing += part.not_found
    if missing and not turns:
        raise NotFound("; ".join(dict.fromkeys(n.reason for n in missing)))
    turns.sort(key=lambda t: order.get((t.workspace_id, t.session_id, t.agent), 0))
    missing.sort(key=lambda n: asked.get((n.session_id, n.turn, n.agent), 0))
    return TurnContext(turns, missing)
