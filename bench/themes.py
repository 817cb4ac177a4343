"""Theme benchmarks on real and generated data.

Real data (paths as arguments, read at run time, never copied): the labelled coding set
(`bench/labels/coding_themes.json` over agents-dev: tag each topic from its seeds, trace it, score
members, decision flags, change -> undone-decision pairs and discovery) and LoCoMo multi-hop
questions (tag from the question, trace, count the evidence turns). Generated data (the
regression check): discovery quality on the planted-theme sample, discovery time at 10k and 50k
turns, trace time for a 1k-member theme in a 100k-turn workspace.

    python bench/themes.py [--agents-dev DIR] [--locomo DIR] [--out bench/out/themes]
                           [--trace-home DIR] [--no-scale] [--only-trace]
                           [--discover-sizes 10000,50000,100000,1000000 --discover-dir DIR]

`--trace-home` reuses a 100k-turn archive built by bench/search.py; otherwise one is built.
`--discover-sizes` runs only discovery on one generated workspace of each size, built under
`--discover-dir` (DIR/<size>/home) unless it is there already: a 1M-turn workspace takes about half
an hour to build, so reuse it. Each size is discovered twice in a fresh process (wall time and peak
RSS of that process): first with no themes in the workspace, then again over the first run's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from archive_mcp.synthetic.sessions import generate_share_dir  # noqa: E402

SAMPLE = Path(__file__).parent.parent / "archive_mcp" / "sample" / "kimi-themes"

DISCOVER = r"""
import json, sys, time, resource
from archive_mcp import Archive
a = Archive(sys.argv[1])
ws = a.workspaces()[0]
a.index(ws).refresh()
t, c = time.perf_counter(), time.process_time(); d = a.discover_themes(ws.id); s = time.perf_counter() - t
print(json.dumps({"turns": d.turns, "themes": len(d.themes), "clustered": d.clustered, "seconds": s,
                  "cpu_s": time.process_time() - c,
                  "method": d.method, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The first trace of a fresh process parses every member file and runs every per-turn rule; the
# next ones find the parsed files and the per-turn results kept (themes/trace/sessions.py, turn_memo.py,
# terms.py): `first_ms` is that cold trace, `p50_ms` / `cpu_p50_ms` the median of the 7.
TRACE = r"""
import json, sys, time, statistics
from archive_mcp import Archive
a = Archive(sys.argv[1])
ws = a.workspaces()[0]
refs = a.turns(ws.id).select("session_id", "turn").head(1000).collect().to_dicts()
a.tag_theme("bench-1k", ws.id, references=refs)
times, cpu = [], []
for _ in range(7):
    t, c = time.perf_counter(), time.process_time()
    tl = a.trace_theme("bench-1k", ws.id)
    times.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
print(json.dumps({"members": len(tl.events), "workspace_turns": a.stats(ws.id).turns,
                  "first_ms": 1000 * times[0], "p50_ms": 1000 * statistics.median(times),
                  "max_ms": 1000 * max(times), "cpu_p50_ms": 1000 * statistics.median(cpu)}))
"""


def quality(embedder: str) -> dict:
    import tempfile

    from archive_mcp import Archive
    from archive_mcp.synthetic.evaluation import purity_recall

    a = Archive(tempfile.mkdtemp(), embedder=None if embedder == "none" else embedder)
    a.ingest(SAMPLE)
    d = a.discover_themes("shop")
    labels = json.loads((SAMPLE / "LABELS.json").read_text(encoding="utf-8"))
    scores = purity_recall(d.themes, labels["themes"])
    return {
        "method": d.method,
        "purity": sum(p for p, _ in scores.values()) / len(scores),
        "recall": sum(r for _, r in scores.values()) / len(scores),
        "themes": len(d.themes),
        "per_theme": {k: [round(p, 2), round(r, 2)] for k, (p, r) in scores.items()},
    }


def build(root: Path, turns: int, reuse: bool = False) -> Path:
    if reuse and (root / "home" / "workspaces").is_dir():
        return root / "home"
    shutil.rmtree(root, ignore_errors=True)
    generate_share_dir(root / "kimi", turns, workspaces=1, big_every=0, small=(100, 1500))
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from archive_mcp import Archive; Archive(sys.argv[1]).ingest(sys.argv[2])",
            str(root / "home"),
            str(root / "kimi"),
        ],
        check=True,
    )
    shutil.rmtree(root / "kimi")  # the archive keeps its own copy of the logs
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from archive_mcp import Archive; a = Archive(sys.argv[1]); "
            "a.index(a.workspaces()[0]).refresh()",
            str(root / "home"),
        ],
        check=True,
    )  # not in the timed run
    return root / "home"


