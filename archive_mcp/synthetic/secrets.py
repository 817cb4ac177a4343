"""Generated sessions full of realistic secrets, for the redaction test and `bench/redaction.py`.

Every shape that leaked before (URL passwords, an AWS secret or `.env` value echoed outside its
`KEY=value`, a PEM body without its header, Stripe and npm tokens, `--password X`, `mysql -pX`, a
GitHub token in a session title), placed in user text, assistant text, thinking and tool output.
The values are random (seeded) and fake; `SecretSet.values` lists exactly what must never be
shown again.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archive_mcp.synthetic.sessions import CallSpec, TurnSpec, write_session

WORK_DIR = "/home/dev/projects/vault"
ALNUM = string.ascii_letters + string.digits


@dataclass
class SecretSet:
    values: dict[str, str] = field(default_factory=dict)  # shape -> the secret value
    turns: list[TurnSpec] = field(default_factory=list)
    title: str = ""  # a session title that holds a token


def _word(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    # at least one digit and one letter, like every real credential
    return (
        rng.choice(string.ascii_letters)
        + rng.choice(string.digits)
        + "".join(rng.choices(alphabet, k=n - 2))
    )


def make_secrets(seed: int = 0) -> SecretSet:
    rng = random.Random(seed)
    v = {
        "postgres_url_password": _word(rng, 14),
        "https_url_password": _word(rng, 16),
        "aws_secret": _word(rng, 40, ALNUM + "/+"),
        "env_value": _word(rng, 24),
        "pem_body": base64.b64encode(b"\x30\x82\x04\xa4" + rng.randbytes(180)).decode(),
        "stripe_live": "sk_live_" + _word(rng, 24),
        "npm_token": "npm_" + _word(rng, 36),
        "cli_password": _word(rng, 12),
        "mysql_password": _word(rng, 11),
        "github_title": "ghp_" + _word(rng, 36),
    }
    pem = "\n".join(v["pem_body"][i : i + 64] for i in range(0, len(v["pem_body"]), 64))
    turns = [
        TurnSpec(
            f"The app cannot reach postgres://app:{v['postgres_url_password']}@db.internal:5432/app, why?",
            "The pool was exhausted; raising max_connections fixed it.",
            [
                CallSpec(
                    "Shell",
                    {
                        "command": "psql postgres://app:"
                        + v["postgres_url_password"]
                        + "@db.internal:5432/app -c 'select 1'"
                    },
                    " ?column? \n----------\n 1\n",
                )
            ],
            think=f"Connection string has password {v['postgres_url_password']}; do not print it.",
        ),
        TurnSpec(
            "Push the release branch to the mirror.",
            f"Pushed to https://deploy:{v['https_url_password']}@git.example.com/vault.git.",
            [
                CallSpec(
                    "Shell",
                    {"command": "git push mirror release"},
                    f"To https://deploy:{v['https_url_password']}@git.example.com/vault.git\n   main -> release\n",
                )
            ],
        ),
        TurnSpec(
            f"Set AWS_SECRET_ACCESS_KEY={v['aws_secret']} in the deploy config.",
            f"Done: the deploy config now uses {v['aws_secret']} as the secret key.",
            [
                CallSpec(
                    "WriteFile",
                    {"path": "deploy/aws.conf", "content": f"secret = {v['aws_secret']}\n"},
                    "written",
                )
            ],
            think=f"The value {v['aws_secret']} goes into deploy/aws.conf.",
        ),
        TurnSpec(
            "What is in the .env file?",
            f"It sets the signing key; {v['env_value']} is the value the staging server uses.",
            [
                CallSpec(
                    "Shell",
                    {"command": "cat .env"},
                    f"DEBUG=false\nSIGNING_KEY={v['env_value']}\nPORT=8080\n",
                )
            ],
            think=f"{v['env_value']} should rotate.",
        ),
        TurnSpec(
            "Why does the TLS handshake fail?",
            "The key file has no header, only the base64 body, so it is not parsed as PEM.",
            [CallSpec("ReadFile", {"path": "certs/server.key"}, pem + "\n")],
        ),
        TurnSpec(
            f"Configure billing with {v['stripe_live']} and publish with {v['npm_token']}.",
            "Billing is configured and the package is published.",
            [
                CallSpec(
                    "Shell",
                    {"command": "npm publish"},
                    f"//npm.registry.example/:_authToken={v['npm_token']}\n+ vault@1.2.0\n",
                )
            ],
        ),
        TurnSpec(
            "Dump the reporting database.",
            "Dumped to backup.sql.",
            [
                CallSpec(
                    "Shell",
                    {"command": f"pg_dump --password {v['cli_password']} reporting > backup.sql"},
                    "",
                ),
                CallSpec(
                    "Shell",
                    {"command": f"mysql -uroot -p{v['mysql_password']} reporting < backup.sql"},
                    "",
                ),
            ],
            think=f"Use mysql -uroot -p{v['mysql_password']} for the import.",
        ),
    ]
    return SecretSet(v, turns, f"deploy with {v['github_title']}")


def write_secret_share(share: Path, seed: int = 0, start: float = 1767225600.0) -> SecretSet:
    """One Python-Kimi session holding every secret shape; its title (state.json) holds a token."""
    secrets = make_secrets(seed)
    wire = write_session(share, WORK_DIR, secrets.turns, start, seed=seed)
    (wire.parent / "state.json").write_text(
        json.dumps({"custom_title": secrets.title}), encoding="utf-8"
    )
    return secrets


def surviving(values: dict[str, str], text: str) -> list[str]:
    """The shapes whose secret value still appears in `text` (none, when redaction held)."""
    return sorted(
        shape
        for shape, value in values.items()
        if value in text or (shape == "pem_body" and any(chunk in text for chunk in _chunks(value)))
    )


def derived_texts(
    archive: Any,
    ws: Any,
    refs: list[dict[str, Any]],
    theme: str,
    queries: list[str],
    **search_args: Any,
) -> dict[str, str]:
    """Everything the archive derives from a workspace's turns, as text per output, for counting
    the secrets that survive: refined rows, search hits, turn context, the trace of `theme`,
    bootstrap, a memory export, the ingest state and the memory files."""
    from archive_mcp.render import to_jsonable

    def text(obj: Any) -> str:
        return json.dumps(to_jsonable(obj), default=str, ensure_ascii=False)

    return {
        "refined": text(archive.turns(ws.id).collect().to_dicts()),
        "search": text(
            [h for q in queries for h in archive.search(q, workspace=ws.id, **search_args)]
        ),
        "load_turn_context": text(
            archive.load_turn_context(
                refs, workspace=ws.id, include_thinking=True, max_chars=200_000
            )
        ),
        "trace_theme": text(archive.trace_theme(theme, ws.id, include_turn_content=True)),
        "bootstrap_workspace": text(archive.bootstrap_workspace(ws.id)),
        "export": archive.export_memory(include_turns=True, workspace=ws.id).read_text(
            encoding="utf-8"
        ),
        "state": (ws.state_dir / "ingest.json").read_text(encoding="utf-8"),
        "memory": "".join(
            p.read_text(encoding="utf-8") for p in sorted((ws.root / "memory").rglob("*.md"))
        ),
    }


def _chunks(body: str) -> list[str]:
    return [body[i : i + 32] for i in range(0, len(body) - 32, 32)]
