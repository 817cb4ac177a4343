"""What a turn is (kinds) and what it is about (keywords), from the request, the answer and the calls.

Noise kinds are marked first (`command`, `compaction`, `continuation`, `api_error`,
`interrupted`); a turn that is only noise gets no work kinds. Work kinds read the user's request
(wrappers removed) for what was asked (a question, a fix, a plan, a choice, a correction) and
the answer and tool calls for what happened (files changed, a fix stated, a change undone).
"""

from __future__ import annotations

import re
from collections import Counter

from .actions import EDIT_TOOLS, call_paths
from .model import ToolCall, Turn
from .notification import LABEL, split
from .summary import strip_ack, user_request
from .text import STOPWORDS, is_cjk, words

SCAN_MAX = 4_000  # kinds and keywords look at the head of long texts only


class Cue:
    """A lowercase pattern plus CJK phrases, matched against lowercased text.

    The phrases are plain substring checks and the pattern runs without IGNORECASE: both much
    faster than one case-insensitive alternation with CJK branches tried at every position. An
    ASCII text (`isascii` is a flag lookup) holds no phrase: the phrases are not even looked at.
    """

    def __init__(self, pattern: str, phrases: str = "") -> None:
        self.rx = re.compile(pattern) if pattern else None
        self.phrases = tuple(phrases.split())
        if any(p.isascii() for p in self.phrases):
            raise ValueError(f"Cue phrases are CJK (ASCII words go in the pattern): {phrases!r}")

    def search(self, text: str) -> bool:
        return (not text.isascii() and any(p in text for p in self.phrases)) or bool(
            self.rx and self.rx.search(text)
        )

    def match(self, text: str) -> bool:
        return (not text.isascii() and any(text.startswith(p) for p in self.phrases)) or bool(
            self.rx and self.rx.match(text)
        )


def _rx(pattern: str, phrases: str = "") -> Cue:
    return Cue(pattern, phrases)


SLASH = re.compile(r"^\s*/[A-Za-z][\w:.-]*(?:\s|$)")
COMPACT_SUMMARY = (
    "this session is being continued from a previous conversation",
    "conversation is summarized below",
    "continued from a previous session",
)
INTERRUPT_MARK = "[request interrupted by user"
REJECTED = (
    "doesn't want to proceed with this tool use",
    "user rejected",
    "request cancelled",
    "tool use was rejected",
    "interrupted by user",
)
API_ERROR = _rx(
    r"^\s*(?:api error|request timed out|overloaded|rate limit|internal server error)|\bapi[_ ]error\b"
)
CONTINUE = _rx(
    r"^(?:system:\s*)?(?:please\s+|ok\s+|okay\s+)?(?:continue|resume|keep going|go on|carry on|"
    r"proceed|go ahead|继续|繼續)\b[\s\w,.!]{0,40}$"
)


def bare_continue(request: str) -> bool:
    """Only "continue" or the like ("go on", "please proceed", "继续"): no request of its own."""
    return len(request) <= 60 and CONTINUE.match(request.strip().lower())


def notified_only(text: str) -> bool:
    """A user message of Claude Code's task notifications (notification.py) and nothing of the
    user's, or only a bare "continue" after them: no request of its own, as a bare one is."""
    notified = split(text)
    return notified.count > 0 and (not notified.said or bare_continue(notified.said))


COMPACT_REST_WORDS = 8  # this many words beside the ask for a compaction: the turn is work
_CLAUSE = re.compile(r"[.;!?\n]+|\s[-—–]\s|,\s*(?:and\s+)?then\b")
COMPACT_ASK = _rx(
    r"(?:^|\s)/compact\b|\bcompact(?:ion)?\b.{0,40}\b(?:message|summary|handoff|context)\b|"
    r"\b(?:let'?s|please|time to)\s+compact\b"
)

