"""Sessions, turns and tool calls each reader finds in a corpus of real logs (counts only).

    python bench/readers_counts.py AGENTS_DEV_ROOT [MORE_ROOTS ...]

Each folder directly under a root (agents-dev: `claude-code/`, `codex/`, `gemini/`) is
discovered and parsed with the readers alone (no archive): one line per folder with the
sessions, log files, turns and tool calls (by status) it holds. Prints no log content, so
it is safe on logs that hold credentials. Used to check that a reader change leaves the
counts of older formats where they were.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from archive_mcp.refiners import READERS, discover


def counts(folder: Path) -> dict[str, int]:
    found = discover(folder)
    out: Counter[str] = Counter(sessions=0, files=0, turns=0, tool_calls=0)
    for session in found.sessions:
        out["sessions"] += 1
        parse = READERS[session.source].parse
        for source in session.files:
            out["files"] += 1
            result = parse(source.path)
            out["turns"] += len(result.turns)
            for turn in result.turns:
                for call in turn.tool_calls:
                    out["tool_calls"] += 1
                    out[f"calls_{call.status}"] += 1
    out["skipped"] = len(found.skipped)
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for root in args.roots:
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            c = counts(folder)
            rest = " ".join(f"{k}={v}" for k, v in sorted(c.items()) if k.startswith("calls_"))
            print(
                f"{folder.name:14} sessions={c['sessions']} files={c['files']} "
                f"turns={c['turns']} tool_calls={c['tool_calls']} {rest} skipped={c['skipped']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
