"""Edge cases a review found in paths asked, whole-file copies and task notifications: a path of
more than four parts or with backslashes, deleted turns, hostile inputs for the path and
notification patterns, a staged copy a merge must not carry."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from archive_mcp.refiners.notification import split
from test_merge import ML, WEBAPP, _run
from test_path_queries import CWD, SID, _session

from archive_mcp import Archive
from archive_mcp.search.lexical import Postings, QueryTerms, bm25, index_terms
from archive_mcp.search.ranking import semantic_query
from archive_mcp.search.tool_text import relative, relative_word


def _scores(docs: list[str], query: str, alive: list[bool] | None = None) -> list[float]:
    """Each doc's BM25 score for `query`, a path's pieces counted together (as search does)."""
    postings = Postings.build([index_terms(d) for d in docs])
    q = QueryTerms.of(query)
    mask = np.array(alive if alive is not None else [True] * len(docs))
    [scores] = bm25([postings], [(t, 1.0) for t in q.terms], [mask], q.together())
    return [round(float(s), 3) for s in scores]


def test_a_path_of_five_parts_is_found_inside_a_longer_one() -> None:
    docs = [
        "edited /home/u/proj/src/app/ui/forms/Button.tsx to fix the border",
        "open src/app/ui/forms/Button.tsx please",
        "nothing here about buttons",
    ]
    scores = _scores(docs, "src/app/ui/forms/Button.tsx")
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0


def test_a_windows_path_is_found_by_the_same_path_asked_with_slashes() -> None:
    scores = _scores(
        [r"edited C:\proj\src\locales\en.ts", "see locales/en.ts", "x"], "locales/en.ts"
    )
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0


def test_a_path_only_deleted_turns_hold_leaves_its_pieces_to_count_alone() -> None:
    # turn 0 is deleted (not alive): no live turn holds the path, so its pieces count alone
    scores = _scores(
        ["see locales/en.ts", "locales en ts", "x"], "locales/en.ts", [False, True, True]
    )
    assert scores[1] > 0


def test_the_semantic_query_of_a_long_number_takes_linear_time() -> None:
    query = "1" * 20_000
    start = time.perf_counter()
    assert semantic_query(query, lambda w: 0.0, 0.5) == query
    assert time.perf_counter() - start < 1.0  # measured 10 s: quadratic backtracking


def test_a_notification_full_of_unclosed_summary_tags_splits_in_linear_time() -> None:
    text = "<task-notification>" + "<summary>" * 4_000 + "</task-notification> go"
    start = time.perf_counter()
    assert split(text).said == "go"
    assert time.perf_counter() - start < 0.1  # measured 0.3 s at 36k chars, 10 s at 100k


def test_matching_an_absolute_path_under_the_project_matches_as_the_read_shows_it(
    tmp_path: Path,
) -> None:
    archive = _session(tmp_path, [("fix the stub", f"Stubbed {CWD}/src/locales/en.ts.")])
    read = archive.load_turn_context([f"{SID}:0"], CWD, matching=[f"{CWD}/src/locales/en.ts"])
    assert read.turns[0].assistant_text == "Stubbed src/locales/en.ts."


def test_relative_word_keeps_a_windows_path_s_separators_as_relative_shows_it() -> None:
    word, roots = r"C:\Users\a\proj\src\x.py", [r"C:\Users\a\proj"]
    assert relative(word, roots) == r"src\x.py"
    assert relative_word(word, roots) == relative(word, roots)


def test_a_merge_copies_no_staged_copy_a_killed_rewrite_left(archive: Archive) -> None:
    src = archive.home / "workspaces" / ML
    copy = next(p for p in sorted((src / "raw").rglob("*")) if p.is_file())
    staged = copy.parent / f".{copy.name}.k1ll3d.tmp"  # `_replace_whole`'s folder, its write killed
    staged.mkdir()
    (staged / copy.name).write_bytes(copy.read_bytes()[:10])
    code, _, err = _run("workspaces", "merge", "ml-pipeline", "--into", "webapp")
    assert (code, err) == (0, "")
    dst = archive.home / "workspaces" / WEBAPP
    assert [str(p.relative_to(dst)) for p in dst.rglob("*.tmp")] == []