QUESTION = _rx(
    r"^(?:what|why|how|where|which|who|whom|whose|when|is|are|was|were|does|do|did|should|"
    r"shall|has|have|could (?:it|this|that|there)|can (?:it|this|that|there|i|we)|explain|"
    r"describe|tell me|any idea|is there|are there|what's|whats|how's|wheres|where's)\b"
)
ASKS_WHY = _rx(
    r"\b(?:whether|is it because|why (?:is|are|does|do|did|was)|how (?:do|does|can|should) (?:i|we)|"
    r"what (?:is|are|does|do)|where (?:do|does|is|are|can) (?:i|we)|which (?:one|is|are))\b"
)
CJK_QUESTION = re.compile(r"[吗嗎呢？]|什么|什麼|为什么|為什麼|怎么|怎麼|如何|是否|哪")
FIX_ASK = _rx(
    r"\b(?:fix|fixes|fixing|bug|bugs|broken|breaks|crash(?:es|ed)?|errors?|exception|traceback|"
    r"fails|failing|failure|not working|doesn'?t work|does not work|isn'?t working|"
    r"wrong|greyed out|stuck|hangs?|debug|regression|actually (?:be|show|work|do)|exceeded|locked out|"
    r"not (?:showing|visible|loading|populating|appearing|updating|saving|found)|"
    r"(?:doesn'?t|does not|isn'?t|aren'?t|won'?t|don'?t) (?:appear|show|load|populate|update|render|"
    r"display|start|run|build|compile|connect)|bugs?)\b",
    "修复 修復 错误 錯誤 失败 失敗 报错 報錯",
)
FIX_DONE = _rx(
    r"\b(?:fixed|fixes the|root cause|the (?:issue|problem|bug|error) (?:was|is)|caused by|"
    r"was (?:failing|broken|wrong|incorrect|outdated|stale|missing)|(?:wasn'?t|weren'?t) being|"
    r"incorrect|mismatch|malformed|resolved|now works|works again|working again|need to authenticate|"
    r"(?:fix|eliminate|resolve|solve) (?:the|this|that|those|these) (?:\w+ )?(?:errors?|issues?|bugs?|problems?))\b",
    "已修复 已修復 已解决 已解決",
)
DEBUGGING = _rx(
    r"\b(?:(?:i (?:can )?see|found|i've found|identified) the (?:issue|problem|bug|culprit)|"
    r"let me (?:fix|debug)|to fix (?:this|the|it)|the (?:issue|problem|bug) (?:is|was)|root cause)\b",
    "问题是 問題是 找到问题 找到問題",
)
PASTED_LOG = re.compile(
    r"(?m)(?:^|console\s*:\s*)\[[a-z][\w .-]{1,30}\]\s+[\w{]"
)  # "[Autopilot] P&L calc: {…"
PLAN_ASK = _rx(
    r"(?<![-:])\bplan(?:s|ning)?\b(?!-)|\broadmap\b|\bmilestone\b|\bphases?\b|/gsd:(?:plan-phase|"
    r"create-roadmap|new-milestone|new-project|discuss-phase|add-phase)|\bstrateg(?:y|ic)\b|"
    r"\bpropose\b|\boptions\b",
    "计划 計劃 规划 規劃 方案",
)
PLAN_FILE = _rx(r"(?:^|[/\\])(?:[\w.-]*PLAN[\w.-]*|ROADMAP[\w.-]*)\.md$")
PLAN_WRITTEN = re.compile(
    r"(?:^|[-_/\\])PLAN\.md$"
)  # a plan the agent committed to (08-01-PLAN.md)
TEST_ASK = _rx(
    r"\b(?:tests?|testing|pytest|vitest|jest|unit[- ]tests?|coverage|test suite|e2e|"
    r"test cases?|tdd)\b",
    "测试 測試",
)
TEST_FILE = _rx(r"(?:^|[/\\])(?:test_[\w.-]+|[\w.-]+[._](?:test|spec)\.\w+|[\w.-]+_test\.\w+)$")
DECIDE_ASK = _rx(
    r"^\s*(?:option\s*)?(?:[1-9]|[a-d])(?:\s*[.):!,]|\s*$|\s+(?:is|it|sounds|please|then|works|"
    r"looks|for|and)\b)|^(?:yes|yep|yeah|sure|ok(?:ay)?|agreed|sounds good)\b[\s,.!]+"
    r"(?!please\b|to all\b|continue\b|go ahead\b|do it\b|proceed\b|thanks?\b|fix\b|plan\b)\w|"
    r"\b(?:go with|let'?s (?:go with|use|do|make)|switch to|i (?:want|prefer|'d prefer|would prefer) "
    r"(?:to use|to keep|to preserve|to hand|to go)|we should (?:absolutely |definitely )?use|"
    r"i want to use|(?:use|do|keep) \S+(?: \S+)? instead|,? instead,? (?!of\b)|decided?|choose|chose|prefer)\b",
    "决定 決定 采用 採用 改用 选择 選擇 不用保留",
)
DECIDE_DONE = _rx(
    r"\bdecision\s*[:：]|\b(?:decided|chose|chosen|going with|opted|settled on|option [a-d1-9] it is|"
    r"we'll (?:use|go with)|let'?s proceed with)\b",
    "决定 決定 改用 采用 採用",
)
SHOULD_WE = _rx(r"\b(?:should|shall) (?:we|i)\b|\b(?:do|would) you (?:recommend|suggest)\b")
AGREE = _rx(r"^(?:yes|no|yep|nope|definitely|absolutely|i'd recommend|i recommend|recommended?)\b")
REVERSE_ASK = _rx(
    r"^\s*(?:no|nope|wait|stop|oops|actually|hmm no)\b|\b(?:undo|revert|roll ?back|go back|"
    r"put (?:it|that|them) back|change (?:it|that) back|bring back|back to how|no longer|"
    r"instead|don'?t|do not|dont|not what i (?:meant|want|wanted|asked)|that'?s not|"
    r"still wrong|never ?mind|scratch that|we'?ve lost|was better)\b",
    "不對 不对 不是这样 撤销 撤銷 回滚 回滾 改回 恢复 恢復 不要",
)
REVERSE_DONE = _rx(
    r"\b(?:reverted|reversed|restored|rolled back|undid|undone|switched back|changed back|"
    r"back to (?:the )?(?:original|previous|clean|how))\b",
    "回滚 回滾 撤销 撤銷 改回",
)
REFACTOR = _rx(r"\b(?:refactor\w*|rename[ds]?|renaming|clean ?up|simplif(?:y|ied))\b", "重构 重構")
STATE_CMD = _rx(
    r"\bgit\s+(?:commit|push|tag|merge|rebase|reset|revert|checkout\s+-b|switch\s+-c|stash|cherry-pick|add)\b|"
    r"\b(?:install|uninstall|upgrade)\b|\b(?:mkdir|rm|mv|cp|touch|chmod|chown|ln|tee)\s|"
    r"\bsed\s+-i\b|(?<![<>=!-])>>?\s*[\w~./$\"']|\bgh\s+(?:pr|release|repo)\s+(?:create|merge|edit)|"
    r"\b(?:systemctl|launchctl|defaults\s+write|winget|scoop|docker\s+(?:run|build|compose))\b"
)

