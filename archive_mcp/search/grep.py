"""Lines of past turns that match a regular expression, as grep over the raw logs finds them, in
time order, each under its turn: the user's words, the answers, the thinking, each tool call's
input (commands, files written, edits) and output. What search ranks is a turn's words; a detail
that lives in a tool's input or output (a commit, a file's content, an error) is found here.

The archived raw log of each Claude Code or Codex turn is searched first, as bytes with JSON's
line breaks as spaces (`_raw_holds`): only the turns whose bytes hold a match are parsed (on real
logs the results are the same as parsing every turn: bench/grep_speed.py). A pattern that could
match what the escapes hide (a quote, a backslash, an anchor, `.`, a letter outside ASCII) parses
every turn, and so does every other reader's (their logs may split a text into pieces). The pattern runs under a time limit (`regex`'s timeout): a pattern that backtracks without
end is an error that says so, not a call that never returns."""

from __future__ import annotations

import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import re2
import regex

from archive_mcp.errors import InvalidArgument, NotFound
from archive_mcp.refiners.answers import joined
from archive_mcp.refiners.redact import may_hold_secret, redact, secret_values
from archive_mcp.refiners.text import clip
from archive_mcp.refs import parse_ref
from archive_mcp.search.matching import lines_of
from archive_mcp.search.parsed import parse_turn
from archive_mcp.search.tool_text import plain_arguments, plain_output, relative, tool_output
from archive_mcp.workspaces import Workspace

WHERE = ("user", "answer", "thinking", "input", "output")
WIDTH = 140  # characters of a long line shown, around its match
PER_TURN = 4  # lines shown of one turn; the rest are counted ...
TURN_LINES = 40  # ... unless the turns were asked by reference (SESSION:TURN): all, up to this
MATCH_SECONDS = 2.0  # one pattern search's time limit
SEARCH_SECONDS = 30.0  # a whole call's: past it, the turns not searched are said
ASKED = 100  # characters of a turn's user words on its line
ENTRY_MAX = 200  # characters of one `sessions` entry
# a pattern the log's escapes may hide (what it matches in a turn is not in its log as it is):
# one that can match a quote, a backslash or a tab (`.`, `[^`, `\s`, `\W`, …), an anchor, a
# letter outside ASCII; `\b` and an escaped punctuation mark are safe
_RAW_UNSAFE = regex.compile(r'["^$]|(?<!\\)\.|\[\^|[^\x00-\x7f]|\\[^b\W]|\\[\\"]')
# the readers whose logs hold each text whole in one record (no streamed pieces to join)
PREFILTERED = frozenset({"claude-code", "codex"})


@dataclass(frozen=True)
class GrepLine:
    """One matching line: where it is (`user`, `answer`, `thinking`, `<Tool> in`, `<Tool> out`)
    and its text (around the match when the line is long)."""

    where: str
    text: str


@dataclass(frozen=True)
class GrepTurn:
    """A turn holding matches: its lines (up to PER_TURN), how many more it holds, and how many
    of its matching lines a turn before it showed (`repeated`, not shown again)."""

    workspace_id: str
    session_id: str
    agent: str
    turn: int
    started_at: str | None
    asked: str  # the user's words, cut to ASKED
    lines: list[GrepLine]
    more: int = 0
    repeated: int = 0


