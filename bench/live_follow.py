"""Following the agents' homes: how fresh the running server is, what following costs when idle,
whether tool calls wait on a catch-up, and whether a killed watcher loses anything.

    python bench/live_follow.py latency [--appends 50]
    python bench/live_follow.py idle [--sessions 1000] [--seconds 45]
    python bench/live_follow.py catchup [--turns 50000]
    python bench/live_follow.py kill [--runs 5]
    python bench/live_follow.py kill-serve [--runs 5] [--seed 26]
    python bench/live_follow.py all

Everything runs in a temporary folder (`--dir` to choose it): a throwaway user home whose
`~/.claude/projects/` holds synthetic Claude Code sessions, an archive home, and `archive-mcp
serve` started over stdio as a client would start it (`--embedder none` unless `--embedder`).

- latency: one live session; `--appends` times a turn with a unique word is appended (every
  fifth time a new session file is created instead) and `search_context` is polled every 50 ms
  until the word is found: append -> searchable seconds, p50/p95/max.
- idle: `--sessions` sessions are archived first, then the server (follow on, and as baseline
  `--no-follow`) is started, left `--settle` s to finish its first round, and its process CPU
  time (user+sys, from /proc) is read over `--seconds` s with nothing changing.
- catchup: a Kimi home of `--turns` turns not yet archived; the server starts following it and
  `list_workspaces` is called every 100 ms until the catch-up is done: p95 of its latency.
- kill: `archive-mcp watch` over a 2,000-turn Kimi home is SIGKILLed at a random moment of its
  catch-up, restarted, and the result compared with a fresh `ingest` (rows, raw copies, state).
- kill-serve: the same with a following `archive-mcp serve` (stdio, as a client starts it, its
  stdin held open): SIGKILLed (with its process group) at a random moment (`--seed`) after its
  follower took the archive's lock, restarted, left until every log file a fresh ingest archives
  is archived, stopped as a client stops it (stdin closed), then compared the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import random
import signal
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from archive_mcp import Archive

PROJECT = "/home/dev/projects/live-{}"


def record(kind: str, sid: str, cwd: str, text: str, sec: int) -> str:
    message: dict[str, Any] = {"role": kind, "content": text}
    if kind == "assistant":
        message = {"id": f"m{sec}", "role": kind, "content": [{"type": "text", "text": text}]}
    return (
        json.dumps(
            {
                "type": kind,
                "sessionId": sid,
                "cwd": cwd,
                "version": "2.1.9",
                "timestamp": f"2026-03-20T{10 + sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z",
                "message": message,
            }
        )
        + "\n"
    )


def claude_session(home: Path, project: int, sid: str, turns: int = 5, word: str = "") -> Path:
    cwd = PROJECT.format(project)
    folder = home / ".claude" / "projects" / ("-" + cwd.strip("/").replace("/", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for t in range(turns):
        lines.append(record("user", sid, cwd, f"question {t} about {word or sid}", 2 * t))
        lines.append(record("assistant", sid, cwd, f"answer {t} for {sid}", 2 * t + 1))
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def env_for(root: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env.update(
        HOME=str(root / "user"),
        ARCHIVE_MCP_HOME=str(root / "archive"),
        KIMI_SHARE_DIR=str(root / "user" / ".kimi"),
        KIMI_CODE_HOME=str(root / "user" / ".kimi-code"),
        ARCHIVE_MCP_EMBEDDER=embedder,
        HF_HUB_OFFLINE="1",
    )
    return env


def server(env: dict[str, str], *flags: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "archive_mcp", "serve", *flags], env=env, cwd="/"
    )


async def hits(client: Client, word: str) -> int:
    r = await client.call_tool(
        "search_context", {"query": word, "all_workspaces": True, "mode": "lexical", "limit": 1}
    )
    return len(r.structured_content["hits"]) if not r.is_error else 0


async def until_found(client: Client, word: str, limit: float = 60) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if await hits(client, word):
            return time.monotonic() - t0
        await asyncio.sleep(0.05)
    return float("inf")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def latency(root: Path, appends: int, embedder: str) -> dict[str, Any]:
    user = root / "user"
    log = claude_session(user, 0, "live-0", word="seedword")
    env = env_for(root, embedder)
    out: list[float] = []
    new_files: list[float] = []
    async with Client(server(env), read_timeout_seconds=120) as client:
        start = await until_found(client, "seedword", 120)
        for i in range(appends):
            word = "zq" + "".join(random.choices(string.ascii_lowercase, k=10))
            if i % 5 == 4:
                claude_session(user, i % 3, f"new-{i}", turns=1, word=word)
            else:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(record("user", "live-0", PROJECT.format(0), f"now {word}", 100 + i))
            found = await until_found(client, word, 60)
            (new_files if i % 5 == 4 else out).append(found)
            await asyncio.sleep(random.uniform(0.0, 0.5))
    both = out + new_files
    return {
        "first_round_s": round(start, 2),
        "appends": len(out),
        "new_files": len(new_files),
        "p50_s": round(pct(both, 0.5), 2),
        "p95_s": round(pct(both, 0.95), 2),
        "max_s": round(max(both), 2),
        "p95_append_s": round(pct(out, 0.95), 2),
        "p95_new_file_s": round(pct(new_files, 0.95), 2),
        "within_5s": sum(1 for x in both if x <= 5),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(env: dict[str, str]) -> int:
    """The pid of the `archive_mcp serve` child of this process started with `env`."""
    me = os.getpid()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            environ = (p / "environ").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and b"serve" in cmd:
            if f"ARCHIVE_MCP_HOME={env['ARCHIVE_MCP_HOME']}".encode() in environ:
                return int(p.name)
    raise RuntimeError("server process not found")


async def idle(
    root: Path, sessions: int, seconds: float, settle: float, embedder: str
) -> dict[str, Any]:
    user = root / "user"
    for i in range(sessions):
        claude_session(user, i % 20, f"s{i:05d}")
    env = env_for(root, embedder)
    t0 = time.monotonic()
    Archive(root / "archive", embedder=None).ingest(user / ".claude")
    ingest_s = time.monotonic() - t0
    from archive_mcp.live import follow_roots, scan

    os.environ.update(HOME=env["HOME"])
    roots = follow_roots()
    t0 = time.perf_counter()
    for _ in range(20):
        snap = scan(roots)
    scan_ms = (time.perf_counter() - t0) / 20 * 1000
    out: dict[str, Any] = {
        "sessions": sessions,
        "ingest_s": round(ingest_s, 1),
        "scan_entries": len(snap),
        "scan_ms": round(scan_ms, 2),
    }
    for label, flags in (("follow", ()), ("no-follow", ("--no-follow",))):
        async with Client(server(env, *flags), read_timeout_seconds=120) as client:
            await client.list_tools()
            pid = server_pid(env)
            await asyncio.sleep(settle)
            c0, w0 = cpu_seconds(pid), time.monotonic()
            await asyncio.sleep(seconds)
            c1, w1 = cpu_seconds(pid), time.monotonic()
            out[f"{label}_cpu_pct_of_one_core"] = round(100 * (c1 - c0) / (w1 - w0), 3)
    out["seconds"] = seconds
    return out


async def catchup(root: Path, turns: int, embedder: str) -> dict[str, Any]:
    from archive_mcp.synthetic.sessions import generate_share_dir

    made = generate_share_dir(root / "user" / ".kimi", turns, big_every=0, small=(200, 1500))
    env = env_for(root, embedder)
    waits: list[float] = []
    async with Client(server(env), read_timeout_seconds=600) as client:
        t_start = time.monotonic()
        await client.list_tools()
        while True:
            t0 = time.monotonic()
            r = await client.call_tool("list_workspaces", {})
            waits.append(time.monotonic() - t0)
            probe = await client.call_tool(
                "search_context", {"query": "x", "all_workspaces": True, "limit": 1}
            )
            behind = (probe.structured_content or {}).get("catching_up")
            n = len((r.structured_content or {}).get("workspaces", []))
            if not behind and n >= 8 and time.monotonic() - t_start > 5:
                break
            if time.monotonic() - t_start > 1800:
                break
            await asyncio.sleep(0.1)
        took = time.monotonic() - t_start
    turns_archived = (
        Archive(root / "archive", embedder=None).turns("all").select("turn").collect().height
    )
    return {
        "turns": made["turns"],
        "sessions": made["sessions"],
        "catch_up_s": round(took, 1),
        "turns_archived": turns_archived,
        "list_workspaces_calls": len(waits),
        "list_workspaces_p50_s": round(pct(waits, 0.5), 3),
        "list_workspaces_p95_s": round(pct(waits, 0.95), 3),
        "list_workspaces_max_s": round(max(waits), 3),
    }


def digest(home: Path) -> dict[str, Any]:
    archive = Archive(home, embedder=None)
    rows = archive.turns("all").collect().sort("workspace_id", "session_id", "agent", "turn")
    raw, states = {}, {}
    for ws in archive.workspaces():
        for p in sorted(ws.raw_dir.rglob("*")):
            if p.is_file():
                raw[f"{ws.id}/{p.relative_to(ws.root)}"] = hashlib.sha256(
                    p.read_bytes()
                ).hexdigest()
        states[ws.id] = json.loads((ws.state_dir / "ingest.json").read_text())["files"]
    return {
        "rows": rows.height,
        "rows_sha": hashlib.sha256(rows.write_ndjson().encode()).hexdigest(),
        "raw": raw,
        "states": states,
    }


def watch(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "watch", "--interval", "0.2"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )


def kill(root: Path, runs: int) -> dict[str, Any]:
    from archive_mcp.synthetic.sessions import generate_share_dir

    share = root / "user" / ".kimi"
    generate_share_dir(share, 2000, big_every=0, small=(200, 1500), turns_per_session=(5, 20))
    fresh = root / "fresh"
    Archive(fresh, embedder=None).ingest(share)
    want = digest(fresh)
    results = []
    for run in range(runs):
        env = env_for(root / f"run{run}", "none")
        env["KIMI_SHARE_DIR"] = str(share)
        first = watch(env)
        assert first.stderr is not None
        first.stderr.readline()  # "following ..."
        delay = random.uniform(0.05, 1.5)
        time.sleep(delay)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        mid = Archive(Path(env["ARCHIVE_MCP_HOME"]), embedder=None).turns("all").collect().height
        again = watch(env)
        assert again.stderr is not None
        again.stderr.readline()
        again.stderr.readline()  # the first round
        again.send_signal(signal.SIGTERM)
        code = again.wait(60)
        got = digest(Path(env["ARCHIVE_MCP_HOME"]))
        results.append(
            {
                "killed_after_s": round(delay, 2),
                "rows_at_kill": mid,
                "rows_after_restart": got["rows"],
                "identical": got == want,
                "exit": code,
            }
        )
    return {"fresh_rows": want["rows"], "runs": results}


def serve_proc(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`archive-mcp serve` over stdio, following; its stdin stays open (a client that says nothing)."""
    return subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
        start_new_session=True,
    )


