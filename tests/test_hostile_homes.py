"""Hostile agent homes: FIFOs and devices named like logs, links out of the home, huge files,
sparse files, lines with no end, file names that are not UTF-8, folders nobody may read."""

from __future__ import annotations

import errno
import json
import os
import resource
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners import claude_code, gemini
from archive_mcp.refiners.disk import LINE_MAX, SNAPSHOT_MAX
from archive_mcp.refiners.lines import ITEMS_MAX, LineReader
from click.testing import CliRunner
from test_agent_ingest import claude_home, codex_home, gemini_home

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli
from archive_mcp.ingest.pipeline import IngestReport
from archive_mcp.ingest.raw import INCOMPLETE
from archive_mcp.memory.store import MemoryStoreError

WEBAPP = "131148b1f826743e761a0be6ad66cb94"
CLAUDE = ".claude/projects/-home-alice-projects-webapp"
FIFO = "a FIFO, not a regular file; not opened"


def ingest_within(archive: Archive, *paths: Path, seconds: float = 30.0) -> IngestReport:
    """The ingest's report; fails (instead of hanging the suite) when it takes too long."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["report"] = archive.ingest(*paths)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"ingest still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["report"]


def skips(report: IngestReport, root: Path) -> list[tuple[str, str]]:
    return sorted((os.path.relpath(s.path, root), s.reason) for s in report.skipped)


def test_fifos_named_like_logs_are_skipped_reported_and_never_opened(
    tmp_path: Path, kimi_root: Path
) -> None:
    home = tmp_path / "user"
    log = claude_home(home)
    folder = log.parent / "c1"
    (folder / "subagents").mkdir(parents=True)
    os.mkfifo(folder / "subagents" / "agent-a1.jsonl")
    os.mkfifo(folder / "subagents" / "agent-a1.meta.json")
    os.mkfifo(log.parent / "c2.jsonl")  # a main log
    rollout = codex_home(home)
    os.mkfifo(rollout.parent / "rollout-2026-03-21T12-00-00-x2.jsonl")
    chat = gemini_home(home)
    (chat.parent / "g1").mkdir()
    os.mkfifo(chat.parent / "g1" / "sub1.jsonl")  # a Gemini subagent
    project_root = chat.parent.parent / ".project_root"
    project_root.unlink()
    os.mkfifo(project_root)
    state = kimi_root / "sessions" / WEBAPP / "b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b" / "state.json"
    state.unlink()
    os.mkfifo(state)
    archive = Archive(embedder=None)
    report = ingest_within(archive, home / ".claude", home / ".codex", home / ".gemini", kimi_root)
    assert skips(report, tmp_path) == [
        ("kimi/sessions/" + WEBAPP + "/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/state.json", FIFO),
        (
            "kimi/sessions/" + WEBAPP + "/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/wire.jsonl",
            INCOMPLETE,
        ),
        (f"user/{CLAUDE}/c1/subagents/agent-a1.jsonl", FIFO),
        (f"user/{CLAUDE}/c1/subagents/agent-a1.meta.json", FIFO),
        (f"user/{CLAUDE}/c2.jsonl", FIFO),
        ("user/.codex/sessions/2026/03/21/rollout-2026-03-21T12-00-00-x2.jsonl", FIFO),
        ("user/.gemini/tmp/webapp/.project_root", FIFO),
        ("user/.gemini/tmp/webapp/chats/g1/sub1.jsonl", FIFO),
    ]
    assert report.sessions == 3 + 4  # every healthy session: Claude, Codex, Gemini and Kimi's
    assert sources(archive) == ["claude-code", "codex", "gemini"] + ["kimi"] * 4


def test_device_links_and_links_out_of_the_home_are_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "user"
    log = claude_home(home)
    (log.parent / "c1" / "subagents").mkdir(parents=True)
    (log.parent / "c1" / "subagents" / "agent-a1.meta.json").symlink_to("/dev/zero")
    private = tmp_path / "private.txt"
    private.write_text("my diary, not a log\n")
    (log.parent / "c3.jsonl").symlink_to(private)
    stashed = claude_home(home / ".claude" / "stash", sid="c5")
    (log.parent / "c5.jsonl").symlink_to(stashed)  # a link that stays inside the home is followed
    chat = gemini_home(home)
    (chat.parent.parent.parent.parent / "projects.json").symlink_to("/dev/zero")
    archive = Archive(embedder=None)
    report = ingest_within(archive, home / ".claude", home / ".gemini")
    out = "a symbolic link that leads out of the folder ingested; not followed"
    assert skips(report, home) == [
        (f"{CLAUDE}/c1/subagents/agent-a1.meta.json", out),
        (f"{CLAUDE}/c3.jsonl", out),
        (".gemini/projects.json", "a character device, not a regular file; not opened"),
    ]
    assert report.sessions == 3  # Claude's c1 and (linked) c5, and Gemini's g1
    raw = [p.name for p in (archive.workspaces()[0].root / "raw").rglob("*") if p.is_file()]
    assert "c3.jsonl" not in raw and "agent-a1.meta.json" not in raw


def test_a_sparse_tool_output_is_copied_sparse_and_a_huge_one_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "user"
    log = claude_home(home)
    outputs = log.parent / "c1" / "tool-results"
    outputs.mkdir(parents=True)
    sparse = outputs / "big.txt"
    with open(sparse, "wb") as fh:
        fh.write(b"head")
        fh.truncate(200 << 20)  # 200 MB, nearly all a hole
    huge = outputs / "huge.txt"
    with open(huge, "wb") as fh:
        fh.truncate(SNAPSHOT_MAX + 1)
    archive = Archive(embedder=None)
    before = peak_rss()
    report = ingest_within(archive, home / ".claude")
    assert peak_rss() - before < 200 << 20
    assert skips(report, home) == [
        (f"{CLAUDE}/c1/tool-results/huge.txt", "larger than 512 MB; not copied")
    ]
    [copy] = (archive.workspaces()[0].root / "raw").rglob("big.txt")
    st = copy.stat()
    assert st.st_size == 200 << 20 and st.st_blocks * 512 <= 2 << 20  # the chunk with data, no more
    assert copy.read_bytes()[:8] == b"head" + bytes(4)


def test_a_tail_with_no_newline_past_the_line_bound_is_never_decoded(tmp_path: Path) -> None:
    home = tmp_path / "user"
    log = claude_home(home)
    size = log.stat().st_size
    with open(log, "ab") as fh:
        fh.write(b'{"type": "user", "message": "')
        fh.truncate(size + LINE_MAX + (8 << 20))  # 72 MB of a line still being written
    archive = Archive(embedder=None)
    before = peak_rss()
    report = ingest_within(archive, home / ".claude")
    assert peak_rss() - before < 200 << 20
    assert report.turns_added == 1 and [s.reason for s in report.skipped] == [INCOMPLETE]
    [copy] = (archive.workspaces()[0].root / "raw").rglob("c1.jsonl")
    assert copy.stat().st_size == size


def test_an_overlong_finished_line_is_skipped_and_the_lines_after_it_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("archive_mcp.refiners.lines.LINE_MAX", 1000)
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        b'{"a": 1}\n' + b'{"b": "' + b"x" * 5000 + b'"}\n' + b'{"c": 3}\n' + b"y" * 3000
    )
    reader = LineReader(path)
    assert [(r.line, r.data) for r in reader] == [(1, {"a": 1}), (3, {"c": 3})]
    assert [(p.line, p.kind, p.error) for p in reader.problems] == [
        (2, "malformed", "line over 1,000 bytes; not read"),
        (4, "truncated_tail", "unfinished line over 1,000 bytes"),
    ]
    assert (reader.complete_offset, reader.next_line) == (path.stat().st_size - 3000, 4)


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def sources(archive: Archive) -> list[str]:
    return sorted(
        s for ws in archive.workspaces() for s in archive.sessions(ws.id).collect()["source"]
    )


def test_a_file_name_that_is_not_utf8_is_archived_and_the_state_saved(tmp_path: Path) -> None:
    home = tmp_path / "user"
    log = claude_home(home)  # webapp: the first workspace in id order
    bad = log.with_name(os.fsdecode(b"c\xff.jsonl"))
    log.rename(bad)
    claude_home(home, cwd="/home/alice/projects/zzz", sid="c9")  # a workspace after it
    archive = Archive(embedder=None)
    report = ingest_within(archive, home / ".claude")
    assert (report.sessions, report.skipped) == (2, [])
    assert sources(archive) == ["claude-code", "claude-code"]
    webapp = archive.workspace("webapp")
    state = json.loads((webapp.state_dir / "ingest.json").read_text(encoding="utf-8"))
    [(raw_rel, entry)] = state["files"].items()
    assert raw_rel == "raw/claude-code/c1/c\\xff.jsonl"  # printable, the bytes told back from it
    assert os.fsencode(entry["source_path"]) == os.fsencode(bad)  # the name itself, lossless
    assert (webapp.root / raw_rel).read_bytes() == bad.read_bytes()
    again = ingest_within(Archive(embedder=None), home / ".claude")
    assert (again.files_changed, again.skipped) == (0, [])


DENIED = "permission denied; fix the folder's permissions and ingest again"


def deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make `folder` unreadable: by chmod 000 for a user; root reads anything, so for root the
    calls that list it or reach inside it fail the way they do for a user."""
    if os.geteuid() != 0:
        folder.chmod(0)  # the test gives it back its mode
        return
    top = os.fspath(folder)

    def path_of(p: Any) -> str:
        try:
            s = os.fspath(p)
        except TypeError:
            return ""
        return os.fsdecode(s)

    def wrap(fn: Any, test: Any) -> Any:
        def guarded(p: Any, *args: Any, **kwargs: Any) -> Any:
            if test(path_of(p)):
                raise PermissionError(13, "Permission denied", path_of(p))
            return fn(p, *args, **kwargs)

        return guarded

    def inside(s: str) -> bool:
        return s.startswith(top + os.sep)

    def itself(s: str) -> bool:
        return s.rstrip(os.sep) == top

    for name, test in (
        ("stat", inside),
        ("lstat", inside),
        ("open", inside),
        ("listdir", itself),
        ("scandir", itself),
    ):
        monkeypatch.setattr(os, name, wrap(getattr(os, name), test))


