"""What a read costs its budget (issue 41): a scan's spare room given once and where it grows an
answer, the user's words kept, a range too long for its budget not loaded again and again, the
structured content of one turn as whole as its text, a decision an `also` query finds shown."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import archive_mcp.search.context as context
import archive_mcp.search.parsed as parsed
from archive_mcp import Archive
from archive_mcp.mcp.core_tools import READ_MAX
from archive_mcp.mcp.server import build_server


def _session(home: Path, sid: str, prompts: list[str], answers: list[str], calls: int = 0) -> None:
    """A Claude Code log of /home/alice/pay: each turn the prompt, `calls` Read calls, the answer."""
    base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9"}
    recs: list[dict[str, Any]] = []
    for i, (p, a) in enumerate(zip(prompts, answers, strict=True)):
        at = {**base, "timestamp": f"2026-03-20T10:{i:02d}:00Z"}
        recs.append(
            {**at, "type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": p}}
        )
        for k in range(calls):
            use = {
                "type": "tool_use",
                "id": f"t{i}{k}",
                "name": "Read",
                "input": {"file_path": f"/home/alice/pay/f{k}.py"},
            }
            got = {"type": "tool_result", "tool_use_id": f"t{i}{k}", "content": "row\n" * 20}
            recs.append(
                {
                    **at,
                    "type": "assistant",
                    "uuid": f"c{i}{k}",
                    "message": {"role": "assistant", "id": f"c{i}{k}", "content": [use]},
                }
            )
            recs.append(
                {
                    **at,
                    "type": "user",
                    "uuid": f"r{i}{k}",
                    "message": {"role": "user", "content": [got]},
                }
            )
        recs.append(
            {
                **at,
                "type": "assistant",
                "uuid": f"a{i}",
                "message": {
                    "role": "assistant",
                    "id": f"m{i}",
                    "content": [{"type": "text", "text": a}],
                },
            }
        )
    path = home / ".claude" / "projects" / "-home-alice-pay" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")


def _archive(
    tmp_path: Path, prompts: list[str], answers: list[str], calls: int = 0
) -> tuple[Archive, str, str]:
    sid = "7a1b2c3d-0000-4000-8000-000000000099"
    _session(tmp_path / "src", sid, prompts, answers, calls)
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    return archive, archive.workspaces()[0].id, sid


async def _call(archive: Archive, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    async with Client(build_server(archive)) as client:
        r = await client.call_tool(tool, args)
    return r.content[0].text, r.structured_content or {}


def _steps(i: int, n: int) -> str:
    return " ".join(f"Step {j} of turn {i} moved table t{j} to the new schema." for j in range(n))


def test_one_turn_read_at_the_default_budget_holds_in_its_structured_content_the_answer_its_text_shows(
    tmp_path: Path,
) -> None:
    answer = "\n\n".join(
        f"Paragraph {j}: step {j} moved table t{j} to the new schema and checked its rows."
        for j in range(80)
    )
    archive, ws, sid = _archive(tmp_path, ["migrate the orders table"], [answer], 2)
    text, data = anyio.run(
        _call, archive, "load_turn_context", {"references": [f"{sid}:0"], "workspace": ws}
    )
    assert (data["turns"][0]["assistant_text"] in text, data["truncated"]) == (True, False)


def _parses(
    monkeypatch: pytest.MonkeyPatch, module: Any = context, name: str = "parse_turn"
) -> list[int]:
    """A count of the calls to `module.name`: the turns a read asks for (`context.parse_turn`),
    or those parsed from their logs (`parsed._parse`)."""
    count = [0]
    parse = getattr(module, name)

    def counted(*args: Any) -> Any:
        count[0] += 1
        return parse(*args)

    monkeypatch.setattr(module, name, counted)
    return count


@pytest.mark.parametrize(
    "turns, steps, max_chars, whole",
    [
        (10, 3, 20_000, True),  # its answers shown whole: their calls left out are no reason
        (50, 120, 34_000, False),  # a share too small to grow an answer
    ],
)
def test_a_scan_reads_each_turn_once_when_filling_would_show_no_more(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: int,
    steps: int,
    max_chars: int,
    whole: bool,
) -> None:
    answers = [_steps(i, steps) for i in range(turns)]
    archive, ws, sid = _archive(tmp_path, [f"check table t{i}" for i in range(turns)], answers, 3)
    count = _parses(monkeypatch)
    got = archive.load_turn_context([f"{sid}:0-{turns - 1}"], workspace=ws, max_chars=max_chars)
    assert ([t.assistant_text for t in got.turns] == answers, count[0]) == (whole, turns)


def test_a_range_its_budget_cannot_hold_is_not_loaded_again_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, ws, sid = _archive(
        tmp_path, [f"check table t{i}" for i in range(50)], [_steps(i, 40) for i in range(50)]
    )
    count = _parses(monkeypatch)
    anyio.run(_call, archive, "load_turn_context", {"references": [f"{sid}:0-49"], "workspace": ws})
    assert count[0] <= 2 * 50


def test_a_range_read_parses_the_workspaces_ingest_state_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, ws, sid = _archive(
        tmp_path, [f"check table t{i}" for i in range(12)], [_steps(i, 3) for i in range(12)]
    )
    count = _parses(monkeypatch, parsed, "read_json")
    got = archive.load_turn_context([f"{sid}:0-11"], workspace=ws)
    assert (len(got.turns), count[0]) == (12, 1)
    workspace = archive.workspaces()[0]
    state_file = workspace.state_dir / "ingest.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    (log,) = state["files"]
    state["files"][log]["protocol"] = "changed"
    state_file.write_text(json.dumps(state), encoding="utf-8")
    assert (parsed._file_entry(workspace, log)["protocol"], count[0]) == ("changed", 2)


def test_filling_a_scan_never_shows_less_of_the_users_words_than_its_first_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = "keep the orders table on the old schema until the audit ends " * 30
    archive, ws, sid = _archive(tmp_path, [words] * 3, [_steps(i, 60) for i in range(3)])
    fill = context._fill
    monkeypatch.setattr(context, "_fill", lambda *a: None)
    first = archive.load_turn_context([f"{sid}:0-2"], workspace=ws, max_chars=6000)
    monkeypatch.setattr(context, "_fill", fill)
    filled = archive.load_turn_context([f"{sid}:0-2"], workspace=ws, max_chars=6000)
    assert [len(t.user_text) for t in filled.turns] == [len(t.user_text) for t in first.turns]


def test_a_read_names_no_byte_offsets_below_full_detail_and_so_holds_more_turns(
    tmp_path: Path,
) -> None:
    """The log's byte offsets are the reader's: below detail=full the structure leaves them
    out, as a search hit does, and twelve turns at the default budget show eight, not six."""
    archive, ws, sid = _archive(
        tmp_path, [f"check table t{i}" for i in range(12)], [_steps(i, 40) for i in range(12)], 2
    )
    text, data = anyio.run(
        _call, archive, "load_turn_context", {"references": [f"{sid}:0-11"], "workspace": ws}
    )
    assert [t["turn"] for t in data["turns"]] == list(range(8))
    assert {json.dumps(t["raw_ref"]) for t in data["turns"]} == {"{}"}
    assert text.endswith(
        "… 4 more turns not shown (8 of 12); ask for fewer references or raise max_chars"
    )
    _, full = anyio.run(
        _call,
        archive,
        "load_turn_context",
        {"references": [f"{sid}:0"], "workspace": ws, "detail": "full"},
    )
    assert full["turns"][0]["raw_ref"]["file"].endswith(f"{sid}.jsonl")


def test_a_turn_read_again_is_not_parsed_again_until_its_log_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, ws, sid = _archive(
        tmp_path, [f"check table t{i}" for i in range(4)], [_steps(i, 3) for i in range(4)], 1
    )
    parses = _parses(monkeypatch, parsed, "_parse")
    first = archive.load_turn_context([f"{sid}:0-3"], workspace=ws, max_chars=8000)
    again = archive.load_turn_context([f"{sid}:0-3"], workspace=ws, max_chars=8000)
    assert (parses[0], again.turns) == (4, first.turns)
    log = next((tmp_path / "home").rglob(f"{sid}.jsonl"))
    log.write_bytes(log.read_bytes().replace(b"Step 0 of turn 0", b"Step 0 of turn 0 (redone)"))
    changed = archive.load_turn_context([f"{sid}:0"], workspace=ws, max_chars=8000)
    assert parses[0] == 5
    assert changed.turns[0].assistant_text.startswith("Step 0 of turn 0 (redone)")


def test_a_read_asks_at_most_six_thousand_characters_and_the_error_says_so(
    tmp_path: Path,
) -> None:
    archive, ws, sid = _archive(tmp_path, ["migrate the orders table"], ["Moved table orders."])
    args = {"references": [f"{sid}:0"], "workspace": ws}
    text, _ = anyio.run(_call, archive, "load_turn_context", {**args, "max_chars": 6001})
    assert READ_MAX == 6000 and text == (
        "load_turn_context: argument `max_chars` input should be less than or equal to 6000 "
        "(got 6001). Fix the argument and call load_turn_context again."
    )
    text, data = anyio.run(_call, archive, "load_turn_context", {**args, "max_chars": 6000})
    assert [t["assistant_text"] for t in data["turns"]] == ["Moved table orders."]


def test_a_read_at_the_cap_says_how_to_get_more_without_raising_max_chars(
    tmp_path: Path,
) -> None:
    prompts = [f"check table t{i}" for i in range(20)]
    archive, ws, sid = _archive(tmp_path, prompts, [_steps(i, 40) for i in range(20)], 3)
    args = {"references": [f"{sid}:0-19"], "workspace": ws}
    capped, _ = anyio.run(_call, archive, "load_turn_context", {**args, "max_chars": READ_MAX})
    assert "more turns not shown" in capped and "raise max_chars" not in capped
    assert capped.endswith("; ask for fewer references")
    below, _ = anyio.run(_call, archive, "load_turn_context", {**args, "max_chars": 5000})
    assert below.endswith("; ask for fewer references or raise max_chars")
    one = {"references": [f"{sid}:0"], "workspace": ws, "max_chars": READ_MAX}
    whole, data = anyio.run(_call, archive, "load_turn_context", one)
    assert "raise max_chars" not in whole
    # what the note said "raise max_chars" for, it says another way to get at the cap
    assert all("raise" not in (t["left_out"] or "") for t in data["turns"])


def test_the_bench_scripts_ask_no_read_above_the_cap() -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    import agent_calls
    import read_speed

    asked: list[dict[str, Any]] = []

    async def ask(tool: str, args: dict[str, Any]) -> tuple[str, Any]:
        asked.append({"tool": tool, **args})
        hits = [{"session_id": "s", "turn": 0}]
        return "## s:0 a\n## s:0 b\n## s:0 c\n## s:0 d", {"groups": [{"hits": hits}] * 4}

    questions = [agent_calls.Question(str(i), f"topic {i}", "") for i in range(4)]
    anyio.run(agent_calls.batched, ask, questions, 4, True)
    reads = [a["max_chars"] for a in asked if a["tool"] == "load_turn_context"]
    assert reads == [READ_MAX]  # 3,000 a question of four, at most the cap
    assert max(int(b) for b in read_speed.BUDGETS.split(",")) == READ_MAX