NEW_FILE_TOOLS = {"Write", "WriteFile", "write_file"}  # a plan written anew commits to a course


def _only_asks_to_compact(request: str) -> bool:
    """Does the request ask for a compaction (a /compact message, a hand-off summary) and little
    else? "Option 2 please - build the full manifest …, then a /compact message" decides something:
    it is work, not compaction."""
    head = request[:600].lower()
    if "compact" not in head or not COMPACT_ASK.search(head):  # each of its branches says it
        return False
    rest = " ".join(c for c in _CLAUSE.split(head) if not COMPACT_ASK.search(c))
    return len(rest.split()) < COMPACT_REST_WORDS


def noise_kinds(turn: Turn, raw_user: str, request: str) -> list[str]:
    """The kinds that say a turn is not (only) work: commands, compaction, continuation, errors."""
    head = raw_user[:SCAN_MAX].lower()
    kinds: list[str] = []
    compact_summary = turn.origin == "compaction" or any(p in head[:400] for p in COMPACT_SUMMARY)
    if (
        turn.origin in ("command", "command_output")
        or SLASH.match(raw_user)
        or "<command-name>" in head
        or "<local-command-std" in head
    ):
        kinds.append("command")
    if (
        compact_summary
        or ("command" in kinds and "compacted" in head[:300])
        or _only_asks_to_compact(request)
    ):
        kinds.append("compaction")
    # Claude Code's task notifications are a continuation when the agent did no work after them;
    # when it did, the work is the turn (the labels say `explore`, themes count it as a member)
    notified = not turn.tool_calls and notified_only(raw_user)
    if compact_summary or bare_continue(request) or notified:
        kinds.append("continuation")
    text = turn.assistant_text.strip()[:400].lower()
    if (turn.api_errors and turn.steps and all(s.interrupted for s in turn.steps)) or (
        not turn.tool_calls
        and len(text) < 200
        and (
            turn.api_errors
            or API_ERROR.search(text)
            or API_ERROR.search(turn.synthetic_text[:400].lower())
            or (not text and turn.status == "error")
        )
    ):
        kinds.append("api_error")
    if (
        turn.origin == "interrupt"
        or INTERRUPT_MARK in head[:200]
        or turn.reason in ("blocked", "cancelled")
        or any(
            c.status == "rejected"
            or (c.status == "error" and any(r in c.output_text[:300].lower() for r in REJECTED))
            for c in turn.tool_calls
        )
    ):
        kinds.append("interrupted")
    if turn.status == "error" and "api_error" not in kinds:
        kinds.append("error")  # the agent reported the turn failed (e.g. a Kimi step error)
    return kinds


