"""Reading that costs little (issue 41): ranges of turns, only the passages holding given words,
noise ranked below substance, and the small faces' fixes (seed maximum listed, suggestions on a
fresh archive, no byte offsets in full detail)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import numpy as np
import polars as pl
import pytest
from archive_mcp.refiners.model import ToolCall
from archive_mcp.refiners.text import clip
from mcp import Client

from archive_mcp import Archive
from archive_mcp.demo import sample_root
from archive_mcp.errors import InvalidArgument, NotFound
from archive_mcp.mcp.server import build_server
from archive_mcp.refs import TurnRef, parse_ref
from archive_mcp.render import hit_text
from archive_mcp.search.context import READ_WHOLE, SCAN, _scanned, line_passages, passages
from archive_mcp.search.hits import Hit
from archive_mcp.search.matching import Matcher
from archive_mcp.search.ranking import NOISE_SHARE, noise_weights
from archive_mcp.search.tool_text import (
    ToolDetail,
    digest,
    grouped,
    plain_arguments,
    plain_output,
    relative,
)
from archive_mcp.search.turn_detail import size

LOADER = "6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"


def test_a_range_reference_parses_and_a_backwards_one_is_refused() -> None:
    assert parse_ref("3f2c9a1e:11-31") == TurnRef("3f2c9a1e", 11, "main", 31)
    assert parse_ref({"session_id": "s", "turn": 2, "last": 4}) == TurnRef("s", 2, "main", 4)
    with pytest.raises(InvalidArgument, match="runs from the first to the last"):
        parse_ref("3f2c9a1e:9-3")


def test_a_subagent_turn_parses_as_printed_and_a_guessed_form_is_told_the_printed_one() -> None:
    assert parse_ref("21fc4e8f:0 [agent-a87]") == TurnRef("21fc4e8f", 0, "agent-a87")
    with pytest.raises(InvalidArgument) as err:
        parse_ref("21fc4e8f:0@agent-a87")
    assert str(err.value) == (
        "a turn reference looks like SESSION:TURN (a unique session-id prefix will do, e.g. "
        "3f2c9a1e:2), SESSION:FIRST-LAST for a range (3f2c9a1e:11-31), SESSION:TURN [AGENT] for "
        "a subagent's turn as the tools print it (3f2c9a1e:0 [agent-a87]) or "
        "{session_id, turn, agent?}; got '21fc4e8f:0@agent-a87'"
    )


def test_a_range_loads_each_of_its_turns_as_requested(archive: Archive) -> None:
    ctx = archive.load_turn_context([f"{LOADER}:0-1"], workspace="ml-pipeline")
    assert [(t.turn, t.requested) for t in ctx.turns] == [(0, True), (1, True)]
    with pytest.raises(NotFound) as err:
        archive.load_turn_context([f"{LOADER}:5-9"], workspace="ml-pipeline")
    assert str(err.value) == (
        f"turns 5-9 are not in session {LOADER} (agent main); valid turns: 0..1"
    )


def test_matching_keeps_only_the_passages_and_turns_that_hold_the_words(archive: Archive) -> None:
    whole = archive.load_turn_context([f"{LOADER}:0-1"], workspace="ml-pipeline")
    word = next(w for w in whole.turns[0].user_text.split() if len(w) > 5 and w.isalpha())
    ctx = archive.load_turn_context([f"{LOADER}:0-1"], workspace="ml-pipeline", matching=[word])
    assert [t.turn for t in ctx.turns] == sorted(
        t.turn for t in whole.turns if word.lower() in _all_text(t).lower()
    )
    for t in ctx.turns:
        for part in (t.user_text, t.assistant_text):
            assert all(word.lower() in p.lower() for p in part.split("\n…\n") if p)


def _all_text(t: Any) -> str:
    return " ".join(
        [
            t.user_text,
            t.assistant_text,
            *(f"{c.name} {c.arguments} {c.result}" for c in t.tool_calls),
        ]
    )


def test_a_digest_budget_leaves_no_empty_stub_and_says_what_it_left_out(archive: Archive) -> None:
    ctx = archive.load_turn_context([f"{LOADER}:1"], workspace="ml-pipeline", max_chars=500)
    t = ctx.turns[0]
    assert all(c.digest and (c.arguments or c.result) for c in t.tool_calls)
    shown = sum(c.calls for c in t.tool_calls)
    calls = shown + int((t.left_out or "0").split()[0])
    if t.left_out:
        assert t.left_out == (
            f"{calls - shown} of {calls} tool calls left out for the budget; "
            "raise max_chars or use detail=full"
        )


def test_noise_kinds_keep_a_share_of_their_score_and_recaps_too() -> None:
    meta = pl.DataFrame(
        {
            "kinds": [
                ["command"],
                ["interrupted"],
                ["interrupted", "fix"],
                ["compaction", "continuation", "change"],
                [],
                ["decision"],
            ]
        }
    )
    assert noise_weights(meta).tolist() == [NOISE_SHARE, NOISE_SHARE, 1.0, NOISE_SHARE, 1.0, 1.0]
    assert noise_weights(pl.DataFrame({"turn": [1]})).tolist() == [1.0]
    assert isinstance(noise_weights(meta), np.ndarray)


def _write_session(home: Path, sid: str, records: list[dict[str, Any]]) -> None:
    """`records` as a Claude Code session log of the project /home/alice/pay under `home`."""
    path = home / ".claude" / "projects" / "-home-alice-pay" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _claude(home: Path, sid: str, prompts: list[str]) -> None:
    records = []
    for i, p in enumerate(prompts):
        ts = f"2026-03-20T10:{i:02d}:00Z"
        base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9", "timestamp": ts}
        records.append(
            {**base, "type": "user", "uuid": f"u{i}", "message": {"role": "user", "content": p}}
        )
        answer = "" if p.startswith("<command") else f"Looked at {p.split()[-1]}."
        if answer:
            records.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"a{i}",
                    "message": {
                        "role": "assistant",
                        "id": f"m{i}",
                        "content": [{"type": "text", "text": answer}],
                    },
                }
            )
    _write_session(home, sid, records)


def test_a_slash_command_ranks_below_a_substantive_turn_with_the_same_words(
    tmp_path: Path,
) -> None:
    _claude(
        tmp_path,
        "b0b00000-1111-4222-8333-444455556666",
        [
            "<command-name>/zorbic</command-name><command-args>payment retries</command-args>",
            "why do the zorbic payment retries fail",
            *(f"tidy the {w} module" for w in ("readme", "ledger", "invoice", "report", "export")),
        ],
    )
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    rows = archive.turns(archive.workspace(cwd="/home/alice/pay").id).collect().sort("turn")
    assert rows["kinds"].to_list()[0] == ["command"]
    hits = archive.search("zorbic payment retries", workspace="/home/alice/pay", mode="lexical")
    assert [h.turn for h in hits][:2] == [1, 0]  # 1.82 against 1.31 without the demotion


def test_full_hit_detail_prints_no_byte_offsets() -> None:
    hit = Hit(
        "w",
        "s1",
        "main",
        2,
        "2026-01-08T10:00",
        0.5,
        "Asked: x",
        "",
        ["bm25"],
        "ok",
        ["fix"],
        {"file": "raw/a.jsonl", "byte_start": 10, "byte_end": 99},
    )
    assert hit_text(hit, "full").splitlines()[-1] == "  status=ok kinds=fix"


async def _seeds_schema_and_fresh_list(archive: Archive) -> tuple[Any, str]:
    async with Client(build_server(archive, cwd="/home/alice/projects/webapp")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = await client.call_tool("list_themes", {"workspace": "/home/dev/projects/shop"})
    return tools["tag_theme"].input_schema["properties"]["seeds"], listed.content[0].text


def test_tag_themes_seed_maximum_is_listed_and_a_fresh_archive_lists_suggestions(
    fake_embedder: Any,
) -> None:
    archive = Archive(embedder=fake_embedder)
    archive.ingest(sample_root() / "kimi-themes", exclude=())
    seeds, text = anyio.run(_seeds_schema_and_fresh_list, archive)
    assert seeds["maxItems"] == 3
    assert text != "no themes yet: tag_theme or discover_themes"
    first = text.splitlines()[0]
    assert first.startswith("- ") and "[suggested, " in first


def test_a_compaction_recap_is_marked_and_points_at_the_turns_it_restates() -> None:
    from archive_mcp.refiners import PARSERS
    from archive_mcp.refiners.refine import RefineContext, refine_turn

    sid = "5e1f0c2a-7b3d-4c8e-9a61-2f4d8b0c6e13"
    path = (
        Path(__file__).parent
        / "fixtures/real-cli/claude-2.1.197/dot-claude/projects/-home-dev-work-claude"
        / f"{sid}.jsonl"
    )
    turns = PARSERS["claude-code"](path).turns
    recaps = [t for t in turns if t.is_compaction]
    assert [t.index for t in recaps] == [5]
    row = refine_turn(recaps[0], RefineContext("w", "claude-code", sid, "main", "f"))
    assert row["summary"].startswith(
        f"Recap of turns 0-4 ({sid}:0-4). Asked: (continued session: summary of the earlier "
        "conversation) Outcome: Done with: Use a subagent to print hi SCRIPTED-ANSWER;"
    )


def test_a_scan_shows_a_long_answers_opening_and_last_paragraph_within_its_width() -> None:
    from archive_mcp.search.context import answer_digest

    text = "Plan: keep sync.\n\n" + "middle words " * 100 + "\n\nFinal: retry with backoff."
    assert answer_digest(text, 100) == (
        "Plan: keep sync.\nmiddle words middle words middle words middle words…\n…\n"
        "Final: retry with backoff."
    )
    assert answer_digest("short answer", 100) == "short answer"
    assert answer_digest("Start here. " + "and more " * 40 + "End here.", 90) == (
        "Start here. and more and … more and more and more and more and more and more End here."
    )


def test_a_hits_user_words_are_whole_when_short_else_the_sentences_with_the_query_terms() -> None:
    from archive_mcp.search.highlight import answer_words, asked_words, split_answers
    from archive_mcp.search.texts import TurnText

    assert asked_words("Keep the  sync\nmode.", {"sync"}) == "Keep the **sync** mode."
    long = "Hello there. " * 10 + "Please make the retry use backoff. " + "More filler here. " * 20
    assert asked_words(long, {"retri", "backoff"}) == (
        "… Please make the **retry** use **backoff**. …"
    )
    assert split_answers("do it\n[answer] Which? → main\n[rejected Edit]") == (
        "do it",
        ["[answer] Which? → main", "[rejected Edit]"],
    )
    text = TurnText(assistant_text="Done.\nThe retry now waits 2.5 s with backoff. Tests pass.")
    assert (
        answer_words(text, {"backoff"}) == "The retry now waits 2.5 s with **backoff**. Tests pass."
    )
    # a best sentence of FILL characters or more is the passage alone: what follows is the turn's
    long = TurnText(
        assistant_text="The retry now waits 2.5 s with exponential backoff, capped at 30 s, and "
        "gives up after five attempts with a clear error. Tests pass. Committed as 1a2b3c."
    )
    assert answer_words(long, {"backoff"}) == (
        "The retry now waits 2.5 s with exponential **backoff**, capped at 30 s, and gives up after "
        "five attempts with a clear error."
    )


def test_a_scan_shows_the_users_words_before_the_answers_digest_on_a_small_share() -> None:
    ws = SimpleNamespace(id="w1")
    row = {
        "session_id": "s1",
        "agent": "main",
        "turn": 48,
        "started_at": None,
        "status": "done",
        "raw_ref": {},
    }
    asked = "Yes please go deeper. Also we need a settings menu item to store the configuration."
    answer = "\n\n".join(f"Paragraph {i}: " + "details of the change. " * 8 for i in range(6))
    d = _scanned(row, ws, asked, answer, 5, ([], None), 250, True)  # type: ignore[arg-type]
    assert d.user_text == asked
    assert 150 <= len(d.assistant_text) < len(answer)
    assert d.left_out == (
        f"left out: {len(answer) - len(d.assistant_text):,} of {len(answer):,} answer chars, "
        "5 tool calls"
    )


def test_a_hit_is_a_recap_by_its_compaction_kind_not_by_its_summary_s_first_word() -> None:
    from archive_mcp.search.hits import marks

    rejected = "Asked: fix it Outcome: proposed, rejected by the user: map the types"
    assert marks(rejected, ["change"]) == ["rejected by the user"]
    assert marks("Recap of turns 0-4 (s:0-4). The plan.", ["compaction"]) == ["recap"]
    assert marks("Recap the design for me", ["question"]) == []


def test_a_compact_hit_cut_inside_a_highlight_closes_the_mark_within_what_it_keeps() -> None:
    hit = Hit("w", "s1", "main", 2, "2026-01-08T10:00", 0.5, "", "", ["bm25"], "ok", [], {})
    hit.asked = (
        "The archives folder keeps tripping the hook, so scan only the staged files and make "
        "the **pre-commit hook refuse secrets** loudly"
    )
    assert hit_text(hit, "compact") == (
        "s1:2 2026-01-08T10:00 — The archives folder keeps tripping the hook, so scan only the "
        "staged files and make the **pre-commit**…"
    )
    from archive_mcp.search.highlight import clip_marked

    assert clip_marked(hit.asked, 90) == (
        "The archives folder keeps tripping the hook, so scan only the staged files and make the…"
    )
    assert clip_marked("keep **x** as is", 100) == "keep **x** as is"


def test_a_tools_lines_that_hold_the_words_come_with_two_lines_each_side_after_its_first() -> None:
    log = "\n".join(["$ vercel --prod", *(f"step {i}" for i in range(1, 10)), "Error: bad runtime"])
    assert line_passages(log, ["RUNTIME"]) == (
        "$ vercel --prod\n…\nstep 8\nstep 9\nError: bad runtime"
    )
    edit = json.dumps(
        {
            "file_path": "vercel.json",
            "content": "{\n"
            + "".join(f'  "k{i}": {i},\n' for i in range(8))
            + '  "outputDirectory": "public"\n}',
        }
    )
    assert line_passages(edit, ["outputdirectory"]) == (
        '{"file_path": "vercel.json", "content": "{\n…\n  \\"k6\\": 6,\n  \\"k7\\": 7,\n'
        '  \\"outputDirectory\\": \\"public\\"\n}"}'
    )
    assert line_passages(log, ["absent"]) == log
    listing = "\n".join(f"node_modules/pkg{i}/index.js" for i in range(100))
    assert line_passages(listing, ["vercel"]) == clip(listing, 400)  # matched by its other half
    assert line_passages(listing, []) == listing


def test_matching_keeps_of_a_long_paragraph_only_its_lines_that_hold_the_words() -> None:
    pasted = "\n".join(["deploy log:", *(f"12:00:{i:02d} build step {i}" for i in range(30))])
    text = f"Why did it fail?\n\n{pasted}\nError: bad runtime\n\nShort one with runtime."
    assert passages(text, ["runtime"]) == (
        "deploy log:\n…\n12:00:28 build step 28\n12:00:29 build step 29\nError: bad runtime"
        "\n…\nShort one with runtime."
    )


def test_an_escaped_backslash_before_n_in_a_tools_json_input_does_not_end_a_line() -> None:
    edit = json.dumps({"file_path": "C:\\new\\app.py", "old": "a\nfoo\nb\nc\nd\ne"})
    assert line_passages(edit, ["foo"]) == (
        '{"file_path": "C:\\\\new\\\\app.py", "old": "a\nfoo\nb\nc\n…'
    )


def _opening(sid: str, prompt: str, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Claude Code session's first two records: the user's `prompt` and the assistant's
    message of `content` blocks."""
    base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9"}
    return [
        {
            **base,
            "type": "user",
            "uuid": "u0",
            "timestamp": "2026-03-20T10:00:00Z",
            "message": {"role": "user", "content": prompt},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a0",
            "timestamp": "2026-03-20T10:00:05Z",
            "message": {"role": "assistant", "id": "m0", "content": content},
        },
    ]


