"""The agent evaluation's preparation (bench/agent_eval.py) on small made-up folders, and its
frozen questions against the theme labels they come from: no corpus, no archive."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))

import agent_eval as ae  # noqa: E402

LABELS = Path(__file__).parent.parent / "bench" / "labels"


def write(path: Path, text: str = "{}\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_project_of_several_folders_copies_each_into_its_own_folder_and_ingests_each(
    tmp_path: Path,
) -> None:
    corpus, raw = tmp_path / "corpus", tmp_path / "raw"
    write(corpus / "p" / "-home" / "a.jsonl")
    write(corpus / "p" / "-home-work" / "b.jsonl")
    write(corpus / "p" / "-home-work" / "b" / "subagents" / "agent-1.jsonl")
    write(corpus / "p" / "-home-work" / "b" / "tool-results" / "t.txt", "out\n")
    spec = ae.Project(("p/-home", "p/-home-work"), "**/*")
    files = ae.copy_raw(spec, corpus, raw)
    assert [f.relative_to(raw).as_posix() for f in files] == [
        "-home/a.jsonl",
        "-home-work/b/subagents/agent-1.jsonl",
        "-home-work/b/tool-results/t.txt",
        "-home-work/b.jsonl",
    ]
    assert all(f.is_file() for f in files)
    assert ae.ingest_paths(spec, raw, files) == [raw / "-home", raw / "-home-work"]


def test_a_project_of_one_folder_keeps_its_files_at_the_top_of_raw(tmp_path: Path) -> None:
    corpus, raw = tmp_path / "corpus", tmp_path / "raw"
    write(corpus / "logs" / "a.jsonl")
    write(corpus / "logs" / "notes.txt")
    spec = ae.Project(("logs",), "*.jsonl")
    files = ae.copy_raw(spec, corpus, raw)
    assert files == [raw / "a.jsonl"]
    assert ae.ingest_paths(spec, raw, files) == [raw]


def test_a_codex_project_ingests_every_rollout_file_not_its_dated_folders(tmp_path: Path) -> None:
    corpus, raw = tmp_path / "corpus", tmp_path / "raw"
    write(corpus / "sessions" / "2025" / "10" / "31" / "rollout-a.jsonl")
    write(corpus / "sessions" / "2025" / "11" / "01" / "rollout-b.jsonl")
    spec = ae.Project(("sessions",), "**/*.jsonl", by_file=True)
    files = ae.copy_raw(spec, corpus, raw)
    assert ae.ingest_paths(spec, raw, files) == [
        raw / "2025" / "10" / "31" / "rollout-a.jsonl",
        raw / "2025" / "11" / "01" / "rollout-b.jsonl",
    ]


def test_a_source_folder_without_logs_stops_with_the_folder_it_looked_in(tmp_path: Path) -> None:
    write(tmp_path / "corpus" / "one" / "a.jsonl")
    spec = ae.Project(("one", "two"), "*.jsonl")
    with pytest.raises(SystemExit, match=r"no logs under .*two: is .* the agents-dev folder\?"):
        ae.copy_raw(spec, tmp_path / "corpus", tmp_path / "raw")


@pytest.mark.parametrize(
    ("project", "labels", "prefix"),
    [
        ("mthisness", "themes_mthisness.json", "mq"),
        ("openprintkit", "themes_openprintkit.json", "oq"),
        ("pai", "themes_pai.json", "pq"),
    ],
)
def test_the_questions_are_one_per_labelled_change_or_reversal_and_name_no_ref(
    project: str, labels: str, prefix: str
) -> None:
    assert project in ae.PROJECTS
    topics = json.loads((LABELS / labels).read_text(encoding="utf-8"))["topics"]
    changes = sorted(
        (t["name"], d["turn"])
        for t in topics
        for d in t["decisions"]
        if d["type"] in ("change", "reversal")
    )  # a turn holding both a change and a reversal gets two questions
    rows = question_rows(project, prefix)
    assert sorted((r["topic"], r["turn"]) for r in rows) == changes


def question_rows(project: str, prefix: str) -> list[dict[str, str]]:
    """The project's frozen questions, each checked for its fields, its id and its wording."""
    lines = (LABELS / f"agent_questions_{project}.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["id"] for r in rows] == [f"{prefix}{i:02d}" for i in range(1, len(rows) + 1)]
    for r in rows:
        assert set(r) == {"id", "question", "gold", "topic", "turn"}
        assert r["question"].startswith("How did the decision about ")
        assert not re.search(r"#L|rollout|\b(19|20)\d\d\b|\b[0-9a-f]{8}\b", r["question"])
        assert re.fullmatch(r"FIRST: .+\. CHANGE: .+ FINAL: .+", r["gold"])
    return rows


@pytest.mark.parametrize(
    ("project", "prefix", "count", "skipped_topics"),
    [
        ("localapi", "lq", 12, ("trenchbench-api-production",)),
        ("tgripper", "tq", 10, ("tg-ripper-user-scanner", "tg-ripper-topic-search")),
        ("qatools", "qq", 11, ("qa-tools-slack-vercel-deploy",)),
        (
            "tokenap",
            "aq",
            8,
            (
                "autopilot-backend-startup",
                "close-positions-controls",
                "backend-data-feed-integration",
                "vz-volume-indicator",
            ),
        ),
        ("preload", "wq", 10, ("trenchbench-unify-pr", "vantage-bubble-settings")),
        (
            "wtauto",
            "xq",
            11,
            (
                "screener-signal-indicators",
                "autopilot-backend-startup",
                "token-stats-zero-data-flow",
                "sol-price-source",
                "watchlist-data-source",
                "pnl-display",
                "close-positions-controls",
                "backend-data-feed-integration",
                "vz-volume-indicator",
                "demo-simulation",
            ),
        ),
    ],
)
def test_a_held_out_projects_questions_back_each_part_and_ask_nothing_a_labelled_topic_holds(
    project: str, prefix: str, count: int, skipped_topics: tuple[str, ...]
) -> None:
    assert project in ae.PROJECTS
    rows = question_rows(project, prefix)
    topics = json.loads((LABELS / "coding_themes.json").read_text(encoding="utf-8"))["topics"]
    labelled = [t for t in topics if t["name"] in skipped_topics]
    assert len(labelled) == len(skipped_topics)
    taken = {d["turn"] for t in labelled for d in t["decisions"]}
    assert len(rows) == count
    for r in rows:
        assert re.fullmatch(r"[0-9a-f-]{36}#L\d+", r["turn"])
        assert r["turn"] not in taken
        assert re.search(r"\(set by the (user|assistant)\b", r["gold"])
        assert re.search(r"\((change|reversal) pushed by the (user|assistant)\b", r["gold"])
    assert len({r["topic"] for r in rows}) == len(rows)


def test_a_second_judges_input_holds_the_same_pairs_the_other_way_round(tmp_path: Path) -> None:
    judge, second = tmp_path / "judge", tmp_path / "judge2"
    rows = [
        {"id": "q1", "question": "Why?", "gold": "G1", "answer_X": "a1", "answer_Y": "b1"},
        {"id": "q2", "question": "When?", "gold": "G2", "answer_X": "b2", "answer_Y": "a2"},
    ]
    write(judge / "judge-input.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write(judge / "mapping.json", json.dumps({"q1": "AB", "q2": "BA"}))
    assert ae.main(["swap", str(judge), str(second)]) == 0
    lines = (second / "judge-input.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == [
        {"id": "q1", "question": "Why?", "gold": "G1", "answer_X": "b1", "answer_Y": "a1"},
        {"id": "q2", "question": "When?", "gold": "G2", "answer_X": "a2", "answer_Y": "b2"},
    ]
    assert json.loads((second / "mapping.json").read_text()) == {"q1": "BA", "q2": "AB"}
    # the first judge's input is as it was
    assert json.loads((judge / "judge-input.jsonl").read_text().splitlines()[0])["answer_X"] == "a1"


def test_a_second_judges_folder_that_holds_a_judges_output_is_left_alone(tmp_path: Path) -> None:
    judge, second = tmp_path / "judge", tmp_path / "judge2"
    write(judge / "judge-input.jsonl", json.dumps({"id": "q1", "answer_X": "a", "answer_Y": "b"}))
    write(judge / "mapping.json", json.dumps({"q1": "AB"}))
    write(second / "judge-output.jsonl", "{}\n")
    with pytest.raises(SystemExit, match="already holds a judge's output"):
        ae.main(["swap", str(judge), str(second)])
    assert not (second / "mapping.json").exists()
    with pytest.raises(SystemExit, match="run blind.py pair into"):
        ae.main(["swap", str(tmp_path / "none"), str(tmp_path / "other")])