def debugging(turn: Turn) -> bool:
    """The agent's step texts say it is tracking a defect down ("I can see the issue", "let me fix")."""
    return any(st.text and DEBUGGING.search(st.text[:600].lower()) for st in turn.steps[:8])


def changed_state(calls: list[ToolCall]) -> bool:
    if any(c.name in EDIT_TOOLS for c in calls):
        return True
    for c in calls:
        cmd = c.args.get("command")
        if isinstance(cmd, list):
            cmd = " ".join(str(x) for x in cmd)
        if isinstance(cmd, str) and STATE_CMD.search(cmd[:400].lower()):
            return True
    return False


def kinds_of(turn: Turn, final: str, calls: list[ToolCall]) -> list[str]:
    raw_user = turn.user_text
    request = user_request(raw_user)
    kinds = noise_kinds(turn, raw_user, request)
    notified = split(raw_user)
    if notified.count:  # what was asked is the user's words: a task's summary is not a request
        request = user_request(notified.said)
    typed = turn.origin in ("user", "command") and "compaction" not in kinds
    if kinds and not calls and (not typed or len(final.strip()) < 200 and "command" in kinds):
        return kinds  # only noise: a marker, a command's output, a handoff, an API error
    ask = (strip_ack(request[:SCAN_MAX]) or request[:SCAN_MAX]).lower()
    # A handoff summary recounts earlier work: only the request says what this turn is.
    answer = "" if "compaction" in kinds else final[:SCAN_MAX].lower()
    lines = [ln.strip() for ln in request[:SCAN_MAX].splitlines() if ln.strip()]
    paths = [p for c in calls if c.name in EDIT_TOOLS for p in call_paths(c)]
    work: list[str] = []
    agreed = SHOULD_WE.search(ask[:600]) and AGREE.match(answer.lstrip("#*> \n"))
    if (
        DECIDE_ASK.search(ask[:600])
        or DECIDE_ASK.match(request.strip().lower())
        or DECIDE_DONE.search(answer[:600])
        or agreed
        or any(
            PLAN_WRITTEN.search(p) for c in calls if c.name in NEW_FILE_TOOLS for p in call_paths(c)
        )
    ):
        work.append("decision")
    if REVERSE_ASK.search(ask[:600]) or REVERSE_DONE.search(answer[:600]):
        work.append("reversal")
    if (
        FIX_ASK.search(ask[:800])
        or PASTED_LOG.search(ask[:800])
        or FIX_DONE.search(answer[:600])
        or ("compaction" not in kinds and debugging(turn))
    ):
        work.append("fix")
    if PLAN_ASK.search(ask[:800]) or any(PLAN_FILE.search(p) for p in paths):
        work.append("plan")
    if TEST_ASK.search(ask[:800]) or any(TEST_FILE.search(p.lower()) for p in paths):
        work.append("test")
    if REFACTOR.search(ask[:800]):
        work.append("refactor")
    if (
        any(ln.endswith(("?", "？")) for ln in lines[:12])
        or QUESTION.match(ask)
        or (not ask[:300].isascii() and CJK_QUESTION.search(ask[:300]))
        or ASKS_WHY.search(ask[:300])
    ):
        work.append("question")
    if changed_state(calls):
        work.append("change")
    elif calls:
        work.append("explore")
    return kinds + work


