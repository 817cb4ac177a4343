"""The MCP face under load and abuse: a slow call never holds up another client, and every tool
answers hostile arguments with a tool error that says what to do, or a result within its budget."""

from __future__ import annotations

import errno
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from archive_mcp import Archive
from archive_mcp.mcp.server import build_server
from archive_mcp.mcp.toolkit import DEFAULT_BUDGET

pytestmark = pytest.mark.anyio

LOGIN = "session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13"
CWD = "/home/alice/projects/webapp/src"
REQUIRED: dict[str, dict[str, Any]] = {
    "search_context": {"query": "login"},
    "load_turn_context": {"references": [{"session_id": LOGIN, "turn": 0}]},
    "grep_turns": {"pattern": "login"},
    "refine_session_turns": {"session_id": LOGIN},
    "remember": {"key": "k", "content": "c"},
    "recall": {"key": "k"},
    "search_memory": {"query": "x"},
    "forget": {"key": "k", "folder": "knowledge"},
    "save_lesson": {"situation": "s", "mistake": "m", "correction": "c"},
    "import_memory": {"path": "exports/none.json"},
    "tag_theme": {"theme": "t", "seeds": ["login"]},
    "trace_theme": {"theme": "t"},
    "delete_theme": {"theme": "t"},
}
UNKNOWN = {
    "workspace": "nope",
    "session_id": "nope",
    "session": "nope",
    "key": "nope",
    "theme": "nope",
    "path": "/nonexistent/export.json",
    "references": [{"session_id": "nope", "turn": 0}],
    "workspaces": ["nope"],
    "folder": "nope",
}
HUGE = "word " * 600_000  # 3 MB


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_list_workspaces_answers_within_200_ms_while_another_client_runs_a_5_second_call(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    started = threading.Event()
    real_search = archive.search

    def slow_search(query: str, *args: Any, **kwargs: Any) -> Any:
        if query == "slow":
            started.set()
            time.sleep(5)  # blocking work, as a 2.6 MB query or a held lock would be
        return real_search(query, *args, **kwargs)

    monkeypatch.setattr(archive, "search", slow_search)
    port = _free_port()
    web = uvicorn.Server(
        uvicorn.Config(
            build_server(archive, cwd=CWD).streamable_http_app(),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    try:
        while not web.started:
            await anyio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url) as first, Client(url) as second:
            assert not (await second.call_tool("list_workspaces", {})).is_error
            slow: dict[str, Any] = {}

            async def run_slow() -> None:
                t0 = time.perf_counter()
                slow["result"] = await first.call_tool("search_context", {"query": "slow"})
                slow["seconds"] = time.perf_counter() - t0

            async with anyio.create_task_group() as tg:
                tg.start_soon(run_slow)
                while not started.is_set():
                    await anyio.sleep(0.01)
                t0 = time.perf_counter()
                listed = await second.call_tool("list_workspaces", {"detail": "compact"})
                elapsed = time.perf_counter() - t0
                tools0 = time.perf_counter()
                await second.list_tools()
                listing = time.perf_counter() - tools0
        assert not listed.is_error and len(listed.structured_content["workspaces"]) == 2
        assert elapsed < 0.2, f"list_workspaces took {elapsed:.3f} s behind a slow call"
        assert listing < 0.2
        assert slow["seconds"] >= 5 and not slow["result"].is_error
    finally:
        web.should_exit = True
        thread.join(10)


def _hostile_values(prop: dict[str, Any]) -> list[Any]:
    """A wrong type, an empty value, a huge one, then the pointed ones (`_pointed_values`)."""
    kinds = _kinds(prop)
    wrong = "not-a-list" if kinds & {"array", "object"} else {"unexpected": ["object"]}
    empty = [] if "array" in kinds else {} if "object" in kinds else ""
    huge = [HUGE] if "array" in kinds else HUGE
    return [wrong, empty, huge, *_pointed_values(prop)]


def _kinds(prop: dict[str, Any]) -> set[Any]:
    return {t.get("type") for t in prop.get("anyOf", [prop])}


def _pointed_values(prop: dict[str, Any]) -> list[Any]:
    """NUL bytes and traversal in strings (and in list items and keys); NaN, infinities and out
    of range numbers both ways."""
    kinds = _kinds(prop)
    out: list[Any] = []
    if "string" in kinds:
        out += ["a\0b", "../../../../etc/passwd"]
    if "array" in kinds:
        out += [["a\0b"], [{"session_id": "a\0b", "turn": 0}], ["../../../../etc/passwd"]]
    if "object" in kinds:
        out += [{"a\0b": "c\0d"}]
    if kinds & {"integer", "number"}:
        out += [-1, 10**12, float("nan"), float("inf"), float("-inf")]
    return out


def _budget(args: dict[str, Any]) -> int:
    for name in ("max_output_chars", "max_chars"):
        if isinstance(args.get(name), int) and 500 <= args[name] <= 200_000:
            return int(args[name])
    return DEFAULT_BUDGET


def _check(name: str, args: dict[str, Any], r: Any, tool: Any) -> None:
    text = r.content[0].text if r.content else ""
    shown = {k: (v[:20] if isinstance(v, str) else v) for k, v in args.items()}
    if r.is_error:
        for leak in ("pydantic", "validation error for", "Traceback", "input_type=", "https://"):
            assert leak not in text, (name, shown, text[:300])
        assert text.strip() != f"Error executing tool {name}", (
            name,
            shown,
        )  # a crash, not a mistake
        assert len(text) <= 2000, (name, shown, len(text))
    else:
        budget = _budget(args)
        assert len(text) <= budget, (name, shown, len(text))
        assert len(json.dumps(r.structured_content, ensure_ascii=False)) <= budget, (name, shown)


@pytest.mark.slow  # CI runs it; the fast loop leaves it out
async def test_every_tool_answers_hostile_arguments_with_a_tool_error_or_a_result_within_budget(
    archive: Archive,
) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) == 24
        for tool in tools:
            base = REQUIRED.get(tool.name, {})
            props = tool.input_schema["properties"]
            cases = [{**base, p: v} for p, prop in props.items() for v in _hostile_values(prop)]
            cases += [{**base, p: v} for p, v in UNKNOWN.items() if p in props]
            cases += [
                {k: v for k, v in base.items() if k != p} for p in base
            ]  # a required argument missing
            for args in cases:
                r = await client.call_tool(tool.name, args)
                _check(tool.name, args, r, tool)


async def test_every_tool_says_why_it_refuses_nul_bytes_nan_and_traversal(
    archive: Archive,
) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        tools = (await client.list_tools()).tools
        assert len(tools) == 24
        calls = 0
        for tool in tools:
            base = REQUIRED.get(tool.name, {})
            for p, prop in tool.input_schema["properties"].items():
                for value in _pointed_values(prop):
                    args = {**base, p: value}
                    r = await client.call_tool(tool.name, args)
                    _check(tool.name, args, r, tool)
                    text = r.content[0].text if r.content else ""
                    assert not (r.is_error and text.startswith("Error executing tool")), (
                        tool.name,
                        p,
                        text,
                    )
                    calls += 1
    assert calls > 200


async def test_a_nul_byte_in_import_memorys_path_says_so(archive: Archive) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("import_memory", {"path": "exports/a\0b.json"})
    assert r.is_error and r.content[0].text == (
        "the path holds a NUL byte; no file can be named so: pass the name"
    )


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/h/x"),
            "search_context: the disk is full: /h/x; free some space and run the command again",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/h/x"),
            "search_context: the file system is read-only: /h/x; point ARCHIVE_MCP_HOME at a "
            "writable folder or remount it read-write, then run the command again",
        ),
        (
            ValueError("embedded null byte"),
            "search_context failed: ValueError: embedded null byte. This is a fault in "
            "archive-mcp, not a mistake of yours as far as it can tell: try other arguments, and "
            "report it if it persists (the server log holds the traceback).",
        ),
    ],
)
async def test_an_unexpected_failure_reaches_the_client_with_its_reason(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, raised: Exception, message: str
) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise raised

    monkeypatch.setattr(archive, "search", fail)
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("search_context", {"query": "login"})
    assert r.is_error and r.content[0].text == message


