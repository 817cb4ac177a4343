"""Language-aware text pieces: code- and CJK-aware tokens, sentences, short cuts."""

from __future__ import annotations

import re

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{CJK}]+|[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_CJK_RUN = re.compile(rf"^[{CJK}]+$")
_SPLIT = re.compile(r"[._/\-]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_END = re.compile(r"[.!?]+(?=\s)|[。！？]+|\n{2,}")

STOPWORDS = frozenset(
    """
a an and are as at be been but by can could did do does for from had has have how i if in into
is it its just let me my no not now of on or our so than that the their then there these this to
up us was we were what when where which while who why will with would you your yes ok okay also
all any some should need use using used run first here out about get got make like want one two
""".split()
)


class Folded:
    """A case-insensitive pattern whose `search` says whether it occurs. On ASCII text it runs
    case-sensitively on the lowercased text: the same answer (ASCII folds as `str.lower` does),
    3-5x faster than IGNORECASE, which folds every character it compares; other text runs the
    IGNORECASE pattern itself (its folds, such as "ſ" for "s", are not `str.lower`'s). The
    pattern must be written in lowercase."""

    def __init__(self, pattern: str) -> None:
        self.rx = re.compile(pattern, re.I)
        self.lower = re.compile(pattern)

    def search(self, text: str) -> bool:
        found = self.lower.search(text.lower()) if text.isascii() else self.rx.search(text)
        return found is not None


def is_cjk(token: str) -> bool:
    return bool(_CJK_RUN.match(token))


def tokens(text: str) -> list[str]:
    """Search tokens: identifiers whole and split (snake, dotted, paths, camel), CJK as bigrams."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if is_cjk(tok):
            # characters and bigrams: bigrams carry most words, characters catch the rest
            out.extend(tok)
            if len(tok) > 1:
                out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
            continue
        low = tok.lower()
        out.append(low)
        pieces = [p for p in _SPLIT.split(tok) if p]
        parts: list[str] = []
        for piece in pieces:
            camel = _CAMEL.findall(piece)
            parts.extend(camel if len(camel) > 1 else [piece])
        if len(parts) > 1:
            out.extend(p.lower() for p in parts if p.lower() != low)
    return out


def words(text: str) -> list[str]:
    """Whole words and identifiers (no splitting), for keywords and fuzzy matching."""
    return _TOKEN.findall(text)  # no group in the pattern: each item is the whole match


# Words that end in a dot without ending a sentence (lowercase, without the final dot).
ABBREVIATIONS = frozenset(
    """
e.g i.e etc vs mr mrs ms dr prof inc ltd co jr sr st no nr fig approx cf al est dept vol ch sec
min max avg incl excl resp ca viz a.m p.m u.s u.k т.е т.д т.п г гг см им др пр стр ул проф
z.b bzw usw ggf vgl d.h
""".split()
)


def _ends_sentence(text: str, dot: int, nxt: int) -> bool:
    """Whether the "." at `dot` ends a sentence: not after an initial or an abbreviation (`e.g.`,
    `u.s.`; a file name such as `config.py.` before a capital does end one)."""
    j = dot
    while j > 0 and (text[j - 1].isalpha() or text[j - 1] == "."):
        j -= 1
    word = text[j:dot]
    if len(word) == 1 and word.isalpha():
        return False  # an initial in any script: "J. Smith", "Г. Нехризов"
    if word.lower() in ABBREVIATIONS or ("." in word and all(len(p) <= 2 for p in word.split("."))):
        return False
    follow = text[nxt : nxt + 1]
    return not (follow.isalpha() and follow.islower())  # "… file.py. then" reads on


def sentences(text: str, limit: int | None = None) -> list[str]:
    """Split English, CJK and other text into sentences (CJK ends with 。！？ and no space).

    A dot after an initial ("J.", "Г.") or a known abbreviation ("e.g.", "etc.") does not end a
    sentence, nor does one followed by a lowercase word. With `limit`, stop after that many.
    """
    out: list[str] = []
    start = 0
    for m in _END.finditer(text):
        end = m.end()
        if text[m.start()] == "." and m.end() - m.start() == 1:
            nxt = end
            while nxt < len(text) and text[nxt] in " \t":
                nxt += 1
            if not _ends_sentence(text, m.start(), nxt):
                continue
        piece = text[start:end].strip()
        start = end
        if piece:
            out.append(piece)
            if limit is not None and len(out) >= limit:
                return out
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def shorten(text: str, limit: int) -> str:
    """Cut `text` to `limit` chars at a word boundary where there is one, marking the cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


_SELF_LEAD = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)|i'm|we're|i am|we are)\s+(?:now\s+|also\s+|just\s+)?"
    r"(?=\w+ed\b|\w+en\b|made\b|built\b|done\b|found\b|set\b|put\b|got\b|run\b)",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:successfully|basically|essentially|actually|simply|really|just|comprehensive|"
    r"detailed)\s+",
    re.I,
)
# A path with three or more separators (`/usr/bin/python`, `a/b/c/d`), its last two parts in group 1. It starts where a word can (not
# after a letter, digit, ".", "-", ":", "/" or "\\": after "-" a start would scan the same run again
# from each position, quadratic on a long run of hyphens).
_LONG_PATH = re.compile(
    r"(?<![\w.:/\\-])(?:~|[A-Za-z]:|[\w.-]+)?(?:[\\/][^\s\\/`'\"()]+){1,}([\\/][^\s\\/`'\"()]+[\\/][^\s\\/`'\"()]+)"
)


def dense(text: str) -> str:
    """The same statement in fewer characters: no "I've", hedges or long path heads."""
    first = text[:1]
    text = _HEDGE.sub("", text)
    short = _SELF_LEAD.sub("", text, count=1)
    if first.isupper() and short[:1].islower():
        short = (
            short[0].upper() + short[1:]
        )  # "I've fixed it" -> "Fixed it", "Successfully removed" -> "Removed"
    if short.count("/") + short.count("\\") >= 3:  # a path long enough to cut; a URL is kept whole
        return " ".join(w if "://" in w else _LONG_PATH.sub(_tail, w) for w in short.split())
    return " ".join(short.split())


def _tail(m: re.Match[str]) -> str:
    return m.group(1).lstrip("\\/")


ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut at a word boundary and ended by one `…`.

    The marker is a single character, so it is never longer than what it hides."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[: max(0, limit)]
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= (limit - 1) * 0.6:  # a word boundary not too far back; else a hard cut
        head = head[:space]
    return head.rstrip() + ELLIPSIS


# a line ends at a newline or at a JSON `\n` escape; an escaped backslash (`\\`) is skipped whole
# so that the `\n` of `C:\\new` stays text
_LINE_END = re.compile(r"\\\\|\\n|\n")


def json_lines(text: str) -> list[str]:
    """The lines of `text`, which end at a newline or at a JSON `\\n` escape."""
    out, start = [], 0
    for m in _LINE_END.finditer(text):
        if m.group() != "\\\\":
            out.append(text[start : m.start()])
            start = m.end()
    return [*out, text[start:]]