def _results_then(sid: str, results: list[dict[str, Any]], reply: str) -> list[dict[str, Any]]:
    """The records after `_opening`: the user's record of tool `results`, then the assistant's
    `reply`."""
    base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9"}
    return [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2026-03-20T10:00:06Z",
            "message": {"role": "user", "content": results},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "timestamp": "2026-03-20T10:00:07Z",
            "message": {
                "role": "assistant",
                "id": "m1",
                "content": [{"type": "text", "text": reply}],
            },
        },
    ]


def _edit_session(home: Path, sid: str) -> None:
    base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9"}
    content = "{\n" + "".join(f'  "k{i}": {i},\n' for i in range(30)) + '  "runtime": "node@3"\n}'
    write = {"file_path": "/home/alice/pay/vercel.json", "content": content}
    records = [
        *_opening(
            sid,
            "pin the function runtime",
            [{"type": "tool_use", "id": "t0", "name": "Write", "input": write}],
        ),
        *_results_then(
            sid,
            [{"type": "tool_result", "tool_use_id": "t0", "content": "File created"}],
            "Pinned it.",
        ),
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "timestamp": "2026-03-20T10:01:00Z",
            "message": {"role": "user", "content": "now deploy"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a2",
            "timestamp": "2026-03-20T10:01:05Z",
            "message": {
                "role": "assistant",
                "id": "m2",
                "content": [{"type": "text", "text": "Deployed."}],
            },
        },
    ]
    _write_session(home, sid, records)


