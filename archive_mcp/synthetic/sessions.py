"""Synthetic Kimi share dirs for benchmarks, notebooks and demos: mixed English/Chinese, tool calls, large outputs.

`write_session` turns a list of `TurnSpec` into a Python-Kimi wire.jsonl shaped like FORMATS.md
§1; `generate_share_dir` fills a whole `~/.kimi`-like tree with random sessions.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CallSpec:
    name: str
    args: dict
    output: str = ""
    is_error: bool = False
    message: str = ""


@dataclass
class TurnSpec:
    user: str
    answer: str
    calls: list[CallSpec] = field(default_factory=list)
    think: str = ""
    at: float | None = None  # start time (epoch seconds); None = after the previous turn


def _line(ts: float, kind: str, payload: dict) -> str:
    return (
        json.dumps(
            {"timestamp": round(ts, 3), "message": {"type": kind, "payload": payload}},
            ensure_ascii=False,
        )
        + "\n"
    )


def turn_lines(spec: TurnSpec, ts: float, rng: random.Random) -> tuple[list[str], float]:
    out = [_line(ts, "TurnBegin", {"user_input": spec.user})]
    step = 1
    ts += 0.01
    for call in spec.calls:
        out.append(_line(ts, "StepBegin", {"n": step}))
        if spec.think and step == 1:
            out.append(
                _line(
                    ts + 0.2,
                    "ContentPart",
                    {"type": "think", "think": spec.think, "encrypted": None},
                )
            )
        cid = "tool_" + "".join(
            rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", k=24)
        )
        out.append(
            _line(
                ts + 0.5,
                "ToolCall",
                {
                    "type": "function",
                    "id": cid,
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.args, ensure_ascii=False),
                    },
                    "extras": None,
                },
            )
        )
        out.append(
            _line(
                ts + 0.6,
                "StatusUpdate",
                {
                    "context_usage": 0.05,
                    "token_usage": {
                        "input_other": rng.randint(100, 3000),
                        "output": rng.randint(20, 400),
                        "input_cache_read": rng.randint(0, 20000),
                        "input_cache_creation": 0,
                    },
                    "message_id": None,
                },
            )
        )
        out.append(
            _line(
                ts + 1.5,
                "ToolResult",
                {
                    "tool_call_id": cid,
                    "return_value": {
                        "is_error": call.is_error,
                        "output": call.output,
                        "message": call.message
                        or (
                            "Command failed with exit code: 1."
                            if call.is_error
                            else "Command executed successfully."
                        ),
                        "display": [],
                        "extras": None,
                    },
                },
            )
        )
        ts += 2.0
        step += 1
    out.append(_line(ts, "StepBegin", {"n": step}))
    out.append(_line(ts + 0.8, "ContentPart", {"type": "text", "text": spec.answer}))
    out.append(
        _line(
            ts + 0.9,
            "StatusUpdate",
            {
                "context_usage": 0.06,
                "token_usage": {
                    "input_other": rng.randint(100, 3000),
                    "output": rng.randint(20, 600),
                    "input_cache_read": rng.randint(0, 20000),
                    "input_cache_creation": 0,
                },
                "message_id": None,
            },
        )
    )
    out.append(_line(ts + 1.0, "TurnEnd", {}))
    return out, ts + 1.0


def write_session(
    share: Path,
    work_dir: str,
    turns: list[TurnSpec],
    start: float,
    seed: int = 0,
    session_id: str | None = None,
) -> Path:
    """Write one session of `turns` under `share` (a `~/.kimi`-like dir); returns its wire path."""
    rng = random.Random(seed)
    bucket = hashlib.md5(posixpath.normpath(work_dir).encode()).hexdigest()
    sid = session_id or str(uuid.UUID(int=rng.getrandbits(128), version=4))
    d = share / "sessions" / bucket / sid
    d.mkdir(parents=True, exist_ok=True)
    ts = start
    lines = ['{"type": "metadata", "protocol_version": "1.10"}\n']
    for spec in turns:
        ts = spec.at if spec.at is not None else ts + rng.uniform(20, 600)
        more, ts = turn_lines(spec, ts, rng)
        lines += more
    (d / "wire.jsonl").write_text("".join(lines), encoding="utf-8")
    _register(share, work_dir)
    return d / "wire.jsonl"


def _register(share: Path, work_dir: str) -> None:
    meta_path = share / "kimi.json"
    meta = (
        json.loads(meta_path.read_text(encoding="utf-8"))
        if meta_path.exists()
        else {"work_dirs": []}
    )
    if all(w["path"] != work_dir for w in meta["work_dirs"]):
        meta["work_dirs"].append({"path": work_dir, "kaos": "local", "last_session_id": None})
        meta_path.write_text(json.dumps(meta, indent=2), encoding="utf-8")


# --- random sessions for throughput benchmarks ---------------------------------------------

EN_ASKS = [
    "Why does `{ident}` fail when {file} is loaded with an empty config?",
    "Refactor {ident} in {file} so it streams records instead of loading everything.",
    "Add a regression test for {ident}; it broke after the last merge.",
    "The CI job times out in {file}. Can you find the slow part?",
    "Decide whether {ident} should use a cache or recompute; measure both.",
    "Rename {ident} to something clearer and update every caller.",
]
ZH_ASKS = [
    "为什么 {ident} 在 {file} 里会抛出异常？",
    "把 {file} 中的 {ident} 重构成流式处理，不要一次性读入内存。",
    "给 {ident} 加一个回归测试，上次合并之后它坏了。",
    "CI 在 {file} 上超时了，帮我找出慢的地方。",
    "我们决定 {ident} 用缓存还是重新计算？请测量一下。",
]
EN_ANSWERS = [
    "Fixed: `{ident}` assumed a non-empty config; it now falls back to defaults. Tests pass.",
    "Done. `{ident}` now yields rows lazily; peak memory dropped from 1.2 GB to 180 MB.",
    "Added `test_{ident}` covering the empty case; it failed before the fix and passes now.",
    "The slow part is the N+1 query in `{ident}`; batching it cut the job from 14 min to 3 min.",
    "Decision: keep the cache for `{ident}`; recomputing was 8x slower on the benchmark.",
]
ZH_ANSWERS = [
    "已修复：`{ident}` 默认配置不为空，现在会回退到默认值。测试通过。",
    "完成。`{ident}` 现在按需产生数据，峰值内存从 1.2 GB 降到 180 MB。",
    "我们决定保留 `{ident}` 的缓存，重新计算慢了 8 倍。",
]
IDENTS = [
    "parse_config",
    "load_batches",
    "DateFormatter.format_iso",
    "retry_with_backoff",
    "SessionStore.flush",
    "build_index",
    "resolve_workspace",
    "render_timeline",
    "tokenize_cjk",
    "AuthMiddleware.check",
    "export_csv",
    "merge_refined",
]
FILES = [
    "src/config/loader.py",
    "src/data/batches.py",
    "src/utils/date.ts",
    "lib/net/retry.go",
    "app/store/session.rs",
    "src/index/build.py",
    "docs/timeline.md",
    "tests/test_export.py",
]
TOOLS = ["Shell", "ReadFile", "Grep", "StrReplaceFile", "WriteFile", "Glob"]


def random_turn(
    rng: random.Random, big_output: bool, small: tuple[int, int] = (200, 5_000)
) -> TurnSpec:
    ident, file = rng.choice(IDENTS), rng.choice(FILES)
    zh = rng.random() < 0.3
    ask = rng.choice(ZH_ASKS if zh else EN_ASKS).format(ident=ident, file=file)
    answer = rng.choice(ZH_ANSWERS if zh else EN_ANSWERS).format(ident=ident.split(".")[-1])
    calls = []
    for _ in range(rng.randint(1, 3)):
        tool = rng.choice(TOOLS)
        args = (
            {"command": f"pytest -k {ident.split('.')[-1]} -x"}
            if tool == "Shell"
            else {"path": file}
        )
        size = rng.randint(20_000, 120_000) if big_output else rng.randint(*small)
        line = f"{file}:{rng.randint(1, 400)}: {ident} -> value={rng.random():.6f} status=ok\n"
        calls.append(
            CallSpec(tool, args, (line * (size // len(line) + 1))[:size], rng.random() < 0.1)
        )
    return TurnSpec(ask, answer, calls, think=f"Look at {ident} in {file} first.")


def generate_share_dir(
    share: Path,
    turns: int,
    seed: int = 7,
    workspaces: int = 8,
    turns_per_session: tuple[int, int] = (20, 60),
    big_every: int = 60,
    small: tuple[int, int] = (200, 5_000),
) -> dict:
    """A `~/.kimi`-like tree with about `turns` turns; returns counts."""
    rng = random.Random(seed)
    made = sessions = 0
    start = 1767225600.0  # 2026-01-01
    while made < turns:
        n = min(rng.randint(*turns_per_session), turns - made)
        work_dir = f"/home/dev/projects/project-{rng.randrange(workspaces)}"
        specs = [
            random_turn(rng, big_output=big_every > 0 and (made + i) % big_every == 0, small=small)
            for i in range(n)
        ]
        write_session(share, work_dir, specs, start + sessions * 3600, seed=rng.getrandbits(32))
        made += n
        sessions += 1
    size = sum(p.stat().st_size for p in share.rglob("wire.jsonl"))
    return {"turns": made, "sessions": sessions, "bytes": size}
