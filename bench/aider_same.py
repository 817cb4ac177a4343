"""Does a change to the Aider reader parse every history as the old one did? Every field compared.

A speed change to `refiners/aider.py` must not change what it reads. This loads the reader of a
git revision (`--old`, default `main`) beside the working tree's, parses the same histories with
both and compares the whole `ParseResult` (every turn, step, call, usage, offset and problem):

* the genuine history of `tests/fixtures/real-cli/aider-0.86.2` as written, resumed from each
  turn (the offsets the first parse gives) and cut at every line's end (`stop`);
* that history repeated end to end (`--times`, as `readers_speed.py` builds it);
* `--fuzz` random histories (prompts, run starts, Aider's messages one and many lines long,
  answers, `/run` prompts, usage and edit lines, CRLF, invalid UTF-8, NBSP and `\\x1c` blank
  lines, lines that only look like structure, a partial last line; input histories with readable,
  unreadable and missing times), each parsed whole, from a random offset and to a random stop.

    python bench/aider_same.py [--old main] [--fuzz 9000] [--seed 1] [--times 406]
    python bench/aider_same.py --old main --speed 7

Prints counts only (and, on a difference, the case and the first differing field); exits 1 on
any difference. `--speed N` instead times both readers on the replicated history beside the
Claude Code reader on its fixtures (`readers_speed.py`'s case), CPU MB/s, N interleaved rounds of
at least a second each, and prints the median and range of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from archive_mcp.refiners import READERS, aider, discover

from archive_mcp.ingest.workers import freeze_imports

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "real-cli" / "aider-0.86.2" / "repo"


def old_reader(rev: str) -> ModuleType:
    """The Aider reader of git revision `rev`, loaded beside the current one (not registered)."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:refiners/aider.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    name = "archive_mcp.refiners._aider_old"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "archive_mcp.refiners"
    sys.modules[name] = module
    registered = READERS["aider"]
    exec(compile(source, f"{rev}:refiners/aider.py", "exec"), module.__dict__)
    READERS["aider"] = registered  # the old module registered itself: the current one stays
    return module


