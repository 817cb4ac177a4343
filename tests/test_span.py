"""A time-ordered search reaches the ends of a story: the earliest and the latest strong
candidates below the top hits replace the weakest of them; a search by rank is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from archive_mcp import Archive
from archive_mcp.mcp.server import build_server
from archive_mcp.search.span import Span, spanned

pytestmark = pytest.mark.anyio

CWD = "/home/alice/projects/cache"
RULE = Span(depth=3, share=0.6)
SCORES = [1.0, 0.9, 0.8, 0.75, 0.7, 0.65, 0.62, 0.3, 0.2]


@pytest.mark.parametrize(
    "limit, times, kept",
    [
        # the earliest (4: time 1) and the latest (6: time 10) strong candidates replace the
        # weakest two kept
        (3, [5, 6, 7, 8, 1, 9, 10, 0, 11], [0, 4, 6]),
        # below the share (7: 0.3, time 0) a turn is never an end
        (3, [5, 6, 7, 8, 9, 4, 3, 0, 1], [0, 4, 6]),
        # an end already kept (the best is the earliest) stays; the latest replaces the weakest
        (3, [1, 6, 7, 8, 2, 3, 4, 0, 0], [0, 1, 3]),
        # both ends already kept: nothing changes
        (3, [5, 1, 9, 4, 3, 2, 7, None, None], [0, 1, 2]),
        # an unknown time is never an end
        (3, [None, None, None, None, None, None, None, 0, 9], [0, 1, 2]),
        # past depth * limit (6: time 0) a turn is never an end; two hits hold one end
        (2, [5, 6, 7, 8, 9, 4, 0, 0, 0], [0, 5]),
    ],
)
def test_spanned_keeps_the_best_and_the_strong_ends_within_the_limit(
    limit: int, times: list[int | None], kept: list[int]
) -> None:
    assert spanned(SCORES, times, limit, RULE) == kept


@pytest.mark.parametrize("limit, kept", [(1, [0]), (9, [0, 1, 2, 3, 4, 5, 6, 7, 8])])
def test_spanned_leaves_a_single_hit_or_every_candidate_as_ranked(
    limit: int, kept: list[int]
) -> None:
    assert spanned(SCORES, [9, 8, 7, 6, 5, 4, 3, 2, 1], limit, RULE) == kept


def test_spanned_of_no_candidates_is_empty() -> None:
    assert spanned([], [], 5, RULE) == []


def _line(sid: str, kind: str, text: str, day: int, cwd: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    message = {"role": kind, "content": content, **({"id": f"m{day}"} if kind != "user" else {})}
    return json.dumps(
        {
            "type": kind,
            "sessionId": sid,
            "cwd": cwd,
            "version": "2.1.9",
            "timestamp": f"2026-03-{day:02d}T10:0{int(kind != 'user')}:00Z",
            "uuid": f"u{day}{kind}",
            "message": message,
        }
    )


STORY = {
    1: "Should the cache eviction be LRU or FIFO, for the cache eviction of sessions and of uploads?",
    **{
        d: f"Cache eviction is slow again (run {d}): profile the cache eviction."
        for d in range(5, 11)
    },
    20: "Settled the cache eviction at last: LRU with a TTL for each cache eviction of the uploads.",
    25: "A long note on the release: the build, the deploy, the docs, the flaky tests, the "
    "changelog, the version bump and, in passing, the cache eviction.",
    **{d: f"Rename the build step {d}." for d in range(12, 18)},
}


def _sid(day: int) -> str:
    return f"{day:08d}-1111-4222-8333-444455556666"


def _archive(root: Path, later_cwd: str) -> Archive:
    """One session a day in CWD, from day 20 on in `later_cwd`."""
    for day, text in STORY.items():
        cwd = CWD if day < 20 else later_cwd
        folder = root / ".claude" / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            _line(_sid(day), k, t, day, cwd) for k, t in (("user", text), ("assistant", "Done."))
        ]
        (folder / f"{_sid(day)}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = Archive(embedder=None)
    a.ingest(root / ".claude")
    return a


@pytest.fixture
def story(tmp_path: Path) -> Archive:
    """The first decision (day 1), six turns that rank above it (5-10), the final one (20), a
    passing mention (25) and turns on something else (12-17)."""
    return _archive(tmp_path, CWD)


async def _days(archive: Archive, order: str) -> list[int]:
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool(
            "search_context",
            {"query": "cache eviction", "mode": "lexical", "limit": 4, "order": order},
        )
    return [int(h["session_id"][:8]) for h in r.structured_content["hits"]]


async def test_order_time_reaches_the_first_and_the_final_turn_below_the_top_hits(
    story: Archive,
) -> None:
    assert await _days(story, "rank") == [5, 6, 7, 8]
    assert await _days(story, "time") == [1, 5, 6, 20]


@pytest.mark.parametrize(
    "limit, span, days",
    [
        (4, None, [5, 6, 7, 8]),
        (4, RULE, [5, 6, 1, 20]),  # best first: the ends come last
        (8, None, [5, 6, 7, 8, 9, 10, 1, 20]),
        (8, RULE, [5, 6, 7, 8, 9, 10, 1, 20]),  # both ends among the top 8: the same hits
    ],
)
def test_archive_search_with_a_span_swaps_in_the_ends_best_first(
    story: Archive, limit: int, span: Span | None, days: list[int]
) -> None:
    found = story.search("cache eviction", cwd=CWD, mode="lexical", limit=limit, span=span)
    assert [int(h.session_id[:8]) for h in found] == days


# alone in its workspace, day 20 scores best there; day 1 still replaces the weakest of all
@pytest.mark.parametrize("span, days", [(None, [20, 5, 6, 7]), (RULE, [20, 5, 6, 1])])
def test_the_ends_are_taken_over_every_workspace_searched(
    tmp_path: Path, span: Span | None, days: list[int]
) -> None:
    archive = _archive(tmp_path, "/home/alice/projects/cache-api")  # day 20 on: another project
    assert len(archive.workspaces()) == 2
    found = archive.search("cache eviction", "all", mode="lexical", limit=4, span=span)
    assert [int(h.session_id[:8]) for h in found] == days
