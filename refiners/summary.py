"""The extractive summary of a turn: `Asked: … Did: … Outcome: …`, picked by content, not position.

* Asked: the request clause of the user's text; greetings and acknowledgements ("Great!!",
  "Thanks,") are skipped, slash-command and local-command wrappers are read as what they are.
* Did: the tools, the files edited (base names) or the first command, and how many calls failed.
* Outcome: the sentences of the answer that state a result, a decision or a finding. Filler
  ("Now I have a comprehensive view.", "Let me …", "Perfect!") and lead-ins ending in ":" are
  skipped; when the content follows a lead-in, the content (a table's rows, the first list items)
  is taken. A lead-in that states something itself ("The stats bar now shows 5 columns:") is a
  unit without its ":"; one that only announces ("The table now shows:") is not. Units are scored
  for content (a test count scores more) and picked greedily within the budget, then put back in
  their order. A word's weight is how many units of the answer say it (centrality: what the
  answer keeps coming back to), doubled for identifiers; a unit is worth what it adds. A label ("Task 2:") is dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from .actions import DID_MAX, describe_actions
from .answers import said
from .model import Turn
from .notification import note, split
from .text import STOPWORDS, Folded, dense, sentences, shorten, words

# a summary runs to this many characters when the turn carries more (key-fact coverage on the
# labelled turns: 0.813 at 600 against 0.755 at 400); compact views clip or drop it for display
SUMMARY_MAX = 600
ASK_MAX = 80
USER_MAX = 200  # the user's answers and feedback given as tool results (refiners/answers.py)
HEAD = 6000
MAX_UNITS = 60  # units looked at per text
EARLIER_HEAD = 1500  # earlier step texts: only their head is looked at
MAX_POOL = 60  # best-scored units considered by the packer
SCORE_W, IDENT_W = 3.0, 2.0  # a unit's value: SCORE_W × score + its new words' weights
LEN_PAD, LEN_EXP = 20, 1.0  # value per character: score / (len + LEN_PAD) ** LEN_EXP
LEAD_MIN_WORDS = (
    3  # a lead-in shorter than this names a list ("Changes:"); longer ones may state a fact
)
FIRST_BONUS = 1.0  # the answer's first content sentence usually states the result
TESTS_W = 1.0  # a test run's count ("35 tests passing", "11 passed") is a result people look for


_ACK = (
    "great",
    "perfect",
    "excellent",
    "awesome",
    "amazing",
    "brilliant",
    "fantastic",
    "wonderful",
    "thanks",
    "thank you",
    "thx",
    "ok",
    "okay",
    "cool",
    "nice",
    "good",
    "sure",
    "alright",
    "all right",
    "got it",
    "understood",
    "absolutely",
    "certainly",
    "of course",
    "hi",
    "hello",
    "hey",
    "hmm",
    "wow",
    "yay",
    "right",
    "done",
    "yes",
    "yep",
    "yeah",
    "i see",
    "ah",
    "oh",
    "love it",
    "good question",
    "great question",
    "good catch",
    "great catch",
    "you're right",
    "you are right",
    "好的",
    "好",
    "谢谢",
    "完美",
    "太好了",
    "明白",
    "收到",
)
_ACK_ANY = "|".join(re.escape(a) for a in sorted(_ACK, key=len, reverse=True))  # longest first
_ACK_RE = re.compile(r"^(?:(?:" + _ACK_ANY + r")(?![\w'])[\s!.,，。！~:;)-]*)+", re.I)
_ACK_WORD = re.compile(r"^(?:" + _ACK_ANY + r")(?![\w'’])(?:\s*[!.,，。！~:;)—–-]+\s*|\s*$)", re.I)
_ACK_CLAUSE = re.compile(
    r"^(?:thanks|thank you|you(?:'|’)re (?:right|correct)|you are (?:right|correct)|good|great|"
    r"excellent|nice)\s+(?:so much\s+)?(?:for|to|question|catch|point|call|idea|find|spot)\b"
    r"[^—–:;.!?]{0,80}?(?:\s[—–-]+\s|[—–:;.!?]+)\s*|"
    # praise of a few words that ends its sentence: "Great progress.", "Good calls on both!"
    r"^(?:good|great|excellent|nice|perfect|awesome|amazing|fantastic|brilliant|wonderful|love)"
    r"(?:\s+[A-Za-z'’]+){1,5}\s*[.!]+\s*|^good news\s*[:!,—–-]+\s*",
    re.I,
)
_SELF = re.compile(
    r"^(?:(?:now|next|first|then|ok(?:ay)?|so|alright|great|perfect|good|excellent)[,!.]?\s+)*"
    r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|i should|i'm now|i am now|"
    r"i (?:now )?have (?:a |an )?(?:good|clear|comprehensive|complete|full|better|thorough|enough|all)|"
    r"i have enough|i can see|i see|i understand|now i (?:understand|see|know|have)|"
    r"based on (?:my|the|this|these|your|our)|after (?:reviewing|analyzing|analysing|examining|"
    r"investigating|looking|reading|checking)|having (?:reviewed|analyzed|analysed|examined|looked|read)|"
    r"looking at|here(?:'s| is| are)|below is|the following|this is what)\b",
    re.I,
)
_OFFER = re.compile(
    r"^(?:would you like|do you want|want me to|shall i|should i|let me know|"
    r"if you(?:'d| would)? like|feel free|is there anything|anything else|"
    r"need (?:anything|help)|happy to)\b",
    re.I,
)
_NEXT = re.compile(
    r"^(?:next(?: up| steps?)?\b|to (?:run|view|continue|execute)\b|run\s*[:`/]|view plan|"
    r"when (?:you(?:'re)? ready|ready)|/[a-z][\w:-]+\s|[\x21-\x7e]+$)",
    re.I,
)  # a bare path or URL
_LABEL = re.compile(
    r"^(?:summary|result|results|outcome|conclusion|tl;?dr|status|answer|"
    r"root cause|cause|fix|decision|verdict|bottom line|完成|总结|結論|结论|總結)\s*[:：]\s*",
    re.I,
)
_CUE = Folded(
    r"\b(?:fixed|fixes|created|added|updated|removed|renamed|changed|replaced|committed|"
    r"installed|merged|pushed|deployed|passes|passed|passing|fails|failed|failing|found|"
    r"works|working|now|because|cause|caused|instead|reverted|restored|decided|chose|"
    r"error|is|are|was|were|shows|returns|uses|complete|completed)\b",
)
# A lead-in that only announces what follows ("The table now shows:", "Changes include:") says nothing itself.
_ANNOUNCE = Folded(
    r"\b(?:shows?|includes?|including|contains?|has|have|are|is|were|was|follows?|following|"
    r"below|here|like|as|these|this|found|summary|changes|results?|details|steps|options)\W*[:：]$",
)
_LEAD_TAIL = re.compile(r"[\s,;-]*(?:\bbecause\b)?[\s,;-]*[:：]$", re.I)
_TESTS = Folded(
    r"\b\d+(?:/\d+)? (?:\w+ ){0,2}(?:tests?|specs?|checks?|passed|passing|failed|failing)\b|"
    r"\btests? (?:\w+ ){0,2}(?:pass|passed|passing|fail|failed|failing|green)\b",
)
_INFO = re.compile(r"`[^`]+`|\b\w*[\d_./\\-]\w*[\w/]*|\b[a-z]+[A-Z]\w*|(?<=\s)[A-Z][\w-]+")
_IDENT = re.compile(r"[\d_./@-]|[a-z][A-Z]")
_HAN = re.compile("[\u4e00-\u9fff]")
_MD = re.compile(r"\*\*|__|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)|`")
# A short label before a statement ("Task 2:", "CAPTURE:", "03-01:"), dropped when 3 words or more
# follow; one that carries meaning stays: "Error:", "Before:", "Cons:", and those that say the
# statement is gone, broken or undone ("Removed: the v1 endpoint" without it says the opposite).
_KEY_LABEL = re.compile(
    r"^(?!(?:Error|Warning|Failed|Failure|Pros|Cons|Before|After|Old|New|Removed|Deleted|Dropped|"
    r"Reverted|Disabled|Deprecated|Skipped|Missing|Broken|Blocked|Fixed|Unrealized|Not)\b)"
    r"(?:[A-Z][A-Za-z]{1,15}(?: \d+(?:(?: of |/)\d+)?)?|\d{1,2}(?:-\d{1,2})?)\s*[:：]\s+(?=(?:\S+\s+){2}\S)"
)
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)]|[a-z][.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s*")
_SYMBOLS = re.compile("[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d]+")
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Claude Code wraps local commands in pseudo-XML (its task notifications: notification.py).
_CMD_NAME = re.compile(r"<command-name>\s*([^<]*?)\s*</command-name>")
_CMD_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
_LOCAL_OUT = re.compile(
    r"<local-command-(?:stdout|stderr)>(.*?)(?:</local-command-(?:stdout|stderr)>|$)", re.S
)
_DROP_BLOCKS = re.compile(r"<(system-reminder|local-command-caveat|command-message)>.*?</\1>", re.S)
_TAG = re.compile(r"</?[a-z][a-z-]*>")


def user_request(text: str) -> str:
    """The user's text as a request: wrappers read as what they are, reminders dropped, Claude
    Code's task notifications said as a note (their summaries) before the user's own words."""
    notified = split(text)  # the whole text: a notification's `<result>` may run past the head
    if notified.count:
        return f"{note(notified.summaries)} {user_request(notified.said)}".strip()
    head = _no_ansi(text[:3000])
    if "<" not in head:
        return head.strip()
    name = _CMD_NAME.search(head)
    if name:
        args = _CMD_ARGS.search(head)
        return f"{name.group(1)} {args.group(1).strip() if args else ''}".strip()
    out = _LOCAL_OUT.search(head)
    if out:
        body = " ".join(out.group(1).split())
        return (
            f"(command output) {body}"
            if body and body != "(no content)"
            else "(empty command output)"
        )
    return _TAG.sub(" ", _DROP_BLOCKS.sub(" ", head)).strip()


def cut_short(turn: Turn) -> bool:
    """The user stopped the turn: an interruption marker followed it, or it was cancelled or blocked.

    A turn that merely has no end marker (superseded by the next prompt) is not cut short: many
    logs never write one.
    """
    return turn.reason in ("interrupted", "blocked", "cancelled")


def is_compaction_summary(text: str) -> bool:
    head = text[:300].lower()
    return "session is being continued from a previous conversation" in head


def strip_ack(text: str) -> str:
    """The user's text without a leading acknowledgement ("ok", "great,", "thanks!")."""
    return _ACK_RE.sub("", text, count=1).strip()


