"""Lines of past turns that match a regular expression, as grep over the raw logs finds them, in
time order, each under its turn: the user's words, the answers, the thinking, each tool call's
input (commands, files written, edits) and output. What search ranks is a turn's words; a detail
that lives in a tool's input or output (a commit, a file's content, an error) is found here.

Of more than FEW Claude Code turns, only those whose bytes in the archived log hold the words
every match needs are parsed (`grep_words`); a pattern that needs none, and every other reader's
turn, is parsed whatever its log holds. Lines are matched after their secrets are masked: a
pattern cannot tell, match by match, what a mask hides. The pattern runs under a time limit
(`regex`'s timeout): a pattern that backtracks without end is an error that says so, not a call
that never returns."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import polars as pl
import regex

from archive_mcp.errors import InvalidArgument, NotFound
from archive_mcp.refiners.answers import user_words
from archive_mcp.refiners.redact import may_hold_secret, redact, secret_values
from archive_mcp.refiners.text import clip
from archive_mcp.refs import parse_ref
from archive_mcp.search.grep_words import log_holds, reader
from archive_mcp.search.matching import lines_of
from archive_mcp.search.parsed import parse_turn
from archive_mcp.search.tool_text import plain_arguments, plain_output, relative, tool_output
from archive_mcp.workspaces import Workspace

Where = Literal["user", "answer", "thinking", "input", "output"]  # the parts of a turn searched
WHERE: tuple[Where, ...] = get_args(Where)
WIDTH = 140  # characters of a long line shown, around its match
PER_TURN = 4  # lines shown of one turn; the rest are counted ...
TURN_LINES = 40  # ... unless the turns were asked by reference (SESSION:TURN): all, up to this
MATCH_SECONDS = 2.0  # one pattern search's time limit
SEARCH_SECONDS = 30.0  # a whole call's: past it, the turns not searched are said
ASKED = 100  # characters of a turn's user words on its line
ENTRY_MAX = 200  # characters of one `sessions` entry
# the readers whose texts are their log's strings as they are, joined by line breaks (Codex
# joins a message's parts with nothing between: a word may be made across two of them)
PREFILTERED = frozenset({"claude-code"})
FEW = 8  # turns asked that are parsed without looking at their logs first


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

    pattern: str  # as asked, a secret in it masked
    space: str = ""  # the workspace's name
    turns: list[GrepTurn] = field(default_factory=list)
    searched: int = 0
    total: int = 0
    skipped: list[str] = field(default_factory=list)  # logs that could not be read, and why
    by_reference: bool = False  # every turn was asked as SESSION:TURN (all its lines are shown)


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` as a case-insensitive regular expression; a clear error when it is not one."""
    if not pattern.strip():
        raise InvalidArgument("pattern is empty: give a word or a regular expression")
    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.MULTILINE | regex.VERSION0)
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


