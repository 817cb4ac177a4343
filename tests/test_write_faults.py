"""Writes outside the ingest (a memory export, the config file, an agent's config at install)
under a full disk, a folder that may not be written, or a FIFO or folder where the file goes:
one line naming the file and what to do (CLI exit 1, the same over MCP), no traceback, and
nothing half-written left behind (the file as it was, no temporary file beside it)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import archive_mcp.workspaces.atomic as atomic
import pytest
from click.testing import CliRunner
from mcp import Client

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli
from archive_mcp.install import config_file
from archive_mcp.mcp.server import build_server

FAULTS = ["full", "read-only", "fifo", "folder"]


def _full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every atomic write's `write()` fails as on a full disk (the error names no file)."""
    real = os.fdopen

    class Full:
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = real(fd, mode, *args, **kwargs)
        return Full(fh) if mode == "wb" else fh

    monkeypatch.setattr(atomic.os, "fdopen", fdopen)


def _read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder refuses new files, as a 0555 folder does (the tests may run as root, whom a
    mode does not stop): the error names the temporary file the write tried to create."""

    def refuse(dir: str, prefix: str, suffix: str) -> tuple[int, str]:
        raise PermissionError(errno.EACCES, "Permission denied", f"{dir}/{prefix}k3j2h1{suffix}")

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refuse)


def arrange(fault: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Set up `fault` for a write of `path`; the one line it must give."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fault == "full":
        _full(monkeypatch)
        return f"the disk is full: {path}; free some space and run the command again"
    if fault == "read-only":
        _read_only(monkeypatch)
        return f"permission denied: {path}; fix the permissions and run the command again"
    if fault == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    what = "a FIFO" if fault == "fifo" else "a folder"
    return (
        f"{path} is {what}, not a regular file; move it away or choose another name, then run "
        "the command again"
    )


def left_as_it_was(path: Path, fault: str, before: bytes | None) -> None:
    """The file is as before the write (a FIFO or folder untouched) and no temp file is left."""
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    if fault == "fifo":
        assert path.is_fifo()
    elif fault == "folder":
        assert path.is_dir() and list(path.iterdir()) == []
    else:
        assert (path.read_bytes() if path.exists() else None) == before


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["--embedder", "none", *args])
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("fault", FAULTS)
def test_memory_export_under_a_write_fault_is_one_line_and_leaves_nothing(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    path = archive.workspace("webapp").root / "exports" / "backup.json"
    with monkeypatch.context() as patch:
        line = arrange(fault, path, patch)
        got = run("memory", "export", "--filename", "backup.json", "-w", "webapp")
    assert got == (1, "", f"Error: {line}\n")
    left_as_it_was(path, fault, None)


@pytest.mark.anyio
@pytest.mark.parametrize("fault", FAULTS)
async def test_export_memory_over_mcp_under_a_write_fault_is_one_tool_error_line(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    path = archive.workspace("webapp").root / "exports" / "backup.json"
    async with Client(build_server(archive, cwd="/")) as client:
        with monkeypatch.context() as patch:
            line = arrange(fault, path, patch)
            r = await client.call_tool(
                "export_memory", {"filename": "backup.json", "workspace": "webapp"}
            )
    disk = fault in ("full", "read-only")  # a disk error names its tool; a mistake is its own
    assert r.is_error and r.content[0].text == (f"export_memory: {line}" if disk else line)
    left_as_it_was(path, fault, None)


def _config_path() -> Path:
    return Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml"


@pytest.mark.parametrize("fault", FAULTS)
def test_config_set_under_a_write_fault_is_one_line_and_leaves_the_file_as_it_was(
    monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    path = _config_path()
    before = None
    if fault in ("full", "read-only"):
        assert run("config", "set", "port", "9000")[0] == 0
        before = path.read_bytes()
    with monkeypatch.context() as patch:
        line = arrange(fault, path, patch)
        got = run("config", "set", "embedder", "minilm")
    assert got == (1, "", f"Error: {line}\n")
    left_as_it_was(path, fault, before)


INSTALL_CASES = [
    (fault, state)
    for fault in FAULTS
    for state in ("absent", "present")
    if state == "absent" or fault in ("full", "read-only")  # a FIFO or folder is the state
]


@pytest.mark.parametrize(("fault", "state"), INSTALL_CASES)
def test_install_under_a_write_fault_is_one_line_and_leaves_the_agent_s_file_as_it_was(
    monkeypatch: pytest.MonkeyPatch, fault: str, state: str
) -> None:
    path = config_file("gemini")
    path.parent.mkdir(parents=True, exist_ok=True)
    if state == "present":
        path.write_text('{"theme": "x"}', encoding="utf-8")
    before = path.read_bytes() if path.exists() else None
    with monkeypatch.context() as patch:
        line = arrange(fault, path, patch)
        got = run("install", "gemini", "--yes")
    code, out, err = got
    if fault in ("fifo", "folder"):  # refused before the change is shown
        assert got == (1, "", f"Error: {line}\n")
    else:  # the change is shown (stderr), then its write fails
        old = path if state == "present" else "/dev/null"
        assert (code, out, err.splitlines()[-1]) == (1, "", f"Error: {line}")
        assert "Traceback" not in err and err.startswith(f"--- {old}\n+++ {path}\n")
    left_as_it_was(path, fault, before)
    backups = Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "backups"
    if backups.exists():  # a backup is whole or absent
        assert all(b.read_bytes() == before for b in backups.iterdir())