def test_matching_in_full_detail_shows_the_lines_of_a_call_that_hold_the_words_and_names_a_turn_with_none(
    tmp_path: Path,
) -> None:
    sid = "7a1b2c3d-0000-4000-8000-000000000001"
    _edit_session(tmp_path / "src", sid)
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    ws = archive.workspaces()[0].id
    ctx = archive.load_turn_context(
        [f"{sid}:0", f"{sid}:1"], workspace=ws, full_tools=True, matching=["runtime"]
    )
    (turn,) = ctx.turns
    # the path relative to the project's folder (/home/alice/pay), the input as `key: value`
    assert [c.arguments for c in turn.tool_calls] == [
        'file_path: vercel.json\n…\n  "k28": 28,\n  "k29": 29,\n  "runtime": "node@3"\n}'
    ]
    assert [(n.turn, n.reason) for n in ctx.not_found] == [
        (
            1,
            f"turn 1 of session {sid}: no passage holds 'runtime'; read it without matching "
            "or with other words",
        )
    ]
    with pytest.raises(NotFound) as err:
        archive.load_turn_context([f"{sid}:1"], workspace=ws, matching=["runtime", "pin"])
    assert str(err.value) == (
        f"turn 1 of session {sid}: no passage holds 'runtime', 'pin'; read it without "
        "matching or with other words"
    )
    with pytest.raises(NotFound) as err:
        archive.load_turn_context([f"{sid}:0-1"], workspace=ws, matching=["absent"])
    assert str(err.value) == (
        f"turns 0-1 of session {sid}: no passage holds 'absent'; read them without matching "
        "or with other words"
    )
    ctx = archive.load_turn_context([f"{sid}:0-1"], workspace=ws, matching=["deploy"])
    assert [t.turn for t in ctx.turns] == [1]
    assert ctx.not_found == []
    (held,) = archive.load_turn_context([f"{sid}:1"], workspace=ws, matching=["deployed"]).turns
    assert (held.user_text, held.assistant_text) == ("now deploy", "Deployed.")  # framed


