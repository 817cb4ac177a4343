"""The two Kimi readers reproduce the fixtures turn by turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from archive_mcp.refiners import discover, kimi_cli, kimi_code
from archive_mcp.refiners.lines import LineReader, complete_prefix
from expected import result_json, turn_json
from hypothesis import given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "kimi" / "EXPECTED_turns.json").read_text(encoding="utf-8"))
CODE_WIRE = next((FIXTURES / "kimi-code").glob("sessions/*/*/agents/main/wire.jsonl"))


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_python_kimi_reader_reproduces_expected_turns(rel: str) -> None:
    got = result_json(kimi_cli.parse_wire(FIXTURES / "kimi" / rel))
    want = EXPECTED[rel]
    assert got["protocol_version"] == want["protocol_version"]
    assert got["problems"] == want["problems"]
    assert len(got["turns"]) == len(want["turns"])
    for g, w in zip(got["turns"], want["turns"], strict=True):
        assert g == w, f"turn {w['index']} differs"


def test_legacy_file_without_header_reads_as_protocol_1_1_and_marks_superseded_turns() -> None:
    rel = (
        "sessions/dc8fa21d3e61040ad8305bf8ed3081c5/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/wire.jsonl"
    )
    result = kimi_cli.parse_wire(FIXTURES / "kimi" / rel)
    assert [t.end for t in result.turns] == ["superseded", "superseded", "open"]
    assert [t.status for t in result.turns] == ["completed", "interrupted", "open"]
    assert result.turns[1].tool_calls[0].approval == "reject"


def test_subagent_events_build_nested_turns_and_keep_usage_apart() -> None:
    rel = (
        "sessions/dc8fa21d3e61040ad8305bf8ed3081c5/6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f/wire.jsonl"
    )
    turn = kimi_cli.parse_wire(FIXTURES / "kimi" / rel).turns[0]
    assert list(turn.subagents) == ["a4f9c2e71"]
    sub_file = FIXTURES / "kimi" / rel.replace("wire.jsonl", "subagents/a4f9c2e71/wire.jsonl")
    own = kimi_cli.parse_wire(sub_file).turns
    assert turn_json(turn.subagents["a4f9c2e71"].turns[0]) == turn_json(own[0])
    assert turn.usage["input_cache_read"] == 9280  # parent steps only


def test_typescript_kimi_reader_folds_loop_events_into_turns() -> None:
    result = kimi_code.parse_wire(CODE_WIRE)
    assert result.protocol_version == "1.5"
    assert [(t.index, t.end, t.status) for t in result.turns] == [
        (0, "ended", "completed"),
        (1, "ended", "cancelled"),
        (2, "open", "open"),
    ]
    first = result.turns[0]
    assert first.user_text == "Why is the login form submitting twice?"
    assert first.thinking == "Likely both an onSubmit handler and a button onClick fire."
    assert first.final_text.startswith("`handleLogin` is bound twice")
    call = first.tool_calls[0]
    assert (call.name, call.args, call.status) == (
        "Grep",
        {"pattern": "onSubmit|handleLogin", "path": "src/pages"},
        "ok",
    )
    assert first.usage == {
        "input_other": 2392,
        "output": 118,
        "input_cache_read": 14464,
        "input_cache_creation": 0,
    }
    assert result.turns[1].steps[0].interrupted
    assert [p.kind for p in result.problems] == ["truncated_tail"]
    assert result.unknown_types == {}


def test_typescript_reader_counts_unknown_record_types_and_handles_steer_undo(
    tmp_path: Path,
) -> None:
    wire = tmp_path / "wire.jsonl"
    records = [
        {"type": "metadata", "protocol_version": "1.5", "created_at": 1},
        {
            "type": "turn.prompt",
            "input": [{"type": "text", "text": "重构数据加载器"}],
            "origin": {"kind": "user"},
            "time": 1000,
        },
        {
            "type": "turn.steer",
            "input": [{"type": "text", "text": "也检查一下 num_workers"}],
            "time": 1500,
        },
        {"type": "brand.new.thing", "x": 1, "time": 1600},
        {"type": "context.apply_compaction", "summary": "s", "compactedCount": 3, "time": 1700},
        {"type": "turn.ended", "turnId": 0, "reason": "failed", "time": 2000},
        {"type": "context.undo", "time": 2100},
    ]
    wire.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    result = kimi_code.parse_wire(wire)
    (turn,) = result.turns
    assert turn.steer_inputs == ["也检查一下 num_workers"]
    assert turn.compactions == 1
    assert turn.status == "error"
    assert result.unknown_types == {"brand.new.thing": 1}
    assert turn.started_at == 1.0 and turn.ended_at == 2.0


def test_python_reader_skips_unknown_types_and_reports_malformed_middle_lines(
    tmp_path: Path,
) -> None:
    wire = tmp_path / "wire.jsonl"
    wire.write_bytes(
        b'{"type": "metadata", "protocol_version": "1.10"}\n'
        b'{"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": "hi"}}}\n'
        b'{"timestamp": 1.1, "message": {"type": "FutureThing", "payload": {}}}\n'
        b"not json at all\n"
        b'{"timestamp": 1.2, "message": {"type": "StepBegin", "payload": {"n": 1}}}\n'
        b'{"timestamp": 1.3, "message": {"type": "ContentPart", "payload": {"type": "text", "text": "caf\xc3\xa9 \xff"}}}\n'
        b'{"timestamp": 1.4, "message": {"type": "TurnEnd", "payload": {}}}\n'
    )
    result = kimi_cli.parse_wire(wire)
    assert result.unknown_types == {"FutureThing": 1}
    assert [(p.line, p.kind) for p in result.problems] == [(4, "malformed"), (6, "invalid_utf8")]
    assert result.turns[0].final_text == "café \ufffd"
    assert result.turns[0].end == "ended"


def test_discover_detects_each_layout_and_rejects_other_directories(tmp_path: Path) -> None:
    session = (
        FIXTURES
        / "kimi/sessions/dc8fa21d3e61040ad8305bf8ed3081c5/6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"
    )
    assert len(discover(FIXTURES / "kimi").sessions) == 4
    assert len(discover(FIXTURES / "kimi" / "sessions").sessions) == 4
    one = discover(session).sessions
    assert [(s.session_id, [f.agent for f in s.files]) for s in one] == [
        ("6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f", ["main", "a4f9c2e71"])
    ]
    assert one[0].work_dirs == ["/home/alice/projects/webapp", "/home/alice/projects/ml-pipeline"]
    code = discover(FIXTURES / "kimi-code").sessions
    assert [(s.source, s.work_dirs, s.title) for s in code] == [
        ("kimi-code", ["/home/alice/projects/webapp"], "Why is the login form submitting twice?")
    ]
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "notes.txt").write_text("x", encoding="utf-8")
    result = discover(tmp_path / "random")
    assert result.sessions == []
    assert result.skipped == [
        (
            str(tmp_path / "random"),
            "not a session log or log folder of any known "
            "agent (Kimi Code, Kimi CLI, Qwen Code, Pi, GitHub Copilot CLI, Cline, Roo Code, Kilo Code (VS Code), Cursor, Cursor CLI, Factory Droid, Continue, VS Code Copilot Chat, Claude Code, Goose, OpenCode, Crush, Kilo Code, Codex CLI, Gemini CLI, Aider)",
        )
    ]


def test_a_folder_no_reader_knows_is_searched_below_for_every_agents_logs() -> None:
    """A backup or an export holding several agents' logs at any depth: each recognised folder or
    log file below it is taken (here Claude Code project folders, Codex rollouts, Gemini chats)."""
    result = discover(FIXTURES / "real")
    assert result.skipped == []
    assert [(s.source, s.session_id, s.session_dir.name) for s in result.sessions] == [
        ("claude-code", "0a8fc187-681a-4c42-9538-ba0f628ee289", "m-thisness"),
        ("claude-code", "e0ce82fa-774f-4827-8cef-17b1b18b9f2a", "m-thisness"),
        ("claude-code", "e6804af6-fe01-478c-9e10-75e94f3e93cb", "m-thisness"),
        ("claude-code", "e87ac024-21a7-42ed-bff4-e19317199c49", "m-thisness"),
        ("claude-code", "abc757d1-3da3-42fb-bb7b-ffa293a4ba29", "m-thisness"),
        ("claude-code", "4b2030ed-5563-49ea-b703-6a002f2d3cc8", "moredip"),
        ("claude-code", "e9f146fa-3b20-48d0-9be4-d99ca901cae4", "vibecodingtracker"),
        ("codex", "97b66f6c-a160-40e0-bd0f-1fdcbbb9498b", "openprintkit"),
        ("codex", "01996135-afde-7911-97f0-d863511eca56", "vibecodingtracker"),
        ("gemini", "2d9ea14f-1e4e-44f6-8bf5-7a7819cb1cd9", "json"),
        ("gemini", "0ab84937-9fe7-4284-986a-33c832af0b6a", "jsonl"),
    ]


def test_the_search_below_a_folder_skips_links_and_stops_at_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from archive_mcp.refiners import sources

    backup = tmp_path / "backup"
    shutil.copytree(
        FIXTURES / "real" / "claude" / "moredip", backup / "laptop" / "2026" / "moredip"
    )
    (backup / "photos").mkdir()
    (backup / "photos" / "notes.json").write_text("{}", encoding="utf-8")
    (backup / "loop").symlink_to(backup)  # followed, it would find the session again, forever
    result = discover(backup)
    assert [(s.session_id, [f.agent for f in s.files]) for s in result.sessions] == [
        ("4b2030ed-5563-49ea-b703-6a002f2d3cc8", ["main", "agent-a2018e5"])
    ]
    for n in range(5):
        (tmp_path / "empty" / f"d{n}").mkdir(parents=True)
    monkeypatch.setattr(sources, "BELOW_DIRS", 3)
    result = discover(tmp_path / "empty")
    assert result.sessions == []
    assert [reason for _path, reason in result.skipped] == [
        "stopped looking after 3 folders; ingest the folders that hold logs one by one",
        "not a session log or log folder of any known agent (Kimi Code, Kimi CLI, Qwen Code, Pi, GitHub Copilot CLI, Cline, Roo Code, Kilo Code (VS Code), Cursor, Cursor CLI, Factory Droid, Continue, VS Code Copilot Chat, Claude Code, Goose, OpenCode, Crush, Kilo Code, Codex CLI, Gemini CLI, Aider)",
    ]


# --- the line reader, fuzzed ---------------------------------------------------------------

# orjson reads integers beyond 64 bits as floats; wire logs hold none (times, counts, sizes).
json_objects = st.dictionaries(
    st.text(max_size=5),
    st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=20), st.none()),
    max_size=3,
)
line_kinds = st.one_of(
    json_objects.map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8")),
    st.binary(max_size=30).filter(lambda b: b"\n" not in b),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line_kinds, max_size=12),
    tail=st.binary(max_size=20).filter(lambda b: b"\n" not in b),
)
def test_line_reader_never_raises_and_accounts_for_every_byte(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], tail: bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "wire.jsonl"
    data = b"".join(line + b"\n" for line in lines) + tail
    path.write_bytes(data)
    reader = LineReader(path)
    records = list(reader)
    # Every record is exactly one of the complete lines that holds a JSON object.
    expected = []
    for line in lines:
        try:
            value = json.loads(line.decode("utf-8", errors="replace"), strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            expected.append(value)
    tail_value = None
    if tail.strip():
        try:
            tail_value = json.loads(tail.decode("utf-8", errors="replace"), strict=False)
        except ValueError:
            pass
    if isinstance(tail_value, dict):
        expected.append(tail_value)
    assert [r.data for r in records] == expected
    for r in records:
        assert data[r.start : r.end].rstrip(b"\n")  # ranges point at real lines
    # The complete prefix never includes an unfinished tail, and always includes whole lines.
    cut = complete_prefix(path, 0, len(data))
    assert cut >= len(data) - len(tail)
    assert cut == len(data) or (tail and cut == len(data) - len(tail))
    assert reader.complete_offset in (len(data), len(data) - len(tail))
