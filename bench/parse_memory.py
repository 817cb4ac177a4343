"""Peak RSS of an ingest of one hostile input up to the byte caps, beside an ingest of a small log.

A record's parsed size is bounded (`lines.ITEMS_MAX` values; depth by the JSON readers' own
limits; a whole `.json` chat by the line cap), so no single input may take more than a bounded
amount of memory, whatever it holds. Each case is ingested by a fresh process (`archive-mcp`'s
library, no embedder, one worker) into its own archive; the figure is the peak RSS of that process
and its children (`ru_maxrss`), minus the baseline's (the same ingest of a two-line log).

    python bench/parse_memory.py [--mb 60] [--cases NAME ...]

Prints one line a case: its size, peak RSS, RSS over the baseline, and the problems reported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RUN = """
import json, resource, sys
from archive_mcp import Archive
report = Archive(embedder=None).ingest(sys.argv[1], workers=1)
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"peak_kb": peak, "sessions": report.sessions,
                  "problems": sorted({s.reason.split(':')[0] for s in report.skipped})}))
"""


def claude_log(folder: Path, content: bytes) -> Path:
    """A Claude Code project holding one session whose prompt record's content is `content`."""
    project = folder / "projects" / "-home-alice-p"
    project.mkdir(parents=True)
    head = {"type": "user", "sessionId": "c1", "cwd": "/home/alice/p", "version": "2.1.9"}
    first = json.dumps({**head, "message": {"role": "user", "content": "hello"}}).encode()
    line = json.dumps({**head, "message": {"role": "user", "content": "X"}}).encode()
    big = line.replace(b'"X"', content)
    (project / "c1.jsonl").write_bytes(first + b"\n" + big + b"\n")
    return folder


def gemini_chat(folder: Path, messages: bytes) -> Path:
    chats = folder / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/home/alice/p", encoding="utf-8")
    doc = b'{"sessionId": "g1", "projectHash": "x", "messages": ' + messages + b"}"
    (chats / "session-2026-03-22T10-00-g1.json").write_bytes(doc)
    return folder


def cases(tmp: Path, mb: int) -> dict[str, Path]:
    n = mb << 20
    return {
        "baseline: a two-line log": claude_log(tmp / "base", b'"hi"'),
        f"{mb} MB line of empty objects": claude_log(
            tmp / "objects", b"[" + b"{}," * (n // 3) + b"{}]"
        ),
        f"{mb} MB line of one-letter strings": claude_log(
            tmp / "strings", b"[" + b'"a",' * (n // 4) + b'"a"]'
        ),
        f"{mb} MB line of one string": claude_log(tmp / "string", b'"' + b"a" * n + b'"'),
        "100k-deep line": claude_log(tmp / "deep", b"[" * 100_000 + b"]" * 100_000),
        f"{mb} MB Gemini .json chat of empty objects": gemini_chat(
            tmp / "gemini", b"[" + b"{}," * (n // 3) + b"{}]"
        ),
        "100 MB Gemini .json chat of empty objects": gemini_chat(
            tmp / "gemini100", b"[" + b"{}," * ((100 << 20) // 3) + b"{}]"
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=60, help="size of a hostile line (cap: 64)")
    ap.add_argument("--cases", nargs="*", help="only the cases whose name holds one of these")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base_kb = 0
        for name, root in cases(Path(tmp), args.mb).items():
            if (
                args.cases
                and not name.startswith("baseline")
                and not any(c in name for c in args.cases)
            ):
                continue
            env = {**os.environ, "ARCHIVE_MCP_HOME": str(Path(tmp) / f"home-{root.name}")}
            out = subprocess.run(
                [sys.executable, "-c", RUN, str(root)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(out.stdout.strip().splitlines()[-1])
            base_kb = base_kb or got["peak_kb"]
            size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
            print(
                f"{name:44} {size / 2**20:7.1f} MB  peak {got['peak_kb'] / 1024:7.1f} MB"
                f"  over baseline {(got['peak_kb'] - base_kb) / 1024:7.1f} MB"
                f"  sessions {got['sessions']}  reported: {', '.join(got['problems']) or '-'}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
