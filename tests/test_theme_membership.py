"""Topic-seed membership by one learned score (themes/tag/membership.py): the candidates around the
hits, their four signals, the score, the cut, and what `tag_theme` attaches with it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from archive_mcp.archive import Archive
from archive_mcp.themes.tag import membership
from archive_mcp.themes.tag.rules import TAG_RULES
from archive_mcp.themes.trace.rules import TRACE_RULES

SAMPLE = Path(__file__).parent.parent / "archive_mcp" / "sample" / "kimi-themes"


def _k(session: str, turn: int) -> tuple[str, str, int]:
    return (session, "main", turn)


def _hit(session: str, turn: int, score: float) -> SimpleNamespace:
    return SimpleNamespace(
        session_id=session, agent="main", turn=turn, score=score, started_at=None, summary="s"
    )


def test_candidates_are_counted_in_places_so_noise_between_turns_keeps_them_in_reach() -> None:
    turns = [_k("a", 0), _k("a", 1), _k("a", 5), _k("a", 9), _k("a", 10), _k("b", 0)]
    # turns 2-4 and 6-8 of session a were noise (left out before): 1 and 9 are one place from 5
    assert membership.around(turns, {_k("a", 5)}, window=1) == [_k("a", 1), _k("a", 5), _k("a", 9)]
    assert membership.around(turns, {_k("a", 0), _k("b", 0)}, window=0) == [_k("a", 0), _k("b", 0)]
    assert membership.around(turns, set(), window=3) == []


def test_signals_are_the_seed_shares_rank_walk_and_session_of_each_candidate() -> None:
    cands = [_k("a", 0), _k("a", 1), _k("b", 0)]
    rows = membership.signals(
        cands,
        ranks={_k("a", 0): 0, _k("b", 0): 9},
        # a:0 is both seeds' best hit; b:0 scores 0.3 of the first seed's best, the second missed it
        shares={_k("a", 0): [1.0, 1.0], _k("b", 0): [0.3, 0.0]},
        walk={_k("a", 0): 1.0, _k("a", 1): 0.5},  # b:0 never reached: clipped at WALK_FLOOR
        core={_k("a", 0)},
    )
    assert membership.SIGNALS == ("seeds", "rank", "walk", "session", "share", "strong")
    assert np.allclose(
        rows,
        [
            [1.0, 0.0, 0.0, 0.5, 1.0, 1.0],
            [0.0, np.log1p(membership.DEPTH), np.log(0.5), 0.5, 0.0, 0.0],
            [0.5, np.log1p(9), np.log(membership.WALK_FLOOR), 0.0, 0.3, 0.0],
        ],
    )
    # the score weighs the shipped features, in SIGNALS order (the order of its constants: the
    # benches fit them on the signals' columns in that order)
    score = TAG_RULES.score
    assert score.features == ("rank", "walk", "session")
    assert score.features == tuple(s for s in membership.SIGNALS if s in score.features)
    assert len(score.mean) == len(score.scale) == len(score.weights) == 3
    assert np.allclose(membership.features(rows), rows[:, [1, 2, 3]])


def test_a_turn_higher_in_the_hits_on_the_walk_and_in_a_session_of_the_core_is_more_likely() -> (
    None
):
    # rank, walk, session
    weak = [np.log1p(100), np.log(0.05), 0.0]
    assert membership.probability(np.zeros((0, 3))).shape == (0,)
    base = membership.probability(np.array([weak]))[0]
    for i, better in ((0, 0.0), (1, 0.0), (2, 1.0)):
        row = list(weak)
        row[i] = better
        assert membership.probability(np.array([row]))[0] > base, TAG_RULES.score.features[i]
    assert membership.cut(0.5) == TAG_RULES.score.cut
    assert membership.cut(1.0) == pytest.approx(min(0.99, 2 * TAG_RULES.score.cut))


def test_choose_takes_the_strong_hits_and_leaves_a_weak_one_of_another_run_as_near_miss() -> None:
    """Session a: six turns of one topic (their vectors alike); session b: six of another. The
    seed hits a's turns 1, 3 and 4 and, far down, one turn of b: a's hits join, sure; a's other
    turns join by the walk, unsure (too unsure to say where the theme stands); b's hit is a
    near miss."""
    keys = [_k("a", t) for t in range(6)] + [_k("b", t) for t in range(6)]
    x = np.zeros((12, 20))
    for i in range(12):
        x[i, 0 if i < 6 else 1] = 1.0
        x[i, 2 + i] = 0.1
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pos = {k: i for i, k in enumerate(keys)}
    hits = [_hit("a", 1, 10.0), _hit("a", 3, 9.0), _hit("a", 4, 8.0), _hit("b", 2, 2.0)]
    core = {_k("a", 1): 1.0, _k("a", 3): 0.9}
    chosen, near = membership.choose([("topic", hits)], keys, set(), x, pos, core, 0.5)
    assert [c[:3] for c in chosen if c[3] >= 0.8] == [
        (_k("a", 1), 10.0, "seed:topic"),
        (_k("a", 3), 9.0, "seed:topic"),
        (_k("a", 4), 8.0, "seed:topic"),
    ]
    unsure = [(c[0], c[2]) for c in chosen if c[3] < 0.8]
    assert unsure == [(_k("a", t), "walk:topic") for t in (0, 2, 5)]
    assert all(membership.cut(0.5) <= c[3] < TRACE_RULES.now_min for c in chosen if c[3] < 0.8)
    assert [n["ref"] for n in near] == ["b:2"]
    assert near[0]["probability"] < 0.01 and near[0]["share"] == 0.2
    # a noise hit is neither a candidate nor a near miss
    chosen, near = membership.choose([("topic", hits)], keys, {_k("b", 2)}, x, pos, core, 0.5)
    assert near == [] and [c[0] for c in chosen if c[3] >= 0.8] == [
        _k("a", 1),
        _k("a", 3),
        _k("a", 4),
    ]


def test_a_seeds_best_hit_is_its_best_main_agent_turn_that_is_not_noise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shares `strong` reads are over the seed's best hit that could join (as tagging's core
    counts it): a subagent's or a noise turn's higher score does not shrink them."""
    keys = [_k("a", t) for t in range(4)]
    x = np.eye(4)
    pos = {k: i for i, k in enumerate(keys)}
    sub = SimpleNamespace(**{**vars(_hit("a", 9, 40.0)), "agent": "sub"})
    hits = [sub, _hit("a", 3, 30.0), _hit("a", 1, 10.0), _hit("a", 2, 5.0)]
    seen: dict[str, object] = {}
    saved = membership.signals

    def spy(candidates, ranks, shares, walk, core, depth):  # type: ignore[no-untyped-def]
        seen.update(shares=shares)
        return saved(candidates, ranks, shares, walk, core, depth)

    monkeypatch.setattr(membership, "signals", spy)
    membership.choose([("topic", hits)], keys, {_k("a", 3)}, x, pos, {_k("a", 1): 1.0}, 0.5)
    assert seen["shares"] == {_k("a", 1): [1.0], _k("a", 2): [0.5]}


