"""Claude Code's task notification: the message it sends in the user's place when a background
task ends, `<task-notification>` (with `<task-id>`, `<output-file>`, `<status>`, `<summary>`,
`<result>` inside) and then a line of its own ("Read the output file to retrieve the result: …",
"Full transcript available at: …"). The user may type words after it.

Only notifications that open a message are Claude Code's: each one closed, its `<result>` read
whole (it may quote anything, even the closing tag). A tag elsewhere, or one never closed, is the
user's words. Every reader of a user message asks here: the request text (`summary.user_request`),
the kinds (`kinds.notified_only`), the themes' noise rule and the overview.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "<task-notification>"
# how `user_request` says them: `(task notification: <summary>; <summary>) <the user's words>`
LABEL = "(task notification"
# The notification, its `<result>` whole; an unclosed `<result>` is not one (else a notification
# never closed would match up to a closing tag its result quotes). Each step either takes a whole
# `<result>` (atomic) or a character that opens neither a `<result>` nor the closing tag, and
# never gives one back (`*+`): linear on any text, a long unclosed one included
_ONE = re.compile(
    r"\s*<task-notification>"
    r"(?P<body>(?:(?><result>.*?</result>)|(?!<result>|</task-notification>).)*+)"
    r"</task-notification>"
    r"(?:\s*(?:Read the output file to retrieve the result|Full transcript available at):[^\n]*)?",
    re.S,
)
_OPENS = re.compile(r"\s*<task-notification>")


@dataclass(frozen=True)
class Notified:
    """A user message read for notifications: the summary of each one it opens with ("" for one
    without), in order, and what follows them: the user's own words."""

    summaries: tuple[str, ...]
    said: str

    @property
    def count(self) -> int:
        return len(self.summaries)


def split(text: str) -> Notified:
    """The task notifications `text` (a user message) opens with, and the user's words after."""
    if not _OPENS.match(text):
        return Notified((), text.strip())
    summaries: list[str] = []
    at = 0
    while found := _ONE.match(text, at):
        summaries.append(" ".join(_summary(found.group("body")).split()))
        at = found.end()
    return Notified(tuple(summaries), text[at:].strip())


def _summary(body: str) -> str:
    """The first `<summary>` of a notification's body outside its `<result>`s ("" without one),
    found with `str.find`: a pattern such as `<summary>(.*?)</summary>` scans to the end from
    each unclosed tag (10 s on 100k characters of `<summary>`)."""
    kept = _outside_results(body)
    start = kept.find("<summary>")
    end = -1 if start < 0 else kept.find("</summary>", start + len("<summary>"))
    return kept[start + len("<summary>") : end] if end >= 0 else ""


def _outside_results(body: str) -> str:
    """`body` without its `<result>`s, each up to its first `</result>`, left to right."""
    parts, at = [], 0
    while (start := body.find("<result>", at)) >= 0:
        end = body.find("</result>", start + len("<result>"))
        if end < 0:
            break  # no close after it: none after a later one either
        parts.append(body[at:start])
        at = end + len("</result>")
    parts.append(body[at:])
    return "".join(parts)


def note(summaries: tuple[str, ...]) -> str:
    """The notifications as a request says them: `(task notification: A; B)`."""
    said = "; ".join(s for s in summaries if s)
    return f"{LABEL}: {said})" if said else f"{LABEL})"
