"""Which lines of a loaded turn `matching` keeps: those that hold the most of the words asked.

A read with `matching: "slower hint Recommended useState localStorage"` wants the passages about
that, not every line of a file that names `useState`. Over a turn's lines (its words and its tool
calls' input and output) a word weighs the more, the fewer lines hold it; of three words or more,
the heaviest line sets the bar, and a line is kept when its words weigh half as much or more. A
word that only lines under the bar hold is not dropped silently: its heaviest line is kept too.
One or two words keep every line that holds one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from archive_mcp.refiners.text import clip, json_lines


def lines_of(text: str) -> list[str]:
    """The lines of `text`; a one-line JSON text's escaped newlines end lines too (an edit's old
    and new text read line by line)."""
    return text.splitlines() if "\n" in text else json_lines(text)


ALL_OF = 3  # words from which a line must hold the most of them, not any one
_JOINERS = str.maketrans("", "", "-_")


def folded(text: str) -> str:
    """`text` as words are matched in it: lower case, without `-` and `_` (`align-items` finds
    `alignItems` and `align_items`)."""
    return text.lower().translate(_JOINERS)


@dataclass(frozen=True)
class Matcher:
    """The words of a `matching` read (lower case), each word's weight and the weight a line's
    words must reach to be kept (`rescued` lines are kept whatever they weigh)."""

    words: tuple[str, ...]  # folded
    weights: tuple[float, ...] = ()  # each word's (none: 1 each)
    least: float = 0.0  # a line holding a word is kept when its words weigh this much ...
    rescued: frozenset[str] = frozenset()  # ... or when it is one of these (folded)

    @classmethod
    def any_of(cls, words: Sequence[str]) -> Matcher:
        """A line is kept when it holds any of `words` (`folded`, as the lines are)."""
        return cls(tuple(dict.fromkeys(f for w in words if (f := folded(w).strip()))))

    @classmethod
    def over(cls, words: Sequence[str], texts: Iterable[str]) -> Matcher:
        """The bar set by the lines of `texts` (one turn's): a word weighs log(lines / lines
        holding it), at least 1; of ALL_OF words or more, a line is kept when its words weigh
        half the heaviest line's or more, and for each word only lines under that bar hold, its
        heaviest line; of fewer, a line holding any is kept."""
        asked = cls.any_of(words).words
        lines = [folded(ln) for t in texts for ln in lines_of(t)]
        held = [sum(w in ln for ln in lines) for w in asked]
        weights = tuple(max(1.0, math.log(len(lines) / n)) if n else 1.0 for n in held)
        weighed = cls(asked, weights)
        scored = [(weighed._weigh(ln), ln) for ln in lines]
        least = max((s for s, _ in scored), default=0.0) / 2 if len(asked) >= ALL_OF else 0.0
        rescued = set()
        for w in asked:
            holding = [(s, ln) for s, ln in scored if w in ln]
            if holding and max(s for s, _ in holding) < least:
                rescued.add(max(holding, key=lambda h: h[0])[1])  # the first of the heaviest
        return cls(asked, weights, least, frozenset(rescued))

    def weight(self, line: str) -> float:
        """What the words `line` holds weigh together."""
        return self._weigh(folded(line))

    def _weigh(self, low: str) -> float:  # `low` folded already
        weights = self.weights or (1.0,) * len(self.words)
        return sum(x for w, x in zip(self.words, weights, strict=True) if w in low)

    def keeps(self, line: str) -> bool:
        """Whether one line is kept."""
        low = folded(line)
        weight = self._weigh(low)
        return (weight > 0 and weight >= self.least) or low in self.rescued

    def holds(self, text: str) -> bool:
        """Whether any line of `text` (a paragraph, a call's input or output) is kept."""
        return any(self.keeps(ln) for ln in lines_of(text))

    def around(self, line: str, width: int) -> str:
        """`line` whole within `width`; else `width` characters around the first word it holds
        (its head when it holds none), `…` where it is cut."""
        if len(line) <= width:
            return line
        # folded position -> line's (a character may lower to two: "İ" -> "i̇")
        kept = [i for i, c in enumerate(line) if c not in "-_" for _ in c.lower()]
        low = folded(line)
        at = min((kept[i] for w in self.words if 0 <= (i := low.find(w)) < len(kept)), default=0)
        start = max(0, min(at - width // 3, len(line) - width))
        return (
            ("…" if start else "") + line[start : start + width] + "…" * (start + width < len(line))
        )

    def names(self, tool: str) -> bool:
        """Whether a tool's name is one of the words (its calls are all kept), and weighs as
        much as a kept line must."""
        weight = self.weight(tool)
        return weight > 0 and weight >= self.least


AROUND = 2  # lines shown each side of a line of a tool's input or output that holds a word
HEAD_LINE = 300  # characters of its first line shown with them
UNMATCHED = 400  # characters shown of a call's input or output that holds none of the words
LINE_MAX = 400  # characters of one kept line (a minified file, a one-line log): around its word


def line_passages(
    text: str, words: Sequence[str] | Matcher, around: int = AROUND, head: bool = True
) -> str:
    """The lines of `text` (a tool's input or output: code, a file, a log) that `words` keep
    (any of them, or a `Matcher`'s bar), with `around` lines each side, after its first line
    when `head` (an input's: what was called on, a path, a command; cut at HEAD_LINE), `…`
    between runs (and before the first when it is not the first line); when none does
    (the call matched by its name or its other half), its first UNMATCHED characters. A one-line
    JSON text's escaped newlines end lines too: an edit's old and new text are read line by
    line. A line longer than LINE_MAX (minified JSON, a one-line log) shows LINE_MAX characters
    around its first word."""
    matcher = words if isinstance(words, Matcher) else Matcher.any_of(words)
    lines = lines_of(text)
    hits = [i for i, line in enumerate(lines) if matcher.keeps(line)]
    if not matcher.words or not hits:  # the call matched by its other half: this one's head
        return text if not matcher.words or len(text) <= UNMATCHED else clip(text, UNMATCHED)
    near = {j for i in hits for j in range(i - around, i + around + 1) if 0 <= j < len(lines)}
    keep = sorted(near | ({0} if head else set()))
    runs: list[str] = []
    for k, j in enumerate(keep):
        if (k and j != keep[k - 1] + 1) or (not k and j):
            runs.append("…")
        line = lines[j]
        runs.append(matcher.around(line, LINE_MAX) if j in near else clip(line, HEAD_LINE))
    tail = ["…"] if keep[-1] < len(lines) - 1 else []
    return "\n".join(runs + tail)


LONG = 12  # lines from which a paragraph `passages` keeps is cut to the lines that hold a word
LONG_CHARS = 2000  # ... and characters


def passages(text: str, words: Sequence[str] | Matcher) -> str:
    """The paragraphs of `text` with a line that `words` keep (any of them, case-insensitive, or
    a `Matcher`'s bar), `…` between them; of a paragraph of LONG lines or more (or over
    LONG_CHARS characters), those lines (`line_passages`)."""
    matcher = words if isinstance(words, Matcher) else Matcher.any_of(words)
    if not matcher.words:
        return text
    # a paragraph's lines as the whole text's (`Matcher.over` split it so): in a text of many
    # lines, a JSON escape in a paragraph ends no line
    split = str.splitlines if "\n" in text else lines_of
    kept = [
        p.strip("\n")
        for p in re.split(r"\n\s*\n", text)
        if any(matcher.keeps(ln) for ln in split(p))
    ]
    # a long paragraph (a pasted log, a long list, one line of minified JSON) shows only its
    # lines that hold the words, each within LINE_MAX
    return "\n…\n".join(
        line_passages(p, matcher) if p.count("\n") >= LONG or len(p) > LONG_CHARS else p
        for p in kept
    )