@dataclass
class GrepResult:
    """The turns holding matches, oldest first; how many turns were searched of how many."""

    pattern: str
    space: str = ""  # the workspace's name
    turns: list[GrepTurn] = field(default_factory=list)
    searched: int = 0
    total: int = 0
    skipped: list[str] = field(default_factory=list)  # logs that could not be read, and why


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` as a case-insensitive regular expression; a clear error when it is not one."""
    if not pattern.strip():
        raise InvalidArgument("pattern is empty: give a word or a regular expression")
    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.VERSION0)
    except regex.error as e:
        raise InvalidArgument(
            f"pattern {pattern!r} is not a regular expression ({e}); escape `(`, `[`, `*`, "
            "`+`, `?` and `\\` to match them as characters"
        ) from e


def _search(rx: regex.Pattern[str], text: str) -> Any:
    try:
        return rx.search(text, timeout=MATCH_SECONDS)
    except TimeoutError as e:
        raise InvalidArgument(
            f"pattern {rx.pattern!r} took over {MATCH_SECONDS:g} s on one text (it backtracks "
            "without end): make it simpler, e.g. words joined by `|`"
        ) from e


def _raw_bytes(raw: bytes) -> bytes:
    """A log's bytes with JSON's line breaks and tabs (`\\n`, `\\r`, `\\t`) as two spaces (the
    same length, so places stay the log's): a word that starts a line of a turn starts a word
    here too (`\\b`)."""
    for escaped in (b"\\n", b"\\r", b"\\t"):
        raw = raw.replace(escaped, b"  ")
    return raw


def _finder(pattern: str) -> Callable[[bytes], list[int] | None]:
    """The starts of a safe `pattern`'s matches in a log's bytes, case-insensitive: by RE2 (linear
    time, a DFA: a 44 MB log in about 0.1 s) when it takes the pattern, else by `regex` under the
    time limit (None when that ran out: every row may hold one)."""
    raw = pattern.encode("ascii")
    options = re2.Options()
    options.case_sensitive, options.never_capture, options.log_errors = False, True, False
    try:
        fast = re2.compile(raw, options)
    except re2.error:  # a lookaround or a back reference: RE2 has none
        slow = regex.compile(raw, regex.IGNORECASE | regex.VERSION0)

        def by_regex(data: bytes) -> list[int] | None:
            try:
                return [m.start() for m in slow.finditer(data, timeout=MATCH_SECONDS)]
            except TimeoutError:
                return None

        return by_regex
    return lambda data: [m.start() for m in fast.finditer(data)]


def _raw_holds(ws: Workspace, rx: regex.Pattern[str]) -> Callable[[dict[str, Any]], bool]:
    """Whether a row's archived log bytes may hold a match (True when they cannot tell: a
    reader not in PREFILTERED, or a pattern the escapes may hide). Each log is searched once a
    call, as bytes (a safe pattern is ASCII; where a letter outside ASCII is, bytes see more word
    boundaries, never fewer), and a row holds a match when one falls in its byte range."""
    if _RAW_UNSAFE.search(rx.pattern):
        return lambda row: True
    find = _finder(rx.pattern)
    bounded = "\\b" in rx.pattern  # a word boundary: JSON's escaped line breaks as spaces
    # a log's size and its matches' starts (None: unknown, every row may hold one)
    logs: dict[str, tuple[int, list[int] | None] | None] = {}

    def matches(name: str) -> tuple[int, list[int] | None] | None:
        try:
            data = (ws.root / name).read_bytes()
        except OSError:
            return None
        return len(data), find(_raw_bytes(data) if bounded else data)

    def holds(row: dict[str, Any]) -> bool:
        ref = row["raw_ref"]
        if row["source"] not in PREFILTERED:
            return True
        if ref["file"] not in logs:
            logs[ref["file"]] = matches(ref["file"])
        log = logs[ref["file"]]
        if log is None or log[0] < ref["byte_end"] or log[1] is None:
            return True  # gone or cut short (the parse says what is wrong), or not known
        k = bisect_left(log[1], ref["byte_start"])
        return k < len(log[1]) and log[1][k] < ref["byte_end"]

    return holds


def _window(line: str, start: int, end: int, width: int = WIDTH) -> str:
    """`line` within `width`, around its match at start..end (`…` where it was cut)."""
    line = line.strip()
    if len(line) <= width:
        return line
    offset = len(line) - len(line.lstrip())
    start, end = max(0, start - offset), max(0, end - offset)
    lo = max(0, min(start - (width - (end - start)) // 2, len(line) - width))
    cut = line[lo : lo + width]
    return ("…" if lo else "") + cut + ("…" if lo + width < len(line) else "")


def _texts(turn: Any, where: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(where, text) of a parsed turn, in reading order, for the parts asked."""
    if "user" in where:
        yield "user", joined(turn.user_text, turn.answers)
    if "answer" in where:
        yield "answer", turn.assistant_text or turn.synthetic_text
    if "thinking" in where:
        yield "thinking", turn.thinking
    for c in turn.tool_calls:
        if "input" in where:
            yield f"{c.name} in", plain_arguments(c.arguments)
        if "output" in where:
            out = c.output_text or str((c.result or {}).get("message", ""))
            yield f"{c.name} out", plain_output(tool_output(out))


def _matches(rx: regex.Pattern[str], text: str) -> Iterator[tuple[str, int, int]]:
    """Each line of `text` holding a match, once, with the match's place in it: the pattern runs
    over the whole text (a match never spans lines: each is searched within its line)."""
    lines = text.splitlines() if "\n" in text or "\r" in text else lines_of(text)
    if len(lines) == 1 or len(text) < 2000:
        for line in lines:
            if m := _search(rx, line):
                yield line, m.start(), m.end()
        return
    # a long text: one pass finds the lines worth searching, each then searched alone
    joined_ = "\n".join(lines)
    last = -1
    try:
        found = list(rx.finditer(joined_, timeout=MATCH_SECONDS))
    except TimeoutError:
        found = [_search(rx, joined_)]  # says what took too long
    for m in found:
        lo = joined_.rfind("\n", 0, m.start()) + 1
        if lo == last:
            continue
        last = lo
        hi = joined_.find("\n", lo)
        line = joined_[lo : hi if hi >= 0 else len(joined_)]
        if hit := _search(rx, line):  # within its line (a match across lines is none)
            yield line, hit.start(), hit.end()


# the secrets of turns searched lately, by the parsed turn (kept while the parse cache keeps it:
# a turn another grep of the call's agent finds again is not scanned again)
_SECRETS: dict[int, tuple[weakref.ref[Any], frozenset[str]]] = {}
_SECRETS_MAX = 4096


def _secrets(turn: Any, texts: list[str]) -> frozenset[str]:
    """The secret values anywhere in `turn` (its `texts`: every part), masked wherever they recur
    in a line shown; found once while the parsed turn lives."""
    held = _SECRETS.get(id(turn))
    if held is not None and held[0]() is turn:
        return held[1]
    known = secret_values(texts) if may_hold_secret("\x00".join(texts)) else frozenset()
    if len(_SECRETS) >= _SECRETS_MAX:
        _SECRETS.clear()
    _SECRETS[id(turn)] = (weakref.ref(turn), known)
    return known


# what makes two lines the same line: a `cat -n` number, a `key: ` of a tool's input, spacing
_SAME = regex.compile(r"^\s*(?:\d+→\s?)?(?:[\w-]+: )?")


def turn_lines(
    turn: Any,
    rx: regex.Pattern[str],
    where: Sequence[str],
    roots: Sequence[str],
    shown: set[str] | None = None,
    per_turn: int = PER_TURN,
) -> tuple[list[GrepLine], int, int]:
    """A parsed turn's matching lines (redacted, paths relative to `roots`), up to `per_turn`; how
    many more there are; and how many it holds that are already in `shown` (the lines of the
    turns before it, which it is added to: a file read again, an edit's unchanged line, a
    tool's echo of its input are said once)."""
    found: list[GrepLine] = []
    shown = set() if shown is None else shown
    seen: set[str] = set()
    repeated = 0
    texts = list(_texts(turn, where))
    known: frozenset[str] | None = None
    for part, text in texts:
        for line, start, end in _matches(rx, text) if text else ():
            if known is None:  # the turn's secrets, looked for once it has a match
                known = _secrets(turn, [t for _, t in _texts(turn, WHERE)])
            said = relative(redact(_window(line, start, end), known)[0], roots)
            same = " ".join(_SAME.sub("", said).split())
            if same in seen:
                continue
            seen.add(same)
            if same in shown:
                repeated += 1
                continue
            found.append(GrepLine(part, said))
    shown |= {" ".join(_SAME.sub("", x.text).split()) for x in found[:per_turn]}
    return found[:per_turn], max(0, len(found) - per_turn), repeated


def _scope(sessions: Sequence[str]) -> tuple[pl.Expr, bool]:
    """The rows `sessions` asks for (a session id or prefix, or a turn `SESSION:TURN`, a range
    `SESSION:A-B`), and whether each entry named turns (then every line of them is shown)."""
    asks, turns = [], True
    for entry in sessions:
        if len(entry) > ENTRY_MAX:
            raise InvalidArgument(
                f"a session id or turn is at most {ENTRY_MAX} characters; got {len(entry):,}"
            )
        if ":" not in entry:
            asks.append(pl.col("session_id").str.starts_with(entry))
            turns = False
            continue
        ref = parse_ref(entry)
        last = ref.turn if ref.last is None else ref.last
        asks.append(
            pl.col("session_id").str.starts_with(ref.session_id)
            & (pl.col("agent") == ref.agent)
            & pl.col("turn").is_between(ref.turn, last)
        )
    return pl.any_horizontal(asks), turns


def grep_turns(
    ws: Workspace,
    turns: pl.LazyFrame,
    pattern: str,
    sessions: Sequence[str] = (),
    where: Sequence[str] = WHERE,
    clock: Callable[[], float] = time.monotonic,
) -> GrepResult:
    """The turns of `ws` (its refined rows, `turns`) whose parts `where` hold a line matching
    `pattern`, oldest first; `sessions` (ids or prefixes, or turns: `SESSION:TURN`,
    `SESSION:A-B`) narrows them."""
    rx = compile_pattern(pattern)
    unknown = [w for w in where if w not in WHERE]
    if unknown or not where:
        raise InvalidArgument(f"where takes {', '.join(WHERE)}; got {', '.join(unknown) or 'none'}")
    cols = ["session_id", "agent", "turn", "started_at", "source", "user_text", "raw_ref"]
    frame, per_turn = turns.select(cols), PER_TURN
    if sessions:
        asked, by_turn = _scope(sessions)
        frame, per_turn = frame.filter(asked), TURN_LINES if by_turn else PER_TURN
    rows = frame.sort("started_at", "session_id", "agent", "turn", nulls_last=False).collect()
    if sessions and rows.height == 0:
        raise NotFound(
            f"no session or turn {', '.join(repr(clip(s, 60)) for s in sessions[:5])} in "
            f"workspace {ws.name}; "
            "list the sessions for their ids"
        )
    out = GrepResult(pattern, ws.name, total=rows.height)
    holds, until = _raw_holds(ws, rx), clock() + SEARCH_SECONDS
    shown: set[str] = set()  # the lines said so far, as `turn_lines` compares them
    bad: set[str] = set()
    for row in rows.iter_rows(named=True):
        if clock() > until:
            break
        out.searched += 1
        if not holds(row):
            continue
        turn = parse_turn(ws, row)
        if turn is None:
            bad.add(row["raw_ref"]["file"])
            continue
        lines, more, repeated = turn_lines(turn, rx, where, ws.paths, shown, per_turn)
        if lines or repeated:
            started = row["started_at"]
            out.turns.append(
                GrepTurn(
                    ws.id,
                    row["session_id"],
                    row["agent"],
                    row["turn"],
                    started.isoformat() if started else None,
                    clip(" ".join((row["user_text"] or "").split()), ASKED),
                    lines,
                    more,
                    repeated,
                )
            )
    out.skipped = [
        f"{Path(f).name}: its archived log is gone or holds no such turn" for f in sorted(bad)
    ]
    return out
