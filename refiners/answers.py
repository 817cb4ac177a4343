"""The user's words that arrive as a tool's result: answers to the agent's questions, feedback on a
rejected call, an approved plan. They are the user's decisions, so they join the turn's user text.

Each reader's builder calls one function where it stores a tool result and appends what it
returns to `Turn.answers`; each entry is marked with what it is:

* `[answer] <question> → <choice>`: Claude Code's `AskUserQuestion` (its `toolUseResult.answers`,
  else the result text "User has answered your questions: "q"="a", …");
* `[feedback on <tool>] <words>`: a rejected call with the user's reason (Claude Code: "… To tell
  you how to proceed, the user said: …"; Kimi: an `ApprovalResponse` `reject` with `feedback`);
* `[rejected <tool>]`: a call the user refused without saying why;
* `[approved plan] <title>` (`[approved plan, edited by the user]` when the plan approved is not
  the plan proposed): Claude Code's `ExitPlanMode`;
* `[picked] 3. <option>`: a bare "3" answering the numbered menu of the previous answer, so the
  choice reads whole wherever the user's words are shown (`picked`, for every reader).

Codex, Gemini, Qwen and OpenCode logs hold no such record with the user's words: Codex writes no
approval events into its rollout, Qwen records only `decision: auto_accept|…` on a call, Gemini
and OpenCode record the call's status alone.
"""

from __future__ import annotations

import re
from typing import Any

from .model import ToolCall, Turn, output_to_text

PICKED = "[picked] "  # the mark of the option a bare number picked (`picked`)
MARKS = ("[answer]", "[feedback on ", "[rejected ", "[approved plan", PICKED)
ANSWER_MAX = 2000  # one answer's words kept (a pasted plan edit can be long; the raw log has all)

_SAID = "to tell you how to proceed, the user said:"
_ASKED = "user has answered your questions:"
_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')
_REFUSED = (
    "the user doesn't want to proceed with this tool use",
    "user rejected tool use",
    "the user doesn't want to take this action right now",
)
_APPROVED = "user has approved your plan"


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= ANSWER_MAX else text[:ANSWER_MAX].rstrip() + " …"


def answered(words: str) -> str:
    """The mark of the user's answer to the agent's question (`<question> → <choice>`, or the
    reply alone when the log keeps no question)."""
    return f"[answer] {_clip(words)}"


def refused(call: ToolCall, words: str | None = None) -> list[str]:
    """A call the user refused, marked so (`approval`), and its mark for the turn's answers:
    `[feedback on <tool>] <words>` when the user said why, else `[rejected <tool>]`."""
    call.approval = "reject"
    return [_refusal(call.name or "a tool call", words.strip() if words else "")]


def _refusal(name: str, words: str) -> str:
    return f"[feedback on {name}] {_clip(words)}" if words else f"[rejected {name}]"


