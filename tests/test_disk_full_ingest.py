"""A full disk under any of the ingest's writes (the raw copy, the refined Parquet, the
embeddings, the saved state) stops the ingest with one line naming the file and the fix (exit 1), not a skipped
session per write; a run after space is freed ends equal to a clean ingest. The follower (`watch`,
`serve --follow`) says so and waits longer before each next try, and a search over MCP carries
the same reason. Faults are injected at the write call: no disk is filled."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import archive_mcp.workspaces.atomic as atomic
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import FakeEmbedder
from mcp import Client
from test_checkpoint import N, _claude, _outcome

import archive_mcp.cli.main as cli_main
from archive_mcp import Archive
from archive_mcp.errors import DiskFull
from archive_mcp.ingest import raw, store
from archive_mcp.live import ERROR_BACKOFF, FULL_BACKOFF_MAX, Follower
from archive_mcp.mcp.server import build_server

FAULTS = {
    "enospc": OSError(errno.ENOSPC, "No space left on device"),  # a write() names no file
    "numpy-oserror": OSError("153600 requested and 2048 written"),  # numpy's tofile
    "numpy-valueerror": ValueError("153600 requested and 2048 written"),
    "polars": pl.exceptions.ComputeError("failed to write: No space left on device (os error 28)"),
}
AFTER = 12  # writes that succeed before the disk is full


def full_line(path: Path) -> str:
    return (
        f"the disk is full writing {path}: free some space and ingest again; nothing archived "
        "so far is lost"
    )


class _Failing:
    """A file whose `write()` fails with `fault` (the rest is the real file's)."""

    def __init__(self, real: Any, fault: BaseException) -> None:
        self.real, self.fault = real, fault

    def write(self, data: bytes) -> int:
        raise self.fault

    def __enter__(self) -> _Failing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def fill_raw_copy(monkeypatch: pytest.MonkeyPatch, fault: BaseException) -> list[Path]:
    """The raw copy's appends fail with `fault` after AFTER of them; the copies tried, in order."""
    tried: list[Path] = []
    real_append, real_fdopen = raw._append, raw.os.fdopen

    def append(fh: Any, src: Path, dst: Path, *args: Any) -> None:
        tried.append(dst)
        real_append(fh, src, dst, *args)

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        out = real_fdopen(fd, mode, *args, **kwargs)
        return _Failing(out, fault) if mode == "ab" and len(tried) > AFTER else out

    monkeypatch.setattr(raw, "_append", append)
    monkeypatch.setattr(raw.os, "fdopen", fdopen)
    return tried


def fill_store(monkeypatch: pytest.MonkeyPatch, fault: BaseException, folder: str) -> list[Path]:
    """Atomic writes into `folder` (refined/, embeddings/) fail with `fault` after AFTER of them."""
    tried: list[Path] = []
    real = store.atomic_write_bytes

    def write(path: Path, data: bytes, durable: bool = True) -> None:
        if path.parent.name == folder:
            tried.append(path)
            if len(tried) > AFTER:
                raise fault
        real(path, data, durable)

    monkeypatch.setattr(store, "atomic_write_bytes", write)
    return tried


def fill_state(monkeypatch: pytest.MonkeyPatch, fault: BaseException) -> list[Path]:
    """Every save of a workspace's ingest state (`state/ingest.json`) fails with `fault`, raised
    inside the atomic writer where its write() would fail."""
    tried: list[Path] = []
    real = atomic.atomic_file

    @contextmanager
    def failing(path: Path, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with real(path, *args, **kwargs) as fh:
            if path.name == "ingest.json":
                tried.append(path)
                raise fault
            yield fh

    monkeypatch.setattr(atomic, "atomic_file", failing)
    return tried


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's archive embeds with the fake embedder (no model)."""
    monkeypatch.setattr(cli_main, "Archive", lambda home, embedder: Archive(home, FakeEmbedder()))


def _embeddings(home: Path) -> list[tuple[str, list[tuple[str, int, str]]]]:
    files = sorted((home / "workspaces").glob("*/embeddings/*.parquet"))
    return [
        (p.name, sorted(pl.read_parquet(p).select("agent", "turn", "content_hash").rows()))
        for p in files
    ]


def _ingest(home: Path, claude: Path) -> Any:
    return CliRunner().invoke(
        cli_main.main, ["--home", str(home), "ingest", str(claude), "--no-index"]
    )


@pytest.mark.parametrize("path", ["raw", "refined", "embeddings", "state"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_full_disk_under_an_ingest_write_stops_it_with_one_line_and_a_rerun_equals_a_clean_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_cli: None, path: str, fault: str
) -> None:
    claude = tmp_path / "claude"
    _claude(claude)
    clean = tmp_path / "clean"
    assert _ingest(clean, claude).exit_code == 0
    home = tmp_path / "home"
    with monkeypatch.context() as patch:
        if path == "raw":
            tried = fill_raw_copy(patch, FAULTS[fault])
        elif path == "state":
            tried = fill_state(patch, FAULTS[fault])
        else:
            tried = fill_store(patch, FAULTS[fault], path)
        result = _ingest(home, claude)
    assert len(tried) == (1 if path == "state" else AFTER + 1)  # it stopped at the first fault
    assert (result.exit_code, result.stdout, result.stderr) == (
        1,
        "",
        f"Error: {full_line(tried[-1])}\n",
    )
    assert list(home.rglob("*.tmp")) == []  # no half-written file left behind
    again = _ingest(home, claude)
    assert again.exit_code == 0, again.stderr
    assert "skipped" not in again.stderr
    assert _outcome(home) == _outcome(clean)
    assert _embeddings(home) == _embeddings(clean) != []
    assert len(_embeddings(home)) == N


def test_a_read_only_or_over_quota_archive_stops_an_ingest_with_its_own_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    _claude(claude)
    lines = []
    for code, words in ((errno.EDQUOT, "Disk quota exceeded"), (errno.EROFS, "Read-only")):
        with monkeypatch.context() as patch:
            tried = fill_store(patch, OSError(code, words), "refined")
            with pytest.raises(DiskFull) as stopped:
                Archive(tmp_path / "home", embedder=None).ingest(claude, embed=False)
        lines.append(str(stopped.value).replace(str(tried[-1]), "X"))
    assert lines == [
        "the disk quota is used up writing X: free some space and ingest again; nothing "
        "archived so far is lost",
        "the file system is read-only writing X: remount it read-write or point "
        "ARCHIVE_MCP_HOME at a writable folder and ingest again; nothing archived so far is lost",
    ]


def test_a_failing_write_that_is_not_a_full_disk_still_skips_only_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    _claude(claude, 3)
    failed: list[Path] = []
    real = store.atomic_write_bytes

    def second_fails(path: Path, data: bytes, durable: bool = True) -> None:
        if path.parent.name == "refined" and not failed and path.name.startswith("00000001"):
            failed.append(path)
            raise OSError(errno.EIO, "Input/output error")
        real(path, data, durable)

    monkeypatch.setattr(store, "atomic_write_bytes", second_fails)
    report = Archive(tmp_path / "home", embedder=None).ingest(claude, embed=False)
    assert report.sessions == 2
    assert [s.reason for s in report.skipped] == [
        f"session skipped: could not read: [Errno {errno.EIO}] Input/output error: '{failed[0]}'"
    ]


class _FullArchive:
    """An archive whose ingest stops on a full disk (`rounds` times, then succeeds)."""

    home = "unused"

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def ingest(self, *paths: Any, **kwargs: Any) -> Any:
        if self.rounds:
            self.rounds -= 1
            raise DiskFull(full_line(Path("/h/raw/x.jsonl")))
        return _Report()


class _Report:
    skipped: list[Any] = []
    excluded = files_changed = turns_added = turns_updated = 0


def test_the_follower_says_the_disk_is_full_and_waits_longer_before_each_next_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("archive_mcp.live.follow_roots", lambda paths: [])
    lines: list[str] = []
    follower = Follower(_FullArchive(7), [], status=lines.append)
    waits = []
    for _ in range(8):
        ok = follower.step()
        waits.append(None if ok else follower.backoff)
        follower._base = None  # every poll sees a change
    assert waits == [10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, None]
    assert (ERROR_BACKOFF, FULL_BACKOFF_MAX) == (10.0, 300.0)
    why = full_line(Path("/h/raw/x.jsonl"))
    assert lines[:2] == [f"follow: {why} (next try in 10 s)", f"follow: {why} (next try in 20 s)"]
    assert follower.full is None and follower.backoff == ERROR_BACKOFF  # a round ran again
    assert follower.catching_up() is None


@pytest.mark.anyio
async def test_a_search_over_mcp_says_the_archive_is_not_current_while_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    _claude(claude, 3)
    tried: list[Path] = []

    def full(fh: Any, src: Path, dst: Path, *args: Any) -> None:
        tried.append(dst)
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setattr(raw, "_append", full)
    server = build_server(Archive(embedder=None), cwd="/", follow=True, paths=[str(claude)])
    async with Client(server) as client:
        for _ in range(200):
            r = await client.call_tool(
                "search_context", {"query": "parser", "all_workspaces": True, "mode": "lexical"}
            )
            if (r.structured_content["catching_up"] or "").startswith("archive not current"):
                break
            await anyio.sleep(0.05)
    why = f"archive not current: {full_line(tried[0])}"
    assert len(tried) == 1  # the round stopped at its first write
    assert r.structured_content["catching_up"] == why
    assert r.content[0].text.splitlines()[0] == (
        f"({why}; these hits are from what is archived so far)"
    )


def test_a_full_disk_stops_an_ingest_caused_by_the_failed_write_not_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    _claude(claude)
    fault = FAULTS["enospc"]
    tried = fill_raw_copy(monkeypatch, fault)
    with pytest.raises(DiskFull) as stopped:
        Archive(tmp_path / "home", embedder=None).ingest(claude, embed=False)
    chain: list[tuple[str, str]] = []
    exc: BaseException | None = stopped.value
    while exc is not None and len(chain) < 5:  # bounded: a DiskFull once was its own cause
        chain.append((type(exc).__name__, str(exc)))
        exc = exc.__cause__
    assert chain == [
        ("DiskFull", full_line(tried[-1])),
        ("OSError", f"[Errno {errno.ENOSPC}] No space left on device: '{tried[-1]}'"),
        ("OSError", f"[Errno {errno.ENOSPC}] No space left on device"),
    ]
    cause = stopped.value.__cause__
    assert cause is not None and cause.__cause__ is fault  # the injected write error itself
