"""Workspace ids, resolution (path, id, prefix, name, cwd) and linking; never a global fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from archive_mcp.workspaces import archive_home, kimi_code_key, workspace_id

from archive_mcp import Archive, WorkspaceError

WEBAPP = "131148b1f826743e761a0be6ad66cb94"
ML = "dc8fa21d3e61040ad8305bf8ed3081c5"


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/home/alice/projects/webapp", WEBAPP),
        ("/home/alice/projects/webapp/", WEBAPP),
        ("/home/alice/projects/./x/../webapp", WEBAPP),
        ("/home/alice/projects/ml-pipeline", ML),
    ],
)
def test_workspace_id_is_kimis_md5_of_the_canonical_path(path: str, expected: str) -> None:
    assert workspace_id(path) == expected


def test_kimi_code_key_matches_the_typescript_rule() -> None:
    assert kimi_code_key("/home/alice/projects/webapp") == "wd_webapp_58df6e89cfb6"
    assert kimi_code_key("C:\\Users\\alice\\projects\\webapp") == "wd_webapp_262cd4d45bfa"


def test_archive_home_comes_from_the_environment(tmp_path: Path) -> None:
    assert archive_home() == tmp_path / "home"
    assert archive_home(tmp_path / "x") == tmp_path / "x"


@pytest.fixture
def archive(kimi_root: Path) -> Archive:
    a = Archive(embedder=None)
    a.ingest(kimi_root)
    return a


@pytest.mark.parametrize(
    "ref",
    [
        WEBAPP,
        WEBAPP[:6],
        "webapp",
        "WebApp",
        "/home/alice/projects/webapp",
        "/home/alice/projects/webapp/src/utils",
    ],
)
def test_workspace_argument_resolves_by_id_prefix_name_or_path(archive: Archive, ref: str) -> None:
    assert archive.workspace(ref).id == WEBAPP


def test_a_whole_workspace_id_resolves_reading_only_its_own_description(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive_mcp.workspaces.registry import Registry

    read: list[str] = []
    load = Registry._load

    def counted(self: Registry, ws_dir: Path) -> object:
        read.append(ws_dir.name)
        return load(self, ws_dir)

    monkeypatch.setattr(Registry, "_load", counted)
    assert archive.workspace(WEBAPP).id == WEBAPP
    assert read == [WEBAPP]
    read.clear()
    assert archive.workspace("webapp").id == WEBAPP  # a name: every description is read
    assert sorted(read) == sorted(["webapp", WEBAPP, ML])  # no folder "webapp": then the list


def test_cwd_resolution_uses_the_git_root(archive: Archive, tmp_path: Path) -> None:
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    archive.link(str(repo), "ml-pipeline")
    assert archive.workspace(cwd=str(repo / "src")).id == ML
    assert archive.workspace(roots=[str(repo)]).id == ML


def test_unknown_workspace_fails_listing_the_known_ones(archive: Archive, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError) as err:
        archive.workspace(cwd=str(tmp_path))
    assert str(err.value) == (
        f"the current directory {tmp_path} is not an archived workspace; pass `workspace`. Known "
        f"workspaces: ml-pipeline (dc8fa21d, /home/alice/projects/ml-pipeline); "
        f"webapp (131148b1, /home/alice/projects/webapp)"
    )
    with pytest.raises(WorkspaceError, match="no workspace matches 'nope'"):
        archive.workspace("nope")


def test_empty_archive_says_to_ingest_first(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="run `archive-mcp ingest` first"):
        Archive().workspace("anything")


def test_link_adds_a_path_and_refuses_one_owned_by_another_workspace(archive: Archive) -> None:
    ws = archive.link("/srv/worktrees/webapp-feature", "webapp")
    assert ws.paths == ["/home/alice/projects/webapp", "/srv/worktrees/webapp-feature"]
    assert archive.workspace("/srv/worktrees/webapp-feature").id == WEBAPP
    with pytest.raises(WorkspaceError, match="already belongs to workspace webapp"):
        archive.link("/srv/worktrees/webapp-feature", "ml-pipeline")


def test_unknown_bucket_is_archived_under_its_hash(kimi_root: Path) -> None:
    (kimi_root / "kimi.json").unlink()
    archive = Archive(embedder=None)
    archive.ingest(kimi_root)
    assert sorted((w.id, w.name, w.paths) for w in archive.workspaces()) == [
        (WEBAPP, f"kimi project {WEBAPP[:8]}", []),
        (ML, f"kimi project {ML[:8]}", []),
    ]
    assert archive.workspace(f"kimi project {ML[:8]}").id == ML


def test_a_workspace_archived_without_its_path_takes_the_paths_name_once_known(
    tmp_path: Path,
) -> None:
    from archive_mcp.workspaces import Registry

    reg = Registry(tmp_path / "workspaces")
    ws_id = "9da8b3dfb8655182ac1f0e66601c367e"
    assert reg.ensure(ws_id, source="gemini").name == "gemini project 9da8b3df"
    assert reg.ensure(ws_id, source="gemini").name == "gemini project 9da8b3df"
    assert (
        reg.ensure(ws_id, path="/home/alice/projects/webapp", source="claude-code").name == "webapp"
    )
    assert (
        reg.ensure(ws_id, path="/home/alice/other").name == "webapp"
    )  # a named workspace keeps its name
    older = reg.ensure(
        "0123456789abcdef0123456789abcdef"
    )  # archived by a version that named it by its id
    assert (
        older.name == older.id
        and reg.ensure(older.id, source="kimi").name == "kimi project 01234567"
    )
