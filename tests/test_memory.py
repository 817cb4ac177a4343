"""Memory, essence and bootstrap: good and hostile input, two stages, [new] markers, concurrency."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.memory.store import MemoryStoreError
from archive_mcp.render import to_jsonable

WEBAPP = "131148b1f826743e761a0be6ad66cb94"


@pytest.fixture
def archive(kimi_root: Path) -> Archive:
    a = Archive(embedder=None)
    a.ingest(kimi_root)
    return a


def test_remember_recall_update_keeps_history(archive: Archive) -> None:
    m = archive.memory("webapp")
    first = m.remember(
        "date-padding", "Zero-pad months with padStart.", "decisions", ["dates"], ["3f2c9a1e:0"]
    )
    assert (first.ref, first.versions, first.tags, first.sources) == (
        "memory/decisions/date-padding",
        1,
        ["dates"],
        ["3f2c9a1e:0"],
    )
    second = m.remember("date-padding", "Use date-fns formatISO.", "decisions", ["dates"])
    assert (
        second.versions == 2 and second.created == first.created and second.updated > first.updated
    )
    assert m.recall("date-padding").content == "Use date-fns formatISO."
    history = list(
        (archive.workspace("webapp").root / "memory/.history/decisions/date-padding").glob("*.md")
    )
    assert len(history) == 1 and "Zero-pad months" in history[0].read_text(encoding="utf-8")
    text = (archive.workspace("webapp").root / "memory/decisions/date-padding.md").read_text(
        encoding="utf-8"
    )
    assert text.startswith("---\ntitle: Use date-fns formatISO.\ntags:\n- dates\n")


@pytest.mark.parametrize(
    "key", ["../../x", "a/b", "..", ".hidden", "", "x" * 200, "a\\b", "ok/../../etc"]
)
def test_hostile_keys_are_refused(archive: Archive, key: str) -> None:
    with pytest.raises(MemoryStoreError, match="invalid memory key"):
        archive.memory("webapp").remember(key, "x")
    assert not (archive.home.parent / "x.md").exists()


@pytest.mark.parametrize("folder", ["../secrets", "memory", "Decisions", ""])
def test_unknown_folders_are_refused(archive: Archive, folder: str) -> None:
    with pytest.raises(MemoryStoreError, match="unknown memory folder"):
        archive.memory("webapp").remember("k", "x", folder)


def test_huge_empty_and_invalid_utf8_content(archive: Archive) -> None:
    m = archive.memory("webapp")
    with pytest.raises(MemoryStoreError, match="a memory holds at most 262,144"):
        m.remember("big", "x" * 300_000)
    with pytest.raises(MemoryStoreError, match="content is empty"):
        m.remember("empty", "  \n")
    e = m.remember("odd", "bad \udcff byte")
    assert e.content == "bad ? byte" and e.warnings == [
        "content held characters that are not valid UTF-8; they were replaced"
    ]
    raw = archive.workspace("webapp").root / "memory/knowledge/raw.md"
    raw.write_bytes(b"---\ntitle: raw\n---\n\ncaf\xe9 \xff")
    got = m.recall("raw")
    assert got.content == "caf\ufffd \ufffd"
    assert got.warnings == ["the file held bytes that are not UTF-8; they read as U+FFFD"]


def test_secrets_in_memories_are_redacted(archive: Archive) -> None:
    e = archive.memory("webapp").remember("deploy", "token: ghp_abcdefghijklmnopqrstuvwxyz0123")
    assert "ghp_" not in e.content and e.warnings == ["1 secret(s) were redacted before storing"]


def test_forget_moves_to_trash_and_never_claims_success_for_nothing(archive: Archive) -> None:
    m = archive.memory("webapp")
    m.remember("tmp", "temporary", "knowledge")
    report = m.forget("tmp", "knowledge")
    assert report.removed == "memory/knowledge/tmp"
    assert (
        (archive.workspace("webapp").root / report.trash_path)
        .read_text(encoding="utf-8")
        .endswith("temporary\n")
    )
    with pytest.raises(MemoryStoreError, match="nothing removed: there is no memory knowledge/tmp"):
        m.forget("tmp", "knowledge")
    with pytest.raises(MemoryStoreError, match="no memory 'tmp'"):
        m.recall("tmp")


def test_recall_needs_a_folder_when_ambiguous_and_suggests_near_keys(archive: Archive) -> None:
    m = archive.memory("webapp")
    m.remember("auth", "a", "decisions")
    m.remember("auth", "b", "rules")
    with pytest.raises(MemoryStoreError, match="'auth' exists in decisions, rules: pass `folder`"):
        m.recall("auth")
    assert m.recall("auth", "rules").content == "b"
    with pytest.raises(MemoryStoreError, match="Did you mean: decisions/auth, rules/auth"):
        m.recall("aut")


def test_memory_search_is_lexical_fuzzy_and_cjk_aware(archive: Archive) -> None:
    m = archive.memory("webapp")
    m.remember("jpeg", "Decode JPEG with turbojpeg; PIL was 2x slower.", "decisions")
    m.remember("cache", "会话缓存改用进程内 LRU，Redis 延迟太高。", "decisions")
    m.remember("misc", "Unrelated note about CSS grids.", "knowledge")
    assert [h.key for h in m.search("turbojpeg")][0] == "jpeg"
    assert [h.key for h in m.search("turbojepg")][0] == "jpeg"  # typo
    assert [h.key for h in m.search("会话缓存")][0] == "cache"
    assert m.search("grids", folder="decisions") == []
    assert [e.key for e in m.recall_recent(2)] == ["misc", "cache"]


def test_workspaces_never_share_memory(archive: Archive) -> None:
    archive.memory("webapp").remember("only-webapp", "x")
    assert archive.memory("ml-pipeline").list() == []
    with pytest.raises(MemoryStoreError):
        archive.memory("ml-pipeline").recall("only-webapp")


def test_organize_two_stages_history_size_warning_and_missing_sources(archive: Archive) -> None:
    m = archive.memory("webapp")
    m.remember("date-lib", "Use date-fns.", "decisions")
    m.remember("no-any", "No `any` in TypeScript.", "rules")
    prep = archive.organize_memories(workspace="webapp")
    assert prep.stage == "prepare" and prep.existing_essence == ""
    assert [x["ref"] for x in prep.materials] == [
        "memory/rules/no-any",
        "memory/decisions/date-lib",
    ]
    assert "> source: memory/<folder>/<key>" in prep.rules
    essence = "# Essence\n- dates: date-fns\n> source: memory/decisions/date-lib\n> source: memory/rules/gone\n"
    stored = archive.organize_memories(essence, ["memory/lessons/also-gone"], workspace="webapp")
    assert (stored.stage, stored.previous_kept, stored.warnings) == ("store", None, [])
    assert stored.missing_sources == ["memory/rules/gone", "memory/lessons/also-gone"]
    big = archive.organize_memories("x" * 16_000, workspace="webapp")
    assert big.warnings == [
        "essence is 16,000 bytes, above the recommended 15,360: consider dropping superseded points"
    ]
    assert big.previous_kept.startswith("essence/history/essence-")
    ws = archive.workspace("webapp")
    assert (ws.root / big.previous_kept).read_text(encoding="utf-8") == essence
    again = archive.organize_memories(workspace="webapp")
    assert again.existing_essence == "x" * 16_000
    assert {x["ref"]: x["cited"] for x in again.materials} == {
        "memory/rules/no-any": 0,
        "memory/decisions/date-lib": 0,
    }


def test_bootstrap_marks_new_entries_until_seen(archive: Archive) -> None:
    m = archive.memory("webapp")
    m.remember("a", "first", "decisions")
    first = archive.bootstrap_workspace("webapp")
    assert (
        first.memory_index == {"decisions": ["[new] a: first"]}
        and first.new_since_last_bootstrap == 1
    )
    assert [r["turn"] for r in first.recent_context][-1] == 1  # newest turn last
    m.remember("b", "second", "rules")
    second = archive.bootstrap_workspace("webapp")
    assert second.memory_index == {"decisions": ["a: first"], "rules": ["[new] b: second"]}
    m.remember("a", "first, revised", "decisions")
    third = archive.bootstrap_workspace("webapp")
    assert third.memory_index["decisions"] == ["[new] a: first, revised"]


def test_bootstrap_stays_within_its_budget(archive: Archive) -> None:
    archive.organize_memories("E" * 30_000, workspace="webapp")
    b = archive.bootstrap_workspace("webapp", budget=4000)
    assert len(json.dumps(to_jsonable(b), ensure_ascii=False)) <= 4000 + 200
    assert b.truncated and b.essence.endswith("read essence://essence]")


def test_sync_index_sets_remarks_and_lists_folders_needing_one(archive: Archive) -> None:
    archive.memory("webapp").remember("x", "y", "rules")
    index = archive.sync_workspace_index({"decisions": "what we chose and why"}, workspace="webapp")
    assert index["folders"]["decisions"]["remark"] == "what we chose and why"
    assert index["folders_needing_remark"] == ["rules"]
    with pytest.raises(MemoryStoreError, match="unknown memory folder"):
        archive.sync_workspace_index({"../x": "no"}, workspace="webapp")


def test_save_lesson_and_stats(archive: Archive) -> None:
    e = archive.save_lesson(
        "Ran migrations on prod without a backup",
        "no snapshot first",
        "snapshot, then migrate",
        workspace="webapp",
    )
    assert e.ref == "memory/lessons/ran-migrations-on-prod-without-a-backup"
    assert "## Correction\nsnapshot, then migrate" in e.content
    st = archive.memory_stats("webapp")
    assert st.per_folder["lessons"] == 1 and st.turns == 5 and st.themes == 0


def test_export_import_round_trip_without_duplicates(archive: Archive, tmp_path: Path) -> None:
    m = archive.memory("webapp")
    m.remember("a", "alpha", "decisions")
    m.remember("b", "beta", "rules")
    path = archive.export_memory(filename="team.json", workspace="webapp")
    assert path == archive.workspace("webapp").root / "exports" / "team.json"
    for bad in ("../x.json", "a/b.json", ".hidden", "x y.json"):
        with pytest.raises(MemoryStoreError, match="invalid export filename"):
            archive.export_memory(filename=bad, workspace="webapp")
    other = Archive(tmp_path / "other-home", embedder=None)
    other.registry.ensure(WEBAPP, path="/home/alice/projects/webapp")
    first = other.import_memory(path, workspace="webapp", allow_path=True)
    assert (sorted(first.added), first.unchanged) == (["memory/decisions/a", "memory/rules/b"], [])
    second = other.import_memory(path, workspace="webapp", allow_path=True)
    assert (second.added, sorted(second.unchanged)) == (
        [],
        ["memory/decisions/a", "memory/rules/b"],
    )
    with pytest.raises(MemoryStoreError, match="is not an archive-mcp memory export"):
        (tmp_path / "junk.json").write_text("{}", encoding="utf-8")
        other.import_memory(tmp_path / "junk.json", workspace="webapp", allow_path=True)


def _writer(home: str, worker: int, n: int) -> None:
    os.environ["ARCHIVE_MCP_HOME"] = home
    a = Archive(embedder=None)
    m = a.memory(WEBAPP)
    for i in range(n):
        m.remember(f"w{worker}-k{i}", f"worker {worker} item {i}", "knowledge")
        m.remember("shared", f"worker {worker} update {i}", "decisions")


@pytest.mark.slow  # end to end (processes, a server): CI runs it; the fast loop does not
def test_parallel_writers_in_processes_lose_nothing(archive: Archive) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(archive.home), w, 8)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    m = archive.memory("webapp")
    keys = {e.key for e in m.list("knowledge")}
    assert keys == {f"w{w}-k{i}" for w in range(4) for i in range(8)}
    shared = m.recall("shared", "decisions")
    assert shared.versions == 32  # every one of the 32 updates is the current file or in history
    root = archive.workspace("webapp").root / "memory"
    assert not list(root.rglob("*.tmp"))


def test_cli_memory_commands(archive: Archive) -> None:
    runner = CliRunner()
    r = runner.invoke(
        main,
        [
            "memory",
            "remember",
            "ci",
            "Runners are GitHub-hosted.",
            "-f",
            "decisions",
            "-w",
            "webapp",
        ],
    )
    assert (r.exit_code, r.stdout) == (0, "stored memory/decisions/ci (version 1)\n")
    r = runner.invoke(main, ["memory", "recall", "ci", "-w", "webapp", "--json"])
    assert json.loads(r.stdout)["content"] == "Runners are GitHub-hosted."
    r = runner.invoke(main, ["memory", "forget", "nope", "-f", "rules", "-w", "webapp"])
    assert r.exit_code == 1 and "nothing removed" in r.stderr
    r = runner.invoke(main, ["memory", "remember", "../x", "y", "-w", "webapp"])
    assert r.exit_code == 1 and "invalid memory key" in r.stderr
    r = runner.invoke(main, ["memory", "remember", "k", "y", "-f", "nowhere", "-w", "webapp"])
    assert r.exit_code == 2


@pytest.mark.anyio
async def test_stdio_memory_round_trip(archive: Archive) -> None:
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "ARCHIVE_MCP_HOME": str(archive.home), "ARCHIVE_MCP_EMBEDDER": "none"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "archive_mcp", "serve"], env=env, cwd="/"
    )
    async with Client(params, read_timeout_seconds=60) as c:
        r = await c.call_tool(
            "remember",
            {
                "key": "jpeg",
                "content": "Use turbojpeg.",
                "folder": "decisions",
                "workspace": "webapp",
            },
        )
        assert not r.is_error and r.structured_content["ref"] == "memory/decisions/jpeg"
        r = await c.call_tool("recall", {"key": "jpeg", "workspace": "webapp"})
        assert r.structured_content["content"] == "Use turbojpeg."
        r = await c.call_tool("organize_memories", {"workspace": "webapp"})
        assert r.structured_content["prepare"]["materials"][0]["ref"] == "memory/decisions/jpeg"
        r = await c.call_tool(
            "organize_memories",
            {
                "workspace": "webapp",
                "content": "# Essence\n- turbojpeg\n> source: memory/decisions/jpeg\n",
            },
        )
        assert r.structured_content["stored"]["missing_sources"] == []
        r = await c.call_tool("bootstrap_workspace", {"workspace": "webapp"})
        assert r.structured_content["essence"].startswith("# Essence")
        assert r.structured_content["memory_index"] == {"decisions": ["[new] jpeg: Use turbojpeg."]}
        bad = await c.call_tool("forget", {"key": "jpeg", "folder": "rules", "workspace": "webapp"})
        assert bad.is_error and "nothing removed" in bad.content[0].text
        bad = await c.call_tool(
            "remember", {"key": "../../x", "content": "y", "workspace": "webapp"}
        )
        assert bad.is_error and "invalid memory key" in bad.content[0].text
