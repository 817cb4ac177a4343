"""Hostile input and contention: locks held by another process, bounded memory input, exports
from anywhere, raw-copy permissions, purging a session, orphaned temp files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.errors import Busy, NotFound
from archive_mcp.memory.store import MemoryStoreError

WEBAPP = "131148b1f826743e761a0be6ad66cb94"
HOLD = """
import sys, time
from pathlib import Path
from archive_mcp.workspaces import locked
with locked(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def archive(kimi_root: Path) -> Archive:
    a = Archive(embedder=None)
    a.ingest(kimi_root)
    return a


@pytest.fixture
def holder(archive: Archive) -> subprocess.Popen[str]:
    """A real second process holding the webapp workspace's lock, as a long ingest does."""
    root = archive.workspace("webapp").root
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), "30"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    proc.kill()
    proc.wait()


def test_search_answers_within_a_second_while_another_process_holds_the_workspace(
    archive: Archive,
    kimi_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    holder: subprocess.Popen[str],
) -> None:
    monkeypatch.setenv("ARCHIVE_MCP_LOCK_TIMEOUT", "5")
    for fresh in (
        Archive(embedder=None),
        Archive(embedder=None),
    ):  # first builds the index, second loads it
        t = time.perf_counter()
        hits = fresh.search("date test", workspace="webapp", mode="lexical")
        assert time.perf_counter() - t < 1.0
        assert hits and hits[0].session_id


def test_a_write_past_the_lock_limit_is_busy_and_names_the_holder(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, holder: subprocess.Popen[str]
) -> None:
    monkeypatch.setenv("ARCHIVE_MCP_LOCK_TIMEOUT", "0.3")
    with pytest.raises(
        Busy,
        match=rf"{WEBAPP} is locked by process {holder.pid} \(`-c .*`, since 20\d\d-.*\); "
        r"wait for it to finish and try again, or raise \$ARCHIVE_MCP_LOCK_TIMEOUT \(now 0.3 s\)",
    ):
        archive.memory("webapp").remember("k", "v")
    result = CliRunner().invoke(
        main, ["--embedder", "none", "memory", "remember", "k", "v", "-w", "webapp"]
    )
    assert result.exit_code == 1
    assert (
        f"is locked by process {holder.pid}" in result.output and "Traceback" not in result.output
    )


def test_an_ingest_releases_each_workspace_once_its_state_is_saved(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive_mcp.ingest import pipeline

    archive = Archive(embedder=None)
    held: list[tuple[str, bool]] = []
    real = pipeline.Ingestor._ingest_workspace

    def spy(self: pipeline.Ingestor, ws, sessions, report) -> None:  # noqa: ANN001
        others = [w for w in archive.workspaces() if w.id != ws.id]
        held.extend((w.name, (w.root / ".lock.holder").exists()) for w in others)
        real(self, ws, sessions, report)

    monkeypatch.setattr(pipeline.Ingestor, "_ingest_workspace", spy)
    archive.ingest(kimi_root)
    assert held == [("webapp", False)]  # while ml-pipeline was ingested, webapp was free


def test_memory_input_is_bounded(archive: Archive) -> None:
    m = archive.memory("webapp")
    cases = [
        ({"title": "t" * 201}, "title is 201 characters; at most 200"),
        ({"tags": [f"t{i}" for i in range(200_000)]}, "200,000 tags; a memory takes at most 32"),
        ({"tags": ["x" * 65]}, "one of the tags is 65 characters; at most 64 each"),
        ({"sources": ["s"] * 33}, "33 sources; a memory takes at most 32"),
        ({"tags": "notalist"}, "tags must be a list of strings"),
    ]
    for kwargs, message in cases:
        with pytest.raises(MemoryStoreError, match=message.replace("(", r"\(")):
            m.remember("big", "content", **kwargs)
    assert m.list() == []


def test_memory_title_tags_and_sources_are_redacted(archive: Archive) -> None:
    token = "ghp_" + "a1B2c3D4" * 5
    entry = archive.memory("webapp").remember(
        "deploy",
        "Deploy with the bot token.",
        title=f"deploy token {token}",
        tags=["deploy", token],
        sources=["https://bot:Hunter2secret@ci.example.com/job"],
    )
    text = (archive.workspace("webapp").root / "memory" / "knowledge" / "deploy.md").read_text(
        encoding="utf-8"
    )
    assert token not in text and "Hunter2secret" not in text
    assert (entry.title, entry.tags, entry.sources, entry.warnings) == (
        "deploy token [REDACTED]",
        ["[REDACTED]", "deploy"],
        ["https://bot:[REDACTED]@ci.example.com/job"],
        ["3 secret(s) were redacted before storing"],
    )


def test_a_memory_file_with_windows_line_endings_keeps_its_title_and_tags(archive: Archive) -> None:
    folder = archive.workspace("webapp").root / "memory" / "rules"
    folder.mkdir(parents=True)
    (folder / "crlf.md").write_bytes(
        b"---\r\ntitle: Line endings\r\ntags: [windows, git]\r\n---\r\n\r\nUse LF.\r\n"
    )
    entry = archive.memory("webapp").recall("crlf")
    assert (entry.title, entry.tags, entry.content) == (
        "Line endings",
        ["windows", "git"],
        "Use LF.",
    )


def _export(archive: Archive, memories: list[object], name: str = "in.json") -> Path:
    path = archive.workspace("webapp").root / "exports" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"format": "archive-mcp-memory@1", "memories": memories}), encoding="utf-8"
    )
    return path


