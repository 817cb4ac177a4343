"""Many one-turn sessions in one workspace: ingest cost per session as the count grows, and a
stopped ingest that resumes.

    python bench/many_sessions.py --sizes 5000 20000 50000
    python bench/many_sessions.py --sizes 20000 --kills 5 --seed 7

Generated Claude Code logs (one user and one assistant line each) in one project folder. Each
ingest runs in a fresh subprocess (`Archive.ingest`, no embeddings, one worker) and prints wall
and CPU ms per session (CPU time is the steadier figure on a shared machine; the wall time
includes two fsyncs per session). With `--kills K`, an ingest of the largest size is stopped K times at seeded random
moments (SIGTERM, or SIGKILL with `--signal KILL`), resumed each time, and checked: the bytes
each resume copies again of what the stopped run had recorded as archived (0 is the target), and
the final refined rows and raw hashes against a clean ingest of the same logs. Runs in a
throwaway folder; touches no real home.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = "/home/alice/projects/webapp"
WORDS = "date parser timezone cache index flush retry socket schema migration token".split()


def generate(claude: Path, n: int, seed: int = 7) -> int:
    """`n` one-turn sessions; their total bytes."""
    rng = random.Random(seed)
    folder = claude / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(n):
        sid = f"{rng.getrandbits(128):032x}"
        words = " ".join(rng.choice(WORDS) for _ in range(8))
        ts = f"2026-03-{1 + i % 28:02d}T10:{i // 60 % 60:02d}:{i % 60:02d}Z"
        lines = [
            {
                "type": kind,
                "sessionId": sid,
                "cwd": PROJECT,
                "version": "2.1.9",
                "timestamp": ts,
                "message": {"role": kind, "content": f"{verb} the {words} ({i})"},
            }
            for kind, verb in (("user", "fix"), ("assistant", "fixed"))
        ]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        (folder / f"{sid}.jsonl").write_bytes(data)
        total += len(data)
    return total


def ingest_cmd(claude: Path) -> list[str]:
    return [sys.executable, "-m", "archive_mcp", "ingest", str(claude), "--no-embed", "--json"]


TIMED = """
import cProfile, json, pstats, sys, time
from archive_mcp import Archive
t, cpu = time.perf_counter(), time.process_time()
prof = cProfile.Profile() if sys.argv[3] else None
if prof: prof.enable()
r = Archive(sys.argv[2], embedder=None).ingest(sys.argv[1], embed=False, workers=1)
if prof:
    prof.disable()
    pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - cpu,
                  "bytes_archived": r.bytes_archived,
                  "turns_added": r.turns_added, "sessions": r.sessions}))
"""


def env_for(home: Path) -> dict[str, str]:
    return {**os.environ, "ARCHIVE_MCP_HOME": str(home)}


def ingest(claude: Path, home: Path, profile: bool = False) -> tuple[float, dict]:
    """One ingest in a fresh process (one worker: the cost per session, not the pool's start)."""
    cmd = [sys.executable, "-c", TIMED, str(claude), str(home), "1" if profile else ""]
    out = subprocess.run(cmd, env=env_for(home), capture_output=True, text=True, check=True)
    if profile:
        print(out.stderr[-6000:], file=sys.stderr)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return report["seconds"], report


def workspace_root(home: Path) -> Path:
    roots = [p.parent for p in home.glob("workspaces/*/state")]
    return roots[0] if roots else home / "none"


def archived_in_state(home: Path) -> int:
    """Bytes the saved ingest state records as archived (0 before any save)."""
    path = workspace_root(home) / "state" / "ingest.json"
    try:
        state = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    return sum(int(e.get("archived", 0)) for e in state.get("files", {}).values())


def digest(home: Path) -> dict:
    """What a finished ingest holds: refined rows and a hash of every raw file."""
    import polars as pl

    root = workspace_root(home)
    raw = hashlib.sha256()
    for p in sorted((root / "raw").rglob("*.jsonl")):
        raw.update(p.name.encode() + p.read_bytes())
    files = sorted((root / "refined").glob("*.parquet"))
    rows = sum(pl.read_parquet(f, columns=["turn"]).height for f in files)
    return {"refined_files": len(files), "rows": rows, "raw_sha256": raw.hexdigest()[:16]}


def per_session(sizes: list[int], base: Path, profile: bool) -> None:
    for n in sizes:
        claude, home = base / f"claude-{n}", base / f"home-{n}"
        generate(claude, n)
        took, report = ingest(claude, home, profile)
        print(
            json.dumps(
                {
                    "sessions": n,
                    "seconds": round(took, 1),
                    "ms_per_session": round(took / n * 1000, 2),
                    "cpu_ms_per_session": round(report["cpu_seconds"] / n * 1000, 2),
                    "turns": report.get("turns_added"),
                }
            ),
            flush=True,
        )
        shutil.rmtree(home, ignore_errors=True)


def kills(n: int, k: int, seed: int, sig: str, base: Path) -> None:
    claude, home, clean = base / "claude-k", base / "home-k", base / "home-clean"
    total = generate(claude, n)
    took, _ = ingest(claude, clean)
    rng = random.Random(seed)
    rows = []
    for i in range(k):
        proc = subprocess.Popen(
            ingest_cmd(claude), env=env_for(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        time.sleep(rng.uniform(1.0, max(2.0, took * 0.9)))  # anywhere in a whole ingest
        proc.send_signal(signal.SIGKILL if sig == "KILL" else signal.SIGTERM)
        _, err = proc.communicate()
        recorded = archived_in_state(home)
        rows.append({"kill": i, "after_recorded_bytes": recorded, "rc": proc.returncode})
        print(json.dumps({**rows[-1], "stderr": err.decode()[-200:]}), flush=True)
    before = archived_in_state(home)
    _, report = ingest(claude, home)
    again = report["bytes_archived"] - (total - before)
    result = {
        "sessions": n,
        "kills": k,
        "signal": sig,
        "source_bytes": total,
        "recorded_before_last_resume": before,
        "resume_copied": report["bytes_archived"],
        "recopied_of_recorded": again,
        "same_as_clean": digest(home) == digest(clean),
        "final": digest(home),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[5000, 20000, 50000])
    ap.add_argument("--kills", type=int, default=0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--signal", choices=["TERM", "KILL"], default="TERM")
    ap.add_argument("--root", type=Path, default=None)
    ap.add_argument("--profile", action="store_true", help="cProfile each ingest (to stderr)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="archive-many-", dir=args.root))
    try:
        if args.kills:
            kills(max(args.sizes), args.kills, args.seed, args.signal, base)
        else:
            per_session(args.sizes, base, args.profile)
    finally:
        shutil.rmtree(base, ignore_errors=True)