def strip_reply_ack(unit: str) -> str:
    """An answer's sentence without a leading acknowledgement, stricter than `strip_ack`: a word
    like "great" goes only when punctuation ends it ("Great list — I've expanded PDL" keeps its
    "Great list"), and a clause that thanks or agrees goes whole ("Thanks for the details —",
    "You're right to call that out -", "Good question -"), never leaving "for the details — …"."""
    original, prev = unit, None
    while prev != unit:
        prev = unit
        unit = _ACK_CLAUSE.sub("", unit, count=1)
        unit = _ACK_WORD.sub("", unit, count=1)
    unit = unit.strip()
    return unit[0].upper() + unit[1:] if unit[:1].islower() and original[:1].isupper() else unit


def announces(unit: str) -> bool:
    """Does the sentence only say what the agent will do or offers to do ("Let me check", "Want me to…")?"""
    return bool(_SELF.match(unit) or _OFFER.match(unit))


def asked(turn: Turn) -> str:
    """The request clause: the first sentences with content, greetings and thanks skipped."""
    if is_compaction_summary(turn.user_text):
        return "(continued session: summary of the earlier conversation)"
    text = user_request(turn.user_text)
    picked: list[str] = []
    size = 0
    for line in text.splitlines()[:40]:
        for sent in sentences(line, 6):
            content = strip_ack(sent) if not picked else sent
            if len(content) < 2 or (not picked and content != sent and len(sent.split()) <= 4):
                continue  # "Great!!", "Thanks a lot.": an acknowledgement, not the request
            picked.append(content)
            size += len(content) + 1
            if size >= ASK_MAX:
                break
        if size >= ASK_MAX:
            break
    if not picked:  # only acknowledgements ("yes", "great!"): they are the whole ask
        return shorten(text, ASK_MAX)
    return shorten(" ".join(picked), ASK_MAX)