def _window(line: str, start: int, end: int, width: int = WIDTH) -> str:
    """`line` within `width`, around its match at start..end (`…` where it was cut)."""
    offset = len(line) - len(line.lstrip())
    line = line.strip()
    if len(line) <= width:
        return line
    start, end = max(0, start - offset), max(0, end - offset)
    lo = max(0, min(start - (width - (end - start)) // 2, len(line) - width))
    cut = line[lo : lo + width]
    return ("…" if lo else "") + cut + ("…" if lo + width < len(line) else "")


def _texts(turn: Any, where: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(where, text) of a parsed turn, in reading order, for the parts asked."""
    if "user" in where:
        yield "user", user_words(turn)
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


def _lines(part: str, text: str) -> list[str]:
    """A part's lines: a one-line JSON text of a tool's (an edit's old and new text) by its
    escaped line breaks too; any other text by its own."""
    if part.endswith((" in", " out")) and "\n" not in text and text.lstrip()[:1] in ("{", "["):
        return lines_of(text)
    return text.splitlines()


# a pattern whose match in one line may be none in the whole text: a lookaround sees past the
# line, `\A` and `\Z` know only the text's ends
_LINE_ONLY = regex.compile(r"\(\?<?[=!]|\\[AZz]")


def _matches(rx: regex.Pattern[str], part: str, text: str, quick: bool) -> Iterator[str]:
    """The lines of `text` that hold a match. With `quick`, a text of several lines (real line
    breaks) that holds none as a whole (`^` and `$` at its lines' ends: MULTILINE) is passed
    over at once."""
    if quick and "\n" in text and "\r" not in text and _search(rx, text) is None:
        return
    for line in _lines(part, text):
        if _search(rx, line):
            yield line


# the secrets of turns searched lately, by the parsed turn (kept while the parse cache keeps it:
# a turn another grep of the call's agent finds again is not scanned again)
_SECRETS: dict[int, tuple[weakref.ref[Any], frozenset[str]]] = {}
_SECRETS_MAX = 4096


def _secrets(turn: Any) -> frozenset[str]:
    """The secret values anywhere in `turn` (every part, and each call's input as its JSON: a
    key names a value a secret), masked wherever they recur in a line shown; found once while
    the parsed turn lives."""
    held = _SECRETS.get(id(turn))
    if held is not None and held[0]() is turn:
        return held[1]
    texts = [t for _, t in _texts(turn, WHERE)] + [c.arguments for c in turn.tool_calls]
    known = secret_values(texts) if may_hold_secret("\x00".join(texts)) else frozenset()
    if len(_SECRETS) >= _SECRETS_MAX:
        _SECRETS.clear()
    _SECRETS[id(turn)] = (weakref.ref(turn), known)
    return known


# what two lines that are the same line differ by: spacing, a `cat -n` number of a tool's output,
# the `key: ` of a tool's input
_NUMBER = regex.compile(r"^\s*\d+→\s?")
_KEY = regex.compile(r"^\s*[\w-]+: ")


def _same(part: str, text: str) -> str:
    """`text` as lines are compared: a tool input's key and an output's line number left out."""
    if part.endswith(" in"):
        text = _KEY.sub("", text, count=1)
    elif part.endswith(" out"):
        text = _NUMBER.sub("", text, count=1)
    return " ".join(text.split())


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
    known: frozenset[str] | None = None
    quick = not _LINE_ONLY.search(rx.pattern)
    for part, text in _texts(turn, where):
        for line in _matches(rx, part, text, quick) if text else ():
            if known is None:  # the turn's secrets, looked for once it has a match
                known = _secrets(turn)
            masked = redact(line, known)[0]
            hit = _search(rx, masked)  # matched where no secret is
            if hit is None:
                continue
            said = relative(_window(masked, hit.start(), hit.end()), roots)
            same = _same(part, said)
            if same in seen:
                continue
            seen.add(same)
            if same in shown:
                repeated += 1
                continue
            found.append(GrepLine(part, said))
    shown |= {_same(x.where, x.text) for x in found[:per_turn]}
    return found[:per_turn], max(0, len(found) - per_turn), repeated


def _scope(sessions: Sequence[str]) -> tuple[pl.Expr, bool]:
    """The rows `sessions` asks for (a session id or prefix, or a turn `SESSION:TURN`, a range
    `SESSION:A-B`), and whether each entry named turns (then every line of them is shown)."""
    asks, turns = [], True
    for entry in sessions:
        if not entry.strip():
            raise InvalidArgument("a sessions entry is empty: give a session id, prefix or turn")
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
    sessions = (sessions,) if isinstance(sessions, str) else tuple(sessions)
    unknown = [w for w in where if w not in WHERE]
    if unknown or not where:
        raise InvalidArgument(f"where takes {', '.join(WHERE)}; got {', '.join(unknown) or 'none'}")
    cols = ["session_id", "agent", "turn", "started_at", "source", "user_text", "raw_ref"]
    frame, by_turn = turns.select(cols), False
    if sessions:
        asked, by_turn = _scope(sessions)
        frame = frame.filter(asked)
    per_turn = TURN_LINES if by_turn else PER_TURN
    rows = frame.sort("started_at", "session_id", "agent", "turn", nulls_last=False).collect()
    if sessions and rows.height == 0:
        raise NotFound(
            f"no session or turn {', '.join(repr(clip(s, 60)) for s in sessions[:5])} in "
            f"workspace {ws.name}; "
            "list the sessions for their ids"
        )
    # the pattern as the answer says it: a secret given as one is not echoed
    out = GrepResult(redact(pattern)[0], ws.name, total=rows.height, by_reference=by_turn)
    # a few turns asked are parsed at once; of more, those whose log holds the words needed
    few = rows.height <= FEW
    holds = None if few else log_holds(pattern, reader(ws.root))
    until = clock() + SEARCH_SECONDS
    shown: set[str] = set()  # the lines said so far, as `turn_lines` compares them
    bad: set[str] = set()
    for row in rows.iter_rows(named=True):
        if clock() > until:
            break
        out.searched += 1
        if holds is not None and row["source"] in PREFILTERED and not holds(row):
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
        f"{Path(f).name}: a turn could not be read back from its archived log" for f in sorted(bad)
    ]
    return out
