"""The agents-dev corpus (real Claude Code, Codex CLI and Gemini CLI logs) in an archive.

Used by the other bench scripts (`from agents_dev import ingest_agents_dev, resolve_refs` with
`bench/` on sys.path):

* `ingest_agents_dev(archive, root, links=None)` archives the whole corpus; `links` maps a
  workspace name to the cwds that share one workspace (`coding_themes.json` "workspaces").
* `resolve_refs(archive, refs, files=None)` maps label references to archived turns:
  `"<file-stem>#L<line>"` (the 1-based line of the record that opens the turn, in the session's
  main log) through `raw_ref` byte offsets, and Gemini's `"<file-stem>#m<k>"` (the k-th turn).

    python bench/agents_dev.py AGENTS_DEV_ROOT [--home DIR] [--labels bench/labels]

ingests the corpus and reports how many label references of each labels file resolve.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from archive_mcp.workspaces import Workspace, read_json, workspace_id

from archive_mcp import Archive
from archive_mcp.ingest.pipeline import IngestReport
from archive_mcp.ingest.store import refined_path

Resolved = tuple[str, str, str, int]  # workspace_id, session_id, agent, turn
SKIP_NAMES = {"history.jsonl"}


def corpus_paths(root: Path) -> list[Path]:
    """What to hand to `Archive.ingest`: Claude Code project folders and config dirs, and every
    Codex rollout and Gemini chat file (their folders in the corpus are not agent homes)."""
    out: list[Path] = []
    claude = root / "claude-code"
    folders: set[Path] = set()
    for f in sorted(claude.rglob("*.jsonl")):
        if f.name in SKIP_NAMES or "subagents" in f.parts:
            continue
        folders.add(f.parent)
    out += sorted(folders)
    for agent in ("codex", "gemini"):
        out += sorted(
            p for p in (root / agent).rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file()
        )
    return out


def ingest_agents_dev(
    archive: Archive,
    root: str | Path,
    links: Mapping[str, Sequence[str]] | None = None,
    embed: bool = True,
) -> IngestReport:
    """Ingest the whole corpus into `archive`; `links` first joins each name's cwds into one workspace."""
    for name, cwds in (links or {}).items():
        if not cwds:
            continue
        head = archive.registry.ensure(workspace_id(cwds[0]), path=cwds[0], name=name)
        for cwd in cwds[1:]:
            archive.link(cwd, head.id)
    return archive.ingest(*corpus_paths(Path(root)), embed=embed)


class _Index:
    """Every archived raw log of an archive, by the stem of the source file it copies."""

    def __init__(self, archive: Archive) -> None:
        self.by_stem: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        self.roots: dict[str, Path] = {}
        for ws in archive.workspaces():
            self.roots[ws.id] = ws.root
            state = read_json(ws.state_dir / "ingest.json", {}) or {}
            for raw_rel, entry in state.get("files", {}).items():
                stem = Path(entry["source_path"]).stem
                self.by_stem.setdefault(stem, []).append((ws.id, raw_rel, entry))
        self._starts: dict[tuple[str, str], list[int]] = {}
        self._turns: dict[tuple[str, str], pl.DataFrame] = {}

    def line_starts(self, ws_id: str, raw_rel: str) -> list[int]:
        key = (ws_id, raw_rel)
        if key not in self._starts:
            starts, pos = [], 0
            with open(self.roots[ws_id] / raw_rel, "rb") as fh:
                for line in fh:
                    starts.append(pos)
                    pos += len(line)
            self._starts[key] = starts
        return self._starts[key]

    def turns(self, ws_id: str, session_id: str) -> pl.DataFrame:
        key = (ws_id, session_id)
        if key not in self._turns:
            path = refined_path(Workspace(ws_id, ws_id, root=self.roots[ws_id]), session_id)
            self._turns[key] = (
                pl.read_parquet(path).select(
                    "agent",
                    "turn",
                    pl.col("raw_ref").struct.field("file").alias("file"),
                    pl.col("raw_ref").struct.field("byte_start").alias("byte_start"),
                )
                if path.exists()
                else pl.DataFrame()
            )
        return self._turns[key]


