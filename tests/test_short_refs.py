"""Sessions cited by their shortest unique prefix: what the tools print loads back, an ambiguous
prefix is an error naming the candidates, and full ids keep working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from archive_mcp import Archive
from archive_mcp.mcp import overview, toolkit
from archive_mcp.mcp.server import build_server
from archive_mcp.refs import Citing, short_ids

CWD = "/home/alice/projects/sync"
TWINS = ["a11ce000-1111-4222-8333-444455556666", "a11ce000-2222-4222-8333-444455556666"]
LONE = "b0b00000-1111-4222-8333-444455556666"


def test_a_session_is_cited_by_its_shortest_prefix_no_other_id_starts_with() -> None:
    ids = [*TWINS, LONE, "c0ffee", "c0ffee12345", "c0ffee12346"]
    assert short_ids(ids) == {
        TWINS[0]: "a11ce000-1",
        TWINS[1]: "a11ce000-2",
        LONE: "b0b00000",
        "c0ffee": "c0ffee",  # shorter than 8 characters: whole
        "c0ffee12345": "c0ffee12345",
        "c0ffee12346": "c0ffee12346",
    }
    assert short_ids([LONE], least=4) == {LONE: "b0b0"}


def _line(sid: str, kind: str, text: str, minute: int) -> str:
    content: Any = text if kind == "user" else [{"type": "text", "text": text}]
    message = {"role": kind, "content": content, **({"id": f"m{minute}"} if kind != "user" else {})}
    return json.dumps(
        {
            "type": kind,
            "sessionId": sid,
            "cwd": CWD,
            "version": "2.1.9",
            "timestamp": f"2026-03-20T10:{minute:02d}:00Z",
            "uuid": f"u{sid[:12]}{minute}",
            "message": message,
        }
    )


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    """Three Claude Code sessions, two of them sharing their first 8 characters."""
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync"
    folder.mkdir(parents=True)
    for n, sid in enumerate([*TWINS, LONE]):
        lines = [
            _line(sid, "user", f"Why does the retry loop {n} spin?", 10 * n),
            _line(
                sid, "assistant", f"The retry loop {n} never backs off; added a delay.", 10 * n + 1
            ),
        ]
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = Archive(embedder=None)
    a.ingest(tmp_path / ".claude")
    return a


def _call(archive: Archive, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    async def go() -> tuple[bool, str]:
        async with Client(build_server(archive, cwd=CWD)) as client:
            r = await client.call_tool(name, args)
            return bool(r.is_error), r.content[0].text

    return anyio.run(go)


def test_search_and_listing_cite_sessions_by_prefixes_that_load_back(archive: Archive) -> None:
    _, found = _call(
        archive, "search_context", {"query": "retry loop", "mode": "lexical", "order": "time"}
    )
    assert found == (
        "3 hits (mode lexical)\n"
        "a11ce000-1 2026-03-20\n"
        ":0 10:00 — Why does the retry loop 0 spin?\n"
        "  → The retry loop 0 never backs off; added a delay.\n"
        "a11ce000-2\n"
        ":0 10:10 — Why does the retry loop 1 spin?\n"
        "  → The retry loop 1 never backs off; added a delay.\n"
        "b0b00000\n"
        ":0 10:20 — Why does the retry loop 2 spin?\n"
        "  → The retry loop 2 never backs off; added a delay."
    )
    _, listed = _call(archive, "list_sessions", {})
    assert listed.splitlines()[1:] == [  # newest first
        "- b0b00000 2026-03-20 10:20 1 turns — Why does the retry loop 2 spin?",
        "- a11ce000-2 2026-03-20 10:10 1 turns — Why does the retry loop 1 spin?",
        "- a11ce000-1 2026-03-20 10:00 1 turns — Why does the retry loop 0 spin?",
    ]
    _, read = _call(archive, "load_turn_context", {"references": ["a11ce000-2:0", f"{LONE}:0"]})
    assert [ln for ln in read.splitlines() if ln.startswith("## ")] == [
        "## a11ce000-2:0 2026-03-20 10:10 open",  # a status is said when not `completed`
        "## b0b00000:0 2026-03-20 10:20 open",
    ]


def test_an_ambiguous_session_prefix_is_an_error_naming_the_candidates(archive: Archive) -> None:
    assert _call(archive, "load_turn_context", {"references": ["a11ce000:0"]}) == (
        True,
        "session 'a11ce000' is ambiguous: "
        f"{TWINS[0]} (sync), {TWINS[1]} (sync); give more of the id",
    )


def test_the_short_ids_are_worked_out_again_only_after_a_workspace_ingests(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sorted_ids: list[int] = []
    real = toolkit.short_ids
    monkeypatch.setattr(toolkit, "short_ids", lambda ids: sorted_ids.append(1) or real(ids))
    sessions = toolkit.Sessions()
    first = sessions.short_ids(archive)
    assert sessions.short_ids(archive) == first
    assert len(sorted_ids) == 1  # the second call read a stat per workspace, nothing more
    new = "b0b00001-1111-4222-8333-444455556666"
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync"
    (folder / f"{new}.jsonl").write_text(_line(new, "user", "And now?", 40) + "\n", "utf-8")
    archive.ingest(tmp_path / ".claude")
    again = sessions.short_ids(archive)
    assert len(sorted_ids) == 2
    assert (again[LONE], again[new]) == ("b0b00000", "b0b00001")


def _listed(tmp_path: Path, lines: list[str], args: dict[str, Any]) -> list[str]:
    """The lines `list_sessions` prints for a Claude Code session of `lines` in project sync."""
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync"
    folder.mkdir(parents=True)
    (folder / f"{LONE}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    error, listed = _call(archive, "list_sessions", args)
    assert not error
    return listed.splitlines()


def test_list_sessions_with_prompts_lists_every_turn_with_the_users_words(tmp_path: Path) -> None:
    lines = [
        _line(LONE, "user", "Why does the retry loop spin?", 0),
        _line(LONE, "assistant", "It never backs off.", 1),
        _line(LONE, "user", "Add a delay   of\n2 s " + "and log it " * 20, 5),
        _line(LONE, "assistant", "Added.", 6),
    ]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        "- b0b00000 2026-03-20 10:00 2 turns",
        "  :0 10:00 Why does the retry loop spin?",
        "  :1 10:05 Add a delay of 2 s" + " and log it" * 11 + " and log…",  # at a word
    ]


def test_an_overviews_turn_of_a_later_day_says_its_date() -> None:
    assert overview.when("2026-03-21T09:05:00+00:00", "2026-03-20") == "03-21 09:05"
    assert overview.when("2026-03-20T09:05:00+00:00", "2026-03-20") == "09:05"
    assert overview.when(None, "2026-03-20") == "--:--"


def test_an_overview_leaves_out_routine_turns_and_says_so_once(tmp_path: Path) -> None:
    lines = [
        _line(LONE, "user", "/clear", 0),
        _line(LONE, "user", "Why does the retry loop spin?", 1),
        _line(LONE, "assistant", "It never backs off.", 2),
        _line(LONE, "user", "[Request interrupted by user]", 3),
        _line(LONE, "user", "continue", 4),
        _line(LONE, "assistant", "Going on.", 5),
        _line(LONE, "user", "Keep the delay at 2 s", 6),
        _line(LONE, "assistant", "Kept.", 7),
    ]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        overview.ROUTINE_NOTE,
        "- b0b00000 2026-03-20 10:00 5 turns",
        "  :1 10:01 Why does the retry loop spin?",
        "  :4 10:06 Keep the delay at 2 s",
    ]


def test_an_overview_leaves_out_a_task_notification_and_keeps_what_the_user_typed_after_one(
    tmp_path: Path,
) -> None:
    note = (
        "<task-notification> <task-id>b29c0c3</task-id> <output-file>tasks/t.output</output-file> "
        "<status>completed</status> <summary>Build finished</summary> </task-notification>"
    )
    lines = [
        _line(LONE, "user", "Why does the retry loop spin?", 0),
        _line(LONE, "assistant", "It never backs off.", 1),
        _line(LONE, "user", note, 2),
        _line(LONE, "assistant", "The build passed.", 3),
        _line(
            LONE, "user", f"{note}\nRead the output file to retrieve the result: tasks/t.output", 4
        ),
        _line(LONE, "assistant", "Read it.", 5),
        _line(LONE, "user", f"{note}\nFull transcript available at: tasks/t.output\n{note}", 6),
        _line(LONE, "assistant", "Both done.", 7),
        _line(LONE, "user", note + "\nNow keep the delay at 2 s", 8),
        _line(LONE, "assistant", "Kept.", 9),
    ]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        overview.ROUTINE_NOTE,
        "- b0b00000 2026-03-20 10:00 5 turns",
        "  :0 10:00 Why does the retry loop spin?",
        "  :4 10:08 Now keep the delay at 2 s",
    ]


NOTE = (
    "<task-notification>\n<task-id>a1f</task-id>\n<status>completed</status>\n"
    '<summary>Agent "tidy the overview" completed</summary>\n'
)


@pytest.mark.parametrize(
    "said",
    [
        "Leave out turns that are only a `<task-notification>` and say so once.",
        "<task-notification> turns are noise in the overview: hide them",
    ],
    ids=["tag-mid-prompt", "tag-opens-prompt"],
)
def test_an_overview_lists_whole_a_prompt_in_which_the_user_typed_the_notification_tag(
    tmp_path: Path, said: str
) -> None:
    lines = [_line(LONE, "user", said, 0), _line(LONE, "assistant", "Done.", 1)]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        "- b0b00000 2026-03-20 10:00 1 turns",
        f"  :0 10:00 {said}",
    ]


def test_an_overview_leaves_out_a_notification_whose_result_quotes_the_closing_tag(
    tmp_path: Path,
) -> None:
    note = (
        f"{NOTE}<result>overview.py now drops a prompt up to </task-notification> and the line "
        "after it.</result>\n</task-notification>\nFull transcript available at: tasks/a1f.output"
    )
    lines = [
        _line(LONE, "user", "Why does the retry loop spin?", 0),
        _line(LONE, "assistant", "It never backs off.", 1),
        _line(LONE, "user", note, 2),
        _line(LONE, "assistant", "The agent is done.", 3),
    ]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        overview.ROUTINE_NOTE,
        "- b0b00000 2026-03-20 10:00 2 turns",
        "  :0 10:00 Why does the retry loop spin?",
    ]


def test_an_overview_leaves_out_a_bare_continue_typed_after_a_notification_as_it_does_one_alone(
    tmp_path: Path,
) -> None:
    note = f"{NOTE}</task-notification>"
    lines = [
        _line(LONE, "user", "Why does the retry loop spin?", 0),
        _line(LONE, "assistant", "It never backs off.", 1),
        _line(LONE, "user", "continue", 2),
        _line(LONE, "assistant", "Going on.", 3),
        _line(LONE, "user", f"{note}\ncontinue", 4),
        _line(LONE, "assistant", "Going on again.", 5),
    ]
    assert _listed(tmp_path, lines, {"prompts": True}) == [
        "sync: 1 sessions",
        overview.ROUTINE_NOTE,
        "- b0b00000 2026-03-20 10:00 3 turns",
        "  :0 10:00 Why does the retry loop spin?",
    ]


def _questions() -> list[str]:
    """A long session's lines: 50 questions of 180 characters, each answered."""
    lines = []
    for i in range(50):
        lines += [
            _line(LONE, "user", f"Question {i} " + "about the retry loop " * 8, i),
            _line(LONE, "assistant", "It never backs off.", i),
        ]
    return lines


