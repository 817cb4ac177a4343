"""Fuzzing the readers: every field of real fixture lines changed in type and value, plus
structural damage (nesting depth, huge numbers, NUL, invalid UTF-8). No mutation may crash a
reader, the refiner or the Parquet schema, and a share mixing damaged and healthy sessions is
archived whole: every healthy session, every turn. Seeded; a reader is one entry in READERS."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from archive_mcp.refiners import PARSERS

from archive_mcp import Archive
from archive_mcp.ingest.jobs import turn_rows
from archive_mcp.schema import refined_frame

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class ReaderCase:
    source: str  # the key in PARSERS
    share: Path  # a fixture share/home dir
    session: str  # a session dir inside it, relative to `share`, whose wire is mutated
    wire: str  # the wire log inside the session dir
    name_of: Callable[[int], str]  # the folder name of the i-th generated session

    @property
    def parse(self) -> Callable[..., Any]:
        return PARSERS[self.source]


READERS = [
    ReaderCase(
        "kimi",
        FIXTURES / "kimi",
        "sessions/131148b1f826743e761a0be6ad66cb94/3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17",
        "wire.jsonl",
        lambda i: f"00000000-0000-4000-8000-{i:012d}",
    ),
    ReaderCase(
        "kimi-code",
        FIXTURES / "kimi-code",
        "sessions/wd_webapp_58df6e89cfb6/session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13",
        "agents/main/wire.jsonl",
        lambda i: f"session_fuzz-{i:04d}",
    ),
]

REAL = FIXTURES / "real"
# The other agents' readers on real fixture logs (tests/fixtures/real, see its LICENSES.md).
AGENT_READERS = [
    ReaderCase(
        "claude-code",
        REAL / "claude",
        "m-thisness",
        "e0ce82fa-774f-4827-8cef-17b1b18b9f2a.jsonl",
        str,
    ),
    ReaderCase(
        "codex",
        REAL / "codex",
        "openprintkit",
        "rollout-2025-11-01T11-34-37-97b66f6c-a160-40e0-bd0f-1fdcbbb9498b.jsonl",
        str,
    ),
    ReaderCase("gemini", REAL / "gemini", "jsonl", "test_conversation_gemini.jsonl", str),
]

VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    5,
    2**70,
    -(2**70),
    1e308,
    -1e308,
    0.5,
    "",
    "x",
    "\x00",
    "ünïcødé ✓ 中文",
    [],
    [1, "a"],
    {},
    {"type": "text"},
    [[[[]]]],
    "9" * 400,
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (container and leaf), except the root."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    value = json.loads(json.dumps(value))
    holder = value
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return value


def _structural(line: bytes) -> list[bytes]:
    """Damage no JSON encoder produces."""
    text = line.rstrip(b"\n")
    return [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        text.replace(b'"timestamp": ', b'"timestamp": 1e400, "x": ', 1).replace(
            b'"time": ', b'"time": 1e400, "y": ', 1
        ),
        text.replace(b"{", b'{"n": ' + b"9" * 5000 + b", ", 1),
        text.replace(b'"', b'"\x00', 3),
        text.replace(b'": "', b'": "\xff\xfe\xc3', 2),
        text.replace(b"{", b'{"z": NaN, "w": -Infinity, ', 1),
        text[: len(text) // 2],
        b"\x00" * 64,
        b"null",
    ]


def _whole(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False  # the fixture's cut last line (a live session)
    return True


def mutations(case: ReaderCase, seed: int, n_typed: int) -> list[bytes]:
    """Whole wire logs, each the fixture with one line mutated: `n_typed` sampled type/value
    mutations over every field of every line, then every structural one on a sampled line."""
    rng = random.Random(seed)
    lines = (case.share / case.session / case.wire).read_bytes().splitlines(keepends=True)
    typed = [
        (i, p, v)
        for i, raw in enumerate(lines)
        if _whole(raw)
        for p in _paths(json.loads(raw))
        for v in VALUES
    ]
    out = []
    for i, path, value in rng.sample(typed, min(n_typed, len(typed))):
        new = (
            json.dumps(_set(json.loads(lines[i]), path, value), ensure_ascii=False).encode() + b"\n"
        )
        out.append(b"".join([*lines[:i], new, *lines[i + 1 :]]))
    for _ in range(3):
        i = rng.randrange(len(lines))
        out += [
            b"".join([*lines[:i], bad + b"\n", *lines[i + 1 :]]) for bad in _structural(lines[i])
        ]
    return out


@pytest.mark.parametrize(
    "case", READERS + AGENT_READERS, ids=[c.source for c in READERS + AGENT_READERS]
)
def test_no_mutation_crashes_the_reader_or_the_refiner(case: ReaderCase, tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    crashes = []
    bodies = mutations(case, seed=9, n_typed=500)
    for n, body in enumerate(bodies):
        wire.write_bytes(body)
        try:
            result = case.parse(wire)
            refined_frame(
                turn_rows("ws", case.source, "s", "main", "raw/x", result.turns, frozenset(), None)
            )
        except Exception as exc:  # noqa: BLE001 - collecting crashes is the point
            crashes.append((n, f"{type(exc).__name__}: {exc}"[:160]))
    assert len(bodies) == 530
    assert crashes == []


def _turn_counts(archive: Archive) -> dict[str, int]:
    return dict(archive.turns("all").collect().group_by("session_id").len().iter_rows())


@pytest.mark.parametrize("case", READERS, ids=[c.source for c in READERS])
def test_a_share_of_damaged_and_healthy_sessions_is_archived_whole(
    case: ReaderCase, tmp_path: Path
) -> None:
    clean_share = tmp_path / "clean"
    shutil.copytree(case.share, clean_share)
    expected = _turn_counts(_ingested(tmp_path / "clean-home", clean_share))
    share = tmp_path / "share"
    shutil.copytree(case.share, share)
    template = share / case.session
    bodies = mutations(case, seed=3, n_typed=60)
    for i, body in enumerate(bodies):
        d = template.parent / case.name_of(i)
        shutil.copytree(template, d)
        (d / case.wire).write_bytes(body)
    archive = Archive(tmp_path / "home", embedder=None)
    report = archive.ingest(share)
    got = _turn_counts(archive)
    assert {s: got.get(s) for s in expected} == expected  # every healthy session, every turn
    damaged = {case.name_of(i) for i in range(len(bodies))}
    archived = {s for s in got if s in damaged}
    assert not [s for s in report.skipped if s.reason.startswith("session skipped")]
    assert (
        len(archived) >= len(bodies) - 12
    )  # only sessions whose every turn-bearing line broke are empty


def _ingested(home: Path, share: Path) -> Archive:
    archive = Archive(home, embedder=None)
    archive.ingest(share)
    return archive


def _kimi_session(bucket: Path, name: str, lines: list[bytes]) -> None:
    d = bucket / name
    d.mkdir(parents=True)
    (d / "wire.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


HEADER = b'{"type": "metadata", "protocol_version": "1.10"}'
LIVE = "last line is incomplete (the session is still being written); it is archived once it is complete"


def _turn(text: str, ts: bytes = b"1773400000") -> list[bytes]:
    return [
        b'{"timestamp": '
        + ts
        + b', "message": {"type": "TurnBegin", "payload": {"user_input": '
        + json.dumps(text).encode()
        + b"}}}",
        b'{"timestamp": 1773400001, "message": {"type": "ContentPart", "payload": {"type": "text", "text": "ok"}}}',
        b'{"timestamp": 1773400002, "message": {"type": "TurnEnd", "payload": {}}}',
    ]


def test_hostile_sessions_in_a_share_are_reported_and_the_rest_archived(
    kimi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _turn_counts(_ingested(tmp_path / "clean-home", kimi_root))
    bucket = kimi_root / "sessions" / "131148b1f826743e761a0be6ad66cb94"
    _kimi_session(
        bucket, "deep-nesting", [HEADER, b"[" * 100_000 + b"]" * 100_000, *_turn("after the bomb")]
    )
    _kimi_session(bucket, "huge-timestamp", [HEADER, *_turn("when?", ts=b"1e400")])
    _kimi_session(
        bucket,
        "int-input",
        [
            HEADER,
            b'{"timestamp": 1, "message": {"type": "TurnBegin", "payload": {"user_input": 5}}}',
            *_turn("next"),
        ],
    )
    _kimi_session(
        kimi_root / "sessions" / "my bucket", "spaced", [HEADER, *_turn("in a spaced bucket")]
    )
    locked_out = kimi_root / "sessions" / "0123456789abcdef0123456789abcdef"
    _kimi_session(locked_out, "hidden", [HEADER, *_turn("unreachable")])
    real_iterdir = Path.iterdir

    def iterdir(self: Path) -> Iterator[Path]:
        if self == locked_out:
            raise PermissionError(13, "Permission denied", str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    archive = Archive(tmp_path / "home", embedder=None)
    report = archive.ingest(kimi_root)
    got = _turn_counts(archive)
    assert {s: got.get(s) for s in expected} == expected
    assert {s: got.get(s) for s in ("deep-nesting", "huge-timestamp", "int-input", "spaced")} == {
        "deep-nesting": 1,
        "huge-timestamp": 1,
        "int-input": 2,
        "spaced": 1,
    }
    assert [(Path(s.path).name, s.reason, s.line) for s in report.skipped if s.reason != LIVE] == [
        (
            "0123456789abcdef0123456789abcdef",
            "permission denied; fix the folder's permissions and ingest again",
            None,
        ),
        ("wire.jsonl", "malformed: nested too deeply to read", 2),
    ]
    spaced = [w for w in archive.workspaces() if w.id.startswith("b_")]
    assert [w.id for w in spaced] == [
        "b_" + __import__("hashlib").md5(b"my bucket").hexdigest()[:24]
    ]
    huge = archive.turns("all").filter(pl_col("session_id") == "huge-timestamp").collect()
    assert huge["started_at"].to_list() == [None]


def test_a_session_that_fails_to_refine_is_skipped_and_retried_by_the_next_run(
    kimi_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive_mcp.ingest import jobs

    expected = _turn_counts(_ingested(tmp_path / "clean-home", kimi_root))
    victim = "3f2c9a1e-7b4d-4e8a-9c61-2d5f0b8e4a17"
    real = jobs.turn_rows

    def failing(ws_id: str, source: str, session_id: str, *args: Any) -> list[dict[str, Any]]:
        if session_id == victim:
            raise RuntimeError("refiner bug")
        return real(ws_id, source, session_id, *args)

    monkeypatch.setattr(jobs, "turn_rows", failing)
    archive = Archive(tmp_path / "home", embedder=None)
    report = archive.ingest(kimi_root)
    assert [(Path(s.path).parent.name, s.reason) for s in report.skipped if s.reason != LIVE] == [
        (victim, "session skipped: RuntimeError: refiner bug")
    ]
    assert _turn_counts(archive) == {s: n for s, n in expected.items() if s != victim}
    monkeypatch.setattr(jobs, "turn_rows", real)
    again = archive.ingest(kimi_root)
    assert again.skipped == [] and again.turns_added == expected[victim]
    assert _turn_counts(archive) == expected


def pl_col(name: str) -> Any:
    import polars as pl

    return pl.col(name)