def _migration(tmp_path: Path, sid: str, steps: int) -> tuple[Archive, str, str]:
    """An archive of two turns whose answers are the same `steps` sentences: it, its workspace
    and the answer."""
    answer = " ".join(
        f"Step {i} of the migration moved table t{i} to the new schema." for i in range(steps)
    )
    _claude(tmp_path / "src", sid, ["migrate the orders table", "migrate the users table"])
    path = tmp_path / "src" / ".claude" / "projects" / "-home-alice-pay" / f"{sid}.jsonl"
    path.write_text(path.read_text("utf-8").replace("Looked at table.", answer), "utf-8")
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    return archive, archive.workspaces()[0].id, answer


def test_several_turns_are_read_whole_when_the_budget_gives_each_enough(tmp_path: Path) -> None:
    sid = "7a1b2c3d-0000-4000-8000-000000000002"
    archive, ws, answer = _migration(tmp_path, sid, 30)
    refs = [f"{sid}:0", f"{sid}:1"]
    whole = archive.load_turn_context(refs, workspace=ws, max_chars=2 * READ_WHOLE)
    assert [t.assistant_text for t in whole.turns] == [answer, answer]
    scanned = archive.load_turn_context(refs, workspace=ws, max_chars=2 * READ_WHOLE - 2)
    assert [t.assistant_text for t in scanned.turns] == [answer, answer]  # the room let them be
    assert [t.tool_calls for t in scanned.turns] == [[], []]  # ... but a scan shows no call


