"""What a trace keeps for the next one (parsed session files, per-turn flags, gists and terms)
never changes what a trace says: after a summary rewrite, a file rewritten under the trace, a
purge or a retag, the next trace equals a trace made with nothing kept."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from archive_mcp import Archive
from archive_mcp.ingest import store
from archive_mcp.themes.trace import sessions as trace
from archive_mcp.themes.trace import terms, timeline, turn_memo
from archive_mcp.themes.trace.decisions import flag_turns
from archive_mcp.themes.trace.recent import Recent
from archive_mcp.themes.trace.timeline import Timeline


def _said(tl: Timeline) -> str:
    """Everything a trace says: its structure, its frame and its markdown."""
    body = json.dumps(tl.to_json(), sort_keys=True, default=str)
    return body + repr(tl.frame.rows()) + tl.markdown()


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing kept from earlier traces."""
    monkeypatch.setattr(trace, "PARSED", trace.ParsedFiles())
    monkeypatch.setattr(timeline, "TURNS", turn_memo.TurnMemo())
    monkeypatch.setattr(terms, "TERMS", terms.TextTerms())


def _fresh(archive: Archive, theme: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        _forget(m)
        return _said(archive.trace_theme(theme, "webapp"))


def _tag(archive: Archive, name: str, n: int) -> list[dict]:
    refs = archive.turns("webapp").select("session_id", "turn").head(n).collect().to_dicts()
    archive.tag_theme(name, "webapp", references=refs)
    return refs


def test_a_trace_after_a_rewrite_a_purge_or_a_retag_says_what_a_fresh_trace_says(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = _tag(archive, "kept", 12)
    first = _said(archive.trace_theme("kept", "webapp"))
    assert (
        _said(archive.trace_theme("kept", "webapp"))
        == first
        == _fresh(archive, "kept", monkeypatch)
    )
    ws = archive.workspace("webapp")
    sid = refs[0]["session_id"]
    agent = store.read_refined(ws, sid)["agent"][0]
    # the summary a trace quotes is rewritten: the next trace quotes the new one
    archive.set_summaries(
        ws, sid, {(agent, refs[0]["turn"]): "Outcome: went with SQLite."}, refiner="t"
    )
    after = _said(archive.trace_theme("kept", "webapp"))
    assert after != first and "went with SQLite" in after
    assert after == _fresh(archive, "kept", monkeypatch)
    # the file is rewritten with another user text (a refine): the flags follow the new text
    df = store.read_refined(ws, sid).with_columns(
        pl.lit("wait, go back to the old importer instead").alias("user_text")
    )
    store._write_parquet(store.refined_path(ws, sid), df)
    rewritten = archive.trace_theme("kept", "webapp")
    assert any(d.cue == "go back" for d in rewritten.decisions if d.session_id == sid)
    assert _said(rewritten) == _fresh(archive, "kept", monkeypatch)
    # a retag with more members, then a purge of a member session
    _tag(archive, "kept", 30)
    assert _said(archive.trace_theme("kept", "webapp")) == _fresh(archive, "kept", monkeypatch)
    archive.purge_session(sid, "webapp")
    purged = archive.trace_theme("kept", "webapp")
    assert sid not in {e.session_id for e in purged.events}
    assert _said(purged) == _fresh(archive, "kept", monkeypatch)


def test_parsed_files_are_kept_by_their_bytes_within_their_bound(archive: Archive) -> None:
    ws = archive.workspace("webapp")
    sid = archive.turns("webapp").select("session_id").head(1).collect().item()
    parsed = trace.ParsedFiles()
    frame = parsed.read(ws, sid)
    assert frame.columns == timeline.COLUMNS and parsed.read(ws, sid) is frame
    assert parsed.read(ws, "no-such-session").height == 0
    tiny = trace.ParsedFiles(most_mb=0)  # nothing fits: read every time, still right
    assert tiny.read(ws, sid).equals(frame) and not tiny.frames


def test_kept_flags_and_terms_are_those_of_a_run_over_every_turn() -> None:
    users = [
        "wait, go back to redis",
        "let's use sqlite",
        "what is this?",
        "",
        "不要用这个库",
        "ok",
    ]
    frame = pl.DataFrame(
        {
            "user_text": users,
            "assistant_text": ["Switching to polling instead.", "", "It is X.", "", "好", ""],
            "summary": [f"Asked: {u}" for u in users],
            "kinds": [[], ["decision"], [], ["reversal"], [], []],
        }
    )
    memo = turn_memo.TurnMemo()
    keys = memo.keys(frame)
    assert len(set(keys)) == len(users)
    part = memo.flags(frame[[1, 4]], keys[1:2] + keys[4:5])  # some turns kept first
    every = flag_turns(users, frame["assistant_text"].to_list(), frame["kinds"].to_list())
    assert part == [every[1], every[4]] and memo.flags(frame, keys) == every
    texts = [
        "Use SQLite cache.py",
        "",
        "切换到新的数据库",
        "use sqlite CACHE.py",
        "Use SQLite cache.py",
    ]
    whole = terms.term_matrix(texts)  # nothing kept yet
    terms.TERMS.terms(texts[1:3])  # some kept, in another order
    again = terms.term_matrix(texts)
    assert (whole[0] != again[0]).nnz == 0 and np.array_equal(whole[1], again[1])
    assert np.array_equal(whole[2], again[2]) and "cache.py" in whole[1].tolist()


def test_recent_keeps_the_most_recently_used_within_its_size() -> None:
    kept: Recent[str, str] = Recent(5, len)
    assert kept.keep("a", "xx") == "xx" and kept.keep("b", "yy") == "yy"
    assert kept.get("a") == "xx"  # "a" is now the most recently used
    assert kept.keep("a", "other") == "xx"  # the kept value stays
    assert kept.keep("c", "zz") == "zz"  # 6 > 5: "b", the least recently used, goes
    assert (kept.get("b"), kept.get("a"), kept.get("c"), len(kept), kept.used) == (
        None,
        "xx",
        "zz",
        2,
        4,
    )
    assert kept.keep("d", "too long") == "too long" and kept.get("d") is None and len(kept) == 2
