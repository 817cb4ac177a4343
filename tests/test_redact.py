"""Secret redaction: every pattern, and the cheap pre-check never hides a secret from it."""

from __future__ import annotations

import time

import pytest
from archive_mcp.refiners.redact import MASK, may_hold_secret, redact

CASES = [
    ("export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "export OPENAI_API_KEY=[REDACTED]"),
    ("password: hunter22", "password: [REDACTED]"),
    ("Authorization: Bearer abcdefghijklmnopqrstu", "Authorization: Bearer [REDACTED]"),
    ("https://x.io/a?token=abcdefgh123&x=1", "https://x.io/a?token=[REDACTED]&x=1"),
    ("DB_PASSWORD=verysecret1", "DB_PASSWORD=[REDACTED]"),
    ('client_secret = "abcdef123456"', 'client_secret = "[REDACTED]"'),
    ("AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP", "AWS_ACCESS_KEY_ID=[REDACTED]"),
    ("github: ghp_abcdefghijklmnopqrstuvwxyz0123", "github: [REDACTED]"),
    ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop", "jwt [REDACTED]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", "[REDACTED]"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "google [REDACTED]"),
    # PGP armour: the header ends in `KEY BLOCK-----`; seen in real logs with two spaces or CRLF after it
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----  lQcYBG"
        + "Ab1" * 30
        + "\r\n=Xy12\r\n-----END PGP PRIVATE KEY BLOCK-----",
        "[REDACTED]",
    ),
    # the same assignments inside an escaped string (a script quoted in a tool call)
    ("echo 'SECRET=\\\"sk_tst_abc12\\\"' > test.py", "echo 'SECRET=\\\"[REDACTED]\\\"' > test.py"),
    (
        "key_id = [MASKED]\\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLE\\n",
        "key_id = [MASKED]\\naws_secret_access_key = [REDACTED]\\n",
    ),
    (
        "the saved key starts lQcYBG" + "Zq9+" * 20 + " (note the double space)",
        "the saved key starts [REDACTED] (note the double space)",
    ),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_secrets_are_masked_and_counted(text: str, expected: str) -> None:
    assert may_hold_secret(text)
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    "text",
    [
        "tokenize_cjk passes its tests",
        "the cache key is stable",
        "PASSWORD=$PW",
        "idempotency_key reused",
        "no secrets here",
        'keywords = ["BEGIN OPENSSH PRIVATE KEY"]',
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


def test_a_key_body_before_a_long_run_of_blank_lines_is_masked_in_linear_time() -> None:
    # `\s*\n\s*` between body lines backtracked quadratically here: minutes for 100k blank lines
    text = "MII" + "Ab1/" * 12 + "\n" * 50_000 + " \n" * 50_000 + "done"
    start = time.perf_counter()
    out, n = redact(text)
    assert time.perf_counter() - start < 5
    assert (out, n) == (MASK + text[3 + 48 :], 1)


def test_a_long_line_naming_the_client_many_times_is_scanned_in_linear_time() -> None:
    text = "mysql " * 100_000 + "mysqldump --single-transaction -uroot -phunter22 app"
    start = time.perf_counter()
    assert redact(text) == (
        "mysql " * 100_000 + "mysqldump --single-transaction -uroot -p[REDACTED] app",
        1,
    )
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize(
    "head", ["", "İ"]
)  # "İ" changes the length of lower(): the case-insensitive path
def test_a_long_name_made_of_keywords_is_scanned_in_linear_time(head: str) -> None:
    name = head + "_secret_key" * 40_000
    start = time.perf_counter()
    assert redact(name + " is long") == (name + " is long", 0)
    assert redact(name + "=hunter22x") == (name + "=[REDACTED]", 1)
    assert time.perf_counter() - start < 5


def test_a_long_run_of_token_starts_is_scanned_in_linear_time() -> None:
    # `\beyJ…\.` tried at every `eyJ` of one long run rescanned the run from each: hours for 1 MB
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop"
    text = "eyJ-" * 250_000 + " then " + jwt
    start = time.perf_counter()
    assert redact(text) == ("eyJ-" * 250_000 + " then " + MASK, 1)
    assert time.perf_counter() - start < 5
