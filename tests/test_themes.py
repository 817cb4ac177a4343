"""Themes: discovery on planted themes, tagging by seeds, traces with reversals, plots, tools."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import FakeEmbedder

from archive_mcp import Archive, Filters
from archive_mcp.cli.main import main
from archive_mcp.synthetic import evaluation
from archive_mcp.themes.store import ThemeError, slug_of
from archive_mcp.themes.tag.membership import SIGNALS
from archive_mcp.themes.tag.rules import TAG_RULES
from archive_mcp.themes.trace.rules import TRACE_RULES

Key = tuple[str, str, int]

SAMPLE = Path(__file__).parent.parent / "archive_mcp" / "sample" / "kimi-themes"
LABELS = json.loads((SAMPLE / "LABELS.json").read_text(encoding="utf-8"))
# Changes of course are claimed only with `claim_changes` (off by default): these tests measure it.
CLAIMING = replace(TRACE_RULES, claim_changes=True)


def _truth(name: str) -> set[tuple[str, str, int]]:
    return {(s, "main", t) for s, t in LABELS["themes"][name]}


def purity_recall(themes: list) -> dict[str, tuple[float, float]]:  # noqa: ANN001
    return evaluation.purity_recall(themes, LABELS["themes"])


@pytest.fixture
def archive() -> Archive:
    a = Archive(embedder=None)
    a.ingest(SAMPLE)
    return a


def test_discovery_without_embeddings_recovers_planted_themes_and_keeps_ids(
    archive: Archive,
) -> None:
    first = archive.discover_themes("shop")
    assert first.method == "tfidf"
    scores = purity_recall(first.themes)
    assert sum(p for p, _ in scores.values()) / len(scores) >= 0.8
    assert sum(r for _, r in scores.values()) / len(scores) >= 0.8
    assert all(
        t.status == "suggested" and t.slug == f"cluster-{t.cluster_id}" for t in first.themes
    )
    again = archive.discover_themes("shop")
    assert [(t.cluster_id, sorted(m.key for m in t.members)) for t in again.themes] == [
        (t.cluster_id, sorted(m.key for m in t.members)) for t in first.themes
    ]


def match_clusters(
    new: dict[int, set[Key]], old: dict[int, set[Key]], min_overlap: float = 0.3
) -> dict[int, int]:
    """The reference for `graph.match_rows`: greedy by Jaccard overlap of member sets."""
    from archive_mcp.themes.discover.graph import greedy_ids

    pairs = [
        (j, a, b)
        for a, ma in new.items()
        for b, mb in old.items()
        if (j := len(ma & mb) / max(1, len(ma | mb))) >= min_overlap
    ]
    return greedy_ids(pairs, list(new), list(old))


def test_stable_ids_follow_member_overlap() -> None:
    old = {0: {("s", "main", 1), ("s", "main", 2)}, 1: {("t", "main", 1)}}
    new = {
        5: {("t", "main", 1), ("t", "main", 2)},
        6: {("s", "main", 1), ("s", "main", 2), ("s", "main", 3)},
        7: {("u", "main", 0)},
    }
    assert match_clusters(new, old) == {6: 0, 5: 1, 7: 2}


def test_discovery_never_touches_tagged_themes(archive: Archive) -> None:
    found = archive.discover_themes("shop")
    target = found.themes[0]
    archive.tag_theme(
        target.slug,
        "shop",
        references=[{"session_id": target.members[0].session_id, "turn": target.members[0].turn}],
    )
    before = archive.themes_store("shop").get(target.slug)
    assert before.status == "tagged"
    archive.discover_themes("shop")
    assert archive.themes_store("shop").get(target.slug) == before


def test_tag_by_seeds_attaches_the_theme_turns_and_reports_near_misses(archive: Archive) -> None:
    r = archive.tag_theme("auth tokens", "shop", seeds=["issue_access_token JWT"])
    got = {m.key for m in r.attached}
    truth = _truth("auth-tokens")
    assert len(got & truth) / len(got) == 1.0
    assert len(got & truth) / len(truth) >= 0.8
    assert all(m.provenance == "seed:issue_access_token JWT" for m in r.attached)
    best = max(m.score for m in r.attached)
    assert r.near_misses and all(n["score"] < 0.5 * best for n in r.near_misses)
    again = archive.tag_theme("auth tokens", "shop", seeds=["issue_access_token JWT"])
    assert again.attached == [] and again.members == r.members  # idempotent


def test_tag_by_reference_validates_turns_and_removes(archive: Archive) -> None:
    sid, turn = LABELS["themes"]["ci-flakiness"][0]
    r = archive.tag_theme(
        "ci", "shop", references=[{"session_id": sid, "turn": turn}], description="flaky CI"
    )
    assert [(m.session_id, m.turn, m.provenance) for m in r.attached] == [(sid, turn, "reference")]
    with pytest.raises(
        ThemeError, match=r"no turn .*:99 \(agent main\) in workspace shop; valid turns: 0\.\."
    ):
        archive.tag_theme("ci", "shop", references=[{"session_id": sid, "turn": 99}])
    with pytest.raises(ThemeError, match="unknown session"):
        archive.tag_theme("ci", "shop", references=[{"session_id": "nope", "turn": 0}])
    r = archive.tag_theme("ci", "shop", remove=[{"session_id": sid, "turn": turn}])
    assert r.members == 0 and len(r.removed) == 1
    with pytest.raises(ThemeError, match="give 1 to 3 seeds"):
        archive.tag_theme("ci", "shop", seeds=["a", "b", "c", "d"])


@pytest.mark.parametrize(
    "name", ["../../x", "a/b", "..", ".hidden", "", "x" * 200, "a\\b", "nul\x00byte"]
)
def test_hostile_theme_names_are_refused(archive: Archive, name: str) -> None:
    with pytest.raises(ThemeError, match="invalid theme name"):
        archive.tag_theme(name, "shop", seeds=["x"])
    assert not list(archive.home.rglob("x.json"))


def test_unicode_theme_names_are_kept() -> None:
    assert slug_of("缓存方案") == "缓存方案"
    assert slug_of("Login Flow v2") == "login-flow-v2"


def test_trace_orders_events_buckets_and_flags_the_reversal(archive: Archive) -> None:
    refs = [{"session_id": s, "turn": t} for s, t in LABELS["themes"]["payment-retries"]]
    archive.tag_theme("payment retries", "shop", references=refs)
    tl = archive.trace_theme("payment retries", "shop", rules=CLAIMING)
    times = [e.at for e in tl.events]
    assert times == sorted(times) and len(times) == len(refs)
    assert tl.granularity == "week" and tl.first_seen == times[0] and tl.last_seen == times[-1]
    rev = LABELS["reversals"]["payment-retries"]
    undo = next(
        r
        for r in tl.reversals
        if (r.reversed_by.session_id, r.reversed_by.turn) == (rev["session_id"], rev["turn"])
    )
    assert undo.reversed_by.flag == "reversal" and "charge_card" in undo.shared_terms
    assert undo.decision.summary.startswith("Asked: Should charge_card retry failed PSP calls?")
    assert [r.reversed_by.flag for r in tl.reversals].count("reversal") == 1
    assert tl.files[0].path.startswith("app/payments/")
    assert tl.frame.columns[:4] == ["session_id", "agent", "turn", "started_at"]
    assert tl.buckets[0].name.startswith("week of ") and tl.buckets[0].keywords
    md = tl.markdown()
    assert "## Decisions" in md and "**reversal**" in md
    assert md.index("**Now**") < md.index("## Decisions") < md.index("## Timeline")
    by_day = archive.trace_theme("payment retries", "shop", granularity="day")
    assert by_day.buckets[0].name == "2026-01-01"


def test_trace_links_memories_and_handles_chinese_and_unknown_themes(archive: Archive) -> None:
    refs = [{"session_id": s, "turn": t} for s, t in LABELS["themes"]["缓存方案"]]
    archive.tag_theme("缓存方案", "shop", references=refs)
    archive.memory("shop").remember(
        "cache-choice", "Back to Redis.", "decisions", sources=["缓存方案"]
    )
    tl = archive.trace_theme("缓存方案", "shop", rules=CLAIMING)
    assert tl.memories == ["memory/decisions/cache-choice"]
    rollback = [
        r
        for r in tl.reversals
        if r.reversed_by.summary.startswith("Asked: 进程内缓存导致会话不一致")
    ]
    assert len(rollback) == 1 and rollback[0].decision.summary.startswith(
        "Asked: SessionCache 要不要改成进程内缓存"
    )
    assert (
        len(tl.reversals) <= 2
    )  # the switch to the in-process cache may show as a change of the Redis course
    with pytest.raises(
        ThemeError, match="no theme 'nope' in workspace shop; known themes: 缓存方案"
    ):
        archive.trace_theme("nope", "shop")


def test_plot_is_a_valid_png(archive: Archive, tmp_path: Path) -> None:
    from archive_mcp.plot import themes_over_time

    for name in ("payment-retries", "auth-tokens"):
        archive.tag_theme(
            name,
            "shop",
            references=[{"session_id": s, "turn": t} for s, t in LABELS["themes"][name]],
        )
    out = tmp_path / "themes.png"
    themes_over_time(
        [
            archive.trace_theme("payment-retries", "shop"),
            archive.trace_theme("auth-tokens", "shop"),
        ],
        out,
    )
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def _two_day_timeline(by: str):  # noqa: ANN202
    """A 3-turn theme on 2026-01-08 (09:00, 15:00) and 2026-01-09 (10:00): a course, then undone."""
    from datetime import datetime

    from archive_mcp.themes.store import Member, Theme
    from archive_mcp.themes.trace.timeline import build_timeline

    rows = [
        ("s1", 0, 8, 9, "Should we cache sessions in Redis or in process?", "Let's compare."),
        ("s1", 1, 8, 15, "Let's go with Redis for the session cache.", "We use Redis."),
        ("s2", 0, 9, 10, "Actually, go back to the in-process cache.", "Reverting to it."),
    ]
    turns = pl.DataFrame(
        {
            "session_id": [r[0] for r in rows],
            "agent": ["main"] * 3,
            "turn": [r[1] for r in rows],
            "started_at": [datetime(2026, 1, r[2], r[3], tzinfo=UTC) for r in rows],
            "summary": [r[4] for r in rows],
            "kinds": [["decision"], ["decision"], ["reversal"]],
            "files": [[], [], []],
            "keywords": [["cache"], ["redis"], ["cache"]],
            "status": ["ok"] * 3,
            "user_text": [r[4] for r in rows],
            "assistant_text": [r[5] for r in rows],
            "source": ["kimi"] * 3,
        },
        schema_overrides={"files": pl.List(pl.String), "keywords": pl.List(pl.String)},
    )
    members = [Member(r[0], "main", r[1], "reference", "test", "") for r in rows]
    return build_timeline(Theme("cache", "cache", members=members), "ws", turns.lazy(), by)


def test_plot_bins_by_the_trace_granularity_with_markers_on_their_bins() -> None:
    from datetime import datetime

    from archive_mcp.plot import plot_data

    def day(d: int, h: int = 0) -> datetime:
        return datetime(2026, 1, d, h, tzinfo=UTC)

    tl = _two_day_timeline("day")
    points, markers = plot_data([tl])  # `trace --by day`: one bin a day, at 00:00
    assert points.rows() == [("cache", day(8), 2), ("cache", day(9), 1)]
    assert markers.select("x", "kind", "ref").rows() == [
        (day(8), "decision", "s1:0"),
        (day(8), "decision", "s1:1"),
        (day(9), "reversal", "s2:0"),
    ]
    assert set(markers["x"]) <= set(points["x"])  # every marker sits on a plotted bin
    points, markers = plot_data([_two_day_timeline("week")])  # Monday 2026-01-05
    assert points.rows() == [("cache", day(5), 3)] and set(markers["x"]) == {day(5)}
    points, markers = plot_data([_two_day_timeline("session")])  # each session at its first turn
    assert points.rows() == [("cache", day(8, 9), 2), ("cache", day(9, 10), 1)]
    assert markers["x"].to_list() == [day(8, 9), day(8, 9), day(9, 10)]
    assert plot_data([tl], "1d")[0].equals(plot_data([tl])[0])  # a polars period works too
    wide = tl.frame.with_columns(pl.col("started_at").dt.offset_by("3d").alias("started_at"))
    tl.frame = pl.concat([tl.frame, wide.head(1)])  # a quiet day between is a zero, not a gap
    points, _ = plot_data([tl])
    assert points["turns"].to_list() == [2, 1, 0, 1]


def test_themes_frame_has_one_row_per_member(archive: Archive) -> None:
    archive.tag_theme(
        "ci",
        "shop",
        references=[{"session_id": s, "turn": t} for s, t in LABELS["themes"]["ci-flakiness"]],
    )
    df = archive.themes("shop").collect()
    assert df.height == len(LABELS["themes"]["ci-flakiness"])
    assert set(df["provenance"]) == {"reference"} and set(df["theme"]) == {"ci"}


def test_cli_themes_and_trace(archive: Archive, tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        main, ["themes", "tag", "payments", "-w", "shop", "-s", "charge_card retries PSP"]
    )
    assert r.exit_code == 0 and r.stdout.startswith("payments: ")
    r = runner.invoke(
        main,
        ["trace", "payments", "-w", "shop", "--format", "csv", "--plot", str(tmp_path / "p.png")],
    )
    assert (
        r.exit_code == 0
        and r.stdout.splitlines()[0]
        == "started_at,source,session_id,agent,turn,bucket,summary,kinds"
    )
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    r = runner.invoke(main, ["trace", "payments", "-w", "shop", "--format", "json"])
    assert json.loads(r.stdout)["theme"] == "payments"
    runner.invoke(main, ["themes", "tag", "tokens", "-w", "shop", "-s", "refresh token"])
    r = runner.invoke(main, ["trace", "payments", "tokens", "-w", "shop", "--format", "json"])
    assert [t["theme"] for t in json.loads(r.stdout)] == ["payments", "tokens"]
    r = runner.invoke(main, ["trace", "payments", "tokens", "-w", "shop", "--format", "csv"])
    assert (
        r.stdout.splitlines()[0]
        == "theme,started_at,source,session_id,agent,turn,bucket,summary,kinds"
    )
    r = runner.invoke(main, ["trace", "../etc", "-w", "shop"])
    assert r.exit_code == 1 and "invalid theme name" in r.stderr
    r = runner.invoke(main, ["themes", "tag", "x", "-w", "shop", "-r", "bad-ref"])
    assert r.exit_code == 2
    r = runner.invoke(main, ["themes", "delete", "payments", "-w", "shop"])
    assert (r.exit_code, r.stdout) == (0, "deleted theme 'payments'\n")


@pytest.mark.slow  # end to end (processes, a server): CI runs it; the fast loop does not
@pytest.mark.anyio
async def test_theme_tools_over_mcp(archive: Archive) -> None:
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    server = build_server(archive, cwd="/home/dev/projects/shop")
    async with Client(server) as c:
        r = await c.call_tool(
            "tag_theme", {"theme": "payments", "seeds": ["charge_card retries PSP"]}
        )
        assert not r.is_error and r.structured_content["members"] >= 5
        r = await c.call_tool("trace_theme", {"theme": "payments", "max_output_chars": 1700})
        sc = r.structured_content
        assert (
            not r.is_error
            and len(r.content[0].text) <= 1700
            and len(json.dumps(sc, ensure_ascii=False)) <= 1700
        )
        # no change of course is claimed by default: decision candidates, the latest turns as Now
        assert sc["claims_changes"] is False and sc["threads"] == [] and sc["decisions"]
        assert "undoes" not in r.content[0].text and "reversal by" not in r.content[0].text
        assert [list(n) for n in sc["now"]] == [["ref", "at", "quote"]] * len(sc["now"])
        assert 1 <= len(sc["now"]) <= 3 and sc["now"][0]["at"] <= sc["last_seen"]
        assert (
            sc["events"][-1]["at"] == sc["last_seen"] and sc["truncated"]
        )  # the newest events survive the cut
        r = await c.call_tool("list_themes", {})
        assert [t["name"] for t in r.structured_content["themes"]] == ["payments"]
        r = await c.call_tool("discover_themes", {"min_size": 3})
        assert r.structured_content["method"] == "tfidf" and r.structured_content["themes"]
        res = await c.read_resource("theme://payments")
        assert res.contents[0].text.startswith("# Theme: payments")
        bad = await c.call_tool("tag_theme", {"theme": "../../x", "seeds": ["y"]})
        assert bad.is_error and "invalid theme name" in bad.content[0].text
        bad = await c.call_tool("trace_theme", {"theme": "nope"})
        assert bad.is_error and "known themes" in bad.content[0].text
        r = await c.call_tool("delete_theme", {"theme": "payments"})
        assert not r.is_error
        p = await c.get_prompt("memory-theme-trace", {"topic": "payments"})
        assert "tag_theme(theme, seeds=[...])" in p.messages[0].content.text


def test_search_filtered_by_a_theme_named_with_spaces(archive: Archive) -> None:
    refs = [{"session_id": s, "turn": t} for s, t in LABELS["themes"]["payment-retries"]]
    archive.tag_theme("payment retries", "shop", references=refs)
    hits = archive.search("charge_card", "shop", filters=Filters(theme="payment retries"), limit=50)
    assert hits and {(h.session_id, h.turn) for h in hits} <= {
        (r["session_id"], r["turn"]) for r in refs
    }


def test_past_the_sample_size_discovery_reads_the_sample_texts_and_vectors_from_disk(
    monkeypatch: pytest.MonkeyPatch, fake_embedder
) -> None:  # noqa: ANN001
    from archive_mcp.themes.discover import graph

    a = Archive(embedder=fake_embedder)
    a.ingest(SAMPLE)
    _, frame, vectors = a.discovery_input("shop")
    assert (
        isinstance(vectors, np.ndarray) and frame["user_text"].null_count() == 0
    )  # everything, in memory
    everything = a.discover_themes("shop")
    monkeypatch.setattr(graph, "SAMPLE", frame.height * 2 // 3)
    _, sampled_frame, on_disk = a.discovery_input("shop")
    assert isinstance(on_disk, graph.DiskRows) and on_disk.shape == vectors.shape
    assert np.array_equal(on_disk.take(np.arange(frame.height)), vectors)
    picked = sampled_frame["sampled"].to_numpy()
    assert 0 < picked.sum() <= graph.SAMPLE
    assert (
        sampled_frame.drop("sampled")
        .filter(pl.Series(picked))
        .equals(frame.drop("assistant_text").filter(pl.Series(picked)))
    )  # the user's text only: vectors, no TF-IDF
    assert sampled_frame.select("session_id", "agent", "turn").equals(
        frame.select("session_id", "agent", "turn")
    )
    whole = sampled_frame.group_by("session_id").agg(pl.col("sampled").n_unique())["sampled"]
    assert whole.max() == 1  # whole sessions
    for column in ("user_text", "keywords", "files"):  # of the sample only
        assert sampled_frame[column].is_null().to_list() == (~picked).tolist()
    found = a.discover_themes("shop")
    assert sum(len(t.members) for t in found.themes) == found.clustered > 0
    assert {m.key for t in found.themes for m in t.members} <= set(
        frame.select("session_id", "agent", "turn").iter_rows()
    )
    # The planted themes with this 64-dimension fake embedder: all turns clustered 0.82 / 0.50
    # (purity / recall), two thirds of the sessions 0.77 / 0.39.
    for run in (everything, found):
        scores = purity_recall(run.themes)
        assert sum(p for p, _ in scores.values()) / len(scores) >= 0.75
        assert sum(r for _, r in scores.values()) / len(scores) >= 0.35


def test_stable_ids_by_rows_are_those_by_member_sets() -> None:
    from archive_mcp.themes.discover.graph import match_rows

    rng = np.random.default_rng(4)
    keys = [(f"s{i // 7}", "main", i % 7) for i in range(60)]
    for _ in range(20):
        new = {
            int(c): np.sort(rng.choice(60, rng.integers(1, 25), replace=False))
            for c in rng.choice(50, 6, replace=False)
        }
        old_rows = {
            int(c): np.sort(rng.choice(60, rng.integers(1, 25), replace=False))
            for c in rng.choice(50, 5, replace=False)
        }
        gone = {c: int(rng.integers(0, 4)) for c in old_rows}  # members no longer in the frame
        old_sets = {
            c: {keys[i] for i in r} | {(f"gone{c}", "main", k) for k in range(gone[c])}
            for c, r in old_rows.items()
        }
        want = match_clusters({c: {keys[i] for i in r} for c, r in new.items()}, old_sets)
        assert match_rows(new, {c: (r, len(r) + gone[c]) for c, r in old_rows.items()}, 60) == want
    assert match_rows({3: np.array([0, 1])}, {}, 2) == match_clusters({3: {keys[0]}}, {}) == {3: 0}


@pytest.mark.parametrize("read", [7, 1 << 20])
def test_saved_suggestions_are_read_back_member_by_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: int
) -> None:
    from archive_mcp.themes import store as themes_store
    from archive_mcp.themes.store import Member, Theme, ThemeStore, suggested

    monkeypatch.setattr(themes_store, "_READ", read)  # members cut by the end of every read
    from archive_mcp.workspaces import Workspace

    store = ThemeStore(Workspace("w", "w", root=tmp_path))
    n = 4_000 if read < 1024 else 70_000  # 7-byte reads cut every member, a few thousand suffice
    members = [
        Member(f"s{i % 3}", "main", i, "cluster:4", "discover_themes", "now", 0.5) for i in range(n)
    ]
    store.save(
        Theme('odd "members": [ name', "cluster-4", "d", [], "suggested", members, cluster_id=4)
    )
    store.save(Theme("mine", "mine", members=members[:5]))  # tagged: not a suggestion
    (tmp_path / "themes" / "cluster-9.json").write_text(
        json.dumps(
            {
                "name": "x",
                "slug": "cluster-9",
                "status": "suggested",
                "cluster_id": 9,
                "members": [
                    {
                        "session_id": "s1",
                        "agent": "main",
                        "turn": 1,
                        "provenance": "",
                        "who": "",
                        "when": "",
                    }
                ],
            }
        )
    )
    got = suggested(store.folder, lambda s, a, t: np.array([x if x % 2 else -1 for x in t]))
    assert [(th.name, th.cluster_id, th.members, len(rows), n) for th, rows, n in got] == [
        ('odd "members": [ name', 4, [], n // 2, n),
        ("x", 9, [], 1, 1),
    ]
    assert got[0][1].tolist() == list(range(1, n, 2))
    assert suggested(tmp_path / "none", lambda s, a, t: np.zeros(0)) == []


@pytest.mark.parametrize("members", [0, 1, 5_000])
def test_a_theme_is_saved_as_atomic_write_json_would_write_it(tmp_path: Path, members: int) -> None:
    from archive_mcp.workspaces import Workspace, atomic_write_json

    from archive_mcp.themes.store import Member, Theme, ThemeStore

    theme = Theme(
        'a "members": [] é',
        "a",
        "d",
        ["seed"],
        "suggested",
        [
            Member("s", "main", i, "cluster:1", "w", "now", 0.5 if i % 2 else None)
            for i in range(members)
        ],
        cluster_id=1,
        keywords=["k"],
    )
    ThemeStore(Workspace("w", "w", root=tmp_path)).save(theme)
    atomic_write_json(tmp_path / "want.json", theme.to_json())
    assert (tmp_path / "themes" / "a.json").read_bytes() == (tmp_path / "want.json").read_bytes()


def test_a_seed_that_matches_nothing_strong_tags_nothing_and_says_so(archive: Archive) -> None:
    ws = "/home/dev/projects/shop"
    r = archive.tag_theme("migration", ws, seeds=["qwertyzzzplugh xylophonequartz"])
    assert (r.attached, r.members) == ([], 0)
    assert r.no_match.startswith("no strong match for qwertyzzzplugh xylophonequartz")
    assert r.no_match.endswith("; nothing tagged")
    assert archive.list_themes(ws) == []  # no theme was saved
    runner = CliRunner()
    out = runner.invoke(main, ["themes", "tag", "migration", "-w", "shop", "-s", "qwertyzzzplugh"])
    assert out.exit_code == 0 and out.stdout == "migration: 0 turns (+0, -0)\n"
    assert "no strong match for qwertyzzzplugh" in out.stderr


def test_the_score_s_record_gets_every_candidate_of_a_tagging_with_its_row_of_signals(
    fake_embedder: FakeEmbedder,
) -> None:
    """How the benches fit the membership score: the rules' `Score.record` (no part of the score)."""
    archive = Archive(embedder=fake_embedder)
    archive.ingest(SAMPLE)
    seen: list[tuple[list[Key], np.ndarray]] = []
    score = replace(TAG_RULES.score, record=lambda keys, rows: seen.append((list(keys), rows)))
    r = archive.tag_theme(
        "payments", "shop", seeds=["charge_card retries PSP"], rules=replace(TAG_RULES, score=score)
    )
    [(keys, rows)] = seen
    assert rows.shape == (len(keys), len(SIGNALS)) and len(keys) >= len(r.attached) > 0
    assert {(m.session_id, m.agent, m.turn) for m in r.attached} <= set(keys)
    assert score == TAG_RULES.score
