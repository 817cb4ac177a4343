"""`load_turn_context(matching=...)` on hard input: what session 18's review found (Unicode that
lowers to two characters, JSON escapes, words that fold to nothing, thinking in scans and at
small budgets, secrets behind escapes, a tool's name among three words, relative paths)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archive_mcp import Archive
from archive_mcp.errors import InvalidArgument
from archive_mcp.search.matching import Matcher, passages
from archive_mcp.search.tool_text import plain_arguments

SID = "7a1b2c3d-0000-4000-8000-0000000000ff"
Call = tuple[str, dict[str, Any], str]


def _session(tmp: Path, turns: list[dict[str, Any]]) -> tuple[Archive, str]:
    """A Claude Code session of /home/alice/pay, archived: each turn a dict of `user`, `answer`,
    optional `thinking` and `calls` [(tool, input, output)]."""
    recs: list[dict[str, Any]] = []
    base = {"cwd": "/home/alice/pay", "version": "2.1.9", "sessionId": SID}
    for t, turn in enumerate(turns):
        at = {**base, "timestamp": f"2026-03-20T10:{t:02d}:00Z"}
        recs.append(
            {
                **at,
                "type": "user",
                "uuid": f"u{t}",
                "message": {"role": "user", "content": turn["user"]},
            }
        )
        calls: list[Call] = turn.get("calls", [])
        for i, (name, given, out) in enumerate(calls):
            use = {"type": "tool_use", "id": f"t{t}_{i}", "name": name, "input": given}
            res = {"type": "tool_result", "tool_use_id": f"t{t}_{i}", "content": out}
            said = {"role": "assistant", "id": f"m{t}_{i}", "content": [use]}
            recs.append({**at, "type": "assistant", "uuid": f"a{t}_{i}", "message": said})
            recs.append(
                {
                    **at,
                    "type": "user",
                    "uuid": f"r{t}_{i}",
                    "message": {"role": "user", "content": [res]},
                }
            )
        content = (
            [{"type": "thinking", "thinking": turn["thinking"], "signature": "x"}]
            if turn.get("thinking")
            else []
        )
        content.append({"type": "text", "text": turn.get("answer", "Done.")})
        said = {"role": "assistant", "id": f"m{t}", "content": content}
        recs.append({**at, "type": "assistant", "uuid": f"a{t}", "message": said})
    path = tmp / "src" / ".claude" / "projects" / "-home-alice-pay" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    archive = Archive(home=tmp / "home", embedder=None)
    archive.ingest(tmp / "src" / ".claude" / "projects")
    return archive, archive.workspaces()[0].id


def test_a_long_line_with_a_letter_that_lowers_to_two_characters_before_the_word_is_read(
    tmp_path: Path,
) -> None:
    answer = "İstanbul ekibi " * 200 + "the deadline moved to Friday."
    archive, ws = _session(tmp_path, [{"user": "when is it due", "answer": answer}])
    (t,) = archive.load_turn_context([f"{SID}:0"], workspace=ws, matching=["deadline"]).turns
    assert t.assistant_text.endswith("the deadline moved to Friday.")
    assert len(t.assistant_text) == 1 + 400


def test_matching_words_that_fold_to_nothing_are_refused(tmp_path: Path) -> None:
    archive, ws = _session(tmp_path, [{"user": "fix the build", "answer": "Fixed."}])
    for words in (["-"], ["__"], [" "]):
        with pytest.raises(InvalidArgument, match="holds no word"):
            archive.load_turn_context([f"{SID}:0"], workspace=ws, matching=words)


def test_a_matched_calls_digest_shows_the_word_it_was_kept_for(tmp_path: Path) -> None:
    hit = "src/components/settings/panels/NotificationPreferencesPanel.tsx:88:      " + (
        "const retryBudgetMs = computeBackoff(attempt) // zorblat"
    )
    calls = [("Grep", {"pattern": "Backoff"}, "intro line\n" + hit)]
    archive, ws = _session(tmp_path, [{"user": "where", "answer": "Found it.", "calls": calls}])
    (t,) = archive.load_turn_context([f"{SID}:0"], workspace=ws, matching=["zorblat"]).turns
    (call,) = t.tool_calls
    assert call.result.endswith("computeBackoff(attempt) // zorblat") and len(call.result) <= 80


def test_a_scanned_turn_kept_for_its_thinking_shows_that_passage(tmp_path: Path) -> None:
    turns = [
        {"user": f"step {i}", "answer": f"Did step {i}.", "thinking": "The quokka cache must go."}
        if i == 1
        else {"user": f"step {i}", "answer": f"Did step {i}.", "thinking": "plain"}
        for i in range(3)
    ]
    archive, ws = _session(tmp_path, turns)
    (t,) = archive.load_turn_context([f"{SID}:0-2"], workspace=ws, matching=["quokka"]).turns
    assert (t.turn, t.thinking) == (1, "The quokka cache must go.")


def test_a_rescued_line_is_found_again_in_a_paragraph_with_a_json_escape() -> None:
    words = [f"line {i} other words" for i in range(30)]
    text = "\n\n".join(
        ["alpha beta are the two flags.", r'It prints printf("gamma\n") once.', *words]
    )
    text += "\n" + "\n".join(f"gamma {i}" for i in range(30))
    matcher = Matcher.over(["alpha", "beta", "gamma"], [text])
    assert r'It prints printf("gamma\n") once.' in passages(text, matcher)


def test_thinking_shown_under_matching_is_redacted_and_its_paths_relative(tmp_path: Path) -> None:
    thinking = "The loader reads /home/alice/pay/src/config.ts with DB_PASSWORD=Sup3rS3cretVal9."
    archive, ws = _session(tmp_path, [{"user": "where", "answer": "Found.", "thinking": thinking}])
    (t,) = archive.load_turn_context([f"{SID}:0"], workspace=ws, matching=["loader"]).turns
    assert t.thinking is not None and t.thinking.startswith("The loader reads src/config.ts with")
    assert "Sup3rS3cretVal9" not in t.thinking


def test_a_small_budget_names_the_thinking_it_has_no_room_for(tmp_path: Path) -> None:
    calls = [
        (
            "Bash",
            {"command": f"grep -rn webhook src/{k}"},
            "\n".join(f"src/{k}/f{j}.py: webhook {j}" for j in range(30)),
        )
        for k in range(8)
    ]
    turn = {
        "user": "fix the webhook retry " + "please " * 20,
        "answer": "The webhook retry backs off. " * 40,
    }
    archive, ws = _session(
        tmp_path, [{**turn, "thinking": "webhook thoughts " * 100, "calls": calls}]
    )
    for budget in (1000, 1200, 1400):
        (t,) = archive.load_turn_context(
            [f"{SID}:0"], workspace=ws, max_chars=budget, full_tools=True, matching=["webhook"]
        ).turns
        assert t.thinking is None or len(t.thinking) >= 80
        if t.thinking is None:
            assert "thinking left out for the budget (1,700 chars); raise max_chars" in (
                t.left_out or ""
            )


def test_of_three_words_a_tools_name_keeps_its_calls_only_when_it_weighs_enough(
    tmp_path: Path,
) -> None:
    calls: list[Call] = [
        ("Read", {"file_path": f"/home/alice/pay/src/m{i}.py"}, f"def f{i}(): pass")
        for i in range(20)
    ]
    calls.append(
        (
            "Read",
            {"file_path": "/home/alice/pay/src/config_parser.py"},
            "class ConfigParser: strict",
        )
    )
    archive, ws = _session(
        tmp_path, [{"user": "read the config parser", "answer": "Strict.", "calls": calls}]
    )
    (t,) = archive.load_turn_context(
        [f"{SID}:0"], workspace=ws, matching=["read", "config", "parser"]
    ).turns
    assert [c.arguments for c in t.tool_calls] == ["file_path=src/config_parser.py"]


def test_a_codex_calls_escaped_secret_is_redacted_once_its_input_is_plain(tmp_path: Path) -> None:
    def rec(kind: str, payload: dict[str, Any], sec: int) -> dict[str, Any]:
        return {"timestamp": f"2026-03-21T10:00:{sec:02d}.000Z", "type": kind, "payload": payload}

    # the model's own JSON escapes: the password is plain only once the input is read as JSON
    command = r"export DB_PASSWORD=p\u00e4ssw\u00f6rdS3cret! && curl https:\/\/db.example.com\/x"
    arguments = '{"command": ["bash", "-lc", "' + command + '"]}'
    folder = tmp_path / ".codex" / "sessions" / "2026" / "03" / "21"
    folder.mkdir(parents=True)
    records = [
        rec("session_meta", {"id": "x1", "cwd": "/home/alice/pay", "cli_version": "0.98.0"}, 0),
        rec("event_msg", {"type": "user_message", "message": "check the db"}, 1),
        rec(
            "response_item",
            {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": "c1"},
            2,
        ),
        rec("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}, 3),
        rec("event_msg", {"type": "task_complete"}, 4),
    ]
    (folder / "rollout-2026-03-21T11-00-00-x1.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    archive = Archive(home=tmp_path / "home", embedder=None)
    archive.ingest(tmp_path / ".codex" / "sessions")
    ws = archive.workspaces()[0].id
    (sid,) = archive.sessions(ws).collect()["session_id"].to_list()
    (t,) = archive.load_turn_context(
        [f"{sid}:0"], workspace=ws, full_tools=True, matching=["curl"]
    ).turns
    (call,) = t.tool_calls
    assert "curl" in call.arguments and "S3cret" not in call.arguments
    # without matching the input stays JSON (a face parses it), its secret masked in its values:
    # the agent's text shows it as `key: value` lines (`plain_arguments`) with nothing in clear
    (whole,) = archive.load_turn_context([f"{sid}:0"], workspace=ws, full_tools=True).turns
    (call,) = whole.tool_calls
    assert json.loads(call.arguments)["command"][0] == "bash"
    assert "curl" in plain_arguments(call.arguments) and "S3cret" not in plain_arguments(
        call.arguments
    )