async def test_a_validation_error_names_the_argument_and_what_to_do(archive: Archive) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("search_context", {"query": "x", "limit": 0})
        missing = await client.call_tool("recall", {})
    assert r.is_error
    assert r.content[0].text == (
        "search_context: argument `limit` input should be greater than or equal to 1 (got 0). "
        "Fix the argument and call search_context again."
    )
    assert missing.content[0].text.startswith(
        "recall: argument `key` is required. Fix the argument and call recall again."
    )


async def test_a_library_error_reaches_the_agent_as_its_own_message(archive: Archive) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("recall", {"key": "nope"})
        unknown = await client.call_tool(
            "load_turn_context", {"references": [{"session_id": "nope", "turn": 0}]}
        )
    assert r.is_error and r.content[0].text == "no memory 'nope'. List the memories to see them."
    assert unknown.is_error and unknown.content[0].text == (
        "no session 'nope' in any workspace; search for its turns or list the sessions"
    )


@pytest.mark.parametrize("budget", [500, 2000, 30_000])
async def test_structured_content_and_text_hold_the_budget(archive: Archive, budget: int) -> None:
    for i in range(40):
        archive.memory("webapp").remember(
            f"note-{i}", "a long memory about login forms " * 200, "knowledge"
        )
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("organize_memories", {"max_output_chars": budget})
        recent = await client.call_tool("recall_recent", {"limit": 40, "max_output_chars": budget})
    for res in (r, recent):
        assert not res.is_error
        assert len(res.content[0].text) <= budget
        assert len(json.dumps(res.structured_content, ensure_ascii=False)) <= budget
    assert recent.structured_content["truncated"] is True