def test_an_unreadable_project_or_subagents_folder_is_skipped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    first = claude_home(home, cwd="/p/a", sid="c1")
    claude_home(home, cwd="/p/b", sid="c2")
    claude_home(home, cwd="/p/c", sid="c3")
    subagents = first.parent / "c1" / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-x.jsonl").write_bytes(first.read_bytes())
    bad = claude_home(home, cwd="/p/bad", sid="c4")
    deny(monkeypatch, bad.parent)
    deny(monkeypatch, subagents)
    archive = Archive(embedder=None)
    try:
        report = ingest_within(archive, home / ".claude")
    finally:
        monkeypatch.undo()
        for folder in (bad.parent, subagents):
            folder.chmod(0o700)
    assert skips(report, home) == [
        (".claude/projects/-p-a/c1/subagents", DENIED),
        (".claude/projects/-p-bad", DENIED),
    ]
    assert report.sessions == 3 and sources(archive) == ["claude-code"] * 3


def test_searches_and_contexts_never_fail_while_other_processes_ingest_and_purge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent.parent / "bench"))
    import stress  # the bench's workload, run for a few seconds (worker processes import it)

    monkeypatch.setenv("ARCHIVE_MCP_HOME", str(tmp_path / "unused"))
    result = stress.run(6.0, seed=3, sessions=6, root=tmp_path)
    counts = result["counts"]
    # the message carries the errors themselves: a failure under load is rare, keep what it says
    assert (counts["failed"], result["errors"], counts["wrong"]) == (0, [], 0), (
        counts,
        result["errors"][:5],
    )
    assert counts["ingest"] > 0 and counts["purge"] > 0 and counts["search"] > 0, counts


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [
        (["workspaces", "link", "", "--into", "webapp"], 2, "the path is empty; give a path"),
        (["ingest", ""], 2, "the path is empty; give a path"),
        (["ingest", "a\0b"], 2, "the path holds a NUL byte; no file can be named so"),
        (["memory", "import", "", "-w", "webapp"], 2, "the path is empty; give a path"),
        (["ingest", "/nonexistent"], 1, "/nonexistent: does not exist; nothing archived from it"),
        (["serve", "--http", "--port", "70000"], 2, "70000 is not in the range 1<=x<=65535"),
        (["themes", "discover", "--min-size", "-3"], 2, "-3 is not in the range x>=1"),
        (["show", "s:0", "--before", "1000000000"], 2, "1000000000 is not in the range 0<=x<=1000"),
        (["show", "s:0", "--before", "-2"], 2, "-2 is not in the range 0<=x<=1000"),
    ],
)
def test_bad_arguments_are_one_clear_line(args: list[str], exit_code: int, message: str) -> None:
    out = CliRunner().invoke(cli, ["--embedder", "none", *args])
    assert out.exit_code == exit_code, out.output
    assert message in out.stderr and "Traceback" not in out.stderr


