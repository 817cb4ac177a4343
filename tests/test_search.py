"""Hybrid search, filters, scope, fallbacks and turn loading on the fixture archive."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import pytest
from conftest import shuffled_sessions

from archive_mcp import Archive
from archive_mcp.search.engine import Filters, SearchError, rrf

WEBAPP = "131148b1f826743e761a0be6ad66cb94"
ML = "dc8fa21d3e61040ad8305bf8ed3081c5"
LOGIN = "session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13"
DATE = "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17"
LOADER = "6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"


def _top(found) -> tuple[str, int]:  # noqa: ANN001
    return found[0].session_id, found[0].turn


@pytest.mark.parametrize(
    "query, workspace, expected",
    [
        ("formatISODate padStart", "webapp", (DATE, 0)),
        ("formatISODtae", "webapp", (DATE, 0)),  # a typo in an identifier
        ("handleLogin bound twice", "webapp", (LOGIN, 0)),
        ("num_workers", "ml-pipeline", (LOADER, 0)),
        ("turbojpeg", "ml-pipeline", (LOADER, 0)),
        ("scrollbar-gutter", "webapp", (DATE, 1)),
    ],
)
def test_hybrid_search_finds_the_turn(
    archive: Archive, query: str, workspace: str, expected: tuple[str, int]
) -> None:
    found = archive.search(query, workspace=workspace)
    assert _top(found) == expected
    assert found.realized_mode == "hybrid" and found.fallback_reason is None


def test_hit_carries_citation_snippet_and_signals(archive: Archive) -> None:
    hit = archive.search("handleLogin", workspace="webapp", limit=1)[0]
    assert (hit.workspace_id, hit.session_id, hit.agent, hit.turn) == (WEBAPP, LOGIN, "main", 0)
    assert hit.started_at == "2026-03-16T10:00:09.006000+00:00"
    assert "**handleLogin**" in hit.snippet
    assert "lexical" in hit.matched
    assert hit.raw_ref["file"] == f"raw/kimi-code/{LOGIN}/agents/main/wire.jsonl"
    assert hit.raw_ref["byte_start"] < hit.raw_ref["byte_end"]
    assert hit.summary.startswith("Asked: Why is the login form submitting twice?")


def test_typo_is_found_by_the_fuzzy_signal_alone(archive: Archive) -> None:
    assert archive.search("turbojepg", workspace="ml-pipeline", mode="lexical") == []
    fuzzy = archive.search("turbojepg", workspace="ml-pipeline", mode="fuzzy")
    assert _top(fuzzy) == (LOADER, 0) and fuzzy[0].matched == ["fuzzy"]
    assert "**turbojpeg**" in fuzzy[0].snippet


def test_chinese_query_matches_chinese_text_without_spaces(tmp_path: Path, fake_embedder) -> None:  # noqa: ANN001
    from test_ingest import HEADER, _session_dir, _turn

    _session_dir(
        tmp_path / "share",
        HEADER
        + _turn(0, "为什么数据加载器变慢了？", "因为解码改成了 PIL。")
        + _turn(1, "登录表单会提交两次", "按钮的 onClick 和表单的 onSubmit 都绑定了。"),
    )
    a = Archive(embedder=fake_embedder)
    a.ingest(tmp_path / "share")
    assert _top(a.search("表单提交", workspace="webapp", mode="lexical"))[1] == 1
    assert _top(a.search("数据加载", workspace="webapp", mode="lexical"))[1] == 0


def test_no_hit_ever_crosses_into_an_unlisted_workspace(archive: Archive) -> None:
    for query in ("test", "loader", "login", "the", "epoch"):
        for ws, wid in (("webapp", WEBAPP), ("ml-pipeline", ML)):
            assert {h.workspace_id for h in archive.search(query, workspace=ws, limit=50)} <= {wid}
    both = archive.search("loader login", workspace=[WEBAPP, ML], limit=50)
    assert {h.workspace_id for h in both} == {WEBAPP, ML}
    assert {h.workspace_id for h in archive.search("loader login", workspace="all", limit=50)} == {
        WEBAPP,
        ML,
    }


def test_default_scope_is_the_cwd_workspace_never_global(archive: Archive, tmp_path: Path) -> None:
    archive.link(str(tmp_path / "repo"), "ml-pipeline")
    assert {
        h.workspace_id for h in archive.search("login", cwd=str(tmp_path / "repo"), limit=50)
    } <= {ML}
    from archive_mcp.workspaces import WorkspaceError

    with pytest.raises(WorkspaceError, match="is not an archived workspace"):
        archive.search("login", cwd=str(tmp_path))


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"session": "0a1b"}, {("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", t) for t in (0, 1, 2)}),
        ({"agent": "a4f9c2e71"}, {(LOADER, 0)}),
        ({"tool": "grep"}, {(LOADER, 0)}),
        ({"kind": "error"}, {(LOADER, 1)}),
        ({"since": datetime(2026, 3, 15, 10, 1)}, {(LOADER, 1)}),
        (
            {"until": datetime(2025, 12, 31)},
            {("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", t) for t in (0, 1, 2)},
        ),
        ({"file": "configs/train.yaml"}, {(LOADER, 0)}),
    ],
)
def test_filters_restrict_hits(archive: Archive, filters: dict, expected: set) -> None:
    found = archive.search(
        "loader data collate benchmark epoch batches samples",
        workspace="ml-pipeline",
        mode="lexical",
        limit=50,
        filters=Filters(**filters),
    )
    assert {(h.session_id, h.turn) for h in found} == expected


def test_semantic_falls_back_to_lexical_and_says_why(kimi_root: Path) -> None:
    a = Archive(embedder=None)
    a.ingest(kimi_root)
    found = a.search("formatISODate", workspace="webapp", mode="semantic")
    assert found.realized_mode == "lexical"
    assert found.fallback_reason == "no embedding model is configured"
    assert _top(found) == (DATE, 0)
    hybrid = a.search("formatISODate", workspace="webapp")
    assert (hybrid.realized_mode, hybrid.fallback_reason) == (
        "lexical+fuzzy",
        "no embedding model is configured",
    )


def test_turns_without_embeddings_fall_back_with_a_hint(kimi_root: Path, fake_embedder) -> None:  # noqa: ANN001
    a = Archive(embedder=fake_embedder)
    a.ingest(kimi_root, embed=False)
    found = a.search("date", workspace="webapp")
    assert found.realized_mode == "lexical+fuzzy"
    assert "run `archive-mcp refine`" in found.fallback_reason


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"query": "x", "mode": "magic"},
            "mode must be one of hybrid, lexical, fuzzy, semantic, not 'magic'",
        ),
        ({"query": "  "}, "the query is empty"),
        ({"query": "x", "filters": Filters(theme="../../etc")}, "no theme named '../../etc'"),
    ],
)
def test_bad_search_arguments_say_what_to_do(archive: Archive, kwargs: dict, message: str) -> None:
    with pytest.raises(SearchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        archive.search(workspace="webapp", **kwargs)


def test_index_is_a_rebuildable_cache_that_follows_new_turns(
    archive: Archive, kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import archive_mcp.search.index

    monkeypatch.setattr(
        archive_mcp.search.index, "DELTA_SHARE", 10.0
    )  # this base is tiny: force a delta
    ws = archive.workspace("webapp")
    before = [
        (h.session_id, h.turn) for h in archive.search("dark mode toggle", workspace="webapp")
    ]
    shutil.rmtree(ws.cache_dir)  # derived: deleting it loses nothing
    fresh = Archive(embedder=archive._embedder)
    assert [
        (h.session_id, h.turn) for h in fresh.search("dark mode toggle", workspace="webapp")
    ] == before
    # a new session arrives: the loaded index notices and includes it
    from test_ingest import HEADER, _turn

    (kimi_root / "sessions" / WEBAPP / "aaaaaaaa-0000-4000-8000-000000000000").mkdir()
    (
        kimi_root / "sessions" / WEBAPP / "aaaaaaaa-0000-4000-8000-000000000000" / "wire.jsonl"
    ).write_bytes(
        HEADER + _turn(0, "switch the toggle to a zustand store", "Moved useTheme into zustand.")
    )
    fresh.ingest(kimi_root)
    assert (
        fresh.search("zustand", workspace="webapp")[0].session_id
        == "aaaaaaaa-0000-4000-8000-000000000000"
    )
    assert fresh.index(ws).segments[1].meta.height == 1  # only the new session went into the delta
    import json

    manifest = json.loads((ws.cache_dir / "search" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["delta_sessions"] == ["aaaaaaaa-0000-4000-8000-000000000000"]
    assert (
        manifest["turns"]["aaaaaaaa-0000-4000-8000-000000000000"] == 1
    )  # its real size, not a guess


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf({"lexical": [3, 1], "semantic": [1, 7]}, k=60)
    assert [d for d, _, _ in fused] == [1, 3, 7]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0][2] == ["lexical", "semantic"]


def test_load_turn_context_reads_the_raw_log_and_reports_bad_references(archive: Archive) -> None:
    ctx = archive.load_turn_context(
        [
            {"session_id": LOADER, "turn": 1},
            {"session_id": LOADER, "turn": 5},
            {"session_id": "nope", "turn": 0},
        ],
        workspace="ml-pipeline",
        before=1,
    )
    assert [(t.turn, t.requested) for t in ctx.turns] == [(0, False), (1, True)]
    bench = ctx.turns[1].tool_calls[0]
    assert bench.name == "Shell" and bench.result.startswith("[bench] batch 00000")
    assert [n.reason for n in ctx.not_found] == [
        f"turn 5 is not in session {LOADER} (agent main); valid turns: 0..1",
        "no session 'nope' in workspace ml-pipeline; search for its turns or list the sessions",
    ]


def test_load_turn_context_holds_max_chars_and_cuts_at_words(archive: Archive) -> None:
    ctx = archive.load_turn_context(
        [{"session_id": LOADER, "turn": 1}], workspace="ml-pipeline", max_chars=500, full_tools=True
    )
    t = ctx.turns[0]
    assert t.truncated
    assert t.tool_calls[0].result.endswith("…") and not t.tool_calls[0].result.endswith(" …")
    texts = [
        t.user_text,
        t.assistant_text,
        *(c.arguments for c in t.tool_calls),
        *(c.result for c in t.tool_calls),
    ]
    assert sum(map(len, texts)) <= 500


def test_subagent_turn_loads_from_its_own_log(archive: Archive) -> None:
    ctx = archive.load_turn_context(
        [{"session_id": LOADER, "turn": 0, "agent": "a4f9c2e71"}], workspace="ml-pipeline"
    )
    assert ctx.turns[0].assistant_text.startswith("Hot paths: `build_batch`")
    assert ctx.turns[0].tool_calls[0].name == "Grep"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"session": "no-such-session"},
            "no session starting with 'no-such-session' in webapp; sessions there: ",
        ),
        ({"kind": "banana"}, "no turn in webapp has kind 'banana'; kinds there: "),
        ({"tool": "Teleport"}, "no turn in webapp has tool 'teleport'; tools there: "),
        ({"agent": "ghost"}, "no turn in webapp has agent 'ghost'; agents there: main"),
        ({"since": datetime(2026, 3, 20), "until": datetime(2026, 3, 1)}, "is after until"),
    ],
)
def test_filters_that_cannot_match_are_errors_that_say_what_exists(
    archive: Archive, kwargs: dict, message: str
) -> None:
    from archive_mcp.errors import ArchiveError
    from archive_mcp.search.engine import UnknownFilter

    with pytest.raises(ArchiveError) as err:
        archive.search("login", workspace="webapp", filters=Filters(**kwargs))
    assert message in str(err.value)
    assert isinstance(err.value, UnknownFilter) == ("since" not in kwargs)
    if "session" in kwargs:
        assert LOGIN in str(err.value)


def test_a_filter_that_matches_in_one_of_several_workspaces_is_fine(archive: Archive) -> None:
    found = archive.search("num_workers", "all", filters=Filters(session=LOADER[:8]))
    assert _top(found) == (LOADER, 0)


def test_headline_caps_the_query_echo_and_counts_hits_cut_for_size(archive: Archive) -> None:
    long = "why does login fail " * 500
    found = archive.search(long, workspace="webapp")
    head = found.headline(0)
    assert len(head) < 250 and f"({len(long):,} chars)" in head
    assert head.startswith(f"{len(found)} hits (0 shown) for ") and len(found) > 0
    assert found.headline().startswith(f"{len(found)} hits for ")


@pytest.mark.parametrize(
    "text, query, expected",
    [
        (
            "We are catching the error in time.",
            "catch errors in",
            "We are **catching** the **error** in time.",
        ),
        ("call formatISODate now", "date", "call **formatISODate** now"),
        ("the index is in the cache", "the in", "the index is in the cache"),
        ("回退到默认值了", "默认值", "回退到**默认值**了"),
    ],
)
def test_highlight_marks_whole_query_words_only(text: str, query: str, expected: str) -> None:
    from archive_mcp.search.highlight import highlight_terms, mark

    assert mark(text, highlight_terms(query, [])) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Fixed parse_config: catching the errors in formatISODate, then the tests ran.",
        "the having haves of have; src/app/login.ts handleLogin",
        "回退到默认值了 and the default values",
        "",
    ],
)
def test_a_passage_holds_the_query_terms_its_whole_analysis_holds(text: str) -> None:
    from archive_mcp.search.highlight import _terms_held
    from archive_mcp.search.lexical import analyse

    terms = {"catch", "date", "config", "have", "login", "默认", "default", "the"}
    assert _terms_held(text, terms) == len(set(analyse(text)) & terms)
    assert _terms_held(text[:20], terms) == len(set(analyse(text[:20])) & terms)


def test_too_short_workspace_prefix_says_so(archive: Archive) -> None:
    from archive_mcp.workspaces import WorkspaceError

    with pytest.raises(WorkspaceError, match="'131' is too short for a workspace id prefix"):
        archive.search("login", workspace=WEBAPP[:3])
    assert archive.search("handleLogin", workspace=WEBAPP[:4])


def test_context_share_lifts_the_neighbours_and_the_session_of_a_strong_turn() -> None:
    import numpy as np
    import polars as pl

    from archive_mcp.search.ranking import Neighbours, with_context

    meta = pl.DataFrame(
        {"session_id": ["a", "a", "a", "b", "b"], "agent": ["main"] * 5, "turn": [2, 0, 1, 0, 1]}
    )
    nb = Neighbours.of(meta)
    assert nb.prev.tolist() == [2, -1, 1, -1, 3] and nb.next.tolist() == [-1, 2, 0, 4, -1]
    total = np.array([0.0, 0.0, 1.0, 0.5, 0.0], np.float32)
    out = with_context(total, nb, neighbour=0.3, session=0.2, how="sum")
    # a's turn 1 (row 2) is strong: its neighbours (rows 0 and 1) gain 0.3 + 0.2, session b gains its own 0.5's shares
    assert np.allclose(out, [0.5, 0.5, 1.2, 0.6, 0.25])
    # the default lifts a turn only by what the shares exceed of the same shares of its own score:
    # the strong turns keep their score, the weak ones beside them rise as before
    assert np.allclose(
        with_context(total, nb, neighbour=0.3, session=0.2), [0.5, 0.5, 1.0, 0.5, 0.25]
    )


def test_context_lift_keeps_the_order_of_turns_that_match_about_equally() -> None:
    import numpy as np
    import polars as pl

    from archive_mcp.search.ranking import Neighbours, with_context

    # session a: a run of three equal matches; session b: one slightly better match alone
    meta = pl.DataFrame(
        {"session_id": ["a", "a", "a", "b"], "agent": ["main"] * 4, "turn": [0, 1, 2, 0]}
    )
    total = np.array([1.0, 1.0, 1.0, 1.05], np.float32)
    nb = Neighbours.of(meta)
    summed = with_context(total, nb, 0.2, 0.1, how="sum")
    assert np.allclose(summed, [1.3, 1.3, 1.3, 1.155])  # the run overtakes b
    lifted = with_context(total, nb, 0.2, 0.1)
    assert np.allclose(lifted, total) and int(np.argmax(lifted)) == 3


@pytest.mark.parametrize("how", ["lift", "sum", "max"])
def test_the_fusion_and_context_of_some_turns_equal_those_over_every_turn(how: str) -> None:
    import numpy as np

    from archive_mcp.search.ranking import (
        Neighbours,
        fuse,
        fuse_at,
        with_context,
        with_context_at,
    )

    rng = np.random.default_rng(3)
    n = 400
    meta = shuffled_sessions(rng, n)
    ok = rng.random(n) > 0.1
    lexical = np.where(rng.random(n) > 0.5, rng.random(n) * 9, 0.0).astype(np.float32)
    semantic = np.where(rng.random(n) > 0.05, rng.random(n), -1.0).astype(np.float32)
    weights = {"semantic": 0.8}
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    # fuzzy equal to lexical is the same array: normalised once, kept under both names
    fuse(
        {"lexical": lexical, "fuzzy": lexical, "semantic": semantic},
        ok,
        weights,
        "zsum",
        parts=parts,
    )
    assert parts["fuzzy"][0] is lexical and parts["fuzzy"][1] is parts["lexical"][1]
    changed = semantic.copy()
    docs = np.array([5, 17, 250, 3, 399])
    changed[docs] += 0.25
    # the lexical and fuzzy parts are read from `parts`
    scores = {"lexical": lexical, "fuzzy": lexical, "semantic": changed}
    total = fuse(scores, ok, weights, "zsum")
    nb = Neighbours.of(meta)
    rows = nb.sessions_of(docs)
    assert set(nb.group[rows].tolist()) == set(nb.group[docs].tolist())
    assert np.array_equal(np.flatnonzero(np.isin(nb.group, nb.group[docs])), rows)
    own = fuse_at(rows, scores, ok, weights, parts)
    assert own.tobytes() == total[rows].tobytes()
    at = with_context_at(docs, rows, own, nb, 0.5, 0.3, how)
    assert at.tobytes() == with_context(total, nb, 0.5, 0.3, how)[docs].tobytes()


@pytest.mark.parametrize("depth", [1, 100, 3000])
def test_top_of_many_scores_is_the_best_first_with_ties_by_row(depth: int) -> None:
    import numpy as np

    from archive_mcp.search.ranking import top

    rng = np.random.default_rng(11)
    n = 70_000  # enough for the strided first threshold
    scores = np.round(rng.random(n) * 50 - 5).astype(np.float32)  # many ties, some <= 0
    ok = rng.random(n) > 0.2
    eligible = [i for i in range(n) if ok[i] and scores[i] > 0]
    expected = sorted(eligible, key=lambda i: (-scores[i], i))[:depth]
    assert top(scores, ok, depth) == expected


def test_zscores_keep_every_match_and_a_weak_signal_cannot_outvote_a_confident_one() -> None:
    import numpy as np

    from archive_mcp.search.ranking import fuse

    ok = np.ones(6, bool)
    lexical = np.array([9.0, 0.0, 0.0, 0.0, 0.0, 0.5], np.float32)  # one confident match
    semantic = np.array([0.30, 0.34, 0.33, 0.32, 0.31, 0.30], np.float32)  # a flat, noisy cosine
    total = fuse({"lexical": lexical, "semantic": semantic}, ok, {}, "zsum")
    assert int(np.argmax(total)) == 0
    assert total[5] > 0  # a weak lexical match stays a candidate


def test_words_common_to_the_workspace_leave_the_semantic_query() -> None:
    from archive_mcp.search.ranking import semantic_query

    share = {"caroline": 0.6, "melanie": 0.4}.get
    assert (
        semantic_query(
            "When did Caroline go to the LGBTQ support group?", lambda w: share(w.lower(), 0.0), 0.1
        )
        == "When did go to the LGBTQ support group?"
    )
    assert (
        semantic_query("Caroline", lambda w: share(w.lower(), 0.0), 0.1) == "Caroline"
    )  # never empty


@pytest.mark.parametrize("seed", range(40))
def test_postings_written_through_runs_are_the_postings_built_in_memory(
    tmp_path: Path, seed: int
) -> None:
    """Spilled runs merged by term range give exactly `Postings.build`'s arrays: empty documents,
    a vocabulary that grows run after run, terms in only some runs, a term larger than a block."""
    import random

    import numpy as np

    from archive_mcp.search.lexical import Postings

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.randint(1, 300))]
    docs = [
        [rng.choice(words[: rng.randint(1, len(words))]) for _ in range(rng.choice([0, 1, 5, 40]))]
        for _ in range(rng.randint(0, 200))
    ]
    if seed == 0:
        docs = [["the"] * 50 + ["a"], [], ["the", "b"]]  # one term larger than any block below
    whole = Postings.build(docs)
    run, block = rng.choice([1, 3, 50, 10**9]), rng.choice([1, 2, 7, 10**9])
    Postings.write(iter(docs), tmp_path / "p", run_size=run, block_size=block)
    written = Postings.load(tmp_path / "p")
    assert written.vocab == whole.vocab and sorted(x.name for x in (tmp_path / "p").iterdir()) == [
        "doc_ids.npy",
        "doc_len.npy",
        "offsets.npy",
        "tfs.npy",
        "vocab.json",
    ]
    for name in ("offsets", "doc_ids", "tfs", "doc_len"):
        a, b = np.asarray(getattr(written, name)), np.asarray(getattr(whole, name))
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    for term in whole.vocab:  # read from the files, not through the map
        assert all(
            np.array_equal(x, y)
            for x, y in zip(written.postings(term), whole.postings(term), strict=True)
        )


def test_an_index_written_in_small_runs_is_the_same_index(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build streams (postings spilled to sorted runs and merged, vectors appended per chunk of
    sessions, metadata written per chunk): however small the chunks and runs, the index is the one
    written in one chunk and one run, and rows whose session has no stored vectors (here the
    first, before any width is known) are zero."""
    import shutil

    import numpy as np
    import polars as pl

    import archive_mcp.search.index as index
    import archive_mcp.search.lexical as lexical

    ws = archive.workspace("webapp")
    first = sorted(ws.refined_dir.glob("*.parquet"))[0].stem
    (ws.embeddings_dir / f"{first}.parquet").unlink()

    def built() -> tuple[dict, np.ndarray, np.ndarray, list, pl.DataFrame]:
        shutil.rmtree(ws.cache_dir, ignore_errors=True)
        idx = Archive(embedder=archive._embedder).index(ws).refresh()
        seg = idx.segments[0]
        arrays = {
            n: np.asarray(getattr(seg.postings, n)).copy()
            for n in ("offsets", "doc_ids", "tfs", "doc_len")
        }
        return (
            arrays,
            np.asarray(seg.vectors).copy(),
            seg.has_vector.copy(),
            seg.postings.vocab,
            seg.meta,
        )

    whole = built()
    monkeypatch.setattr(index, "BUILD_CHUNK", 1)
    monkeypatch.setattr(lexical, "RUN_POSTINGS", 7)
    monkeypatch.setattr(lexical, "BLOCK_POSTINGS", 5)
    runs = built()
    assert runs[3] == whole[3] and runs[4].equals(whole[4]) and runs[4].height > 3
    for name, array in whole[0].items():
        assert np.array_equal(runs[0][name], array), name
    assert np.array_equal(runs[1], whole[1]) and np.array_equal(runs[2], whole[2])
    meta = runs[4]
    first_rows = np.array(
        [index.session_file_stem(s) == first for s in meta["session_id"].to_list()]
    )
    assert (
        first_rows.any()
        and meta.height == len(runs[2])
        and runs[0]["doc_len"].shape == (meta.height,)
    )
    assert not runs[2][first_rows].any() and runs[2][~first_rows].all()
    assert not runs[1][first_rows].any()
    base = ws.cache_dir / "search" / "base"
    assert (
        not (base / "postings" / "runs").exists() and not (base / "meta.parts").exists()
    )  # spills are removed


