"""Sessions with planted themes that evolve over weeks: a decision made, revisited, reversed.

`build(share)` writes a `~/.kimi`-like tree and returns the ground truth: theme -> [(session,
turn)], plus which turn reverses which decision. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from pathlib import Path

from archive_mcp.synthetic.sessions import CallSpec, TurnSpec, random_turn, write_session

DAY = 86400.0
WORK_DIR = "/home/dev/projects/shop"

# Each theme: vocabulary and a story. Steps are (week, kind, user, answer); kind "reversal" reverses
# the first "decision".
THEMES: dict[str, dict] = {
    "payment-retries": {
        "files": ["app/payments/charge.py", "app/payments/psp_client.py"],
        "idents": ["charge_card", "PspClient.retry_policy", "idempotency_key"],
        "story": [
            (
                0,
                "question",
                "Card charges fail intermittently with PSP 503s in charge_card. Why?",
                "The PSP returns 503 under load; charge_card gives up after one attempt.",
            ),
            (
                0,
                "decision",
                "Should charge_card retry failed PSP calls?",
                "Decision: retry charge_card with exponential backoff (3 attempts) and an idempotency_key so a retried charge is never doubled.",
            ),
            (
                1,
                "change",
                "Add the idempotency_key header to PspClient requests.",
                "Added idempotency_key to every PspClient charge request in app/payments/psp_client.py.",
            ),
            (
                2,
                "fix",
                "A customer was charged twice after a PSP timeout.",
                "The retry reused a fresh idempotency_key; fixed charge_card to reuse the key across retries.",
            ),
            (
                3,
                "question",
                "How many charge_card retries happen per day?",
                "About 1.2% of payment charges retry; most succeed on the second PSP attempt.",
            ),
            (
                5,
                "reversal",
                "The PSP now rate-limits us when charge_card retries. Keep the backoff?",
                "Reverted: charge_card goes back to a single attempt; retries move to the PSP's own retry queue because our backoff triggered their rate limit.",
            ),
            (
                6,
                "change",
                "Remove PspClient.retry_policy now that retries are gone.",
                "Removed PspClient.retry_policy and its tests from the payments module.",
            ),
        ],
    },
    "image-pipeline": {
        "files": ["src/images/decode.py", "src/images/thumbnails.py"],
        "idents": ["decode_jpeg", "make_thumbnail", "ThumbnailWorker"],
        "story": [
            (
                0,
                "question",
                "Thumbnail generation is slow; where is the time going in make_thumbnail?",
                "Most of make_thumbnail is spent in decode_jpeg using PIL.",
            ),
            (
                1,
                "decision",
                "Which JPEG decoder should decode_jpeg use?",
                "Decision: switch decode_jpeg from PIL to turbojpeg; it decodes thumbnails 2.5x faster.",
            ),
            (
                1,
                "change",
                "Wire turbojpeg into ThumbnailWorker.",
                "ThumbnailWorker now calls decode_jpeg backed by turbojpeg; added a PIL fallback for CMYK images.",
            ),
            (
                3,
                "fix",
                "CMYK JPEG thumbnails come out inverted.",
                "Fixed the CMYK path in decode_jpeg: PIL fallback now converts to RGB before make_thumbnail.",
            ),
            (
                4,
                "plan",
                "Plan the move of thumbnails to a background queue.",
                "Plan: ThumbnailWorker consumes a queue; make_thumbnail stays pure; decode_jpeg unchanged.",
            ),
            (
                6,
                "question",
                "Did turbojpeg fix the thumbnail latency?",
                "Yes: p95 make_thumbnail latency dropped from 480 ms to 190 ms with turbojpeg.",
            ),
        ],
    },
    "auth-tokens": {
        "files": ["app/auth/tokens.py", "app/auth/middleware.py"],
        "idents": ["issue_access_token", "refresh_session", "AuthMiddleware"],
        "story": [
            (
                0,
                "decision",
                "How long should access tokens from issue_access_token live?",
                "Decision: access tokens live 24 hours; AuthMiddleware checks the JWT signature only.",
            ),
            (
                2,
                "fix",
                "A leaked JWT stayed valid for a whole day.",
                "Security incident: issue_access_token's 24h lifetime is too long; revoking needs a denylist in AuthMiddleware.",
            ),
            (
                2,
                "reversal",
                "Should we keep 24-hour JWTs after the leak?",
                "Reversed the 24h decision: issue_access_token now issues 15-minute JWTs and refresh_session hands out refresh tokens.",
            ),
            (
                3,
                "change",
                "Implement refresh_session rotation.",
                "refresh_session rotates refresh tokens on every use and AuthMiddleware rejects reused ones.",
            ),
            (
                5,
                "test",
                "Add tests for expired access tokens in AuthMiddleware.",
                "Added tests: AuthMiddleware returns 401 for expired JWTs and refresh_session issues a new pair.",
            ),
        ],
    },
    "ci-flakiness": {
        "files": [".github/workflows/ci.yml", "tests/conftest.py"],
        "idents": ["pytest-rerunfailures", "quarantine_marker", "ci.yml"],
        "story": [
            (
                0,
                "question",
                "Why does the CI pipeline fail randomly on test_checkout_flow?",
                "test_checkout_flow is flaky: it depends on wall-clock time and a shared Redis in CI.",
            ),
            (
                1,
                "decision",
                "Do we rerun flaky tests in CI?",
                "Decision: add pytest-rerunfailures with 2 reruns in ci.yml as a stopgap for flaky tests.",
            ),
            (
                2,
                "change",
                "Add a quarantine_marker for known flaky tests.",
                "Added quarantine_marker in tests/conftest.py; quarantined tests run in a separate non-blocking CI job.",
            ),
            (
                4,
                "fix",
                "test_checkout_flow still flakes with reruns.",
                "Fixed the flaky test itself: froze time with a fixture and gave each CI job its own Redis database.",
            ),
            (
                5,
                "reversal",
                "Now that the flakes are fixed, keep pytest-rerunfailures?",
                "Reverted the reruns: removed pytest-rerunfailures from ci.yml so new flaky tests fail loudly again.",
            ),
        ],
    },
    "缓存方案": {
        "files": ["app/cache/session_cache.py", "config/redis.toml"],
        "idents": ["SessionCache", "redis_pool", "lru_ttl"],
        "story": [
            (
                0,
                "question",
                "会话缓存 SessionCache 为什么延迟这么高？",
                "SessionCache 每次请求都访问 Redis，网络往返占了大部分延迟。",
            ),
            (
                1,
                "decision",
                "SessionCache 要不要改成进程内缓存？",
                "决定：SessionCache 改用进程内 LRU 缓存（lru_ttl 60 秒），不再每次访问 Redis。",
            ),
            (
                2,
                "change",
                "实现 SessionCache 的进程内 lru_ttl 过期逻辑。",
                "已完成：SessionCache 使用进程内 LRU，lru_ttl 默认 60 秒，redis_pool 只在未命中时使用。",
            ),
            (
                4,
                "fix",
                "多实例部署后用户会话不一致。",
                "问题：进程内缓存在多实例之间不同步，用户登出后其他实例仍然缓存旧会话。",
            ),
            (
                5,
                "reversal",
                "进程内缓存导致会话不一致，还要继续用吗？",
                "回滚：SessionCache 改回 Redis，redis_pool 加大连接数来降低延迟，放弃进程内缓存。",
            ),
        ],
    },
}


def build(
    share: Path,
    seed: int = 5,
    noise: int = 80,
    start: float = 1767225600.0,
    work_dir: str = WORK_DIR,
) -> dict:
    """Write the corpus; return {"themes": {name: [[session, turn], ...]}, "reversals": {...}}."""
    rng = random.Random(seed)
    truth: dict[str, list[list]] = {name: [] for name in THEMES}
    reversals: dict[str, dict] = {}
    # One session per (theme, week); each holds that week's story steps plus noise turns.
    sessions: dict[tuple[str, int], list[tuple[str, tuple]]] = {}
    for name, theme in THEMES.items():
        for step in theme["story"]:
            sessions.setdefault((name, step[0]), []).append((name, step))
            # a follow-up in the same words, as people really ask: grows each theme realistically
            ident, file = rng.choice(theme["idents"]), rng.choice(theme["files"])
            zh = not name.isascii()
            follow = (
                (
                    step[0],
                    "follow-up",
                    f"{ident} 在 {file} 里还有要处理的吗？",
                    f"{ident}（{file}）已经按上次的结论处理好了。",
                )
                if zh
                else (
                    step[0],
                    "follow-up",
                    f"Anything left to do for {ident} in {file}?",
                    f"{ident} in {file} is done as agreed last time; nothing else pending.",
                )
            )
            sessions.setdefault((name, step[0]), []).append((name, follow))
    noise_left = noise
    for s_no, ((_name, week), steps) in enumerate(
        sorted(sessions.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ):
        turns: list[TurnSpec] = []
        labels: list[tuple[str, tuple] | None] = []
        n_noise = min(noise_left, rng.randint(1, 4))
        noise_left -= n_noise
        for _ in range(n_noise):
            turns.append(random_turn(rng, big_output=False, small=(100, 600)))
            labels.append(None)
        for theme_name, step in steps:
            theme = THEMES[theme_name]
            file = rng.choice(theme["files"])
            kind = step[1]
            tool = (
                "StrReplaceFile"
                if kind in ("change", "fix", "reversal", "decision")
                else "ReadFile"
            )
            calls = [CallSpec(tool, {"path": file}, f"{file}: ok", False, "done")]
            pos = rng.randrange(len(turns) + 1)
            turns.insert(pos, TurnSpec(step[2], step[3], calls))
            labels.insert(pos, (theme_name, step))
        base = start + week * 7 * DAY + s_no * 3600
        for i, t in enumerate(turns):
            t.at = base + i * 600
        sid = f"theme-{s_no:03d}-0000-4000-8000-{seed:012d}"
        write_session(share, work_dir, turns, base, seed=s_no, session_id=sid)
        for index, label in enumerate(labels):
            if label:
                theme_name, step = label
                truth[theme_name].append([sid, index])
                if step[1] == "reversal":
                    reversals[theme_name] = {"session_id": sid, "turn": index}
    return {"themes": truth, "reversals": reversals}