def test_a_full_disk_is_one_clear_line_in_ingest_memory_and_search(
    kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/archive/x.tmp")

    ingest = ["--embedder", "none", "ingest", "--no-index", str(kimi_root)]  # search builds it
    assert CliRunner().invoke(cli, ingest).exit_code == 0
    runner = CliRunner()
    monkeypatch.setattr("archive_mcp.workspaces.atomic.atomic_write_bytes", full)
    monkeypatch.setattr("archive_mcp.memory.store.atomic_write_bytes", full, raising=False)
    monkeypatch.setattr("archive_mcp.search.index.atomic_write_json", full)
    line = "Error: the disk is full: /archive/x.tmp; free some space and run the command again\n"
    remember = runner.invoke(
        cli, ["--embedder", "none", "memory", "remember", "k", "v", "-w", "webapp"]
    )
    search = runner.invoke(
        cli, ["--embedder", "none", "search", "date", "-w", "webapp", "--mode", "lexical"]
    )
    for out in (remember, search):
        assert (out.exit_code, out.stderr) == (1, line)


def test_everything_the_archive_writes_is_private(
    kimi_root: Path, tmp_path: Path, fake_embedder: Any
) -> None:
    old = os.umask(0o022)  # a usual umask: the archive makes its own files private anyway
    try:
        archive = Archive(embedder=fake_embedder)
        archive.ingest(kimi_root)
        archive.search("date test", workspace="webapp")
        archive.memory("webapp").remember("k", "v")
        archive.tag_theme(
            "dates",
            "webapp",
            references=[{"session_id": "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17", "turn": 0}],
        )
    finally:
        os.umask(old)
    home = tmp_path / "home"
    modes = {
        str(p.relative_to(home)): stat.S_IMODE(p.lstat().st_mode)
        for p in home.rglob("*")
        if not p.is_symlink()
    }
    assert any(k.startswith("workspaces/" + WEBAPP + "/cache/search/") for k in modes)
    wrong = {k: oct(m) for k, m in modes.items() if m != (0o700 if (home / k).is_dir() else 0o600)}
    assert wrong == {}


def test_an_archive_written_before_is_made_private_when_opened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "workspaces" / "w").mkdir(parents=True, mode=0o755)
    (home / "workspaces" / "w" / "f.json").write_text("{}")
    (home / "workspaces" / "w" / "f.json").chmod(0o644)
    Archive(embedder=None)
    assert stat.S_IMODE((home / "workspaces" / "w").stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "workspaces" / "w" / "f.json").stat().st_mode) == 0o600