def test_the_build_reads_files_in_chunks_bounded_by_count_and_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.search.index as index

    monkeypatch.setattr(index, "BUILD_CHUNK", 3)
    monkeypatch.setattr(index, "BUILD_BYTES", 100)
    files = []
    for i, size in enumerate([10, 10, 10, 10, 90, 500, 5, 5]):
        (tmp_path / f"{i}").write_bytes(b"x" * size)
        files.append(tmp_path / f"{i}")
    files.append(
        tmp_path / "gone"
    )  # vanished since it was listed: still placed in a chunk, no error here
    chunks = [[f.name for f in c] for c in index._chunks(files)]
    assert chunks == [["0", "1", "2"], ["3", "4"], ["5"], ["6", "7", "gone"]]


def test_vectors_too_large_for_memory_stream_from_the_file_with_the_same_scores(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    import archive_mcp.search.index as index

    query = np.asarray(archive._embedder.embed(["dark mode toggle"])[0], np.float32)
    in_memory = Archive(embedder=archive._embedder).index(archive.workspace("webapp")).refresh()
    assert in_memory.segments[0].dense() is not None
    sims, has = in_memory.cosine(query)
    monkeypatch.setattr(index, "DENSE_MAX_BYTES", 0)
    monkeypatch.setattr(index, "READ_ROWS", 2)
    streamed = Archive(embedder=archive._embedder).index(archive.workspace("webapp")).refresh()
    assert streamed.segments[0].dense() is None and isinstance(
        streamed.segments[0].vectors, np.memmap
    )
    sims2, has2 = streamed.cosine(query)
    assert has.any() and np.array_equal(has, has2) and np.allclose(sims, sims2, atol=1e-6)
    # built past the limit, the index also keeps int8 vectors with a scale per row, which the scan reads
    import shutil

    shutil.rmtree(archive.workspace("webapp").cache_dir / "search")
    built = Archive(embedder=archive._embedder).index(archive.workspace("webapp")).refresh()
    assert (
        built.segments[0].quantized is not None and (built.folder / "base" / "vectors.q8").exists()
    )
    sims3, has3 = built.cosine(query)
    assert (
        np.array_equal(has, has3)
        and np.abs(sims3 - sims).max() < 0.01
        and not np.allclose(sims3, sims, atol=1e-6)
    )
    assert np.array_equal(np.argsort(-sims3[has])[:5], np.argsort(-sims[has])[:5])


def test_a_build_that_fails_leaves_the_index_and_no_half_written_folder(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.search.index as index

    ws = archive.workspace("webapp")
    before = [
        (h.session_id, h.turn) for h in archive.search("dark mode toggle", workspace="webapp")
    ]
    base = ws.cache_dir / "search" / "base"
    files = {p.name: p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
    monkeypatch.setattr(
        index, "BUILD_CHUNK", 1
    )  # the bad file is read after the good ones were written
    monkeypatch.setattr(index, "DELTA_SHARE", 0.0)  # any change rebuilds the base
    last = sorted(ws.refined_dir.glob("*.parquet"))[-1]
    good = last.read_bytes()
    (ws.refined_dir / "swap.tmp").write_bytes(b"not parquet at all")
    (ws.refined_dir / "swap.tmp").rename(
        last
    )  # as the archive writes: a rename, which marks the index stale
    (ws.cache_dir / "search.tmp1").mkdir()  # left by a build that was killed
    fresh = Archive(embedder=archive._embedder)
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017 - whatever the reader raises; the point is what is left
            fresh.search("dark mode toggle", workspace="webapp")
    assert sorted(p.name for p in ws.cache_dir.iterdir() if p.name.startswith("search")) == [
        "search"
    ]
    assert {p.name: p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()} == files
    (ws.refined_dir / "swap.tmp").write_bytes(good)
    (ws.refined_dir / "swap.tmp").rename(last)
    assert [
        (h.session_id, h.turn) for h in fresh.search("dark mode toggle", workspace="webapp")
    ] == before


def test_an_embedding_file_of_another_model_and_width_leaves_its_rows_without_vectors(
    archive: Archive,
) -> None:
    import shutil

    import numpy as np
    import polars as pl

    import archive_mcp.search.index as index

    ws = archive.workspace("webapp")
    first = sorted(ws.embeddings_dir.glob("*.parquet"))[0]
    old = pl.read_parquet(first)
    old.with_columns(
        model=pl.lit("older-model"),
        vector=pl.Series([[0.5] * 8] * old.height, dtype=pl.Array(pl.Float32, 8)),
    ).write_parquet(first)
    shutil.rmtree(ws.cache_dir / "search", ignore_errors=True)
    seg = Archive(embedder=archive._embedder).index(ws).refresh().segments[0]
    own = np.array(
        [index.session_file_stem(s) == first.stem for s in seg.meta["session_id"].to_list()]
    )
    assert own.any() and not seg.has_vector[own].any() and seg.has_vector[~own].all()
    assert seg.vectors is not None and seg.vectors.shape[1] == old.schema["vector"].size  # type: ignore[union-attr]


def test_a_loaded_index_keeps_reading_its_own_files_after_another_process_rebuilds_it(
    archive: Archive, kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild renames a new folder into place; a process that loaded the old index reads the
    files it loaded (through its maps), never the new files that now have their names (here a
    base rebuilt with the delta's session in it: other postings under the same file names)."""
    import numpy as np
    from test_ingest import HEADER, _turn

    import archive_mcp.search.index

    monkeypatch.setattr(archive_mcp.search.index, "DELTA_SHARE", 10.0)
    ws = archive.workspace("webapp")
    archive.search("warm up", workspace="webapp")  # the base
    new = kimi_root / "sessions" / WEBAPP / "aaaaaaaa-0000-4000-8000-000000000000"
    new.mkdir()
    (new / "wire.jsonl").write_bytes(
        HEADER + _turn(0, "switch the dark mode toggle to a zustand store", "Moved it.")
    )
    archive.ingest(kimi_root)
    loaded = Archive(embedder=archive._embedder)
    assert loaded.index(ws).refresh().segments[1].meta.height == 1  # base + a delta
    before = [
        (h.session_id, h.turn)
        for h in loaded.search("dark mode toggle", workspace="webapp", mode="lexical")
    ]
    postings = loaded.index(ws).segments[0].postings
    lists = {t: [a.copy() for a in postings.postings(t)] for t in postings.vocab}
    other = Archive(embedder=None)  # another model: the whole index is rebuilt and swapped in
    other.search("anything at all", workspace="webapp", mode="lexical")
    assert other.index(ws).model != loaded.index(ws).model
    for term, (docs, tfs) in lists.items():
        got = postings.postings(term)
        assert np.array_equal(got[0], docs) and np.array_equal(got[1], tfs), term
    assert [
        (h.session_id, h.turn)
        for h in loaded.search("dark mode toggle", workspace="webapp", mode="lexical")
    ] == before


def test_quantized_rows_stay_within_int8_and_half_a_step_of_the_row() -> None:
    import numpy as np

    from archive_mcp.search.projection import quantize

    rows = np.array(
        [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-0.5, 0.25, -0.125], [1e-8, -3e-8, 2e-8]], np.float32
    )
    q, scale = quantize(rows)
    assert q.dtype == np.int8 and scale.dtype == np.float32 and np.abs(q.astype(int)).max() == 127
    assert q[0].tolist() == [0, 0, 0] and scale[0] == 1.0
    assert q[1].tolist() == [0, 127, 0] and q[2].tolist() == [-127, 64, -32]
    assert np.all(np.abs(q * scale[:, None] - rows) <= scale[:, None] / 2 + 1e-12)
    empty_q, empty_scale = quantize(np.zeros((0, 3), np.float32))
    assert empty_q.shape == (0, 3) and empty_scale.shape == (0,)


def _hold(directory: Path) -> tuple[threading.Event, threading.Thread]:
    """Hold `directory`'s lock in another thread (as a writer would) until the event is set."""
    from archive_mcp.workspaces import locked

    got, release = threading.Event(), threading.Event()

    def run() -> None:
        with locked(directory):
            got.set()
            release.wait(30)

    t = threading.Thread(target=run)
    t.start()
    assert got.wait(10)
    return release, t


def test_held_elsewhere_is_another_thread_or_process_holding_the_lock(tmp_path: Path) -> None:
    from archive_mcp.workspaces import held_elsewhere, locked

    assert not held_elsewhere(tmp_path)  # no lock file yet
    with locked(tmp_path):
        assert not held_elsewhere(tmp_path)  # this thread is the holder
    assert not held_elsewhere(tmp_path)
    release, t = _hold(tmp_path)
    try:
        assert held_elsewhere(tmp_path)
    finally:
        release.set()
        t.join()
    assert not held_elsewhere(tmp_path)


def test_a_search_while_a_writer_holds_the_workspace_answers_from_the_last_index(
    archive: Archive, kimi_root: Path
) -> None:
    from test_ingest import HEADER, _turn

    ws = archive.workspace("webapp")
    assert archive.search("dark mode toggle", workspace="webapp")  # the index is built
    sid = "aaaaaaaa-0000-4000-8000-000000000001"
    (kimi_root / "sessions" / WEBAPP / sid).mkdir()
    (kimi_root / "sessions" / WEBAPP / sid / "wire.jsonl").write_bytes(
        HEADER + _turn(0, "switch the toggle to a zustand store", "Moved useTheme into zustand.")
    )
    archive.ingest(kimi_root)  # the refined files changed: the index is stale
    for writer in (ws.root, ws.cache_dir):  # an ingest; another process building the index
        release, t = _hold(writer)
        try:
            for searcher in (archive, Archive(embedder=archive._embedder)):  # loaded; a new one
                found = searcher.search("zustand", workspace="webapp")
                assert sid not in {h.session_id for h in found}  # the index from before
                assert found.fallback_reason == (
                    "the workspace is being written: answered from the index built before"
                )
        finally:
            release.set()
            t.join()
    found = archive.search("zustand", workspace="webapp")  # the writer let go: rebuilt
    assert found[0].session_id == sid
    assert found.fallback_reason is None


@pytest.mark.parametrize(
    "query",
    [
        "why is the login form submitting twice",
        "formatISODate padStart the the",
        "回退到默认值 and parse_config",
        "a an the",
        "",
    ],
)
def test_a_query_analysed_once_gives_what_analyse_gives_with_and_without_stopwords(
    query: str,
) -> None:
    from archive_mcp.search.lexical import QueryTerms, analyse

    analysed = QueryTerms.of(query)
    assert analysed.terms == list(dict.fromkeys(analyse(query)))
    assert analysed.content == list(dict.fromkeys(analyse(query, drop_stopwords=True)))


def test_a_search_reads_no_refined_file_once_the_index_is_built(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polars as pl

    archive.search("handleLogin", workspace="webapp")  # builds and loads the index
    expected = [h.to_json() for h in archive.search("handleLogin bound twice", workspace="webapp")]

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a search read a Parquet file")

    monkeypatch.setattr(pl, "read_parquet", refused)
    monkeypatch.setattr(pl, "scan_parquet", refused)
    found = archive.search("handleLogin bound twice", workspace="webapp")
    assert [h.to_json() for h in found] == expected
    assert found[0].snippet and found[0].summary.startswith("Asked: Why is the login form")


def test_a_turn_text_record_round_trips_and_keeps_what_hits_and_sentences_read() -> None:
    from archive_mcp.search.ranking import split_sentences
    from archive_mcp.search.texts import SNIPPET_CAP, TurnText

    row = {
        "summary": "Asked: why? Answered: because.",
        "title": None,
        "user_text": "Why does it fail?\n" + "x" * (SNIPPET_CAP + 50),
        "assistant_text": "It fails. Because 回退到默认值.",
        "tool_calls": [
            {"name": "Bash", "args_summary": "ls", "result_summary": "ok", "status": "ok"}
        ],
    }
    text = TurnText.of(row)
    assert TurnText.decode(text.encode()) == text
    assert len(text.user_text) == SNIPPET_CAP
    assert text.sentences == split_sentences(f"{row['user_text']}\n{row['assistant_text']}")
    assert text.tool_calls == [{"name": "Bash", "args_summary": "ls", "result_summary": "ok"}]
    assert text.head == f"{row['user_text']}\n{row['assistant_text']}"[:2000]


def test_best_sentence_embeds_each_distinct_sentence_once_and_scores_as_before() -> None:
    import numpy as np

    from archive_mcp.search.ranking import best_of_sentences

    table = {"Done.": [1.0, 0.0], "It failed.": [0.0, 1.0], "Retry now.": [0.6, 0.8]}
    asked: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.append(texts)
        return np.asarray([table[t] for t in texts], np.float32)

    split = [["Done.", "It failed."], [], ["Retry now.", "Done."], ["It failed."]]
    best = best_of_sentences(np.asarray([0.0, 1.0], np.float32), split, embed)
    assert asked == [["Done.", "It failed.", "Retry now."]]
    assert best.tolist() == [1.0, -1.0, np.float32(0.8).item(), 1.0]


def test_fusing_again_reuses_the_unchanged_signals_and_gives_the_same_scores() -> None:
    import numpy as np

    from archive_mcp.search.ranking import fuse

    rng = np.random.default_rng(3)
    scores = {
        "lexical": rng.random(500).astype(np.float32),
        "fuzzy": rng.random(500).astype(np.float32),
        "semantic": rng.random(500).astype(np.float32) * 2 - 1,
    }
    ok = rng.random(500) > 0.1
    weights = {"semantic": 0.7, "fuzzy": 0.3}
    parts: dict = {}
    fuse(scores, ok, weights, "zsum", 40, parts)
    lexical_part = parts["lexical"][1]
    changed = {**scores, "semantic": scores["semantic"].copy()}
    changed["semantic"][:40] = 0.99
    again = fuse(changed, ok, weights, "zsum", 40, parts)
    assert parts["lexical"][1] is lexical_part and parts["semantic"][0] is changed["semantic"]
    assert np.array_equal(again, fuse(changed, ok, weights, "zsum", 40))


@pytest.mark.parametrize("pad", [0, 40])  # 3 matches of 8 turns: the dense pass; of 48: sparse
def test_the_lexical_z_score_from_the_matches_alone_equals_the_one_over_every_turn(
    pad: int,
) -> None:
    import numpy as np

    from archive_mcp.search.ranking import zscored

    x = np.array([0.0, 3.0, 0.0, 1.0, 0.0, 2.0, 0.0, 6.0] + [0.0] * pad, np.float32)
    ok = np.ones(x.size, bool)
    ok[7] = False  # the 6.0 is filtered out
    vals = x[ok]  # over every eligible turn, the zeros too
    mu, sd, best = vals.mean(), vals.std(), vals.max()
    want = np.where(ok & (x > 0), np.maximum((x - mu) / sd, 0.0) + 1e-3 * x / best, 0.0)
    got = zscored("lexical", x, ok)
    assert got.dtype == np.float32
    assert np.allclose(got, want, atol=1e-6) and got[7] == 0.0 and got[1] > got[5] > got[3] > 0
    assert zscored("lexical", x, ~ok).tolist() == [0.0] * 7 + [1.0] + [0.0] * pad
    assert zscored("lexical", np.zeros(x.size, np.float32), ok).tolist() == [0.0] * x.size


def test_top_ranks_the_positive_eligible_scores_and_breaks_ties_by_row() -> None:
    import numpy as np

    from archive_mcp.search.ranking import top

    scores = np.array([0.0, 2.0, 5.0, 2.0, -1.0, 2.0, 7.0], np.float32)
    ok = np.array([True, True, True, True, True, True, False])
    assert top(scores, ok, 10) == [2, 1, 3, 5]
    assert top(scores, ok, 2) == [2, 1]
    assert top(scores, ~ok, 3) == [6]
    assert top(np.zeros(3, np.float32), np.ones(3, bool)) == []


def test_the_hits_meta_rows_come_in_the_order_asked_from_a_frame_of_many_chunks(
    archive: Archive,
) -> None:
    import polars as pl

    from archive_mcp.search.engine import meta_rows

    meta = archive.index(archive.workspace(WEBAPP)).refresh().meta
    assert meta.height >= 3
    chunked = pl.concat([meta.slice(0, 1), meta.slice(1)], rechunk=False)
    assert chunked.n_chunks() == 2
    docs = [2, 0, 2, 1]
    assert meta_rows(chunked, docs).equals(meta[docs])
    empty = meta_rows(chunked, [])
    assert empty.height == 0 and empty.schema == meta.schema
