"""Secret redaction for refined text: API keys, tokens, passwords, URL credentials, private keys.

Two passes. Shapes: tokens recognisable on their own (`ghp_…`, `sk_live_…`, a PEM block or a
bare PEM body), values assigned to a secret-sounding name (`DB_PASSWORD=…`, `"secret": "…"`),
command-line passwords (`--password X`, `mysql -pX`) and URL credentials (`postgres://app:pw@`).
Then recurrences: a value first seen in one of those shapes is masked wherever it appears again in
the same turn (`secret_values` collects them, `redact(text, known)` masks them), so an AWS secret
pasted as `KEY=value` and later echoed alone does not survive. Measured on generated and real logs
in `bench/redaction.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"
MIN_KNOWN = 8  # a value shorter than this is not masked on its own where it recurs

# Tokens with a recognisable shape, matched in one pass (one alternation, not one scan each).
_TOKENS = re.compile("|".join(f"(?:{p})" for p in (
    r"(?s:-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z))",
    # a PEM body without its header: DER of a key starts MII/MIG (RSA, PKCS#8) or MHc (EC)
    r"\b(?:MII|MIG|MHc)[A-Za-z0-9+/]{40,}={0,2}(?:\s*\n\s*[A-Za-z0-9+/]{8,}={0,2})*",
    r"\b(?:sk|pk|rk)-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}",
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bhf_[A-Za-z0-9]{30,}\b",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{35}\b",
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    r"(?i:(?<=\bbearer )[A-Za-z0-9._~+/\-]{12,}=*)",
)))
# Values: (prefix kept)(secret masked). URL credentials `scheme://user:PASSWORD@host`.
_URL = re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@'\"<>]{1,100}:)([^\s@/'\"<>]{1,200})(?=@)")
# Query parameters: `?token=…`, `&api_key=…`.
_QUERY = re.compile(r"(?i)([?&](?:token|key|apikey|api_key|access_token|password|secret)=)([^&\s'\"]{8,})")
# Command-line flags: `--password X`, `--token=X`, `mysql -uroot -pX`.
_FLAG = re.compile(r"(?i)((?:^|\s)--?(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)"
                   r"(?:=|\s+)['\"]?)([^\s'\"]{4,})")
_MYSQL = re.compile(r"(?i)(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?\s-p)([^\s'\"]{3,})")
# `password = hunter2`, `API_KEY: "…"`, `"secret": "…"`: keep the name, drop the value.
_ASSIGN = re.compile(
    r"(?i)(\b[\w.\-]*(?:password|passwd|pwd|pass|secret|token|credential|api[_-]?key|access[_-]?key|"
    r"auth[_-]?token|private[_-]?key|client[_-]?secret|key|dsn|salt)[\w.\-]*[\"']?\s*[:=]\s*[\"']?)"
    r"([^\s\"',;]{4,})")
_STRICT = re.compile(r"(?i)password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|"
                     r"private[_-]?key|credential")
_VALUES = (_URL, _QUERY, _FLAG, _MYSQL, _ASSIGN)

# Cheap literal checks first: most text holds no secret and never reaches the patterns.
# Each pattern above needs one of these (lower-cased) substrings; keep the lists in step.
_HINTS = ("private key", "sk-", "pk-", "rk-", "sk_live", "sk_test", "rk_live", "rk_test", "ghp_", "gho_",
          "ghu_", "ghs_", "ghr_", "github_pat", "glpat-", "npm_", "hf_", "xox", "akia", "aiza", "eyj",
          "bearer", "pass", "pwd", "secret", "token", "credential", "api_key", "api-key", "apikey",
          "access_key", "access-key", "accesskey", "auth_token", "auth-token", "authtoken",
          "private_key", "private-key", "privatekey", "key=", "key:", "key\"", "dsn", "salt", "mysql", "mysqladmin", "mariadb")
_CASED_HINTS = ("MII", "MIG", "MHc")


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot match any pattern above (substring pre-checks, no regex)."""
    if any(h in text for h in _CASED_HINTS):
        return True
    low = text.lower()
    return any(h in low for h in _HINTS) or ("://" in low and "@" in low)


def _is_value(m: re.Match[str]) -> bool:
    """Whether a value pattern's match is a secret worth masking (not a reference or a count)."""
    value = m.group(2)
    if value == MASK or value.startswith(("$", "%", "{{", "<", "[REDACTED")):
        return False  # already masked, or a variable reference / placeholder, not a value
    if m.re is _ASSIGN and not _STRICT.search(m.group(1)):
        # `pass`/`token`/`key` names are also `pass_rate: 0.95`, `max_tokens=4096`,
        # `sort_key: name`: only values shaped like credentials (letters and digits, 8+) count
        return (len(value) >= 8 and any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value))
    return True


def secret_values(texts: Iterable[str]) -> frozenset[str]:
    """Every secret the patterns find in `texts` (whole tokens, assigned values), to be masked
    wherever else they recur (see `redact(text, known)`)."""
    found: set[str] = set()
    for text in texts:
        if not text or not may_hold_secret(text):
            continue
        found.update(m.group(0).strip() for m in _TOKENS.finditer(text))
        for pattern in _VALUES:
            found.update(m.group(2) for m in pattern.finditer(text) if _is_value(m))
    return frozenset(v for v in found if len(v) >= MIN_KNOWN and v != MASK)


def redact(text: str, known: Iterable[str] = ()) -> tuple[str, int]:
    """Return `text` with secrets replaced by `[REDACTED]`, and how many were replaced.

    `known`: secrets found elsewhere in the same turn (from `secret_values`), masked here too.
    """
    if not text:
        return text, 0
    count = 0
    if may_hold_secret(text):
        text, count = _TOKENS.subn(MASK, text)

        def _value(m: re.Match[str]) -> str:
            nonlocal count
            if not _is_value(m):
                return m.group(0)
            count += 1
            return m.group(1) + MASK

        for pattern in _VALUES:
            text = pattern.sub(_value, text)
    for value in sorted((v for v in known if v in text), key=len, reverse=True):
        text, n = re.subn(re.escape(value), MASK, text)
        count += n
    return text, count
