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
from typing import Any

MASK = "[REDACTED]"
MIN_KNOWN = 8  # a value shorter than this is not masked on its own where it recurs


class Rule:
    """One pattern and the literal substrings it cannot match without (checked first, cheaply).

    Token rules mask the whole match. Value rules keep group 1 (a name, a flag, `://user:`) and
    mask group 2; they are written in lower case and run on the lower-cased text (a
    case-insensitive alternation is several times slower), the spans applied to the original.
    `cased` hints are matched as written, the others against the lower-cased text.
    """

    def __init__(
        self,
        pattern: str | FirstInRun,
        hints: tuple[str, ...],
        cased: tuple[str, ...] = (),
        value: bool = False,
    ) -> None:
        self.re: Any = pattern if isinstance(pattern, FirstInRun) else re.compile(pattern)
        self.hints, self.cased, self.value = hints, cased, value
        self.fallback: Any = (
            re.compile(pattern, re.IGNORECASE) if value and isinstance(pattern, str) else self.re
        )

    def applies(self, text: str, low: str) -> bool:
        return any(h in low for h in self.hints) or any(h in text for h in self.cased)


class FirstInRun:
    r"""A token pattern tried only at the first start in each run of token characters.

    `\beyJ[…]{8,}\.…` tried at every `eyJ` of `eyJ-eyJ-eyJ-…` scans the whole run from each one
    (quadratic: a 1 MB line never finishes). When a start fails, every later start in the same run
    fails too (its first segment is a suffix of the failed one's, and what follows the run is the
    same), so the rest of the run is skipped. Quacks like the `re.Pattern` calls `Rule` users make
    (`finditer`, `subn`)."""

    def __init__(self, pattern: str, start: str, run: str) -> None:
        self.re, self.start, self.run = re.compile(pattern), start, re.compile(run)

    def finditer(self, text: str) -> list[re.Match[str]]:
        found, skip, i = [], 0, text.find(self.start)
        while i >= 0:
            if i >= skip and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):  # `\b`
                m = self.re.match(text, i)
                if m:
                    found.append(m)
                    skip = m.end()
                else:
                    run = self.run.match(text, i)
                    skip = run.end() if run else i + 1
            i = text.find(self.start, max(i + 1, skip))
        return found

    def subn(self, repl: str, text: str) -> tuple[str, int]:
        found = self.finditer(text)
        pieces, last = [], 0
        for m in found:
            pieces += [text[last : m.start()], repl]
            last = m.end()
        return "".join([*pieces, text[last:]]), len(found)


JWT = FirstInRun(
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "eyJ", r"[A-Za-z0-9_\-]*"
)