async def test_load_turn_context_keeps_tool_arguments_before_outputs(archive: Archive) -> None:
    found = archive.load_turn_context(
        [{"session_id": LOGIN, "turn": 0}], workspace="webapp", max_chars=600
    )
    turn = found.turns[0]
    total = (
        len(turn.user_text)
        + len(turn.assistant_text)
        + sum(len(c.arguments) + len(c.result) for c in turn.tool_calls)
    )
    assert total <= 600
    assert all(
        not c.arguments.endswith("…") or len(c.arguments) >= len(c.result) for c in turn.tool_calls
    )


async def test_resources_honour_the_clients_roots(archive: Archive) -> None:
    from mcp_types import ListRootsResult, Root

    archive.organize_memories("# Essence\n- ml\n", workspace="ml-pipeline")
    archive.memory("ml-pipeline").remember("jpeg", "Use turbojpeg.", "decisions")
    ml_path = archive.workspace("ml-pipeline").paths[0]

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{ml_path}")])

    async with Client(build_server(archive, cwd="/"), list_roots_callback=roots) as client:
        essence = await client.read_resource("essence://essence")
        memory = await client.read_resource("memory://decisions/jpeg")
        tool = await client.call_tool("recall", {"key": "jpeg"})
    assert essence.contents[0].text == "# Essence\n- ml\n"
    assert "Use turbojpeg." in memory.contents[0].text and not tool.is_error


async def test_export_memory_returns_a_path_import_memory_takes(archive: Archive) -> None:
    archive.memory("webapp").remember(
        "date-lib", "Use date-fns.", "decisions", sources=[f"{LOGIN}:0"]
    )
    async with Client(build_server(archive, cwd=CWD)) as client:
        exported = await client.call_tool("export_memory", {"filename": "x.json"})
        imported = await client.call_tool(
            "import_memory", {"path": exported.structured_content["path"]}
        )
        updated = await client.call_tool(
            "remember", {"key": "date-lib", "content": "Use date-fns v3.", "folder": "decisions"}
        )
        empty = await client.call_tool("tag_theme", {"theme": "nothing"})
    assert exported.structured_content["path"] == "exports/x.json"
    assert not imported.is_error and imported.structured_content["unchanged"] == [
        "memory/decisions/date-lib"
    ]
    assert updated.structured_content["sources"] == [f"{LOGIN}:0"]
    assert empty.is_error and "give references" in empty.content[0].text
    assert "nothing" not in [t.name for t in archive.list_themes("webapp")]


async def test_bootstrap_names_themes_and_flags_forgotten_sources(archive: Archive) -> None:
    archive.memory("webapp").remember("date-lib", "Use date-fns.", "decisions")
    archive.organize_memories(
        "# Essence\n- date-fns\n> source: memory/decisions/date-lib\n", workspace="webapp"
    )
    archive.tag_theme("Login Flow", "webapp", seeds=["handleLogin"])
    archive.memory("webapp").forget("date-lib", "decisions")
    async with Client(build_server(archive, cwd=CWD)) as client:
        r = await client.call_tool("bootstrap_workspace", {})
    assert r.structured_content["themes"] == ["Login Flow"]
    assert r.structured_content["missing_sources"] == ["memory/decisions/date-lib"]
    assert "cites memories that are gone: memory/decisions/date-lib" in r.content[0].text


SELF_EVIDENT = {  # parameters whose name says what they take: listed without a description
    "workspace",
    "limit",
    "max_output_chars",
    "max_chars",
    "since",
    "until",
    "theme",
    "after",
    "all_workspaces",
    "include_tools",
    "include_thinking",
    "key",
    "folder",
    "query",
    "tags",
    "description",
    "session_id",
    "min_size",
    "max_sampled_turns",
    "mistake",
    "correction",
}


