"""A full disk under a batch re-refine (`archive-mcp refine`) stops it with one line naming the
file and the fix (exit 1), as it stops an ingest, instead of skipping every later session: what
was refined before is kept and a run after space is freed completes, in one process or in
worker processes. A job whose worker is lost with a full-disk error stops the run too. Faults
are injected at the write call: no disk is filled."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FakeEmbedder
from mcp import Client
from test_checkpoint import N, _claude, _outcome
from test_disk_full_ingest import AFTER, FAULTS, _embeddings, _ingest, fill_store

import archive_mcp.cli.main as cli_main
from archive_mcp import Archive
from archive_mcp.errors import DiskFull
from archive_mcp.ingest import batch, pipeline, store
from archive_mcp.ingest.jobs import SessionJob
from archive_mcp.ingest.runners import LocalEngine
from archive_mcp.mcp.server import build_server


def refine_line(path: Path) -> str:
    return (
        f"the disk is full writing {path}: free some space and refine again; nothing refined "
        "so far is lost"
    )


def _refine(home: Path) -> Any:
    return CliRunner().invoke(cli_main.main, ["--home", str(home), "refine", "--all"])


def _stale(home: Path) -> None:
    """Every session's refined rows and vectors gone: `refine` makes them all again."""
    for folder in ("refined", "embeddings"):
        for p in (home / "workspaces").glob(f"*/{folder}/*.parquet"):
            p.unlink()


@pytest.mark.parametrize("path", ["refined", "embeddings"])
@pytest.mark.parametrize("fault", ["enospc", "polars"])
def test_a_full_disk_under_a_refine_write_stops_it_with_one_line_and_a_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, fault: str
) -> None:
    monkeypatch.setattr(cli_main, "Archive", lambda home, embedder: Archive(home, FakeEmbedder()))
    claude = tmp_path / "claude"
    _claude(claude)
    clean = tmp_path / "clean"
    assert _ingest(clean, claude).exit_code == 0
    home = tmp_path / "home"
    assert _ingest(home, claude).exit_code == 0
    _stale(home)
    with monkeypatch.context() as patch:
        tried = fill_store(patch, FAULTS[fault], path)
        result = _refine(home)
    assert len(tried) == AFTER + 1  # it stopped at the first fault
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        f"Error: {refine_line(tried[-1])}\n",
    )
    kept = sorted(p.name for p in (home / "workspaces").glob(f"*/{path}/*.parquet"))
    assert kept == sorted(p.name for p in tried[:AFTER])  # what was written before stays
    assert list(home.rglob("*.tmp")) == []
    again = _refine(home)
    assert (again.exit_code, again.stderr) == (0, "")
    assert _outcome(home) == _outcome(clean)
    assert _embeddings(home) == _embeddings(clean) != []
    assert len(_embeddings(home)) == N


WORKERS = """
import errno, sys
from multiprocessing import parent_process
from archive_mcp.ingest import store, workers

# Top level: spawned workers run this too (they import the main script), so the fault is theirs.
workers.PARALLEL_BYTES = 0  # worker processes even for the small fixture
FULL = store.session_file_stem(sys.argv[2]) + ".parquet"
real = store.atomic_write_bytes

def write(path, data, durable=True):
    with open(sys.argv[3], "a", encoding="utf-8") as log:  # which process wrote
        print("worker" if parent_process() else "main", file=log)
    if path.parent.name == "refined" and path.name == FULL:
        raise OSError(errno.ENOSPC, "No space left on device")
    real(path, data, durable)

store.atomic_write_bytes = write

if __name__ == "__main__":
    from archive_mcp.cli.main import main
    main(["--home", sys.argv[1], "refine", "--all", "--no-embed"])
"""


