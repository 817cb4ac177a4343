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

Parsing goes by blocks, not lines (a history is mostly short lines): regex searches find the
prompt and run-start lines; between them, a run of answer lines is taken whole up to the next
`> ` line, and Aider's messages whole up to the line that ends the last of them.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path

from .model import ParseResult, Problem, Step, ToolCall, Turn
from .sources import Discovery, FileReader, SessionSource, SourceFile, register

SOURCE = "aider"
HISTORY = ".aider.chat.history.md"
INPUT_HISTORY = ".aider.input.history"
_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_VERSION = re.compile(r"^> Aider v(\S+)")
_TOKENS = re.compile(r"^> Tokens: ([\d.]+)(k?) sent, ([\d.]+)(k?) received")
_APPLIED = re.compile(r"^> Applied edit to (.+?)\s*$")
# Lines found by what follows a newline (a `^` search under re.M is ~8x slower: it tries every
# position), the file's first line checked on its own:
_PROMPT_OR_START = (b"#### ", b"# aider chat started at ")
_STRUCTURE = re.compile(rb"\n(?:#### |# aider chat started at )")
_SHELL = re.compile(r"^/(run|test)\s+(.*)$", re.S)
# The end of the last of back-to-back messages: a line break not followed by another message.
_MESSAGES_END = re.compile(rb"  \n(?!> )")
# An input-history entry of one prompt line: `# <time>`, `+<prompt>` and blank lines, up to the
# next entry or the end (in the history's lines joined by `\n`).
_ONE_LINE_ENTRY = re.compile(r"\n# ([^\n]*)\n\+([^\n]*)\n*(?=\n# |\Z)")
# A usage or an edit line (read by `_TOKENS` and `_APPLIED`), found after its newline.
_MARKS = re.compile(rb"\n> (Tokens:|Applied)")


