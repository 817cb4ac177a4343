"""Merge one workspace into another (a worktree's workspace into its repo's).

Copy, then switch: under both workspaces' locks, everything SRC holds is first copied into a
staging folder inside DST (refined files rewritten to DST's id); nothing either workspace reads
changes meanwhile, so an interruption there loses nothing and the next attempt starts over. A
journal in DST's state (`state/merge.json`) is then written: from that point the merge is decided,
and every later step (moving the staged files in, merging the ingest state and themes, adding
SRC's paths to DST, dropping DST's search index, removing SRC) can be repeated. A journal left by
an interrupted merge is finished by the next `merge` or `ingest`.
"""

from __future__ import annotations

import io
import os
import shutil
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from archive_mcp.errors import InvalidArgument
from archive_mcp.workspaces import (
    Registry,
    Workspace,
    atomic_write_bytes,
    atomic_write_json,
    locked,
    read_json,
)

JOURNAL = "merge.json"  # in DST's state folder while a merge is under way
_NOT_COPIED = {"workspace.json", ".lock", ".lock.holder"}


@dataclass
class MergeReport:
    source: str  # SRC's name (id), gone after the merge
    into: str  # DST's name (id)
    sessions: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # DST's paths after the merge
    themes: list[str] = field(default_factory=list)  # themes SRC brought or added members to
    renamed: list[str] = field(default_factory=list)  # SRC files kept under another name

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def merge_workspaces(registry: Registry, src_ref: str, into_ref: str) -> MergeReport:
    """Move every session, path and theme of workspace `src_ref` into `into_ref`; SRC is removed
    and a later ingest of its paths lands in DST."""
    finish_merges(registry)
    src, dst = registry.resolve(src_ref), registry.resolve(into_ref)
    if src.id == dst.id:
        raise InvalidArgument(f"cannot merge workspace {src.name} ({src.id}) into itself")
    first, second = sorted((src, dst), key=lambda w: w.id)
    with locked(first.root), locked(second.root):
        src, dst = registry.get(src.id) or src, registry.get(dst.id) or dst
        sessions = _check(src, dst)
        stage = dst.root / f".merge-{src.id}"
        shutil.rmtree(stage, ignore_errors=True)  # a copy an interrupted attempt left
        try:
            _stage(src, dst, stage)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)  # nothing was switched: both stay as they were
            raise
        journal = {
            "from": src.id,
            "name": src.name,
            "paths": src.paths,
            "sources": src.sources,
            "sessions": sessions,
            "stage": stage.name,
        }
        atomic_write_json(dst.state_dir / JOURNAL, journal)  # the merge is decided here
        return _apply(registry, dst, journal)


def finish_merges(registry: Registry) -> list[MergeReport]:
    """Finish every merge an interruption left half done (a journal in the workspace's state)."""
    done = []
    for ws in registry.all():
        journal = read_json(ws.state_dir / JOURNAL)
        if not isinstance(journal, dict):
            continue
        src = registry.get(str(journal["from"]))
        with ExitStack() as stack:
            for root in sorted({ws.root, *([src.root] if src else [])}):
                stack.enter_context(locked(root))
            journal = read_json(ws.state_dir / JOURNAL)
            if isinstance(journal, dict):
                done.append(_apply(registry, registry.get(ws.id) or ws, journal))
    return done


def _check(src: Workspace, dst: Workspace) -> list[str]:
    """SRC's sessions; refused when one is archived in both workspaces."""
    mine = _sessions(src)
    theirs = set(_sessions(dst))
    both = sorted(s for s in mine if s in theirs)
    both += sorted(
        rel
        for rel in _raw_dirs(src) & _raw_dirs(dst)
        if not any(rel.endswith(f"/{s}") for s in both)
    )
    if both:
        raise InvalidArgument(
            f"{len(both)} session(s) are archived in both {src.name} and {dst.name} "
            f"({', '.join(both[:5])}); purge them from one first "
            f"(`archive-mcp sessions purge {both[0]} -w {src.id} --yes`)"
        )
    return mine


def _sessions(ws: Workspace) -> list[str]:
    state = read_json(ws.state_dir / "ingest.json", {}) or {}
    found = set(state.get("sessions", {}))
    found |= {p.stem for p in ws.refined_dir.glob("*.parquet")}
    return sorted(found)


def _raw_dirs(ws: Workspace) -> set[str]:
    if not ws.raw_dir.is_dir():
        return set()
    return {f"{d.parent.name}/{d.name}" for d in ws.raw_dir.glob("*/*")}


