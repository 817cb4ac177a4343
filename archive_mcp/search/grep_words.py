"""Which turns of a raw log may hold a match of a grep pattern, told without parsing them: the
words every match must hold, looked for in the turn's bytes.

A regular expression's required words are read from its syntax tree (`re._parser`): the runs of
literal characters it must match, as alternatives where it branches (`a|b`), none under `?`,
`*` or a lookaround. Only ASCII letters and digits of three or more make a word: JSON never
escapes them, a Codex tool input in its JSON-in-JSON neither, and a letter outside ASCII or an
escaped character (`\\u2014`, `\\n`, `\\"`) only ends one; a word found as a substring, never at
a boundary, is found whatever escape stands beside it. Words the readers write themselves (the
marks of a user's answer, `[rejected Edit]`, `[steer]`) are never required. Case is folded as
ASCII; a log holding the two letters that fold into ASCII (the Kelvin sign, the long s) keeps
every turn.
"""

from __future__ import annotations

import re
import re._constants as sre  # type: ignore[import-not-found]
import re._parser as sre_parse
import warnings
from collections.abc import Callable
from itertools import product
from pathlib import Path
from typing import Any

MIN_WORD = 3  # a shorter run of letters is too common to tell turns apart
MAX_ALTERNATIVES = 32  # a pattern with more ways to match keeps every turn
# the words of the marks readers add (refiners/answers.py, the steer mark, a default tool name)
MARKS = frozenset(
    {"answer", "feedback", "rejected", "approved", "plan", "edited", "user", "picked", "steer"}
    | {"tool", "call", "image"}
)
# the Kelvin sign and the long s, which case folding matches with `k` and `s`: as UTF-8 and as
# JSON escapes (lower case: the log is looked at lowered)
_FOLDS = ("\u212a".encode(), "\u017f".encode(), b"\\u212a", b"\\u017f")

Words = list[frozenset[str]]  # the alternatives: a match holds every word of one of them
# what `regex` reads and `re` does not, or reads otherwise: fuzzy counts (`{e<=1}`), a branch
# reset `(?|`, Unicode properties and word starts (`\p`, `\m`, …), inline versions and full
# case folding (`(?V1)`, `(?f)`: `ss` matches `ß`)
_ONLY_REGEX = re.compile(r"\{[a-zA-Z]|\(\?\||\\[pPXmMKGLR]|\(\?[a-zA-Z-]*[Vfbepr]")


def required_words(pattern: str) -> Words | None:
    """The words every match of `pattern` holds, as alternatives (lower case); None when some
    match needs none (then every turn may hold one) or the pattern is beyond this reading."""
    if _ONLY_REGEX.search(pattern):
        return None
    try:
        with warnings.catch_warnings():  # `re` warns of `[[`, which `regex` reads as a POSIX class
            warnings.simplefilter("ignore", FutureWarning)
            tree = sre_parse.parse(pattern)
    except (sre_parse.error, OverflowError, RecursionError, ValueError):
        return None  # a syntax only `regex` knows: every turn is parsed
    try:
        alternatives = _sequence(list(tree))
    except _TooMany:
        return None
    if any(not words for words in alternatives):
        return None
    return alternatives


class _TooMany(Exception):
    pass


def _words(run: str) -> frozenset[str]:
    """The ASCII words of MIN_WORD letters or digits in a literal run, marks left out."""
    out, word = set(), []
    for ch in (*run.lower(), " "):
        if ch.isascii() and ch.isalnum():
            word.append(ch)
            continue
        if len(word) >= MIN_WORD:
            out.add("".join(word))
        word = []
    return frozenset(out - MARKS)


def _sequence(items: list[tuple[Any, Any]]) -> Words:
    """The alternatives of a sequence: each item's, every combination of them (`product`)."""
    alternatives: Words = [frozenset()]
    run: list[str] = []

    def join(more: Words) -> None:
        nonlocal alternatives
        alternatives = [a | b for a, b in product(alternatives, more)]
        if len(alternatives) > MAX_ALTERNATIVES:
            raise _TooMany

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        join([_words("".join(run))])
        run = []
        if op is sre.SUBPATTERN:  # (group, add flags, del flags, pattern)
            join(_sequence(list(av[3])))
        elif op is sre.ATOMIC_GROUP:
            join(_sequence(list(av)))
        elif op is sre.BRANCH:  # (None, [pattern, ...])
            join([w for branch in av[1] for w in _sequence(list(branch))])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            join(_sequence(list(av[2])))  # at least once: its words are needed
        # anything else (a class, `.`, an anchor, a lookaround, `x?`, `x*`) needs no word
    join([_words("".join(run))])
    return alternatives


def log_holds(
    pattern: str, read: Callable[[str], bytes | None]
) -> Callable[[dict[str, Any]], bool] | None:
    """For a refined row, whether its turn's bytes in its archived log (`read(file)`: the log,
    None when gone) hold the words `pattern` requires; None when nothing can be told (no word
    is required: every turn must be parsed). A log is read and lowered once; a row whose range
    the log no longer holds, or a log gone, says True (the parse reports what is wrong)."""
    alternatives = required_words(pattern)
    if alternatives is None:
        return None
    needles = [[w.encode() for w in sorted(words)] for words in alternatives]
    logs: dict[str, bytes | None] = {}

    def lowered(name: str) -> bytes | None:
        data = read(name)
        if data is None:
            return None
        low = data.lower()
        return None if any(f in low for f in _FOLDS) else low

    def holds(row: dict[str, Any]) -> bool:
        ref = row["raw_ref"]
        if ref["file"] not in logs:
            logs[ref["file"]] = lowered(ref["file"])
        low = logs[ref["file"]]
        start, end = ref["byte_start"], ref["byte_end"]
        if low is None or len(low) < end:
            return True
        return any(all(low.find(w, start, end) >= 0 for w in words) for words in needles)

    return holds


def reader(root: Path) -> Callable[[str], bytes | None]:
    """A workspace's archived log by its name under `root`, or None when it cannot be read."""

    def read(name: str) -> bytes | None:
        try:
            return (root / name).read_bytes()
        except OSError:
            return None

    return read
