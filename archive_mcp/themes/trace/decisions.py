"""Decisions in a theme: the turns where a course is set or changed, and what each change undoes.

A turn sets a course when the refiner marked it `decision`, or when its words do ("let's go
with", "we'll use", accepting an option the assistant offered). It changes a course when the
refiner marked it `reversal`, or when the user corrects or redirects ("wait", "go back to",
"instead", "don't", "it was working before") or the assistant switches on its own ("switching
to", "falling back to"). A change is paired with the earlier course it undoes by what the two
turns are about (TF-IDF cosine over the theme's own turns, so words the whole theme shares count
for little and one shared word is not enough) and by how recent that course is: most changes
revise the course set just before them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import scipy.sparse as sp

from archive_mcp.refiners.summary import announces, strip_reply_ack
from archive_mcp.refiners.text import clip, sentences
from archive_mcp.themes.trace.rules import TRACE_RULES, WEAK, TraceRules
from archive_mcp.themes.trace.terms import term_matrix

# Patterns run by Polars over all of a theme's turns at once (Rust regex syntax: no look-behind).
_CHANGE_USER = (
    r"(?i)\b(?:wait|actually|instead|rather than|no longer|go(?:ing)? back|revert\w*|roll(?:ed)? ?back|undo|"
    r"back to|switch(?:ed)? (?:back )?to|change (?:it|this|that) to|don'?t|do not|stop|never ?mind|scrap|"
    r"get rid of|remove (?:the|that|this)|(?:was|were) working|used to work|broke|broken|not working|"
    r"doesn'?t work|isn'?t working|still (?:not|no|doesn'?t|isn'?t|broken|failing|showing|seeing)|"
    r"why (?:did|are|is) (?:you|it|this)|that'?s (?:not|wrong)|no,|nope|not what|skip(?:ping)?|"
    r"should(?:n'?t| not)|let'?s (?:not|get|go back|switch|keep|stick|move|try|revert)|(?:a little|a bit|much) more \w+ before|"
    r"(?:crashed|broke|failing|stuck|happening) again|but we (?:really |still )?need)\b|回滚|改回|(?:^|[^要])不要|换成|还是用"
)
_DECIDE_USER = (
    r"(?i)\b(?:let'?s (?:go with|use|do|build|add|make|implement|plan|create|start)|go with|we(?:'ll| will) use|"
    r"i want|i'?d like|we need|we should|make it|use (?:the|a)|option \w\b|approach \w\b|plan (?:it|this)|"
    r"approved?|lgtm|sounds good|do it|go ahead|proceed|yes,? (?:do|go|please|let'?s))|决定|采用|就用"
)
_APPROVAL = (
    r"(?i)^\s*(?:y|yes|yep|yeah|ok|okay|sure|approved?|lgtm|do it|go ahead|proceed|"
    r"option \w|\(?[a-d1-9]\)?|sounds good|perfect|great)\W{0,3}$"
)
_DIRECTIVE = (
    r"(?i)(?:^|[.!?\n]\s*|\b(?:i|we|you|it|this|that|they)\s+)(?:i (?:need|want|think we should)|we (?:need|should|just need)|"
    r"(?:it|this|that|they) (?:should|needs? to|has to|must)|(?:can|could) you|please|just|let'?s|make|do|use|add|"
    r"remove|keep|set|change|put|move|drop|split|switch|ignore|try|rename|convert|turn|show|hide|sort|filter|"
    r"fix|update|build|create|plan|submit|deploy|enable|disable|always|never)\b|^\s*[\w-]+(?: [\w-]+)? should (?:be|have|show|not)\b"
)
_PLAN_COMMAND = r"(?i)^\s*/[\w:.-]*(?:plan|discuss|phase)[\w:.-]*"
_CHANGE_ASSISTANT = (
    r"(?i)\b(?:switch(?:ing|ed)? (?:back )?to|fall(?:ing)? back to|fell back to|instead|rather than|as a fallback|"
    r"(?:a )?(?:simpler|different) approach|let'?s (?:just|skip)|fundamentally|complete rewrite|rework|"
    r"revert(?:ed|ing)?|roll(?:ed|ing)? back|replac(?:ed|ing) \S+ with|no longer|changed? (?:the )?approach|"
    r"different approach|went back to|going back to)\b"
)

_REVERT = r"(?i)\b(?:revert\w*|roll(?:ed)? ?back|undo|go(?:ing)? back|back to|(?:was|were) working|used to work)\b|回滚|改回"
_ASKS = "what|why|how|where|when|which|who|is|are|does|did|do you|show me|tell me|explain"
# A turn that only asks or inspects is no course to undo (on the user's first 300 characters).
_INSPECT = (
    rf"(?i)^\s*(?:check|look|{_ASKS}|"
    r"can you (?:see|check|tell|explain|confirm)|could you (?:see|check))\b|[?？]\s*$"
)
# A user turn that opens as a question asks, it does not decide ("what command can i use to …");
# "how about …", "what if …" and "can you …?" propose or request, so they may still set a course.
_QUESTION = rf"(?i)^\s*(?:{_ASKS})\b"
_PROPOSAL = r"(?i)^\s*(?:how about|what if|what about)\b"
_WORK = r"Did:[^\n]*?\b(?:edited|committed|installed|pr created|created)\b"  # the refined summary: it changed something

# Bookkeeping the user asks for (commit, push, merge; GSD's progress / resume commands) moves no course.
_BOOKKEEPING = (
    r"(?i)^\s*(?:(?:ok|okay|great|good|cool)[,.!]?\s+)?(?:(?:can|could) (?:we|you)\s+|let'?s\s+|lets\s+|please\s+)?"
    r"(?:commit|push|merge)\b|^\s*/gsd:(?:progress|resume-work|help|status)\b"
)
# On a bug-fix turn the assistant's "instead" / "rather than" says how it fixed the bug, not that it changed course.
_FIX_WORDING = {"instead", "rather than"}

# An approval ("yes", "option 2", "b)") accepts what the assistant offered: no course of its own.
APPROVAL = re.compile(_APPROVAL)
# A user's follow-up ("yes, please proceed") decides what the answer then does: its gist is the answer's.
FOLLOW_UP = re.compile(
    r"(?i)^\s*(?:(?:ok(?:ay)?|yes|yep|yeah|sure|great|perfect|thanks?(?: you)?|cool|nice|good|"
    r"awesome|excellent|lgtm|approved?|go ahead|proceed|do it|continue|works?(?: great| now)?|"
    r"that works|looks good|sounds good|please)\b[\s,.!]*)+"
    r"(?:please\s+)?(?:proceed|continue|go ahead|do it|go|carry on)?\W{0,3}$"
)


class Pair(NamedTuple):
    change: int  # row index of the change
    undone: int  # row index of the course it undoes
    score: float
    shared: list[str]  # terms both turns hold, rarest first
    alternatives: list[int]  # the next-best courses it may undo instead, best first


@dataclass
class Flag:
    kind: str  # decision | change | reversal
    by: str  # user | assistant
    cue: str


# a course set without a cue, known once a change undoes it (and then a change by the assistant)
UNDONE = Flag("decision", "assistant", "undone later")


def claim(flag: Flag, row: dict[str, Any] | None = None, rules: TraceRules = TRACE_RULES) -> bool:
    """May this flagged turn claim a change of course (`rules.claim_by`, `claim_accept`,
    `claim_from`, `claim_question`)? `row`: the turn (its `user_text` and `provenance`), when known."""
    if not rules.claim_accept and (flag.cue == "approval" or (row is not None and accepts(row))):
        return False
    if row is not None and str(row.get("provenance") or "").startswith(WEAK[rules.claim_from]):
        return False
    if not rules.claim_question and flag.by == "user" and row is not None and asks(row):
        return False
    return (
        rules.claim_by == "any"
        or flag.by == "user"
        or (rules.claim_by == "user+reversal" and flag.kind == "reversal")
    )


def accepts(row: dict[str, Any]) -> bool:
    """Does the user's turn only accept what was offered ("yes", "option 2", "ok, proceed")?"""
    user = (row.get("user_text") or "")[:200]
    return bool(APPROVAL.match(user) or FOLLOW_UP.match(user))