def test_import_reads_only_the_workspace_exports_unless_a_path_is_allowed(
    archive: Archive, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}", encoding="utf-8")
    refusal = "import_memory reads exports from this workspace's exports folder"
    for path in (
        outside,
        tmp_path / "missing.json",
        Path("../../../etc/passwd"),
        Path("/etc/passwd"),
    ):
        with pytest.raises(
            MemoryStoreError, match=refusal
        ):  # the same answer whether it exists or not
            archive.import_memory(path, "webapp")
    with pytest.raises(MemoryStoreError, match="is not an archive-mcp memory export"):
        archive.import_memory(outside, "webapp", allow_path=True)
    fifo = archive.workspace("webapp").root / "exports" / "pipe.json"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    t = time.perf_counter()
    with pytest.raises(MemoryStoreError, match="pipe.json is not a regular file"):
        archive.import_memory("pipe.json", "webapp")
    assert time.perf_counter() - t < 1
    result = CliRunner().invoke(
        main, ["--embedder", "none", "memory", "import", str(outside), "-w", "webapp"]
    )
    assert (result.exit_code, refusal in result.output) == (1, True)


def test_import_validates_every_entry_before_writing_and_caps_skipped(archive: Archive) -> None:
    ok = {"folder": "rules", "key": "a", "content": "alpha"}
    big = {"folder": "rules", "key": "b", "content": "x" * 300_000}
    junk = [{"folder": "nope", "key": f"k{i}", "content": "c"} for i in range(60)]
    _export(
        archive,
        [ok, big, *junk, {"folder": "rules", "key": "c", "content": "gamma", "tags": ["t"] * 40}],
    )
    report = archive.import_memory("in.json", "webapp")
    assert report.added == ["memory/rules/a"]
    assert report.skipped[:2] == [
        "rules/b: content is larger than 262,144 bytes",
        "nope/k0: unknown memory folder 'nope'; use one of decisions, rules, knowledge, lessons, reference",
    ]
    assert len(report.skipped) == 51 and report.skipped[-1] == "... and 12 more"
    assert [e.key for e in archive.memory("webapp").list()] == ["a"]


def test_raw_copies_are_private(archive: Archive) -> None:
    raw = archive.workspace("webapp").raw_dir
    modes = {stat.S_IMODE(p.stat().st_mode) for p in [raw, *raw.rglob("*")] if p.is_dir()}
    files = {stat.S_IMODE(p.stat().st_mode) for p in raw.rglob("*") if p.is_file()}
    assert (modes, files) == ({0o700}, {0o600})


