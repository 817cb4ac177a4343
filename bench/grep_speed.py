"""grep_turns against ripgrep over the same raw logs (issue 41): the time of each pattern, cold (a
fresh archive, no turn parsed yet) and warm (asked again), beside `rg -i -c PATTERN RAW`; and
whether the raw-log prefilter changes any result (each pattern asked again with it off: every
turn parsed).

    HF_HUB_OFFLINE=1 python bench/grep_speed.py HOME WORKSPACE RAW [--pattern P ...] [--json PATH]

HOME is an archive home holding the workspace WORKSPACE (e.g. one `agent_eval.py prepare` built),
RAW the folder of the raw logs it was ingested from (what `rg` searches). Without `--pattern`, the
patterns the grep agents of the two-agent comparison used (one per kind: words, alternatives, a
path, a word boundary, a command).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PATTERNS = [
    "working tree clean|nothing to commit",
    "git commit",
    "no-verify|pre-commit",
    r"locales/en\.ts",
    "pnpm (run )?build|npm run build|tsc --noEmit",
    r"\bAAT\b",
    "screener|scroll",
    "token autopilot",
]


def _rg(pattern: str, raw: Path) -> tuple[float, int]:
    """Seconds and matching lines of `rg -i -c` over the raw logs (best of three)."""
    times, lines = [], 0
    for _ in range(3):
        t = time.perf_counter()
        out = subprocess.run(
            ["rg", "-i", "-c", pattern, str(raw)], capture_output=True, text=True, check=False
        )
        times.append(time.perf_counter() - t)
        lines = sum(int(x.rsplit(":", 1)[1]) for x in out.stdout.splitlines() if ":" in x)
    return min(times), lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("home", type=Path)
    p.add_argument("workspace")
    p.add_argument("raw", type=Path)
    p.add_argument("--pattern", action="append")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    os.environ["ARCHIVE_MCP_HOME"] = str(a.home)
    from archive_mcp import Archive
    from archive_mcp.search import grep, parsed

    rows = []
    for pattern in a.pattern or PATTERNS:
        parsed._PARSED.clear()
        archive = Archive(embedder=None)
        t = time.perf_counter()
        found = archive.grep_turns(pattern, a.workspace)
        cold = time.perf_counter() - t
        warm_times = []
        for _ in range(3):
            t = time.perf_counter()
            archive.grep_turns(pattern, a.workspace)
            warm_times.append(time.perf_counter() - t)
        keep, grep.PREFILTERED = grep.PREFILTERED, frozenset()
        try:
            every = archive.grep_turns(pattern, a.workspace)
        finally:
            grep.PREFILTERED = keep
        same = [(x.session_id, x.agent, x.turn, x.lines, x.more) for x in found.turns] == [
            (x.session_id, x.agent, x.turn, x.lines, x.more) for x in every.turns
        ]
        rg_s, rg_lines = _rg(pattern, a.raw)
        rows.append(
            {
                "pattern": pattern,
                "turns": len(found.turns),
                "lines": sum(len(x.lines) + x.more for x in found.turns),
                "cold_s": round(cold, 3),
                "warm_s": round(statistics.median(warm_times), 3),
                "rg_s": round(rg_s, 3),
                "rg_lines": rg_lines,
                "prefilter_same": same,
            }
        )
    print("| pattern | turns | lines | cold s | warm s | rg s (its lines) | prefilter same |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| `{r['pattern']}` | {r['turns']} | {r['lines']} | {r['cold_s']} | {r['warm_s']} "
            f"| {r['rg_s']} ({r['rg_lines']}) | {r['prefilter_same']} |"
        )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0 if all(r["prefilter_same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