def _stage(src: Workspace, dst: Workspace, stage: Path) -> None:
    """Copy SRC's files into `stage`: not its lock, description or search cache, nor what a
    killed write left (`.<name>.<random>.tmp`: a temp file, or the folder a whole-file copy is
    checked in)."""
    for path in sorted(src.root.rglob("*")):
        rel = path.relative_to(src.root)
        if (
            path.is_symlink()
            or not path.is_file()
            or rel.parts[0] in ("cache", stage.name)
            or str(rel) in _NOT_COPIED
            or any(part.startswith(".") and part.endswith(".tmp") for part in rel.parts)
        ):
            continue
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.parts[0] == "refined" and path.suffix == ".parquet":
            df = pl.read_parquet(io.BytesIO(path.read_bytes()))
            buf = io.BytesIO()
            df.with_columns(pl.lit(dst.id).alias("workspace_id")).write_parquet(
                buf, compression="zstd"
            )
            atomic_write_bytes(target, buf.getvalue())
        else:
            shutil.copy2(path, target)
    stage.mkdir(parents=True, exist_ok=True)


def _apply(registry: Registry, dst: Workspace, journal: dict[str, Any]) -> MergeReport:
    """Every step after the journal; each can run again after an interruption."""
    stage = dst.root / str(journal["stage"])
    report = MergeReport(f"{journal['name']} ({journal['from']})", f"{dst.name} ({dst.id})")
    report.sessions = list(journal.get("sessions", []))
    if stage.is_dir():
        files = sorted(p for p in stage.rglob("*") if p.is_file())
        later = ("refined", "state", "themes")
        for path in [p for p in files if p.relative_to(stage).parts[0] not in later] + [
            p for p in files if p.relative_to(stage).parts[0] == "refined"
        ]:
            _move(path, stage, dst, str(journal["from"]), report)
        _merge_state(stage / "state" / "ingest.json", dst)
        for path in sorted((stage / "themes").glob("*.json")):
            report.themes.append(_merge_theme(path, dst))
        for path in sorted((stage / "state").glob("*")):  # anything else SRC kept in its state
            _move(path, stage, dst, str(journal["from"]), report)
    with locked(dst.root):
        ws = registry.get(dst.id) or dst
        for key, values in (("paths", journal.get("paths", [])), ("sources", journal["sources"])):
            have = getattr(ws, key)
            have += [v for v in values if v not in have]
        registry.save(ws)
        report.paths = list(ws.paths)
    with locked(dst.cache_dir):  # the next search builds DST's index afresh
        (dst.cache_dir / "search" / "manifest.json").unlink(missing_ok=True)
    registry.remove(str(journal["from"]))
    shutil.rmtree(stage, ignore_errors=True)
    (dst.state_dir / JOURNAL).unlink(missing_ok=True)
    return report


def _move(path: Path, stage: Path, dst: Workspace, src_id: str, report: MergeReport) -> None:
    rel = path.relative_to(stage)
    target = dst.root / rel
    if target.exists():
        if target.read_bytes() == path.read_bytes():
            path.unlink()
            return
        target = target.with_name(f"{target.stem}-from-{src_id[:8]}{target.suffix}")
        report.renamed.append(str(target.relative_to(dst.root)))
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)


def _merge_state(staged: Path, dst: Workspace) -> None:
    """SRC's ingest state (files, sessions, snapshots) joins DST's: a later ingest of SRC's
    sources continues where SRC's stopped."""
    theirs = read_json(staged)
    if not isinstance(theirs, dict):
        return
    state = read_json(dst.state_dir / "ingest.json", {}) or {}
    for key, value in theirs.items():
        if isinstance(value, dict):
            state.setdefault(key, {}).update(value)
        else:
            state.setdefault(key, value)
    atomic_write_json(dst.state_dir / "ingest.json", state)
    staged.unlink()


def _merge_theme(staged: Path, dst: Workspace) -> str:
    """A theme of SRC joins DST's theme of the same slug (members and seeds added), or comes as
    it is. Themes are merged as the files they are (`themes/<slug>.json`): ingest sits below the
    themes layer and moves their data, not their rules."""
    theirs = read_json(staged)
    target = dst.root / "themes" / staged.name
    mine = read_json(target) if target.exists() else None
    if isinstance(theirs, dict) and isinstance(mine, dict):
        keys = {_member_key(m) for m in mine.get("members", [])}
        mine["members"] = list(mine.get("members", [])) + [
            m for m in theirs.get("members", []) if _member_key(m) not in keys
        ]
        seeds = list(mine.get("seeds", []))
        mine["seeds"] = seeds + [x for x in theirs.get("seeds", []) if x not in seeds]
        theirs_name = str(theirs.get("name", staged.stem))
        atomic_write_json(target, mine)
    else:
        theirs_name = (
            str(theirs.get("name", staged.stem)) if isinstance(theirs, dict) else staged.stem
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(target, theirs)
    staged.unlink()
    return theirs_name


def _member_key(m: dict[str, Any]) -> tuple[Any, Any, Any]:
    return (m.get("session_id"), m.get("agent"), m.get("turn"))
