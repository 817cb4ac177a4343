"""The sdist carries what its tests need, and they pass from the unpacked sdist; the licence ships."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent


def test_the_sdist_runs_its_own_tests(tmp_path: Path) -> None:
    from setuptools import build_meta

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        name = build_meta.build_sdist(str(tmp_path / "dist"))
    finally:
        os.chdir(cwd)
    with tarfile.open(tmp_path / "dist" / name) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
        tar.extractall(tmp_path / "src", filter="data")
    for needed in (
        "LICENSE",
        "README.md",
        ".ci/run",
        "tests/conftest.py",
        "tests/fixtures/kimi",
        "notebooks/make_notebooks.py",
        "notebooks/02_theme_timelines.ipynb",
        "refiners/refine.py",
        "workspaces/registry.py",
        "archive_mcp/sample/kimi/kimi.json",
    ):
        assert needed in members, needed
    assert not any(
        m.startswith(("archive_mcp/refiners", "archive_mcp/workspaces")) for m in members
    )
    src = tmp_path / "src" / name.removesuffix(".tar.gz")
    # install the unpacked sdist as a user would (package-dir maps refiners/ and workspaces/ into
    # the package), then run its tests against that install, not against the source folders
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--target", str(site), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    assert (site / "archive_mcp" / "refiners" / "refine.py").is_file()
    assert (site / "archive_mcp" / "workspaces" / "registry.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [
            sys.executable,
            "-P",  # the source folder is not on sys.path: the installed copy answers
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "tests/test_docs.py",
            "tests/test_layers.py",
            "tests/test_workspaces.py",
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout.splitlines()[-1]


def test_the_mit_licence_ships() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and 'license = "MIT"' in (
        ROOT / "pyproject.toml"
    ).read_text(encoding="utf-8")
