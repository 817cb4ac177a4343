"""The house holds its rooms, each layer importing only from those below it or its own:

    0  errors, workspaces, refiners, schema, settings (the base: no archive_mcp module above)
    1  ingest (archive and refine the raw logs)
    2  search, refs (find turns, read them back)
    3  themes, memory, frames, render, plot (what is made of the turns)
    4  archive (the facade) and the library's entry points: live, doctor, install, demo,
       synthetic, sample, the package itself
    5  the faces: mcp, cli, ui, __main__

No import runs back up a layer (not even inside a function); every module has a layer; no module
imports another that imports it back (at module level); no module grows past 600 formatted lines
and no function body of a face past 60. `refiners/` and `workspaces/` sit at the top of the repo
and install as `archive_mcp.refiners` and `archive_mcp.workspaces` (setuptools' package-dir): no
symlink anywhere in the tree and one module identity each."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
# package name -> folder in the repo, as pyproject's package-dir maps them
ROOMS = {
    "archive_mcp": ROOT / "archive_mcp",
    "archive_mcp.refiners": ROOT / "refiners",
    "archive_mcp.workspaces": ROOT / "workspaces",
}
LAYERS: dict[str, int] = {
    "archive_mcp.errors": 0,
    "archive_mcp.workspaces": 0,
    "archive_mcp.refiners": 0,
    "archive_mcp.schema": 0,
    "archive_mcp.settings": 0,
    "archive_mcp.ingest": 1,
    "archive_mcp.search": 2,
    "archive_mcp.refs": 2,
    "archive_mcp.themes": 3,
    "archive_mcp.memory": 3,
    "archive_mcp.frames": 3,
    "archive_mcp.render": 3,
    "archive_mcp.plot": 3,
    "archive_mcp.archive": 4,
    "archive_mcp.live": 4,
    "archive_mcp.doctor": 4,
    "archive_mcp.install": 4,
    "archive_mcp.install_yaml": 4,
    "archive_mcp.demo": 4,
    "archive_mcp.synthetic": 4,
    "archive_mcp.sample": 4,
    "archive_mcp": 4,  # the package's __init__: the public names
    "archive_mcp.mcp": 5,
    "archive_mcp.cli": 5,
    "archive_mcp.ui": 5,
    "archive_mcp.__main__": 5,
}
FACES = ("archive_mcp.mcp", "archive_mcp.cli", "archive_mcp.ui", "archive_mcp.__main__")


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in ROOMS.items():
        for d, _, files in os.walk(folder):
            for f in files:
                if f.endswith(".py"):
                    path = Path(d) / f
                    parts = path.relative_to(folder).with_suffix("").parts
                    out[".".join((package, *parts)).removesuffix(".__init__")] = path
    return out


def _layer(module: str) -> int:
    """The layer of the longest prefix of `module` that LAYERS names (KeyError: none does)."""
    parts = module.split(".")
    for n in range(len(parts), 1, -1):  # the package's own name places only its __init__
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    return LAYERS[module]


def _resolve(name: str, node: ast.ImportFrom) -> str | None:
    """The absolute module an import names (`from . import x` in a package resolves too)."""
    if node.level == 0:
        return node.module
    base = name.split(".")
    package = base if _is_package(name) else base[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def _is_package(name: str) -> bool:
    return _modules()[name].name == "__init__.py"


def _imports(name: str, path: Path, top_level_only: bool = False) -> set[str]:
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(name, node)
            if module:
                found.add(module)
                found |= {f"{module}.{a.name}" for a in node.names}
    known = _modules()
    return {m for m in found if m in known and m != name}


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name in _modules():
        try:
            _layer(name)
        except KeyError:
            unplaced.append(name)
    assert unplaced == []


def test_the_layers_hold() -> None:
    modules = _modules()
    assert "archive_mcp.refiners.refine" in modules and "archive_mcp.mcp.server" in modules
    broken = [
        f"{name} (layer {_layer(name)}) imports {dep} (layer {_layer(dep)})"
        for name, path in modules.items()
        for dep in sorted(_imports(name, path))
        if _layer(dep) > _layer(name)
    ]
    assert broken == []


def test_the_library_never_imports_a_face_even_inside_a_function() -> None:
    for name, path in _modules().items():
        if _layer(name) < 5:
            assert not any(dep.startswith(FACES) for dep in _imports(name, path)), name


def test_no_import_circle_between_modules() -> None:
    """A module-level import graph without a cycle (a package importing its own submodules in its
    `__init__` is not a cycle of two modules: packages are left out of the graph's edges into them)."""
    modules = _modules()
    graph = {
        name: {d for d in _imports(name, path, top_level_only=True) if not _is_package(d)}
        for name, path in modules.items()
        if not _is_package(name)
    }
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*stack[stack.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_no_module_is_longer_than_600_formatted_lines() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}


def test_no_function_in_a_face_is_longer_than_60_lines() -> None:
    long = {}
    for name, path in _modules().items():
        if _layer(name) == 5:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    # the body, from its first statement after the docstring: a tool's signature
                    # of annotated parameters is declaration, not logic
                    body = node.body
                    if ast.get_docstring(node) and len(body) > 1:
                        body = body[1:]
                    size = (node.end_lineno or node.lineno) - body[0].lineno + 1
                    if size > 60:
                        long[f"{name}.{node.name}"] = size
    assert long == {}


def test_no_symlink_in_the_tree() -> None:
    skip = {".git", ".venv", "build", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    links = [
        str(Path(d, f).relative_to(ROOT))
        for d, dirs, files in os.walk(ROOT)
        for f in [*files, *dirs]
        if Path(d, f).is_symlink() and not (set(Path(d, f).relative_to(ROOT).parts) & skip)
    ]
    assert links == []


@pytest.mark.parametrize("room", ["refiners", "workspaces"])
def test_each_room_has_one_module_identity(room: str) -> None:
    module = importlib.import_module(f"archive_mcp.{room}")
    package = importlib.import_module("archive_mcp")
    where = Path(module.__file__ or "").resolve().parent
    # the repo's folder (an editable install) or the package's own copy (a wheel)
    assert where in {
        ROOMS[f"archive_mcp.{room}"].resolve(),
        Path(package.__file__ or "").parent / room,
    }
    # from the repo root the folder is on sys.path too: importing it by its bare name is refused
    result = subprocess.run(
        [sys.executable, "-c", f"import {room}"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert f"import archive_mcp.{room}, not {room}" in result.stderr


# themes/ by stage: each stage imports its own modules and the shared ones beside the stages
# (store, noise, labels); tagging's walk runs on discovery's turn graph, and nothing else crosses.
THEME_STAGES = {"tag": {"tag", "discover"}, "discover": {"discover"}, "trace": {"trace"}}


def test_each_theme_stage_imports_only_its_own_modules_and_the_shared_ones() -> None:
    crossing = []
    for name, path in _modules().items():
        parts = name.split(".")
        if parts[:2] != ["archive_mcp", "themes"] or len(parts) < 4:
            continue
        for dep in sorted(_imports(name, path)):
            stage = dep.split(".")[2] if dep.startswith("archive_mcp.themes.") else None
            if stage in THEME_STAGES and stage not in THEME_STAGES[parts[2]]:
                crossing.append(f"{name} imports {dep}")
    assert crossing == []


def test_no_module_of_themes_imports_for_type_checking_only() -> None:
    found = [
        name
        for name, path in _modules().items()
        if name.startswith("archive_mcp.themes")
        and "TYPE_CHECKING" in path.read_text(encoding="utf-8")
    ]
    assert found == []
