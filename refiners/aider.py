"""Reader for Aider (`<repo>/.aider.chat.history.md`, with `.aider.input.history` beside it).

Aider keeps its history in the repository (docs/formats.md, written by 0.86.2): Markdown,
appended to by every run. `# aider chat started at <local time>` opens a run; `#### <text>`
lines are the user's prompt (a turn opens); a line starting `> ` opens one of Aider's own
messages, which runs to the line that ends with two spaces (a Markdown line break: a commit
message spans lines, blank ones too); everything else is the model's answer. A turn ends
where the next prompt or run starts (completed: the history records no interruption).
`> Applied edit to <file>` is an edit the answer made (a tool call `edit` with `path`);
`> Tokens: 2.4k sent, 22 received.` is one model call's usage (as rounded as Aider shows it);
a `/run <cmd>` prompt is a shell call whose exit code the history does not record. The
prompts' times come from `.aider.input.history` (`# <local time>` then `+<line>`), matched
in order by their text; else the run's start time. The whole history file is one session
whose work dir is the repository.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

from .model import ParseResult, Step, ToolCall, Turn
from .sources import Discovery, Reader, SessionSource, SourceFile, register

SOURCE = "aider"
HISTORY = ".aider.chat.history.md"
INPUT_HISTORY = ".aider.input.history"
_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_VERSION = re.compile(r"^> Aider v(\S+)")
_TOKENS = re.compile(r"^> Tokens: ([\d.]+)(k?) sent, ([\d.]+)(k?) received")
_APPLIED = re.compile(r"^> Applied edit to (.+?)\s*$")
_SPECIAL = (b"#### ", b"# aider chat started at ", b"> ")  # lines that are not answer text
_SHELL = re.compile(r"^/(run|test)\s+(.*)$", re.S)


def _local(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()  # Aider writes local time, no zone
    except ValueError:
        return None


def _tokens(number: str, k: str) -> int:
    return int(float(number) * (1000 if k else 1))


def input_times(path: Path) -> list[tuple[float, str]]:
    """(time, prompt) of `.aider.input.history` (each prompt may be written twice)."""
    out: list[tuple[float, str]] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    ts: float | None = None
    text: list[str] = []
    for line in [*lines, "# end"]:
        if line.startswith("# "):
            if ts is not None and text:
                out.append((ts, "\n".join(text)))
            ts, text = _local(line[2:].strip()), []
        elif line.startswith("+"):
            text.append(line[1:])
    return out


class AiderTurnBuilder:
    def __init__(self, start_index: int, times: list[tuple[float, str]]) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.times = times
        self.used = 0
        self.run_start: float | None = None
        self.version: str | None = None
        self.in_prompt = False
        self.in_info = False
        self.header = False  # between a run's start line and its first prompt
        self.fast = False  # the next plain line only extends the current answer's text

    def _time_of(self, text: str) -> float | None:
        for k in range(self.used, len(self.times)):
            if self.times[k][1] == text:
                self.used = k + 1
                return self.times[k][0]
        return self.run_start

    def line(self, raw: str, start: int, end: int) -> None:
        text = raw.rstrip("\n")
        self.fast = False
        started = _STARTED.match(text) if text.startswith("# aider") else None
        if started:
            self._close()
            self.run_start = _local(started.group(1))
            self.in_prompt = self.in_info = False
            self.header = True
            return
        version = _VERSION.match(text) if text.startswith("> Aider v") else None
        if version:
            self.version = version.group(1)
        if text.startswith("#### "):
            prompt = text[5:].rstrip()
            if self.in_prompt and self.turns:
                self.turns[-1].user_text += "\n" + prompt
            else:
                self._open(prompt, start)
            self.turns[-1].byte_end = end
            self.header = False
            self.in_prompt = True
            return
        if self.in_prompt and self.turns:  # the prompt is complete: its time and shell call
            self._prompt_done(self.turns[-1])
        self.in_prompt = False
        if not self.turns or self.header:  # the run's banner belongs to no turn
            return
        cur = self.turns[-1]
        cur.byte_end = end
        if text.startswith("> ") or self.in_info:
            self.in_info = not text.endswith("  ")  # the message goes on to its line break
            self._info(cur, text)
        else:
            self.in_info = False
            if cur.steps and not cur.steps[-1].tool_calls:
                cur.steps[-1].text += raw
            elif text.strip():
                cur.steps.append(Step(n=len(cur.steps) + 1, text=raw))
            self.fast = bool(cur.steps) and not cur.steps[-1].tool_calls

    def extend(self, raw: bytes, end: int) -> None:
        """The fast path of `line` for a plain answer line (most of a history's bytes)."""
        cur = self.turns[-1]
        cur.steps[-1].text += raw.decode("utf-8", errors="replace")
        cur.byte_end = end

    def _open(self, prompt: str, start: int) -> None:
        self._close()
        self.turns.append(
            Turn(index=self.index, started_at=None, user_text=prompt, byte_start=start, legacy=True)
        )
        self.index += 1

    def _prompt_done(self, turn: Turn) -> None:
        turn.started_at = turn.last_at = self._time_of(turn.user_text)
        turn.origin = "command" if turn.user_text.startswith("/") else "user"
        shell = _SHELL.match(turn.user_text)
        if shell:
            call = ToolCall(
                id=f"aider-{turn.index}-run",
                name=shell.group(1),
                arguments=json.dumps({"command": shell.group(2)}),
                called_at=turn.started_at,
            )
            turn.steps.append(Step(n=len(turn.steps) + 1, tool_calls=[call]))

    def _info(self, cur: Turn, text: str) -> None:
        cur.synthetic_text += text.removeprefix("> ").rstrip() + "\n"
        tokens = _TOKENS.match(text) if text.startswith("> Tokens:") else None
        if tokens:
            cur.usage["input_other"] += _tokens(tokens.group(1), tokens.group(2))
            cur.usage["output"] += _tokens(tokens.group(3), tokens.group(4))
        applied = _APPLIED.match(text) if text.startswith("> Applied") else None
        if applied:
            call = ToolCall(
                id=f"aider-{cur.index}-edit-{len(cur.tool_calls)}",
                name="edit",
                arguments=json.dumps({"path": applied.group(1)}),
                result={"is_error": False, "message": "", "output": text[2:].rstrip()},
                called_at=cur.started_at,
                result_at=cur.started_at,
            )
            if not cur.steps or not cur.steps[-1].tool_calls:
                cur.steps.append(Step(n=len(cur.steps) + 1))
            cur.steps[-1].tool_calls.append(call)

    def _close(self) -> None:
        if self.in_prompt and self.turns:
            self._prompt_done(self.turns[-1])
            self.in_prompt = False
        if self.turns and self.turns[-1].end == "open":
            self.turns[-1].end, self.turns[-1].reason = "superseded", "completed"


def parse_wire(
    path: Path,
    start: int = 0,
    first_line: int = 1,
    start_index: int = 0,
    protocol: str | None = None,
    stop: int | None = None,
) -> ParseResult:
    """Parse an Aider chat history from byte `start` (a turn boundary) to `stop`."""
    builder = AiderTurnBuilder(start_index, input_times(path.parent / INPUT_HISTORY))
    pos, line_no = start, first_line  # after the last whole line read
    line_of_turn: dict[int, int] = {}
    with open(path, "rb") as fh:
        fh.seek(start)
        for raw in fh:
            if (stop is not None and pos >= stop) or not raw.endswith(b"\n"):
                break  # a line still being written is read next time
            end = pos + len(raw)
            if builder.fast and not raw.startswith(_SPECIAL):
                builder.extend(raw, end)
            elif builder.header and raw[:1] != b"#" and not raw.startswith(b"> Aider v"):
                pass  # a run's banner: no turn's
            else:
                before = len(builder.turns)
                builder.line(raw.decode("utf-8", errors="replace"), pos, end)
                if len(builder.turns) > before:
                    line_of_turn[builder.turns[-1].index] = line_no
            pos, line_no = end, line_no + 1
    if builder.in_prompt and builder.turns:
        builder._prompt_done(builder.turns[-1])
    turns = builder.turns
    for prev, turn in zip(turns, turns[1:], strict=False):  # no time: the one before it
        turn.started_at = turn.started_at if turn.started_at is not None else prev.started_at
    result = ParseResult(builder.version or protocol or "unknown", turns, complete_offset=pos)
    last = turns[-1] if turns else None
    if last is not None and last.end == "open":
        result.resume_offset, result.resume_line = last.byte_start, line_of_turn[last.index]
        result.resume_index = last.index
    else:
        result.resume_offset, result.resume_line = pos, line_no
        result.resume_index = last.index + 1 if last else start_index
    return result


# --- discovery ---------------------------------------------------------------------------------


def _session(history: Path) -> SessionSource:
    repo = history.parent.resolve()
    sid = "aider-" + hashlib.sha1(str(repo).encode()).hexdigest()[:16]
    source = SessionSource(
        SOURCE, sid, "aider", [str(repo)], None, repo, [SourceFile("main", HISTORY, history)]
    )
    if (repo / INPUT_HISTORY).is_file():  # the prompts' times, copied beside the archived history
        source.snapshots.append(SourceFile("main", INPUT_HISTORY, repo / INPUT_HISTORY))
    return source


def discover(path: Path) -> Discovery | None:
    """The Aider history of a repository (the repo folder or its history file), or None."""
    if path.is_file():
        return Discovery([_session(path)]) if path.name == HISTORY else None
    history = path / HISTORY
    return Discovery([_session(history)]) if history.is_file() else None


register(Reader(SOURCE, parse_wire, discover, "Aider", order=90))
