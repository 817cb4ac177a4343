"""Evaluation helpers. A labelled retrieval set: sessions with planted decisions and facts, and queries about them.

Each fact is planted in one turn among random background turns and near-miss distractors. Every
fact gets queries of four kinds: `identifier` (the exact name), `typo` (a misspelled name),
`paraphrase` (a question in other words) and, for Chinese facts, `zh` (a Chinese question).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive_mcp.synthetic.sessions import CallSpec, TurnSpec, random_turn, write_session

# subject, paraphrase of the subject, identifier, file, old choice, new choice, reason
FACTS = [
    (
        "JPEG decoding",
        "turning image files into pixels",
        "decode_jpeg_batch",
        "src/data/decode.py",
        "PIL",
        "turbojpeg",
        "PIL was twice as slow on 4K frames",
    ),
    (
        "session cache",
        "keeping logged-in users in memory",
        "SessionCache.evict",
        "app/cache/session.py",
        "Redis",
        "an in-process LRU",
        "Redis round trips dominated p99 latency",
    ),
    (
        "auth tokens",
        "how login credentials expire",
        "issue_refresh_token",
        "app/auth/tokens.py",
        "24h JWTs",
        "15-minute JWTs with refresh tokens",
        "a leaked token stayed valid for a day",
    ),
    (
        "CI runner",
        "the machines that run our build pipeline",
        "ci_matrix.yml",
        ".github/workflows/ci_matrix.yml",
        "self-hosted runners",
        "GitHub-hosted runners",
        "the self-hosted box kept running out of disk",
    ),
    (
        "date formatting",
        "printing calendar days as text",
        "formatISODate",
        "src/utils/date.ts",
        "manual string concat",
        "date-fns formatISO",
        "months were not zero-padded",
    ),
    (
        "config loading",
        "reading settings files at startup",
        "load_layered_config",
        "src/config/loader.py",
        "one big YAML file",
        "layered TOML files",
        "merge conflicts in the YAML every week",
    ),
    (
        "retry policy",
        "what happens when a network call fails",
        "retry_with_backoff",
        "lib/net/retry.go",
        "fixed 1s retries",
        "exponential backoff with jitter",
        "retries stampeded the API after outages",
    ),
    (
        "search ranking",
        "ordering results by relevance",
        "fuse_rankings",
        "src/search/fuse.py",
        "a weighted score sum",
        "reciprocal rank fusion",
        "score scales differed between signals",
    ),
    (
        "ORM choice",
        "the layer that talks to the database",
        "UserRepository.find_active",
        "app/db/users.py",
        "raw SQL strings",
        "SQLAlchemy 2.0",
        "SQL injection risk in ad-hoc queries",
    ),
    (
        "frontend state",
        "where UI data lives in the browser",
        "useThemeStore",
        "src/state/theme.ts",
        "React context",
        "zustand",
        "context re-rendered the whole tree",
    ),
    (
        "log shipping",
        "moving application logs off the servers",
        "ship_logs_vector",
        "ops/vector.toml",
        "Filebeat",
        "Vector",
        "Filebeat used 400 MB per host",
    ),
    (
        "feature flags",
        "turning features on for some users",
        "FlagClient.is_enabled",
        "src/flags/client.py",
        "env vars",
        "a flags service with per-user targeting",
        "rollouts needed redeploys",
    ),
    (
        "test runner",
        "the tool that executes our unit tests",
        "vitest.config.ts",
        "vitest.config.ts",
        "Jest",
        "Vitest",
        "Jest took 90 s to start in watch mode",
    ),
    (
        "package manager",
        "installing JavaScript dependencies",
        "pnpm-workspace.yaml",
        "pnpm-workspace.yaml",
        "npm",
        "pnpm",
        "node_modules was 3 GB",
    ),
    (
        "queue backend",
        "background job processing",
        "enqueue_thumbnail_job",
        "app/jobs/thumbnails.py",
        "Celery with RabbitMQ",
        "RQ with Redis",
        "RabbitMQ was one more thing to operate",
    ),
    (
        "embedding model",
        "turning text into vectors",
        "StaticEmbedder.embed",
        "refiners/embed.py",
        "full MiniLM",
        "a static model distilled from MiniLM",
        "MiniLM managed only 150 sentences per second",
    ),
    (
        "error tracking",
        "collecting crashes from production",
        "init_sentry",
        "src/observability/sentry.py",
        "emailing stack traces",
        "Sentry",
        "nobody read the crash emails",
    ),
    (
        "API pagination",
        "splitting long result lists into pages",
        "paginate_cursor",
        "app/api/pagination.py",
        "offset pagination",
        "cursor pagination",
        "offsets skipped rows during inserts",
    ),
    (
        "password hashing",
        "storing user secrets safely",
        "hash_password_argon2",
        "app/auth/passwords.py",
        "bcrypt",
        "argon2id",
        "the security review asked for memory-hard hashing",
    ),
    (
        "image storage",
        "where uploaded pictures are kept",
        "upload_to_bucket",
        "app/storage/images.py",
        "the local disk",
        "S3 with signed URLs",
        "disks filled up on every deploy",
    ),
    (
        "websocket library",
        "pushing live updates to browsers",
        "LiveChannel.broadcast",
        "server/live/channel.ts",
        "socket.io",
        "native WebSocket with ws",
        "socket.io fallbacks broke behind the proxy",
    ),
    (
        "migration tool",
        "changing the database schema safely",
        "alembic_upgrade_head",
        "migrations/env.py",
        "hand-written SQL scripts",
        "Alembic",
        "scripts were applied out of order",
    ),
    (
        "timezone handling",
        "storing when things happened",
        "to_utc_timestamp",
        "src/utils/time.py",
        "naive local datetimes",
        "UTC everywhere with zoneinfo",
        "DST changes duplicated events",
    ),
    (
        "build tool",
        "bundling the web app for release",
        "vite.config.ts",
        "vite.config.ts",
        "webpack",
        "Vite",
        "webpack rebuilds took 40 seconds",
    ),
]
ZH_FACTS = [
    (
        "缓存方案",
        "用户会话存在哪里",
        "SessionStore.persist_ttl",
        "app/store/session_ttl.rs",
        "Redis",
        "进程内缓存",
        "Redis 网络延迟太高",
    ),
    (
        "数据加载",
        "训练数据怎么读进来",
        "stream_shards",
        "src/data/shards.py",
        "一次性读入内存",
        "流式读取",
        "内存峰值超过 20 GB",
    ),
    (
        "日志格式",
        "日志长什么样",
        "JsonLogFormatter",
        "src/log/format.py",
        "纯文本日志",
        "JSON 结构化日志",
        "纯文本没法检索",
    ),
    (
        "部署方式",
        "代码怎么发到线上",
        "deploy_canary",
        "ops/deploy.py",
        "直接全量发布",
        "金丝雀发布",
        "上次全量发布导致全站故障",
    ),
    (
        "接口鉴权",
        "请求怎么验证身份",
        "verify_api_signature",
        "app/auth/signature.py",
        "固定 API Key",
        "HMAC 签名",
        "固定密钥被泄露过",
    ),
    (
        "分词方法",
        "中文怎么切成词",
        "split_bigrams_cjk",
        "src/text/bigrams.py",
        "jieba 分词",
        "二元组切分",
        "jieba 词典加载要两秒",
    ),
    (
        "任务调度",
        "定时任务怎么跑",
        "schedule_nightly_jobs",
        "ops/cron.py",
        "系统 crontab",
        "Airflow",
        "crontab 出错没人知道",
    ),
    (
        "前端路由",
        "页面之间怎么跳转",
        "createAppRouter",
        "src/router/index.ts",
        "hash 路由",
        "history 路由",
        "hash 路由对搜索引擎不友好",
    ),
]


@dataclass
class Query:
    text: str
    kind: str  # identifier | typo | paraphrase | zh
    session: str
    turn: int


def _typo(name: str, rng: random.Random) -> str:
    core = [i for i, ch in enumerate(name) if ch.isalpha()]
    i = rng.choice(core[1:-2] if len(core) > 4 else core)
    chars = list(name)
    if i + 1 < len(chars) and chars[i + 1].isalpha():
        chars[i], chars[i + 1] = chars[i + 1], chars[i]  # transposition, the commonest typo
    else:
        chars[i] = "x"
    return "".join(chars)


def build(share: Path, background: int = 1500, seed: int = 11) -> list[Query]:
    """Write the corpus under `share` (a `~/.kimi`-like dir) and return the labelled queries."""
    rng = random.Random(seed)
    work_dir = "/home/dev/projects/retrieval-eval"
    queries: list[Query] = []
    planted = [(f, False) for f in FACTS] + [(f, True) for f in ZH_FACTS]
    rng.shuffle(planted)
    session_no = 0
    start = 1767225600.0
    while planted:
        chunk, planted = planted[:3], planted[3:]
        turns: list[TurnSpec] = [
            random_turn(rng, big_output=False) for _ in range(background // 10)
        ]
        slots = sorted(rng.sample(range(len(turns) + len(chunk)), len(chunk)))
        for slot, (fact, zh) in zip(slots, chunk, strict=True):
            subject, para, ident, file, old, new, why = fact
            if zh:
                ask = f"{subject}要不要从{old}换成{new}？"
                answer = f"决定：{subject}改用{new}，实现在 `{ident}`（{file}）。原因：{why}。"
            else:
                ask = f"Should we keep {old} for {subject} or move to {new}?"
                answer = (
                    f"Decision: switch {subject} to {new} in `{ident}` ({file}). "
                    f"{old} is out because {why}."
                )
            calls = [
                CallSpec(
                    "StrReplaceFile",
                    {"path": file, "edit": {"old": old, "new": new}},
                    "",
                    False,
                    "File successfully edited.",
                )
            ]
            turns.insert(slot, TurnSpec(ask, answer, calls))
        # near-miss distractors: same subjects, no decision
        for fact, zh in chunk:
            subject, _, ident, file, old, new, _ = fact
            text = (
                f"看了一下{subject}的代码，暂时不用改。"
                if zh
                else f"Took a look at {subject} code paths; nothing to change yet."
            )
            turns.insert(
                rng.randrange(len(turns)),
                TurnSpec(text, "No changes.", [CallSpec("ReadFile", {"path": file}, "...")]),
            )
        sid = f"eval-{session_no:03d}-0000-4000-8000-000000000000"
        write_session(
            share, work_dir, turns, start + session_no * 86400, seed=session_no, session_id=sid
        )
        for index, spec in enumerate(turns):
            for fact, zh in chunk:
                if spec.user.startswith(
                    (f"Should we keep {fact[4]} for {fact[0]}", f"{fact[0]}要不要")
                ):
                    subject, para, ident, _, old, new, why = fact
                    queries.append(Query(ident, "identifier", sid, index))
                    queries.append(Query(_typo(ident, rng), "typo", sid, index))
                    if zh:
                        queries.append(Query(f"{para}？我们最后选了什么", "zh", sid, index))
                        queries.append(Query(f"为什么不用{old}了", "zh", sid, index))
                    else:
                        queries.append(
                            Query(f"what did we decide about {para}", "paraphrase", sid, index)
                        )
                        queries.append(
                            Query(f"why did we stop using {old}", "paraphrase", sid, index)
                        )
        session_no += 1
    return queries


MODES = ("lexical", "fuzzy", "semantic", "hybrid", "hybrid-rrf")


def evaluate(
    archive: Any, queries: list[Query], workspace: str = "retrieval-eval"
) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        per_kind: dict[str, list[int | None]] = {}
        for q in queries:
            fusion = "rrf" if mode == "hybrid-rrf" else None  # None: the default fusion
            found = archive.search(
                q.text, workspace=workspace, limit=10, mode=mode.removesuffix("-rrf"), fusion=fusion
            )
            rank = next(
                (i for i, h in enumerate(found) if (h.session_id, h.turn) == (q.session, q.turn)),
                None,
            )
            per_kind.setdefault(q.kind, []).append(rank)
            per_kind.setdefault("all", []).append(rank)
        out[mode] = {
            kind: {
                "recall@5": sum(r is not None and r < 5 for r in ranks) / len(ranks),
                "recall@10": sum(r is not None for r in ranks) / len(ranks),
                "mrr": sum(1 / (r + 1) for r in ranks if r is not None) / len(ranks),
                "n": len(ranks),
            }
            for kind, ranks in per_kind.items()
        }
    return out


def purity_recall(
    themes: list[Any], truth: dict[str, list[list[Any]]]
) -> dict[str, tuple[float, float]]:
    """For each planted theme, the discovered theme with the best F1: (purity, recall)."""
    out = {}
    for name, members in truth.items():
        wanted = {(s, "main", t) for s, t in members}

        def f1(t: Any, wanted: set = wanted) -> float:
            got = {m.key for m in t.members}
            hit = len(wanted & got)
            return 0.0 if not hit else 2 * hit / (len(got) + len(wanted))

        best = max(themes, key=f1) if themes else None
        got = {m.key for m in best.members} if best else set()
        hit = len(wanted & got)
        out[name] = (hit / len(got) if got else 0.0, hit / len(wanted))
    return out
