"""Secret redaction for refined text: API keys, bearer tokens, passwords, private keys."""

from __future__ import annotations

import re

# Tokens with a recognisable shape, matched in one pass (one alternation, not one scan each).
_TOKENS = re.compile("|".join(f"(?:{p})" for p in (
    r"(?s:-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z))",
    r"\b(?:sk|pk|rk)-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}",
    r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}\b",
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    r"(?i:(?<=\bbearer )[A-Za-z0-9._~+/\-]{12,}=*)",
)))
# Query parameters: `?token=…`, `&api_key=…`.
_QUERY = re.compile(r"(?i)([?&](?:token|key|apikey|api_key|access_token)=)([^&\s'\"]{8,})")
# `password = hunter2`, `API_KEY: "…"`, `"secret": "…"`: keep the name, drop the value.
_ASSIGN = re.compile(
    r"(?i)(\b[\w.\-]*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|"
    r"private[_-]?key|client[_-]?secret)[\w.\-]*[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{4,})")

MASK = "[REDACTED]"
# Cheap literal checks first: most text holds no secret and never reaches the patterns.
# Each pattern below needs one of these (lower-cased) substrings; keep the two lists in step.
_HINTS = ("private key", "sk-", "pk-", "rk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat", "xox",
          "akia", "aiza", "eyj", "bearer", "passw", "pwd", "secret", "api_key", "api-key", "apikey",
          "access_key", "access-key", "accesskey", "auth_token", "auth-token", "authtoken", "private_key",
          "private-key", "privatekey", "key=", "token=")


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot match any pattern below (a substring pre-check, no regex)."""
    low = text.lower()
    return any(h in low for h in _HINTS)


def redact(text: str) -> tuple[str, int]:
    """Return `text` with secrets replaced by `[REDACTED]`, and how many were replaced."""
    if not text:
        return text, 0
    if not may_hold_secret(text):
        return text, 0
    text, count = _TOKENS.subn(MASK, text)

    def _assign(m: re.Match[str]) -> str:
        nonlocal count
        if m.group(2) == MASK or m.group(2).startswith("$"):
            return m.group(0)  # already masked, or a variable reference, not a value
        count += 1
        return m.group(1) + MASK

    text = _QUERY.sub(_assign, text)
    text = _ASSIGN.sub(_assign, text)
    return text, count
