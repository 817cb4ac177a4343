"""Every JSONL reader is its turn builder and its `discover` run by one loop (`lines.LogReader`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners import READERS, discover
from archive_mcp.refiners.disk import is_file
from archive_mcp.refiners.fields import field_dict, parse_time
from archive_mcp.refiners.lines import LogReader, Record, TurnBuilder, from_start, prompt_turn
from archive_mcp.refiners.model import ParseResult, Problem, ToolCall
from archive_mcp.refiners.sources import (
    Discovery,
    FileReader,
    SessionSource,
    SnapshotReader,
    SourceFile,
)


class ToyBuilder(TurnBuilder):
    """A format of `prompt` and `answer` records; an `answer` with a list for text raises."""

    def __init__(self, start_index: int = 0) -> None:
        self.turns: list[Any] = []
        self.unknown: dict[str, int] = {}
        self.version: str | None = None
        self.index = start_index

    def feed(self, record: Record) -> None:
        rec = record.data
        ts = parse_time(rec.get("timestamp"))
        if rec.get("type") == "prompt":
            text = str(field_dict(rec, "message").get("text") or "")
            self.turns.append(prompt_turn(self.index, ts, text, record.start, record.end))
            self.index += 1
        elif self.turns and rec.get("type") == "answer":
            self.turns[-1].synthetic_text += "".join(rec["text"].split())  # raises on a list
            if rec.get("done"):
                self.turns[-1].end = "ended"
        else:
            kind = str(rec.get("type"))
            self.unknown[kind] = self.unknown.get(kind, 0) + 1


def toy_discover(path: Path) -> Discovery | None:
    if not (is_file(path) and path.name.endswith(".toy.jsonl")):
        return None
    files = [SourceFile("main", path.name, path)]
    return Discovery([SessionSource("toy", path.stem, "", [], None, path.parent, files)])


TOY = LogReader("toy", "Toy", lambda path, index, protocol: ToyBuilder(index), toy_discover)
LINES = [
    b'{"type": "prompt", "message": {"text": "one"}, "timestamp": 1000}\n',
    b'{"type": "answer", "text": "a b", "done": true}\n',
    b"not json\n",
    b'{"type": "mystery"}\n',
    b'{"type": "prompt", "message": {"text": "/two"}}\n',
    b'{"type": "answer", "text": ["a list"]}\n',
    b'{"type": "answer", "text": "c"}\n',
]


def test_a_new_reader_is_its_builder_and_discover_and_the_loop_reads_resumes_and_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "s1.toy.jsonl"
    log.write_bytes(b"".join(LINES))
    monkeypatch.setitem(READERS, "toy", TOY)
    [session] = discover(log).sessions
    result = TOY.parse(log)
    assert (session.source, session.session_id) == ("toy", "s1.toy")
    assert [(t.index, t.user_text, t.origin, t.end, t.synthetic_text) for t in result.turns] == [
        (0, "one", "user", "ended", "ab"),
        (1, "/two", "command", "open", "c"),
    ]
    assert [(p.line, p.kind) for p in result.problems] == [(3, "malformed"), (6, "bad_record")]
    assert result.problems[1].error == "AttributeError: 'list' object has no attribute 'split'"
    assert result.unknown_types == {"mystery": 1}
    second = sum(map(len, LINES[:4]))
    assert (result.resume_offset, result.resume_line, result.resume_index) == (second, 5, 1)
    assert result.protocol_version == "unknown"
    resumed = TOY.parse(log, second, 5, 1, protocol="9")
    assert [(t.index, t.user_text) for t in resumed.turns] == [(1, "/two")]
    assert resumed.protocol_version == "9"


def test_every_reader_is_a_log_reader_a_snapshot_reader_or_aiders_file_reader() -> None:
    kinds = {name: type(reader).__name__ for name, reader in READERS.items()}
    assert kinds == {
        "aider": FileReader.__name__,
        "claude-code": "LogReader",
        "cline": SnapshotReader.__name__,  # JSON documents rewritten whole (Roo Code's, Kilo Code's)
        "codex": "LogReader",
        "continue": SnapshotReader.__name__,  # one JSON document a session
        "copilot": "LogReader",
        "copilot-chat": SnapshotReader.__name__,  # a JSON document, or a log of changes to one
        "crush": "LogReader",  # its sessions exported from SQLite as JSONL
        "cursor": "LogReader",  # its composers exported from SQLite as JSONL
        "cursor-cli": "LogReader",
        "droid": "LogReader",
        "gemini": "LogReader",
        "goose": "LogReader",
        "kilo": "LogReader",
        "kilo-code": SnapshotReader.__name__,
        "kimi": "LogReader",
        "kimi-code": "LogReader",
        "opencode": "LogReader",
        "pi": "LogReader",
        "qwen-code": "LogReader",
        "roo-code": SnapshotReader.__name__,
    }


def test_a_snapshot_reader_parses_the_whole_document_from_any_offset(tmp_path: Path) -> None:
    doc = tmp_path / "s1.json"
    doc.write_text('{"prompts": ["one", "two"]}', encoding="utf-8")

    def read(path: Path) -> ParseResult:
        prompts = json.loads(path.read_text(encoding="utf-8"))["prompts"]
        return ParseResult("json", [prompt_turn(i, None, p, 0) for i, p in enumerate(prompts)])

    reader = SnapshotReader("toy-doc", "Toy document", read, lambda path: None)
    whole = reader.parse(doc)
    assert [(t.index, t.user_text) for t in whole.turns] == [(0, "one"), (1, "two")]
    assert reader.parse(doc, 20, 1, 1, "v2", 25) == whole  # as ingest may call any reader
    assert reader.parse(doc, start=20, protocol="v2", stop=25) == whole


def test_a_whole_file_reader_reads_from_the_start_with_a_new_builder_each_time(
    tmp_path: Path,
) -> None:
    log = tmp_path / "s1.toy.jsonl"
    log.write_bytes(b"".join(LINES))
    whole = LogReader("toy", "Toy", from_start(ToyBuilder), toy_discover, whole=True)
    second = sum(map(len, LINES[:4]))
    result = whole.parse(log, second, 5, 1, protocol="9")
    assert [(t.index, t.user_text) for t in result.turns] == [(0, "one"), (1, "/two")]
    assert result == whole.parse(log, protocol="9")  # the protocol an earlier read found is kept
    made = from_start(ToyBuilder)
    assert made(log, 7, "9") is not made(log, 7, "9")


def test_a_file_not_the_readers_shape_is_one_malformed_problem_after_those_found_before() -> None:
    before = [Problem(1, "invalid_utf8", "byte 0xff")]
    result = ParseResult.malformed("no `messages` list", "v3", 120, before)
    assert (result.protocol_version, result.turns, result.complete_offset) == ("v3", [], 120)
    assert result.problems == [before[0], Problem(1, "malformed", "no `messages` list")]
    assert before == [Problem(1, "invalid_utf8", "byte 0xff")]
    assert ParseResult.malformed("unreadable") == ParseResult(
        "json", [], [Problem(1, "malformed", "unreadable")], complete_offset=0
    )


def test_a_turns_steps_are_numbered_in_order_and_keep_the_calls_list_given() -> None:
    turn = prompt_turn(0, None, "fix it", 0)
    calls: list[ToolCall] = []
    first = turn.add_step("looking", "the bug is in parse", calls)
    second = turn.add_step()
    calls.append(ToolCall("t1", "Read"))
    assert [(s.n, s.text, s.think) for s in turn.steps] == [
        (1, "looking", "the bug is in parse"),
        (2, "", ""),
    ]
    assert (first.tool_calls, second.tool_calls) == ([ToolCall("t1", "Read")], [])


def test_token_counts_add_up_and_one_that_is_not_an_integer_adds_nothing() -> None:
    turn = prompt_turn(0, None, "fix it", 0)
    turn.add_usage(100, 20, 5, 1)
    turn.add_usage("300", None, 7)  # a count as text, a missing one
    turn.add_usage(output=3)
    assert turn.usage == {
        "input_other": 100,
        "output": 23,
        "input_cache_read": 12,
        "input_cache_creation": 1,
    }
