"""The analyst frames: names and dtypes are part of the API; this test pins them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from archive_mcp import Archive, frames
from archive_mcp.schema import (
    COLUMNAR_MIN,
    REFINED,
    SESSIONS,
    THEME_SCHEMA,
    TOOL_CALLS,
    refined_frame,
)

PINNED_TURNS = [
    ("workspace_id", "String"),
    ("source", "String"),
    ("session_id", "String"),
    ("title", "String"),
    ("agent", "String"),
    ("turn", "Int64"),
    ("started_at", "Datetime(time_unit='us', time_zone='UTC')"),
    ("ended_at", "Datetime(time_unit='us', time_zone='UTC')"),
    ("status", "String"),
    ("origin", "String"),
    ("user_text", "String"),
    ("assistant_text", "String"),
    ("thinking_text", "String"),
    (
        "tool_calls",
        "List(Struct({'name': String, 'args_summary': String, 'status': String, 'result_summary': String, "
        "'duration_ms': Int64, 'files': List(String)}))",
    ),
    ("files", "List(String)"),
    (
        "usage",
        "Struct({'input': Int64, 'output': Int64, 'cache_read': Int64, 'cache_creation': Int64})",
    ),
    ("steps", "Int64"),
    ("summary", "String"),
    ("keywords", "List(String)"),
    ("kinds", "List(String)"),
    ("redactions", "Int64"),
    ("refiner", "String"),
    ("content_hash", "String"),
    ("raw_ref", "Struct({'file': String, 'byte_start': Int64, 'byte_end': Int64})"),
]


def _names_types(schema: pl.Schema | dict) -> list[tuple[str, str]]:
    return [(k, repr(v)) for k, v in dict(schema).items()]


def test_frames_have_the_pinned_columns_and_dtypes(kimi_root: Path, kimi_code_root: Path) -> None:
    a = Archive(embedder=None)
    a.ingest(kimi_root, kimi_code_root)
    assert _names_types(a.turns("all").collect_schema()) == PINNED_TURNS == _names_types(REFINED)
    assert a.tool_calls("all").collect_schema() == pl.Schema(TOOL_CALLS)
    assert a.sessions("all").collect_schema() == pl.Schema(SESSIONS)
    assert a.themes("all").collect_schema() == pl.Schema(THEME_SCHEMA)
    calls = a.tool_calls("all").collect()
    assert calls.height == 15
    shell = calls.filter(
        pl.col("name") == "Shell", pl.col("session_id").str.starts_with("3f2c")
    ).row(0, named=True)
    assert (shell["status"], shell["duration_ms"], shell["call"]) == ("error", 6534, 0)
    read = calls.filter(
        pl.col("name") == "ReadFile", pl.col("session_id").str.starts_with("3f2c")
    ).row(0, named=True)
    assert read["files"] == ["src/utils/date.ts"]


def _refined_row(i: int) -> dict:
    """A refined row whose list cells are empty, null, one item or several, by `i`."""
    call = {
        "name": f"Shell{i}",
        "args_summary": "command=ls",
        "status": "ok" if i % 2 else "error",
        "result_summary": "",
        "duration_ms": None if i % 3 else i,
        "files": [f"a{i}.py", "b.py"][: i % 3],
    }
    row = {
        "workspace_id": "ws",
        "source": "kimi",
        "session_id": "s",
        "agent": "main",
        "turn": i,
        "started_at": None if i % 4 == 0 else 1_700_000_000_000_000 + i,
        "ended_at": 1_700_000_000_000_000 + 2 * i,
        "status": "completed",
        "origin": "user",
        "user_text": f"ask {i}",
        "assistant_text": "",
        "thinking_text": "",
        "tool_calls": [call] * (i % 3),
        "files": [f"f{j}" for j in range(i % 4)],
        "usage": {"input": i, "output": 0, "cache_read": 0, "cache_creation": 0},
        "steps": 1,
        "summary": "Asked: ask",
        "keywords": None if i == 5 else ["", "ask"][: i % 3],
        "kinds": ["question"] if i % 2 else [],
        "redactions": 0,
        "refiner": "extractive@9",
        "content_hash": f"h{i}",
        "raw_ref": None if i == 7 else {"file": "raw", "byte_start": i, "byte_end": i + 1},
    }
    if i % 5:
        row["title"] = "a title"
    return row


def test_a_refined_frame_of_many_rows_equals_its_rows_built_one_by_one() -> None:
    rows = [_refined_row(i) for i in range(COLUMNAR_MIN + 8)]
    many = refined_frame(rows)  # built a column at a time
    one_by_one = pl.concat([refined_frame([r]) for r in rows])  # each built row-wise
    assert many.schema == one_by_one.schema == pl.Schema(REFINED)
    assert many.to_dicts() == one_by_one.to_dicts()
    assert many.get_column("tool_calls").list.len().to_list()[:4] == [0, 1, 2, 0]
    assert many.get_column("keywords").to_list()[4:9] == [[""], None, [], [""], ["", "ask"]]


def test_empty_archive_frames_keep_their_schema() -> None:
    a = Archive(embedder=None)
    assert a.turns("all").collect().schema == pl.Schema(REFINED)
    assert a.tool_calls("all").collect().height == 0
    assert a.sessions("all").collect_schema() == pl.Schema(SESSIONS)


def _two_session_archive(kimi_root: Path) -> tuple[Archive, Path, list[str]]:
    a = Archive(embedder=None)
    a.ingest(kimi_root)
    ws = a.workspaces()[0]
    files = sorted(str(p) for p in ws.refined_dir.glob("*.parquet"))
    assert len(files) >= 2
    return a, ws.refined_dir, files


def test_turns_lists_the_files_when_collected_so_a_purge_in_between_is_no_error(
    kimi_root: Path,
) -> None:
    a, refined, files = _two_session_archive(kimi_root)
    ws_id = a.workspaces()[0].id
    before = a.turns(ws_id).collect()
    lazy = a.turns(ws_id)  # planned before the "purge" below
    gone = Path(files[0])
    gone_session = pl.read_parquet(gone)["session_id"][0]
    gone.unlink()
    after = lazy.collect()
    assert gone_session not in set(after["session_id"])
    assert after.height == before.filter(pl.col("session_id") != gone_session).height
    # projection and predicate reach the reader and give what a plain frame gives
    kept = before.filter(pl.col("session_id") != gone_session)
    asked = kept["session_id"][0]
    got = a.turns(ws_id).filter(pl.col("session_id") == asked).select("turn").collect()
    assert got["turn"].to_list() == kept.filter(pl.col("session_id") == asked)["turn"].to_list()
    assert a.stats(ws_id).turns == after.height


def test_a_file_gone_between_listing_and_reading_is_read_again_from_a_fresh_listing(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, refined, files = _two_session_archive(kimi_root)
    ws_id = a.workspaces()[0].id
    whole = a.turns(ws_id).collect()
    stale = [*files, str(refined / "purged-meanwhile.parquet")]
    listings = iter([stale, stale])
    real = frames._refined_files
    monkeypatch.setattr(frames, "_refined_files", lambda dirs: next(listings, None) or real(dirs))
    assert a.turns(ws_id).collect().equals(whole)  # two failed reads, the third listing is right


def test_after_repeated_races_each_file_is_read_alone_and_a_gone_one_left_out(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, refined, files = _two_session_archive(kimi_root)
    ws_id = a.workspaces()[0].id
    whole = a.turns(ws_id).collect()
    stale = [*files, str(refined / "purged-meanwhile.parquet")]
    monkeypatch.setattr(frames, "_refined_files", lambda dirs: stale)
    got = a.turns(ws_id).sort("session_id", "agent", "turn").collect()
    assert got.equals(whole.sort("session_id", "agent", "turn"))