def _units(text: str) -> list[tuple[str, bool, bool]]:
    """(unit, is a lead-in, follows a lead-in) for the lines and sentences of an answer."""
    text = _no_ansi(text[:HEAD])
    if "```" in text:
        text = _FENCE.sub(
            lambda m: "\n" + (m.group(1).strip() if "\n" not in m.group(1).strip() else "") + "\n",
            text,
        )
    out: list[tuple[str, bool, bool]] = []
    after_lead = False
    lines = text.split("\n")
    for n, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("---") or _TABLE_SEP.match(line) or line.startswith("<"):
            continue
        if line.startswith("|") and n + 1 < len(lines) and _TABLE_SEP.match(lines[n + 1].strip()):
            continue  # a table's header row names columns; its rows carry the content
        item = bool(_BULLET.match(line)) or line.startswith("|")
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|") if _plain(c).strip(" -–—")]
            line = ": ".join(cells[:1]) + (" " + ", ".join(cells[1:]) if len(cells) > 1 else "")
        heading = bool(_HEADING.match(line))
        line = _plain(_HEADING.sub("", _BULLET.sub("", line))).strip()
        line = _LABEL.sub("", line).strip()
        if len(line) < 2:
            continue
        if heading and not line.endswith((":", "：")):
            after_lead = False
            continue  # a heading names a section; its content follows
        if not item:
            after_lead = False
        for sent in sentences(line, 8):
            lead = sent.endswith((":", "："))
            out.append((sent, lead, after_lead and item))
            if lead:
                after_lead = True
    return out


