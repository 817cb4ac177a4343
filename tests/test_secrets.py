"""Secrets of every shape that leaked before never come back out: not in refined Parquet, search,
load_turn_context, trace_theme, bootstrap_workspace, exports or the ingest state."""

from __future__ import annotations

from pathlib import Path

import pytest
from archive_mcp.refiners.redact import redact, secret_values

from archive_mcp import Archive
from archive_mcp.synthetic.secrets import derived_texts, make_secrets, surviving, write_secret_share


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_generated_secret_survives_any_output(tmp_path: Path, fake_embedder, seed: int) -> None:  # noqa: ANN001
    secrets = write_secret_share(tmp_path / "share", seed=seed)
    assert len(secrets.values) == 10
    archive = Archive(tmp_path / "home", embedder=fake_embedder)
    report = archive.ingest(tmp_path / "share")
    assert (report.turns_added, report.skipped) == (7, [])
    ws = archive.workspaces()[0]
    turns = archive.turns(ws.id).collect()
    refs = [{"session_id": r["session_id"], "turn": r["turn"]} for r in turns.to_dicts()]
    archive.tag_theme("vault", ws.id, references=refs)
    archive.memory(ws.id).remember(
        "creds",
        "Rotate the keys quarterly.",
        "rules",
        title=f"keys {secrets.values['stripe_live']}",
        tags=[secrets.values["npm_token"]],
        sources=[f"postgres://app:{secrets.values['postgres_url_password']}@db/app"],
    )
    queries = [
        "postgres",
        "password",
        "mysql",
        "aws secret key",
        "env file signing",
        "TLS key",
        "billing",
        *secrets.values.values(),
    ]
    outputs = derived_texts(archive, ws, refs, "vault", queries, limit=20)
    assert {
        name: surviving(secrets.values, text) for name, text in outputs.items()
    } == dict.fromkeys(outputs, [])
    assert turns.sort("turn")["redactions"].to_list() == [
        3,
        1,
        3,
        2,
        0,
        2,
        3,
    ]  # the PEM is only in raw output


def test_a_value_seen_once_as_key_value_is_masked_where_it_recurs() -> None:
    v = make_secrets(5).values
    known = secret_values([f"AWS_SECRET_ACCESS_KEY={v['aws_secret']}"])
    assert redact(f"the key is {v['aws_secret']}.", known) == ("the key is [REDACTED].", 1)
    assert redact(f"the key is {v['aws_secret']}.") == (f"the key is {v['aws_secret']}.", 0)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("psql postgres://app:pw9Xk2@db:5432/app", "psql postgres://app:[REDACTED]@db:5432/app"),
        (
            "git clone https://user:hunter2x@github.com/a/b",
            "git clone https://user:[REDACTED]@github.com/a/b",
        ),
        ("pg_dump --password Pa55word9", "pg_dump --password [REDACTED]"),
        ("mysql -uroot -pR00tpass db", "mysql -uroot -p[REDACTED] db"),
        ("STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE=[REDACTED]"),
        (
            "//npm.registry.example/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "//npm.registry.example/:_authToken=[REDACTED]",
        ),
        (
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dV",
            "[REDACTED]",
        ),
        ("SIGNING_KEY=a8Bx9dk2LmQ0pZ", "SIGNING_KEY=[REDACTED]"),
        ("token = abc123xyz789", "token = [REDACTED]"),
    ],
)
def test_new_shapes_are_masked(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096",
        "pass_rate: 0.95",
        "tokenizer=bert-base-uncased",
        "sort_key: name",
        "see https://example.com/@user/post",
        "user@example.com",
        "git push origin main",
        "primary_key=id",
        "MIGRATION done",
        "the tokens passed the key test",
    ],
)
def test_lookalikes_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)
