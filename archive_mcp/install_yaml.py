"""Goose's `config.yaml` edited as text for `install`: one block inserted under a top-level
mapping, every other line of the file kept as the user wrote it (comments, order, quoting)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

_KEY = r"^{}:[ \t]*(#.*)?$"


def yaml_insert(
    text: str, key: str, block: dict[str, Any], load: Callable[[str], dict[str, Any]]
) -> tuple[str, str, int]:
    """`block` (one `name: entry`) as the first member of the block mapping `key` (appended with
    `key` when the file has none): the new text, the snippet inserted and where. The indent is
    the mapping's own, else two spaces. A `key` written another way (`extensions: {}`) gets the
    whole file, read by `load`, dumped again (no snippet: uninstall edits it structurally too)."""
    found = re.search(_KEY.format(re.escape(key)), text, re.M)
    if not found and re.search(rf"^{re.escape(key)}[ \t]*:", text, re.M):
        data = load(text)
        servers = data.get(key)
        data[key] = {**block, **(servers if isinstance(servers, dict) else {})}
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "", 0
    after_key = found.end() + 1 if found else len(text)
    nxt = re.search(r"^([ \t]+)\S", text[after_key:], re.M) if found else None
    ind = nxt.group(1) if nxt and not text[after_key : after_key + nxt.start()].strip() else "  "
    body = yaml.safe_dump(block, sort_keys=False, default_flow_style=False)
    lines = "".join(ind + line for line in body.splitlines(keepends=True))
    if found:
        at = min(after_key, len(text))
        snippet = ("" if text[:at].endswith("\n") else "\n") + lines
        return text[:at] + snippet + text[at:], snippet, at
    sep = "" if not text or text.endswith("\n") else "\n"
    snippet = f"{sep}{key}:\n{lines}"
    return text + snippet, snippet, len(text)