def _no_ansi(text: str) -> str:
    """`text` without ANSI colour codes (the scan for ESC is much cheaper than the pattern's)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _plain(text: str) -> str:
    """`text` without Markdown emphasis and emoji. Each pattern runs only where its characters
    can be: a short turn's lines hold neither, and the patterns' lookarounds cost µs a line."""
    if "*" in text or "_" in text or "`" in text:
        text = _MD.sub("", text)
    return text if text.isascii() else _SYMBOLS.sub("", text)


def _han(text: str) -> int:
    """The Han characters in `text` (none in ASCII text)."""
    return 0 if text.isascii() else len(_HAN.findall(text))


def _score(unit: str, rank: int) -> float:
    words = unit.split()
    info = len(_INFO.findall(unit)) + _han(unit[:200]) / 4
    score = (
        1.0 / (1 + rank)
        + min(info, 6) / max(3.0, len(words) ** 0.5)
        + (0.4 if _CUE.search(unit) else 0)
    )
    if len(unit) < 15:
        score -= 0.6
    return score


def outcome(turn: Turn, budget: int, known: str = "") -> str:
    """The answer's sentences that state a result, a decision or a finding, within `budget`;
    `known` is the part of the summary whose words count as said already (Did: an outcome often
    restates the ask's subject along with the result, so the ask's words still count)."""
    if is_compaction_summary(turn.user_text):
        sources = [
            (turn.user_text[turn.user_text.find("\n") + 1 :], 0.0)
        ]  # the handoff is the content
    else:
        final = turn.final_text or _last_text(turn)
        earlier = [s.text for s in reversed(turn.steps) if s.text.strip() and s.text is not final]
        sources = [(final, 0.0)] + [(t[:EARLIER_HEAD], 1.0) for t in earlier[:3]]
        if not final.strip() and turn.synthetic_text.strip():
            sources = [(turn.synthetic_text, 0.0)]
    if not any(t.strip() for t, _ in sources):
        calls = turn.tool_calls
        last = calls[-1] if calls else None
        return f"{last.name} {last.status}" if last is not None and last.status != "ok" else ""
    candidates: list[tuple[float, int, str]] = []
    first: list[str] = []
    order = 0
    for text, penalty in sources:
        units = _units(text)
        if not first and units:
            first = [u for u, _lead, _after in units[:2]]
        rank = 0
        for u, lead, after in units[:MAX_UNITS]:
            order += 1
            if announces(u) or _NEXT.match(u):
                continue
            if lead:  # a lead-in that states something ("The bar now shows 5 columns:") is said without its ":"
                if _ANNOUNCE.search(u) or len(u.split()) < LEAD_MIN_WORDS or not _CUE.search(u):
                    continue
                u = _LEAD_TAIL.sub("", u)
            body = dense(_KEY_LABEL.sub("", strip_reply_ack(u), count=1))
            if announces(body):
                continue  # "Thanks! Let me look into it": what is left is the agent's next move
            if not body or (len(body.split()) < 2 and _han(body) < 4 and body != dense(u)):
                continue  # nothing left, or "Good point." without its "Good" (CJK has no spaces: count Han)
            lead_bonus = FIRST_BONUS if rank == 0 and penalty == 0 else 0.0
            bonus = lead_bonus + (TESTS_W if _TESTS.search(body) else 0)
            candidates.append(
                (_score(body, rank) + bonus + (0.3 if after else 0) - penalty, order, body)
            )
            rank += 1
    if not candidates:
        said = [b for b in (strip_reply_ack(u) for u in first) if b and not announces(b)]
        return shorten(" ".join(said or first), budget)
    return pack(candidates, budget, set(_content_words(known)))


def pack(candidates: list[tuple[float, int, str]], budget: int, known: set[str]) -> str:
    """Greedy by value per character. A unit's value is its score plus the weight of the
    content words it adds (not in `known` or the units picked before); a word weighs the number
    of units that say it (the answer's centroid, as in centroid summarisation; a unit that
    repeats picked words adds nothing, as in MMR), twice that for an identifier, number or name."""
    first_of: dict[str, tuple[float, int, str]] = {}
    for c in sorted(candidates, key=lambda c: c[1]):
        first_of.setdefault(c[2], c)  # a unit said twice (the answer repeats an earlier step) once
    candidates = list(first_of.values())
    if sum(len(u) + 1 for _s, _i, u in candidates) <= budget:
        return _joined([(i, u) for _s, i, u in candidates])  # everything fits: nothing to choose
    pool = [
        (s, i, u, set(_content_words(u)))
        for s, i, u in sorted(candidates, key=lambda x: -x[0])[:MAX_POOL]
    ]
    tf = Counter(w for _s, _i, _u, ws in pool for w in ws)
    weight = {w: n * (IDENT_W if _IDENT.search(w) else 1.0) for w, n in tf.items()}
    chosen: list[tuple[int, str]] = []
    used = 0
    covered = set(known)
    while pool:
        best, best_gain = -1, 0.0
        for k, (s, _i, u, ws) in enumerate(pool):
            if used + len(u) + 1 > budget or (ws and ws <= covered):
                continue  # too long for what is left, or nothing the summary does not say yet
            novel = sum(weight[w] for w in ws - covered)
            gain = (max(s, 0.05) * SCORE_W + novel) / (len(u) + LEN_PAD) ** LEN_EXP
            if gain > best_gain:
                best, best_gain = k, gain
        if best < 0:
            break
        _s, i, u, ws = pool.pop(best)
        chosen.append((i, u))
        used += len(u) + 1
        covered |= ws
    if not chosen:
        return shorten(candidates[0][2], budget) if candidates else ""
    return _joined(chosen)


def _joined(chosen: list[tuple[int, str]]) -> str:
    """The picked units in their order, a ";" after those that end without punctuation."""
    chosen.sort()
    return " ".join(
        u if u.endswith((".", "!", "?", "。", "！", "？", ")")) or not u[-1:].isalnum() else u + ";"
        for _i, u in chosen
    ).rstrip(";")


def _content_words(text: str) -> list[str]:
    return [w for w in (x.lower() for x in words(text)) if len(w) > 2 and w not in STOPWORDS]


def _last_text(turn: Turn) -> str:
    for step in reversed(turn.steps):
        if step.text.strip():
            return step.text
    return ""


# A next request that opens by turning the answer down ("No, …", "Actually, let's keep …").
_REJECTS = re.compile(
    r"^\W*(?:no\b(?=\s*(?:$|[,.!;:—-]|(?:no|not|that|there|it|i|we|let'?s|stop|don'?t|this|you)\b))|"
    r"nope\b|nah\b|stop\W*$|that'?s (?:not|wrong|incorrect)\b|that is (?:not|wrong)\b|wrong\b|"
    r"not (?:quite|that|what)\b|actually,? (?:no\b|don'?t|do not|let'?s (?:not|keep|leave)|keep|leave)|"
    r"revert\b|undo\b)",
    re.IGNORECASE,
)
PROPOSED = "proposed, rejected by the user"


def rejected_by_user(turn: Turn, next_turn: Turn | None) -> bool:
    """The user turned down what this turn proposed: its last tool call was refused (with or
    without a reason), or the next request opens by rejecting it ("No, …", "Actually, keep …")."""
    calls = turn.tool_calls
    if calls and (
        calls[-1].approval == "reject"
        or any(a.startswith(("[feedback on", "[rejected")) for a in turn.answers[-1:])
    ):
        return True
    if next_turn is None or next_turn.origin not in ("user", "interrupt"):
        return False
    return bool(_REJECTS.match(strip_ack(user_request(next_turn.user_text))[:200]))


RECAP_SPAN = 50  # turns a recap's reference names (the latest it restates; a range reads 50)


def recap(summary: str, index: int, session_id: str) -> str:
    """A compaction recap's summary, marked as one and pointing at the turns it restates: the
    session's earlier turns (as a `SESSION:FIRST-LAST` range), or an earlier session."""
    if summary.startswith("Recap"):
        return summary
    if index <= 0:
        return shorten(f"Recap of an earlier session. {summary}", SUMMARY_MAX)
    first = max(0, index - RECAP_SPAN)
    where = f"{session_id}:{first}-{index - 1}"
    return shorten(f"Recap of turns 0-{index - 1} ({where}). {summary}", SUMMARY_MAX)


