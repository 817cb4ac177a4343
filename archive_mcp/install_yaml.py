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


def yaml_remove(
    text: str, key: str, name: str, load: Callable[[str], dict[str, Any]]
) -> str | None:
    """`text` without the member `name` of the top-level block mapping `key`: its lines (the
    `name:` line and those indented under it) cut out, every other byte kept (`key: {}` when it
    was the last member). A mapping written another way (`extensions: {…}`) is dumped again only
    when the dump of the file is the file itself (nothing of the user's writing lost). None when
    neither is safe: the caller refuses."""
    data = load(text)
    servers = data.get(key)
    if not isinstance(servers, dict) or name not in servers:
        return None
    want = {**data, key: {k: v for k, v in servers.items() if k != name}}
    found = re.search(_KEY.format(re.escape(key)), text, re.M)
    if found is None:
        dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        return yaml.safe_dump(want, sort_keys=False, allow_unicode=True) if dumped == text else None
    quoted = "|".join(re.escape(q) for q in (name, f'"{name}"', f"'{name}'"))
    pos = min(found.end() + 1, len(text))
    lines = text[pos:].splitlines(keepends=True)
    child: int | None = None  # the indent of the mapping's members
    for n, line in enumerate(lines):
        body = line.lstrip(" \t")
        if not body.strip() or body.startswith("#"):
            pos += len(line)
            continue
        indent = len(line) - len(body)
        if indent == 0:
            return None  # the next top-level key: the mapping ended without the member
        child = indent if child is None else child
        if indent != child or not re.match(rf"(?:{quoted})[ \t]*:", body):
            pos += len(line)
            continue
        block = [line]
        for nxt in lines[n + 1 :]:  # the lines under it: blank, or deeper than its key
            rest = nxt.lstrip(" \t")
            if rest.strip() and len(nxt) - len(rest) <= indent:
                break
            block.append(nxt)
        while len(block) > 1 and not block[-1].strip():
            block.pop()  # blank lines before the next member stay
        after = text[:pos] + text[pos + sum(len(b) for b in block) :]
        if not want[key]:  # its last member: the mapping stays one (`key: {}`), not null
            colon = found.start() + len(key) + 1
            after = after[:colon] + " {}" + after[colon:]
        try:
            return after if load(after) == want else None
        except ValueError:
            return None
    return None
