"""Read a JSONL log from a byte offset: records with their byte ranges, problems reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .model import ParseResult, Problem, Turn
from .sources import LINE_MAX, open_regular


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
            data = json.loads(text, strict=False)
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
        return data


_TAIL = object()


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


def field_dict(record: dict[str, Any], key: str) -> dict[str, Any]:
    """`record[key]` when it is an object, else an empty one: logs are not trusted to be well formed."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def field_list(record: dict[str, Any], key: str) -> list[Any]:
    """`record[key]` when it is a list, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def parse_time(value: Any) -> float | None:
    """An ISO-8601 timestamp ("…Z") or epoch milliseconds as epoch seconds."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0
    return None


def finish(
    turns: list[Turn],
    version: str,
    reader: LineReader,
    unknown: dict[str, int],
    line_of_turn: dict[int, int],
    start: int,
    first_line: int,
    start_index: int,
) -> ParseResult:
    """The ParseResult of a JSONL reader whose last turn may still grow: resume at its start."""
    result = ParseResult(
        protocol_version=version,
        turns=turns,
        problems=reader.problems,
        unknown_types=unknown,
        complete_offset=reader.complete_offset,
    )
    open_turn = next((t for t in turns if t.end == "open"), None)
    if open_turn is not None:
        result.resume_offset, result.resume_line = (
            open_turn.byte_start,
            line_of_turn[open_turn.index],
        )
        result.resume_index = open_turn.index
    elif turns:
        result.resume_offset, result.resume_line = reader.complete_offset, reader.next_line
        result.resume_index = turns[-1].index + 1
    else:
        result.resume_offset, result.resume_line, result.resume_index = (
            start,
            first_line,
            start_index,
        )
    return result
