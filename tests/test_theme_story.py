"""Decisions and the changes that undo them, the story-first trace within a budget, noise kept out
of tagging and discovery, discovered themes addressed by their label."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from archive_mcp import Archive
from archive_mcp.render import dumps, to_jsonable
from archive_mcp.themes.labels import class_tfidf, label_words
from archive_mcp.themes.noise import noise_kind
from archive_mcp.themes.store import Member, Theme
from archive_mcp.themes.trace.decisions import clip, flag_turn, pair_changes
from archive_mcp.themes.trace.output import EventLine, TraceOutput
from archive_mcp.themes.trace.rules import TRACE_RULES
from archive_mcp.themes.trace.timeline import build_timeline

# Changes of course are claimed only with `claim_changes` (off by default): these tests measure it.
CLAIMING = replace(TRACE_RULES, claim_changes=True)

SAMPLE = Path(__file__).parent.parent / "archive_mcp" / "sample" / "kimi-themes"


@pytest.mark.parametrize(
    ("user", "assistant", "kinds", "worked", "want"),
    [
        ("<command-name>/export</command-name>", "", [], False, "command"),
        (
            "<local-command-stdout>Context usage 40%</local-command-stdout>",
            "",
            [],
            False,
            "command",
        ),
        (
            "/gsd:execute-plan .planning/phases/03/03-01-PLAN.md",
            "Ran the plan: edited 4 files.",
            [],
            True,
            None,
        ),
        (
            "This session is being continued from a previous conversation that ran out of context.",
            "ok",
            [],
            False,
            "compaction",
        ),
        ("[Request interrupted by user]", "", [], False, "interrupted"),
        ("continue", "", [], False, "continuation"),
        ("fix the login page", "API Error: 529 overloaded", [], False, "api_error"),
        ("fix the login page", "Fixed the redirect.", ["fix"], True, None),
        ("anything", "anything", ["compaction"], False, "compaction"),
    ],
)
def test_noise_turns_are_recognised_from_kinds_or_text(
    user: str, assistant: str, kinds: list[str], worked: bool, want: str | None
) -> None:
    assert noise_kind(user, assistant, kinds, worked) == want


@pytest.mark.parametrize(
    ("user", "assistant", "kinds", "want"),
    [
        ("wait, let's get the websocket feed working first", "", [], ("change", "user")),
        ("go back to the polling version, it was working before", "", [], ("reversal", "user")),
        ("don't use the Jupiter API", "", [], ("change", "user")),
        ("yes", "Option A or B?", [], ("decision", "user")),
        ("let's go with Redis for the cache", "", [], ("decision", "user")),
        (
            "SessionCache 要不要改成进程内缓存？",
            "决定：改用进程内缓存",
            ["decision"],
            ("decision", "assistant"),
        ),
        ("what does this function return?", "It returns a list.", ["question"], None),
        (
            "Why is the price null?",
            "Jupiter returns 401, so I'm switching to CoinGecko.",
            [],
            ("change", "assistant"),
        ),
    ],
)
def test_flags_courses_set_and_changed_including_the_users_corrections(
    user: str, assistant: str, kinds: list[str], want: tuple[str, str] | None
) -> None:
    f = flag_turn(user, assistant, kinds)
    assert (None if f is None else (f.kind, f.by)) == want


def _row(sid: str, turn: int, user: str, assistant: str = "") -> dict:
    return {
        "session_id": sid,
        "turn": turn,
        "user_text": user,
        "assistant_text": assistant,
        "keywords": [],
    }


def test_a_change_is_paired_with_the_decision_it_undoes_by_meaning_not_by_one_shared_word() -> None:
    rows = [
        _row(
            "s1",
            0,
            "let's go with Redis for the session cache, evictions by TTL",
            "Redis session cache with TTL evictions.",
        ),
        _row(
            "s1",
            1,
            "let's use github actions for the release workflow",
            "Release workflow on github actions.",
        ),
        _row("s2", 0, "the github release page needs a changelog section", "Added a changelog."),
        _row(
            "s3",
            0,
            "actually drop Redis: keep the session cache in process, TTL evictions stay",
            "Session cache is now in-process; Redis removed.",
        ),
    ]
    flags = [flag_turn(r["user_text"], r["assistant_text"], []) for r in rows]
    pairs = pair_changes(rows, flags)
    assert [(i, j) for i, j, *_ in pairs] == [(3, 0)]
    assert {"redis", "session", "cache"} <= set(pairs[0][3])


def _timeline(n: int) -> Theme:
    return Theme(
        "t", "t", members=[Member("s", "main", i, "reference", "test", "") for i in range(n)]
    )


def _frame(texts: list[tuple[str, str]], files: list[str] | None = None) -> pl.LazyFrame:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    n = len(texts)
    return pl.DataFrame(
        {
            "session_id": ["s"] * n,
            "agent": ["main"] * n,
            "turn": list(range(n)),
            "started_at": [start + timedelta(hours=6 * i) for i in range(n)],
            "summary": [f"Asked: {u} Outcome: {a}" for u, a in texts],
            "kinds": [[] for _ in texts],
            "files": [[f] for f in files or ["src/feed.ts"] * n],
            "keywords": [u.split()[:3] for u, _ in texts],
            "status": ["ok"] * n,
            "user_text": [u for u, _ in texts],
            "assistant_text": [a for _, a in texts],
            "source": ["kimi"] * n,
        }
    ).lazy()


def test_trace_tells_the_story_first_and_keeps_the_newest_events_within_the_budget() -> None:
    texts = [
        (
            "let's poll the price feed every 5 seconds from the REST endpoint",
            "Polling the REST price feed every 5 s.",
        )
    ]
    texts += [
        (f"tweak the table column number {i} alignment and padding", f"Column {i} aligned.")
        for i in range(60)
    ]
    texts += [
        (
            "actually stop polling the price feed, switch to the websocket stream",
            "The price feed now comes from the websocket stream.",
        )
    ]
    texts += [("rename the settings panel heading", "Renamed the heading.")]
    files = ["src/feed.ts"] + ["src/table.tsx"] * 60 + ["src/feed.ts", "src/settings.tsx"]
    tl = build_timeline(_timeline(len(texts)), "ws", _frame(texts, files), rules=CLAIMING)
    assert tl.threads and tl.threads[-1][0].ref == "s:0" and tl.threads[-1][-1].ref == "s:61"
    assert [s.ref for s in tl.now] == ["s:62", "s:61", "s:60"]
    assert tl.current_state.startswith(
        "latest substantive turns, newest first: "
        "2026-01-16 (s:62): rename the settings panel heading → Renamed the heading.; "
        "2026-01-16 (s:61): actually stop polling the price feed"
    )
    for budget in (1500, 3000, 8000):  # at 1200, Now's three turns leave room for the newest only
        md = tl.markdown(budget)
        assert len(md) <= budget
        assert md.index("**Now**") < md.index("## Decisions") < md.index("## Timeline")
        assert "- was \"let's poll the price feed" in md and "s:61" in md
        assert (
            md.rstrip().endswith(("]", "2026-01-16")) or "s:62" in md
        )  # the newest event is shown
        assert md.count(" more turns not shown (") == 1  # between the first events and the newest
        assert "\n- 2026-01-01 00:00 s:0 " in md  # the beginning survives the cut
        data = to_jsonable(tl.budgeted(budget))
        assert len(json.dumps(data, ensure_ascii=False)) <= budget
        assert data["threads"] and data["events"][-1]["ref"] == "s:62" and data["truncated"]
        assert budget < 3000 or data["events"][0]["ref"] == "s:0"  # room for two: both ends
        assert data["not_shown"]["events"] == len(texts) - len(data["events"])
    assert tl.markdown(100_000).count("\n- 2026") == len(texts)


def test_a_trace_is_told_once_its_text_naming_what_its_typed_structure_keeps_in_budget() -> None:
    """`told` budgets once: the text is the markdown of the very items the structure keeps, and
    the structure's JSON stays within even the smallest budget (the memories, quiet spells and
    Now give way; before, a budget of 500 came back as ~970 characters)."""
    texts = [
        (f"tweak the table column number {i} alignment and padding", f"Column {i} aligned.")
        for i in range(40)
    ]
    tl = build_timeline(_timeline(len(texts)), "ws", _frame(texts), rules=CLAIMING)
    tl.memories = [
        f"memory {i}: the table columns stay left-aligned in every view" for i in range(10)
    ]
    for budget in (500, 1500, 8000):
        told = tl.told(budget)
        assert told.text == tl.markdown(budget, keep=told.output)
        assert len(told.text) <= budget
        assert len(json.dumps(to_jsonable(told.output), ensure_ascii=False)) <= budget
        assert isinstance(told.output, TraceOutput)
        assert all(isinstance(e, EventLine) for e in told.output.events)
        shown = {e.ref for e in told.output.events}
        timeline = told.text.partition("## Timeline")[2]
        assert {e.ref for e in tl.events if f" {e.ref} " in timeline} == shown
        assert told.output.not_shown.events == len(texts) - len(told.output.events)
    small = tl.told(500).output
    assert small.truncated and len(small.memories) < 10
    assert tl.told(8000).output.memories == tl.memories


def test_a_thread_names_what_its_newest_change_may_undo_instead_in_text_and_structure() -> None:
    texts = [
        (
            "add a flash when a new signal arrives on the screener rows",
            "Added a flash on new signals.",
        ),
        ("use a green glow on the signal rows", "Rows glow green."),
        ("sort the screener by signal count", "Sorted by count."),
        ("wait, the flash is far too slow", "The flash now lasts 100 ms."),
    ]
    tl = build_timeline(_timeline(len(texts)), "ws", _frame(texts), rules=CLAIMING)
    change = next(r for r in tl.reversals if r.reversed_by.ref == "s:3")
    assert change.decision.ref == "s:2" and [a.ref for a in change.alternatives] == ["s:0", "s:1"]
    assert change.alternatives[0].gist.startswith("add a flash")
    thread = next(t for t in tl.threads if t[-1].ref == "s:3")
    assert thread[-1].alternatives == ["s:0", "s:1"]
    assert {d.ref: d.alternatives for d in tl.decisions} == {
        "s:0": [],
        "s:1": [],
        "s:2": ["s:0"],
        "s:3": ["s:0", "s:1"],
    }
    for budget in (2000, 8000):
        md = tl.markdown(budget)
        assert "[change by the user; or it undoes s:0, s:1]" in md and len(md) <= budget
        data = to_jsonable(tl.budgeted(budget))
        assert data["threads"][0][-1]["alternatives"] == ["s:0", "s:1"]
        assert len(json.dumps(data, ensure_ascii=False)) <= budget


def test_a_reversal_shows_its_turns_as_the_decisions_list_does_after_every_pair_is_made() -> None:
    rules = replace(CLAIMING, claim_by="any")  # the assistant's chained change is claimed
    texts = [
        ("use redis for the session cache", "Redis holds the sessions."),
        ("add a sqlite store for trades", "Trades go to SQLite."),
        (
            "session cache memcached client",
            "Did: edited cache.py",
        ),  # no cue: a course only once undone
        ("wait, the memcached session cache is too slow", "Back to a faster cache."),
    ]
    tl = build_timeline(_timeline(len(texts)), "ws", _frame(texts), rules=rules)
    final = {d.ref: d for d in tl.decisions}
    undone = next(r.decision for r in tl.reversals if r.reversed_by.ref == "s:3")
    # s:2 was undone by s:3, and then paired itself (it changed s:0): the reversal says so too
    assert (undone.ref, undone.flag, undone.alternatives) == ("s:2", "change", ["s:1"])
    for r in tl.reversals:
        for side in (r.decision, r.reversed_by):
            assert (side.flag, side.alternatives) == (
                final[side.ref].flag,
                final[side.ref].alternatives,
            )


def test_only_the_users_changes_are_claimed_as_changes_of_course() -> None:
    texts = [
        ("use redis for the session cache", "Redis holds the sessions."),
        ("the session cache is slow", "Switched to a memcached session cache instead."),
        ("wait, the memcached session cache is too slow, go back to redis", "Back to Redis."),
    ]
    tl = build_timeline(_timeline(len(texts)), "ws", _frame(texts), rules=CLAIMING)
    flags = {d.ref: (d.flag, d.by) for d in tl.decisions}
    assert flags["s:1"] == ("decision", "assistant")  # the assistant's switch: flagged, not claimed
    assert flags["s:2"] == ("reversal", "user")
    assert [r.reversed_by.ref for r in tl.reversals] == ["s:2"]


def test_clip_never_cuts_a_word() -> None:
    text = "the websocket stream replaced polling everywhere in the terminal"
    for width in range(20, len(text)):
        cut = clip(text, width)
        assert len(cut) <= width and cut.endswith("…") and text.startswith(cut[:-1])
        assert text[len(cut) - 1] == " "  # the cut falls between words
    assert clip(text, 200) == text


def test_labels_leave_out_function_words_and_chat_filler() -> None:
    docs = {
        0: [["them", "they", "same", "cool", "randomise", "randomise", "colours"]],
        1: [["watchlist", "watchlist", "tape", "them"]],
    }
    assert class_tfidf(docs) == {0: ["randomise", "colours"], 1: ["watchlist", "tape"]}


def test_labels_use_whole_words_not_cjk_fragments_or_dates() -> None:
    words = label_words(
        "我们决定改用 Redis 缓存 on 2026-01-14T14 for v22-02", ["SessionCache", "我们决定改用"]
    )
    assert "redis" in words and "sessioncache" in words
    assert not any(len(w) == 2 and "们" in w for w in words) and "我们决定改用" not in words
    assert not any(ch.isdigit() for w in words for ch in w)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Archive:
    a = Archive(tmp_path_factory.mktemp("home"), embedder=None)
    a.ingest(SAMPLE)
    return a


def test_a_discovered_theme_is_traced_shown_and_deleted_by_its_label(archive: Archive) -> None:
    found = archive.discover_themes("shop")
    theme = next(t for t in found.themes if " / " in t.name)
    label = theme.name
    assert archive.themes_store("shop").require(label).slug == theme.slug
    tl = archive.trace_theme(label, "shop")
    assert len(tl.events) == len(theme.members)
    assert archive.delete_theme(label, "shop").slug == theme.slug
    assert all(t.slug != theme.slug for t in archive.list_themes("shop"))


def test_seed_tagging_returns_near_misses_with_a_one_line_summary(archive: Archive) -> None:
    r = archive.tag_theme("auth", "shop", seeds=["issue_access_token JWT"])
    assert r.near_misses
    for n in r.near_misses:
        assert n["ref"] == f"{n['session_id']}:{n['turn']}" and 0 < len(n["summary"]) <= 160
        assert "\n" not in n["summary"] and 0 < n["share"] < 0.5


def test_files_are_shown_relative_to_the_project_and_a_bare_name_joins_its_path() -> None:
    from datetime import datetime

    import polars as pl

    from archive_mcp.themes.trace.timeline import _files

    root = "/Users/ann/web"
    day = [datetime(2026, 1, d) for d in (8, 8, 9, 10)]
    frame = pl.DataFrame(
        {
            "session_id": ["s1", "s1", "s2", "s3"],
            "turn": [1, 2, 0, 4],
            "started_at": day,
            "files": [
                [f"{root}/src/data.ts", "data.ts"],
                ["data.ts"],
                [f"{root}/src/a/index.ts", f"{root}/src/b/index.ts", "index.ts"],
                ["C:\\proj\\main.py", "/etc/hosts"],
            ],
        }
    )
    rows = _files(frame, [root + "/", "C:\\proj"])
    assert [(r.path, r.turns, r.first[:10], r.last[:10]) for r in rows] == [
        ("src/data.ts", 2, "2026-01-08", "2026-01-08"),  # the bare name in turn 1 counts once
        ("index.ts", 1, "2026-01-09", "2026-01-09"),  # two files end so: the bare name stays
        ("src/a/index.ts", 1, "2026-01-09", "2026-01-09"),
        ("src/b/index.ts", 1, "2026-01-09", "2026-01-09"),
        ("/etc/hosts", 1, "2026-01-10", "2026-01-10"),
        ("main.py", 1, "2026-01-10", "2026-01-10"),
    ]
    assert _files(frame.head(0), [root]) == []


def test_the_json_keeps_its_keys_where_python_names_the_parts_otherwise() -> None:
    """The parts are dataclasses in Python (a gap's `start`, a file's `path`, a bucket's `name`);
    the JSON the CLI prints, and `budgeted`, keep the keys they always had (a gap's `from`), and a
    thread step or a reversal's side names `alternatives` only when it has some."""
    texts = [
        ("add a flash when a new signal arrives on the screener rows", "Added a flash."),
        ("use a green glow on the signal rows", "Rows glow green."),
        ("sort the screener by signal count", "Sorted by count."),
        ("wait, the flash is far too slow", "The flash now lasts 100 ms."),
    ]
    late = pl.when(pl.col("turn") == 3).then(pl.col("started_at") + timedelta(days=10))
    frame = _frame(texts).with_columns(late.otherwise(pl.col("started_at")).alias("started_at"))
    tl = build_timeline(_timeline(len(texts)), "ws", frame, rules=CLAIMING)
    data = json.loads(dumps(tl))
    gap = {"from": "2026-01-01T12:00:00+00:00", "to": "2026-01-11T18:00:00+00:00", "days": 10.25}
    assert data["dormant_gaps"] == [gap]
    assert (tl.dormant_gaps[0].start, tl.dormant_gaps[0].end) == (gap["from"], gap["to"])
    assert data["files"] == [
        {"file": "src/feed.ts", "turns": 4, "first": "2026-01-01T00:00:00+00:00", "last": gap["to"]}
    ]
    assert [(b["bucket"], b["turns"]) for b in data["buckets"]] == [
        ("2026-01-01", 3),
        ("2026-01-11", 1),
    ]
    assert list(data["buckets"][0]) == ["bucket", "start", "turns", "keywords"]
    brief = ["session_id", "turn", "ref", "at", "flag", "by", "gist", "summary"]
    (thread,) = data["threads"]
    named = brief + ["alternatives"]  # s:2 and s:3 may each undo an earlier course instead
    assert [list(s) for s in thread] == [brief, brief, named, named]
    assert thread[-1]["alternatives"] == ["s:0", "s:1"]
    last = data["reversals"][-1]
    assert list(last) == ["decision", "reversed_by", "shared_terms", "similarity", "alternatives"]
    assert last["alternatives"][1] == {
        "ref": "s:1",
        "at": "2026-01-01T06:00:00+00:00",
        "gist": "use a green glow on the signal rows",
    }
    assert data["decisions"][-1] == {
        "session_id": "s",
        "agent": "main",
        "source": "kimi",
        "turn": 3,
        "ref": "s:3",
        "at": gap["to"],
        "flag": "change",
        "by": "user",
        "cue": "wait",
        "gist": "wait, the flash is far too slow",
        "summary": "Asked: wait, the flash is far too slow Outcome: The flash now lasts 100 ms.",
        "kinds": [],
        "undoes": "s:2",
        "confidence": 0.4,
        "alternatives": ["s:0", "s:1"],
    }
    assert to_jsonable(tl.budgeted())["dormant_gaps"] == [{**gap, "days": 10.2}]
    assert "\n- 2026-01-01 → 2026-01-11 (10 days quiet)\n" in tl.markdown()


REVERTED = [
    ("use redis for the session cache", "Redis holds the sessions."),
    ("the session cache is slow", "Switched to a memcached session cache instead."),
    ("wait, the memcached session cache is too slow, go back to redis", "Back to Redis."),
]


def test_by_default_no_change_of_course_is_claimed_only_decision_candidates() -> None:
    tl = build_timeline(_timeline(len(REVERTED)), "ws", _frame(REVERTED))
    assert not tl.claims_changes and tl.reversals == [] and tl.threads == []
    assert [(d.ref, d.flag, d.undoes) for d in tl.decisions] == [
        ("s:0", "decision", None),
        ("s:1", "decision", None),
        ("s:2", "decision", None),
    ]
    md = tl.markdown()
    assert "3 turns, 2026-01-01 → 2026-01-01 (by session); 3 decision candidates (changes of " in md
    assert (
        "## Decision candidates (newest first)\n"
        '- "wait, the memcached session cache is too slow, go back to redis" (2026-01-01, s:2)\n'
        '- "Switched to a memcached session cache instead." (2026-01-01, s:1)\n'
        '- "use redis for the session cache" (2026-01-01, s:0)\n'
    ) in md
    data = to_jsonable(tl.budgeted())
    text = md + json.dumps(data)
    for claim in ("undoes", "reversal by", "change by", 'was "', "→ now", "alternatives"):
        assert claim not in text, claim
    assert data["claims_changes"] is False and data["threads"] == []
    assert data["decisions"][0] == {
        "ref": "s:2",
        "at": "2026-01-01T12:00:00+00:00",
        "by": "user",
        "gist": "wait, the memcached session cache is too slow, go back to redis",
    }


def test_with_claim_changes_the_was_now_links_come_back() -> None:
    tl = build_timeline(_timeline(len(REVERTED)), "ws", _frame(REVERTED), rules=CLAIMING)
    assert tl.claims_changes and [(r.decision.ref, r.reversed_by.ref) for r in tl.reversals] == [
        ("s:1", "s:2")
    ]
    md = tl.markdown()
    assert "3 turns, 2026-01-01 → 2026-01-01 (by session); 2 decisions, 1 changes of course" in md
    assert (
        '- was "Switched to a memcached session cache instead." (2026-01-01, s:1) → now "wait, the '
        'memcached session cache is too slow, go back to redis" (2026-01-01, s:2) [reversal by the '
        "user; or it undoes s:0]\n"
        '- decision: "use redis for the session cache" (2026-01-01, s:0)\n'
    ) in md
    data = to_jsonable(tl.budgeted())
    assert data["claims_changes"] is True and data["decisions"][0]["undoes"] is None
    assert [s["ref"] for s in data["threads"][0]] == ["s:1", "s:2"]
