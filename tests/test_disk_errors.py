"""A full, read-only or failing disk under a write is one line naming the cause and the fix, on
the CLI (exit 1) and over MCP, however the library that wrote wraps the error; after the fault
the same call answers as if it had never happened."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from mcp import Client

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.errors import as_os_error
from archive_mcp.mcp.server import build_server

FULL = "the disk is full; free some space and run the command again"
FAULTS = [
    (pl.exceptions.ComputeError("failed to write: No space left on device (os error 28)"), FULL),
    (OSError("153600 requested and 2048 written"), FULL),  # numpy's tofile on a full disk
    (
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        FULL.replace("disk is full", "disk quota is used up"),
    ),
    (
        OSError(errno.EROFS, "Read-only file system"),
        "the file system is read-only; point ARCHIVE_MCP_HOME at a writable folder or remount "
        "it read-write, then run the command again",
    ),
    (
        OSError(errno.EIO, "Input/output error"),
        "the disk failed to read or write (I/O error); check the disk and run again",
    ),
]


def _failing_write(monkeypatch: pytest.MonkeyPatch, fault: Exception) -> None:
    """Every Parquet write fails with `fault` (the index build writes its rows' table first)."""

    def fail(*args: Any, **kwargs: Any) -> None:
        raise fault

    monkeypatch.setattr(pl.DataFrame, "write_parquet", fail)


@pytest.fixture
def unindexed(kimi_root: Path) -> Archive:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)  # the index is left to the first search
    return archive


def _hits(archive: Archive) -> list[tuple[str, int]]:
    return [(h.session_id, h.turn) for h in Archive(embedder=None).search("date", "webapp")]


@pytest.mark.parametrize(("fault", "line"), FAULTS)
def test_a_disk_fault_while_the_index_is_built_is_one_cli_line_and_leaves_nothing_broken(
    unindexed: Archive, monkeypatch: pytest.MonkeyPatch, fault: Exception, line: str
) -> None:
    with monkeypatch.context() as patch:
        _failing_write(patch, fault)
        result = CliRunner().invoke(main, ["--embedder", "none", "search", "date", "-w", "webapp"])
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {line}\n")
    again = CliRunner().invoke(main, ["--embedder", "none", "search", "date", "-w", "webapp"])
    assert again.exit_code == 0 and again.stdout
    assert _hits(unindexed) == _hits(unindexed) != []


@pytest.mark.anyio
@pytest.mark.parametrize(("fault", "line"), FAULTS)
async def test_a_disk_fault_while_the_index_is_built_is_one_tool_error_line(
    unindexed: Archive, monkeypatch: pytest.MonkeyPatch, fault: Exception, line: str
) -> None:
    async with Client(build_server(unindexed, cwd="/")) as client:
        with monkeypatch.context() as patch:
            _failing_write(patch, fault)
            r = await client.call_tool("search_context", {"query": "date", "workspace": "webapp"})
        ok = await client.call_tool("search_context", {"query": "date", "workspace": "webapp"})
    assert r.is_error and r.content[0].text == f"search_context: {line}"
    assert not ok.is_error and ok.structured_content["hits"]


@pytest.mark.anyio
async def test_a_full_disk_under_remember_is_one_tool_error_line(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.workspaces.atomic as atomic

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/h/memory/x.md.tmp")

    async with Client(build_server(archive, cwd="/")) as client:
        with monkeypatch.context() as patch:
            patch.setattr(atomic.os, "replace", full)
            r = await client.call_tool(
                "remember", {"key": "k", "content": "c", "workspace": "webapp"}
            )
        listed = await client.call_tool("list_memories", {"workspace": "webapp"})
    assert r.is_error and r.content[0].text == (
        "remember: the disk is full: /h/memory/x.md.tmp; free some space and run the command again"
    )
    assert not listed.is_error and listed.structured_content["memories"] == []


def test_only_disk_errors_are_read_as_disk_errors() -> None:
    assert as_os_error(ValueError("embedded null byte")) is None
    assert as_os_error(pl.exceptions.ComputeError("unable to parse")) is None
    worded = as_os_error(pl.exceptions.ComputeError("No space left on device (os error 28)"))
    assert worded is not None and worded.errno == errno.ENOSPC
