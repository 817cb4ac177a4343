"""The tool schemas as `tools/list` shows them: only what an agent needs to call a tool and read
its reply. The server still validates arguments against the full models (and `explain` reads
their descriptions); an agent pays for every character listed, before its first call."""

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


def lean_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """An output schema that names the reply's fields, no deeper: the names and the text say the
    rest, and any value validates (a client checking the reply against it never fails on a type)."""
    if not schema:
        return schema
    props = schema.get("properties")
    if not isinstance(props, dict):
        return {"type": "object"}
    return {"type": "object", "properties": {k: {} for k in props}}
