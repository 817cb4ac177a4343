"""Search at scale beside `rg` and SQLite FTS5, in one run: 50k, 200k and 1M turns in one
workspace, and 20 workspaces of 50k; p50 / p95 of hybrid (and lexical) search, peak RSS, index
build time and size. With `--against DIR` another checkout (its `archive_mcp`, on a hard-linked
copy of each archive) is measured in the same rounds, interleaved with this one.

    python bench/scale.py --out OUT [--copies 1 4 20] [--spread 20] [--against CHECKOUT] [--rounds 2]

The archives: one of `--turns` generated turns (one workspace, seed 7, ingested with the static
embeddings), and archives made of copies of it: `one-K` holds its sessions K times in one
workspace (each copy under new session ids; its raw logs hard-linked beside), `spread-K` holds
K copies of its workspace as K workspaces (a search names one). Copies keep the text statistics
of the generated set (every posting list grows with the copies about as it would with more
generated turns: the generator draws its turns from one distribution), but a turn and its
copies score alike: a speed figure, not a quality one. Made once, kept in OUT (delete OUT to
make them again).

Per archive and checkout, two fresh processes: the first builds the index (timed, its size
counted), the second loads it and runs the queries (`QUERIES` from search.py, `--reps` times
each) for p50 / p95 (wall clock), the p50 of the process's CPU time per query (on a shared box
the wall clock counts the other processes' turns on the cores too) and peak RSS. `rg -l -i -F` runs each query over the archive's raw logs;
FTS5 answers the same turns' index text (`doc_text`, the text our BM25 indexes) with `bm25()`
ranking, the query's terms OR-ed (as our BM25 takes them), in its own process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from search import QUERIES, rg_times

from archive_mcp.synthetic.sessions import generate_share_dir

MEASURE = r"""
import json, resource, statistics, sys, time
from archive_mcp import Archive
import archive_mcp
home, ws_name, mode, queries, reps = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
a = Archive(home)
ws = next(w for w in a.workspaces() if w.name == ws_name)
t = time.perf_counter(); idx = a.index(ws).refresh(); load = time.perf_counter() - t
out = {"code": archive_mcp.__file__, "docs": idx.n_docs, "load_s": load}
if mode == "build":
    size = sum(p.stat().st_size for p in idx.folder.rglob("*") if p.is_file())
    out.update(build_s=load, index_mb=size / 1e6)
else:
    a.search("warm up", workspace=ws.id, limit=10)
    for m in ("hybrid", "lexical"):
        times, cpu = [], []
        for _ in range(reps):
            for q in queries:
                t, c = time.perf_counter(), time.process_time()
                a.search(q, workspace=ws.id, limit=10, mode=m)
                times.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
        times.sort()
        out[m] = {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * times[int(0.95 * len(times)) - 1], "cpu_p50_ms": 1000 * statistics.median(cpu)}
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

FTS = r"""
import json, re, resource, sqlite3, statistics, sys, time
from pathlib import Path
import polars as pl
from archive_mcp.search.index import doc_text
home, ws_name, mode, queries, reps, db = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
if mode == "build":
    root = next(p for p in Path(home, "workspaces").iterdir() if json.loads((p / "workspace.json").read_text(encoding="utf-8"))["name"] == ws_name)
    Path(db).unlink(missing_ok=True)
    t = time.perf_counter()
    con = sqlite3.connect(db)
    con.execute("CREATE VIRTUAL TABLE turns USING fts5(body, tokenize='unicode61')")
    cols = ["started_at", "summary", "user_text", "assistant_text", "tool_calls", "files", "keywords", "title"]
    files = sorted((root / "refined").glob("*.parquet"))
    for i in range(0, len(files), 256):
        df = pl.read_parquet([str(f) for f in files[i : i + 256]], columns=cols)
        con.executemany("INSERT INTO turns(body) VALUES (?)", ((doc_text(r),) for r in df.iter_rows(named=True)))
    con.commit()
    con.execute("INSERT INTO turns(turns) VALUES ('optimize')")
    con.commit()
    con.close()
    print(json.dumps({"build_s": time.perf_counter() - t, "index_mb": Path(db).stat().st_size / 1e6,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
else:
    con = sqlite3.connect(db)
    def match(q):
        words = re.findall(r"\w+", q)
        return " OR ".join('"' + w + '"' for w in words)
    con.execute("SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT 10", (match("warm up"),)).fetchall()
    times = []
    for _ in range(reps):
        for q in queries:
            t = time.perf_counter()
            con.execute("SELECT rowid, body FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT 10", (match(q),)).fetchall()
            times.append(time.perf_counter() - t)
    times.sort()
    print(json.dumps({"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * times[int(0.95 * len(times)) - 1],
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make_base(root: Path, turns: int) -> None:
    """The generated archive (one workspace), ingested with embeddings; kept when made before."""
    if (root / "made.json").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    made = generate_share_dir(root / "kimi", turns, workspaces=1, big_every=0, small=(100, 800))
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
    made["ingest_s"] = time.perf_counter() - t
    (root / "made.json").write_text(json.dumps(made), encoding="utf-8")


def workspace_dir(home: Path) -> Path:
    (ws,) = [p for p in (home / "workspaces").iterdir() if p.is_dir()]
    return ws


def make_one(base: Path, root: Path, copies: int) -> None:
    """`copies` copies of the base's sessions in one workspace, each copy under new session ids."""
    if (root / "made.json").exists():
        return
    import polars as pl

    shutil.rmtree(root, ignore_errors=True)
    src = workspace_dir(base / "home")
    dst = root / "home" / "workspaces" / src.name
    shutil.copytree(src, dst, copy_function=os.link)
    shutil.rmtree(dst / "cache", ignore_errors=True)
    shutil.copytree(base / "kimi", root / "kimi", copy_function=os.link)
    logs = [p.parent for p in (base / "kimi").glob("sessions/*/*/wire.jsonl")]
    for c in range(1, copies):
        for f in sorted((src / "refined").glob("*.parquet")):
            new = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{f.stem}/{c}"))
            pl.read_parquet(f).with_columns(session_id=pl.lit(new)).write_parquet(
                dst / "refined" / f"{new}.parquet"
            )
            emb = src / "embeddings" / f.name
            if emb.exists():
                os.link(emb, dst / "embeddings" / f"{new}.parquet")
        for log in logs:
            new = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{log.name}/{c}"))
            shutil.copytree(
                log,
                root / "kimi" / log.parent.relative_to(base / "kimi") / new,
                copy_function=os.link,
            )
    (root / "made.json").write_text(json.dumps({"copies": copies}), encoding="utf-8")


