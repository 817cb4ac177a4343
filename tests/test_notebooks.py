"""The notebooks show their plots inline and run to the end on any archive: the bundled sample
(pytest --nbmake runs them as they are, with the packaged model) and here a second, real-shaped
archive built from the Kimi fixtures, where theme discovery finds nothing and the notebook says so
instead of raising."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from archive_mcp import Archive

pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"


def _run(
    name: str, home: Path | None, monkeypatch: pytest.MonkeyPatch, skip: str | None = None
) -> list[dict]:
    """Execute a notebook (less the code cells that contain `skip`) and return its outputs."""
    if home is not None:
        monkeypatch.setenv("ARCHIVE_MCP_NOTEBOOK_HOME", str(home))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(NOTEBOOKS.parent), os.environ.get("PYTHONPATH", "")])
    )
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    if skip is not None:
        nb.cells = [c for c in nb.cells if c.cell_type != "code" or skip not in c.source]
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _files(home: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in home.rglob("*")
        if p.is_file()
    }


def _texts(outputs: list[dict]) -> str:
    return "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)


@pytest.fixture
def fixture_home(kimi_root: Path, kimi_code_root: Path, tmp_path: Path) -> Path:
    home = tmp_path / "fixture-archive"
    Archive(home, embedder=None).ingest(kimi_root, kimi_code_root)
    return home


def test_explore_notebook_shows_its_plots_inline_on_the_fixture_archive(
    fixture_home: Path, monkeypatch
) -> None:  # noqa: ANN001
    outputs = _run("01_explore_archive.ipynb", fixture_home, monkeypatch)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3  # activity, tools, kinds
    assert "<Figure size" not in _texts(
        [o for o in outputs if "image/png" not in o.get("data", {})]
    )


def test_theme_notebook_says_there_is_nothing_to_trace_instead_of_raising(
    fixture_home: Path, monkeypatch
) -> None:  # noqa: ANN001
    before = _files(fixture_home)
    outputs = _run("02_theme_timelines.ipynb", fixture_home, monkeypatch)
    text = _texts(outputs)
    assert "No themes in webapp" in text and "No theme to trace in this archive." in text
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert f"Working on a copy of {fixture_home}: themes go to " in text
    assert _files(fixture_home) == before  # discovery and tagging wrote into the copy only


def test_search_notebook_runs_the_own_query_on_archive_home(
    fixture_home: Path, monkeypatch
) -> None:  # noqa: ANN001
    # the labelled evaluation (minutes of embedding) is left out: `table` is its result
    outputs = _run("03_search_quality.ipynb", fixture_home, monkeypatch, skip="table")
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert f"Searching {fixture_home} (all workspaces)" in _texts(outputs)
