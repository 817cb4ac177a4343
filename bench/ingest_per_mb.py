"""End-to-end ingest cost per MB: `archive-mcp ingest` of an Aider history, of Claude Code logs and
of one session each of Pi, the Copilot CLI, Continue, Droid, Cline, Goose and Crush, each about 1 MB, beside a tiny
ingest whose cost is the command's own (start-up, imports, store).

    python bench/ingest_per_mb.py [--rounds 5] [--mb 1.0] [--only CASE ...] [--against REV]

What a user runs, not the reader alone (`readers_speed.py`): each case is one
`archive-mcp ingest PATH --no-embed --no-index` in a fresh process with a fresh archive home (and
a temporary HOME), its CPU time (user + system, from the OS) measured. The data comes from the
repository's genuine fixtures: Aider's history of `tests/fixtures/real-cli/aider-0.86.2` repeated
to ~`--mb` MB (its input history with it, as `readers_speed.py` builds it), the Claude Code logs
of `tests/fixtures/real/claude` copied until ~`--mb` MB with each copy's session ids changed (so
each copy is a session of its own), and the Aider fixture as written (2.5 kB) for the fixed cost.
Pi, Copilot CLI, Continue, Droid and Cline: the genuine session of each in
`tests/fixtures/real-cli`, its records after the first (the header) repeated to ~`--mb` MB in one
session (Continue: its `history` items; Cline: its `messages`), so the turns are the genuine ones,
many times over; Goose likewise from its fixture built from the documented format. Cursor (its
composer's bubbles, each copy under new ids), the Cursor CLI (its messages, each copy a blob of
its own under one root) and VS Code's chat (its `.json` document's requests): the session of each
in `tests/fixtures/documented` (built from the documented format) grown the same way in its
store; their size is the JSON the reader parses (the stored values), not the SQLite file.
Crush: its fixture's `crush.db` (built from Crush's migration SQL, `tests/fixtures/crush`) in a
project folder, its main session's messages copied under new ids to ~`--mb` MB of `parts`.
Cases run interleaved, `--rounds` times; the median and range of each is printed, and each big
case's cost above the tiny one, per MB. `--against REV` runs every case also with git revision
REV's package (`git archive` of it, first on PYTHONPATH), interleaved with this checkout's in each
round, on the same data. Prints numbers only, no log content.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from archive_mcp.refiners import cursor_cli

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
AIDER = FIXTURES / "real-cli" / "aider-0.86.2" / "repo"
CLAUDE = FIXTURES / "real" / "claude"
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def aider_history(dst: Path, mb: float) -> Path:
    """The genuine Aider history and input history, each repeated to about `mb` MB."""
    history = AIDER / ".aider.chat.history.md"
    times = max(1, int(mb * 1e6 / history.stat().st_size))
    dst.mkdir(parents=True)
    for name in (".aider.chat.history.md", ".aider.input.history"):
        (dst / name).write_bytes((AIDER / name).read_bytes() * times)
    return dst


def claude_logs(dst: Path, mb: float) -> Path:
    """Copies of the Claude Code fixtures up to about `mb` MB, copy k's session ids starting
    with the hex digit k (names and contents), so every copy holds sessions of its own."""
    files = sorted(CLAUDE.rglob("*.jsonl"))
    size = sum(f.stat().st_size for f in files)
    for k in range(max(1, min(16, round(mb * 1e6 / size)))):

        def renamed(m: re.Match[bytes], k: int = k) -> bytes:
            return b"%x" % k + m.group()[1:]

        for f in files:
            rel = UUID.sub(renamed, str(f.relative_to(CLAUDE)).encode()).decode()
            out = dst / f"copy{k}" / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(UUID.sub(renamed, f.read_bytes()))
    return dst


NEW_AGENTS = {  # fixture home -> its session log, under tests/fixtures/real-cli
    "pi 0.73": ("pi-0.73.1/dot-pi", "*.jsonl"),
    "copilot 1.0": ("copilot-1.0.102/dot-copilot", "events.jsonl"),
    "continue 1.5": ("continue-1.5.47/dot-continue", "????????-*.json"),
    "droid 0.225": ("droid-0.225.2/dot-factory", "*.jsonl"),
    "cline 3.0": ("cline-3.0.65/dot-cline", "1*.messages.json"),
    "goose (built fixture)": ("../goose", "*.jsonl"),  # no Goose build runs here
}


def one_long_session(name: str, dst: Path, mb: float) -> tuple[Path, Path]:
    """A copy of agent `name`'s fixture home whose one session is repeated to about `mb` MB:
    the home and the log in it."""
    home, pattern = NEW_AGENTS[name]
    shutil.copytree(FIXTURES / "real-cli" / home, dst)
    [log] = sorted(dst.rglob(pattern))
    times = max(1, int(mb * 1e6 / log.stat().st_size))
    if log.suffix == ".json":
        doc = json.loads(log.read_bytes())
        key = "history" if "history" in doc else "messages"  # Continue's, Cline's
        doc[key] = doc[key] * times
        log.write_text(json.dumps(doc), encoding="utf-8")
    else:
        head, *body = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(head + b"".join(body) * times)
    return dst, log


DOCUMENTED = {  # fixture home under tests/fixtures/documented -> the path ingested in it
    "cursor (documented)": "cursor/User",
    "cursor-cli (documented)": "cursor-cli/dot-cursor",
    "copilot-chat (documented)": "vscode/User",
}


def _build_stores(home: Path) -> None:
    for sql in sorted(home.rglob("*.sql")):
        con = sqlite3.connect(sql.with_suffix(""))
        con.executescript(sql.read_text(encoding="utf-8"))
        con.close()
        sql.unlink()


def documented_session(name: str, dst: Path, mb: float) -> tuple[Path, int]:
    """A copy of the documented fixture home of `name` whose one session is grown to about `mb`
    MB (see the module's docstring): the path to ingest and the session's bytes."""
    shutil.copytree(
        FIXTURES / "documented" / name.split()[0].replace("copilot-chat", "vscode"), dst
    )
    _build_stores(dst)
    path = dst / DOCUMENTED[name].split("/", 1)[1]
    if name.startswith("copilot-chat"):
        log = next(path.rglob("chatSessions/*.json"))
        doc = json.loads(log.read_bytes())
        doc["requests"] = doc["requests"] * max(1, int(mb * 1e6 / log.stat().st_size))
        log.write_text(json.dumps(doc), encoding="utf-8")
        return path, log.stat().st_size
    db = next(path.rglob("*.vscdb" if name.startswith("cursor ") else "store.db"))
    con = sqlite3.connect(db)
    if name.startswith("cursor "):
        (key, head), *_ = con.execute(
            "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%' AND value LIKE '%Shell%'"
        )
        cid, data = key.split(":", 1)[1], json.loads(head)
        rows = con.execute(
            "SELECT key, value FROM cursorDiskKV WHERE key LIKE ?", (f"bubbleId:{cid}:%",)
        ).fetchall()
        size = len(head) + sum(len(v) for _k, v in rows)
        heads, times = data["fullConversationHeadersOnly"], max(1, int(mb * 1e6 / size))
        data["fullConversationHeadersOnly"] = [
            dict(h, bubbleId=f"{h['bubbleId']}-{k}") for k in range(times) for h in heads
        ]
        con.executemany(
            "INSERT INTO cursorDiskKV VALUES (?, ?)",
            [(f"{key}-{k}", v) for k in range(times) for key, v in rows],
        )
        con.execute("UPDATE cursorDiskKV SET value = ? WHERE key = ?", (json.dumps(data), key))
        con.commit()
        total = sum(
            len(v)
            for _k, v in con.execute(
                "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'bubbleId:%' OR key = ?", (key,)
            )
        )
    else:
        # the conversation's messages in tree order (the blobs table holds them by id, its
        # order no conversation's), the system prompt once
        ordered = [m for _b, m in cursor_cli.read_store(db)["messages"]]
        blobs = [m for m in ordered if m.get("role") != "system"]
        times = max(1, int(mb * 1e6 / sum(len(json.dumps(b)) for b in blobs)))
        msgs = [json.dumps(m).encode() for m in ordered if m.get("role") == "system"]
        msgs += [json.dumps(dict(m, copy=k)).encode() for k in range(times) for m in blobs]
        ids = [hashlib.sha256(m).digest() for m in msgs]
        root = b"".join(b"\x0a\x20" + i for i in ids)
        con.execute("DELETE FROM blobs")
        con.executemany(
            "INSERT INTO blobs VALUES (?, ?)",
            [(i.hex(), m) for i, m in zip(ids, msgs, strict=True)],
        )
        con.execute("INSERT INTO blobs VALUES (?, ?)", (hashlib.sha256(root).hexdigest(), root))
        (meta,) = con.execute("SELECT value FROM meta").fetchone()
        meta = json.loads(bytes.fromhex(meta))
        meta["latestRootBlobId"] = hashlib.sha256(root).hexdigest()
        con.execute("UPDATE meta SET value = ?", (json.dumps(meta).encode().hex(),))
        con.commit()
        total = sum(len(m) for m in msgs)
    con.close()
    return path, total


def crush_session(dst: Path, mb: float) -> tuple[Path, int]:
    """A project folder holding the Crush fixture's `.crush/crush.db`, its main session's
    well-formed messages copied (new ids, each copy later) to about `mb` MB of `parts`: the folder
    and the session's `parts` bytes."""
    db = dst / ".crush" / "crush.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    for sql in ("schema.sql", "sessions.sql"):
        con.executescript((FIXTURES / "crush" / sql).read_text(encoding="utf-8"))
    cur = con.execute(
        "SELECT * FROM messages WHERE parts LIKE '[%]' AND session_id ="
        " (SELECT id FROM sessions WHERE parent_session_id IS NULL) ORDER BY created_at, rowid"
    )
    cols, rows = [d[0] for d in cur.description], cur.fetchall()
    size = sum(len(r[cols.index("parts")].encode()) for r in rows)
    at = cols.index("created_at")
    copies = [
        tuple(
            f"{v}-{k}" if c == "id" else v + 1000 * k if i == at else v
            for i, (c, v) in enumerate(zip(cols, r, strict=True))
        )
        for k in range(1, max(1, int(mb * 1e6 / size)))
        for r in rows
    ]
    con.executemany(f"INSERT INTO messages VALUES ({', '.join('?' * len(cols))})", copies)
    con.commit()
    con.close()
    return dst, size * (1 + len(copies) // len(rows))


def package_at(rev: str, dst: Path) -> Path:
    """Git revision `rev` of this repository as an importable `archive_mcp` package under `dst`
    (its `refiners` and `workspaces` inside it, as the install maps them): the folder to put first
    on PYTHONPATH."""
    repo = Path(__file__).resolve().parent.parent
    tree = dst / "tree"
    tree.mkdir(parents=True)
    tar = subprocess.run(["git", "-C", str(repo), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=tar.stdout, check=True)
    pkg = dst / "pkg"
    shutil.copytree(tree / "archive_mcp", pkg / "archive_mcp")
    for sub in ("refiners", "workspaces"):
        shutil.copytree(tree / sub, pkg / "archive_mcp" / sub)
    return pkg


def ingest_cpu(path: Path, scratch: Path, pythonpath: Path | None = None) -> tuple[float, int]:
    """CPU seconds of one `archive-mcp ingest` of `path` into a fresh home (with the package
    under `pythonpath` when given, else this checkout's), and its turns."""
    home = Path(tempfile.mkdtemp(dir=scratch))
    env = {"HOME": str(home / "user"), "ARCHIVE_MCP_HOME": str(home / "archive")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(
        [sys.executable, "-m", "archive_mcp", "ingest", str(path), "--no-embed", "--no-index"]
        + ["--json"],
        capture_output=True,
        text=True,
        check=True,
        env={**_base_env(), **env},
        cwd=home,  # not the repository: `-m` puts the working folder first on the path
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(home)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, int(json.loads(run.stdout)["turns_added"])


def _base_env() -> dict[str, str]:
    """The environment the command needs (PATH, the interpreter's), no agent homes."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if k in keep}


def _log_bytes(path: Path) -> int:
    """The bytes the reader parses, as `readers_speed.py` counts them: Aider's chat history (not
    its input history), every Claude Code log."""
    logs = (
        [path / ".aider.chat.history.md"]
        if path.is_dir() and (path / ".aider.chat.history.md").exists()
        else sorted(path.rglob("*.jsonl"))
    )
    return sum(f.stat().st_size for f in logs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="the cases to run beside the fixed cost, Aider's and Claude Code's (names starting so)",
    )
    ap.add_argument(
        "--against", metavar="REV", help="also run each case with git revision REV's package"
    )
    args = ap.parse_args(argv)
    wanted = args.only
    scratch = Path(tempfile.mkdtemp())
    codes: dict[str, Path | None] = {"": None}
    if args.against:
        codes[f"{args.against}: "] = package_at(args.against, scratch / "against")
    cases = {
        "aider 0.86 (2.5 kB, fixed cost)": AIDER,
        "aider 0.86 repeated": aider_history(scratch / "aider" / "repo", args.mb),
        "claude-code fixtures copied": claude_logs(scratch / "claude", args.mb),
    }
    sizes = {name: _log_bytes(path) for name, path in cases.items()}
    for agent in (a for a in NEW_AGENTS if wanted is None or a.startswith(tuple(wanted))):
        home, log = one_long_session(agent, scratch / agent.split()[0], args.mb)
        cases[f"{agent} one session repeated"], sizes[f"{agent} one session repeated"] = (
            home,
            log.stat().st_size,
        )
    for agent in (a for a in DOCUMENTED if wanted is None or a.startswith(tuple(wanted))):
        name = f"{agent.split()[0]} one session grown"
        cases[name], sizes[name] = documented_session(agent, scratch / agent.split()[0], args.mb)
    name = "crush (built fixture) one session grown"
    cases[name], sizes[name] = crush_session(scratch / "crush", args.mb)
    cpu: dict[str, list[float]] = {code + name: [] for code in codes for name in cases}
    turns: dict[str, int] = {}
    for _ in range(max(1, args.rounds)):
        for name, path in cases.items():
            for code, pythonpath in codes.items():
                seconds, turns[code + name] = ingest_cpu(path, scratch, pythonpath)
                cpu[code + name].append(seconds)
    shutil.rmtree(scratch)
    print(f"{'':38} {'size':>9} {'turns':>6}   CPU s median (range)   above fixed, s/MB")
    first = next(iter(cases))
    for code in codes:
        fixed = statistics.median(cpu[code + first])
        for name in cases:
            med = statistics.median(cpu[code + name])
            above = f"{(med - fixed) / (sizes[name] / 1e6):6.2f}" if name != first else "     -"
            print(
                f"{code + name:38} {sizes[name] / 1e3:7.1f}kB {turns[code + name]:6}   {med:5.2f} "
                f"({min(cpu[code + name]):.2f}-{max(cpu[code + name]):.2f})      {above}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
