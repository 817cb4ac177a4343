"""Every turn reference `search_context` prints loads back through `load_turn_context`, over the
real stdio transport of `archive-mcp serve` (a subprocess on a fixture archive in a tmp home)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from archive_mcp import Archive
from tests.cited import cited

SEARCHES = [
    {"query": "login form", "workspace": "webapp"},
    {"query": "login form", "workspace": "webapp", "detail": "compact"},
    {"query": "data loader", "workspace": "ml-pipeline", "detail": "full"},
    {"query": "test", "workspace": "all"},
    {"query": "why did the epoch time double", "workspace": "all", "detail": "compact"},
]


@pytest.mark.anyio
@pytest.mark.slow
async def test_every_reference_search_prints_loads_over_stdio(archive: Archive) -> None:
    server = Path(sys.executable).parent / "archive-mcp"  # the installed console script
    env = {**os.environ, "ARCHIVE_MCP_HOME": str(archive.home), "ARCHIVE_MCP_EMBEDDER": "none"}
    params = StdioServerParameters(command=str(server), args=["serve"], env=env, cwd="/")
    printed: dict[str, str | None] = {}
    async with Client(params, read_timeout_seconds=60) as client:
        for args in SEARCHES:
            r = await client.call_tool("search_context", args)
            assert not r.is_error, r.content[0].text
            found = cited(r.content[0].text)
            assert len(found) == len(r.structured_content["hits"]) > 0
            printed.update({ref: ws or args["workspace"] for ref, ws in found})
        assert len(printed) >= 8 and any("[" in ref for ref in printed)  # a subagent's turn too
        for ref, ws in printed.items():  # one at a time, with the workspace the text named
            r = await client.call_tool("load_turn_context", {"references": [ref], "workspace": ws})
            assert not r.is_error, (ref, r.content[0].text)
            assert r.content[0].text.startswith(f"## {ref} "), (ref, r.content[0].text[:200])
        cross = [ref for ref, ws in printed.items()]  # four at a time, no workspace: cwd is "/"
        headers = []
        for i in range(0, len(cross), 4):
            args = {"references": cross[i : i + 4], "max_chars": 6000}
            r = await client.call_tool("load_turn_context", args)
            assert not r.is_error, r.content[0].text
            headers += re.findall(r"^## (\S+:\d+(?: \[[^\]]+\])?) ", r.content[0].text, re.M)
        assert sorted(headers) == sorted(cross)