TOKENS = (
    # a PEM or PGP armoured private key (`... PRIVATE KEY-----`, `... PRIVATE KEY BLOCK-----`), to
    # its END line or, when that was cut off, to the end of the text
    Rule(
        r"(?s:-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z))",
        (),
        ("PRIVATE KEY",),
    ),
    # a key body without its header: the DER of a key starts MII/MIG (RSA, PKCS#8) or MHc (EC);
    # an armoured PGP secret key starts lQ (an old-format secret-key packet). The line break is
    # looked for after blanks without one (`[^\S\n]*\n\s*`, the same strings as `\s*\n\s*`):
    # two `\s*` around it backtrack quadratically on a long run of blank lines
    Rule(
        r"\b(?:MII|MIG|MHc|lQ[A-Za-z0-9+/]{20})[A-Za-z0-9+/]{40,}={0,2}(?:[^\S\n]*\n\s*[A-Za-z0-9+/]{8,}={0,2})*",
        (),
        ("MII", "MIG", "MHc", "lQ"),
    ),
    Rule(r"\b(?:sk|pk|rk)-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}", ("sk-", "pk-", "rk-")),
    Rule(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    Rule(
        r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),
    Rule(r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    Rule(r"\bhf_[A-Za-z0-9]{30,}\b", ("hf_",)),
    Rule(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", ("xox",)),
    Rule(r"\bAKIA[0-9A-Z]{16}\b", (), ("AKIA",)),
    Rule(r"\bAIza[0-9A-Za-z_\-]{35}\b", (), ("AIza",)),
    Rule(JWT, (), ("eyJ",)),
    Rule(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/\-]{12,}=*", ("bearer ",)),
)
# What must sit next to a name for `ASSIGN` to run: the bare words `key`, `token`, `pass` are in
# most ordinary turns ("tokens", "passes", "cache key"), so they count only joined to a name or
# followed by an assignment; an ordinary turn then costs substring checks, not a regex pass.
_NAMES = (
    "passw",
    "pwd",
    "secret",
    "credential",
    "dsn",
    "salt",
    "_key",
    "-key",
    "key=",
    "key:",
    'key"',
    "key'",
    "_token",
    "-token",
    "token=",
    "token:",
    'token"',
    "token'",
    "_pass",
    "pass=",
    "pass:",
    'pass"',
    "token =",
    "key =",
    "pass =",
)
_KEYWORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "credential",
    "key",
    "dsn",
    "salt",
)  # `pass` covers password
_KEYWORD = re.compile("|".join(_KEYWORDS), re.IGNORECASE)
_NAME_RUN = re.compile(r"[\w.\-]*")  # the rest of a name after its keyword, as `ASSIGN` reads it
# (`\?` before a quote: the same assignment inside an escaped string, `SECRET=\"…\"`; a value
# stops at a backslash, so `key = [MASKED]\naws_secret_access_key = …` on one escaped line is two)
ASSIGN = Rule(
    r"((?:pass(?:word|wd)?|pwd|secret|token|credential|key|dsn|salt)[\w.\-]*\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    r"([^\s\"',;\\]{4,})",
    _NAMES,
    value=True,
)
VALUES = (
    # URL credentials `scheme://user:PASSWORD@host`
    Rule(r"(://[^\s:/@'\"<>]{1,100}:)([^\s@/'\"<>]{1,200})(?=@)", ("://",), value=True),
    # query parameters `?token=…`, `&api_key=…`
    Rule(
        r"([?&](?:token|key|apikey|api_key|access_token|password|secret)=)([^&\s'\"]{8,})",
        ("token=", "key=", "password=", "secret="),
        value=True,
    ),
    # command-line flags `--password X`, `--token=X`, and `mysql -uroot -pX`
    Rule(
        r"((?:^|\s)--?(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)(?:=|\s+)['\"]?)"
        r"([^\s'\"]{4,})",
        ("-pass", "-token", "-secret", "-api", "-auth"),
        value=True,
    ),
    # (the gap to `-p` holds no other client name: else each name on a long line scans to its end)
    Rule(
        r"(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b(?:(?!\b(?:mysql|mysqldump|mysqladmin|mariadb)\b)[^\n|;&])*?\s-p)"
        r"([^\s'\"]{3,})",
        ("mysql", "mariadb"),
        value=True,
    ),
    # `password = hunter2`, `API_KEY: "…"`, `"secret": "…"`: the name stays, the value goes.
    ASSIGN,
)
_STRICT = re.compile(
    r"(?i)password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|"
    r"private[_-]?key|credential"
)
_NAME_TAIL = re.compile(r"[\w.\-]*$")


def _minimal(hints: set[str]) -> tuple[str, ...]:
    """Drop hints that contain another hint: `password` is implied by `pass`."""
    return tuple(sorted(h for h in hints if not any(o != h and o in h for o in hints)))


_GATE = _minimal({h for r in (*TOKENS, *VALUES) for h in r.hints})
_GATE_CASED = tuple(
    sorted(h for r in (*TOKENS, *VALUES) for h in r.cased if not any(g in h.lower() for g in _GATE))
)


def may_hold_secret(text: str) -> bool:
    """False when `text` cannot match any rule (substring pre-checks, no regex)."""
    for h in _GATE_CASED:
        if h in text:
            return True
    low = text.lower()
    for h in _GATE:
        if h in low:
            return True
    return False


def _keyword_matches(
    text: str, rx: re.Pattern[str], starts: Iterable[int]
) -> list[tuple[int, int, int]]:
    """`ASSIGN` matches (`rx`), tried only where a keyword starts (`starts`, ascending; found by
    `str.find`, which is many times faster than letting the regex engine try the alternation at
    every position). A name runs to the end of its `[\\w.-]` run (what follows it, a quote, a
    blank, `:` or `=`, is never part of one), so when the match from one keyword fails, every
    later keyword in the same name fails the same way and is skipped; else a long name made of
    keywords (`secretsecret…`) would cost quadratic time."""
    found, last = [], -1
    for i in starts:
        if i < last:
            continue
        m = rx.match(text, i)
        if m:
            found.append((m.start(), m.start(2), m.end()))
            last = m.end()
        else:
            run = _NAME_RUN.match(text, i)
            last = run.end() if run else i + 1
    return found


def _find_all(low: str, word: str) -> list[int]:
    out, i = [], low.find(word)
    while i >= 0:
        out.append(i)
        i = low.find(word, i + 1)
    return out


def _values(rule: Rule, text: str, low: str) -> list[tuple[int, int, int]]:
    """(start, value start, end) of each secret value `rule` finds in `text`."""
    if rule is ASSIGN and len(low) == len(text):
        found = _keyword_matches(
            low, rule.re, sorted({i for word in _KEYWORDS for i in _find_all(low, word)})
        )
    elif (
        rule is ASSIGN
    ):  # lower() changed the length: keywords found case-insensitively in the text itself
        found = _keyword_matches(text, rule.fallback, (m.start() for m in _KEYWORD.finditer(text)))
    elif len(low) == len(text):
        found = [(m.start(), m.start(2), m.end()) for m in rule.re.finditer(low)]
    else:  # lower() changed the length (e.g. `İ`): match case-insensitively on the text itself
        found = [(m.start(), m.start(2), m.end()) for m in rule.fallback.finditer(text)]
    return [span for span in found if _is_value(rule, text, *span)]


def _is_value(rule: Rule, text: str, start: int, split: int, end: int) -> bool:
    """Whether a value rule's match is a secret worth masking (not a reference or a count)."""
    value = text[split:end]
    if value.startswith(("$", "%", "{{", "<", MASK, "[REDACTED")):
        return False  # already masked, or a variable reference / placeholder, not a value
    if rule is ASSIGN:
        tail = _NAME_TAIL.search(text, max(0, start - 64), start)
        name = (tail.group(0) if tail else "") + text[start:split]
        if not _STRICT.search(name):
            # `pass`/`token`/`key` names are also `pass_rate: 0.95`, `max_tokens=4096`,
            # `sort_key: name`: only values shaped like credentials (letters and digits, 8+) count
            return (
                len(value) >= 8
                and any(c.isdigit() for c in value)
                and any(c.isalpha() for c in value)
            )
    return True


def secret_values(texts: Iterable[str], min_len: int = MIN_KNOWN) -> frozenset[str]:
    """Every secret the rules find in `texts` (whole tokens, assigned values) at least `min_len`
    long, to be masked wherever else they recur (see `redact(text, known)`). With `min_len=1`,
    empty means `redact` would change none of these texts."""
    found: set[str] = set()
    for text in texts:
        if not text or not may_hold_secret(text):
            continue
        low = text.lower()
        for rule in TOKENS:
            if rule.applies(text, low):
                found.update(m.group(0).strip() for m in rule.re.finditer(text))
        for rule in VALUES:
            if rule.applies(text, low):
                found.update(text[split:end] for _, split, end in _values(rule, text, low))
    return frozenset(v for v in found if len(v) >= min_len and v != MASK)


def redact(text: str, known: Iterable[str] = ()) -> tuple[str, int]:
    """Return `text` with secrets replaced by `[REDACTED]`, and how many were replaced.

    `known`: secrets found elsewhere in the same turn (from `secret_values`), masked here too.
    """
    if not text:
        return text, 0
    count = 0
    if not may_hold_secret(text):
        return _mask_known(text, known, count)
    low = text.lower()
    for rule in TOKENS:
        if rule.applies(text, low):
            text, n = rule.re.subn(MASK, text)
            count += n
    if count:
        low = text.lower()
    for rule in VALUES:
        if not rule.applies(text, low):
            continue
        spans = _values(rule, text, low)
        if spans:
            pieces, last = [], 0
            for _, split, end in spans:
                pieces += [text[last:split], MASK]
                last = end
            text = "".join([*pieces, text[last:]])
            low = text.lower()
            count += len(spans)
    return _mask_known(text, known, count)


def _mask_known(text: str, known: Iterable[str], count: int) -> tuple[str, int]:
    for value in sorted((v for v in known if v in text), key=len, reverse=True):
        text, n = re.subn(re.escape(value), MASK, text)
        count += n
    return text, count