def test_list_sessions_with_prompts_shows_a_lone_long_sessions_first_turns_not_nothing(
    tmp_path: Path,
) -> None:
    assert _listed(tmp_path, _questions(), {"prompts": True, "max_output_chars": 1000}) == [
        "sync: 1 sessions",
        "- b0b00000 2026-03-20 10:00 50 turns",
        *(
            f"  :{i} 10:{i:02d} Question {i}" + " about the retry loop" * 6 + " about the…"
            for i in range(5)
        ),
        "  … 45 more turns not shown; raise max_output_chars",
    ]


def test_short_ids_read_while_a_concurrent_call_sees_a_new_session_are_not_kept_as_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / ".claude" / "projects"
    ids = {"sync": LONE, "other": "c0c00000-1111-4222-8333-444455556666"}
    for name, sid in ids.items():
        (projects / f"-home-alice-projects-{name}").mkdir(parents=True)
        log = _line(sid, "user", "Why?", 0).replace(CWD, f"/home/alice/projects/{name}")
        (projects / f"-home-alice-projects-{name}" / f"{sid}.jsonl").write_text(log + "\n", "utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    sessions = toolkit.Sessions()
    real = archive.raw_files
    visited: list[Any] = []

    def racing(ws: Any) -> Any:
        files = real(ws)
        visited.append(ws)
        if len(visited) == 2:  # meanwhile another call sees the first workspace ingest a twin
            first = visited[0]
            twin = ids[first.name][:9] + "2222-4222-8333-444455556666"
            log = _line(twin, "user", "Now?", 40).replace(CWD, f"/home/alice/projects/{first.name}")
            folder = projects / f"-home-alice-projects-{first.name}"
            (folder / f"{twin}.jsonl").write_text(log + "\n", "utf-8")
            archive.ingest(tmp_path / ".claude")
            sessions.of(archive, first)
        return files

    monkeypatch.setattr(archive, "raw_files", racing)
    sessions.short_ids(archive)
    monkeypatch.undo()
    first = visited[0].name
    assert sessions.short_ids(archive)[ids[first]] == ids[first][:9] + "1"


def test_the_notes_of_references_without_a_matching_passage_keep_to_the_budget(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync"
    folder.mkdir(parents=True)
    sids = [f"{i:08x}-1111-4222-8333-444455556666" for i in range(20)]
    for n, sid in enumerate(sids):
        said = "Why does the retry loop spin?" + (" Backoff." if n == 0 else "")
        lines = [_line(sid, "user", said, 0), _line(sid, "assistant", "No delay.", 1)]
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    args = {"references": [f"{s}:0" for s in sids], "matching": "backoff", "max_chars": 1000}

    async def go() -> Any:
        async with Client(build_server(archive, cwd=CWD)) as client:
            return await client.call_tool("load_turn_context", args)

    r = anyio.run(go)
    text, data = r.content[0].text, r.structured_content
    assert len(text) <= 1000 and len(json.dumps(data)) <= 1000
    assert [t["session_id"] for t in data["turns"]] == [sids[0]]
    assert [m["session_id"] for m in data["not_found"]] == [sids[1]]
    assert data["truncated"] is True
    assert text.splitlines()[0] == "## 00000000:0 2026-03-20 10:00 open"
    assert text.splitlines()[-1] == (
        "… 18 more not-found notes not shown (1 of 19); ask for fewer references"
    )


def test_a_text_names_whole_session_ids_by_their_short_ids_and_leaves_other_words() -> None:
    cite = Citing({LONE: "b0b00000", "rollout-2026-03-20T10-00-00-abc": "rollout-"})
    text = f"- {LONE}:3 and rollout-2026-03-20T10-00-00-abc:1; {LONE}x stays; b0b00000-1111 too"
    assert cite.in_text(text) == (f"- b0b00000:3 and rollout-:1; {LONE}x stays; b0b00000-1111 too")
    assert Citing().in_text(text) == text


def test_a_session_id_that_is_a_folder_of_a_path_stays_whole() -> None:
    cite = Citing({LONE: "b0b00000"})
    text = f"ls proj/{LONE}/subagents; C:\\logs\\{LONE}\\a; {LONE}:2"
    assert cite.in_text(text) == f"ls proj/{LONE}/subagents; C:\\logs\\{LONE}\\a; b0b00000:2"


def test_a_lone_long_sessions_first_turns_make_room_for_the_routine_note(tmp_path: Path) -> None:
    lines = [_line(LONE, "user", "/clear", 0), *_questions()]
    assert _listed(tmp_path, lines, {"prompts": True, "max_output_chars": 1000}) == [
        "sync: 1 sessions",
        overview.ROUTINE_NOTE,
        "- b0b00000 2026-03-20 10:00 51 turns",
        *(
            f"  :{i + 1} 10:{i:02d} Question {i}" + " about the retry loop" * 6 + " about the…"
            for i in range(4)
        ),
        "  … 46 more turns not shown; raise max_output_chars",
    ]


def test_a_tool_answers_though_an_ingest_state_cannot_be_read_for_short_ids(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".claude" / "projects" / "-home-alice-projects-sync"
    folder.mkdir(parents=True)
    (folder / f"{LONE}.jsonl").write_text(_line(LONE, "user", "Hi", 0) + "\n", encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(tmp_path / ".claude")
    (archive.workspaces()[0].state_dir / "ingest.json").write_text("{cut", encoding="utf-8")
    error, text = _call(archive, "list_workspaces", {"detail": "compact"})
    assert (error, text.split(" (")[0]) == (False, "- sync")
