"""The tool schemas as `tools/list` shows them: only what an agent needs to call a tool. The
server still validates arguments against the full models (and `explain` reads their
descriptions); an agent pays for every character listed, before its first call.

No output schema is listed: a reply's structured content names its own fields (and its text says
them to the agent), and the names alone, all a listed schema held, validated nothing (any value
passed) while they took 3,239 of the list's 19,995 characters."""

from __future__ import annotations

from typing import Any

DROP = {"title"}
BUDGET_MAX = 200_000  # the budgets' bound: no agent asks for more
BOUNDS = {"maxLength", "maxItems", "minItems"}  # checked by the server, which explains a breach
# ... except a list bound an agent meets in ordinary use (tag_theme's 3 seeds): it stays listed
SMALL_ITEMS = 5


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema without generated titles, `null` alternatives, null defaults or length
    bounds (numbers keep their ranges; a list keeps a maximum of SMALL_ITEMS or fewer)."""
    return _lean(schema)


def _lean(node: Any) -> Any:
    if isinstance(node, list):
        return [_lean(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in DROP and not isinstance(v, dict):
            continue
        small = k == "maxItems" and isinstance(v, int) and v <= SMALL_ITEMS
        if k in BOUNDS and isinstance(v, int) and not small or k == "maximum" and v == BUDGET_MAX:
            continue
        if k == "default" and v is None:
            continue
        out[k] = v if k in ("default", "enum", "const") else _lean(v)
    options = out.get("anyOf")
    if isinstance(options, list):
        real = [o for o in options if o != {"type": "null"}]
        if len(real) == 1 and len(real) < len(options):  # `X | None`: the omitted argument is None
            out.pop("anyOf")
            out = {**real[0], **out}
    return out