def asks(row: dict[str, Any]) -> bool:
    return (row.get("user_text") or "").rstrip().endswith(("?", "？"))  # the user's turn asks


def flag_turn(user: str, assistant: str, kinds: list[str]) -> Flag | None:
    """Does this turn set or change a course? The user's words decide first."""
    return flag_turns([user], [assistant], [kinds])[0]


def flag_turns(
    users: list[str], assistants: list[str], kinds: list[list[str]]
) -> list[Flag | None]:
    """`flag_turn` for many turns: each pattern runs once over all of them (Polars), then the
    first rule that holds decides, in this order: the user's correction or reversal, the refiner's
    `reversal`, an approval, the user setting a course, a planning command, the assistant
    switching course, the refiner's `decision`."""
    u = pl.Series(users, dtype=pl.String).fill_null("").str.slice(0, 1500)
    a = pl.Series(assistants, dtype=pl.String).fill_null("").str.slice(0, 3000)
    short = (pl.Series(users, dtype=pl.String).fill_null("").str.len_chars() < 1500).to_list()
    change, revert, decide, directive = (
        u.str.extract(p, 0).to_list() for p in (_CHANGE_USER, _REVERT, _DECIDE_USER, _DIRECTIVE)
    )
    approval, plan = u.str.contains(_APPROVAL).to_list(), u.str.contains(_PLAN_COMMAND).to_list()
    asks = (
        u.str.contains(_QUESTION) & ~u.str.contains(_PROPOSAL)
    ).to_list()  # a question sets no course
    switch = a.str.extract(_CHANGE_ASSISTANT, 0).to_list()
    out: list[Flag | None] = []
    for i, have in enumerate(kinds):
        have = have or []
        if change[i] is not None and short[i]:
            out.append(
                Flag("reversal", "user", revert[i])
                if revert[i] is not None
                else Flag("change", "user", change[i])
            )
        elif "reversal" in have:
            out.append(Flag("reversal", "assistant", "reversal"))
        elif approval[i]:
            out.append(Flag("decision", "user", "approval"))
        elif (decide[i] is not None or (directive[i] is not None and short[i])) and not asks[i]:
            out.append(
                Flag(
                    "decision",
                    "user",
                    (decide[i] if decide[i] is not None else directive[i]).strip(),
                )
            )
        elif plan[i]:
            out.append(Flag("decision", "assistant", "plan"))
        elif switch[i] is not None:
            out.append(Flag("change", "assistant", switch[i]))
        elif "decision" in have:
            out.append(Flag("decision", "assistant", "decision"))
        else:
            out.append(None)
    return out


