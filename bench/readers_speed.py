"""Parse speed of each reader per MB of log, on the genuine logs of tests/fixtures/real-cli and
the Claude Code logs of tests/fixtures/real (and, given, a corpus such as agents-dev).

    python bench/readers_speed.py [--seconds 1.0] [--repeats 5] [CLAUDE_ROOT ...]

Each small genuine log is also repeated end to end to about `--mb` MB (the turns repeat; Aider's
input history with it) so that per-file costs do not dominate. Each log is parsed again and
again for at least `--seconds`; MB/s = bytes parsed / time, wall clock and CPU time of this
process (the CPU figure moves less when other work shares the machine). With `--repeats`, every
case is measured once per round, the rounds one after another (interleaved, so that a change in
the machine's load hits every case alike), and the median of the rounds is printed with its
range. The package's imports are frozen out of the garbage collector's sight first, as an ingest
does (`freeze_imports`), so the parse costs what it costs in `archive-mcp ingest`; `--no-freeze`
measures without. The OpenCode database is exported first (the export is what the archive parses); its
SQLite read is timed separately. Prints numbers only, no log content.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from archive_mcp.refiners import READERS, discover

from archive_mcp.ingest.workers import freeze_imports

ROOT = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def rate(source: str, files: list[Path], seconds: float) -> tuple[float, float, int]:
    """MB/s of wall-clock time and of CPU time parsing `files` for at least `seconds`."""
    parse = READERS[source].parse
    size = sum(f.stat().st_size for f in files)
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        for f in files:
            parse(f)
        done += size
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed / 1e6, done / (time.process_time() - cpu) / 1e6, size


def _spread(values: list[float]) -> str:
    """The median and the range of a case's rounds."""
    return f"{statistics.median(values):7.2f} ({min(values):6.1f}-{max(values):6.1f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("claude_roots", nargs="*", type=Path)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-freeze", action="store_true", help="leave the collector as imported")
    args = ap.parse_args(argv)
    if not args.no_freeze:
        freeze_imports()  # what run_ingest and each ingest worker do before parsing
    cli = ROOT / "real-cli"
    tmp = Path(tempfile.mkdtemp())
    tempfile.tempdir = str(tmp)  # the OpenCode export goes here
    db = tmp / "oc" / "opencode.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.executescript((cli / "opencode-1.18.33" / "opencode.sql").read_text(encoding="utf-8"))
    con.close()
    t0 = time.perf_counter()
    for _ in range(20):
        [oc] = discover(db.parent).sessions
    read_ms = (time.perf_counter() - t0) / 20 * 1000
    cases = {
        "claude-code (fixtures/real)": (
            "claude-code",
            [f.path for s in discover(ROOT / "real" / "claude").sessions for f in s.files],
        ),
        "codex 0.171": ("codex", sorted((cli / "codex-0.171.0").rglob("*.jsonl"))),
        "gemini 0.61": ("gemini", sorted((cli / "gemini-0.61.0").rglob("session-*.jsonl"))),
        "qwen-code 0.15": ("qwen-code", sorted((cli / "qwen-0.15.10").rglob("*.jsonl"))),
        "aider 0.86": ("aider", [cli / "aider-0.86.2" / "repo" / ".aider.chat.history.md"]),
        "opencode 1.18 (export)": ("opencode", [oc.files[0].path]),
        "pi 0.73": ("pi", sorted((cli / "pi-0.73.1").rglob("*.jsonl"))),
        "copilot 1.0": ("copilot", sorted((cli / "copilot-1.0.102").rglob("events.jsonl"))),
        "droid 0.225": ("droid", sorted((cli / "droid-0.225.2").rglob("*.jsonl"))),
    }
    [cn] = sorted((cli / "continue-1.5.47").rglob("????????-*.json"))
    doc = json.loads(cn.read_bytes())
    doc["history"] *= max(1, int(args.mb * 1e6 / cn.stat().st_size))
    (tmp / "cn").mkdir()
    (tmp / "cn" / cn.name).write_text(json.dumps(doc), encoding="utf-8")
    cases[f"continue 1.5 (history x{len(doc['history']) // 15})"] = (
        "continue",
        [tmp / "cn" / cn.name],
    )
    for name, (source, files) in list(cases.items()):
        if name.startswith(("claude", "continue")):
            continue
        [one] = files
        times = max(1, int(args.mb * 1e6 / one.stat().st_size))
        big = tmp / "big" / source / one.name
        big.parent.mkdir(parents=True)
        big.write_bytes(one.read_bytes() * times)
        if source == "aider":
            history = one.parent / ".aider.input.history"
            (big.parent / history.name).write_bytes(history.read_bytes() * times)
        cases[f"{name} x{times}"] = (source, [big])
    for root in args.claude_roots:
        files = [f.path for s in discover(root).sessions for f in s.files]
        cases[f"claude-code ({root.name})"] = ("claude-code", files)
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    sizes: dict[str, int] = {}
    for _ in range(max(1, args.repeats)):
        for name, (source, files) in cases.items():
            w, c, sizes[name] = rate(source, files, args.seconds)
            wall[name].append(w)
            cpu[name].append(c)
    print(f"{'':32} {'size':>10}     wall MB/s (range)           CPU MB/s (range)")
    for name in cases:
        print(
            f"{name:32} {sizes[name] / 1e3:10.1f} kB  {_spread(wall[name])}  {_spread(cpu[name])}"
        )
    print(f"opencode SQLite read + export of one session: {read_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
