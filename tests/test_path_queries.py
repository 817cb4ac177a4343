"""A path or dotted name asked matches as itself: its pieces count only where it is (issue 41)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from archive_mcp import Archive
from archive_mcp.errors import NotFound
from archive_mcp.search.index import INDEX_VERSION
from archive_mcp.search.lexical import Postings, QueryTerms, bm25, index_terms, path_keys
from archive_mcp.search.ranking import Tuning, semantic_query
from archive_mcp.search.tool_text import relative_word

SID = "c0ffee00-1111-4222-8333-444455556666"
CWD = "/home/alice/shop"


def _session(home: Path, turns: list[tuple[str, str]]) -> Archive:
    """An archive of one Claude Code session of (prompt, answer) turns."""
    records = []
    for i, (prompt, answer) in enumerate(turns):
        base = {"sessionId": SID, "cwd": CWD, "timestamp": f"2026-03-20T10:{i:02d}:00Z"}
        records.append({**base, "type": "user", "message": {"role": "user", "content": prompt}})
        text = [{"type": "text", "text": answer}]
        message = {"role": "assistant", "id": f"m{i}", "content": text}
        records.append({**base, "type": "assistant", "message": message})
    path = home / ".claude" / "projects" / "-home-alice-shop" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    archive = Archive(embedder=None)
    archive.ingest(home / ".claude")
    return archive


TURNS = [
    ("the ts build is slow again", "Turned on incremental ts builds."),
    ("stub the strings in locales/en.ts", "Stubbed src/locales/en.ts with the keys."),
    ("what does en mean in the header", "It is the language: en for English."),
    ("add a fr page", "Added locales fr and en, each a .ts file."),
    ("rename the locales folder", "Renamed locales to i18n; the vocal notes stay."),
]


@pytest.fixture
def shop(tmp_path: Path) -> Archive:
    return _session(tmp_path, TURNS)


def test_a_path_asked_ranks_only_the_turns_holding_it(shop: Archive) -> None:
    hits = shop.search("locales/en.ts stub", workspace=CWD, mode="lexical")
    # turn 1 holds the path (inside `src/locales/en.ts`); turns 0 (`ts` alone), 2 (`en`),
    # 3 (`locales`, `en` and `ts` apart) and 4 (`locales`) do not appear
    assert [h.turn for h in hits] == [1]


def test_a_path_no_turn_holds_is_found_by_its_pieces(shop: Archive) -> None:
    hits = shop.search("fr/en.ts", workspace=CWD, mode="lexical")
    # as a slash between words (`and/or`): turn 3 holds `fr`, `en` and `ts`, the others one or
    # two (turn 4 `ts` by the session's title, "the ts build is slow again")
    assert [h.turn for h in hits][0] == 3
    assert sorted(h.turn for h in hits) == [0, 1, 2, 3, 4]


def test_each_piece_alone_scores_with_paths_whole_off(shop: Archive) -> None:
    hits = shop.search(
        "locales/en.ts stub", workspace=CWD, mode="lexical", tuning=Tuning(paths_whole=False)
    )
    assert sorted(h.turn for h in hits) == [0, 1, 2, 3, 4]


def test_a_typo_never_reaches_a_piece_of_the_path(shop: Archive) -> None:
    # `vocal` is a few edits from `local` (the stem of `locales`), but only the path whole is
    # expanded: turn 4 holds `vocal`
    hits = shop.search("locales/en.ts", workspace=CWD, mode="fuzzy")
    assert [h.turn for h in hits] == [1]


def test_matching_the_path_shows_the_passage_of_the_top_hit(shop: Archive) -> None:
    top = shop.search("locales/en.ts stub", workspace=CWD, mode="lexical")[0]
    read = shop.load_turn_context([f"{SID}:{top.turn}"], CWD, matching=["en.ts"])
    assert (read.turns[0].user_text, read.turns[0].assistant_text) == (
        "stub the strings in locales/en.ts",
        "Stubbed src/locales/en.ts with the keys.",
    )
    with pytest.raises(NotFound, match="no passage holds 'en.ts'"):
        shop.load_turn_context([f"{SID}:0"], CWD, matching=["en.ts"])


def test_query_terms_keep_a_path_whole_and_its_pieces_together() -> None:
    q = QueryTerms.of("stub locales/en.ts and foo.bar_baz in src")
    assert q.terms == [
        "stub", "locales/en.ts", "local", "en", "ts", "and", "foo.bar_baz", "foo", "bar", "baz",
        "in", "src",
    ]  # fmt: skip
    path, name = ("locales/en.ts", "local", "en", "ts"), ("foo.bar_baz", "foo", "bar", "baz")
    assert q.paths == [path, name]
    assert q.together() == {
        "local": [path],
        "en": [path],
        "ts": [path],
        "foo": [name],
        "bar": [name],
        "baz": [name],
    }


def test_a_piece_also_asked_on_its_own_counts_alone() -> None:
    q = QueryTerms.of("src/api/client.py client parse_config")
    # `client` is a word of its own, `parse_config` no path: their pieces count anywhere
    path = ("src/api/client.py", "src", "api", "client", "py")
    assert q.together() == {"src": [path], "api": [path], "py": [path]}


def test_bm25_scores_a_piece_where_its_path_is_or_alone_when_no_doc_holds_it() -> None:
    texts = ("ts only here", "en and ts apart", "see src/en.ts", "nothing")
    postings = Postings.build([index_terms(t) for t in texts])
    alive = [np.ones(4, bool)]
    alone = bm25([postings], [("ts", 1.0)], alive)[0]
    held = bm25([postings], [("ts", 1.0)], alive, {"ts": [("en.ts", "en", "ts")]})[0]
    apart = bm25([postings], [("ts", 1.0)], alive, {"ts": [("fr/en.ts", "fr", "en", "ts")]})[0]
    assert (alone > 0).tolist() == [True, True, True, False]
    assert (held > 0).tolist() == [False, False, True, False]
    assert apart.tolist() == alone.tolist()  # no doc holds `fr/en.ts`: `ts` counts alone
    assert held[2] == alone[2]


def test_a_path_is_indexed_with_the_runs_of_its_parts() -> None:
    terms = index_terms("edit /home/Al/src/useAutopilot/index.ts")
    assert terms == [
        "edit", "home/al/src/useautopilot/index.ts", "home", "al", "src", "use", "autopilot",
        "index", "ts",  # `analyse`'s, then the last part and the runs of two to four parts
        "index.ts",
        "home/al", "al/src", "src/useautopilot", "useautopilot/index.ts",
        "home/al/src", "al/src/useautopilot", "src/useautopilot/index.ts",
        "home/al/src/useautopilot", "al/src/useautopilot/index.ts",
    ]  # fmt: skip
    assert terms.length == 9  # the runs lengthen no turn: BM25 weighs its words alone


def test_an_index_built_before_path_runs_is_rebuilt(tmp_path: Path) -> None:
    archive = _session(tmp_path, TURNS)
    index = archive.index(archive.workspace(cwd=CWD))
    manifest = index.folder / "manifest.json"
    assert archive.search("en.ts", workspace=CWD, mode="lexical")[0].turn == 1
    old = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**old, "version": INDEX_VERSION - 1}), encoding="utf-8")
    fresh = Archive(embedder=None)
    assert [h.turn for h in fresh.search("en.ts", workspace=CWD, mode="lexical")] == [1]
    assert json.loads(manifest.read_text(encoding="utf-8"))["version"] == INDEX_VERSION


def test_the_semantic_query_weighs_a_path_whole() -> None:
    share = {"ts": 0.5, "en": 0.3, "stub": 0.0, "locales": 0.05, "locales/en.ts": 0.01}
    assert semantic_query("locales/en.ts stub", share.__getitem__, 0.1) == "locales/en.ts stub"
    assert (
        semantic_query("locales/en.ts stub", share.__getitem__, 0.1, paths_whole=False)
        == "locales/. stub"
    )


def test_a_path_asked_from_the_project_folder_down_matches_as_the_read_shows_it(
    tmp_path: Path,
) -> None:
    archive = _session(tmp_path, [("fix the stub", f"Stubbed {CWD}/src/locales/en.ts.")])
    read = archive.load_turn_context([f"{SID}:0"], CWD, matching=["shop/src/locales/en.ts"])
    assert read.turns[0].assistant_text == "Stubbed src/locales/en.ts."


@pytest.mark.parametrize(
    "word, expected",
    [
        ("shop/src/x.py", "src/x.py"),
        ("alice/shop/src/x.py", "src/x.py"),
        ("src/x.py", "src/x.py"),
        ("shop", "shop"),
        ("shop/", "shop/"),
        ("other/shop/x.py", "other/shop/x.py"),
        ("/home/alice/shop/src/x.py", "src/x.py"),
        ("/home/alice/shop", "/home/alice/shop"),
        (r"shop\src\x.py", r"src\x.py"),
    ],
)
def test_relative_word_drops_the_head_a_project_folder_ends(word: str, expected: str) -> None:
    assert relative_word(word, [CWD, "/"]) == expected


def test_a_function_word_between_slashes_counts_alone() -> None:
    assert QueryTerms.of("North Carolina and/or Tennessee").together() == {}


def test_a_windows_path_is_indexed_with_the_runs_of_its_slash_form() -> None:
    terms = index_terms(r"edited C:\proj\src\locales\en.ts and \\srv\b.py")
    assert terms == [
        "edit", "c", "proj", "src", "local", "en.ts", "en", "ts", "and", "srv", "b.py", "b", "py",
        "proj/src", "src/locales", "locales/en.ts",  # the runs, as `/` joins them
        "proj/src/locales", "src/locales/en.ts", "proj/src/locales/en.ts",
        "srv/b.py",
    ]  # fmt: skip
    assert terms.length == 13


def test_a_path_longer_than_the_window_is_held_where_each_window_of_it_is() -> None:
    assert path_keys("locales/en.ts") == ["locales/en.ts"]
    assert path_keys("a/b/c/d/e.ts") == ["a/b/c/d", "b/c/d/e.ts"]
    texts = ["see src/app/ui/forms/Button.tsx", "see lib/app/ui/forms/Button.tsx", "forms"]
    postings = Postings.build([index_terms(t) for t in texts])
    q = QueryTerms.of("src/app/ui/forms/Button.tsx")
    alive = [np.ones(3, bool)]
    [scores] = bm25([postings], [(t, 1.0) for t in q.terms], alive, q.together())
    # the second names the path's last four parts, not its first: a path of its own
    assert (scores > 0).tolist() == [True, False, False]


@pytest.mark.parametrize("shape", ["1", "_-", "1'", "a", "1.", "1..", "-1", "a/", "’1"])
def test_the_semantic_query_of_a_hostile_text_takes_linear_time(shape: str) -> None:
    query = shape * (100_000 // len(shape))
    start = time.perf_counter()
    semantic_query(query, lambda w: 0.0, 0.5)
    assert time.perf_counter() - start < 1.0  # 100k chars: about 0.03 s, quadratic was minutes


def test_the_semantic_query_weighs_each_path_and_word_once_keeping_what_opens_it() -> None:
    asked: list[str] = []

    def share(word: str) -> float:
        asked.append(word)
        return 0.9 if word == "x.py" else 0.0

    assert semantic_query("see -1.2 it's 1abc x.py", share, 0.5) == "see -1.2 it's 1abc"
    assert asked == ["see", "1.2", "it's", "abc", "x.py"]
