"""House style is checked, not hoped for: `ruff check` over the whole repo (notebooks included) and
`ruff format --check` (the size rules count formatted lines)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.prefix) / "bin" / "ruff").exists(),
    reason="ruff is in the test extra",
)
def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.prefix) / "bin" / "ruff")
    result = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    formatted = subprocess.run(
        [ruff, "format", "--check", str(ROOT)], capture_output=True, text=True
    )
    assert formatted.returncode == 0, formatted.stdout[-3000:]
