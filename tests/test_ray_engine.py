"""The Ray engine (`--engine ray`) on a real local Ray instance (2 CPUs, one per module).

It must write the same refined frames and vectors as the local engine, survive a worker and an
embedding actor dying, and stop on Ctrl-C without leaving a half-written file.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import ray  # the `test` extra installs it: these tests always run in CI
from click.testing import CliRunner
from conftest import FakeEmbedder
from polars.testing import assert_frame_equal

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.errors import InvalidArgument
from archive_mcp.ingest.batch import RefineReport, refine_batch
from archive_mcp.ingest.pipeline import Ingestor
from archive_mcp.ingest.ray_engine import RayEngine

pytestmark = pytest.mark.slow

LIVE_SESSION = "b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A local Ray instance whose workers import this checkout and the tests' helpers."""
    here = Path(__file__).parent
    path = os.pathsep.join(
        [str(here.parent), str(here), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(
            "HOME", str(tmp_path_factory.mktemp("ray-user-home"))
        )  # Ray keeps a token in ~/.ray
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=100 << 20,
            runtime_env={"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}},
        )
        try:
            yield
        finally:
            ray.shutdown()


def _frames(home: Path) -> dict[str, pl.DataFrame]:
    """Every refined and embeddings Parquet under an archive home, by relative path."""
    return {str(p.relative_to(home)): pl.read_parquet(p) for p in sorted(home.rglob("*.parquet"))}


def _assert_same_frames(a: Path, b: Path) -> None:
    fa, fb = _frames(a), _frames(b)
    assert sorted(fa) == sorted(fb)
    assert any("/embeddings/" in k for k in fa) and any("/refined/" in k for k in fa)
    for key, frame in fa.items():
        assert_frame_equal(frame, fb[key], check_row_order=True)


def _ingest_state(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("ingest.json"))}


def test_ray_ingest_and_refine_write_the_same_frames_and_vectors_as_local(
    cluster: None, tmp_path: Path, kimi_root: Path, kimi_code_root: Path
) -> None:
    local = Archive(tmp_path / "local", embedder=FakeEmbedder())
    on_ray = Archive(tmp_path / "ray", embedder=FakeEmbedder())
    want = local.ingest(kimi_root, kimi_code_root)
    got = on_ray.ingest(kimi_root, kimi_code_root, engine="ray")
    assert (got.sessions, got.turns_added, got.embedded) == (
        want.sessions,
        want.turns_added,
        want.embedded,
    )
    assert got.embedded > 0 and got.embed_error is None
    _assert_same_frames(tmp_path / "local", tmp_path / "ray")
    assert _ingest_state(tmp_path / "local") == _ingest_state(tmp_path / "ray")

    # Batch refine after losing every derived file: the cluster rebuilds them all, identically.
    for d in ("refined", "embeddings"):
        for p in (tmp_path / "ray").rglob(f"{d}/*.parquet"):
            p.unlink()
    seen: list[tuple[str, int, int]] = []
    report = on_ray.refine("all", engine="ray", progress=lambda *a: seen.append(a))
    assert (report.sessions, report.turns, report.embedded) == (
        want.sessions,
        want.turns_added,
        want.embedded,
    )
    _assert_same_frames(tmp_path / "local", tmp_path / "ray")
    refine_ticks = [s for s in seen if s[0].startswith("refine · ") and s[0].endswith(" turns/s")]
    assert [(d, t) for _, d, t in refine_ticks] == [
        (i, want.sessions) for i in range(1, want.sessions + 1)
    ]


def test_cli_refine_on_ray_matches_the_local_engine(
    cluster: None, tmp_path: Path, kimi_root: Path
) -> None:
    runner = CliRunner()
    for home in ("local", "ray"):
        args = ["--home", str(tmp_path / home), "--embedder", "none"]
        assert runner.invoke(main, [*args, "ingest", str(kimi_root)]).exit_code == 0
        engine = (
            ["--engine", "ray", "--address", ray.get_runtime_context().gcs_address]
            if home == "ray"
            else []
        )
        res = runner.invoke(main, [*args, "refine", "--all", "--force", *engine])
        assert res.exit_code == 0, res.output
        assert res.stdout.startswith("4 sessions refined")
    assert _frames(tmp_path / "local").keys() == _frames(tmp_path / "ray").keys()
    for key, frame in _frames(tmp_path / "local").items():
        assert_frame_equal(frame, _frames(tmp_path / "ray")[key])


def die_once(markers: str, target: str, stage: str, session_id: str) -> None:
    """Fault injection: log every attempt; kill this worker process the first time a refine task
    of `target` runs and the first time an embedding call runs."""
    log = Path(markers) / f"{stage}.log"
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(session_id + "\n")
    first = not (Path(markers) / f"{stage}.died").exists()
    if first and (stage == "embed" or session_id == target):
        (Path(markers) / f"{stage}.died").touch()
        os._exit(1)


def test_a_killed_worker_and_a_killed_embedding_actor_are_retried(
    cluster: None, tmp_path: Path, kimi_root: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    local = Archive(tmp_path / "local", embedder=FakeEmbedder())
    want = local.ingest(kimi_root)
    on_ray = Archive(tmp_path / "ray", embedder=FakeEmbedder())
    engine = RayEngine(
        None,
        on_ray.embedder,
        lambda *a: None,
        hook=functools.partial(die_once, str(markers), LIVE_SESSION),
    )
    got = Ingestor(on_ray.registry, on_ray.embedder, engine=engine).ingest([kimi_root])
    assert (markers / "refine.died").exists() and (markers / "embed.died").exists()
    attempts = (markers / "refine.log").read_text().split()
    assert attempts.count(LIVE_SESSION) == 2 and len(attempts) == want.sessions + 1
    assert len((markers / "embed.log").read_text().split()) == 2 + 1  # two workspaces, one retry
    assert (got.turns_added, got.embedded) == (want.turns_added, want.embedded)
    _assert_same_frames(tmp_path / "local", tmp_path / "ray")


def slow(seconds: float, stage: str, session_id: str) -> None:
    time.sleep(seconds)


def test_ctrl_c_stops_the_cluster_job_and_leaves_nothing_half_written(
    cluster: None, tmp_path: Path, kimi_root: Path, kimi_code_root: Path
) -> None:
    on_ray = Archive(tmp_path / "ray", embedder=FakeEmbedder())
    on_ray.ingest(kimi_root, kimi_code_root, embed=False)
    for p in (tmp_path / "ray").rglob("refined/*.parquet"):
        p.unlink()

    def ctrl_c(label: str, done: int, total: int) -> None:
        if label.startswith("refine"):
            raise KeyboardInterrupt

    engine = RayEngine(None, on_ray.embedder, ctrl_c, hook=functools.partial(slow, 1.0))
    plan = [
        (ws, sid, files)
        for ws in on_ray.workspaces()
        for sid, files in on_ray.raw_files(ws).items()
    ]
    assert len(plan) == 5
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        refine_batch(plan, engine, RefineReport())
    assert time.monotonic() - started < 30
    written = {p: p.stat().st_mtime_ns for p in (tmp_path / "ray").rglob("refined/*.parquet")}
    time.sleep(2.5)  # a task that kept running would write its session within this time
    assert {
        p: p.stat().st_mtime_ns for p in (tmp_path / "ray").rglob("refined/*.parquet")
    } == written
    assert 1 <= len(written) < len(plan)
    assert not [p for p in (tmp_path / "ray").rglob("*") if p.name.endswith(".tmp")]
    for p in written:
        assert pl.read_parquet(p).height > 0

    # The next run finishes the job; the result is what the local engine writes.
    on_ray.refine("all", engine="ray")
    Archive(tmp_path / "local", embedder=FakeEmbedder()).ingest(kimi_root, kimi_code_root)
    _assert_same_frames(tmp_path / "local", tmp_path / "ray")


def test_without_ray_installed_the_error_names_the_extra(
    tmp_path: Path, kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    archive = Archive(tmp_path / "home", embedder=None)
    archive.ingest(kimi_root)
    with pytest.raises(InvalidArgument, match=r"archive-mcp\[ray\]"):
        archive.refine("all", engine="ray")
    res = CliRunner().invoke(
        main,
        [
            "--home",
            str(tmp_path / "home"),
            "--embedder",
            "none",
            "refine",
            "--all",
            "--engine",
            "ray",
        ],
    )
    assert res.exit_code == 1 and "archive-mcp[ray]" in res.stderr
    with pytest.raises(InvalidArgument, match="unknown engine"):
        archive.refine("all", engine="spark")
