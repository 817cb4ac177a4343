"""The MCP server: in memory through mcp.Client, and over real stdio in a subprocess."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners import READERS
from archive_mcp.refiners.refine import REFINER
from archive_mcp.refiners.text import clip
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from archive_mcp import Archive
from archive_mcp.mcp import toolkit
from archive_mcp.mcp.server import build_server
from tests.cited import cited
from tests.cited import refs as cited_refs

pytestmark = pytest.mark.anyio

LOGIN = "session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13"
LOADER = "6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"
MEMORY_TOOLS = {
    "remember",
    "recall",
    "search_memory",
    "recall_recent",
    "list_memories",
    "forget",
    "save_lesson",
    "organize_memories",
    "bootstrap_workspace",
    "sync_workspace_index",
    "memory_stats",
    "export_memory",
    "import_memory",
}
THEME_TOOLS = {"tag_theme", "trace_theme", "list_themes", "discover_themes", "delete_theme"}
TOOLS = (
    {
        "search_context",
        "load_turn_context",
        "refine_session_turns",
        "list_workspaces",
        "list_sessions",
        "grep_turns",
    }
    | MEMORY_TOOLS
    | THEME_TOOLS
)
READ_ONLY = {
    "search_context",
    "load_turn_context",
    "list_workspaces",
    "list_sessions",
    "grep_turns",
    "recall",
    "search_memory",
    "recall_recent",
    "list_memories",
    "memory_stats",
    "trace_theme",
    "list_themes",
}
README = Path(__file__).parent.parent / "README.md"


@pytest.fixture
def server(archive: Archive):  # noqa: ANN201
    return build_server(archive, cwd="/home/alice/projects/webapp/src")


async def test_tools_have_schemas_annotations_and_descriptions(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.description and t.input_schema, t.name
        assert t.output_schema is None, t.name  # a reply's structured content names its fields
        assert t.annotations is not None
    assert {n for n, t in tools.items() if t.annotations.read_only_hint} == READ_ONLY
    assert {n for n, t in tools.items() if t.annotations.destructive_hint} == {
        "forget",
        "delete_theme",
    }
    for name in TOOLS - {"list_workspaces"}:
        assert "workspace" in tools[name].input_schema["properties"], name


async def test_search_context_defaults_to_the_servers_cwd_workspace(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "search_context", {"query": "handleLogin bound twice", "limit": 2}
        )
    assert not r.is_error
    data = r.structured_content
    assert data["realized_mode"] == "hybrid" and data["fallback_reason"] is None
    assert [(h["session_id"], h["turn"]) for h in data["hits"]][0] == (LOGIN, 0)
    assert {h["workspace_id"] for h in data["hits"]} == {"131148b1f826743e761a0be6ad66cb94"}
    text = r.content[0].text
    assert text.splitlines()[:3] == [
        "2 hits (mode hybrid)",
        "session_ [kimi-code] 2026-03-16",  # LOGIN by the shortest prefix no other id starts with
        ":0 10:00 — Why is the login form submitting twice?",
    ]


@pytest.mark.parametrize("budget", [500, 800, 2000])
async def test_search_context_text_stays_within_max_output_chars(server, budget: int) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "search_context",
            {
                "query": "test date login form",
                "limit": 20,
                "detail": "full",
                "max_output_chars": budget,
            },
        )
    assert len(r.content[0].text) <= budget
    assert len(r.structured_content["hits"]) == len(cited_refs(r.content[0].text))
    if r.structured_content["truncated"]:
        assert " more hits not shown (" in r.content[0].text


async def test_compact_detail_keeps_one_line_of_the_users_words_and_drops_the_answer(
    server,
) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool("search_context", {"query": "login", "detail": "compact"})
        normal = await client.call_tool("search_context", {"query": "login"})
    hits = r.structured_content["hits"]
    asked = {(h["session_id"], h["turn"]): h["asked"] for h in normal.structured_content["hits"]}
    assert hits and all(h["answer"] == h["snippet"] == h["summary"] == "" for h in hits)
    assert [h["asked"] for h in hits] == [
        clip(asked[h["session_id"], h["turn"]], 100) for h in hits
    ]
    assert r.content[0].text.splitlines()[1:4] == [
        "session_ [kimi-code] 2026-03-16",
        ":0 10:00 — Why is the login form submitting twice?",
        ":1 10:00 (interrupted) — Fix it and add a regression test.",
    ]


async def test_a_default_search_shows_each_hit_as_the_users_words_and_the_answers_best_passage(
    server,  # noqa: ANN001
) -> None:
    async with Client(server) as client:
        r = await client.call_tool("search_context", {"query": "login"})
    assert r.content[0].text.splitlines()[:6] == [
        "6 hits (mode hybrid)",
        "session_ [kimi-code] 2026-03-16",
        ":0 10:00 — Why is the login form submitting twice?",
        "  → `handleLogin` is bound twice: `<form onSubmit>` (Login.tsx:22) and the submit "
        "button's `onClick` (Login.tsx:31). Remove the `onClick`; the form submit already "
        "covers Enter and clicks.",
        ":1 10:00 (interrupted) — Fix it and add a regression test.",
        "  → Removing the duplicate onCl",
    ]
    assert r.structured_content["hits"][0]["asked"] == "Why is the **login** form submitting twice?"
    assert "score=" not in r.content[0].text
    assert len(r.structured_content["hits"]) == 6 and not r.structured_content["truncated"]


async def test_order_time_lists_the_top_hits_oldest_first(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        ranked = await client.call_tool("search_context", {"query": "login", "limit": 4})
        timed = await client.call_tool(
            "search_context", {"query": "login", "limit": 4, "order": "time"}
        )
    key = [(h["started_at"], h["session_id"], h["turn"]) for h in ranked.structured_content["hits"]]
    refs = [f"{s}:{t}" for _, s, t in sorted(key)]
    assert refs == [
        "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17:1",
        f"{LOGIN}:0",
        f"{LOGIN}:1",
        f"{LOGIN}:2",
    ]
    assert cited_refs(timed.content[0].text) == [
        "3f2c9a1e:1",
        "session_:0",
        "session_:1",
        "session_:2",
    ]
    assert [f"{h['session_id']}:{h['turn']}" for h in timed.structured_content["hits"]] == refs


@pytest.mark.parametrize(
    "args, message",
    [
        (
            {"query": "x", "workspace": "nope"},
            "no workspace matches 'nope'. Known workspaces: ml-pipeline",
        ),
        ({"query": "x", "mode": "magic"}, "mode"),
        ({"query": "   "}, "the query is empty"),
        ({"query": "x", "theme": "../../etc/passwd"}, "no theme named '../../etc/passwd'"),
        ({"query": "x", "limit": 0}, "limit"),
    ],
)
async def test_search_context_bad_input_is_a_tool_error(server, args: dict, message: str) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool("search_context", args)
        assert r.is_error and message in r.content[0].text
        ok = await client.call_tool("search_context", {"query": "login"})  # the server survives
        assert not ok.is_error


async def test_load_turn_context_returns_turns_and_reports_bad_references(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "load_turn_context",
            {
                "workspace": "ml-pipeline",
                "after": 1,
                "references": [
                    {"session_id": LOADER, "turn": 0},
                    {"session_id": LOADER, "turn": 9},
                ],
            },
        )
    assert not r.is_error
    data = r.structured_content
    assert [(t["turn"], t["requested"]) for t in data["turns"]] == [(0, True), (1, False)]
    assert data["not_found"] == [
        {
            "session_id": LOADER,
            "turn": 9,
            "agent": "main",
            "reason": f"turn 9 is not in session {LOADER} (agent main); valid turns: 0..1",
        }
    ]
    assert re.search(r"^Tool Shell command=\S.* \[ok\] → \S", r.content[0].text, re.M)


async def test_load_turn_context_rejects_bad_shapes(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        for args in (
            {"references": []},
            {"references": [{"turn": 1}]},
            {"references": [{"session_id": "x", "turn": "one"}]},
        ):
            r = await client.call_tool("load_turn_context", args)
            assert r.is_error


async def test_list_workspaces_and_sessions(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        ws = await client.call_tool("list_workspaces", {})
        sessions = await client.call_tool("list_sessions", {"workspace": "webapp", "limit": 2})
    assert [
        (w["name"], w["sessions"], w["turns"]) for w in ws.structured_content["workspaces"]
    ] == [("ml-pipeline", 2, 6), ("webapp", 3, 8)]
    assert [s["session_id"] for s in sessions.structured_content["sessions"]] == [
        LOGIN,
        "b8e1d2c4-5a6f-4d3e-8b7a-9c0d1e2f3a4b",
    ]


async def test_refine_session_turns_falls_back_without_sampling(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "refine_session_turns", {"session_id": LOGIN, "use_sampling": True}
        )
        bad = await client.call_tool("refine_session_turns", {"session_id": LOGIN, "turns": [7]})
        unknown = await client.call_tool("refine_session_turns", {"session_id": "nope"})
    data = r.structured_content
    assert (data["refined"], data["sampled"]) == (3, 0)
    assert (
        data["fallback_reason"]
        == "the client does not support sampling: kept the extractive summaries"
    )
    assert bad.is_error and "valid turns: 0..2" in bad.content[0].text
    assert unknown.is_error and "no session 'nope' in workspace" in unknown.content[0].text


async def test_refine_session_turns_uses_client_sampling_when_offered(
    server, archive: Archive
) -> None:  # noqa: ANN001
    from mcp_types import CreateMessageResult, TextContent

    async def sampler(context, params):  # noqa: ANN001, ANN202
        return CreateMessageResult(
            role="assistant",
            model="test-model",
            content=TextContent(
                type="text",
                text=json.dumps(
                    [
                        {
                            "asked": "why the login form submits twice",
                            "did": "Read LoginForm.tsx",
                            "outcome": "a double click sends two requests",
                        },
                        "LLM summary two",
                    ]
                ),
            ),
        )

    async with Client(server, sampling_callback=sampler) as client:
        r = await client.call_tool(
            "refine_session_turns",
            {"session_id": LOGIN, "use_sampling": True, "max_sampled_turns": 2},
        )
    data = r.structured_content
    assert data["sampled"] == 2, data
    assert [s["refiner"] for s in data["summaries"]] == [f"{REFINER}+sampling@1"] * 2 + [REFINER]
    row = (
        archive.turns("webapp")
        .filter(__import__("polars").col("session_id") == LOGIN)
        .sort("turn")
        .collect()
    )
    assert row["summary"][0] == (
        "Asked: why the login form submits twice Did: Read LoginForm.tsx "
        "Outcome: a double click sends two requests"
    )
    # A batch refine keeps the model's summaries while the turns are unchanged.
    assert archive.refine("webapp", session=LOGIN, force=True, embed=False).rows_changed == 0
    row = (
        archive.turns("webapp")
        .filter(__import__("polars").col("session_id") == LOGIN)
        .sort("turn")
        .collect()
    )
    assert row["refiner"].to_list() == [f"{REFINER}+sampling@1"] * 2 + [REFINER]


def test_readme_lists_every_tool() -> None:
    listed = set(re.findall(r"^\| `(\w+)` \|", README.read_text(encoding="utf-8"), re.M))
    assert TOOLS <= listed


async def test_stdio_server_round_trip(archive: Archive, tmp_path: Path) -> None:
    env = {**os.environ, "ARCHIVE_MCP_HOME": str(archive.home), "ARCHIVE_MCP_EMBEDDER": "none"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "archive_mcp", "serve"], env=env, cwd="/"
    )
    async with Client(params, read_timeout_seconds=60) as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == TOOLS
        r = await client.call_tool(
            "search_context", {"query": "turbojpeg", "workspace": "ml-pipeline"}
        )
        assert not r.is_error
        assert r.structured_content["hits"][0]["session_id"] == LOADER
        assert r.structured_content["realized_mode"] == "lexical+fuzzy"
        bad = await client.call_tool("search_context", {"query": "x"})  # cwd "/" is no workspace
        assert bad.is_error and "is not an archived workspace" in bad.content[0].text
        r = await client.call_tool(
            "load_turn_context",
            {"workspace": "webapp", "references": [{"session_id": LOGIN, "turn": 0}]},
        )
        assert json.dumps(r.structured_content).count("handleLogin") >= 1
        found = await client.call_tool("search_context", {"query": "login", "workspace": "all"})
        printed = cited(found.content[0].text)
        assert printed and {ws for _, ws in printed} == {"webapp"}
        for ref, _ in printed:  # cwd "/" is no workspace: each printed reference still loads
            r = await client.call_tool("load_turn_context", {"references": [ref]})
            assert not r.is_error and r.content[0].text.startswith(f"## {ref} ")


def _stdio_replies(archive: Archive, lines: list[bytes]) -> list[dict[str, Any]]:
    """Each raw line sent to `archive-mcp serve` over stdio after initialize, and the replies."""
    import subprocess

    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    env = {**os.environ, "ARCHIVE_MCP_HOME": str(archive.home), "ARCHIVE_MCP_EMBEDDER": "none"}
    body = b"".join(json.dumps(m).encode() + b"\n" for m in (hello, done)) + b"".join(
        line + b"\n" for line in lines
    )
    # stdin stays open until every line is answered: at EOF the server may stop before it
    # replies to the last request
    proc = subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "serve", "--no-follow"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
    )
    timer = threading.Timer(120, proc.kill)
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(body)
        proc.stdin.flush()
        replies = [proc.stdout.readline() for _ in range(len(lines) + 1)]
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        timer.cancel()
        proc.kill()
    return [json.loads(line) for line in replies[1:] if line]


def test_a_line_nested_100k_deep_or_not_json_gets_an_error_reply_over_stdio(
    archive: Archive,
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lines = [
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_context",'
        b'"arguments":{"query":' + deep.encode() + b"}}}",
        b'{"jsonrpc": "2.0", "id": "a\\"b", "method": ',
        b'{"jsonrpc":"2.0","id":8,"method":3}',
        b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}',
    ]
    replies = _stdio_replies(archive, lines)
    assert replies[:3] == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32700,
                "message": "Parse error: recursion limit exceeded at line 1 column 300",
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 'a"b',
            "error": {
                "code": -32700,
                "message": "Parse error: EOF while parsing a value at line 2 column 0",
            },
        },
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid request: not a JSON-RPC 2.0 request, notification or response",
            },
        },
    ]
    assert replies[3]["id"] == 9 and len(replies[3]["result"]["tools"]) == 24  # still serving


def test_request_id_is_read_at_the_top_level_only() -> None:
    from archive_mcp.mcp.stdio import request_id

    assert request_id('{"method":"id","params":{"id":9},"id":"abc"}') == "abc"
    assert request_id('{"params":' + "[" * 50_000 + "]" * 50_000 + ',"id":-3}') == -3
    assert [request_id(t) for t in ('{"id":null}', "[1]", '{"id":1.5}', '{"a":"')] == [None] * 4


async def test_memory_resources_and_decision_prompt(server, archive: Archive) -> None:  # noqa: ANN001
    archive.memory("webapp").remember("jpeg", "Use turbojpeg.", "decisions")
    archive.organize_memories("# Essence\n- turbojpeg\n", workspace="webapp")
    async with Client(server) as client:
        essence = await client.read_resource("essence://essence")
        memory = await client.read_resource("memory://decisions/jpeg")
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("memory-decision-check", {"decision": "switch to PIL"})
    assert essence.contents[0].text == "# Essence\n- turbojpeg\n"
    assert "Use turbojpeg." in memory.contents[0].text
    assert [p.name for p in prompts.prompts] == ["memory-decision-check", "memory-theme-trace"]
    assert "You are about to decide: switch to PIL" in prompt.messages[0].content.text


async def test_http_server_on_localhost(archive: Archive) -> None:
    import socket
    import subprocess

    import anyio

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "ARCHIVE_MCP_HOME": str(archive.home),
        "ARCHIVE_MCP_EMBEDDER": "none",
        "ARCHIVE_MCP_TOKEN": "test-token",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "serve", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):  # a loaded machine takes a while to start the server
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.1)
        http = create_mcp_http_client(headers={"Authorization": "Bearer test-token"})
        async with Client(
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
        ) as client:
            r = await client.call_tool(
                "search_context", {"query": "turbojpeg", "workspace": "ml-pipeline"}
            )
        assert r.structured_content["hits"][0]["session_id"] == LOADER
    finally:
        proc.terminate()
        proc.wait(10)


def test_fit_lists_the_same_items_in_the_text_and_the_structured_content() -> None:
    """Strings are clipped before items go, and items go from both faces at once: the structured
    content never lists 5 hits while the text shows 30, and the text never says "0 more cut"."""
    from archive_mcp.mcp.toolkit import fit, json_len

    items = [{"id": i, "text": "word " * 200, "tags": list(range(30))} for i in range(30)]
    r = fit(
        items,
        lambda kept, cut: "\n".join(f"- {x['id']}" for x in kept),
        lambda kept, cut: {"items": kept, "truncated": cut},
        4000,
    )
    data, text = r.structured_content, r.content[0].text
    assert [x["id"] for x in data["items"]] == list(range(30)) and text.count("- ") == 30
    assert "not shown" not in text and data["truncated"] is True and json_len(data) <= 4000
    assert all(len(x["text"]) <= 60 and len(x["tags"]) == 5 for x in data["items"])
    r = fit(
        items,
        lambda kept, cut: "\n".join(f"- {x['id']}" for x in kept),
        lambda kept, cut: {"items": kept, "truncated": cut},
        1000,
    )
    data, text = r.structured_content, r.content[0].text
    assert (
        0 < len(data["items"]) < 30
        and text.count("- ") == len(data["items"])
        and text.endswith(
            f"… {30 - len(data['items'])} more items not shown ({len(data['items'])} of 30); "
            "raise max_output_chars"
        )
    )


async def test_every_turn_reference_the_text_prints_loads_back(server, archive: Archive) -> None:  # noqa: ANN001
    archive.tag_theme("login", "webapp", references=[f"{LOGIN}:0", "session_2c7d1e94:1"])
    async with Client(server) as client:
        hits = await client.call_tool(
            "search_context",
            {"query": "test", "all_workspaces": True, "limit": 20, "max_output_chars": 6000},
        )
        sessions = await client.call_tool("list_sessions", {"workspace": "ml-pipeline"})
        trace = await client.call_tool("trace_theme", {"theme": "login"})
        text = hits.content[0].text
        assert (
            "session_ [kimi-code] (workspace webapp) 2026-03-16\n"
            ":2 10:00 — Just remove the onClick, no test.\n"
        ) in text
        assert {ws for _, ws in cited(text)} == {"webapp", "ml-pipeline"}
        events = re.findall(r"^- [\d-]+ [\d:]+ (\S+:\d+) ", trace.content[0].text, re.M)
        refs = cited_refs(text) + events
        refs += [f"{s}:0" for s in re.findall(r"^- (\S+) \d{4}-", sessions.content[0].text, re.M)]
        assert len(refs) == 9 + 2 + 2  # 9 hits shown within 6,000 characters
        for ref in refs:  # no workspace given: the session is found where it is unique
            r = await client.call_tool("load_turn_context", {"references": [ref]})
            assert not r.is_error, (ref, r.content[0].text)
            got = r.structured_content["turns"][0]
            sid, turn = ref.split(":")
            assert got["session_id"].startswith(sid) and got["turn"] == int(turn)
            if ref not in events:  # as the text printed it, so the load's header prints it
                assert r.content[0].text.startswith(f"## {ref} "), (ref, r.content[0].text[:80])
        mixed = await client.call_tool(
            "load_turn_context",
            {
                "references": [
                    "0a1b2c3d:2",  # a unique prefix, in another workspace than the cwd's
                    {"session_id": "session_2c7d", "turn": 1},
                    "3f2c9a1e-…:0",  # as a narrow table clips an id
                ]
            },
        )
        assert [(t["session_id"], t["turn"]) for t in mixed.structured_content["turns"]] == [
            ("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", 2),
            ("session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13", 1),
            ("3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17", 0),
        ]
        bad = await client.call_tool("load_turn_context", {"references": ["nope:0"]})
        assert bad.content[0].text == (
            "no session 'nope' in any workspace; search for its turns or list the sessions"
        )
        garbled = await client.call_tool("load_turn_context", {"references": ["no-turn"]})
        assert garbled.is_error and "SESSION:TURN" in garbled.content[0].text
        tagged = await client.call_tool(
            "tag_theme", {"theme": "dates", "references": ["3f2c9a1e:0"]}
        )
        assert tagged.content[0].text.splitlines()[1] == "+ 3f2c9a1e:0 (reference)"  # as cited
        await client.call_tool(
            "remember", {"key": "dates", "content": "pad months", "sources": ["3f2c9a1e:0"]}
        )
        linked = await client.call_tool("trace_theme", {"theme": "dates"})
    assert archive.memory("webapp").recall("dates").sources == [
        "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17:0"
    ]
    assert linked.structured_content["memories"] == ["memory/knowledge/dates"]


def _claude_turn(home: Path, prompt: str, output: str, answer: str) -> Path:
    """A Claude Code session of one turn: the request, a Bash call with a long output, the answer."""

    def rec(kind: str, content: Any, sec: int, mid: str = "") -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if mid:
            message["id"] = mid
        return {
            "type": kind,
            "sessionId": "c0ffee00-1111-4222-8333-444455556666",
            "cwd": "/home/alice/projects/cache",
            "version": "2.1.9",
            "timestamp": f"2026-03-20T10:00:{sec:02d}Z",
            "uuid": f"u{sec}",
            "message": message,
        }

    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make bench"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": output}
    records = [
        rec("user", prompt, 0),
        rec("assistant", [call], 1, "m1"),
        rec("user", [result], 2),
        rec("assistant", [{"type": "text", "text": answer}], 3, "m2"),
    ]
    path = home / ".claude" / "projects" / "-home-alice-projects-cache" / "c0ffee00.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return home / ".claude"


async def test_load_turn_context_gives_the_words_whole_and_each_call_one_line(
    tmp_path: Path, fake_embedder: Any
) -> None:
    prompt = ("Which cache should the feed use, option A (read-through) or option B? " * 8).strip()
    answer = "I measured both under the bench load. " * 30 + "Decision: let's use Option B."
    output = "\n".join(f"bench row {i:05d} p50=41.{i % 10}ms" for i in range(2000))
    archive = Archive(embedder=fake_embedder)
    archive.ingest(_claude_turn(tmp_path / "agent-home", prompt, output, answer))
    async with Client(build_server(archive, cwd="/home/alice/projects/cache")) as client:
        for budget in (4000, 6000):
            r = await client.call_tool(
                "load_turn_context", {"references": ["c0ffee00:0"], "max_chars": budget}
            )
            text, data = r.content[0].text, r.structured_content
            turn = data["turns"][0]
            assert turn["user_text"] == prompt and turn["assistant_text"] == answer
            assert text.endswith(
                f"User: {prompt}\nAssistant: {answer}\n"
                "Tool Bash command=make bench [ok] → bench row 00000 p50=41.0ms"
            )
            assert turn["tool_calls"] == [
                {
                    "name": "Bash",
                    "arguments": "command=make bench",
                    "status": "ok",
                    "result": "bench row 00000 p50=41.0ms",
                    "digest": True,
                    "calls": 1,
                }
            ]
        for budget in (4000, 6000):  # full: the output fills what the words leave
            r = await client.call_tool(
                "load_turn_context",
                {"references": ["c0ffee00:0"], "max_chars": budget, "detail": "full"},
            )
            text, data = r.content[0].text, r.structured_content
            assert f"User: {prompt}\nAssistant: {answer}\nTool Bash [ok]" in text
            assert data["turns"][0]["tool_calls"][0]["result"].startswith("bench row 00000")
            assert 0.8 * budget <= len(text) <= budget and json.dumps(data).__len__() <= budget


async def test_load_turn_context_at_its_least_budget_shows_the_turns_head_not_nothing(
    tmp_path: Path, fake_embedder: Any
) -> None:
    prompt = "Which cache should the feed use? " * 20
    answer = "I measured both under the bench load. " * 60 + "Decision: let's use Option B."
    archive = Archive(embedder=fake_embedder)
    archive.ingest(_claude_turn(tmp_path / "agent-home", prompt, "ok", answer))
    async with Client(build_server(archive, cwd="/home/alice/projects/cache")) as client:
        r = await client.call_tool(
            "load_turn_context", {"references": ["c0ffee00:0"], "max_chars": 1000}
        )
        text, data = r.content[0].text, r.structured_content
        assert not r.is_error and len(data["turns"]) == 1
        assert text.startswith("## c0ffee00:0 ") and "\nUser: Which cache" in text
        assert len(text) <= 1000 and toolkit.json_len(data) <= 1000
        r = await client.call_tool(
            "load_turn_context", {"references": ["c0ffee00:0"], "max_chars": 999}
        )
        assert r.is_error and "greater than or equal to 1000 (got 999)" in r.content[0].text


async def test_tools_list_is_lean_and_keeps_every_tool(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        listed = await client.list_tools()
    data = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
    # 18,493 characters with grep_turns (16,756 before it; 53,386 once with 23 tools), under 20k
    assert len(json.dumps(data)) <= 18_500
    tools = {t["name"]: t for t in data["tools"]}
    assert set(tools) == TOOLS
    for name, t in tools.items():
        sentences = re.findall(r"[.!?](?:\s|$)", t["description"])
        assert 1 <= len(sentences) <= 2, (name, t["description"])
        assert "title" not in _keywords(t["inputSchema"]), name
        assert "outputSchema" not in t, name
        detail = t["inputSchema"]["properties"].get("detail", {}).get("description", "")
        assert name == "search_context" or "scores" not in detail, name
    source = tools["search_context"]["inputSchema"]["properties"]["source"]
    assert source == {
        "type": "string",
        "description": "One agent product: " + ", ".join(READERS) + ".",
    }
    assert tools["list_sessions"]["inputSchema"]["properties"]["workspace"] == {"type": "string"}


def _keywords(node: object) -> set[str]:
    """The JSON-schema keywords used anywhere in `node` (property names are not keywords)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("properties", "$defs"):
                for sub in v.values():
                    out |= _keywords(sub)
            else:
                out |= {k} | _keywords(v)
    elif isinstance(node, list):
        for v in node:
            out |= _keywords(v)
    return out