def test_refine_of_an_unknown_session_exits_nonzero(kimi_root: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["--embedder", "none", "ingest", str(kimi_root)]).exit_code == 0
    out = runner.invoke(
        cli, ["--embedder", "none", "refine", "-w", "webapp", "--session", "nosuch"]
    )
    assert out.exit_code == 1
    assert out.stderr.endswith(
        "Error: no session 'nosuch' in workspace webapp; list the sessions\n"
    )
    sid = "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17"  # known and up to date: nothing to do, exit 0
    known = runner.invoke(cli, ["--embedder", "none", "refine", "-w", "webapp", "--session", sid])
    assert known.exit_code == 0, known.output


def test_an_export_name_that_reads_as_an_option_is_refused(kimi_root: Path) -> None:
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    with pytest.raises(MemoryStoreError, match=r"invalid export filename '-rf': use letters"):
        archive.export_memory(filename="-rf", workspace="webapp")
    assert not (archive.workspace("webapp").root / "exports" / "-rf").exists()


def test_serve_http_prints_its_url_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(
        "archive_mcp.mcp.server.serve", lambda archive, http, port, **kw: seen.update(port=port)
    )
    args = ["--embedder", "none", "serve", "--http", "--port", "8799", "--token", "t"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0 and seen == {"port": 8799}
    assert out.stderr == (
        "archive-mcp: serving MCP over HTTP at http://127.0.0.1:8799/mcp\n"
        "archive-mcp: HTTP clients must send the bearer token given by --token\n"
    )


def test_a_record_of_more_values_than_a_record_may_hold_is_reported_and_the_rest_read(
    tmp_path: Path,
) -> None:
    log = claude_home(tmp_path / "user")
    lines = log.read_bytes().splitlines(keepends=True)
    hostile = b'{"type": "user", "message": {"content": [' + b"{}," * ITEMS_MAX + b"{}]}}\n"
    log.write_bytes(lines[0] + hostile + lines[1])
    result = claude_code.parse_wire(log)
    assert [(p.line, p.kind, p.error) for p in result.problems] == [
        (
            2,
            "malformed",
            f"{ITEMS_MAX + 2:,} values, over the {ITEMS_MAX:,} a record may hold; not read",
        )
    ]
    assert [t.user_text for t in result.turns] == ["fix the date parser"]
    assert result.turns[0].assistant_text == "Parsed dates with dateutil now."
    chat = gemini_home(tmp_path / "user")
    chat.write_bytes(
        chat.read_bytes().replace(b'"messages": [', b'"messages": [' + b"{}," * ITEMS_MAX)
    )
    parsed = gemini.parse_wire(chat)
    assert [(p.kind, p.error) for p in parsed.problems] == [
        (
            "malformed",
            f"{ITEMS_MAX + 12:,} values, over the {ITEMS_MAX:,} a record may hold; not read",
        )
    ]
    meta = gemini.chat_meta(chat)  # its ids read from its head, without parsing it whole
    assert meta is not None and (meta["sessionId"], meta["messages"]) == ("g1", [])


def test_a_fifo_at_kimi_json_or_a_context_file_is_reported_and_the_sessions_still_archived(
    tmp_path: Path, kimi_root: Path
) -> None:
    session = kimi_root / "sessions" / WEBAPP / "b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b"
    for path in (kimi_root / "kimi.json", session / "context.jsonl"):
        path.unlink()
        os.mkfifo(path)
    archive = Archive(embedder=None)
    report = ingest_within(archive, kimi_root)
    assert skips(report, tmp_path) == [
        ("kimi/kimi.json", FIFO),
        (f"kimi/sessions/{WEBAPP}/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/context.jsonl", FIFO),
        (f"kimi/sessions/{WEBAPP}/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/wire.jsonl", INCOMPLETE),
    ]
    assert report.sessions == 4  # every session, under its bucket's workspace (no work dirs)
    one = ingest_within(Archive(tmp_path / "other", embedder=None), session)  # one session named
    assert skips(one, tmp_path) == [
        ("kimi/kimi.json", FIFO),
        (f"kimi/sessions/{WEBAPP}/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/context.jsonl", FIFO),
        (f"kimi/sessions/{WEBAPP}/b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b/wire.jsonl", INCOMPLETE),
    ]


@pytest.mark.parametrize("inside", [False, True])
def test_a_project_root_linking_out_of_the_gemini_home_is_reported_and_not_read(
    tmp_path: Path, inside: bool
) -> None:
    home = tmp_path / "user"
    chat = gemini_home(home)
    marker = chat.parent.parent / ".project_root"
    target = (home / ".gemini" / "kept.txt") if inside else (tmp_path / "secret.txt")
    target.write_text("/home/alice/projects/webapp", encoding="utf-8")
    marker.unlink()
    marker.symlink_to(target)
    archive = Archive(embedder=None)
    report = ingest_within(archive, home / ".gemini")
    out = "a symbolic link that leads out of the folder ingested; not followed"
    assert skips(report, home) == ([] if inside else [(".gemini/tmp/webapp/.project_root", out)])
    assert report.sessions == 1
    [ws] = archive.workspaces()
    assert ws.paths == (["/home/alice/projects/webapp"] if inside else [])
