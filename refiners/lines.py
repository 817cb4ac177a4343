"""Read a JSONL log from a byte offset: records with their byte ranges, problems reported; the
one loop every JSONL reader runs, folding the records into turns with the reader's `TurnBuilder`.

A JSONL reader is its `TurnBuilder` and its `discover`, registered as a `LogReader`: the loop here
reads the lines, reports bad ones, resumes from an offset and says where the next read resumes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from .disk import LINE_MAX, open_regular
from .fields import arguments_text, valid_unicode
from .model import ParseResult, Problem, ToolCall, Turn
from .sources import Discovery


@dataclass
class Record:
    line: int  # 1-based line number in the file
    start: int  # byte offset of the line
    end: int  # byte offset just past the line (and its newline)
    data: dict[str, Any]


@dataclass
class LineReader:
    """Iterate the records of `path` from `start`; never raises on content.

    A last line with no newline that does not parse is a live file's unfinished tail: it is
    reported as `truncated_tail` and left for the next read (`complete_offset` stops before it).
    """

    path: Path
    start: int = 0
    first_line: int = 1
    stop: int | None = None  # read no further than this byte offset
    problems: list[Problem] = field(default_factory=list)
    complete_offset: int = 0
    next_line: int = 1  # the line number at `complete_offset`

    def __iter__(self) -> Iterator[Record]:
        pos = self.complete_offset = self.start
        no = self.next_line = self.first_line
        with open_regular(self.path) as fh:
            fh.seek(self.start)
            while raw := fh.readline(LINE_MAX + 1):
                if self.stop is not None and pos >= self.stop:
                    break
                complete = raw.endswith(b"\n")
                if len(raw) > LINE_MAX and not complete:  # an overlong line: never held whole
                    rest, ended = _skip_line(fh)
                    if not ended:
                        self.problems.append(
                            Problem(
                                no, "truncated_tail", f"unfinished line over {LINE_MAX:,} bytes"
                            )
                        )
                        break
                    self.problems.append(
                        Problem(no, "malformed", f"line over {LINE_MAX:,} bytes; not read")
                    )
                    end = pos + len(raw) + rest
                    self.complete_offset, self.next_line = end, no + 1
                    pos, no = end, no + 1
                    continue
                end = pos + len(raw)
                data = self._decode(raw, no, complete)
                if data is _TAIL:
                    break
                self.complete_offset, self.next_line = end, no + 1
                if data is not None:
                    yield Record(no, pos, end, data)
                pos = end
                no += 1

    def _decode(self, raw: bytes, no: int, complete: bool) -> Any:
        if len(raw) > 2 * ITEMS_MAX and (why := too_many_items(raw)) is not None:
            self.problems.append(Problem(no, "malformed" if complete else "truncated_tail", why))
            return None if complete else _TAIL
        try:  # fast path: valid UTF-8 and strict JSON, parsed straight from bytes
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if isinstance(data, dict):
                return data
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(no, "invalid_utf8", str(exc)))
            text = raw.decode("utf-8", errors="replace")
        if not text.strip():
            return None
        try:
            data, bad = valid_unicode(json.loads(text, strict=False))
        except RecursionError:
            self.problems.append(Problem(no, "malformed", "nested too deeply to read"))
            return None
        except ValueError as exc:
            if not complete:
                self.problems.append(Problem(no, "truncated_tail", str(exc)))
                return _TAIL
            self.problems.append(Problem(no, "malformed", str(exc)))
            return None
        if not isinstance(data, dict):
            self.problems.append(
                Problem(no, "malformed", f"expected a JSON object, got {type(data).__name__}")
            )
            return None
        if bad:
            self.problems.append(
                Problem(
                    no, "invalid_unicode", f"{bad} string(s) with a lone surrogate: {_SURROGATES}"
                )
            )
        return data


_TAIL = object()

# Values one parsed record may hold: parsed, each takes 50-150 bytes (a 60 MB line of `{},` would
# take 2 GB), so a record past this is reported and not parsed. A value takes 2 bytes at least
# (`1,`), so a line under 2 * ITEMS_MAX bytes is never counted.
ITEMS_MAX = 1_000_000
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, unrolled: fast in `re`


def too_many_items(raw: bytes) -> str | None:
    """Why the JSON text `raw` is not parsed (over ITEMS_MAX values, counted by the commas
    outside its strings), None when it may be."""
    commas = raw.count(b",")
    if commas < ITEMS_MAX:
        return None
    strings = (raw.count(b'"') - raw.count(b'\\"')) // 2  # each a value too
    if strings < ITEMS_MAX:  # else too many already; else the commas outside the strings
        commas = _STRING.sub(b"", raw).count(b",")
        if commas < ITEMS_MAX:
            return None
    values = max(commas + 1, strings)
    return f"{values:,} values, over the {ITEMS_MAX:,} a record may hold; not read"


_SURROGATES = "each replaced with U+FFFD (a CLI cut a string inside a character)"


def _skip_line(fh: Any) -> tuple[int, bool]:
    """Read past the rest of the current line in bounded chunks: the bytes skipped, and whether
    the line ended with a newline (False: the file ended first)."""
    n = 0
    while chunk := fh.readline(1 << 20):
        n += len(chunk)
        if chunk.endswith(b"\n"):
            return n, True
    return n, False


def complete_prefix(path: Path, start: int, size: int) -> int:
    """The largest offset <= `size` such that bytes [start, offset) are whole lines.

    A last line without a newline counts as whole when it parses (a finished file with no
    trailing newline); otherwise it is a live write in progress and is left out.
    """
    if size <= start:
        return start
    with open_regular(path) as fh:
        # Scan back for the last newline in blocks; lines can be many MB.
        block = 1 << 16
        end = size
        while end > start:
            begin = max(start, end - block)
            fh.seek(begin)
            chunk = fh.read(end - begin)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                last_nl = begin + nl + 1
                break
            end = begin
        else:
            last_nl = start
        if last_nl == size:
            return size
        if size - last_nl > LINE_MAX:  # an unfinished tail this long is never decoded whole
            return last_nl
        fh.seek(last_nl)
        tail = fh.read(size - last_nl)
    try:
        json.loads(tail.decode("utf-8", errors="replace"), strict=False)
    except RecursionError:
        return size  # a finished line nested too deeply to read: the reader reports it
    except ValueError:
        return last_nl
    return size


class TurnBuilder(Protocol):
    """Folds one agent's records into turns: what a JSONL reader is, beside its `discover`.

    A builder may subclass this protocol for its do-nothing `end`.
    """

    turns: list[Turn]  # a record that opens a turn appends it (or inserts it) here
    unknown: dict[str, int]  # record types this reader does not know: how many of each
    version: str | None  # the format or CLI version the records name, when they do

    def feed(self, record: Record) -> object:
        """Fold one record; what it returns is not used."""
        ...

    def end(self) -> None:
        """The part of the file read ends: fold what was held back for it (nothing, by default)."""
        return None


class CallsBuilder(TurnBuilder):
    """A builder's usual state: the turns, the next turn's index, unknown record types, the
    version, and the calls of the current turn by id (Pi, Copilot CLI, Droid)."""

    def __init__(self, start_index: int = 0) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.unknown: dict[str, int] = {}
        self.version: str | None = None
        self.calls: dict[str, ToolCall] = {}

    def open(self, text: str, at: float | None, record: Record, origin: str | None = None) -> Turn:
        """The turn a prompt opens (`add`)."""
        return self.add(prompt_turn(self.index, at, text, record.start, record.end, origin=origin))

    def add(self, turn: Turn) -> Turn:
        """`turn`, numbered `index`, the next turn: a turn still open before it was superseded,
        and no call waits for its result any more."""
        if self.turns and self.turns[-1].end == "open":
            self.turns[-1].end = "superseded"
        self.turns.append(turn)
        self.index += 1
        self.calls = {}
        return turn

    def unknown_type(self, kind: str) -> None:
        self.unknown[kind] = self.unknown.get(kind, 0) + 1


def prompt_turn(
    index: int,
    at: float | None,
    text: str,
    start: int,
    end: int | None = None,
    *,
    media: list[dict[str, Any]] | None = None,
    origin: str | None = None,
    legacy: bool = True,
) -> Turn:
    """The turn a prompt opens at byte `start` (its bytes and time so far end at `end`, when
    given); its origin is "command" for a slash command unless `origin` is given."""
    turn = Turn(
        index=index,
        started_at=at,
        user_text=text,
        user_media=[] if media is None else media,
        origin=origin or ("command" if text.startswith("/") else "user"),
        byte_start=start,
        legacy=legacy,
    )
    if end is not None:
        turn.byte_end, turn.last_at = end, at
    return turn


def tool_call(part: dict[str, Any], args: Any, at: float | None) -> ToolCall:
    """A call from the part of a message that names its `id` and `name`, with its arguments."""
    return ToolCall(
        id=str(part.get("id") or ""),
        name=str(part.get("name") or ""),
        arguments=arguments_text(args),
        called_at=at,
    )


# What a builder may raise on a record of an unexpected shape: the record is reported, the rest read.
RECORD_ERRORS = (TypeError, ValueError, AttributeError, KeyError, OverflowError, RecursionError)

Builder = Callable[[Path, int, str | None], TurnBuilder]  # (path, start_index, protocol)


def from_start(make: Callable[[], TurnBuilder]) -> Builder:
    """The `Builder` of a format whose files are read whole (`LogReader.whole`: an export made
    again from a store, a document rewritten in place): a new `make()` for each file, the turn
    index and protocol of an earlier read unused."""
    return lambda path, start_index, protocol: make()


@dataclass(frozen=True)
class LogReader:
    """A JSONL agent format (a `Reader`): a builder for each file and how to find its sessions."""

    source: str
    label: str  # for people: "Claude Code"
    builder: Builder
    discover: Callable[[Path], Discovery | None]  # None when `path` is not shaped like this agent's
    order: int = 50  # discovery tries readers by ascending order (the most specific shapes first)
    default_protocol: str = (
        "unknown"  # the version when neither the records nor the caller name one
    )
    whole: bool = False  # read from the start every time (offsets ignored, no resume point)
    # a parser for this agent's files that are not JSONL (not named `.jsonl`): (path, stop)
    other: Callable[[Path, int | None], ParseResult] | None = None

    def parse(
        self,
        path: Path,
        start: int = 0,
        first_line: int = 1,
        start_index: int = 0,
        protocol: str | None = None,
        stop: int | None = None,
    ) -> ParseResult:
        """Parse one log from byte `start` (a turn boundary, line `first_line`, the turn numbered
        `start_index`) to `stop`; `protocol` is the version an earlier parse of it found."""
        if self.other is not None and path.suffix != ".jsonl":
            return self.other(path, stop)
        if self.whole:
            start, first_line, start_index = 0, 1, 0
        reader = LineReader(path, start=start, first_line=first_line, stop=stop)
        builder = self.builder(path, start_index, protocol)
        line_at: dict[int, int] = {}  # the byte offset of each record that opened a turn: its line
        for rec in reader:
            opened = len(builder.turns)
            try:
                builder.feed(rec)
            except RECORD_ERRORS as exc:
                reader.problems.append(
                    Problem(rec.line, "bad_record", f"{type(exc).__name__}: {exc}"[:200])
                )
            if len(builder.turns) > opened:
                line_at[rec.start] = rec.line
        builder.end()
        result = ParseResult(
            protocol_version=builder.version or protocol or self.default_protocol,
            turns=builder.turns,
            problems=reader.problems,
            unknown_types=builder.unknown,
            complete_offset=reader.complete_offset,
        )
        if not self.whole:
            _resume(result, reader, line_at, start, first_line, start_index)
        return result


def _resume(
    result: ParseResult,
    reader: LineReader,
    line_at: dict[int, int],
    start: int,
    first_line: int,
    start_index: int,
) -> None:
    """Where the next read of a growing log starts: its open turn, else its last turn. A complete
    last turn is read again with the next one (`summary.rejected_by_user`: the next request may
    turn down what it proposed), so a followed session ends refined as one read whole."""
    turns = result.turns
    again = next((t for t in turns if t.end == "open"), turns[-1] if turns else None)
    if again is not None and again.byte_start in line_at:
        result.resume_offset = again.byte_start
        result.resume_line = line_at[again.byte_start]
        result.resume_index = again.index
    elif turns:
        result.resume_offset, result.resume_line = reader.complete_offset, reader.next_line
        result.resume_index = turns[-1].index + 1
    else:
        result.resume_offset, result.resume_line, result.resume_index = (
            start,
            first_line,
            start_index,
        )