def dump(value: Any) -> Any:
    """Every field of a parse result as plain data (dataclasses by field, floats exact)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: dump(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if isinstance(value, float):
        return ("float", value.hex())
    return value


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The path of the first field where `a` and `b` differ (no content printed)."""
    if type(a) is not type(b):
        return where or "/"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where} keys"
        for k in a:
            found = first_difference(a[k], b[k], f"{where}/{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where} length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else (where or "/")


class Compare:
    """Parses with both readers and counts the cases and the differences."""

    def __init__(self, old: ModuleType) -> None:
        self.old = old
        self.cases = 0
        self.differ: list[str] = []

    def __call__(self, case: str, path: Path, *args: Any, **kwargs: Any) -> Any:
        self.cases += 1
        before = self.old.parse_wire(path, *args, **kwargs)
        after = aider.parse_wire(path, *args, **kwargs)
        where = first_difference(dump(before), dump(after))
        if where is not None:
            self.differ.append(f"{case}: {where}")
        return after


def genuine(cmp: Compare, folder: Path, label: str) -> None:
    """A history as written, resumed from its turns (50 of them at most) and cut at line ends
    (200 at most)."""
    path = folder / aider.HISTORY
    whole = cmp(label, path)
    data = path.read_bytes()
    for turn in whole.turns[:: max(1, len(whole.turns) // 50)]:
        line = 1 + data[: turn.byte_start].count(b"\n")
        cmp(f"{label} from turn {turn.index}", path, turn.byte_start, line, turn.index)
    cmp(f"{label} resumed", path, whole.resume_offset, whole.resume_line, whole.resume_index)
    ends = [i + 1 for i, b in enumerate(data) if b == 10]
    for stop in ends[:: max(1, len(ends) // 100)]:
        cmp(f"{label} to {stop}", path, stop=stop)


PROMPTS = ["fix the bug", "/run ls /nope", "/test pytest -q", "/add a.py", "what now?", "é ünï"]
ANSWER = ["Sure.", "```", "print('x')", "", "   ", "# *SEARCH/REPLACE block* Rules", "> quoted?"]
MESSAGES = [
    "> Tokens: 2.4k sent, 22 received.  ",
    "> Tokens: 12 sent, 3.5k received. Cost: $0.01 message  ",
    "> Tokens: x sent  ",
    "> Applied edit to hello.txt  ",
    "> Applied edit to  spaced name.py \t ",
    "> Commit 3d9ae1d Done with: # Diffs:",
    "USER: Create hello.txt",
    " SCRIPTED-ANSWER  ",
    "> Add 0.0k tokens of command output to the chat? (Y)es/(N)o [Yes]: y  ",
    "> Aider v0.86.2  ",
    "> Aider v0.87.0-dev",
    ">no space",
    "> ",
]
TIMES = ["2026-12-02 06:46:53", "2026-12-02 06:46:55.953463", "not a time", "2026-13-40 99:00:00"]
ODD = ["\r", "\xa0", "\x1c", "\u2028", "\x85", "\t", "  "]


def _line(rng: random.Random) -> str:
    """One random line of a history (without its newline)."""
    kind = rng.random()
    if kind < 0.12:
        return "#### " + rng.choice(PROMPTS) + rng.choice(["", "  ", " \t"])
    if kind < 0.16:
        return "# aider chat started at " + rng.choice(TIMES)
    if kind < 0.18:
        return rng.choice(["# aider chat started", "####", "#### ", "# aider chat started at "])
    if kind < 0.55:
        return rng.choice(MESSAGES)
    text = rng.choice(ANSWER)
    if rng.random() < 0.2:
        text += rng.choice(ODD)
    if rng.random() < 0.1:
        text = rng.choice(ODD) + text
    return text


def fuzz_history(rng: random.Random) -> tuple[bytes, bytes | None]:
    """A random chat history and input history (None: no input history)."""
    lines = [_line(rng) for _ in range(rng.randint(0, 40))]
    raw = "".join(line + rng.choice(["\n", "\n", "\n", "\r\n"]) for line in lines).encode()
    if rng.random() < 0.2 and raw:
        at = rng.randrange(len(raw))
        raw = raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xe2\x80", b"\xc2\xa0"]) + raw[at:]
    if rng.random() < 0.3:
        raw += rng.choice(PROMPTS).encode()  # a partial last line
    if rng.random() < 0.15:
        return raw, None
    entries = []
    for _ in range(rng.randint(0, 12)):
        entries.append(f"\n# {rng.choice(TIMES)}\n")
        entries.extend(f"+{p}\n" for p in rng.choice([PROMPTS[:1], PROMPTS[1:3], PROMPTS]))
        if rng.random() < 0.1:
            entries.append("stray line\n")
    return raw, "".join(entries).encode()


def fuzzed(cmp: Compare, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / aider.HISTORY
        times = Path(tmp) / aider.INPUT_HISTORY
        for n in range(count):
            raw, inputs = fuzz_history(rng)
            path.write_bytes(raw)
            times.unlink(missing_ok=True)
            if inputs is not None:
                times.write_bytes(inputs)
            whole = cmp(f"fuzz {seed}/{n} whole", path)
            start = rng.randint(0, len(raw))
            cmp(f"fuzz {seed}/{n} from {start}", path, start, rng.randint(1, 9), rng.randint(0, 5))
            cmp(f"fuzz {seed}/{n} to", path, stop=rng.randint(0, len(raw) + 2))
            if whole.turns:
                cmp(f"fuzz {seed}/{n} resumed", path, whole.resume_offset, whole.resume_line)


def cpu_rate(parse: Callable[[Path], Any], files: list[Path], seconds: float = 1.0) -> float:
    """MB/s of this process's CPU time parsing `files` again and again for `seconds`."""
    size = sum(f.stat().st_size for f in files)
    done, cpu = 0, time.process_time()
    while True:
        for f in files:
            parse(f)
        done += size
        spent = time.process_time() - cpu
        if spent >= seconds:
            return done / spent / 1e6


def speed(old: ModuleType, rounds: int, times: int) -> None:
    """Old and new Aider reader and the Claude Code reader, interleaved rounds (CPU MB/s), the
    imports frozen first as an ingest does (`freeze_imports`)."""
    freeze_imports()
    claude = [
        f.path for s in discover(REPO / "tests/fixtures/real/claude").sessions for f in s.files
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in (aider.HISTORY, aider.INPUT_HISTORY):
            (Path(tmp) / name).write_bytes((FIXTURE / name).read_bytes() * times)
        big = [Path(tmp) / aider.HISTORY]
        cases = {
            "aider old": (old.parse_wire, big),
            "aider new": (aider.parse_wire, big),
            "claude-code (fixtures/real)": (READERS["claude-code"].parse, claude),
        }
        got: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, (parse, files) in cases.items():
                got[name].append(cpu_rate(parse, files))
    for name, values in got.items():
        print(
            f"{name:28} CPU MB/s median {statistics.median(values):6.1f}"
            f" (range {min(values):6.1f}-{max(values):6.1f})"
        )
    ratio = statistics.median(got["aider new"]) / statistics.median(got[list(cases)[2]])
    print(f"aider new / claude-code: {ratio:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="main", help="the git revision of the reader to compare")
    ap.add_argument("--fuzz", type=int, default=9000, help="random histories (3-4 parses each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--times", type=int, default=406, help="copies in the replicated history")
    ap.add_argument("--speed", type=int, default=0, help="time, N rounds, instead of comparing")
    args = ap.parse_args(argv)
    if args.speed:
        speed(old_reader(args.old), args.speed, args.times)
        return 0
    cmp = Compare(old_reader(args.old))
    genuine(cmp, FIXTURE, "fixture")
    with tempfile.TemporaryDirectory() as tmp:
        for name in (aider.HISTORY, aider.INPUT_HISTORY):
            (Path(tmp) / name).write_bytes((FIXTURE / name).read_bytes() * args.times)
        genuine(cmp, Path(tmp), f"fixture x{args.times}")
    fuzzed(cmp, args.fuzz, args.seed)
    print(f"{cmp.cases} parses compared, {len(cmp.differ)} differ")
    for line in cmp.differ[:10]:
        print("  ", line)
    return 1 if cmp.differ else 0


if __name__ == "__main__":
    sys.exit(main())