async def test_every_tool_has_a_title_and_a_parameter_says_what_its_name_does_not(
    archive: Archive,
) -> None:
    async with Client(build_server(archive, cwd=CWD)) as client:
        tools = (await client.list_tools()).tools
    for t in tools:
        assert t.title and t.title != t.name, t.name
        bare = {p for p, v in t.input_schema["properties"].items() if not v.get("description")}
        assert bare <= SELF_EVIDENT, (t.name, bare - SELF_EVIDENT)
    search = next(t for t in tools if t.name == "search_context").description or ""
    assert "How X evolved: order=time (several topics: also)" in (search)


def test_the_server_answers_initialize_without_importing_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys, anyio\n"
        "from mcp import Client\n"
        "from archive_mcp.cli.main import main\n"
        "from archive_mcp.mcp.server import build_server\n"
        "from archive_mcp import Archive\n"
        "async def go():\n"
        "    async with Client(build_server(Archive(sys.argv[1], embedder=None), cwd='/')) as c:\n"
        "        assert len((await c.list_tools()).tools) == 24\n"
        "anyio.run(go)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'sklearn', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


async def test_a_cut_list_or_trace_says_how_many_and_holds_the_same_items(
    archive: Archive,
) -> None:
    import re

    for i in range(30):
        archive.tag_theme(f"theme {i:02d}", "webapp", references=[f"3f2c9a1e:{i % 3}"])
    refs = [
        f"{s}:{t}"
        for s, n in (
            ("3f2c9a1e", 3),
            ("b8e1d2c4", 2),
            ("session_2c7d", 3),
        )
        for t in range(n)
    ]
    archive.tag_theme("everything", "webapp", references=refs)
    async with Client(build_server(archive, cwd=CWD)) as client:
        listed = await client.call_tool("list_themes", {"max_output_chars": 900})
        trace = await client.call_tool(
            "trace_theme", {"theme": "everything", "max_output_chars": 2500}
        )
    shown = listed.structured_content["themes"]
    assert listed.content[0].text.splitlines()[-1] == (
        f"… {31 - len(shown)} more themes not shown ({len(shown)} of 31); raise max_output_chars"
    )
    assert (
        listed.content[0].text.count("\n- ") + 1 == len(shown)
        and listed.structured_content["truncated"]
    )
    text, data = trace.content[0].text, trace.structured_content
    events = re.findall(r"^- [\d-]+ [\d:]+ (\S+:\d+) ", text, re.M)
    # the text tells what the structure holds, each session by its short id
    assert [(e.split(":")[0], e.split(":")[1]) for e in events] == [
        (
            next(s for s in ("3f2c9a1e", "session_") if e["ref"].startswith(s)),
            e["ref"].split(":")[1],
        )
        for e in data["events"]
    ]
    first, newest = ("3f2c9a1e:0", "session_:2")
    assert events[0] == first and events[-1] == newest and 2 <= len(events) < 8
    hidden = 8 - len(events)
    assert data["not_shown"]["events"] == hidden
    assert f"… {hidden} more turns not shown ({8 - hidden} of 8); raise max_output_chars" in text


@pytest.mark.parametrize(
    ("text", "marked"),
    [
        ("use **git worktrees** here", "use **git worktrees** here"),  # the turn's own bold
        ("use git **worktrees** here", "use **git worktrees** here"),
        ("**git **worktrees****", "**git worktrees**"),
        ("git, then worktrees", "**git**, then **worktrees**"),
        ("the git/worktrees path", "the **git/worktrees** path"),
        ("keep __init__ and a*b", "keep __init__ and a*b"),
    ],
)
def test_snippet_marks_never_nest(text: str, marked: str) -> None:
    from archive_mcp.search.highlight import mark

    assert mark(text, {"git", "worktre", "worktree"}) == marked


async def test_the_server_reports_its_version(archive: Archive) -> None:
    from importlib.metadata import version

    async with Client(build_server(archive, cwd=CWD)) as client:
        info = client.server_info
    assert info is not None and info.name == "archive-mcp"
    assert info.version == version("agent-archive-mcp") and info.version


def test_the_version_falls_back_to_the_package_without_a_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    import archive_mcp
    from archive_mcp.mcp.server import server_version

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert server_version() == archive_mcp.__version__ == "0.1.0"


def test_a_text_cut_to_its_budget_says_how_much_is_left() -> None:
    from archive_mcp.mcp.toolkit import fit_one

    r = fit_one({"x": 1}, "word " * 400, budget=600)
    text = r.content[0].text
    assert len(text) <= 600 and text.endswith(
        f"… {2000 - len(text.splitlines()[0])} more characters not shown "
        f"({len(text.splitlines()[0])} of 2000); raise max_output_chars"
    )
