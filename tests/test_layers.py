"""The house holds its rooms: `workspaces`, `refiners` and `errors` import nothing above them; the
core (ingest, search, themes, memory, the Archive) never imports a face (mcp, cli); no module
grows past 450 lines and no function of a face past 60."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "archive_mcp"
BASE = ("archive_mcp.errors", "archive_mcp.workspaces", "archive_mcp.refiners")
FACES = ("archive_mcp.mcp", "archive_mcp.cli", "archive_mcp.__main__")


def _modules() -> dict[str, Path]:
    out = {}
    paths = [Path(d) / f for d, _, files in os.walk(PACKAGE, followlinks=True)  # through the symlinks
             for f in files if f.endswith(".py")]
    for path in sorted(paths):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("archive_mcp", *parts)).removesuffix(".__init__")
        out[name] = path
    return out


def _layer(module: str) -> int:
    if module.startswith(BASE):
        return 0
    if module.startswith(FACES):
        return 2
    return 1


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m == "archive_mcp" or m.startswith("archive_mcp.")}


def test_the_layers_hold() -> None:
    modules = _modules()
    assert "archive_mcp.refiners.refine" in modules and "archive_mcp.mcp.server" in modules
    broken = [f"{name} (layer {_layer(name)}) imports {dep} (layer {_layer(dep)})"
              for name, path in modules.items() for dep in sorted(_imports(path))
              if _layer(dep) > _layer(name) and dep != "archive_mcp"]
    assert broken == []


def test_the_library_never_imports_a_face_even_inside_a_function() -> None:
    for name, path in _modules().items():
        if _layer(name) < 2:
            assert not any(dep.startswith(FACES) for dep in _imports(path)), name


@pytest.mark.parametrize("limit", [450])
def test_no_module_is_longer_than_450_lines(limit: int) -> None:
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit}
    assert long == {}


def test_no_function_in_a_face_is_longer_than_60_lines() -> None:
    long = {}
    for name, path in _modules().items():
        if _layer(name) == 2:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    size = (node.end_lineno or node.lineno) - node.lineno + 1
                    if size > 60:
                        long[f"{name}.{node.name}"] = size
    assert long == {}
