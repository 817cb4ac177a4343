"""The web UI's page times on a 50k-turn archive (target: every page <= 300 ms server time).

Builds (or reuses, `--home`) a generated archive of `--turns` turns in 8 workspaces (the
generator `search.py` uses) plus one session of `--long` turns in a workspace of its own, tags a
theme from a seed, starts `UIServer` on a free port of 127.0.0.1 and times each page over HTTP
(wall time of the whole answer over loopback: an upper bound of the server's time). Each page is
fetched `--rounds` times after one cold fetch; the library call the page wraps is timed in the
same process beside it (the baseline: what any face pays for that data).

    python bench/ui.py --out OUT              # builds OUT/share and OUT/home (about 4 min)
    python bench/ui.py --out OUT --reuse      # measures the archive built before
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from archive_mcp import Archive  # noqa: E402
from archive_mcp.synthetic.sessions import TurnSpec, generate_share_dir, write_session  # noqa: E402
from archive_mcp.ui import UIServer  # noqa: E402

LONG_SID = "00000000-0000-4000-8000-000000002000"
TYPED = ["r", "re", "ret", "retr", "retry", "retry b", "retry backoff"]


def build(out: Path, turns: int, long: int, reuse: bool) -> Archive:
    """The archive in OUT/home: built from a generated share unless `reuse`; the long session
    is added when it is missing."""
    share = out / "share"
    t = time.perf_counter()
    if not reuse:
        made = generate_share_dir(share / "kimi", turns, workspaces=8)
        print(f"generated {made}", file=sys.stderr)
    a = Archive(out / "home")
    if reuse and any(w.name == "long-session" for w in a.workspaces()):
        return a
    write_session(
        share / "kimi",
        "/home/dev/projects/long-session",
        [
            TurnSpec(f"step {i}: check retry_with_backoff in lib/net/retry.go", f"done {i}")
            for i in range(long)
        ],
        1767225600.0,
        session_id=LONG_SID,
    )
    a.ingest(share / "kimi", exclude=())
    print(f"ingested in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return a


def timed(fn: Callable[[], Any], rounds: int) -> tuple[float, list[float]]:
    """The first call's seconds and those of `rounds` more."""
    t = time.perf_counter()
    fn()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    return cold, warm


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--turns", type=int, default=50_000)
    p.add_argument("--long", type=int, default=2_000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reuse", action="store_true")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    a = build(args.out, args.turns, args.long, args.reuse)
    workspaces = a.workspaces()
    sizes = {w.id: a.stats(w.id).turns for w in workspaces}
    big = max((w for w in workspaces if w.name != "long-session"), key=lambda w: sizes[w.id])
    longws = next(w for w in workspaces if w.name == "long-session")
    if "retry" not in {t.name for t in a.list_themes(big)}:
        a.tag_theme("retry", big, seeds=["retry_with_backoff"])
    theme = next(t for t in a.list_themes(big) if t.name == "retry")
    sess = (
        a.sessions(big.id).sort("turns", descending=True).collect().row(0, named=True)["session_id"]
    )
    srv = UIServer(a, port=0, token=None).start()

    def get(path: str) -> Callable[[], int]:
        def fetch() -> int:
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            conn.close()
            if r.status != 200:
                raise SystemExit(f"{path}: {r.status} {body[:300]!r}")
            return len(body)

        return fetch

    import polars as pl

    pages: list[tuple[str, str, Callable[[], Any] | None]] = [
        ("home", "/", lambda: a.sessions("all").collect()),
        ("workspace (largest)", f"/w/{big.id}", lambda: a.sessions(big.id).collect()),
        (
            f"session ({sizes[big.id] // 1000}k-turn workspace, largest)",
            f"/w/{big.id}/s/{sess}",
            lambda: a.turns(big.id).filter(pl.col("session_id") == sess).collect(),
        ),
        (
            f"session of {args.long} turns, page 1",
            f"/w/{longws.id}/s/{LONG_SID}",
            lambda: a.turns(longws.id).filter(pl.col("session_id") == LONG_SID).collect(),
        ),
        (f"session of {args.long} turns, last page", f"/w/{longws.id}/s/{LONG_SID}?page=999", None),
        (
            "turn permalink (raw log)",
            f"/turn/{sess}:3",
            lambda: a.load_turn_context([f"{sess}:3"], anywhere=True, max_chars=400_000),
        ),
        ("tool call opened", f"/fragment/tool?ref={sess}:3&i=0", None),
        ("themes list", f"/w/{big.id}/themes", lambda: a.list_themes(big)),
        (
            f"theme trace + chart ({len(theme.members)} turns)",
            f"/w/{big.id}/themes/retry",
            lambda: a.trace_theme("retry", big),
        ),
        ("export session .md", f"/export/session/{big.id}/{sess}.md", None),
    ]

    def searching(q: str) -> Callable[[], Any]:
        return lambda: a.search(q, workspace=big.id, limit=20)

    for q in TYPED:
        pages.append(
            (
                f"search as typed '{q}' (one workspace)",
                f"/search?q={quote(q)}&w={big.id}&fragment=1",
                searching(q),
            )
        )
    pages.append(
        (
            "search 'retry backoff' (all 9 workspaces)",
            f"/search?q={quote('retry backoff')}&fragment=1",
            lambda: a.search("retry backoff", workspace="all", limit=20),
        )
    )
    get("/usage")()  # queues every log's model read
    srv.overview.scan.wait(600)
    pages.append(("usage (models read)", "/usage", None))
    rows = []
    for name, path, lib in pages:
        cold, warm = timed(get(path), args.rounds)
        base = timed(lib, args.rounds)[1] if lib else None
        rows.append(
            {
                "page": name,
                "cold_ms": round(cold * 1000),
                "p50_ms": round(statistics.median(warm) * 1000),
                "max_ms": round(max(warm) * 1000),
                "library_p50_ms": round(statistics.median(base) * 1000) if base else None,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    srv.stop()
    load = os.getloadavg()
    print(f"turns: {sum(sizes.values())} in {len(workspaces)} workspaces; load {load[0]:.1f}")
    print("| page | cold ms | p50 ms | max ms | library call p50 ms |")
    print("|---|---|---|---|---|")
    for r in rows:
        cell = "" if r["library_p50_ms"] is None else r["library_p50_ms"]
        print(f"| {r['page']} | {r['cold_ms']} | {r['p50_ms']} | {r['max_ms']} | {cell} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "load": load}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
