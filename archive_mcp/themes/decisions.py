"""Decisions in a theme: the turns where a course is set or changed, and what each change undoes.

A turn sets a course when the refiner marked it `decision`, or when its words do ("let's go
with", "we'll use", accepting an option the assistant offered). It changes a course when the
refiner marked it `reversal`, or when the user corrects or redirects ("wait", "go back to",
"instead", "don't", "it was working before") or the assistant switches on its own ("switching
to", "falling back to"). A change is paired with the earlier decision it undoes by what the two
turns are about: TF-IDF cosine over the theme's own turns, so words the whole theme shares count
for little and one shared word is not enough.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from archive_mcp.refiners.text import STOPWORDS
from archive_mcp.render import clip

_CHANGE_USER = re.compile(
    r"\b(?:wait|actually|instead|rather than|no longer|go(?:ing)? back|revert\w*|roll(?:ed)? ?back|undo|"
    r"back to|switch(?:ed)? (?:back )?to|change (?:it|this|that) to|don'?t|do not|stop|never ?mind|scrap|"
    r"get rid of|remove (?:the|that|this)|(?:was|were) working|used to work|broke|broken|not working|"
    r"doesn'?t work|isn'?t working|still (?:not|no|doesn'?t|isn'?t|broken|failing|showing|seeing)|"
    r"why (?:did|are|is) (?:you|it|this)|that'?s (?:not|wrong)|no,|nope|not what|skip(?:ping)?|"
    r"should(?:n'?t| not)|let'?s (?:not|get|go back|switch|keep|stick|move|try|revert)|(?:a little|a bit|much) more \w+ before|"
    r"(?:crashed|broke|failing|stuck|happening) again|but we (?:really |still )?need)\b|回滚|改回|(?<!要)不要|换成|还是用",
    re.IGNORECASE)
_DECIDE_USER = re.compile(
    r"\b(?:let'?s (?:go with|use|do|build|add|make|implement|plan|create|start)|go with|we(?:'ll| will) use|"
    r"i want|i'?d like|we need|we should|make it|use (?:the|a)|option \w\b|approach \w\b|plan (?:it|this)|"
    r"approved?|lgtm|sounds good|do it|go ahead|proceed|yes,? (?:do|go|please|let'?s))|决定|采用|就用",
    re.IGNORECASE)
_APPROVAL = re.compile(r"^\s*(?:y|yes|yep|yeah|ok|okay|sure|approved?|lgtm|do it|go ahead|proceed|"
                       r"option \w|\(?[a-d1-9]\)?|sounds good|perfect|great)\W{0,3}$", re.IGNORECASE)
_DIRECTIVE = re.compile(
    r"(?:^|[.!?\n]\s*|\b(?:i|we|you|it|this|that|they)\s+)(?:i (?:need|want|think we should)|we (?:need|should|just need)|"
    r"(?:it|this|that|they) (?:should|needs? to|has to|must)|(?:can|could) you|please|just|let'?s|make|do|use|add|"
    r"remove|keep|set|change|put|move|drop|split|switch|ignore|try|rename|convert|turn|show|hide|sort|filter|"
    r"fix|update|build|create|plan|submit|deploy|enable|disable|always|never)\b|^\s*[\w-]+(?: [\w-]+)? should (?:be|have|show|not)\b",
    re.IGNORECASE)
_PLAN_COMMAND = re.compile(r"^\s*/[\w:.-]*(?:plan|discuss|phase)[\w:.-]*", re.IGNORECASE)
_CHANGE_ASSISTANT = re.compile(
    r"\b(?:switch(?:ing|ed)? (?:back )?to|fall(?:ing)? back to|fell back to|instead|rather than|as a fallback|"
    r"(?:a )?(?:simpler|different) approach|let'?s (?:just|skip)|fundamentally|complete rewrite|rework|"
    r"revert(?:ed|ing)?|roll(?:ed|ing)? back|replac(?:ed|ing) \S+ with|no longer|changed? (?:the )?approach|"
    r"different approach|went back to|going back to)\b", re.IGNORECASE)


WINDOW = 200  # a change is paired within the 200 turns before it
# What a change undoes is most often one of the two turns before it in the same conversation
# (45 of the 64 labelled pairs whose both turns are traced): they get this much on top of their
# similarity. Tuned on the labelled coding set (bench/RESULTS.md, Themes).
RECENT = 0.2


@dataclass
class Flag:
    kind: str  # decision | change | reversal
    by: str  # user | assistant
    cue: str


def flag_turn(user: str, assistant: str, kinds: list[str]) -> Flag | None:
    """Does this turn set or change a course? The user's words decide first."""
    u = user[:1500]
    have = set(kinds)
    m = _CHANGE_USER.search(u)
    if m and len(u) < 1500:
        rev = re.search(r"\b(?:revert\w*|roll(?:ed)? ?back|undo|go(?:ing)? back|back to|(?:was|were) working|"
                        r"used to work)\b|回滚|改回", u, re.IGNORECASE)
        return Flag("reversal" if rev else "change", "user", (rev or m).group(0))
    if "reversal" in have:
        return Flag("reversal", "assistant", "reversal")
    if _APPROVAL.match(u):
        return Flag("decision", "user", "approval")
    m = _DECIDE_USER.search(u) or (_DIRECTIVE.search(u) if len(u) < 1500 else None)
    if m:
        return Flag("decision", "user", m.group(0).strip())
    if _PLAN_COMMAND.match(u):
        return Flag("decision", "assistant", "plan")
    m = _CHANGE_ASSISTANT.search(assistant[:3000])
    if m:
        return Flag("change", "assistant", m.group(0))
    if "decision" in have:
        return Flag("decision", "assistant", "decision")
    return None