def make_spread(base: Path, root: Path, copies: int) -> None:
    """`copies` copies of the base's workspace as as many workspaces (hard links)."""
    if (root / "made.json").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    src = workspace_dir(base / "home")
    meta = json.loads((src / "workspace.json").read_text(encoding="utf-8"))
    for c in range(copies):
        dst = root / "home" / "workspaces" / f"{src.name[:-2]}{c:02d}"
        shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns("cache"))
        (dst / "workspace.json").unlink()
        ws = {
            **meta,
            "id": dst.name,
            "name": f"project-{c}",
            "paths": [f"/home/dev/projects/project-{c}"],
        }
        (dst / "workspace.json").write_text(json.dumps(ws, indent=2), encoding="utf-8")
        shutil.copytree(base / "kimi", root / "kimi" / f"copy-{c}", copy_function=os.link)
    (root / "made.json").write_text(json.dumps({"workspaces": copies}), encoding="utf-8")


def run(code: str, script: str, args: list[str], pythonpath: str | None) -> dict:
    env = {**os.environ}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # `python -c` puts its working directory first on the path: the checkout measured
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath or Path(__file__).resolve().parent.parent,
    )
    return {"checkout": code, **json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "scale")
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--copies", type=int, nargs="*", default=[1, 4, 20])
    ap.add_argument(
        "--spread", type=int, default=20, help="workspaces of the spread archive (0: none)"
    )
    ap.add_argument("--against", type=Path, help="another checkout, measured in the same rounds")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-fts", action="store_true")
    ap.add_argument(
        "--reuse-index",
        action="store_true",
        help="keep an index (and FTS5 file) built before: the build line then times its load",
    )
    ap.add_argument("--rg-reps", type=int, help="`rg` runs per query (default: --reps)")
    args = ap.parse_args()
    args.out = args.out.resolve()  # the processes run in the checkout they measure
    base = args.out / "base"
    make_base(base, args.turns)
    archives: list[tuple[str, Path, str]] = []  # name, root, workspace searched
    ws_name = json.loads(
        (workspace_dir(base / "home") / "workspace.json").read_text(encoding="utf-8")
    )["name"]
    for k in args.copies:
        root = base if k == 1 else args.out / f"one-{k}"
        if k != 1:
            make_one(base, root, k)
        archives.append((f"{k * args.turns:,} turns, 1 workspace", root, ws_name))
    if args.spread:
        root = args.out / f"spread-{args.spread}"
        make_spread(base, root, args.spread)
        archives.append((f"{args.spread} workspaces of {args.turns:,}", root, "project-0"))
    checkouts: list[tuple[str, Path, str | None]] = [("this", Path("home"), None)]
    if args.against:
        checkouts.append(("against", Path("home-against"), str(args.against.resolve())))
    queries = json.dumps(QUERIES)
    results = []
    for name, root, ws in archives:
        row: dict = {
            "archive": name,
            "raw_mb": sum(p.stat().st_size for p in (root / "kimi").rglob("wire.jsonl")) / 1e6,
        }
        for code, home_name, path in checkouts:
            home = root / home_name
            if home_name.name != "home" and not home.exists():
                shutil.copytree(
                    root / "home",
                    home,
                    copy_function=os.link,
                    ignore=shutil.ignore_patterns("cache"),
                )
            for w in (home / "workspaces").iterdir():
                if not args.reuse_index:
                    shutil.rmtree(w / "cache" / "search", ignore_errors=True)
            row[f"{code}_build"] = run(code, MEASURE, [str(home), ws, "build", queries, "1"], path)
            print(name, code, "build", row[f"{code}_build"], flush=True)
        db = str(root / "fts5.db")
        if not args.no_fts and not (args.reuse_index and Path(db).exists()):
            row["fts5_build"] = run(
                "fts5", FTS, [str(root / "home"), ws, "build", queries, "1", db], None
            )
            print(name, "fts5 build", row["fts5_build"], flush=True)
        for r in range(args.rounds):
            for code, home_name, path in checkouts:
                res = run(
                    code,
                    MEASURE,
                    [str(root / home_name), ws, "query", queries, str(args.reps)],
                    path,
                )
                row.setdefault(code, []).append(res)
                print(name, code, f"round {r}", res, flush=True)
            row.setdefault("rg", []).append(
                rg_times(root / "kimi", QUERIES * (args.rg_reps or args.reps))
            )
            print(name, "rg", row["rg"][-1], flush=True)
            if not args.no_fts:
                res = run(
                    "fts5",
                    FTS,
                    [str(root / "home"), ws, "query", queries, str(args.reps), db],
                    None,
                )
                row.setdefault("fts5", []).append(res)
                print(name, "fts5", f"round {r}", res, flush=True)
        results.append(row)
    print(json.dumps({"load": os.getloadavg(), "results": results}))


if __name__ == "__main__":
    main()