def _local(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()  # Aider writes local time, no zone
    except ValueError:
        return None


def _one_key(key: str, value: str) -> str:
    """`json.dumps({key: value})`, byte for byte, without the encoder's set-up (per turn)."""
    return f'{{"{key}": {_quote(value)}}}'


def _tokens(number: str, k: str) -> int | None:
    """A token count as Aider rounds it (`2.4k`), or None for digits that are no number."""
    try:
        return int(float(number) * (1000 if k else 1))
    except (ValueError, OverflowError):  # `1.2.3`, `.`; a float too large for an int
        return None


def _line(data: bytes, at: int) -> str:
    """The line of `data` that starts at `at`, decoded, without its newline."""
    return data[at : data.index(b"\n", at)].decode("utf-8", errors="replace")


def input_times(path: Path) -> tuple[list[str], list[str]]:
    """The local times as written and the prompts of `.aider.input.history` (`# <time>` then
    `+<line>`s), side by side: no tuple per entry, fewer objects for the garbage collector. A
    prompt may be written twice. A time is read (`_local`) only when a prompt matches."""
    whens: list[str] = []
    prompts: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return whens, prompts
    joined = "\n" + "\n".join(lines)  # the same lines, each after a `\n`
    simple = _ONE_LINE_ENTRY.findall(joined)
    if len(simple) == joined.count("\n# "):  # every entry one prompt line (as Aider writes): in C
        return [when.strip() for when, _ in simple], [prompt for _, prompt in simple]
    # Split at the lines that start with `# `; the first piece comes before any time.
    for entry in joined.split("\n# ")[1:]:
        head, _, rest = entry.partition("\n")
        one = rest.rstrip("\n")
        if "\n" not in one:  # one prompt line (or none): the common case, without a loop
            text = one[1:] if one.startswith("+") else None
        else:
            kept = [line[1:] for line in rest.split("\n") if line.startswith("+")]
            text = "\n".join(kept) if kept else None
        if text is not None:
            whens.append(head.strip())
            prompts.append(text)
    return whens, prompts


class AiderTurnBuilder:
    """Turns from the blocks of a history: `prompt` and `start_run` for those lines, `between`
    for the lines between them. Its state is in slots and each block is searched in C where it
    can be: a genuine turn is ~820 bytes, so the cost per turn is the cost per byte
    (bench/results/readers.md)."""

    __slots__ = (
        "turns",
        "index",
        "whens",
        "prompts",
        "used",
        "run_start",
        "in_prompt",
        "in_info",
        "header",
    )

    def __init__(self, start_index: int, times: tuple[list[str], list[str]]) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.whens, self.prompts = times
        self.used = 0
        self.run_start: str | None = None  # the run's local start time, as written
        self.in_prompt = False  # the last line read was a prompt line
        self.in_info = False  # an Aider message goes on (no line ending in two spaces yet)
        self.header = False  # between a run's start line and its first prompt

    def _time_of(self, text: str) -> float | None:
        """The time of the next input-history entry with this prompt and a readable time; else
        the run's start."""
        k = self.used
        while True:
            try:
                k = self.prompts.index(text, k) + 1  # the list's own search, not a Python loop
            except ValueError:
                break
            ts = _local(self.whens[k - 1])
            if ts is not None:
                self.used = k
                return ts
        return None if self.run_start is None else _local(self.run_start)

    def start_run(self, when: str) -> None:
        """A `# aider chat started at` line: the turn before it ends; a banner follows."""
        self._close()
        self.run_start = when
        self.in_info = False
        self.header = True

    def prompt(self, prompt: str, start: int, end: int) -> None:
        """A `#### ` line (`prompt`: its text): a turn opens, or the prompt of the turn just
        opened goes on (a prompt of many lines)."""
        if not (self.in_prompt and self.turns):
            self._close()
            turn = Turn(
                index=self.index, started_at=None, user_text=prompt, byte_start=start, legacy=True
            )
            self.turns.append(turn)
            self.index += 1
        else:
            turn = self.turns[-1]
            turn.user_text += "\n" + prompt
        turn.byte_end = end
        self.header = False
        self.in_prompt = True

    def between(self, data: bytes, pos: int, end: int, base: int) -> None:
        """The lines `data[pos:end]` between two prompt or run-start lines (`base`: where `data`
        starts in the file): answer text and Aider's messages of the current turn, or a banner."""
        if pos >= end:
            return
        turns = self.turns
        if self.in_prompt:  # the prompt is complete: its time and shell call
            self.in_prompt = False
            if turns:
                self._prompt_done(turns[-1])
        if not turns or self.header:  # the run's banner belongs to no turn
            return
        cur = turns[-1]
        cur.byte_end = base + end
        # Messages and answer lines alternate: a run of answer lines ends at a message line, and
        # a run of messages at a line that starts none.
        if self.in_info or data.startswith(b"> ", pos):
            pos = self._messages(cur, data, pos, end)
        while pos < end:
            pos = self._answer(cur, data, pos, end)
            if pos < end:
                pos = self._messages(cur, data, pos, end)

    def _messages(self, cur: Turn, data: bytes, pos: int, end: int) -> int:
        """Aider's messages from `pos`, back to back: each runs to its line that ends with two
        spaces (a Markdown line break); the last may go on past `end`. Returns where they end."""
        last = _MESSAGES_END.search(data, pos, end)
        stop = last.end() if last else end
        self.in_info = last is None
        lines = data[pos:stop].decode("utf-8", errors="replace").split("\n")
        lines.pop()  # after the last newline
        kept = [text.removeprefix("> ").rstrip() for text in lines]  # one line at least
        cur.synthetic_text += "\n".join(kept) + "\n"
        # The usage and edit lines, found by one byte search from the newline before `pos` (a
        # prompt line precedes every turn's text, so `pos >= 1`).
        for mark in _MARKS.finditer(data, pos - 1, stop):
            if mark.group(1) == b"Tokens:":
                self._usage(cur, _line(data, mark.start() + 1))
            else:
                self._edit(cur, _line(data, mark.start() + 1))
        return stop

    def _answer(self, cur: Turn, data: bytes, pos: int, end: int) -> int:
        """Answer lines from `pos` to the next message: the text of the turn's last step, or of a
        new one (blank lines before its first text dropped). Returns where they end."""
        found = data.find(b"\n> ", pos, end)  # the line at `pos` is no message
        stop = found + 1 if found >= 0 else end
        text = data[pos:stop].decode("utf-8", errors="replace")
        steps = cur.steps
        if not steps or steps[-1].tool_calls:
            body = text.lstrip()  # white space in Unicode's sense, as `str.strip` sees a blank line
            if not body:
                return stop
            if len(body) < len(text):  # from the start of the first line that is not blank
                text = text[text.rfind("\n", 0, len(text) - len(body)) + 1 :]
            steps.append(Step(n=len(steps) + 1))
        steps[-1].text += text
        return stop

    def _prompt_done(self, turn: Turn) -> None:
        turn.started_at = turn.last_at = self._time_of(turn.user_text)
        if turn.user_text.startswith("/"):
            turn.origin = "command"
            shell = _SHELL.match(turn.user_text)
            if shell:
                call = ToolCall(
                    id=f"aider-{turn.index}-run",
                    name=shell.group(1),
                    arguments=_one_key("command", shell.group(2)),
                    called_at=turn.started_at,
                )
                turn.add_step(calls=[call])

    @staticmethod
    def _usage(cur: Turn, text: str) -> None:
        """The usage a `> Tokens:` line records, added to the turn's; none when its digits make
        no count (`1.2.3k`, 400 digits): one odd line must not lose the whole history."""
        tokens = _TOKENS.match(text)
        sent = _tokens(tokens.group(1), tokens.group(2)) if tokens else None
        received = _tokens(tokens.group(3), tokens.group(4)) if tokens else None
        if sent is not None and received is not None:
            cur.add_usage(sent, received)

    @staticmethod
    def _edit(cur: Turn, text: str) -> None:
        """The edit a `> Applied` line records: a call in the last step that has calls."""
        applied = _APPLIED.match(text)
        if applied:
            call = ToolCall(
                id=f"aider-{cur.index}-edit-{len(cur.tool_calls)}",
                name="edit",
                arguments=_one_key("path", applied.group(1)),
                result={"is_error": False, "message": "", "output": text[2:].rstrip()},
                called_at=cur.started_at,
                result_at=cur.started_at,
            )
            steps = cur.steps
            if not steps or not steps[-1].tool_calls:
                steps.append(Step(n=len(steps) + 1))
            steps[-1].tool_calls.append(call)

    def _close(self) -> None:
        """The turn before a run's start or a new prompt ends (its prompt complete first)."""
        turns = self.turns
        if not turns:
            return
        last = turns[-1]
        if self.in_prompt:
            self._prompt_done(last)
            self.in_prompt = False
        if last.end == "open":
            last.end, last.reason = "superseded", "completed"


def _whole_lines(data: bytes, stop: int | None) -> int:
    """Where the lines to read end: the whole lines of `data` (a line still being written is read
    next time) that start before `stop`."""
    limit = data.rfind(b"\n") + 1
    if stop is None:
        return limit
    if stop <= 0:
        return 0
    end = data.find(b"\n", stop - 1)
    return limit if end < 0 else min(limit, end + 1)


def _line_starts(data: bytes, limit: int) -> list[int]:
    """The offsets of the prompt and run-start lines of `data[:limit]` (and of lines that only
    look like run starts): a search for a newline followed by one of them."""
    found = [m.start() + 1 for m in _STRUCTURE.finditer(data, 0, limit)]
    return [0, *found] if data.startswith(_PROMPT_OR_START, 0, limit) else found


def _version(data: bytes, limit: int) -> str | None:
    """The version the last `> Aider v…` line before `limit` names (searched from the end)."""
    end = limit
    while end > 0:
        at = data.rfind(b"\n> Aider v", 0, end) + 1  # 0: none after a newline
        if at == 0 and not data.startswith(b"> Aider v"):
            return None
        named = _VERSION.match(data[at : data.index(b"\n", at)].decode("utf-8", errors="replace"))
        if named:
            return named.group(1)
        end = at - 1
    return None


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
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read()
    limit = _whole_lines(data, None if stop is None else stop - start)
    pos = 0  # after the last block read, in data
    for at in _line_starts(data, limit):
        nl = data.index(b"\n", at) + 1
        if not data.startswith(b"#### ", at):  # a run's start, or a line that only looks so
            started = _STARTED.match(data[at:nl].decode("utf-8", errors="replace"))
            if started:
                builder.between(data, pos, at, start)
                pos = nl
                builder.start_run(started.group(1))
            continue
        builder.between(data, pos, at, start)
        pos = nl
        prompt = data[at + 5 : nl].decode("utf-8", errors="replace").rstrip()
        builder.prompt(prompt, start + at, start + nl)
    builder.between(data, pos, limit, start)
    pos = start + limit
    if builder.in_prompt and builder.turns:
        builder._prompt_done(builder.turns[-1])
    turns = builder.turns
    for prev, turn in zip(turns, turns[1:], strict=False):  # no time: the one before it
        turn.started_at = turn.started_at if turn.started_at is not None else prev.started_at
    version = _version(data, limit)
    result = ParseResult(version or protocol or "unknown", turns, complete_offset=pos)
    try:  # the text was read with each bad byte replaced: say where the first one is
        data[:limit].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        result.problems.append(Problem(line, "invalid_utf8", f"{exc.reason}; replaced with U+FFFD"))
    last = turns[-1] if turns else None
    if last is not None and last.end == "open":
        result.resume_offset, result.resume_line = (
            last.byte_start,
            first_line + data.count(b"\n", 0, last.byte_start - start),
        )
        result.resume_index = last.index
    else:
        result.resume_offset, result.resume_line = pos, first_line + data.count(b"\n", 0, limit)
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


register(FileReader(SOURCE, parse_wire, discover, "Aider", order=90))
