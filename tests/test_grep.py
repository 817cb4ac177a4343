"""grep_turns: the lines of past turns matching a regular expression, in time order, across the
user's words, answers, thinking and tool inputs and outputs (search/grep.py, mcp/grep_tool.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from archive_mcp import Archive
from archive_mcp.errors import InvalidArgument, NotFound
from archive_mcp.mcp.server import build_server
from archive_mcp.search import grep

SID = "a11ce000-1111-4222-8333-444455556666"
CWD = "/home/alice/projects/web"
KEY = (
    "ghp_" + "abcdefghijklmnopqrstuvwxyz0123"
)  # a made-up token, in two pieces: not one to scan for


def _rec(kind: str, content: Any, sec: int, mid: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if mid:
        message["id"] = mid
    return {
        "type": kind,
        "sessionId": SID,
        "cwd": CWD,
        "version": "2.1.9",
        "timestamp": f"2026-03-20T10:{sec:02d}:00Z",
        "uuid": f"u{sec}",
        "message": message,
    }


def _tool(tid: str, name: str, args: dict[str, Any], sec: int) -> dict[str, Any]:
    return _rec(
        "assistant", [{"type": "tool_use", "id": tid, "name": name, "input": args}], sec, f"m{sec}"
    )


def _result(tid: str, text: str, sec: int) -> dict[str, Any]:
    return _rec("user", [{"type": "tool_result", "tool_use_id": tid, "content": text}], sec)


def _archived(tmp_path: Path, records: list[dict[str, Any]]) -> Archive:
    """An archive of one Claude Code session of `records` (in the web project)."""
    path = tmp_path / ".claude" / "projects" / "-home-alice-projects-web" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    return archive


def _archive(tmp_path: Path) -> Archive:
    """Turn 0 writes a stub locale file; turn 1 checks git status (its output holds a token) and
    says the stub stays uncommitted; turn 2's answer ends in a long run of one letter."""
    records = [
        _rec("user", "The app crashes on the missing locale file", 0),
        _rec(
            "assistant",
            [{"type": "thinking", "thinking": "A stub would unblock it.", "signature": "s"}],
            1,
            "m1",
        ),
        _tool(
            "t1",
            "Write",
            {
                "file_path": f"{CWD}/src/locales/en.ts",
                "content": "// Stub locale\nexport const messages = {};",
            },
            2,
        ),
        _result("t1", f"File created successfully at: {CWD}/src/locales/en.ts", 3),
        _rec(
            "assistant",
            [{"type": "text", "text": "Wrote a stub.\nStub locale file in place."}],
            4,
            "m4",
        ),
        _rec("user", "commit it?", 5),
        _tool("t2", "Bash", {"command": "git status --short", "description": "Check tree"}, 6),
        _result("t2", f"nothing to commit, working tree clean\ntoken {KEY} in .env", 7),
        _rec(
            "assistant",
            [{"type": "text", "text": "The stub stays uncommitted: the tree is clean."}],
            8,
            "m8",
        ),
        _rec("user", "move on", 9),
        _rec("assistant", [{"type": "text", "text": "Phase 2 next.\n" + "x" * 40}], 10, "m10"),
    ]
    return _archived(tmp_path, records)


def _found(result: grep.GrepResult) -> list[tuple[int, list[tuple[str, str]]]]:
    return [(t.turn, [(x.where, x.text) for x in t.lines]) for t in result.turns]


def test_grep_finds_lines_in_words_thinking_tool_inputs_and_outputs_in_time_order(
    tmp_path: Path,
) -> None:
    archive = _archive(tmp_path)
    found = archive.grep_turns("stub|working tree", cwd=CWD)
    assert _found(found) == [
        (
            0,
            [
                ("answer", "Wrote a stub."),
                ("answer", "Stub locale file in place."),
                ("thinking", "A stub would unblock it."),
                ("Write in", "content: // Stub locale"),
            ],
        ),
        (
            1,
            [
                ("answer", "The stub stays uncommitted: the tree is clean."),
                ("Bash out", "nothing to commit, working tree clean"),
            ],
        ),
    ]
    assert (found.searched, found.total, found.skipped) == (3, 3, [])


