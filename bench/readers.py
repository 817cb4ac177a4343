"""The Claude Code, Codex CLI and Gemini CLI readers on the real agents-dev corpus.

    python bench/readers.py AGENTS_DEV_ROOT [--out bench/out/readers] [--kimi-turns 8000]

1. Full ingest of every agents-dev log (static embeddings, 2 worker processes): sessions, turns,
   and every invalid line reported with its file and line number, checked against an independent
   scan (`json.loads` per line, written here, not the readers' code).
2. Turn counts of every archived log checked against an independent counter (`count_turns`
   below: the labelling rule of bench/labels, written again from FORMATS.md), grouped by Claude
   Code version family (1.0.x, 2.0.x, 2.1.x), Codex and Gemini.
3. A second run over the unchanged corpus (no work expected, < 2 s).
4. Ingest rate on the Claude Code logs alone, with embeddings, next to the same pipeline on a
   synthetic Kimi tree generated here, measured back to back on the same machine and load.
Each ingest runs in a fresh process; CPU seconds (user + system, workers included) are given
beside wall seconds because the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agents_dev import corpus_paths  # noqa: E402

STEP = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from archive_mcp import Archive
paths = json.loads(sys.argv[3])
embed = sys.argv[4] == "embed"
t = time.perf_counter()
report = Archive(sys.argv[2], embedder="static" if embed else None).ingest(*paths, embed=embed)
skipped = [[s.path, s.line, s.reason] for s in report.skipped]
print(json.dumps({"seconds": time.perf_counter() - t, "turns": report.turns_added, "sessions": report.sessions,
                  "embedded": report.embedded, "bytes": report.bytes_archived, "files": report.files,
                  "changed": report.files_changed, "skipped": skipped, "embed_error": report.embed_error}))
"""


def run_ingest(paths: list[Path], home: Path, embed: bool = True) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            STEP,
            str(Path(__file__).parent),
            str(home),
            json.dumps([str(p) for p in paths]),
            "embed" if embed else "none",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


# --- the independent counters (no archive_mcp code) ---------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def count_turns(path: Path, agent: str) -> int:
    """Turns in one log by the rule the labels use, from the format notes."""
    if "claude-code" in path.parts:
        n = 0
        for r in _records(path):
            if (
                r.get("type") != "user"
                or r.get("isMeta")
                or (r.get("isSidechain") and agent == "main")
            ):
                continue
            content = (r.get("message") or {}).get("content")
            if isinstance(content, str) or (
                isinstance(content, list)
                and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            ):
                n += 1
        return n
    if "codex" in path.parts:
        return sum(
            1
            for r in _records(path)
            if r.get("type") == "event_msg"
            and (r.get("payload") or {}).get("type") == "user_message"
        )
    if path.suffix == ".json":
        return sum(
            1
            for m in json.loads(path.read_text(encoding="utf-8"))["messages"]
            if m.get("type") == "user"
        )
    kept: dict[str, str] = {}  # Gemini JSONL: last copy wins, $rewindTo cuts
    for r in _records(path):
        if "$rewindTo" in r:
            ids = list(kept)
            if r["$rewindTo"] in ids:
                for mid in ids[ids.index(r["$rewindTo"]) :]:
                    del kept[mid]
        elif "id" in r and "type" in r:
            kept[r["id"]] = r["type"]
    return sum(1 for t in kept.values() if t == "user")


def family(path: Path) -> str:
    if "codex" in path.parts:
        return "codex"
    if "gemini" in path.parts:
        return "gemini"
    version = next(
        (r["version"] for r in _records(path) if isinstance(r.get("version"), str)), "none"
    )
    return "claude " + (
        ".".join(version.split(".")[:2]) + ".x" if version != "none" else "(no version)"
    )


def invalid_lines(paths: list[Path]) -> set[tuple[str, int]]:
    bad = set()
    for path in paths:
        if path.suffix != ".jsonl":
            continue
        for i, raw in enumerate(path.read_bytes().splitlines(), 1):
            if not raw.strip():
                continue
            try:
                ok = isinstance(json.loads(raw), dict)
            except ValueError:
                ok = False
            if not ok:
                bad.add((str(path), i))
    return bad


