"""Snippets: the passage of a hit that best matches the query, whole query words marked **so**.

A word is marked when it, or one of its identifier parts, analyses (stem, no stopwords) to a
query term: `catching` matches `catch`, `formatISODate` matches `date`; `in` inside `catching` is
never marked. CJK runs are marked by the query's CJK bigrams and characters found inside them.
"""

from __future__ import annotations

import re

from archive_mcp.refiners.answers import MARKS
from archive_mcp.refiners.text import CJK, clip
from archive_mcp.search.lexical import ENGLISH_STOPWORDS, QueryTerms, analyse
from archive_mcp.search.texts import SNIPPET_CAP, TurnText

SNIPPET = 220
_SPLIT = re.compile(r"(?<=[.!?。！？])\s*|\n+")
_WORD = re.compile(rf"[{CJK}]+|[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_CJK_WORD = re.compile(f"[{CJK}]+")
# word -> (its analysed terms, those of them not from a stopword): the words a query's hits
# show repeat across passages, hits and queries, and `analyse` of each again was half the
# hits' cost (`_WORD` finds the words `analyse` tokenises, so a text's terms are its words')
_TERMS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def highlight_terms(query: str | QueryTerms, fuzzy_terms: list[tuple[str, float]]) -> set[str]:
    """The analysed query terms (no stopwords) plus the vocabulary terms fuzzy matching added."""
    analysed = QueryTerms.of(query) if isinstance(query, str) else query
    return set(analysed.content) | {t for t, _ in fuzzy_terms if t not in ENGLISH_STOPWORDS}


def _word_terms(word: str) -> tuple[frozenset[str], frozenset[str]]:
    """`analyse(word)` and `analyse(word, drop_stopwords=True)` as sets, cached."""
    out = _TERMS.get(word)
    if out is None:
        out = (frozenset(analyse(word)), frozenset(analyse(word, drop_stopwords=True)))
        if len(_TERMS) < 200_000:
            _TERMS[word] = out
    return out


def _matches(word: str, terms: set[str]) -> bool:
    return not terms.isdisjoint(_word_terms(word)[1])


def _terms_held(text: str, terms: set[str]) -> int:
    """How many of `terms` occur among the analysed terms of `text`:
    `len(set(analyse(text)) & terms)` from the words' cached terms."""
    found: set[str] = set()
    for word in _WORD.findall(text):
        every = _word_terms(word)[0]
        if not terms.isdisjoint(every):
            found |= every & terms
    return len(found)


def _cjk_spans(run: str, terms: list[str]) -> list[tuple[int, int]]:
    """Runs of characters covered by the query's CJK terms (overlapping bigrams join up)."""
    covered = [False] * len(run)
    for t in terms:
        start = run.find(t)
        while start >= 0:
            covered[start : start + len(t)] = [True] * len(t)
            start = run.find(t, start + 1)
    spans, i = [], 0
    while i < len(run):
        if covered[i]:
            j = i
            while j < len(run) and covered[j]:
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _spans(text: str, terms: set[str]) -> list[tuple[int, int]]:
    cjk = [t for t in terms if t and _CJK_WORD.fullmatch(t)]
    if any(len(t) > 1 for t in cjk):  # single characters only when the query has nothing longer
        cjk = [t for t in cjk if len(t) > 1]
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        if _CJK_WORD.fullmatch(word):
            out += [(m.start() + a, m.start() + b) for a, b in _cjk_spans(word, cjk)]
        elif _matches(word, terms):
            out.append((m.start(), m.end()))
    return out


_EMPHASIS = re.compile(r"\*\*+")  # markdown bold in the turn itself


def mark(text: str, terms: set[str]) -> str:
    """`text` with every matching whole word wrapped in ** **, marks never nested: the text's own
    bold markers are dropped first, and neighbouring marked words share one mark."""
    text = _EMPHASIS.sub("", text)
    merged: list[list[int]] = []
    for a, b in _spans(text, terms):
        if merged and a < merged[-1][1]:
            continue  # overlapping: already inside a mark
        if merged and text[merged[-1][1] : a] == " ":
            merged[-1][1] = b  # `**git worktrees**`, not `**git** **worktrees**`
        else:
            merged.append([a, b])
    if not merged:
        return text
    out, pos = [], 0
    for a, b in merged:
        out += [text[pos:a], "**", text[a:b], "**"]
        pos = b
    out.append(text[pos:])
    return "".join(out)


def unmark(text: str) -> str:
    """Marked text as a face without highlighting shows it: the words, no marks (`mark` dropped
    the text's own bold, so every `**` left is a mark)."""
    return text.replace("**", "")


def clip_marked(text: str, limit: int) -> str:
    """Marked `text` cut as `clip` cuts its words (at most `limit` characters of them, marks not
    counted), the marks put back only within what is kept: a cut never leaves a mark open."""
    pieces = text.split("**")
    if len(pieces) % 2 == 0:  # an odd number of `**` is no marking: cut it as plain text
        return clip(text, limit)
    plain = "".join(pieces)
    kept = clip(plain, limit)
    head = len(kept) - 1 if len(kept) < len(plain) else len(kept)  # without the ending `…`
    out, pos = [], 0
    for i, piece in enumerate(pieces):
        end = min(pos + len(piece), head)
        if end > pos:
            part = plain[pos:end]
            out.append(f"**{part}**" if i % 2 else part)
        pos += len(piece)
        if pos >= head:
            break
    return "".join(out).rstrip() + kept[head:]


def snippet(text: TurnText, terms: set[str], width: int = SNIPPET) -> str:
    """The passage with the most query terms, cut to `width` around the first match, marked."""
    passages = []
    for field_text in (text.user_text, text.assistant_text):
        passages += [p.strip() for p in _SPLIT.split(field_text[:SNIPPET_CAP]) if p and p.strip()]
    passages += [
        f"{c['name']}: {c['args_summary']} → {c['result_summary']}" for c in text.tool_calls
    ]
    return best_passage(passages, terms, width)


def best_passage(passages: list[str], terms: set[str], width: int = SNIPPET) -> str:
    """The passage with the most query terms (the first on a tie), cut to `width` around its
    first match, marked; "" when there is none."""
    if not passages:
        return ""

    best = max(passages, key=lambda p: _terms_held(p[:2000], terms))
    if len(best) > width:
        spans = _spans(best, terms)
        first = spans[0][0] if spans else 0
        start = max(0, min(first - width // 3, len(best) - width))
        while 0 < start < len(best) and best[start - 1].isalnum() and best[start].isalnum():
            start += 1  # do not start inside a word
        best = (
            ("…" if start else "")
            + best[start : start + width]
            + ("…" if start + width < len(best) else "")
        )
    return mark(best, terms)


_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")  # "2.4" is no sentence end
SHORT = 40  # a line shorter than this (a heading, "Done.") is an answer only when nothing else is
ASKED = 300  # characters of the user's words a hit shows
ANSWER = 250  # characters of the assistant's best passage a hit shows
FILL = 120  # a best sentence shorter than this is followed by the next ones (within ANSWER)
DECISION = 200  # characters of one user decision (a marked answer line) a hit shows


def split_answers(user_text: str) -> tuple[str, list[str]]:
    """A turn's user text as (the user's own words, the decisions that arrived as tool results:
    the marked lines `refiners/answers.py` joined after them)."""
    own: list[str] = []
    decisions: list[str] = []
    for line in user_text.splitlines():
        (decisions if line.startswith(MARKS) else own).append(line)
    return "\n".join(own).strip(), decisions


def asked_words(user_text: str, terms: set[str], width: int = ASKED) -> str:
    """The user's own words on one line: whole within `width`; else the sentences holding a
    query term (the first sentences when none does), in order, cut at sentence ends, `…` between
    the gaps, marked."""
    flat = " ".join(user_text.split())
    if len(flat) <= width:
        return mark(flat, terms)
    sentences = [s.strip() for s in _SENTENCE.split(user_text[:SNIPPET_CAP]) if s and s.strip()]
    sentences = [" ".join(s.split()) for s in sentences]
    holding = [i for i, s in enumerate(sentences) if _spans(s, terms)] or list(
        range(len(sentences))
    )
    out: list[str] = []
    size, last = 0, -1
    for i in holding:
        s = sentences[i]
        if out and size + len(s) + 3 > width:
            break
        if not out and len(s) > width:
            s = best_passage([s], terms, width)  # one long sentence: around its first match
        out.append(("… " if i > last + 1 else "") + s)
        size, last = size + len(s) + 3, i
    return mark(" ".join(out) + (" …" if last < len(sentences) - 1 else ""), terms)


def answer_words(text: TurnText, terms: set[str], width: int = ANSWER) -> str:
    """The assistant's sentence that best answers the query (most query terms, the first on a
    tie; a line shorter than a sentence only when there is nothing else), and while it is shorter
    than FILL the sentences after it that fit `width`, marked; cut to `width` around the match
    when one is longer."""
    sentences = [" ".join(p.split()) for p in _SENTENCE.split(text.assistant_text) if p.strip()]
    if not sentences:
        return ""
    pool = [i for i, p in enumerate(sentences) if len(p) >= SHORT] or list(range(len(sentences)))
    best = max(pool, key=lambda i: _terms_held(sentences[i][:2000], terms))
    out = sentences[best]
    for nxt in sentences[best + 1 :]:  # a short best sentence ("Done.") takes the next ones
        if len(out) >= FILL or len(out) + len(nxt) + 1 > width:
            break
        out += " " + nxt
    return best_passage([out], terms, width)
