"""A pasted log or file in the user's words, in one line: what a read shows in its place unless
`detail=full` (the user's own sentences must not drown in a paste)."""

from __future__ import annotations

import re

from archive_mcp.refiners.text import clip

PASTE_LINES = 8  # a block of the user's words this long and ...
PASTE_CHARS = 600  # ... this big is a pasted log or file when it is fenced or mostly log-like
_FENCED = re.compile(r"```[^\n]*\n.*?(?:```|$)", re.S)
# A log or code line: a timestamp or number, brackets/prompt/path characters ("[ERROR]", "$ ls"),
# a stack frame ("at x.y(", 'File "…", line N'), "key=value", "file:12", an upper-case level.
_LOGLIKE = re.compile(
    r"\d+(?![\d.)])|[\[\]{}<>|$#@/\\]|at [\w$.<>]+ ?\(|at \S+:\d|File \"|Traceback"
    r"|[\w.-]+=\S|[\w.-]+:\d|[A-Z]{3,}\b"
)
# An indented line the user wrote: a list item ("- x", "* x", "1. x") or plain words; any
# other indented line (code, a traceback's source line) is log-like.
_PROSE = re.compile(r"(?:[-*+•]|\d{1,3}[.)])[ \t].*|[^\W\d_][\w \t,.;:'’!?&%*-]*")


def _loglike(line: str) -> bool:
    body = line.lstrip()
    if body != line:
        return not _PROSE.fullmatch(body)
    return bool(_LOGLIKE.match(line))


def pasted_digest(text: str) -> str:
    """The user's words with each pasted block (a fenced block, or a paragraph of log-like
    lines, at least `PASTE_LINES` lines and `PASTE_CHARS` characters) in one line: how long it
    was, its first and last lines, and that detail=full shows it whole."""

    def one(block: str) -> str:
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("```")]
        if len(lines) < PASTE_LINES or len(block) < PASTE_CHARS:
            return block
        first, last = (clip(" ".join(ln.split()), 100) for ln in (lines[0], lines[-1]))
        return (
            f"[pasted block, {len(lines)} lines, {len(block):,} chars: {first} … {last}; "
            "detail=full shows it whole]"
        )

    text = _FENCED.sub(lambda m: one(m.group(0)), text)
    parts = re.split(r"(\n\s*\n)", text)
    return "".join(
        one(p) if sum(_loglike(ln) for ln in p.splitlines()) * 2 > p.count("\n") + 1 else p
        for p in parts
    )
