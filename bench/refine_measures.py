"""The measures of `bench/refine.py`, written independently of the refiner's own rules.

Outcome filler: the outcome's first sentence (split at . ! ? followed by a space, or at a line
end) is filler when it
  * is an acknowledgement or interjection of at most six words ("Great!", "Perfect.",
    "Thank you for the clarifications!", "Got it.", "You're right."), or
  * announces the agent's next move instead of a result ("Let me …", "Now let me …", "I'll …",
    "I will …", "I'm going to …", "Let's …"), or
  * talks about the agent's own state of knowledge ("Now I have a comprehensive view.",
    "I have enough information", "Based on my investigation, here's …", "After reviewing …").
Lead-in cut before its content: the outcome's text ends in ":" (an ellipsis or a bracketed status
after it does not count as content), i.e. it announces something ("Here's a summary of findings for
your review:") and the summary stops there.
Key-fact coverage: a fact counts when every one of its term groups has an alternative that occurs
(case-insensitively) in the summary.
"""

from __future__ import annotations

import re

ACK_WORDS = (
    "great",
    "perfect",
    "excellent",
    "awesome",
    "thanks",
    "thank you",
    "ok",
    "okay",
    "sure",
    "alright",
    "all right",
    "got it",
    "understood",
    "absolutely",
    "certainly",
    "of course",
    "good",
    "nice",
    "wonderful",
    "fantastic",
    "you're right",
    "you are right",
    "ah",
    "oh",
    "hmm",
    "done",
    "yes",
    "no problem",
    "good question",
    "great question",
    "i see",
    "right",
)
NEXT_MOVE = re.compile(
    r"^(now,? |next,? |first,? |then,? |ok(ay)?,? |great,? |perfect,? )?"
    r"(let me|let's|i'll|i will|i'm going to|i am going to|i need to|i'm now going|"
    r"i'm gonna)\b",
    re.I,
)
KNOWLEDGE = re.compile(
    r"^(now,? )?(i (now )?have (a |an )?(good|clear|comprehensive|complete|full|"
    r"better|enough|all the)|i have enough|based on (my|the|this|these|your)|"
    r"after (reviewing|analyzing|examining|investigating|looking)|"
    r"having (reviewed|analyzed|examined|looked)|now i (understand|see|know|have))",
    re.I,
)
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


def outcome_of(summary: str) -> str:
    """The outcome part of an `Asked: … Did: … Outcome: …` summary ('' when it has none)."""
    i = summary.find("Outcome: ")
    return summary[i + len("Outcome: ") :].strip() if i >= 0 else ""


def _strip_status(outcome: str) -> str:
    return re.sub(r"\s*\[(interrupted|cancelled|error|open)\]$", "", outcome).rstrip(" …").rstrip()


def is_filler(outcome: str) -> bool:
    text = _strip_status(outcome)
    if not text:
        return False
    first = _SENT.split(text, maxsplit=1)[0].strip().strip("*_#> ")
    low = first.lower().rstrip(".!?:, ")
    n_words = len(low.split())
    if n_words <= 6 and any(
        low == a or low.startswith(a + " ") or low.startswith(a + ",") or low.startswith(a + "!")
        for a in ACK_WORDS
    ):
        return True
    return bool(NEXT_MOVE.match(first) or KNOWLEDGE.match(first))


def is_cut_lead_in(outcome: str) -> bool:
    text = _strip_status(outcome)
    return text.endswith(":") or text.endswith("：")


def fact_covered(summary: str, terms: list[str]) -> bool:
    low = summary.lower()
    return all(any(alt and alt in low for alt in group.split("|")) for group in terms)


def prf(pairs: list[tuple[set[str], set[str]]], kind: str) -> dict[str, float | int]:
    """Precision / recall of one kind over (predicted, gold) pairs."""
    tp = sum(1 for p, g in pairs if kind in p and kind in g)
    fp = sum(1 for p, g in pairs if kind in p and kind not in g)
    fn = sum(1 for p, g in pairs if kind not in p and kind in g)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
    }
