"""Issue 41's agent evaluation: an agent with archive-mcp's MCP tools (condition A) against an agent
with a shell over the raw logs (condition B), on the held-out labelled projects.

The harness (`ask.py`, `run.sh`, `blind.py`, `JUDGE.md`) lives outside the repository: pass its
folder as AGENT_EVAL. The questions are frozen in `bench/labels/agent_questions_<project>.jsonl`
(`bench/labels/agent_questions.md` says how they were written).

    python bench/agent_eval.py prepare PROJECT OUT --agents-dev AGENTS_DEV
        OUT/PROJECT/raw: a copy of that project's raw logs only (what condition B's shell sees);
        OUT/PROJECT/home: a fresh archive home holding exactly those logs, ingested by the CLI
        (`archive-mcp ingest`, embeddings and index built), its workspaces (one per cwd) then
        merged into the one with most sessions (`workspaces merge`; --keep-workspaces keeps them):
        load_turn_context and the themes tools take one workspace, while condition B's shell sees
        every log of the project. Prints the workspace to tell agent A.
    python bench/agent_eval.py serve PROJECT OUT PORT [--exe ARCHIVE_MCP] [--print]
        runs (or, with --print, prints) `archive-mcp serve --http --no-follow --no-auth --port PORT`
        on OUT/PROJECT/home; --exe picks the checkout whose code is measured (its venv's
        archive-mcp).
    python bench/agent_eval.py score OUT/PROJECT --agent-eval AGENT_EVAL
        `blind.py score` on OUT/PROJECT/judge (mapping.json, judge-output.jsonl) with the call logs
        OUT/PROJECT/ask-log.jsonl (A) and OUT/PROJECT/run-log.jsonl (B); then calls and characters
        per tool, and the calls the agents reported in OUT/PROJECT/answers-A.jsonl and
        answers-B.jsonl (their "calls" field: a helper script written is a call no log holds).

    python bench/agent_eval.py swap JUDGE OUT
        a second judge's input for the pairs `blind.py pair` wrote into JUDGE: OUT/judge-input.jsonl
        with each question's answers X and Y exchanged and OUT/mapping.json turned round, so the
        second judge reads every pair in the other order (a judge's leaning to the first answer
        cancels); `blind.py score OUT` then scores it as it scores JUDGE. The judges' scores are
        averaged per pair (results/agent.md, session 24).

PROJECT is `mthisness` (Claude Code, 64 logs of one folder), `openprintkit` (Codex, three
rollouts, kept in their YYYY/MM/DD folders), `pai` (Claude Code, two project folders,
`-Users-neilhart` and `-Users-neilhart-PAI`, copied whole with their subagents and tool results,
each into OUT/pai/raw/<folder>) or `localapi` (Claude Code, the one folder
`-Users-neilhart-Documents-BONKbot-github-local-api` of the same home: its session logs and their
subagents' logs, kept at the top of OUT/localapi/raw and in <session>/subagents/).
`tgripper` (Claude Code, the one folder `-Users-neilhart-Documents-BONKbot-github-tg-ripper` of
the same home, copied the same way as `localapi`) is a further project.
`qatools` is the folder `-Users-neilhart-Documents-BONKbot-github-qa-tools` of that home, copied
the same way into OUT/qatools/raw.
`tokenap` is the folder `-Users-neilhart-Documents-BONKbot-github-token-analysis-autopilot` of that
home (its session logs and their subagents' logs), copied the same way into OUT/tokenap/raw.
`preload` is the folder
`-Users-neilhart-Documents-BONKbot-github-web-terminal-frontend-feat-dash-pauls-preload-data` of that
home (its session logs and their subagents' logs), copied the same way into OUT/preload/raw.
`wtauto` is the folder
`-Users-neilhart-Documents-BONKbot-github-web-terminal-frontend-feat-token-analysis-autopilot` of that
home (its session logs and their subagents' logs), copied the same way into OUT/wtauto/raw.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parent / "labels"


@dataclass(frozen=True)
class Project:
    sources: tuple[str, ...]  # the logs' folders under AGENTS_DEV
    pattern: str  # the files of each that are the project's logs
    by_file: bool = False  # Codex: ingest each rollout file (dated folders are not an agent home)


PAI = "claude-code/procrypto__Personal_AI_Infrastructure/.claude/projects"
PROJECTS: dict[str, Project] = {
    "mthisness": Project(("claude-code/M-Thisness__M-Claude/Archives",), "*.jsonl"),
    "openprintkit": Project(
        ("codex/Monotoba__OpenPrintKit/.codex/sessions",), "**/*.jsonl", by_file=True
    ),
    "pai": Project((f"{PAI}/-Users-neilhart", f"{PAI}/-Users-neilhart-PAI"), "**/*"),
    "localapi": Project(
        (f"{PAI}/-Users-neilhart-Documents-BONKbot-github-local-api",), "**/*.jsonl"
    ),
    "tgripper": Project(
        (f"{PAI}/-Users-neilhart-Documents-BONKbot-github-tg-ripper",), "**/*.jsonl"
    ),
    "qatools": Project((f"{PAI}/-Users-neilhart-Documents-BONKbot-github-qa-tools",), "**/*.jsonl"),
    "tokenap": Project(
        (f"{PAI}/-Users-neilhart-Documents-BONKbot-github-token-analysis-autopilot",), "**/*.jsonl"
    ),
    "preload": Project(
        (
            f"{PAI}/-Users-neilhart-Documents-BONKbot-github-web-terminal-frontend-feat-dash-pauls-preload-data",
        ),
        "**/*.jsonl",
    ),
    "wtauto": Project(
        (
            f"{PAI}/-Users-neilhart-Documents-BONKbot-github-web-terminal-frontend-feat-token-analysis-autopilot",
        ),
        "**/*.jsonl",
    ),
}


def project(name: str) -> Project:
    if name not in PROJECTS:
        raise SystemExit(f"unknown project {name!r}: one of {', '.join(PROJECTS)}")
    return PROJECTS[name]


def raw_folders(spec: Project, raw: Path) -> list[Path]:
    """Where each source folder is copied: `raw` itself for one, `raw/<folder name>` for several."""
    if len(spec.sources) == 1:
        return [raw]
    return [raw / Path(source).name for source in spec.sources]


def copy_raw(spec: Project, agents_dev: Path, raw: Path) -> list[Path]:
    """Copy the project's logs into `raw`, keeping their paths below their source folder."""
    copied = []
    for source, dest_dir in zip(spec.sources, raw_folders(spec, raw), strict=True):
        src = agents_dev / source
        files = sorted(p for p in src.glob(spec.pattern) if p.is_file())
        if not files:
            raise SystemExit(f"no logs under {src}: is {agents_dev} the agents-dev folder?")
        for f in files:
            dest = dest_dir / f.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
            copied.append(dest)
    return copied