def test_a_scan_gives_the_room_it_has_to_the_answers_it_cut(tmp_path: Path) -> None:
    sid = "7a1b2c3d-0000-4000-8000-000000000003"
    archive, ws, answer = _migration(tmp_path, sid, 60)
    refs = [f"{sid}:0-1"]
    narrow = archive.load_turn_context(refs, workspace=ws, max_chars=1400)
    assert [len(t.assistant_text) <= SCAN for t in narrow.turns] == [True, True]
    wide = archive.load_turn_context(refs, workspace=ws, max_chars=5000)
    shown = [len(t.assistant_text) for t in wide.turns]
    assert [SCAN < n < len(answer) for n in shown] == [True, True]
    assert abs(shown[0] - shown[1]) < 50  # shared evenly
    assert sum(map(size, wide.turns)) <= 5000
    assert [t.left_out for t in wide.turns] == [
        f"left out: {len(answer) - n:,} of {len(answer):,} answer chars" for n in shown
    ]


def test_a_turns_calls_read_as_a_line_a_tool_with_targets_relative_to_the_project() -> None:
    def call(name: str, args: dict[str, Any], error: bool = False, out: str = "done") -> ToolCall:
        c = ToolCall(f"id-{name}-{len(args)}", name, json.dumps(args))
        c.finish(error, "", out, None)
        return c

    calls = [
        call("Read", {"file_path": "/home/alice/pay/src/app.ts"}),
        call(
            "Bash", {"command": "npm test", "description": "Run the tests"}, True, "Exit code 1\nx"
        ),
        call("Edit", {"file_path": "/home/alice/pay/src/app.ts", "replace_all": False}),
        call("Bash", {"command": "npm   test"}),
        call("TodoWrite", {"todos": [{"content": "a"}]}),
        call("Read", {"file_path": "/home/alice/pay/src/app.ts"}),
    ]
    outputs = [c.output_text for c in calls]
    lines = [
        (d.name, d.arguments, d.status, d.result, d.calls)
        for d in grouped(calls, outputs, frozenset(), ["/home/alice/pay"])
    ]
    assert lines == [
        ("Read ×2", "src/app.ts ×2", "ok", "", 2),
        ("Bash ×2", "npm test ×2", "1 error, 1 ok", "Exit code 1", 2),
        ("Edit", "file_path=src/app.ts", "ok", "done", 1),
        ("TodoWrite", "todos=[{'content': 'a'}]", "ok", "done", 1),
    ]