def test_purge_removes_raw_refined_embeddings_and_state_and_only_a_readmitting_ingest_restores(
    kimi_root: Path, fake_embedder
) -> None:  # noqa: ANN001
    archive = Archive(embedder=fake_embedder)
    archive.ingest(kimi_root)
    sid = "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17"
    archive.tag_theme("dates", "webapp", references=[{"session_id": sid, "turn": 0}])
    ws = archive.workspace("webapp")
    report = archive.purge_session(sid, "webapp")
    assert (sorted(report.removed), report.themes) == (
        [f"embeddings/{sid}.parquet", f"raw/kimi/{sid}", f"refined/{sid}.parquet"],
        ["dates"],
    )
    state = json.loads((ws.state_dir / "ingest.json").read_text(encoding="utf-8"))
    assert sid not in state["sessions"] and not [f for f in state["files"] if sid in f]
    assert sid not in archive.turns("webapp").collect()["session_id"].to_list()
    assert all(
        h.session_id != sid for h in archive.search("date", workspace="webapp", mode="lexical")
    )
    with pytest.raises(NotFound, match=f"no session '{sid}' in workspace webapp"):
        archive.purge_session(sid, "webapp")
    assert archive.ingest(kimi_root).turns_added == 0
    assert archive.ingest(kimi_root, include_purged=True).turns_added == 3
    result = CliRunner().invoke(
        main, ["--embedder", "none", "sessions", "purge", sid, "-w", "webapp", "--yes"]
    )
    assert (result.exit_code, result.output) == (
        0,
        f"purged {sid} from webapp: 3 paths removed; it stays out of every later ingest "
        "(`sessions unpurge` re-admits it)\n",
    )


def test_orphaned_temp_files_are_cleaned_at_the_next_ingest(
    archive: Archive, kimi_root: Path
) -> None:
    ws = archive.workspace("webapp")
    old = ws.refined_dir / ".x.parquet.abc123.tmp"
    new = ws.refined_dir / ".y.parquet.def456.tmp"
    for p in (old, new):
        p.write_bytes(b"half a parquet")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    archive.ingest(kimi_root)
    assert (old.exists(), new.exists()) == (False, True)  # a fresh one may belong to a live writer


SCRIPT = """
import sys
import archive_mcp.ingest.workers as workers
workers.PARALLEL_BYTES = 0  # use workers even for the small fixture
from archive_mcp import Archive
report = Archive(sys.argv[1], embedder=None).ingest(sys.argv[2], workers=2)
print(report.turns_added, len(report.skipped))
"""


@pytest.mark.parametrize("guarded", [False, True], ids=["unguarded-script", "guarded-script"])
def test_ingest_from_a_plain_script_works_with_or_without_a_main_guard(
    kimi_root: Path, tmp_path: Path, guarded: bool
) -> None:
    body = (
        SCRIPT
        if not guarded
        else "if __name__ == '__main__':\n"
        + "\n".join("    " + line for line in SCRIPT.strip().splitlines())
    )
    script = tmp_path / "plain.py"
    script.write_text(body, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "h"), str(kimi_root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (run.returncode, run.stdout) == (0, "11 1\n")
    warned = [line for line in run.stderr.splitlines() if "archive-mcp:" in line]
    assert len(warned) == (0 if guarded else 1)
    if not guarded:
        assert warned[0].endswith(
            "RuntimeWarning: archive-mcp: refining in one process: the calling script has no "
            '`if __name__ == "__main__":` guard, which worker processes need (add one to use 2)'
        )


KILLED = """
import os, sys, time
from archive_mcp.ingest import workers

def job(n, extra=None):
    return os.getpid()

if __name__ == "__main__":
    workers.PARALLEL_BYTES = 0
    pool = workers.JobPool(job, 2)
    pids = set(pool.run(list(range(40)), None, 1, lambda *a: None))
    print(" ".join(map(str, sorted(pids))), flush=True)
    time.sleep(600)  # killed here, its pool still open
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_worker_processes_exit_when_their_ingest_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(KILLED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) >= 1 and proc.pid not in pids and all(_alive(p) for p in pids)
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.time() + 15
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    assert [p for p in pids if _alive(p)] == []