_WORD = re.compile(r"[^\W\d][\w.-]*[^\W_]|[\u3400-\u9fff]+")


def _vector(text: str) -> Counter[str]:
    """Words (identifiers whole) and CJK bigrams: a regex pass, cheap enough for every turn."""
    out: Counter[str] = Counter()
    for w in _WORD.findall(text.lower()):
        if "\u3400" <= w[0] <= "\u9fff":
            out.update(w[i:i + 2] for i in range(max(1, len(w) - 1)))
        elif len(w) > 2 and w not in STOPWORDS:
            out[w] += 1
    return out


def pair_changes(rows: list[dict[str, Any]], flags: list[Flag | None], min_similarity: float = 0.08,
                 change_similarity: float = 0.2) -> list[tuple[int, int, float, list[str]]]:
    """(change index, undone turn index, similarity, shared terms) for each change in `rows` (every
    event of the theme in time order, aligned with `flags`; None = not flagged). The IDF comes from
    the theme's own turns. A change is paired with the earlier turn whose text is most alike: a
    turn flagged as setting a course counts double, and the two turns before the change in its
    session get `RECENT` on top. A course set by the user that is this alike (`change_similarity`) to an earlier one
    changes it."""
    n = len(rows)
    changes = [i for i, f in enumerate(flags) if f is not None and i > 0]
    if not changes:
        return []
    bags = [_vector(_text(r)) for r in rows]
    vocab: dict[str, int] = {}
    indptr, indices, data = [0], [], []
    for bag in bags:
        for t, k in bag.items():
            indices.append(vocab.setdefault(t, len(vocab)))
            data.append(1 + math.log(k))
        indptr.append(len(indices))
    cols = np.asarray(indices, dtype=np.int64)
    idf = np.log1p(n / (1 + np.bincount(cols, minlength=len(vocab)))).astype(np.float32)
    m = sp.csr_matrix((np.asarray(data, np.float32) * idf[cols], cols, indptr), shape=(n, len(vocab)))
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    m = sp.diags(1 / np.where(norms == 0, 1, norms)) @ m
    idx = np.asarray(changes)
    sims = (m[idx] @ m.T).toarray()
    course = np.array([f is not None for f in flags])
    _, codes = np.unique(np.array([r["session_id"] for r in rows], dtype=object).astype(str), return_inverse=True)
    dist = idx[:, None] - np.arange(n)[None, :]  # how many turns back each candidate is
    ok = (dist > 0) & (dist <= WINDOW)
    user_course = np.array([flags[i].kind == "decision" for i in changes])  # type: ignore[union-attr]
    ok &= ~user_course[:, None] | course[None, :]  # a new course set by the user changes an earlier course
    same = codes[idx][:, None] == codes[None, :]
    alike = np.where(ok, sims * np.where(course, 2.0, 1.0)[None, :], 0.0)
    score = np.where(ok, alike + RECENT * (same & (dist <= 2)), 0.0)
    best_j = score.argmax(axis=1)
    rows_at = np.arange(len(changes))
    best = score[rows_at, best_j]
    # a flagged change is paired with its best candidate; a new course by the user changes an
    # earlier one only when the two are alike (being next to it is not enough)
    enough = np.where(user_course, alike[rows_at, best_j] >= change_similarity, best >= min_similarity)
    out = []
    for row in np.nonzero(enough)[0]:
        i, j = changes[row], int(best_j[row])
        shared = sorted(set(bags[i]) & set(bags[j]), key=lambda t: -idf[vocab[t]])[:6]
        out.append((i, j, round(float(best[row]), 3), shared))
    return out


def _text(row: dict[str, Any]) -> str:
    return f"{(row.get('user_text') or '')[:400]}\n{row.get('summary') or ''} {' '.join(row.get('keywords') or [])}"


def gist(row: dict[str, Any], by: str, width: int = 160) -> str:
    """What a turn decided, in one line: the user's words when they drove it, else the outcome."""
    text = (row.get("user_text") or "") if by == "user" else ""
    if text.rstrip().endswith(("?", "？", "吗")):
        text = ""  # a question sets nothing: what was decided is in the answer
    if not text.strip() or len(text.strip()) < 12:
        summary = row.get("summary") or ""
        m = re.search(r"Outcome:\s*(.*)", summary, re.S)
        text = (m.group(1) if m else summary) if by != "user" or not text.strip() else f"{text.strip()}: {summary}"
    return clip(" ".join(text.split()), width)