def test_a_calls_input_reads_as_its_fields_and_a_root_of_one_folder_stays_whole() -> None:
    assert plain_arguments('{"file_path": "/a/b", "replace_all": false, "limit": 0}') == (
        "file_path: /a/b\nlimit: 0"
    )
    assert plain_arguments('{"command": "ls", "timeout": null}') == "ls"
    assert plain_arguments('["not", "an object"]') == '["not", "an object"]'
    assert plain_arguments("{cut off") == "{cut off"
    assert relative("cat /home/alice/pay/x.py /home/alice/payroll/y", ["/home/alice/pay/"]) == (
        "cat x.py /home/alice/payroll/y"
    )
    assert relative("/home/x.py", ["/home"]) == "/home/x.py"
    assert plain_output("     9→a\n    10→b") == "9→a\n10→b"


def test_a_root_inside_a_longer_path_or_a_url_is_left_as_it_is() -> None:
    text = "cp /mnt/backup/home/a/proj/x.py /home/a/proj/y.py; see https://h.io/home/a/proj/z"
    assert relative(text, ["/home/a/proj"]) == (
        "cp /mnt/backup/home/a/proj/x.py y.py; see https://h.io/home/a/proj/z"
    )
    assert relative(r'"C:\w\proj\a.py" and D:\C:\w\proj\b', [r"C:\w\proj"]) == (
        r'"a.py" and D:\C:\w\proj\b'
    )


def test_grouped_calls_name_a_codex_command_list_and_an_opencode_file_path() -> None:
    calls = []
    for args in (
        {"command": ["bash", "-lc", "cargo test"]},
        {"command": ["bash", "-lc", "cargo test"]},
        {"filePath": "/home/a/proj/src/x.rs"},
        {"filePath": "/home/a/proj/src/y.rs"},
    ):
        c = ToolCall(f"id-{len(calls)}", "shell" if "command" in args else "read", json.dumps(args))
        c.finish(False, "", "done", None)
        calls.append(c)
    lines = [
        (d.name, d.arguments) for d in grouped(calls, ["done"] * 4, frozenset(), ["/home/a/proj"])
    ]
    assert lines == [("shell ×2", "cargo test ×2"), ("read ×2", "src/x.rs, src/y.rs")]


def test_a_project_folder_named_alone_with_its_slash_stays_whole() -> None:
    text = 'cd /home/a/proj/ && ls /home/a/proj/src; {"cwd": "/home/a/proj/"} (/home/a/proj/)'
    assert relative(text, ["/home/a/proj"]) == (
        'cd /home/a/proj/ && ls src; {"cwd": "/home/a/proj/"} (/home/a/proj/)'
    )
    assert relative("/home/a/proj/", ["/home/a/proj"]) == "/home/a/proj/"


def test_matching_keeps_the_lines_with_the_rarer_words_and_the_best_line_of_a_common_one() -> None:
    code = "\n".join(f"const [v{i}, setV{i}] = useState({i});" for i in range(40))
    words = "\n".join(
        [
            "The hint says the scan is slower in user mode.",
            "We chose a hint over a warning.",
            "Nothing to see here.",
        ]
    )
    matcher = Matcher.over(["hint", "slower", "useState"], [words, code])
    # "useState" is on 40 of 43 lines: it weighs 1, "hint" and "slower" log(43/2) and log(43);
    # the heaviest line (6.8) sets the bar at half: a line with "hint" alone (3.1) is under it
    assert [ln for ln in words.splitlines() if matcher.keeps(ln)] == [
        "The hint says the scan is slower in user mode."
    ]
    # no line with "useState" reaches the bar: the first of them stands for the word
    assert [ln for ln in code.splitlines() if matcher.keeps(ln)] == [
        "const [v0, setV0] = useState(0);"
    ]
    assert passages(words + "\n\nNothing more.", matcher) == words  # a paragraph is kept whole
    # one word or two: any line holding one is kept
    both = Matcher.over(["hint", "warning"], [words, code])
    assert [ln for ln in words.splitlines() if both.keeps(ln)] == words.splitlines()[:2]
    assert line_passages(code, Matcher.any_of(["setV3]"]), around=0, head=False) == (
        "…\nconst [v3, setV3] = useState(3);\n…"
    )


