"""`archive-mcp workspaces merge SRC --into DST`: a worktree's workspace joins its repo's, with its
paths, sessions, embeddings, ingest state and themes; an interruption loses nothing; the hints
`ingest` and `link` print work when pasted."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import polars as pl
import pytest
from archive_mcp.workspaces import workspace_id
from click.testing import CliRunner
from test_agent_ingest import claude_home

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli
from archive_mcp.ingest import merge

WEBAPP = "131148b1f826743e761a0be6ad66cb94"
ML = "dc8fa21d3e61040ad8305bf8ed3081c5"
LOADER = "6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"  # the ml-pipeline session about the data loader


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--embedder", "none", *args])
    return result.exit_code, result.stdout, result.stderr


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "cache" not in p.parts and not p.name.startswith(".lock")
    }


def test_merge_moves_sessions_themes_and_state_and_a_later_ingest_lands_in_dst(
    archive: Archive, kimi_root: Path
) -> None:
    first = archive.turns(ML).filter(pl.col("session_id") == LOADER).collect()["turn"].min()
    archive.tag_theme("loader speed", ML, references=[f"{LOADER}:{first}"])
    before = archive.stats("all")
    assert LOADER not in {h.session_id for h in archive.search("data loader", workspace=WEBAPP)}
    code, out, err = _run("workspaces", "merge", "ml-pipeline", "--into", "webapp")
    assert (code, err) == (0, "")
    assert out == (
        f"merged ml-pipeline ({ML}) into webapp ({WEBAPP}): 2 sessions, themes loader speed\n"
        "paths: /home/alice/projects/webapp, /home/alice/projects/ml-pipeline\n"
    )
    assert [w.id for w in archive.workspaces()] == [WEBAPP]
    assert not (archive.home / "workspaces" / ML).exists()
    after = archive.stats("all")
    assert (after.sessions, after.turns, after.embedded, after.raw_bytes) == (
        before.sessions,
        before.turns,
        before.embedded,
        before.raw_bytes,
    )
    assert archive.sessions(WEBAPP).collect()["workspace_id"].unique().to_list() == [WEBAPP]
    hits = archive.search("data loader", workspace=WEBAPP)
    assert hits and hits[0].session_id == LOADER and hits[0].workspace_id == WEBAPP
    theme = archive.themes_store(WEBAPP).require("loader speed")
    assert [(m.session_id, m.turn) for m in theme.members] == [(LOADER, first)]
    ctx = archive.load_turn_context([f"{LOADER}:{first}"], workspace=WEBAPP)
    assert ctx.turns and ctx.turns[0].session_id == LOADER
    report = archive.ingest(kimi_root)  # the ingest state moved: nothing new, nothing re-made
    assert (report.workspaces, report.created, report.turns_added) == ([WEBAPP], [], 0)
    assert _run("workspaces", "show", "/home/alice/projects/ml-pipeline")[1].startswith(
        f"webapp ({WEBAPP})"
    )


def test_merge_refuses_itself_and_unknown_names_in_one_line(archive: Archive) -> None:
    code, out, err = _run("workspaces", "merge", "webapp", "--into", WEBAPP[:8])
    assert (code, out) == (1, "")
    assert err == f"Error: cannot merge workspace webapp ({WEBAPP}) into itself\n"
    code, out, err = _run("workspaces", "merge", "nope", "--into", "webapp")
    assert (code, out, len(err.splitlines())) == (1, "", 1)
    assert err.startswith("Error: no workspace matches 'nope'. Known workspaces: ml-pipeline")
    assert len(archive.workspaces()) == 2


def test_link_of_a_path_with_its_own_workspace_prints_the_merge_command_that_works(
    archive: Archive,
) -> None:
    code, out, err = _run(
        "workspaces", "link", "/home/alice/projects/ml-pipeline", "--into", "webapp"
    )
    command = f"archive-mcp workspaces merge {ML} --into {WEBAPP}"
    assert (code, out) == (1, "")
    assert err == (
        f"Error: /home/alice/projects/ml-pipeline already belongs to workspace ml-pipeline ({ML}); "
        f"to join its sessions into webapp, run `{command}`\n"
    )
    code, out, _ = _run(*shlex.split(command)[1:])
    assert code == 0 and out.startswith(f"merged ml-pipeline ({ML}) into webapp")


def test_the_ingest_hint_works_verbatim(tmp_path: Path) -> None:
    home = tmp_path / "user"
    repo, feat = "/home/alice/web", "/home/alice/web/.worktrees/feat-dates"
    claude_home(home, cwd=repo, sid="c1")
    claude_home(home, cwd=feat, sid="c2", prompt="date parsing on the branch")
    code, _, err = _run("ingest", str(home / ".claude"))
    hints = [line for line in err.splitlines() if line.startswith("hint:")]
    command = f"archive-mcp workspaces merge {workspace_id(feat)} --into {workspace_id(repo)}"
    assert (code, hints) == (
        0,
        [
            f"hint: {feat} looks like a worktree or branch of {repo}: `{command}` joins their sessions"
        ],
    )
    code, out, err = _run(*shlex.split(hints[0].split("`")[1])[1:])
    assert (code, err) == (0, "")
    assert out == (
        f"merged feat-dates ({workspace_id(feat)}) into web ({workspace_id(repo)}): 1 session\n"
        f"paths: {repo}, {feat}\n"
    )
    claude_home(home, cwd=feat, sid="c3", prompt="timezone handling on the branch")
    code, out, err = _run("ingest", str(home / ".claude"))
    assert code == 0 and "hint:" not in err
    archive = Archive(embedder=None)
    assert [w.id for w in archive.workspaces()] == [workspace_id(repo)]
    assert sorted(archive.sessions("all").collect()["session_id"]) == ["c1", "c2", "c3"]
    assert [h.session_id for h in archive.search("timezone handling", workspace="web")][:1] == [
        "c3"
    ]


def test_an_interrupted_copy_changes_nothing_and_the_merge_runs_again(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {w.id: _files(w.root) for w in archive.workspaces()}
    calls = {"n": 0}
    copy = shutil.copy2

    def failing(src: object, dst: object) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return copy(src, dst)

    monkeypatch.setattr(merge.shutil, "copy2", failing)
    code, _, err = _run("workspaces", "merge", "ml-pipeline", "--into", "webapp")
    assert code == 1 and err.startswith("Error: the disk is full")
    assert {w.id: _files(w.root) for w in archive.workspaces()} == before
    monkeypatch.setattr(merge.shutil, "copy2", copy)
    assert _run("workspaces", "merge", "ml-pipeline", "--into", "webapp")[0] == 0
    assert archive.stats("all").sessions == 5 and [w.id for w in archive.workspaces()] == [WEBAPP]
    assert not any(p.name.startswith(".merge-") for p in (archive.home / "workspaces").rglob("*"))


def test_a_merge_cut_short_after_it_was_decided_is_finished_by_the_next_ingest(
    archive: Archive, kimi_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = archive.stats("all").sessions
    real = merge._merge_state

    def killed(staged: Path, dst: object) -> None:
        raise KeyboardInterrupt  # the process dies half way through moving files in

    monkeypatch.setattr(merge, "_merge_state", killed)
    with pytest.raises(KeyboardInterrupt):
        archive.merge_workspaces("ml-pipeline", "webapp")
    assert (archive.home / "workspaces" / WEBAPP / "state" / merge.JOURNAL).exists()
    monkeypatch.setattr(merge, "_merge_state", real)
    report = Archive(embedder=None).ingest(kimi_root)
    assert (report.workspaces, report.turns_added) == ([WEBAPP], 0)
    assert [w.id for w in archive.workspaces()] == [WEBAPP]
    assert archive.stats("all").sessions == sessions
    assert not (archive.home / "workspaces" / WEBAPP / "state" / merge.JOURNAL).exists()


def test_a_session_archived_in_both_is_refused_with_the_purge_to_run(archive: Archive) -> None:
    src = archive.home / "workspaces" / ML / "refined" / f"{LOADER}.parquet"
    shutil.copy(src, archive.home / "workspaces" / WEBAPP / "refined" / src.name)
    code, out, err = _run("workspaces", "merge", ML, "--into", WEBAPP)
    assert (code, out) == (1, "")
    assert err == (
        f"Error: 1 session(s) are archived in both ml-pipeline and webapp ({LOADER}); purge them "
        f"from one first (`archive-mcp sessions purge {LOADER} -w {ML} --yes`)\n"
    )
    assert len(archive.workspaces()) == 2