def test_grep_shows_paths_relative_to_the_project_and_masks_secrets(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    assert _found(archive.grep_turns(r"locales/en\.ts|token", cwd=CWD)) == [
        (
            0,
            [
                ("Write in", "file_path: src/locales/en.ts"),
                ("Write out", "File created successfully at: src/locales/en.ts"),
            ],
        ),
        (1, [("Bash out", "token [REDACTED] in .env")]),
    ]


def test_grep_searches_only_the_parts_and_sessions_asked(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    assert _found(archive.grep_turns("stub", cwd=CWD, where=["input"])) == [
        (0, [("Write in", "content: // Stub locale")])
    ]
    assert _found(archive.grep_turns("commit", cwd=CWD, sessions=["a11ce"], where=["user"])) == [
        (1, [("user", "commit it?")])
    ]
    with pytest.raises(NotFound, match="no session or turn 'ffff' in workspace web"):
        archive.grep_turns("stub", cwd=CWD, sessions=["ffff"])
    with pytest.raises(InvalidArgument, match="where takes user, answer, thinking, input, output"):
        archive.grep_turns("stub", cwd=CWD, where=["tools"])


def test_a_pattern_that_is_not_a_regular_expression_is_a_clear_error(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    with pytest.raises(InvalidArgument, match=r"pattern 'fix\(' is not a regular expression"):
        archive.grep_turns("fix(", cwd=CWD)


def test_a_pattern_that_backtracks_without_end_stops_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    monkeypatch.setattr(grep, "MATCH_SECONDS", 0.01)
    with pytest.raises(InvalidArgument, match="took over 0.01 s on one text"):
        archive.grep_turns(r"^(x|xx)+y", cwd=CWD)


def test_a_turn_whose_log_does_not_hold_the_pattern_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    parsed: list[int] = []
    real = grep.parse_turn

    def counting(ws: Any, row: dict[str, Any]) -> Any:
        parsed.append(row["turn"])
        return real(ws, row)

    monkeypatch.setattr(grep, "parse_turn", counting)
    monkeypatch.setattr(grep, "FEW", 0)  # three turns: looked for in the log first all the same
    # a word that starts a line of the answer (after an escaped line break in the log)
    assert _found(archive.grep_turns(r"\bStub locale file", cwd=CWD)) == [
        (0, [("answer", "Stub locale file in place.")])
    ]
    assert parsed == [0]
    parsed.clear()  # a pattern that needs no word of three letters parses every turn
    assert _found(archive.grep_turns(r"^P\w+ 2", cwd=CWD)) == [(2, [("answer", "Phase 2 next.")])]
    assert parsed == [0, 1, 2]
    parsed.clear()  # three turns asked or fewer: parsed without looking at the log
    monkeypatch.setattr(grep, "FEW", 8)
    assert _found(archive.grep_turns(r"\bStub locale file", cwd=CWD))[0][0] == 0
    assert parsed == [0, 1, 2]


def test_a_turn_whose_archived_log_is_gone_is_reported_and_the_rest_searched(
    tmp_path: Path,
) -> None:
    archive = _archive(tmp_path)
    ws = archive.workspace(cwd=CWD)
    for log in ws.root.rglob(f"{SID}.jsonl"):
        log.write_text("", encoding="utf-8")
    found = archive.grep_turns("stub", cwd=CWD)
    assert found.turns == []
    assert found.skipped == [f"{SID}.jsonl: a turn could not be read back from its archived log"]


def test_the_grep_tool_answers_with_each_line_under_its_turn(tmp_path: Path) -> None:
    archive = _archive(tmp_path)

    async def call(args: dict[str, Any]) -> str:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool("grep_turns", args)
            return r.content[0].text

    assert anyio.run(call, {"pattern": "commit"}) == (
        "3 lines in 1 turn for 'commit'\n"
        "a11ce000 2026-03-20\n"
        ":1 10:05 — commit it?\n"
        "  answer: The stub stays uncommitted: the tree is clean.\n"
        "  Bash out: nothing to commit, working tree clean"
    )
    assert anyio.run(call, {"pattern": "nowhere"}) == (
        "0 lines in 0 turns for 'nowhere'\nNo line of 3 turns in web matches."
    )


def test_the_grep_command_prints_each_line_under_its_turn_and_exits_1_on_a_bad_pattern(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from archive_mcp.cli.main import main

    _archive(tmp_path)
    ok = CliRunner().invoke(main, ["grep", "commit", "-w", CWD, "--where", "output"])
    assert (ok.exit_code, ok.stdout) == (
        0,
        "1 line in 1 turn for 'commit'\n"
        f"{SID} 2026-03-20\n"
        ":1 10:05 — commit it?\n"
        "  Bash out: nothing to commit, working tree clean\n",
    )
    bad = CliRunner().invoke(main, ["grep", "fix(", "-w", CWD])
    assert bad.exit_code == 1
    assert "pattern 'fix(' is not a regular expression" in bad.stderr


def test_a_line_a_turn_before_showed_is_counted_not_shown_again(tmp_path: Path) -> None:
    state = "1→# State\n2→- decision: keep the store\n"
    records = [
        _rec("user", "plan phase 2", 0),
        _tool("t1", "Read", {"file_path": f"{CWD}/STATE.md"}, 1),
        _result("t1", state, 2),
        _rec("assistant", [{"type": "text", "text": "Planned."}], 3, "m3"),
        _rec("user", "plan phase 3", 4),
        _tool("t2", "Read", {"file_path": f"{CWD}/STATE.md"}, 5),
        _result("t2", state + "3→- decision: keep the events too\n", 6),
        _rec("assistant", [{"type": "text", "text": "Planned again."}], 7, "m7"),
    ]
    archive = _archived(tmp_path, records)
    found = archive.grep_turns("decision", cwd=CWD)
    assert [(t.turn, [x.text for x in t.lines], t.repeated) for t in found.turns] == [
        (0, ["2→- decision: keep the store"], 0),
        (1, ["3→- decision: keep the events too"], 1),
    ]


def test_turns_asked_by_reference_show_every_line_others_a_few_and_a_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path)
    monkeypatch.setattr(grep, "PER_TURN", 1)
    some = archive.grep_turns("stub", cwd=CWD)
    assert [(t.turn, len(t.lines), t.more) for t in some.turns] == [(0, 1, 3), (1, 1, 0)]
    every = archive.grep_turns("stub", cwd=CWD, sessions=["a11ce000:0"])
    assert [(t.turn, len(t.lines), t.more) for t in every.turns] == [(0, 4, 0)]
    ranged = archive.grep_turns("stub|clean", cwd=CWD, sessions=["a11ce000:1-2"])
    assert [t.turn for t in ranged.turns] == [1]
    with pytest.raises(InvalidArgument, match="a turn reference looks like"):
        archive.grep_turns("stub", cwd=CWD, sessions=["a11ce000:x"])


def test_a_secret_named_in_another_part_of_the_turn_is_masked_in_the_line_shown(
    tmp_path: Path,
) -> None:
    records = [
        _rec("user", "connect to the database", 0),
        _tool("t1", "Bash", {"command": "export DB_PASSWORD=Zq8vN3kLp2Wx9tR && ./connect"}, 1),
        _result("t1", "connected with Zq8vN3kLp2Wx9tR ok", 2),
        _rec("assistant", [{"type": "text", "text": "Connected."}], 3, "m3"),
    ]
    archive = _archived(tmp_path, records)
    found = archive.grep_turns("connected with", cwd=CWD, where=["output"])
    assert _found(found) == [(0, [("Bash out", "connected with [REDACTED] ok")])]


def _steps_answer(n: int, pad: int = 0) -> str:
    return "\n".join(
        f"Step {i}: the stub locale file {'x' * pad}checked in package {i}." for i in range(n)
    )


def _one_turn(tmp_path: Path, prompt: str, answer: str) -> Archive:
    return _archived(
        tmp_path,
        [_rec("user", prompt, 0), _rec("assistant", [{"type": "text", "text": answer}], 1, "m1")],
    )


def _grep_tool(archive: Archive, args: dict[str, Any]) -> tuple[str, Any]:
    async def call() -> tuple[str, Any]:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool("grep_turns", args)
            return r.content[0].text, r.structured_content

    return anyio.run(call)


def test_a_turn_with_more_lines_than_the_budget_holds_shows_its_first_lines_never_none(
    tmp_path: Path,
) -> None:
    archive = _one_turn(tmp_path, "check every package", _steps_answer(40))
    args = {"pattern": "stub", "sessions": ["a11ce000:0"], "max_output_chars": 1000}
    text, _ = _grep_tool(archive, args)
    shown = [line for line in text.splitlines() if line.startswith("  answer: Step ")]
    assert len(text) <= 1000
    assert shown[0] == "  answer: Step 0: the stub locale file checked in package 0."
    assert text.endswith(
        f"  … {40 - len(shown)} more lines in this turn (a narrower pattern shows them)"
    )


def test_a_turn_that_fits_its_budget_exactly_is_shown_whole(tmp_path: Path) -> None:
    archive = _one_turn(tmp_path, "check every package", _steps_answer(12))
    args = {"pattern": "stub", "sessions": ["a11ce000:0"]}
    text, data = _grep_tool(archive, {**args, "max_output_chars": 20_000})
    whole = max(len(text), len(json.dumps(data, ensure_ascii=False)))
    text, data = _grep_tool(archive, {**args, "max_output_chars": whole})
    assert "more lines in this turn" not in text
    assert len(data["turns"][0]["lines"]) == 12


def test_at_a_small_budget_a_matching_line_is_shown_below_the_turns_header(
    tmp_path: Path,
) -> None:
    # the user's line is the turn's header, not printed below it: it is no line shown
    archive = _one_turn(tmp_path, "check the stub in every package", _steps_answer(40))
    args = {"pattern": "stub", "sessions": ["a11ce000:0"], "max_output_chars": 600}
    text, _ = _grep_tool(archive, args)
    assert len(text) <= 600
    assert "  answer: Step 0: the stub locale file checked in package 0." in text


def test_a_turn_cut_to_its_budget_is_shown_alone_and_no_line_is_as_above_one_not_shown(
    tmp_path: Path,
) -> None:
    archive = _archived(
        tmp_path,
        [
            _rec("user", "check every package", 0),
            _rec("assistant", [{"type": "text", "text": _steps_answer(20, 90)}], 1, "m1"),
            _rec("user", "check them again", 2),
            _rec(
                "assistant",
                [{"type": "text", "text": _steps_answer(20, 90) + "\nDone: the stub stays."}],
                3,
                "m3",
            ),
        ],
    )
    args = {"pattern": "stub", "sessions": ["a11ce000:0-1"], "max_output_chars": 1000}
    text, data = _grep_tool(archive, args)
    assert len(text) <= 1000 and [t["turn"] for t in data["turns"]] == [0]
    assert "as above" not in text
    assert text.endswith(
        "… 1 more turns not shown (1 of 2); narrow with sessions or where, or raise "
        "max_output_chars"
    )
