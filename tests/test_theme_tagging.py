"""Seed tagging on real work (a core, weaker hits close to it or on its files, gaps and neighbours
of a conversation, question seeds), the vectorised flags and term matrix of a trace, and the rare
terms that discovery's topic level adds to a turn's vector."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from archive_mcp.themes.discover.topics import with_topic_terms
from archive_mcp.themes.tag.rules import TAG_RULES
from archive_mcp.themes.tag.tagging import (
    close_to_core,
    core_ranks,
    fill_gaps,
    is_question,
    next_to,
    same_files,
)
from archive_mcp.themes.trace.decisions import flag_turn, flag_turns, pair_changes, term_matrix
from archive_mcp.themes.trace.rules import TRACE_RULES

NEAR_OFF = replace(TRACE_RULES, change_near=False)


def _key(turn: int, session: str = "s") -> tuple[str, str, int]:
    return (session, "main", turn)


def _frame(turns: list[int], session: str = "s") -> pl.DataFrame:
    return pl.DataFrame(
        {"session_id": [session] * len(turns), "agent": ["main"] * len(turns), "turn": turns}
    )


def test_term_matrix_keeps_identifiers_whole_drops_stopwords_and_splits_cjk_runs_into_bigrams() -> (
    None
):
    m, terms, idf = term_matrix(
        ["Use the useAutopilotData.ts hook for it", "回滚缓存 and the hook", ""]
    )
    assert sorted(terms.tolist()) == [
        "hook",
        "useautopilotdata.ts",
        "回滚",
        "滚缓",
        "缓存",
    ]  # "use": a stopword
    assert m.shape == (3, 5) and np.allclose(np.linalg.norm(m.toarray(), axis=1), [1, 1, 0])
    hook = terms.tolist().index("hook")
    assert (
        idf[hook] < idf[terms.tolist().index("useautopilotdata.ts")]
    )  # shared by two texts: weighs less


def test_flag_turns_over_many_turns_is_flag_turn_on_each() -> None:
    users = [
        "wait, let's get the websocket feed working first",
        "go back to the polling version, it was working before",
        "yes",
        "make the min value 50",
        "unrealised pnl should be within the same box",
        "crashed again i think",
        "不要用 Redis",
        "要不要改成进程内缓存？",
        "/gsd:plan-phase 6",
        "what does this return?",
        "x" * 1600,
    ]
    assistants = [
        "",
        "",
        "Option A or B?",
        "",
        "",
        "",
        "",
        "",
        "Planned.",
        "It returns a list.",
        "Jupiter needs auth. Let me use CoinGecko instead.",
    ]
    kinds: list[list[str]] = [[] for _ in users]
    got = [(f.kind, f.by, f.cue) if f else None for f in flag_turns(users, assistants, kinds)]
    assert got == [
        ("change", "user", "wait"),
        ("reversal", "user", "go back"),
        ("decision", "user", "approval"),
        ("decision", "user", "make"),
        ("decision", "user", "unrealised pnl should be"),
        ("change", "user", "crashed again"),
        ("change", "user", "不要"),
        None,
        ("decision", "assistant", "plan"),
        None,
        ("change", "assistant", "instead"),
    ]
    assert [
        (f.kind, f.by, f.cue) if f else None
        for f in (flag_turn(u, a, k) for u, a, k in zip(users, assistants, kinds, strict=True))
    ] == got


def test_a_change_pairs_with_the_turn_just_before_it_when_nothing_earlier_is_clearly_more_alike() -> (
    None
):
    # the recency rule on its own: a correction may undo the last course of its conversation
    # with no word in common (`change_near` off; tests/test_theme_claims.py has it on)
    rows = [
        {
            "session_id": "s",
            "turn": 0,
            "user_text": "show the open positions as a table",
            "keywords": [],
        },
        {
            "session_id": "s",
            "turn": 1,
            "user_text": "yes",
            "summary": "Applied the stats row layout",
            "keywords": [],
        },
        {
            "session_id": "s",
            "turn": 2,
            "user_text": "no, that's wrong: make the min value 50",
            "keywords": [],
        },
    ]
    flags = [flag_turn(r["user_text"], "", []) for r in rows]
    assert [(i, j) for i, j, *_ in pair_changes(rows, flags, rules=NEAR_OFF)] == [(2, 1)]
    apart = [
        {**rows[0], "session_id": "a"},
        {**rows[2], "session_id": "b"},
    ]  # nothing alike, nothing near
    assert (
        pair_changes(apart, [flag_turn(r["user_text"], "", []) for r in apart], rules=NEAR_OFF)
        == []
    )


def test_weak_hits_join_the_core_only_when_close_to_its_centroid() -> None:
    x = np.array(
        [[1, 0, 0], [0.9, 0.1, 0], [0.95, 0.05, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32
    )
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pos = {_key(i): i for i in range(5)}
    share = {
        _key(0): (1.0, 9.0, "a"),
        _key(1): (0.8, 7.0, "a"),
        _key(2): (0.4, 3.5, "a"),
        _key(3): (0.45, 4.0, "a"),
    }
    keep, closeness, own = close_to_core(x, pos, share, core=0.65)
    assert keep == {_key(0), _key(1), _key(2)}  # turn 3 matched the seed's words, not the topic
    assert closeness(_key(4)) < 0.1 and closeness(("x", "main", 9)) == -1.0 and len(own) == 2


def test_gaps_between_attached_turns_fill_and_neighbours_join_when_close() -> None:
    frame = _frame([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    share = {_key(1): (0.9, 5.0, "seed"), _key(4): (0.8, 4.0, "seed"), _key(9): (0.7, 3.0, "seed")}
    keep = set(share)
    filled = fill_gaps(frame, keep, {_key(3)}, share, gap=3)
    assert [(c.key[2], c.provenance) for c in filled] == [
        (2, "neighbour:seed")
    ]  # 9 is 4 non-noise turns after 4
    near = next_to(frame, keep, set(), lambda k: k[2] != 0, share, {_key(2)})
    assert sorted(c.key[2] for c in near) == [3, 5, 8]


def test_hits_on_the_files_the_core_keeps_touching_join() -> None:
    keys = [_key(i) for i in range(8)]
    files = [
        ["feed.ts"],
        ["feed.ts", "README.md"],
        ["feed.ts"],
        ["feed.ts"],
        ["README.md"],
        ["other.ts"],
        [],
        ["README.md"],
    ]
    meta = pl.DataFrame(
        {
            "session_id": [k[0] for k in keys],
            "agent": ["main"] * 8,
            "turn": [k[2] for k in keys],
            "files": files,
        }
    )
    index = SimpleNamespace(meta=meta, alive=[True] * 8)
    share = {k: (0.9, 1.0, "seed") for k in keys[:3]} | {
        _key(3): (0.5, 1.0, "seed"),
        _key(4): (0.5, 1.0, "seed"),
        _key(5): (0.5, 1.0, "seed"),
    }
    # eight turns: feed.ts (4 of 8) is rare enough, README.md (3) too but not in 3 core turns
    rules = replace(TAG_RULES, file_share=0.6)
    got = same_files(index, share, set(keys[:3]), 0.4, rules)  # type: ignore[arg-type]
    assert got == {_key(0), _key(1), _key(2), _key(3)}


@pytest.mark.parametrize(
    ("seed", "want"),
    [
        ("What activities does Melanie partake in?", True),
        ("when did Caroline move", True),
        ("vercel deploy qa-tools", False),
        ("close_position command", False),
    ],
)
def test_question_seeds_are_told_from_topic_names(seed: str, want: bool) -> None:
    assert is_question(seed) is want


def test_rare_keywords_and_files_are_appended_to_the_vectors() -> None:
    x = np.eye(4, 3, dtype=np.float32)
    keywords = [["SolPrice"], ["solprice"], [], []]
    files = [["price.ts"], ["price.ts"], ["a.ts"], []]
    z = with_topic_terms(x, keywords, files, weight=0.3)
    assert (
        z.shape[0] == 4
        and z.shape[1] > 3
        and np.allclose(np.linalg.norm(z, axis=1), [1, 1, 1, 0], atol=1e-5)
    )  # the last row has no vector
    assert float(z[0] @ z[1]) > 0.05 and float(z[2] @ z[3]) == 0.0
    assert with_topic_terms(x, keywords, files, weight=0) is x


def test_a_topic_seeds_best_hits_are_core_and_a_questions_more_but_none_without_vectors() -> None:
    rules = replace(TAG_RULES, topic_core=5, question_core=20)
    assert core_ranks("yubikey login sudo", vectors=True, rules=rules) == 5
    assert core_ranks("What did we decide about sudo?", vectors=True, rules=rules) == 20
    assert core_ranks("yubikey login sudo", vectors=False, rules=rules) == 0
    assert core_ranks("yubikey login sudo", vectors=True) == 0  # the shipped topic_core