def test_tag_theme_with_vectors_scores_topic_seeds_and_keeps_the_rules_for_questions(
    tmp_path: Path,
) -> None:
    """The planted sample, embedded with the packaged static model: a topic seed goes by the
    score (every planted turn of the theme, few others), a question seed by the rules."""
    labels = json.loads((SAMPLE / "LABELS.json").read_text(encoding="utf-8"))["themes"]
    archive = Archive(tmp_path / "home")
    archive.ingest(SAMPLE)
    truth = {(s, "main", t) for s, t in labels["auth-tokens"]}
    r = archive.tag_theme("auth tokens", "shop", seeds=["issue_access_token JWT"])
    got = {m.key for m in r.attached}
    assert len(got & truth) / len(truth) >= 0.9 and len(got & truth) / len(got) >= 0.55
    assert {m.provenance.split(":")[0] for m in r.attached} <= {"seed", "walk"}
    assert all(
        m.probability is not None and m.probability >= membership.cut(0.5) for m in r.attached
    )
    kept = archive.themes_store("shop").get("auth tokens")
    assert {m.key: m.probability for m in kept.members} == {
        m.key: m.probability for m in r.attached
    }
    assert all(n["probability"] < membership.cut(0.5) for n in r.near_misses)
    calls: list[int] = []
    saved = membership.choose
    membership.choose = lambda *a: calls.append(1) or saved(*a)  # type: ignore[assignment]
    try:
        archive.tag_theme("q", "shop", seeds=["How are access tokens issued?"])
        assert calls == []
        by_rules = replace(TAG_RULES, scored=False)
        archive.tag_theme("by rules", "shop", seeds=["issue_access_token JWT"], rules=by_rules)
        assert calls == []
        archive.tag_theme("scored", "shop", seeds=["issue_access_token JWT"])
        assert calls == [1]
    finally:
        membership.choose = saved  # type: ignore[assignment]


@pytest.mark.anyio
async def test_the_tag_theme_tool_shows_each_turns_probability_and_the_near_misses_odds(
    tmp_path: Path,
) -> None:
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    archive = Archive(tmp_path / "home")
    archive.ingest(SAMPLE)
    async with Client(build_server(archive, cwd="/")) as client:
        r = await client.call_tool(
            "tag_theme",
            {"theme": "auth tokens", "seeds": ["issue_access_token JWT"], "workspace": "shop"},
        )
    lines = r.content[0].text.splitlines()
    added = [x for x in lines if x.startswith("+ ")]
    near = [x for x in lines if x.startswith("? ")]
    assert added and all(
        re.fullmatch(r"\+ \S+:\d+ \((seed|walk):.+, p 0\.\d\d\)", x) for x in added
    )
    assert near and all(re.fullmatch(r"\? \S+:\d+ p 0\.\d\d .*", x) for x in near)
    members = r.structured_content["attached"]
    assert all(membership.cut(0.5) <= m["probability"] <= 1 for m in members)
