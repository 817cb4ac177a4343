"""An ingest stopped inside a large workspace resumes where its last checkpoint left off: what was
copied is not copied again, what was copied but not refined is refined, and the result is the
same as one clean ingest (`Checkpoint`, `stop_on_sigterm` in `ingest/pipeline.py`)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from archive_mcp import Archive
from archive_mcp.ingest import pipeline, raw
from archive_mcp.ingest.pipeline import Stopped, stop_on_sigterm

PROJECT = "/home/alice/projects/webapp"
N = 30


def _claude(root: Path, n: int = N) -> int:
    """`n` one-turn Claude Code sessions in one project; their total bytes."""
    folder = root / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    folder.mkdir(parents=True)
    total = 0
    for i in range(n):
        sid = f"{i:08d}-0000-4000-8000-000000000000"
        lines = [
            {
                "type": kind,
                "sessionId": sid,
                "cwd": PROJECT,
                "timestamp": f"2026-03-01T10:00:{i % 60:02d}Z",
                "message": {"role": kind, "content": f"{kind} says {i} about the parser"},
            }
            for kind in ("user", "assistant")
        ]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        (folder / f"{sid}.jsonl").write_bytes(data)
        total += len(data)
    return total


def _outcome(home: Path) -> dict[str, Any]:
    (root,) = [p.parent for p in (home / "workspaces").glob("*/state")]
    raws = sorted((root / "raw").rglob("*.jsonl"))
    refined = sorted((root / "refined").glob("*.parquet"))
    rows = pl.concat([pl.read_parquet(f) for f in refined]) if refined else pl.DataFrame()
    return {
        "raw": [(p.name, hashlib.sha1(p.read_bytes()).hexdigest()) for p in raws],
        "refined": [p.name for p in refined],
        "rows": sorted(zip(rows["session_id"], rows["turn"], rows["user_text"], strict=True)),
        "state": {
            k: {f: e["archived"] for f, e in v.items()}
            for k, v in json.loads((root / "state" / "ingest.json").read_text()).items()
            if k == "files"
        },
    }


def _recorded(home: Path) -> dict[str, int]:
    """What the saved state says is archived, per raw file."""
    paths = list((home / "workspaces").glob("*/state/ingest.json"))
    if not paths:
        return {}
    state = json.loads(paths[0].read_text())
    return {rel: e["archived"] for rel, e in state["files"].items() if e["archived"]}


@pytest.fixture
def every_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoint after every session (the default is every 15 s)."""
    monkeypatch.setattr(pipeline, "CHECKPOINT_S", 0.0)
    monkeypatch.setattr(pipeline, "CHECKPOINT_SHARE", 1e12)


@pytest.fixture
def appended(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The raw files bytes are appended to, in order."""
    seen: list[str] = []
    real = raw._append

    def spy(fh: Any, src: Path, dst: Path, *args: Any) -> None:
        seen.append(dst.name)
        real(fh, src, dst, *args)

    monkeypatch.setattr(raw, "_append", spy)
    return seen


def _clean(tmp_path: Path, claude: Path) -> dict[str, Any]:
    home = tmp_path / "clean"
    Archive(home, embedder=None).ingest(claude, embed=False)
    return _outcome(home)


@pytest.mark.parametrize("phase", ["copy", "refine"])
def test_an_ingest_killed_mid_workspace_resumes_without_copying_anything_twice(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    every_session: None,
    appended: list[str],
    phase: str,
) -> None:
    claude = tmp_path / "claude"
    total = _claude(claude)
    clean = _clean(tmp_path, claude)
    appended.clear()
    home = tmp_path / "home"
    # The process dies (as under SIGKILL: nothing after the kill runs) after 12 sessions
    # were copied, or after 12 were refined.
    target = raw if phase == "copy" else pipeline.Ingestor
    name = "archive_file" if phase == "copy" else "_apply"
    real = getattr(target, name)
    calls = {"n": 0}

    def dies(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 12:
            raise KeyboardInterrupt  # a BaseException: no handler saves anything
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, dies)
    if phase == "copy":
        monkeypatch.setattr(pipeline, "archive_file", dies)
    with pytest.raises(KeyboardInterrupt):
        Archive(home, embedder=None).ingest(claude, embed=False)
    monkeypatch.setattr(target, name, real)
    if phase == "copy":
        monkeypatch.setattr(pipeline, "archive_file", real)
    recorded = _recorded(home)
    assert len(recorded) == (12 if phase == "copy" else N)  # every checkpointed copy
    copied_before = list(appended)
    appended.clear()
    report = Archive(home, embedder=None).ingest(claude, embed=False)
    assert not {Path(r).name for r in recorded} & set(appended)  # none copied again
    assert report.bytes_archived == total - sum(recorded.values())
    assert len(copied_before) + len(appended) == N  # each file copied exactly once
    assert report.turns_added == N - (0 if phase == "copy" else 12)
    assert _outcome(home) == clean
    again = Archive(home, embedder=None).ingest(claude, embed=False)  # and then a no-op
    assert again.bytes_archived == 0 and again.turns_added == 0 and again.sessions == 0


def test_sigterm_stops_an_ingest_with_its_state_saved_and_the_rerun_copies_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, appended: list[str]
) -> None:
    claude = tmp_path / "claude"
    total = _claude(claude)
    clean = _clean(tmp_path, claude)
    appended.clear()
    home = tmp_path / "home"
    real = pipeline.Ingestor._apply
    calls = {"n": 0}

    def signalled(self: Any, *args: Any) -> None:
        real(self, *args)
        calls["n"] += 1
        if calls["n"] == 5:  # mid-refine, as `kill PID` would
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(pipeline.Ingestor, "_apply", signalled)
    with stop_on_sigterm(), pytest.raises(Stopped, match="run it again to resume"):
        Archive(home, embedder=None).ingest(claude, embed=False)
    assert signal.getsignal(signal.SIGTERM) is not None and not pipeline.STOP.is_set()
    monkeypatch.setattr(pipeline.Ingestor, "_apply", real)
    recorded = _recorded(home)
    assert sum(recorded.values()) == total  # every copy was recorded: nothing to copy again
    assert len(appended) == N
    report = Archive(home, embedder=None).ingest(claude, embed=False)
    assert report.bytes_archived == 0 and len(appended) == N
    assert report.turns_added == N - calls["n"]
    assert _outcome(home) == clean


def test_a_long_ingest_saves_its_state_now_and_then_at_a_flat_share_of_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = {"t": 0.0}
    monkeypatch.setattr(pipeline, "_tick", lambda: clock["t"])
    saves: list[float] = []
    real = pipeline.atomic_write_json

    def timed(path: Path, obj: Any) -> None:
        saves.append(clock["t"])
        clock["t"] += 3.0  # each save takes 3 s of the pinned clock
        real(path, obj)

    monkeypatch.setattr(pipeline, "atomic_write_json", timed)
    real_archive = pipeline.archive_file

    def slow(*args: Any) -> int:
        clock["t"] += 1.0  # each session's copy takes 1 s
        return real_archive(*args)

    monkeypatch.setattr(pipeline, "archive_file", slow)
    claude = tmp_path / "claude"
    _claude(claude, 100)
    Archive(tmp_path / "home", embedder=None).ingest(claude, embed=False)
    gaps = [b - a for a, b in zip(saves, saves[1:], strict=False)]
    assert len(saves) >= 3  # checkpoints while copying, and the final save
    assert all(g >= 30.0 for g in gaps[:-1])  # 3 s a save: at most 10% of the time