def mark_rejected(summary: str) -> str:
    """The summary with its outcome stated as a proposal the user rejected."""
    if PROPOSED in summary:
        return summary
    head, sep, out = summary.partition(" Outcome: ")
    if not sep:
        head, sep, out = summary.partition("Outcome: ")
    if not sep:
        return shorten(f"{summary} Outcome: {PROPOSED}".strip(), SUMMARY_MAX)
    return shorten(f"{head}{sep}{PROPOSED}: {out}", SUMMARY_MAX)


class ExtractiveSummarizer:
    """`Asked: … Did: … Outcome: …` from the turn's own sentences; no model, no network."""

    def summarize(self, turn: Turn) -> str:
        ask = asked(turn)
        did = describe_actions(turn.tool_calls)
        state = "interrupted" if cut_short(turn) and turn.status != "cancelled" else turn.status
        status = f" [{state}]" if state in ("interrupted", "cancelled", "error") else ""
        user = said(turn.answers)
        return compose(
            ask, did, lambda budget: outcome(turn, budget, f"{did} {user}"), status, user
        )


def compose(
    ask: str, did: str, result: str | Callable[[int], str], status: str = "", user: str = ""
) -> str:
    """`Asked: … Did: … User: … Outcome: …` within SUMMARY_MAX; the outcome gets what the others
    leave. `User:` holds the user's words that came as tool results (answers, feedback).

    `result` is the outcome text, or a function of its budget that picks one. Every summarizer
    (extractive, or the client's model through MCP sampling) writes this shape.
    """
    ask, did, user = shorten(ask, ASK_MAX), shorten(did, DID_MAX), shorten(user, USER_MAX)
    head = " ".join(
        p
        for p in (
            f"Asked: {ask}" if ask else "",
            f"Did: {did}" if did else "",
            f"User: {user}" if user else "",
        )
        if p
    )
    budget = SUMMARY_MAX - len(head) - len(" Outcome: ") - len(status)
    out = result(budget) if callable(result) else shorten(result, max(budget, 40))
    tail = f"Outcome: {out}{status}" if out else status.strip()
    return shorten(" ".join(p for p in (head, tail) if p), SUMMARY_MAX)
