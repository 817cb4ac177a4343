"""A timeline told story-first, within a character budget.

Now (the theme's latest substantive turns, newest first, each quoted with when and session:turn),
then the decision candidates (or, when changes of course are claimed, each decision thread: "was X
→ now Y"), then the newest events, then files and memories. The budget goes to decisions,
changes and the newest events first; a line is kept whole or left out (never cut mid-word), and
what was left out is counted. The structured form (`output.TraceOutput`, typed) follows the same
rules against the size of its JSON, and `told` tells the text from the very items it keeps, so an
agent gets the same story either way and can drill down with `load_turn_context`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from archive_mcp.refiners.text import clip
from archive_mcp.render import more_line, to_jsonable
from archive_mcp.themes.trace.model import (
    Bucket,
    Decision,
    DecisionBrief,
    TimelineData,
    TimelineEvent,
)
from archive_mcp.themes.trace.output import (
    BucketLine,
    Candidate,
    Claimed,
    Counts,
    EventLine,
    FileLine,
    NotShown,
    NowTurn,
    Quiet,
    ThreadStep,
    Told,
    TraceOutput,
    TurnText,
)
from archive_mcp.themes.trace.standing import LEAD, quote, short_line

GIST = 140
SUMMARY = 180


def _day(x: Any, with_time: bool = False) -> str:
    if x is None:
        return "?"
    if isinstance(x, str):
        return x[:16].replace("T", " ") if with_time else x[:10]
    return str(x.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d"))


def _width(max_chars: int, most: int) -> int:
    """How long a gist or summary may be: small budgets get shorter lines, not fewer decisions."""
    return max(60, min(most, max_chars // 20))


def _now_width(max_chars: int, n: int) -> int:
    """How long each Now quote may be: the Now block takes about a sixth of the budget."""
    return max(40, min(_width(max_chars, GIST), max(200, max_chars // 6) // max(1, n) - 30))


def _step(s: Decision | DecisionBrief, width: int = GIST) -> str:
    return f'"{clip(s.gist, width)}" ({_day(s.at)}, {s.ref})'


def thread_line(thread: list[DecisionBrief], width: int = GIST) -> str:
    """was A (when, ref) → B (…) → now C (…): the first and the newest step, the middle counted;
    then the courses the newest step may undo instead of the one before it, when there are any."""
    first, last = thread[0], thread[-1]
    middle = thread[1:-1]
    via = (
        f" → {_step(middle[-1], width)}"
        if len(middle) == 1
        else (f" → … {len(middle)} changes …" if middle else "")
    )
    who = "the user" if last.by == "user" else "the assistant"
    maybe = f"; or it undoes {', '.join(last.alternatives)}" if last.alternatives else ""
    return (
        f"- was {_step(first, width)}{via} → now {_step(last, width)} [{last.flag} by {who}{maybe}]"
    )


def _unpaired(tl: TimelineData) -> list[Decision]:
    in_thread = {s.ref for t in tl.threads for s in t}
    return [d for d in tl.decisions if d.ref not in in_thread]


def _event_line(e: TimelineEvent, width: int = SUMMARY) -> str:
    mark = f" **{e.flag}**" if e.flag else ""
    return f"- {_day(e.at, True)} {e.ref}{mark} {clip(' '.join(e.summary.split()), width)}"


class _Lines:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.lines: list[str] = []
        self.used = 0

    def fits(self, line: str, reserve: int = 0) -> bool:
        return self.used + len(line) + 1 + reserve <= self.budget

    def add(self, line: str, reserve: int = 0) -> bool:
        if not self.fits(line, reserve):
            return False
        self.lines.append(line)
        self.used += len(line) + 1
        return True


def ends_first(n: int) -> list[int]:
    """Event indices in the order a budget takes them: the newest, the first, then two newer for
    each earlier one: a cut trace keeps its beginning and its end, the count between them."""
    if n == 0:
        return []
    head, tail, order = 1, n - 2, [n - 1, 0] if n > 1 else [0]
    while head <= tail:
        for _ in range(2):
            if head <= tail:
                order.append(tail)
                tail -= 1
        if head <= tail:
            order.append(head)
            head += 1
    return order


def _gaps(chosen: list[int], n: int) -> list[tuple[int, int]]:
    """(index after which, how many events are not shown) for each run left out between `chosen`."""
    out, prev = [], -1
    for i in sorted(chosen) + [n]:
        if i - prev > 1:
            out.append((prev, i - prev - 1))
        prev = i
    return out


def markdown(tl: TimelineData, max_chars: int = 12_000, keep: TraceOutput | None = None) -> str:
    """The trace as text; with `keep` (what `budgeted` chose), the same threads, decisions and events."""
    out = _Lines(max_chars)
    gw, sw = _width(max_chars, GIST), _width(max_chars, SUMMARY)
    changes = sum(1 for d in tl.decisions if d.flag != "decision")
    out.add(f"# Theme: {tl.theme}")
    span = f"{len(tl.events)} turns, {_day(tl.first_seen)} → {_day(tl.last_seen)} (by {tl.granularity}); "
    out.add(
        span
        + (
            f"{len(tl.decisions) - changes} decisions, {changes} changes of course"
            if tl.claims_changes
            else f"{len(tl.decisions)} decision candidates (changes of course are not claimed)"
        )
    )
    if tl.now:
        nw = _now_width(max_chars, len(tl.now))
        out.add(f"**Now** ({LEAD}):")
        for turn in tl.now:
            out.add(f'- {turn.ref} ({_day(turn.at)}): "{quote(turn, nw)}"')
    else:
        out.add(f"**Now:** {tl.current_state}")
    left = {"threads": 0, "decisions": 0, "events": 0}
    decision_budget = out.used + int(0.6 * max(0, max_chars - out.used))
    threads = sorted(tl.threads, key=lambda t: t[-1].at or "", reverse=True)
    unpaired = sorted(_unpaired(tl), key=lambda d: d.at or "", reverse=True)
    if keep is not None:
        left["threads"] = len(threads) - len(keep.threads)
        left["decisions"] = len(unpaired) - len(keep.decisions)
        kept_threads = {t[-1].ref for t in keep.threads}
        kept_decisions = {d.ref for d in keep.decisions}
        threads = [t for t in threads if t[-1].ref in kept_threads]
        unpaired = [d for d in unpaired if d.ref in kept_decisions]
    if threads or unpaired:
        out.add(
            f"\n## {'Decisions' if tl.claims_changes else 'Decision candidates'} (newest first)"
        )
    for n, t in enumerate(threads):
        line = thread_line(t, gw)
        if (n and out.used + len(line) > decision_budget) or not out.add(
            line, 300 if n == 0 else 0
        ):
            left["threads"] += 1
    for d in unpaired:
        line = f"- {d.flag}: {_step(d, gw)}" if tl.claims_changes else f"- {_step(d, gw)}"
        if out.used + len(line) > decision_budget or not out.add(line):
            left["decisions"] += 1
    for k, noun, total in (
        ("threads", "decision threads", len(tl.threads)),
        (
            "decisions",
            "decisions" if tl.claims_changes else "decision candidates",
            len(_unpaired(tl)),
        ),
    ):
        if left[k]:
            out.add(more_line(total - left[k], total, noun, "raise max_output_chars"))
    if tl.dormant_gaps:
        out.add("\n## Dormant")
        for g in tl.dormant_gaps:
            out.add(f"- {g.start[:10]} → {g.end[:10]} ({g.days:.0f} days quiet)")
    tail = [
        f"- {f.path}: {f.turns} turn{'s' if f.turns != 1 else ''}, {f.first[:10]} → {f.last[:10]}"
        for f in tl.files[:5]
    ]
    memories = [f"- {m}" for m in tl.memories]
    reserve = min(sum(len(x) + 1 for x in tail[:3] + memories[:3]) + 40, max_chars // 8)
    # The first events and the newest: chosen from both ends, rendered in time order under bucket
    # headers, each run left out between them counted where it is.
    words = {b.name: b for b in tl.buckets}
    kept_refs = {e.ref for e in keep.events} if keep is not None else None
    n = len(tl.events)
    gap = len(more_line(0, 10**4, "turns", "raise max_output_chars")) + 2
    chosen: list[int] = []
    cost = len("\n## Timeline") + 1 + 2 * gap
    heads: set[str] = set()
    for i in ends_first(n):
        e = tl.events[i]
        if kept_refs is not None and e.ref not in kept_refs:
            continue
        head = 0 if e.bucket in heads else len(_bucket_line(words.get(e.bucket), e.bucket)) + 2
        need = len(_event_line(e, sw)) + 1 + head
        if out.used + cost + need + reserve > max_chars:
            break
        cost += need
        heads.add(e.bucket)
        chosen.append(i)
    left["events"] = n - len(chosen)
    if tl.events:
        out.add("\n## Timeline")
        current = None
        skipped_after = dict(_gaps(chosen, n))
        if -1 in skipped_after:
            out.add(more_line(n - skipped_after[-1], n, "turns", "raise max_output_chars"))
        for i in sorted(chosen):
            e = tl.events[i]
            if e.bucket != current:
                current = e.bucket
                out.add("\n" + _bucket_line(words.get(e.bucket), e.bucket))
            out.add(_event_line(e, sw))
            if i in skipped_after:
                out.add(more_line(n - skipped_after[i], n, "turns", "raise max_output_chars"))
    if tail and out.add("\n## Files"):
        for line in tail:
            out.add(line)
    if memories and out.add("\n## Linked memories"):
        for line in memories:
            out.add(line)
    return "\n".join(out.lines)


def _bucket_line(b: Bucket | None, name: str) -> str:
    if b is None:
        return f"### {name}"
    return f"### {name} — {b.turns} turns; words: {', '.join(b.keywords)}"


def _size(x: Any) -> int:
    """The characters `x` adds to the JSON of a list it is in (its separator counted)."""
    return len(json.dumps(to_jsonable(x), ensure_ascii=False, default=str)) + 2


def _event_told(e: TimelineEvent, width: int = SUMMARY) -> EventLine:
    return EventLine(
        e.ref,
        e.session_id,
        e.turn,
        e.at.isoformat() if e.at else None,
        e.flag,
        clip(" ".join(e.summary.split()), width),
        None if e.agent == "main" else e.agent,
        None
        if e.content is None
        else TurnText(
            clip(e.content["user"] or "", 1500), clip(e.content["assistant"] or "", 1500)
        ),
    )


def budgeted(tl: TimelineData, max_chars: int = 12_000) -> TraceOutput:
    """The structured trace within `max_chars` of JSON: story first, the newest events next."""
    gw, sw = _width(max_chars, GIST), _width(max_chars, SUMMARY)

    def step(s: Decision | DecisionBrief) -> ThreadStep:
        # other courses the change may undo (`alternatives`): check them by meaning
        return ThreadStep(s.ref, s.at, s.flag, s.by, clip(s.gist, gw), s.alternatives)

    out = TraceOutput(
        theme=tl.theme,
        granularity=tl.granularity,
        first_seen=tl.first_seen.isoformat() if tl.first_seen else None,
        last_seen=tl.last_seen.isoformat() if tl.last_seen else None,
        current_state=short_line(tl.now),
        now=[  # the latest substantive turns: `ref` is the citation load_turn_context takes
            NowTurn(s.ref, s.at, quote(s, _now_width(max_chars, len(tl.now)))) for s in tl.now
        ],
        claims_changes=tl.claims_changes,
        counts=Counts(
            len(tl.events), len(tl.decisions), len(tl.threads), len(tl.files), len(tl.buckets)
        ),
        dormant_gaps=[
            Quiet({"from": g.start, "to": g.end, "days": round(g.days, 1)})
            for g in tl.dormant_gaps[-3:]
        ],
        memories=tl.memories[:10],
    )
    used = _size(out) + 40
    order = ends_first(len(tl.events))  # the first event, the newest two, the next first, …
    events = [_event_told(tl.events[i], sw) for i in order]
    newest = sum(_size(e) for e in events[:1])  # the newest event is part of the story too
    decision_cap = used + int(0.6 * max(0, max_chars - used - newest))

    def take(into: list[Any], items: Sequence[Any], cap: int) -> None:
        nonlocal used
        for item in items:
            n = _size(item)
            if used + n > cap:
                out.truncated = True
                return
            into.append(item)
            used += n

    threads = [
        [step(s) for s in t] for t in sorted(tl.threads, key=lambda t: t[-1].at or "", reverse=True)
    ]
    take(out.threads, threads[:1], max_chars - newest)  # the newest thread is the story: first
    take(out.threads, threads[1:], decision_cap)
    unpaired = sorted(_unpaired(tl), key=lambda d: d.at or "", reverse=True)
    candidates: list[Claimed | Candidate] = [
        Claimed(d.ref, d.at, d.flag, d.by, clip(d.gist, gw), d.alternatives, d.undoes)
        if tl.claims_changes
        else Candidate(d.ref, d.at, d.by, clip(d.gist, gw))
        for d in unpaired
    ]
    first = 0 if out.threads else 1  # with no thread, the newest decision is the story
    take(out.decisions, candidates[:first], max_chars - newest)
    take(out.decisions, candidates[first:], decision_cap)
    files = [FileLine(f.path, f.turns, f.first, f.last) for f in tl.files[:5]]
    reserve = min(sum(_size(f) for f in files[:3]), max_chars // 10)
    take(out.events, events[:1], max_chars)
    take(out.events, events[1:], max_chars - reserve)
    at = {e.ref: k for k, e in enumerate(tl.events)}
    out.events.sort(key=lambda e: at[e.ref])
    take(
        out.buckets,
        [BucketLine(b.name, b.start, b.turns, b.keywords[:5]) for b in reversed(tl.buckets)],
        max_chars,
    )
    out.buckets.reverse()
    take(out.files, files, max_chars)
    if len(out.files) < len(tl.files):
        out.truncated = True
    return _within(out, tl, max_chars)


def told(tl: TimelineData, max_chars: int = 12_000) -> Told:
    """The trace told once within `max_chars`: the structure, and the text of the very items it
    holds (both within the budget: the text by its lines, the structure by its JSON)."""
    out = budgeted(tl, max_chars)
    return Told(markdown(tl, max_chars, out), out)


def _within(out: TraceOutput, tl: TimelineData, max_chars: int) -> TraceOutput:
    """`out` with its JSON within `max_chars`: when a small budget cannot hold what `budgeted`
    does not weigh (the memories, the quiet spells, Now), parts give way, least telling first
    (the oldest events; the last of the rest); the text, told from `out`, follows."""
    for part in (
        out.memories,
        out.dormant_gaps,
        out.buckets,
        out.files,
        out.now,
        out.events,
        out.decisions,
        out.threads,
    ):
        while part and _size(out) - 2 > max_chars:
            del part[0 if part is out.events else -1]
            out.truncated = True
    out.not_shown = NotShown(
        len(tl.threads) - len(out.threads),
        len(_unpaired(tl)) - len(out.decisions),
        len(tl.events) - len(out.events),
    )
    return out
