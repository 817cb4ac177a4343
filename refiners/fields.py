"""Small parsers for the fields of log records, which are not trusted to be well formed.

Every reader reads its records' fields through these, so a field of the wrong type is read the
same way in every format: an object that is not one is empty, a count that is not an integer is 0.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import orjson

# A lone surrogate: JavaScript CLIs write one (`\ud800`-`\udfff` in JSON) when they cut a string inside an
# emoji. Python's JSON reader keeps it, and no such string can be encoded (hashed, written, indexed).
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# A shell call's output that says how it ended (Gemini CLI and Qwen Code write "Exit Code: 1").
EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)


def field_dict(record: dict[str, Any], key: str) -> dict[str, Any]:
    """`record[key]` when it is an object, else an empty one: logs are not trusted to be well formed."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def field_list(record: dict[str, Any], key: str) -> list[Any]:
    """`record[key]` when it is a list, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int:
    """A token count: `value` when it is an integer, else 0."""
    return value if isinstance(value, int) else 0


def arguments_text(args: Any) -> str:
    """A tool call's arguments as the text the archive keeps: a string as written, else its JSON."""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def parse_time(value: Any) -> float | None:
    """An ISO-8601 timestamp ("…Z") or epoch milliseconds as epoch seconds."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0
    return None


def valid_unicode(value: Any) -> tuple[Any, int]:
    """A parsed JSON value with each lone surrogate in its strings (keys too) replaced by U+FFFD,
    and how many strings had one: the one rule every string read from a log passes, so that ids,
    paths and text can always be encoded. Raises RecursionError on a value nested too deeply."""
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value, 0
        return _SURROGATE.sub(REPLACEMENT, value), 1
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        bad = 0
        for key, item in value.items():
            key, k = valid_unicode(key)
            out[key], v = valid_unicode(item)
            bad += k + v
        return (out, bad) if bad else (value, 0)
    if isinstance(value, list):
        items = [valid_unicode(item) for item in value]
        bad = sum(n for _, n in items)
        return ([item for item, _ in items], bad) if bad else (value, 0)
    return value, 0


def loads_valid(text: str | bytes) -> Any:
    """`json.loads` whose strings pass `valid_unicode` (for the small JSON a discovery reads)."""
    return valid_unicode(json.loads(text))[0]


def json_object(raw: Any) -> dict[str, Any]:
    """A JSON object stored as text (`json_value`); an empty one when the value is not one."""
    value = json_value(raw)
    return value if isinstance(value, dict) else {}


def json_value(raw: Any, default: Any = None) -> Any:
    """A JSON value stored as text or bytes (a database column, a tool's output), its strings
    valid Unicode; `default` when it is not JSON, or JSON's null (or not text: a NULL or a number
    in a JSON column). orjson first (it takes only valid UTF-8 without lone surrogates), else the
    careful path."""
    if not isinstance(raw, bytes | str):
        return default
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
            value = loads_valid(text)
        except (ValueError, RecursionError):
            return default
    return default if value is None else value
