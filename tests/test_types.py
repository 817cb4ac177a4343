"""The type checker passes on all three packages: workspaces, refiners and archive_mcp (the faces
included). Three core modules silence only Polars' scalar-union noise (see pyproject)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
MYPY = shutil.which("mypy") or str(Path(sys.prefix) / "bin" / "mypy")


@pytest.mark.skipif(not Path(MYPY).exists(), reason="mypy is in the test extra")
def test_mypy_is_clean_on_all_three_packages(tmp_path: Path) -> None:
    # mypy cannot follow setuptools' package-dir: check a copy laid out as the package installs
    tree = tmp_path / "archive_mcp"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "archive_mcp", tree, ignore=ignore)
    for room in ("refiners", "workspaces"):
        shutil.copytree(ROOT / room, tree / room, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    result = subprocess.run([MYPY, "archive_mcp"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
