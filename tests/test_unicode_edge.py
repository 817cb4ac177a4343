"""Text that is not valid Unicode never stops anything: every string read from a log passes one
rule at the reader's edge (`fields.valid_unicode`: a lone surrogate becomes U+FFFD, reported)."""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from archive_mcp.refiners import discover
from archive_mcp.refiners.fields import valid_unicode
from test_agent_ingest import claude_home, codex_home, gemini_home

from archive_mcp import Archive

FIXTURES = Path(__file__).parent / "fixtures"
ROOTS = [
    "kimi",
    "kimi-code",
    "real/claude",
    "real/codex",
    "real/gemini",
    "real-cli/aider-0.86.2/repo",
    "real-cli/claude-2.1.197/dot-claude",
    "real-cli/codex-0.171.0/sessions",
    "real-cli/gemini-0.61.0-scenario/dot-gemini",
    "real-cli/kimi-1.52.0/dot-kimi",
    "real-cli/kimi-code-2.1.0/dot-kimi-code",
    "real-cli/qwen-0.15.10-scenario/dot-qwen",
    "real-cli/opencode-1.18.33-scenario",
]
# What a broken writer leaves inside a JSON string: lone surrogates (JSON escapes, and UTF-8
# encoded), overlong and invalid UTF-8.
BAD_BYTES = [b"\xed\xa0\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xff"]
BAD = [b"\\udfff", b"\\ud800", b"x\\ud83d", *BAD_BYTES]
STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def test_a_lone_surrogate_becomes_the_replacement_character_in_keys_and_values() -> None:
    value = json.loads('{"a\\ud800": ["x\\udfff", 1, {"b": "ok"}], "c": "\\ud83d\\ude00"}')
    assert valid_unicode(value) == ({"a\ufffd": ["x\ufffd", 1, {"b": "ok"}], "c": "😀"}, 2)
    clean = {"a": ["b", 2]}
    assert valid_unicode(clean)[0] is clean


def sessions(archive: Archive) -> set[tuple[str, str]]:
    frame = archive.sessions("all").select("source", "session_id").collect()
    return set(frame.iter_rows())


def skipped_kinds(report: object, name: str) -> list[str]:
    return sorted(s.reason.split(":")[0] for s in report.skipped if s.path.endswith(name))  # type: ignore[attr-defined]


def test_a_lone_surrogate_in_a_cwd_a_session_id_or_a_prompt_never_stops_ingest(
    tmp_path: Path,
) -> None:
    home = tmp_path / "user"
    claude_home(home, sid="c0")  # a healthy session beside each bad one
    bad = claude_home(home, sid="c1")
    lines = bad.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"/home/', '"/home/\\udfff').replace('"c1"', '"c1\\ud800"')
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rollout = codex_home(home)
    rollout.write_text(
        rollout.read_text(encoding="utf-8").replace('"x1"', '"x1\\ud800"'), encoding="utf-8"
    )
    chat = gemini_home(home)
    chat.write_text(
        chat.read_text(encoding="utf-8").replace('"g1"', '"g1\\udfff"', 1), encoding="utf-8"
    )
    archive = Archive(embedder=None)
    report = archive.ingest(home / ".claude", home / ".codex", home / ".gemini")
    assert sorted(sessions(archive)) == [
        ("claude-code", "c0"),
        ("claude-code", "c1\ufffd"),
        ("codex", "x1\ufffd"),
        ("gemini", "g1\ufffd"),
    ]
    assert skipped_kinds(report, "c1.jsonl") == ["invalid_unicode"]
    assert skipped_kinds(report, "x1.jsonl") == ["invalid_unicode"]
    assert skipped_kinds(report, chat.name) == ["invalid_unicode"]


def copy_roots(into: Path) -> list[Path]:
    """The fixture homes of every reader (the OpenCode database built from its SQL)."""
    out = []
    for rel in ROOTS:
        target = into / rel.replace("/", "_")
        if rel.startswith("real-cli/opencode"):
            target.mkdir(parents=True)
            con = sqlite3.connect(target / "opencode.db")
            con.executescript((FIXTURES / rel / "opencode.sql").read_text(encoding="utf-8"))
            con.close()
        else:
            shutil.copytree(FIXTURES / rel, target)
        out.append(target)
    return out


def spoil(path: Path, rng: random.Random, dry: bool = False) -> bool:
    """Put one bad sequence inside one JSON string of one line of `path` (Aider's Markdown: in
    one line); False when the file has no string to spoil (`dry`: only say whether it has)."""
    data = path.read_bytes()
    if dry:
        return path.suffix == ".md" or STRING.search(data) is not None
    if path.suffix == ".md":
        at = rng.choice([m.end() for m in re.finditer(rb"\n", data)] or [0])
        path.write_bytes(data[:at] + rng.choice(BAD_BYTES) + data[at:])
        return True
    strings = list(STRING.finditer(data))
    if not strings:
        return False
    at = rng.choice(strings).start() + 1  # just inside the opening quote: never splits an escape
    path.write_bytes(data[:at] + rng.choice(BAD) + data[at:])
    return True


@pytest.mark.parametrize("seed", range(4))
def test_a_seeded_fuzz_of_every_reader_loses_no_healthy_session_and_reports_each_bad_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    monkeypatch.setenv("ARCHIVE_MCP_HOME", str(tmp_path / "clean-home"))
    clean_archive = Archive(embedder=None)
    clean_archive.ingest(*copy_roots(tmp_path / "roots"))
    clean = sessions(clean_archive)
    shutil.rmtree(tmp_path / "roots")  # the same paths again (Aider's session id is its path's)
    roots = copy_roots(tmp_path / "roots")
    spoilt: dict[Path, tuple[str, str]] = {}  # the file spoilt in each root -> its session
    for root in roots:
        if root.name.startswith("real-cli_opencode"):
            continue  # its log is a database: spoilt below
        found = discover(root)
        files = [(f.path, (s.source, s.session_id)) for s in found.sessions for f in s.files]
        path, session = rng.choice([f for f in files if spoil(f[0], rng, dry=True)])
        spoil(path, rng)
        spoilt[path] = session
    db = next(r for r in roots if r.name.startswith("real-cli_opencode")) / "opencode.db"
    con = sqlite3.connect(db)
    con.execute('UPDATE part SET data = replace(data, \'"text":"\', \'"text":"\\ud800\')')
    con.commit()
    con.close()
    monkeypatch.setenv("ARCHIVE_MCP_HOME", str(tmp_path / "spoilt-home"))
    archive = Archive(embedder=None)
    report = archive.ingest(*roots)
    got = sessions(archive)
    assert len(spoilt) == len(roots) - 1  # every reader's files but OpenCode's database
    assert clean - set(spoilt.values()) <= got  # no healthy session lost
    reported = {s.path for s in report.skipped}
    assert [p.name for p in spoilt if str(p) not in reported] == []  # each bad file reported
