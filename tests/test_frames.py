"""The analyst frames: names and dtypes are part of the API; this test pins them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from archive_mcp import Archive, frames
from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS

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
