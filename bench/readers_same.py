"""Does a change to the readers parse every log as before? Every field of every parse compared.

A change to `refiners/` (the readers, their shared loop, `sources.py`) must not change what they
read. This loads the whole `refiners/` package of a git revision (`--old`, default `main`) beside
the working tree's, finds the sessions of each root with both (the two `Discovery`s compared
field by field) and parses every session file with both readers, comparing the whole
`ParseResult` (every turn, step, call, usage, offset and problem), or the exception raised:

* each file whole, resumed from its turns (the offsets the whole parse gives, with its protocol,
  passed by keyword as ingest passes them; `--turns` of them at most) and from its resume point,
  and cut at line ends (`stop`, `--cuts` of them at most);
* the bytes of each export a discovery writes (a store's session, written again by the old
  revision's discovery at the same path: it must write the same bytes);
* the roots: every folder of `tests/fixtures` (the stores kept as SQL dumps built into SQLite:
  OpenCode's, Cursor's, the Cursor CLI's, Crush's and Goose's databases) and any folder given (a
  corpus such as AGENTS_DEV).

    python bench/readers_same.py [--old main] [--turns 20] [--cuts 20] [ROOT ...]

Prints counts only (and, on a difference, the case and the first differing field, never log
content); exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import importlib
import io
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import types
from collections import Counter
from pathlib import Path
from typing import Any

from aider_same import dump, first_difference
from archive_mcp.refiners import READERS, discover

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
OLD = "archive_mcp._refiners_old"


def old_package(rev: str, into: Path) -> tuple[dict[str, Any], Any]:
    """The registry and `discover` of `refiners/` at git revision `rev`, imported as a package of
    its own (its `__init__` is not run: it insists on its installed name)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "refiners"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = types.ModuleType(OLD)
    package.__path__ = [str(into / "refiners")]
    package.__package__ = OLD
    sys.modules[OLD] = package
    init = (into / "refiners" / "__init__.py").read_text(encoding="utf-8")
    names = init.split("from . import ", 1)[1]  # one line, or a parenthesised list
    names = names[1:].split(")", 1)[0] if names.startswith("(") else names.split("\n", 1)[0]
    for name in filter(None, (n.strip() for n in names.split(","))):
        importlib.import_module(f"{OLD}.{name}")
    sources = importlib.import_module(f"{OLD}.sources")
    return sources.READERS, sources.discover