def archived_counts(home: Path) -> dict[tuple[str, str], int]:
    """(source path, agent) -> refined turns in the archive."""
    import polars as pl

    counts: dict[tuple[str, str], int] = {}
    for ws_dir in sorted((home / "workspaces").iterdir()):
        state = json.loads((ws_dir / "state" / "ingest.json").read_text(encoding="utf-8"))
        files = list((ws_dir / "refined").glob("*.parquet"))
        rows = (
            pl.concat(
                [
                    pl.read_parquet(f).select("agent", pl.col("raw_ref").struct.field("file"))
                    for f in files
                ]
            )
            if files
            else pl.DataFrame({"agent": [], "file": []})
        )
        per_file = Counter(zip(rows["file"].to_list(), rows["agent"].to_list(), strict=True))
        for raw_rel, entry in state["files"].items():
            counts[(entry["source_path"], entry["agent"])] = per_file.get(
                (raw_rel, entry["agent"]), 0
            )
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the agents-dev corpus folder")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "readers")
    ap.add_argument(
        "--kimi-turns", type=int, default=8000, help="size of the synthetic Kimi comparison tree"
    )
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    paths = corpus_paths(args.root)
    logs = sorted(
        {
            p
            for root in paths
            for p in ([root] if root.is_file() else root.rglob("*.json*"))
            if p.suffix in (".jsonl", ".json")
            and p.name != "history.jsonl"
            and not p.name.endswith(".meta.json")
        }
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from archive_mcp.refiners.embed import StaticEmbedder; "
            "StaticEmbedder().embed(['warm'])",
        ],
        check=True,
        capture_output=True,
    )

    full = run_ingest(paths, args.out / "home-all")
    reported = {(p, line) for p, line, _ in full["skipped"] if line}
    expected = invalid_lines(logs)
    print(
        f"1. full agents-dev ingest: {full['files']} log files, {full['sessions']} sessions with turns, "
        f"{full['turns']} turns, {full['embedded']} embedded, {full['seconds']:.1f} s wall, "
        f"{full['cpu_seconds']:.1f} s CPU; invalid lines: {len(expected)} found independently, "
        f"{len(reported & expected)} reported with file+line, {len(reported - expected)} reported in excess"
    )

    counts = archived_counts(args.out / "home-all")
    by_family: dict[str, list[int]] = defaultdict(
        lambda: [0, 0, 0, 0]
    )  # files, matching, turns, independent
    mismatches = []
    for (source_path, agent), got in sorted(counts.items()):
        path = Path(source_path)
        want = count_turns(path, agent)
        fam = by_family[family(path) + ("" if agent == "main" else " (subagent logs)")]
        fam[0] += 1
        fam[1] += got == want
        fam[2] += got
        fam[3] += want
        if got != want:
            mismatches.append((source_path, agent, got, want))
    print("2. turn counts, archive vs independent counter:")
    for name, (n, ok, got, want) in sorted(by_family.items()):
        print(f"   {name}: {ok}/{n} logs equal ({got} turns archived, {want} counted)")
    for m in mismatches[:10]:
        print(f"   mismatch: {m}")

    noop = run_ingest(paths, args.out / "home-all")
    print(
        f"3. second run: {noop['seconds']:.2f} s wall, {noop['changed']} files changed, {noop['turns']} turns"
    )

    claude = [p for p in paths if "claude-code" in p.parts]
    cc = run_ingest(claude, args.out / "home-claude")
    mb = cc["bytes"] / 1e6
    print(
        f"4. Claude Code logs, full ingest + static embeddings, 2 workers: {mb:.1f} MB, {cc['turns']} turns in "
        f"{cc['seconds']:.1f} s wall = {mb / cc['seconds']:.1f} MB/s, {cc['turns'] / cc['seconds']:.0f} turns/s; "
        f"{cc['cpu_seconds']:.1f} s CPU = {mb / cc['cpu_seconds']:.1f} MB per CPU-s"
    )
    from archive_mcp.synthetic.sessions import generate_share_dir

    made = generate_share_dir(args.out / "kimi", args.kimi_turns)
    km = run_ingest([args.out / "kimi"], args.out / "home-kimi")
    kmb = km["bytes"] / 1e6
    print(
        f"   synthetic Kimi, same pipeline, same load: {kmb:.1f} MB, {km['turns']} turns in {km['seconds']:.1f} s "
        f"wall = {kmb / km['seconds']:.1f} MB/s, {km['turns'] / km['seconds']:.0f} turns/s; {km['cpu_seconds']:.1f} s "
        f"CPU = {kmb / km['cpu_seconds']:.1f} MB per CPU-s"
    )
    print(
        f"   Claude Code / Kimi rate per MB: {(mb / cc['seconds']) / (kmb / km['seconds']):.2f} (wall), "
        f"{(mb / cc['cpu_seconds']) / (kmb / km['cpu_seconds']):.2f} (CPU)"
    )
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
                "load_average": os.getloadavg(),
                "full": {k: v for k, v in full.items() if k != "skipped"},
                "turn_counts": by_family,
                "noop": {k: v for k, v in noop.items() if k != "skipped"},
                "claude": {k: v for k, v in cc.items() if k != "skipped"},
                "kimi_generated": made,
                "kimi": {k: v for k, v in km.items() if k != "skipped"},
            },
            indent=2,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