def courses_before(codes: np.ndarray, course: np.ndarray) -> np.ndarray:
    """For each row (in time order; `codes` its conversation), how many rows of its own
    conversation before it set a course: conversations that ran side by side interleave in a
    theme, and a course set in one does not make the other's last course less recent."""
    order = np.argsort(codes, kind="stable")
    c = course[order].astype(np.int64)
    run = np.cumsum(c) - c  # courses before it in `order`
    first = np.searchsorted(codes[order], codes[order])  # where its conversation starts in `order`
    out = np.empty_like(run)
    out[order] = run - run[first]
    return out


def pair_changes(
    rows: list[dict[str, Any]],
    flags: list[Flag | None],
    min_similarity: float = 0.08,
    change_similarity: float = 0.2,
    claims: Callable[[Flag, dict[str, Any]], bool] | None = None,
    rules: TraceRules = TRACE_RULES,
) -> list[Pair]:
    """A `Pair` (change, undone turn, score, shared terms, alternatives) for each change in `rows` (every
    event of the theme in time order, aligned with `flags`; None = not flagged). A change is
    paired with the earlier course that scores best: TF-IDF cosine over the theme's own turns (the
    user's words, the refined summary and keywords; IDF from the theme, so words it shares weigh
    little), plus `rules.recent` / k for the k-th most recent course before it in its conversation (or
    `rules.open` / k for the theme's, when its conversation set none before it). A course set by the
    user changes an earlier course that is this alike (`change_similarity`) or the last course; a
    reversal goes back on a flagged course or the last course of its conversation; any other change
    is paired with its best candidate when that is the last course or `min_similarity` alike.
    A turn that was undone but carried no cue of its own is a step of the same thread: it is
    paired in turn with the course it changed, as a change by the assistant. Candidates are the
    `rules.window` turns before a change, scored in blocks of changes so the cost grows with the theme,
    not with its square. A pair's alternatives are the `rules.alternatives` courses that score next.
    `claims(flag, row)` (default: every flag) says which flagged turns may claim a change at all:
    the others still count as courses to undo, but are not paired themselves (`claim`)."""
    claims = claims or (lambda f, r: True)
    changes = np.array(
        [i for i, f in enumerate(flags) if f is not None and i > 0 and claims(f, rows[i])],
        dtype=np.int64,
    )
    if not len(changes):
        return []
    m, terms, idf = term_matrix([_text(r) for r in rows])
    course, flagged = _courses(rows, flags)
    _, codes = np.unique(
        np.array([r["session_id"] for r in rows], dtype=object).astype(str), return_inverse=True
    )
    ctx = _Context(
        rows,
        m,
        course,
        flagged,
        codes,
        courses_before(codes, course),
        np.cumsum(course),
        min_similarity,
        change_similarity,
        rules,
    )
    kind = np.array([flags[i].kind for i in changes])  # type: ignore[union-attr]
    yes = np.array([flags[i].cue == "approval" for i in changes])  # type: ignore[union-attr]
    i_s, j_s, scores, alts = _pair(ctx, changes, kind == "decision", yes, kind == "reversal")
    later = np.unique(
        j_s[~flagged[j_s]]
    )  # undone, but no cue of its own: it changed the course before it
    later = np.array(
        [j for j in later.tolist() if j > 0 and claims(UNDONE, rows[j])], dtype=np.int64
    )
    if len(later):
        no = np.zeros(len(later), dtype=bool)
        i2, j2, s2, a2 = _pair(ctx, later, no, no, no)
        i_s, j_s, scores, alts = (
            np.concatenate([i_s, i2]),
            np.concatenate([j_s, j2]),
            np.concatenate([scores, s2]),
            np.concatenate([alts, a2]),
        )
    shared = _shared_terms(m, terms, idf, i_s, j_s)
    return [
        Pair(i, j, round(v, 3), sh, [x for x in alt if x >= 0])
        for i, j, v, sh, alt in zip(
            i_s.tolist(), j_s.tolist(), scores.tolist(), shared, alts.tolist(), strict=True
        )
    ]