def discover_sizes(sizes: list[int], folder: Path) -> dict:
    """Discovery alone on one workspace of each size: a first run and a run over its themes."""
    out = {}
    for size in sizes:
        home = build(folder / str(size), size, reuse=True)
        for ws in (home / "workspaces").iterdir():
            shutil.rmtree(ws / "themes", ignore_errors=True)
        for run_name in ("first", "again"):
            out[f"discover_{size}_{run_name}"] = got = run(DISCOVER, home)
            print(f"discover at {size} ({run_name}): {json.dumps(got)}", flush=True)
    return out


def run(code: str, home: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, str(home)], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def real(args: argparse.Namespace) -> dict:
    import tempfile

    from agents_dev import ingest_agents_dev
    from theme_eval import coding, locomo

    from archive_mcp import Archive

    out: dict = {}
    if args.agents_dev:
        labels = Path(__file__).parent / "labels" / "coding_themes.json"
        links = {
            k: v["cwds"]
            for k, v in json.loads(labels.read_text(encoding="utf-8"))["workspaces"].items()
        }
        a = Archive(args.coding_home or tempfile.mkdtemp())
        if not a.workspaces():
            ingest_agents_dev(a, args.agents_dev, links)
        out["coding"] = coding(a, labels)
        print(
            "coding:",
            json.dumps({k: v for k, v in out["coding"].items() if k != "per_topic"}),
            flush=True,
        )
    if args.locomo:
        out["locomo"] = locomo(Archive(tempfile.mkdtemp()), args.locomo)
        print("locomo:", json.dumps(out["locomo"]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "themes")
    ap.add_argument("--trace-home", type=Path)
    ap.add_argument(
        "--agents-dev", type=Path, help="the agents-dev corpus (for the labelled coding set)"
    )
    ap.add_argument(
        "--coding-home", type=Path, help="an archive that already holds agents-dev (reused)"
    )
    ap.add_argument("--locomo", type=Path, help="locomo-dev (kimi_share/ and qrels.jsonl)")
    ap.add_argument(
        "--no-scale", action="store_true", help="skip the 10k/50k discovery and 100k trace runs"
    )
    ap.add_argument(
        "--only-trace", action="store_true", help="only the 100k trace (with --trace-home)"
    )
    ap.add_argument(
        "--discover-sizes", help="only discovery, on one workspace of each size (comma-separated)"
    )
    ap.add_argument("--discover-dir", type=Path, help="where those workspaces are built and reused")
    args = ap.parse_args()
    if args.discover_sizes:
        sizes = [int(x) for x in args.discover_sizes.split(",")]
        print(json.dumps(discover_sizes(sizes, args.discover_dir or args.out / "discover")))
        return
    if args.only_trace:
        trace_home = args.trace_home or build(args.out / "100000", 100_000)
        print(f"trace: {json.dumps(run(TRACE, trace_home))}")
        return
    results: dict = {**real(args), "quality": {e: quality(e) for e in ("static", "none")}}
    print("quality:", json.dumps(results["quality"]), flush=True)
    if args.no_scale:
        print(json.dumps(results))
        return
    for size in (10_000, 50_000):
        home = build(args.out / str(size), size)
        results[f"discover_{size}"] = run(DISCOVER, home)
        print(f"discover at {size}: {json.dumps(results[f'discover_{size}'])}", flush=True)
    trace_home = args.trace_home or build(args.out / "100000", 100_000)
    results["trace_1k_in_100k"] = run(TRACE, trace_home)
    print(f"trace: {json.dumps(results['trace_1k_in_100k'])}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