def test_a_full_disk_in_a_refine_worker_process_stops_the_refine_with_one_line(
    tmp_path: Path,
) -> None:
    claude = tmp_path / "claude"
    _claude(claude)
    home = tmp_path / "home"
    Archive(home, embedder=None).ingest(claude, embed=False)
    clean = _outcome(home)
    _stale(home)
    script = tmp_path / "refine.py"
    script.write_text(WORKERS, encoding="utf-8")
    full = "00000007-0000-4000-8000-000000000000"
    writers = tmp_path / "writers"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, str(script), str(home), full, str(writers)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    (ws,) = (home / "workspaces").glob("*/refined")
    target = ws / f"{store.session_file_stem(full)}.parquet"
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"Error: {refine_line(target)}\n")
    assert not target.exists()
    assert set(writers.read_text(encoding="utf-8").split()) == {"worker"}
    kept = len(list(ws.glob("*.parquet")))  # those the workers wrote before the stop stay
    assert 0 < kept < N
    again = Archive(home, embedder=None).refine("all", embed=False)
    assert (again.sessions, again.skipped) == (N - kept, [])
    assert _outcome(home) == clean


class _LostWorkers(LocalEngine):
    """An engine whose every job's worker is lost with `fault` (the `failed` fallback)."""

    def __init__(self, fault: BaseException) -> None:
        super().__init__(1, None, lambda label, done, total: None)
        self.fault = fault

    def run(self, fn: Any, jobs: Any, parallel: bool, turns: Any, failed: Any = None) -> Any:
        assert failed is not None
        return iter([failed(job, self.fault) for job in jobs])


FULL_WRITE = OSError(errno.ENOSPC, "No space left on device", "/h/refined/x.parquet")


def test_a_job_lost_with_a_full_disk_stops_the_ingest_and_the_refine(
    tmp_path: Path,
) -> None:
    claude = tmp_path / "claude"
    _claude(claude, 3)
    archive = Archive(tmp_path / "home", embedder=None)
    with pytest.raises(DiskFull) as ingest:
        pipeline.Ingestor(archive.registry, None, engine=_LostWorkers(FULL_WRITE)).ingest([claude])
    assert str(ingest.value) == (
        "the disk is full writing /h/refined/x.parquet: free some space and ingest again; "
        "nothing archived so far is lost"
    )
    archive.ingest(claude, embed=False)
    (ws,) = archive.registry.all()
    plan = [(ws, sid, files) for sid, files in store.raw_files(ws).items()]
    with pytest.raises(DiskFull) as refine:
        batch.refine_batch(plan, _LostWorkers(FULL_WRITE), batch.RefineReport(), embed=False)
    assert str(refine.value) == refine_line(Path("/h/refined/x.parquet"))


def test_a_job_lost_for_another_reason_still_skips_only_its_session(tmp_path: Path) -> None:
    job = SessionJob("w", "w", str(tmp_path), "claude", "s1", None, [], frozenset(), False)
    lost = pipeline._failed(job, OSError(errno.EIO, "Input/output error"))
    assert (lost.error, lost.full) == ("could not read: [Errno 5] Input/output error", None)
    gone = batch._failed(
        batch.RefineJob("w", "w", str(tmp_path), "s1", [], None, False, False), RuntimeError("x")
    )
    assert ([s.reason for s in gone.skipped], gone.full) == (
        ["session skipped: RuntimeError: x"],
        None,
    )


@pytest.mark.anyio
async def test_refining_a_session_over_mcp_on_a_full_disk_is_one_tool_error_line(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = archive.workspace("webapp")
    sid = sorted(archive.raw_files(ws))[0]
    target = store.refined_path(ws, sid)

    def full(path: Path, data: bytes, durable: bool = True) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    before = target.read_bytes()
    async with Client(build_server(archive, cwd="/")) as client:
        monkeypatch.setattr(store, "atomic_write_bytes", full)
        r = await client.call_tool(
            "refine_session_turns", {"session_id": sid, "workspace": "webapp"}
        )
    assert r.is_error and r.content[0].text == refine_line(target)
    assert target.read_bytes() == before