@dataclass
class _Context:
    rows: list[dict[str, Any]]
    m: sp.csr_matrix
    course: np.ndarray
    flagged: np.ndarray
    codes: np.ndarray
    before: np.ndarray  # courses of the row's own conversation before it
    total: np.ndarray  # courses of the theme up to and including the row
    min_similarity: float
    change_similarity: float
    rules: TraceRules


def _courses(rows: list[dict[str, Any]], flags: list[Flag | None]) -> tuple[np.ndarray, np.ndarray]:
    """Which rows set a course that a later change can undo, and which are flagged. A course is a
    flagged turn or one that changed something (the summary says it edited, committed, created),
    unless it fixed a bug, only asked or inspected ("what ...?", "check if the CI passes"), only
    did bookkeeping ("commit this", "/gsd:progress"), ran a command that changed nothing, or fixed
    a bug the assistant described with "instead"."""
    users = (
        pl.Series([r.get("user_text") or "" for r in rows], dtype=pl.String)
        .str.strip_chars()
        .str.slice(0, 300)
    )
    decided = np.array(
        ["decision" in (r.get("kinds") or []) for r in rows], dtype=bool
    )  # the refiner saw a decision
    command = users.str.starts_with("/").to_numpy()
    inspecting = users.str.contains(_INSPECT).to_numpy() & ~command & ~decided
    worked = (
        pl.Series([r.get("summary") or "" for r in rows], dtype=pl.String)
        .str.contains(_WORK)
        .to_numpy()
    )
    fixed = np.array(
        ["fix" in (r.get("kinds") or []) for r in rows], dtype=bool
    )  # a bug fixed sets no course
    flagged = np.array([f is not None for f in flags])
    worded = np.array(
        [
            f is not None
            and f.by == "assistant"
            and f.kind == "change"
            and f.cue.lower() in _FIX_WORDING
            for f in flags
        ]
    )
    idle = (command & ~worked) | users.str.contains(
        _BOOKKEEPING
    ).to_numpy()  # nothing changed, or only bookkeeping
    return (flagged | (worked & ~fixed)) & ~inspecting & ~idle & ~(fixed & worded), flagged