def wait_for(check: Any, limit: float, what: str) -> float:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > limit:
            raise TimeoutError(f"{what} not within {limit} s")
        time.sleep(0.02)
    return time.monotonic() - t0


def kill_serve(root: Path, runs: int, seed: int) -> dict[str, Any]:
    from archive_mcp.live import archived_snapshot, changed_files, scan
    from archive_mcp.synthetic.sessions import generate_share_dir

    share = root / "user" / ".kimi"
    generate_share_dir(share, 2000, big_every=0, small=(200, 1500), turns_per_session=(5, 20))
    fresh = root / "fresh"
    t0 = time.monotonic()
    Archive(fresh, embedder=None).ingest(share)
    fresh_s = time.monotonic() - t0
    want = digest(fresh)
    leftover = changed_files(archived_snapshot(fresh), scan([share]))  # kimi.json: not a session
    rng = random.Random(seed)
    results = []
    for run in range(runs):
        env = env_for(root / f"run{run}", "none")
        env["KIMI_SHARE_DIR"] = str(share)
        home = Path(env["ARCHIVE_MCP_HOME"])
        holder = home / "follow.lock.holder"
        first = serve_proc(env)
        started = wait_for(holder.exists, 120, "the follower's lock")
        delay = rng.uniform(0.05, 3.0)
        time.sleep(delay)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        mid = Archive(home, embedder=None).turns("all").collect().height if home.exists() else 0
        again = serve_proc(env)
        caught = wait_for(
            lambda h=home: changed_files(archived_snapshot(h), scan([share])) == leftover,
            600,
            "the catch-up after the restart",
        )
        assert again.stdin is not None
        again.stdin.close()  # a client stopping its server
        code = again.wait(120)
        got = digest(home)
        results.append(
            {
                "lock_after_start_s": round(started, 2),
                "killed_after_lock_s": round(delay, 2),
                "rows_at_kill": mid,
                "caught_up_after_restart_s": round(caught, 1),
                "rows_after_restart": got["rows"],
                "rows_sha_equal": got["rows_sha"] == want["rows_sha"],
                "raw_equal": got["raw"] == want["raw"],
                "identical": got == want,
                "exit": code,
            }
        )
    return {
        "seed": seed,
        "fresh_rows": want["rows"],
        "fresh_rows_sha": want["rows_sha"][:16],
        "fresh_raw_files": len(want["raw"]),
        "fresh_ingest_s": round(fresh_s, 1),
        "runs": results,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=["latency", "idle", "catchup", "kill", "kill-serve", "all"])
    ap.add_argument("--dir", type=Path, help="Work folder (default: a temporary one).")
    ap.add_argument("--appends", type=int, default=50)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=45)
    ap.add_argument("--settle", type=float, default=15)
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=26, help="kill-serve: the kill moments' seed")
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        out: dict[str, Any] = {
            "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
            "embedder": args.embedder,
        }
        everything = ["latency", "idle", "catchup", "kill", "kill-serve"]
        todo = everything if args.what == "all" else [args.what]
        for what in todo:
            sub = root / what
            sub.mkdir()
            t0 = time.monotonic()
            if what == "latency":
                out[what] = asyncio.run(latency(sub, args.appends, args.embedder))
            elif what == "idle":
                out[what] = asyncio.run(
                    idle(sub, args.sessions, args.seconds, args.settle, args.embedder)
                )
            elif what == "catchup":
                out[what] = asyncio.run(catchup(sub, args.turns, args.embedder))
            elif what == "kill":
                out[what] = kill(sub, args.runs)
            else:
                out[what] = kill_serve(sub, args.runs, args.seed)
            out[what]["wall_s"] = round(time.monotonic() - t0, 1)
            print(json.dumps({what: out[what]}), file=sys.stderr, flush=True)
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
