"""The held-out themes benchmark's helpers (bench/themes_heldout.py, bench/theme_baselines.py),
on small made-up inputs: no corpus, no model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))

import theme_baselines as tb  # noqa: E402
import themes_heldout as th  # noqa: E402
from heldout import folds, rules  # noqa: E402

from archive_mcp.themes.tag.rules import Score  # noqa: E402


def k(n: int) -> tuple[str, str, int]:
    return ("s", "main", n)


def test_recovered_takes_the_best_cluster_by_jaccard_and_the_threshold() -> None:
    topics = {"a": {k(1), k(2), k(3)}, "b": {k(9)}}
    clusters = {"x": {k(1), k(2), k(3), k(4)}, "y": {k(1), k(5), k(6), k(7)}}
    got = tb.recovered(topics, clusters, 0.3)
    assert got["a"] == {"jaccard": 0.75, "cluster": "x", "found": True}
    assert got["b"] == {"jaccard": 0.0, "cluster": "", "found": False}


def test_noise_like_is_command_output_or_an_idle_command_or_nothing() -> None:
    assert tb.noise_like("<local-command-stdout>Context Usage", "a long table " * 80, 0)
    assert tb.noise_like("/gsd:help", "help text " * 300, 0)
    assert not tb.noise_like("/gsd:execute-plan 06-02-PLAN.md", "done", 12)  # did work
    assert tb.noise_like("", "  ", 0)
    assert not tb.noise_like("switch the price feed to NATS", "", 0)


def test_seed_ranker_puts_the_matching_turn_first_in_both_runs() -> None:
    docs = [["price", "feed"], ["login", "page"], ["nats", "price", "sourc"]]
    vectors = np.eye(3, dtype=np.float32)
    ranker = tb.SeedRanker(docs, vectors)
    runs = ranker.rankings(["nats", "sourc"], np.array([[0.0, 0.0, 1.0]], np.float32))
    assert runs["bm25"][0] == 2 and runs["fusion"][0] == 2
    assert list(runs["fusion"]).index(1) == 2  # no word, no cosine: last


def test_leave_one_project_out_chooses_on_the_other_projects_only() -> None:
    scores = {"a": {"p1": 0.9, "p2": 0.9, "p3": 0.1}, "b": {"p1": 0.5, "p2": 0.5, "p3": 0.9}}
    got = folds.leave_one_project_out(
        ["p1", "p2", "p3"],
        {"a": {"x": "a"}, "b": {"x": "b"}},
        lambda p, s: {"score": scores[s["x"]][p], "project": p},  # type: ignore[index]
        lambda f: f["score"],
    )
    assert got["p3"]["chosen"] == "a" and got["p3"]["figures"] == {"score": 0.1, "project": "p3"}
    assert got["p1"]["chosen"] == "b"  # on p2 and p3: a 0.5, b 0.7
    assert got["p1"]["train_objective"] == {"a": 0.5, "b": 0.7}
    assert got["p1"]["figures"] == {"score": 0.5, "project": "p1"}


def test_an_empty_grid_reports_the_shipped_rules() -> None:
    got = folds.leave_one_project_out(["p"], {}, lambda p, s: {"setting": s}, lambda f: 0.0)
    assert got["p"]["chosen"] == "current" and got["p"]["figures"] == {"setting": rules.SHIPPED}


def test_a_setting_changes_its_own_rules_and_leaves_the_shipped_ones_alone() -> None:
    near_off = rules.trace(change_near=False)
    assert near_off.trace.change_near is False and near_off.tag == rules.SHIPPED.tag
    assert rules.SHIPPED.trace.change_near is True
    assert rules.tag(topic_core=5).tag.topic_core == 5 and rules.SHIPPED.tag.topic_core == 0


def test_a_folds_file_gives_each_project_the_score_fitted_without_it(tmp_path: Path) -> None:
    constants = {"MEAN": [1, 2], "SCALE": [3, 4], "WEIGHTS": [5, 6], "BIAS": -1, "CUT": 0.2}
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            {
                "mode": "cut",
                "features": ["rank", "walk"],
                "held_out": {"p": {"constants": constants}},
            }
        ),
        encoding="utf-8",
    )
    score = rules.fold_scores(path)["p"]
    assert score == Score(("rank", "walk"), (1.0, 2.0), (3.0, 4.0), (5.0, 6.0), -1.0, 0.2)
    assert rules.SHIPPED.scored_by(score).tag.score == score
    assert rules.SHIPPED.scored_by(None) is rules.SHIPPED
    path.write_text(json.dumps({"mode": "count"}), encoding="utf-8")
    with pytest.raises(SystemExit, match="fitted with --mode count"):
        rules.fold_scores(path)


def _event(turn: int) -> Any:
    return SimpleNamespace(session_id="s", agent="main", turn=turn, ref=f"s:{turn}")


def test_now_named_reads_the_turns_the_now_line_cites_in_its_order() -> None:
    tl = SimpleNamespace(
        events=[_event(1), _event(2), _event(7)],
        current_state="latest change 2026-01-02 (s:7): use X; last activity 2026-01-03 (s:2): y",
    )
    assert th.now_named(tl) == [k(7), k(2)]  # type: ignore[arg-type]
    tl.now = [{"session_id": "s", "turn": 1}]  # a structured Timeline.now wins
    assert th.now_named(tl) == [k(1)]  # type: ignore[arg-type]
