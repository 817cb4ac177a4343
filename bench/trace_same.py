"""Are two checkouts' traces the same? A digest of every part of every trace, to compare.

A speed change to `trace_theme` must not change what it says. This writes, for every theme of
every workspace of the archives given (each traced at `auto` and `session` granularity, with and
without the turns' content), a SHA-256 per part of the timeline: events, buckets, decisions,
reversals, threads, Now, files, memories, the frame, the markdown and the budgeted structure at
two budgets. Run it with one checkout (`--out`), then with the other (`--against`): it names the
themes and parts that differ (digests only: no text of the archive is printed or stored) and
exits 1 on any difference.

    python bench/trace_same.py --home HOME [--home HOME2] --out OUT/before.json
    python bench/trace_same.py --home HOME [--home HOME2] --against OUT/before.json

As a pytest plugin (`-p trace_same`, `bench/` on `PYTHONPATH`) it records the same digests of
every trace the test suite makes (keyed by test and call) into `$TRACE_SAME_OUT`:

    TRACE_SAME_OUT=OUT/tests-before.json PYTHONPATH=bench python -m pytest tests -q -p trace_same \
        -k "theme or trace or timeline or story or standing"
    python bench/trace_same.py --compare OUT/tests-before.json OUT/tests-after.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

VARIANTS = [("auto", False), ("session", False), ("auto", True)]
BUDGETS = (12_000, 2_000)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def digests(tl: Any, budgets: tuple[int, ...] = BUDGETS) -> dict[str, str]:
    """One digest per part of a `Timeline` (every field, the frame, markdown and budgeted: its
    JSON, as the MCP tool's structured output is)."""
    from archive_mcp.render import to_jsonable

    data = tl.to_json()
    out = {k: _digest(v) for k, v in sorted(data.items())}
    out["frame"] = _digest([tl.frame.columns, tl.frame.rows()])
    for budget in budgets:
        keep = tl.budgeted(budget)
        out[f"budgeted@{budget}"] = _digest(to_jsonable(keep))
        out[f"markdown@{budget}"] = _digest(tl.markdown(budget))
        out[f"markdown_kept@{budget}"] = _digest(tl.markdown(budget, keep=keep))
    return out


def trace_homes(homes: list[Path], budgets: tuple[int, ...] = BUDGETS) -> dict[str, dict[str, str]]:
    """Digests of every theme of every workspace in `homes`, at each variant."""
    from archive_mcp import Archive

    out: dict[str, dict[str, str]] = {}
    for h, home in enumerate(homes):
        a = Archive(home)
        for ws in a.workspaces():
            for theme in sorted(t.name for t in a.list_themes(ws)):
                for gran, content in VARIANTS:
                    tl = a.trace_theme(theme, ws.id, granularity=gran, include_turn_content=content)
                    out[f"{h}/{ws.id}/{theme}/{gran}/{int(content)}"] = digests(tl, budgets)
    return out


def differences(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[str]:
    """What differs: keys on one side only, and the parts whose digests differ."""
    lines = [f"only before: {k}" for k in sorted(before.keys() - after.keys())]
    lines += [f"only after: {k}" for k in sorted(after.keys() - before.keys())]
    for k in sorted(before.keys() & after.keys()):
        parts = sorted(
            p for p in before[k].keys() | after[k].keys() if before[k].get(p) != after[k].get(p)
        )
        if parts:
            lines.append(f"differs: {k}: {', '.join(parts)}")
    return lines


def report(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> int:
    lines = differences(before, after)
    print("\n".join(lines) if lines else "same")
    print(f"{len(before)} traces before, {len(after)} after, {len(lines)} differences")
    return 1 if lines else 0


# --- pytest plugin: digests of every trace the tests make -------------------------------------

_RECORDED: dict[str, dict[str, str]] = {}


def pytest_configure(config: Any) -> None:
    """Wrap `trace_theme` where the archive calls it, and `build_timeline` where tests import it
    from: each result is digested under its test and call."""
    import archive_mcp.archive as facade
    import archive_mcp.themes.trace.timeline as timeline

    counts: dict[str, int] = {}

    def recording(inner: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            tl = inner(*args, **kwargs)
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
            counts[test] = counts.get(test, 0) + 1
            _RECORDED[f"{test}#{counts[test]}"] = digests(tl)
            return tl

        return call

    facade.trace_theme = recording(facade.trace_theme)  # type: ignore[assignment]
    timeline.build_timeline = recording(timeline.build_timeline)  # type: ignore[assignment]


def pytest_unconfigure(config: Any) -> None:
    out = os.environ.get("TRACE_SAME_OUT")
    if out:
        Path(out).write_text(json.dumps(_RECORDED, indent=1, sort_keys=True), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--home", type=Path, action="append", default=[], help="an archive home")
    ap.add_argument("--out", type=Path, help="write the digests here")
    ap.add_argument("--against", type=Path, help="compare with digests written before")
    ap.add_argument("--compare", type=Path, nargs=2, help="compare two digest files")
    ap.add_argument(
        "--budget",
        type=int,
        action="append",
        default=[],
        help=f"a budget to tell each trace in (repeatable; default {', '.join(map(str, BUDGETS))})",
    )
    args = ap.parse_args()
    if args.compare:
        sys.exit(report(*(json.loads(p.read_text(encoding="utf-8")) for p in args.compare)))
    got = trace_homes(args.home, tuple(args.budget) or BUDGETS)
    if args.out:
        args.out.write_text(json.dumps(got, indent=1, sort_keys=True), encoding="utf-8")
        print(f"{len(got)} traces written to {args.out}")
    if args.against:
        sys.exit(report(json.loads(args.against.read_text(encoding="utf-8")), got))


if __name__ == "__main__":
    main()