def test_matching_cuts_a_long_one_line_paste_to_the_words_around_its_match() -> None:
    rows = [f'{{"id":{i},"level":"info","path":"/api/events"}}' for i in range(60)]
    rows[30] = '{"id":30,"message":"issue FE-1675 added"}'
    kept = passages(f"Here is the log:\n\n[{','.join(rows)}]", ["FE-1675"])
    # one line of 2,800 characters: 400 of them, a third before the word, `…` both ends
    assert kept.startswith("…") and kept.endswith("…")
    assert len(kept) == 2 + 400 and kept.index("FE-1675") == 1 + 400 // 3
    assert Matcher.any_of(["zzz"]).around("x" * 500, 10) == "x" * 10 + "…"  # no word: its head
    assert Matcher.any_of(["b"]).around("a" * 20 + "b" + "c" * 20, 9) == "…aaab" + "ccccc…"


def test_matching_finds_a_word_written_with_or_without_hyphens_and_underscores() -> None:
    css = "div { align-items: flex-end; }\nconst style = { alignItems: 'flex-start' };\nother"
    assert passages(css, ["align-items"]) == (
        "div { align-items: flex-end; }\nconst style = { alignItems: 'flex-start' };\nother"
    )
    matcher = Matcher.any_of(["ALIGN_ITEMS"])
    assert [ln for ln in css.splitlines() if matcher.keeps(ln)] == css.splitlines()[:2]
    assert matcher.around("x" * 30 + "align-items" + "y" * 30, 12) == "…xxxxalign-it…"


def test_a_turns_thinking_is_named_when_left_out_and_its_passages_shown_under_matching(
    tmp_path: Path,
) -> None:
    sid = "7a1b2c3d-0000-4000-8000-000000000009"
    thought = (
        "The plan lists a slow scan warning for User Mode.\n\n"
        "The turbo scanner should have fixed the slowness, so the warning is not needed."
    )
    content = [
        {"type": "thinking", "thinking": thought, "signature": "x"},
        {"type": "text", "text": "Plan 3 done: the mode is remembered."},
    ]
    _write_session(tmp_path / "src", sid, _opening(sid, "do plan 3", content))
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    ws = archive.workspaces()[0].id
    (whole,) = archive.load_turn_context([f"{sid}:0"], workspace=ws).turns
    assert whole.thinking is None
    assert whole.left_out == (
        f"thinking left out ({len(thought):,} chars): include_thinking=true shows it"
    )
    (matched,) = archive.load_turn_context([f"{sid}:0"], workspace=ws, matching=["warning"]).turns
    assert matched.thinking == thought.replace("\n\n", "\n…\n")  # both paragraphs hold it
    assert matched.left_out is None
    (reason,) = archive.load_turn_context([f"{sid}:0"], workspace=ws, matching=["turbo"]).turns
    assert reason.thinking == thought.split("\n\n")[1]
    assert reason.assistant_text == ""  # the answer holds no "turbo"


def test_matching_in_full_detail_gives_the_calls_no_room_is_left_for_a_line_each(
    tmp_path: Path,
) -> None:
    sid = "7a1b2c3d-0000-4000-8000-00000000000a"
    base = {"sessionId": sid, "cwd": "/home/alice/pay", "version": "2.1.9"}
    records: list[dict[str, Any]] = [
        {
            **base,
            "type": "user",
            "uuid": "u0",
            "timestamp": "2026-03-20T10:00:00Z",
            "message": {"role": "user", "content": "deploy it"},
        }
    ]
    for i in range(12):
        use = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"step {i}"}}
        log = "\n".join([*(f"line {k} " + "x" * 60 for k in range(20)), f"deploy {i} ok"])
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": log}
        records += [
            {
                **base,
                "type": "assistant",
                "uuid": f"a{i}",
                "timestamp": "2026-03-20T10:00:05Z",
                "message": {"role": "assistant", "id": f"m{i}", "content": [use]},
            },
            {
                **base,
                "type": "user",
                "uuid": f"r{i}",
                "timestamp": "2026-03-20T10:00:06Z",
                "message": {"role": "user", "content": [result]},
            },
        ]
    _write_session(tmp_path / "src", sid, records)
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    ws = archive.workspaces()[0].id
    (turn,) = archive.load_turn_context(
        [f"{sid}:0"], workspace=ws, full_tools=True, matching=["deploy"], max_chars=1500
    ).turns
    whole = [c for c in turn.tool_calls if not c.digest]
    lines = [c for c in turn.tool_calls if c.digest]
    assert whole and lines  # the first calls whole, then a line each while they fit
    assert [c.result for c in lines] == [f"deploy {i} ok" for i in range(len(whole), 12)][
        : len(lines)
    ]
    left = 12 - len(whole) - len(lines)
    assert turn.left_out == (
        f"{left} of 12 tool calls left out for the budget; raise max_chars" if left else None
    )