_TAGS = frozenset(
    "command-name command-message command-args local-command-stdout local-command-stderr "
    "local-command-caveat system-reminder task-notification task-id output-file http https www".split()
)
LABEL_HEAD = 300
_HOME_DIRS = frozenset(
    "users home documents desktop downloads applications library appdata tmp var opt usr "
    "etc mnt volumes".split()
)
# Generic report verbs: in nearly every answer, so they tell one turn from another poorly.
_KW_STOP = frozenset(
    "see add added adds done create created complete completed update updated new check "
    "checked sure via".split()
)
# The labels `user_request` puts on wrapped records, and the interruption marker: not the turn's words.
_LABELS = re.compile(
    r"^\((?:empty )?command output\)|^" + re.escape(LABEL) + r"[:)]|"
    r"\[request interrupted by user[^\]]*\]",
    re.I,
)


def keyword_words(text: str) -> list[str]:
    """The words keywords are drawn from: Windows paths read as paths, wrapper labels dropped."""
    text = _LABELS.sub(" ", text[:LABEL_HEAD]) + text[LABEL_HEAD:]  # the labels open the request
    return words(text.replace("\\", "/") if "\\" in text else text)


def keywords_of(text: str, limit: int = 12) -> list[str]:
    """Distinctive words of one turn: identifiers and file names first; stopwords, path
    fragments and wrapper tags out; CJK kept."""
    counts: Counter[str] = Counter()
    for w in keyword_words(text[: 2 * SCAN_MAX]):
        if w.isascii():
            if "/" in w:
                parts = [p for p in w.split("/") if p]
                if parts and (
                    len(parts) > 2 or "." in parts[-1][1:] or parts[0].lower() in _HOME_DIRS
                ):
                    w = parts[-1]  # a path: its file or folder name, not its home folders
            low = w.lower()
            if (
                len(w) < 3
                or low in STOPWORDS
                or low in _KW_STOP
                or low in _TAGS
                or w.isdigit()
                or not w[0].isalnum()
            ):
                continue
            if "_" in w or "." in w or (w != low and w[1:] != w[1:].lower()):
                counts[w] += 2  # identifiers, file names, camelCase: the words people search for
            else:
                counts[low] += 1
        elif is_cjk(w):
            counts[w[:8]] += 1  # a CJK run without spaces is a phrase; keep its head
    return [w for w, _ in counts.most_common(limit)]