# LOGIN's turn 0 read with a word its answer and its Grep call hold: the call as its digest with
# the line that holds the word
LOGIN_MATCHED = (
    "## session_:0 2026-03-16 10:00\n"
    "User: Why is the login form submitting twice?\n"
    "Assistant: `handleLogin` is bound twice: `<form onSubmit>` (Login.tsx:22) and the submit "
    "button's `onClick` (Login.tsx:31). Remove the `onClick`; the form submit already covers "
    "Enter and clicks.\n"
    "Tool Grep path=src/pages, pattern=onSubmit|handleLogin [ok] → src/pages/Login.tsx:31:  "
    '<button onClick={handleLogin} type="submit">'
)


async def test_a_range_is_scanned_and_says_how_to_read_a_turn_whole(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "load_turn_context", {"references": [f"{LOGIN}:0-2"], "matching": "onClick"}
        )
    assert r.content[0].text == (
        LOGIN_MATCHED + "\n"
        # the thinking's passage that holds the word, unasked: a scan under matching shows it
        "Thinking: Likely both an onSubmit handler and a button onClick fire.\n\n"
        "## session_:2 2026-03-16 10:00 open\n"
        "User: Just remove the onClick, no test.\n"
        "Assistant: "
    )


async def test_compact_under_matching_shows_the_call_that_holds_the_words(server) -> None:  # noqa: ANN001
    async with Client(server) as client:
        r = await client.call_tool(
            "load_turn_context",
            {"references": [f"{LOGIN}:0"], "detail": "compact", "matching": "Login.tsx:31"},
        )
    assert r.content[0].text == LOGIN_MATCHED