async def _read_range(archive: Archive, args: dict[str, Any]) -> tuple[str, int, bool]:
    async with Client(build_server(archive)) as client:
        r = await client.call_tool("load_turn_context", args)
    data = r.structured_content or {}
    return r.content[0].text, len(json.dumps(data, ensure_ascii=False)), data.get("truncated")


def test_a_read_of_many_turns_shows_their_words_though_their_structure_would_not_fit(
    tmp_path: Path,
) -> None:
    """The ids and keys of five turns' structured content take most of 3,000 characters:
    the text (what an agent reads) still holds every answer whole, the structure is clipped."""
    sid = "7a1b2c3d-0000-4000-8000-000000000004"
    _claude(tmp_path / "src", sid, [f"check the table t{i}" for i in range(5)])
    path = tmp_path / "src" / ".claude" / "projects" / "-home-alice-pay" / f"{sid}.jsonl"
    said = path.read_text("utf-8")
    answers = [f"Looked at t{i}: its rows are " + "well formed and indexed, " * 8 for i in range(5)]
    for i, answer in enumerate(answers):
        said = said.replace(f"Looked at t{i}.", answer.strip())
    path.write_text(said, "utf-8")
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    ws = archive.workspaces()[0].id
    args = {"references": [f"{sid}:0-4"], "workspace": ws, "detail": "full", "max_chars": 3000}
    text, structured, truncated = anyio.run(_read_range, archive, args)
    assert [answer.strip() in text for answer in answers] == [True] * 5
    assert len(text) <= 3000 and structured <= 3000 and truncated is True


def test_a_digest_keeps_the_tail_of_a_long_path_under_the_project() -> None:
    """The summary cuts each value at 100 characters: made relative first, a path under a
    long project folder keeps the file's name (it had read `file_path=apps/we…`)."""
    root = "/home/alice/projects/acme/web-terminal-frontend-feat-dash-pauls-preload-data-unified"
    call = ToolCall("id-read", "Read", json.dumps({"file_path": f"{root}/apps/web/src/config.ts"}))
    call.finish(False, "", "1→import x", None)
    assert digest(call, call.output_text, frozenset(), [root]) == ToolDetail(
        "Read", "file_path=apps/web/src/config.ts", "ok", "1→import x", True
    )


REMINDER = (
    "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be "
    "considered malware.\n</system-reminder>\n"
)


def test_a_read_leaves_out_the_reminders_the_harness_appends_to_a_tools_result(
    tmp_path: Path,
) -> None:
    sid = "7a1b2c3d-0000-4000-8000-000000000005"
    reads = [
        {
            "type": "tool_use",
            "id": f"t{i}",
            "name": "Read",
            "input": {"file_path": f"/home/alice/pay/{f}"},
        }
        for i, f in enumerate(("app.ts", "empty.ts"))
    ]
    results = [
        {
            "type": "tool_result",
            "tool_use_id": "t0",
            "content": "     1→export const app = 1;" + REMINDER,
        },
        {"type": "tool_result", "tool_use_id": "t1", "content": REMINDER},
    ]
    records = [*_opening(sid, "look at the app", reads), *_results_then(sid, results, "Looked.")]
    _write_session(tmp_path / "src", sid, records)
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / "src" / ".claude" / "projects")
    ws = archive.workspaces()[0].id
    (normal,) = archive.load_turn_context([f"{sid}:0"], workspace=ws).turns
    assert [(c.name, c.arguments, c.result) for c in normal.tool_calls] == [
        ("Read ×2", "app.ts, empty.ts", "")
    ]
    (full,) = archive.load_turn_context([f"{sid}:0"], workspace=ws, full_tools=True).turns
    assert [c.result for c in full.tool_calls] == ["1→export const app = 1;", ""]
    with pytest.raises(NotFound):
        archive.load_turn_context([f"{sid}:0"], workspace=ws, matching=["malware"])