def _pair(
    ctx: _Context,
    changes: np.ndarray,
    user_course: np.ndarray,
    approves: np.ndarray,
    reverts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of `changes` (row indices, time order) as arrays: change, undone course, score,
    and the alternatives (one row per pair, `rules.alternatives` wide, -1 where there is none)."""
    course, codes, before, rules = ctx.course, ctx.codes, ctx.before, ctx.rules
    back = np.arange(1, rules.window + 1)
    found = []
    for start in range(0, len(changes), 256):
        block = slice(start, start + 256)
        idx, user, yes, back_to = (
            changes[block],
            user_course[block],
            approves[block],
            reverts[block],
        )
        cand = idx[:, None] - back[None, :]  # the window's turns before each change, nearest first
        ok = cand >= 0
        cand = np.where(ok, cand, 0)
        lo = int(cand.min())
        sims = (
            (ctx.m[idx] @ ctx.m[lo : int(idx.max())].T).toarray()
            if idx.max() > lo
            else np.zeros((len(idx), 1))
        )
        at = np.arange(len(idx))[:, None]
        alike = np.where(ok, sims[at, np.minimum(cand - lo, sims.shape[1] - 1)], 0.0)
        ok &= course[cand]  # a change undoes a course: never a question, a check or a bug fix
        here = codes[cand] == codes[idx][:, None]
        # courses of the conversation between the candidate and the change (0: its last course)
        nth = np.where(here, before[idx][:, None] - before[cand] - course[cand], 0)
        if (
            back_to.any()
        ):  # going back returns to a course someone set, or to the last course of its conversation
            ok[back_to] &= ctx.flagged[cand[back_to]] | (here[back_to] & (nth[back_to] == 0))
        bonus = np.where(here, rules.recent / (1 + nth), 0.0)
        opens = (
            before[idx] == 0
        )  # no course of its own conversation before it: the theme's courses count
        kth = (
            ctx.total[idx[opens] - 1][:, None] - ctx.total[cand[opens]]
        )  # courses of the theme in between
        bonus[opens] = rules.open / (1 + kth)
        score = np.where(ok, alike + bonus, -np.inf)
        best = score.argmax(axis=1)
        rows_at = np.arange(len(idx))
        alts = _runners_up(score, cand, best, rules.alternatives)
        # a new course by the user changes the last course (an approval accepts it instead), or
        # an earlier one that is alike
        picked = cand[rows_at, best]
        sim = alike[rows_at, best]
        at_last = here[rows_at, best] & (nth[rows_at, best] == 0)
        at_last[opens] = (
            ctx.total[idx[opens] - 1] == ctx.total[picked[opens]]
        )  # the theme's last course
        # the last course needs some words in common (or, in the conversation, a file)
        asks_near = (user & ~yes) | (~user & rules.change_near)
        near = (sim >= rules.last_min) | _share_file(
            ctx.rows, idx, picked, ~opens & asks_near & at_last & (sim < rules.last_min)
        )
        enough = np.where(
            user,
            (sim >= ctx.change_similarity) | (at_last & ~yes & near),
            (sim >= ctx.min_similarity) | (at_last & (near | (~opens & ~rules.change_near))),
        )
        keep = np.nonzero(enough & ok[rows_at, best])[0]
        found.append((idx[keep], picked[keep], score[rows_at[keep], best[keep]], alts[keep]))
    i_s, j_s, scores, alts = (np.concatenate(x) for x in zip(*found, strict=True))
    return i_s, j_s, scores, alts


def _runners_up(score: np.ndarray, cand: np.ndarray, best: np.ndarray, most: int) -> np.ndarray:
    """The `most` candidates scoring next after `best` in each row, best first (-1: none).
    A course with no word in common and no recency (score 0) is no alternative: nothing points at it."""
    rows_at = np.arange(len(score))
    rest = score.copy()
    out = np.full((len(score), most), -1, dtype=np.int64)
    taken = best
    for k in range(most):  # a few argmax passes: cheaper than sorting 200 candidates a row
        rest[rows_at, taken] = -np.inf
        taken = rest.argmax(axis=1)
        out[:, k] = np.where(
            rest[rows_at, taken] > 0, cand[rows_at, taken], -1
        )  # 0: no word, no recency
    return out


def _share_file(
    rows: list[dict[str, Any]], i: np.ndarray, j: np.ndarray, when: np.ndarray
) -> np.ndarray:
    """For the pairs (i, j) where `when` holds: did the two turns touch a file of the same name?"""
    out = np.zeros(len(i), dtype=bool)
    for k in np.nonzero(when)[0]:
        out[k] = bool(_file_names(rows[int(i[k])]) & _file_names(rows[int(j[k])]))
    return out


def _file_names(row: dict[str, Any]) -> set[str]:
    names = (str(f).replace("\\", "/").rsplit("/", 1)[-1] for f in (row.get("files") or []))
    return {n for n in names if "." in n.strip(".")}  # files, not folders


def _shared_terms(
    m: sp.csr_matrix,
    terms: np.ndarray,
    idf: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    most: int = 6,
) -> list[list[str]]:
    """For each pair (i, j) the terms both rows hold, rarest first (at most `most`)."""
    if not len(i):
        return []
    both = sp.csr_matrix(m[i].multiply(m[j]))
    both.sort_indices()
    row = np.repeat(np.arange(len(i)), np.diff(both.indptr))
    order = np.lexsort((both.indices, -idf[both.indices], row))
    rank = np.arange(len(order)) - both.indptr[row[order]]
    top = order[rank < most]
    words = terms[both.indices[top]].tolist()
    cuts = np.searchsorted(row[top], np.arange(1, len(i)))
    return [list(map(str, part)) for part in np.split(np.array(words, dtype=object), cuts)]


def _text(row: dict[str, Any]) -> str:
    return f"{(row.get('user_text') or '')[:400]}\n{row.get('summary') or ''} {' '.join(row.get('keywords') or [])}"


def gist(row: dict[str, Any], by: str, width: int = 160) -> str:
    """What a turn decided, in one line: the user's words when they drove it, else the outcome;
    without a lead-in ("Good question. Let me …") and, for a follow-up ("yes, proceed"), the
    answer's outcome, since that is what was decided."""
    text = (row.get("user_text") or "") if by == "user" else ""
    # a question sets nothing, a follow-up only agrees: the answer says what was decided
    if text.rstrip().endswith(("?", "？", "吗")) or FOLLOW_UP.match(text[:200]):
        text = ""
    if not text.strip() or len(text.strip()) < 12:
        summary = row.get("summary") or ""
        m = re.search(r"Outcome:\s*(.*)", summary, re.S)
        text = (
            (m.group(1) if m else summary)
            if by != "user" or not text.strip()
            else f"{text.strip()}: {summary}"
        )
    return clip(substance(" ".join(text.split())), width)


def substance(text: str) -> str:
    """The text from its first sentence that states something: acknowledgements ("Good
    question.", "Perfect!") and announcements ("Let me update the runsheet first") go. Only the
    head is split: a gist is one line."""
    units = sentences(text[:1000])
    for k, unit in enumerate(units):
        said = strip_reply_ack(unit)
        if said and not announces(said):
            return " ".join([said, *units[k + 1 :]])
    return text