def resolve_refs(
    archive: Archive,
    refs: Iterable[str],
    files: Mapping[str, str | Sequence[str]] | Sequence[str] | None = None,
) -> dict[str, Resolved]:
    """Label references -> (workspace_id, session_id, agent, turn); unresolved ones are left out.

    `files` narrows a reference to its source file(s) (agents-dev relative paths), needed when
    stems collide (the five Gemini chats are all `test_conversation_gemini`): a mapping
    ref -> file(s), or one list of files for every ref.
    """
    index = _Index(archive)
    out: dict[str, Resolved] = {}
    for ref in refs:
        stem, _, pos = ref.rpartition("#")
        wanted = files.get(ref) if isinstance(files, Mapping) else files
        wanted = [wanted] if isinstance(wanted, str) else list(wanted or [])
        candidates = [
            c
            for c in index.by_stem.get(stem, [])
            if c[2]["agent"] == "main"
            and (not wanted or any(c[2]["source_path"].endswith(w) for w in wanted))
        ]
        for ws_id, raw_rel, entry in candidates:
            hit = _resolve_one(index, ws_id, raw_rel, entry, pos)
            if hit is not None:
                out[ref] = hit
                break
    return out


def _resolve_one(
    index: _Index, ws_id: str, raw_rel: str, entry: dict[str, Any], pos: str
) -> Resolved | None:
    turns = index.turns(ws_id, entry["session"])
    if not turns.height:
        return None
    mine = turns.filter((pl.col("agent") == "main") & (pl.col("file") == raw_rel))
    if pos.startswith("m"):  # Gemini: the k-th user message is turn k
        k = int(pos[1:])
        row = mine.filter(pl.col("turn") == k)
    elif pos.startswith("L"):
        starts = index.line_starts(ws_id, raw_rel)
        line = int(pos[1:])
        if not 1 <= line <= len(starts):
            return None
        row = mine.filter(pl.col("byte_start") == starts[line - 1])
    else:
        return None
    if not row.height:
        return None
    return ws_id, entry["session"], "main", int(row["turn"][0])


def label_refs(labels: Path) -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """Per labels file: its refs and, where given, the source files of each ref."""
    out: dict[str, tuple[list[str], dict[str, list[str]]]] = {}
    for path in sorted(labels.glob("*.jsonl")):
        refs: list[str] = []
        files: dict[str, list[str]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            these = rec.get("relevant") or ([rec["ref"]] if "ref" in rec else [])
            src = rec.get("files") or ([rec["file"]] if "file" in rec else [])
            for r in these:
                refs.append(r)
                files.setdefault(r, []).extend(src)
        out[path.name] = (refs, files)
    for path in sorted(labels.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        refs = []
        for topic in data.get("topics", []):
            refs += topic.get("members", [])
            for d in topic.get("decisions", []):
                refs += [r for r in (d.get("turn"), d.get("undoes")) if r]
        out[path.name] = (refs, {})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the agents-dev corpus folder")
    ap.add_argument("--home", type=Path, help="archive home (default: a temporary one)")
    ap.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels")
    ap.add_argument("--no-embed", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Archive(args.home or tmp, embedder=None if args.no_embed else "static")
        themes = json.loads((args.labels / "coding_themes.json").read_text(encoding="utf-8"))
        links = {name: ws["cwds"] for name, ws in themes.get("workspaces", {}).items()}
        t0 = time.perf_counter()
        report = ingest_agents_dev(archive, args.root, links, embed=not args.no_embed)
        print(
            f"ingest: {report.files} files, {report.sessions} sessions, {report.turns_added} turns, "
            f"{len(report.skipped)} skipped lines/files, {time.perf_counter() - t0:.1f} s"
        )
        for name, (refs, files) in label_refs(args.labels).items():
            got = resolve_refs(archive, refs, files)
            unique = set(refs)
            print(f"{name}: {len(set(got))}/{len(unique)} refs resolve")
            for r in sorted(unique - set(got))[:10]:
                print(f"  unresolved: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