def claude_result(call: ToolCall, block: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """The user's words in one Claude Code `tool_result` block (and its record's
    `toolUseResult`), marked; [] when the result is the tool's own."""
    text = output_to_text(block.get("content"))
    low = text[:600].lower()
    extra = record.get("toolUseResult")
    if call.name == "AskUserQuestion" or _ASKED in low:
        answers = extra.get("answers") if isinstance(extra, dict) else None
        if isinstance(answers, dict) and answers:
            return [answered(f"{q} → {a}") for q, a in answers.items()]
        if _ASKED in low:
            pairs = _PAIR.findall(text[low.find(_ASKED) :])
            return [answered(f"{q} → {a}") for q, a in pairs]
    if _SAID in low or _SAID in text.lower():
        words = text[text.lower().find(_SAID) + len(_SAID) :]
        return (
            [f"[feedback on {call.name or 'a tool call'}] {_clip(words)}"] if words.strip() else []
        )
    if any(r in low for r in _REFUSED):
        return [f"[rejected {call.name or 'a tool call'}]"]
    if _APPROVED in low:
        plan = extra.get("plan") if isinstance(extra, dict) else None
        proposed = call.args.get("plan")
        edited = isinstance(plan, str) and isinstance(proposed, str) and plan != proposed
        title = plan if isinstance(plan, str) else proposed if isinstance(proposed, str) else ""
        first = next((ln.strip("# ").strip() for ln in title.splitlines() if ln.strip()), "")
        mark = "[approved plan, edited by the user]" if edited else "[approved plan]"
        return [f"{mark} {_clip(first)}".rstrip()]
    return []


def approval_response(call: ToolCall | None, payload: dict[str, Any]) -> list[str]:
    """The user's words in a Kimi `ApprovalResponse` (`response`, `feedback`), marked; [] for an
    approval without words."""
    response = str(payload.get("response") or "")
    feedback = payload.get("feedback")
    words = feedback.strip() if isinstance(feedback, str) else ""
    name = call.name if call is not None and call.name else "a tool call"
    if response == "reject":
        return [_refusal(name, words)]
    return [_refusal(name, words)] if words else []


_BARE_PICK = re.compile(r"\s*(?:option\s*|#)?(\d{1,2})[.)]?\s*(?:please|pls)?[.!]?\s*", re.I)
# A menu item: "N. " or "N) " at a line start, maybe bulleted or bold ("- N.", "**N.**",
# "**N**."), or "Option N:"; never "10:30 standup" (a time is not an item).
_ITEM = (
    r"[ \t]*(?:[-*][ \t]*)?(?:\*\*)?(?:option[ \t]*{n}(?:\*\*)?[.):]|{n}(?:\*\*)?[.)])"
    r"(?:\*\*)?[ \t]+(\S.*)"
)
_ANY_ITEM = re.compile(_ITEM.format(n=r"\d{1,2}"), re.I)


def _asks(lines: list[str], at: int) -> bool:
    """Whether the numbered list holding line `at` is a choice: a `?` in the line introducing
    the list or anywhere after its last item (a plain list that asks nothing is not a menu)."""
    start, end = at, at
    for i in range(at - 1, -1, -1):
        if _ANY_ITEM.fullmatch(lines[i]):
            start = i
        elif lines[i].strip() and not lines[i][:1].isspace():
            break
    for i in range(at + 1, len(lines)):
        if _ANY_ITEM.fullmatch(lines[i]):
            end = i
        elif lines[i].strip() and not lines[i][:1].isspace():
            break
    intro = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
    return "?" in intro or any("?" in ln for ln in lines[end + 1 :])


def bare_number(user_text: str) -> int | None:
    """The number a reply made of a number alone ("3", "option 3", "#3") gives, else None."""
    bare = _BARE_PICK.fullmatch(user_text)
    return int(bare.group(1)) if bare else None


def picked(user_text: str, previous_answer: str) -> list[str]:
    """The option a bare number (`bare_number`) picks from the last numbered menu of the previous
    answer, marked `[picked] 3. <option>`; [] when the text is more than a number, the answer has
    no such item, or its list asks nothing (no `?` before or after it)."""
    n = bare_number(user_text)
    if n is None:
        return []
    item = re.compile(_ITEM.format(n=n), re.I)
    lines = previous_answer.splitlines()
    found = [(i, m) for i, ln in enumerate(lines) if (m := item.fullmatch(ln))]
    if not found or not _asks(lines, found[-1][0]):
        return []
    option = found[-1][1].group(1).replace("**", "").strip()
    return [f"{PICKED}{n}. {_clip(option)}"]


def joined(user_text: str, answers: list[str]) -> str:
    """The turn's user text with its answers after it, one a line."""
    return user_text + "".join(f"\n{a}" for a in answers)


def user_words(turn: Turn) -> str:
    """What the user said in `turn`, as its refined row holds it: the prompt, the words it was
    steered with while running (`[steer] …`), then the answers given as tool results."""
    steered = turn.user_text + "".join(f"\n[steer] {s}" for s in turn.steer_inputs)
    return joined(steered, turn.answers)


def said(answers: list[str]) -> str:
    """The answers as one clause for a summary, in the user's words: "rejected Edit: keep it",
    "Push the tag? → Yes", "approved plan Phase 5"."""
    out = []
    first = sorted(answers, key=lambda a: 0 if a.startswith(("[feedback", "[rejected")) else 1)
    for a in first:
        mark, _, words = a.partition("] ")
        mark = mark.lstrip("[")
        if mark.startswith("feedback on "):
            out.append(f"rejected {mark[12:]}: {words}")
        elif mark == "answer":
            out.append(words)
        else:
            out.append(f"{mark.rstrip(']')} {words}".strip())
    return "; ".join(out)
