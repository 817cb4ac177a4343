"""The type checker passes on all three packages: workspaces, refiners and archive_mcp (the faces
included). Three core modules silence only Polars' scalar-union noise (see pyproject)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
MYPY = shutil.which("mypy") or str(Path(sys.prefix) / "bin" / "mypy")


@pytest.mark.skipif(not Path(MYPY).exists(), reason="mypy is in the test extra")
def test_mypy_is_clean_on_all_three_packages() -> None:
    result = subprocess.run([MYPY, "archive_mcp", "workspaces", "refiners"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