def ingest_paths(spec: Project, raw: Path, files: list[Path]) -> list[Path]:
    """Claude Code: each folder of session logs; Codex: every rollout file."""
    return files if spec.by_file else raw_folders(spec, raw)


def archive_cli(exe: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ARCHIVE_MCP_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([exe, *args], env=env, text=True, capture_output=True, check=False)


def prepare(name: str, out: Path, agents_dev: Path, exe: str, merge: bool) -> int:
    spec = project(name)
    base = out / name
    if base.exists():
        shutil.rmtree(base)
    raw, home = base / "raw", base / "home"
    files = copy_raw(spec, agents_dev, raw)
    size = sum(f.stat().st_size for f in files)
    print(f"{name}: {len(files)} files, {size / 1e6:.1f} MB copied to {raw}")
    t = time.perf_counter()
    done = archive_cli(exe, home, "ingest", "--json", *map(str, ingest_paths(spec, raw, files)))
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        print(done.stdout + done.stderr, file=sys.stderr)
        return done.returncode
    (base / "ingest.json").write_text(done.stdout, encoding="utf-8")
    report = json.loads(done.stdout)
    print(
        f"ingested in {seconds:.0f} s: {report['sessions']} sessions, {report['turns_added']} turns, "
        f"{report['embedded']} embedded, {len(report['skipped'])} lines skipped as malformed "
        f"(report: {base / 'ingest.json'})"
    )
    spaces = workspaces(exe, home)
    if merge and len(spaces) > 1:
        head = spaces[0]
        for ws in spaces[1:]:
            joined = archive_cli(exe, home, "workspaces", "merge", ws.id, "--into", head.id)
            if joined.returncode != 0:
                print(joined.stdout + joined.stderr, file=sys.stderr)
                return joined.returncode
        print(f"merged {len(spaces) - 1} workspaces into {head.name!r} ({head.id[:8]})")
        spaces = workspaces(exe, home)
    for ws in spaces:
        print(f"  workspace {ws.name!r} ({ws.id[:8]}): {ws.sessions} sessions, {ws.turns} turns")
    if len(spaces) == 1:
        print(f"tell agent A: workspace {spaces[0].id[:8]!r} (name {spaces[0].name!r})")
    else:
        print(
            'tell agent A: search_context takes workspace "all"; load_turn_context takes refs of '
            "any workspace without one; themes tools need one workspace each"
        )
    return 0


@dataclass(frozen=True)
class Space:
    id: str
    name: str
    sessions: int
    turns: int


def workspaces(exe: str, home: Path) -> list[Space]:
    """The home's workspaces, most sessions first."""
    listed = archive_cli(exe, home, "workspaces", "list", "--json")
    if listed.returncode != 0:
        raise SystemExit(listed.stdout + listed.stderr)
    out = []
    for ws in json.loads(listed.stdout):
        shown = archive_cli(exe, home, "workspaces", "show", ws["id"], "--json")
        if shown.returncode != 0:
            raise SystemExit(shown.stdout + shown.stderr)
        stats = json.loads(shown.stdout)["stats"]
        out.append(Space(ws["id"], ws["name"], stats["sessions"], stats["turns"]))
    return sorted(out, key=lambda w: (-w.sessions, -w.turns, w.id))


def serve(name: str, out: Path, port: int, exe: str, dry: bool) -> int:
    project(name)
    home = out / name / "home"
    if not home.is_dir():
        raise SystemExit(f"no archive home at {home}: run `prepare {name} {out}` first")
    cmd = [exe, "serve", "--http", "--no-follow", "--no-auth", "--port", str(port)]
    print(f"ARCHIVE_MCP_HOME={home} HF_HUB_OFFLINE=1 {' '.join(cmd)}")
    print(f"ASK_URL=http://127.0.0.1:{port}/mcp")
    if dry:
        return 0
    sys.stdout.flush()
    path = shutil.which(exe)
    if path is None:
        raise SystemExit(
            f"no {exe} on PATH: pass --exe with the measured checkout's venv archive-mcp"
        )
    env = {**os.environ, "ARCHIVE_MCP_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    os.execve(path, cmd, env)  # the server takes this process (and its pid)


def log_lines(path: Path) -> list[dict[str, object]]:
    if not path.is_file():
        raise SystemExit(f"no call log at {path}: the agents' ASK_LOG / RUN_LOG go there")
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def score(base: Path, agent_eval: Path) -> int:
    judge, a_log, b_log = base / "judge", base / "ask-log.jsonl", base / "run-log.jsonl"
    for need in (judge / "mapping.json", judge / "judge-output.jsonl"):
        if not need.is_file():
            raise SystemExit(f"missing {need}: run blind.py pair into {judge}, then the judge")
    a, b = log_lines(a_log), log_lines(b_log)
    done = subprocess.run(
        [sys.executable, str(agent_eval / "blind.py"), "score", str(judge), str(a_log), str(b_log)],
        check=False,
    )
    if done.returncode != 0:
        return done.returncode
    by_tool: Counter[str] = Counter()
    chars: Counter[str] = Counter()
    for row in a:
        by_tool[str(row["tool"])] += 1
        chars[str(row["tool"])] += int(str(row["chars"]))
    for tool, n in by_tool.most_common():
        print(f"  A {tool}: {n} calls, {chars[tool]:,} chars ({chars[tool] // n:,} a call)")
    print(f"  B run.sh: {len(b)} calls, {sum(int(str(r['chars'])) for r in b):,} chars")
    for cond in ("A", "B"):
        answers = base / f"answers-{cond}.jsonl"
        if answers.is_file():
            last = {str(r["id"]): r for r in log_lines(answers)}  # the last line of an id wins
            told = sum(int(str(r.get("calls", 0))) for r in last.values())
            print(f"  {cond} reported {told} calls over {len(last)} answers ({answers.name})")
    return 0


def swap(judge: Path, out: Path) -> int:
    """`judge`'s pairs with X and Y exchanged, into `out` (see the module's `swap`)."""
    given, mapping = judge / "judge-input.jsonl", judge / "mapping.json"
    for need in (given, mapping):
        if not need.is_file():
            raise SystemExit(f"missing {need}: run blind.py pair into {judge} first")
    if (out / "judge-output.jsonl").exists():
        raise SystemExit(
            f"{out} already holds a judge's output: give the second judge a new folder"
        )
    turned = {q: "BA" if ab == "AB" else "AB" for q, ab in json.loads(mapping.read_text()).items()}
    rows = []
    for row in log_lines(given):
        if row["id"] not in turned:
            raise SystemExit(f"question {row['id']!r} of {given} is not in {mapping}")
        rows.append({**row, "answer_X": row["answer_Y"], "answer_Y": row["answer_X"]})
    out.mkdir(parents=True, exist_ok=True)
    (out / "mapping.json").write_text(json.dumps(turned))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (out / "judge-input.jsonl").write_text(text, encoding="utf-8")
    print(f"{len(rows)} questions -> {out / 'judge-input.jsonl'} (X and Y exchanged)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="raw copy and a fresh archive home of one project")
    p.add_argument("project")
    p.add_argument("out", type=Path)
    p.add_argument("--agents-dev", type=Path, required=True, help="the agents-dev corpus folder")
    p.add_argument("--exe", default="archive-mcp", help="the archive-mcp executable to ingest with")
    p.add_argument(
        "--keep-workspaces",
        action="store_true",
        help="keep one workspace per cwd (default: merge them into the one with most sessions)",
    )
    s = sub.add_parser("serve", help="serve a prepared home over HTTP without auth")
    s.add_argument("project")
    s.add_argument("out", type=Path)
    s.add_argument("port", type=int)
    s.add_argument("--exe", default="archive-mcp", help="the archive-mcp of the code measured")
    s.add_argument("--print", action="store_true", help="print the command, do not run it")
    c = sub.add_parser("score", help="judged score, calls and characters per condition")
    c.add_argument("base", type=Path, help="OUT/PROJECT")
    c.add_argument("--agent-eval", type=Path, required=True, help="the agent-eval harness folder")
    w = sub.add_parser("swap", help="a second judge's input: the same pairs, X and Y exchanged")
    w.add_argument("judge", type=Path, help="the folder blind.py pair wrote")
    w.add_argument("out", type=Path, help="the second judge's folder")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        return prepare(args.project, args.out, args.agents_dev, args.exe, not args.keep_workspaces)
    if args.cmd == "serve":
        return serve(args.project, args.out, args.port, args.exe, args.print)
    if args.cmd == "swap":
        return swap(args.judge, args.out)
    return score(args.base, args.agent_eval)


if __name__ == "__main__":
    sys.exit(main())