def parsed(parse: Any, path: Path, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """A parse and every field of it, or None and the exception it raised (type and message)."""
    try:
        result = parse(path, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a raise is an outcome to compare
        return None, ("raised", type(exc).__name__, str(exc))
    return result, dump(result)


class Compare:
    """Parses with both registries and counts the cases and the differences."""

    def __init__(self, old: dict[str, Any]) -> None:
        self.old = old
        self.cases = 0
        self.by_source: Counter[str] = Counter()
        self.differ: list[str] = []

    def __call__(self, source: str, case: str, path: Path, *args: Any, **kwargs: Any) -> Any:
        self.cases += 1
        self.by_source[source] += 1
        _, before = parsed(self.old[source].parse, path, *args, **kwargs)
        result, after = parsed(READERS[source].parse, path, *args, **kwargs)
        where = first_difference(before, after)
        if where is not None:
            self.differ.append(f"{case}: {where}")
        return result

    def file(self, source: str, path: Path, label: str, turns: int, cuts: int) -> None:
        """A log whole, resumed from its turns and its resume point, and cut at line ends."""
        whole = self(source, label, path)
        if whole is None:  # it raised: nothing to resume
            return
        data = path.read_bytes()
        version = whole.protocol_version
        for turn in whole.turns[:: max(1, len(whole.turns) // turns)] if turns else []:
            line = 1 + data[: turn.byte_start].count(b"\n")
            at = {"start": turn.byte_start, "first_line": line, "start_index": turn.index}
            self(source, f"{label} from turn {turn.index}", path, **at, protocol=version)
        resume = {
            "start": whole.resume_offset,
            "first_line": whole.resume_line,
            "start_index": whole.resume_index,
        }
        self(source, f"{label} resumed", path, **resume, protocol=version)
        ends = [i + 1 for i, b in enumerate(data) if b == 10]
        for stop in ends[:: max(1, len(ends) // cuts)] if cuts else []:
            self(source, f"{label} to {stop}", path, stop=stop)


def opencode_dbs(tmp: Path) -> list[Path]:
    """The OpenCode fixtures' databases, built from their SQL dumps."""
    out = []
    for sql in sorted(FIXTURES.glob("real-cli/opencode-*/opencode.sql")):
        db = tmp / sql.parent.name / "opencode.db"
        db.parent.mkdir(parents=True)
        con = sqlite3.connect(db)
        con.executescript(sql.read_text(encoding="utf-8"))
        con.close()
        out.append(db.parent)
    return out


def built_stores(tmp: Path) -> list[Path]:
    """The documented homes (Cursor, the Cursor CLI), a Crush project and a Goose data folder
    with their stores built from the fixtures' SQL dumps, as the tests build them."""
    out = []
    for name in ("cursor", "cursor-cli"):
        home = tmp / name
        shutil.copytree(FIXTURES / "documented" / name, home)
        for sql in sorted(home.rglob("*.sql")):
            build(sql.with_suffix(""), sql)
            sql.unlink()
        out.append(home)
    crush = tmp / "crush-project"
    build(
        crush / ".crush" / "crush.db",
        *(FIXTURES / "crush" / f for f in ("schema.sql", "sessions.sql")),
    )
    goose = tmp / "goose-home"
    shutil.copytree(FIXTURES / "goose" / "sessions", goose / "sessions")
    build(goose / "sessions" / "sessions.db", FIXTURES / "goose" / "sessions.sql")
    return [*out, crush, goose]


def build(db: Path, *dumps: Path) -> None:
    """The SQLite store `db` (WAL, as the agents keep theirs) made by running `dumps`."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    for sql in dumps:
        con.executescript(sql.read_text(encoding="utf-8"))
    con.commit()
    con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="*", type=Path, help="more folders of logs (a corpus)")
    ap.add_argument("--old", default="main", help="the git revision of refiners/ to compare")
    ap.add_argument("--turns", type=int, default=20, help="resumed parses per file, at most")
    ap.add_argument("--cuts", type=int, default=20, help="parses cut at a line end per file")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old, old_discover = old_package(args.old, Path(tmp) / "old")
        roots = [
            *sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "real-cli"),
            *sorted(p for p in (FIXTURES / "real-cli").iterdir() if "opencode" not in p.name),
            *opencode_dbs(Path(tmp) / "oc"),
            *built_stores(Path(tmp) / "stores"),
            *args.roots,
        ]
        cmp = Compare(old)
        discoveries = discover_differ = files = 0
        new: set[str] = set()  # agents the old revision has no reader for: nothing to compare
        for root in roots:
            found = discover(root)
            added = {s.source for s in found.sessions} - set(old)
            if added:
                new |= added
                continue
            discoveries += 1
            # a store's export is written by each discovery: the old one must write the same bytes
            made = {f.path: f.path.read_bytes() for s in found.sessions for f in s.files if f.whole}
            where = first_difference(dump(old_discover(root)), dump(found))
            where = where or next(
                (f"export {p.name}" for p, data in made.items() if p.read_bytes() != data), None
            )
            if where is not None:
                discover_differ += 1
                cmp.differ.append(f"discover {root.name}: {where}")
            for session in found.sessions:
                for f in session.files:
                    files += 1
                    label = f"{root.name} {session.source} {session.session_id} {f.rel}"
                    cmp.file(session.source, f.path, label, args.turns, args.cuts)
    print(f"{discoveries} discoveries compared, {discover_differ} differ")
    if new:
        print(f"  not compared (no reader in {args.old}): {', '.join(sorted(new))}")
    print(
        f"{cmp.cases} parses of {files} files compared, {len(cmp.differ) - discover_differ} differ"
    )
    print("  parses by source: " + ", ".join(f"{k} {v}" for k, v in sorted(cmp.by_source.items())))
    for line in cmp.differ[:10]:
        print("  ", line)
    return 1 if cmp.differ else 0


if __name__ == "__main__":
    sys.exit(main())
