"""Theme labels: the words a cluster or a stretch of a timeline is named by (BERTopic's class-based
TF-IDF over the words a person would use), and a label no other cluster of a run has."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import polars as pl

from archive_mcp.refiners.text import STOPWORDS, is_cjk, words
from archive_mcp.search.lexical import ENGLISH_STOPWORDS


def class_tfidf(docs_by_class: dict[Any, list[list[str]]], top: int = 5) -> dict[Any, list[str]]:
    """Distinctive words per class (BERTopic's c-TF-IDF): tf in the class x log(1 + A / f)."""
    return class_tfidf_counts(
        {
            c: Counter(t for doc in docs for t in doc if _label_token(t))
            for c, docs in docs_by_class.items()
        },
        top,
    )


def class_tfidf_of(frame: pl.DataFrame, cls: str, words: str, top: int = 5) -> dict[Any, list[str]]:
    """`class_tfidf` of a frame's list-of-words column by its class column (lowercased words),
    counted by Polars: a theme's timeline has a thousand turns of keywords."""
    counts: dict[Any, Counter[str]] = {
        c: Counter() for c in frame[cls].unique(maintain_order=True).to_list()
    }
    pairs = (
        frame.select(
            cls, pl.col(words).cast(pl.List(pl.String)).list.eval(pl.element().str.to_lowercase())
        )
        .explode(words)
        .drop_nulls(words)
        .group_by(cls, words)
        .len()
    )
    keep = {w for w in pairs[words].unique().to_list() if _label_token(w)}
    for c, w, n in pairs.filter(pl.col(words).is_in(list(keep))).iter_rows():
        counts[c][w] = n
    return class_tfidf_counts(counts, top)


def class_tfidf_counts(counts: dict[Any, Counter[str]], top: int = 5) -> dict[Any, list[str]]:
    """`class_tfidf` from the label words counted per class."""
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    avg = sum(sum(c.values()) for c in counts.values()) / max(1, len(counts))
    out = {}
    for cls, c in counts.items():
        n = sum(c.values()) or 1
        scored = {t: (k / n) * math.log(1 + avg / total[t]) for t, k in c.items()}
        out[cls] = [t for t, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
    return out


def label_words(text: str, keywords: list[str]) -> list[str]:
    """Words a person would use for a label: whole words of the user's text and the turn's
    keywords (identifiers kept whole), CJK only as whole short phrases, never bigram fragments."""
    out = []
    for w in [*words(text), *keywords]:
        if is_cjk(w):
            if 2 <= len(w) <= 4:
                out.append(w)
        elif (
            w.isascii()
            and not w.startswith(("<", "/"))
            and "--" not in w
            and sum(ch.isalpha() for ch in w) >= max(3, 2 * len(w) // 3)
        ):
            out.append(w.lower())  # words, not dates, versions or numbered fragments
    return out


def _label_token(t: str) -> bool:
    if is_cjk(t):
        return len(t) >= 2
    return (
        len(t) >= 3
        and t not in STOPWORDS
        and t not in ENGLISH_STOPWORDS
        and not t.isdigit()
        and t not in _LABEL_NOISE
    )


# The summary's template words and tool names, and chat filler a person would not name a topic by
# (function words are ENGLISH_STOPWORDS: "them", "they", "same" made labels like "them / they").
_LABEL_NOISE = frozenset(
    "asked did outcome edited ran failed readfile strreplacefile writefile shell glob grep "
    "done file files line lines code cool nice great good sure thanks thank please "
    "yeah yep really actually just still even also maybe perhaps".split()
)


def unique_label(words: list[str], taken: set[str], cid: int) -> str:
    """A label of a cluster's first three words, one no other cluster of this run has (each is
    found by its label). When it repeats, a later word takes the third place, so the difference
    shows where a list cuts a long label; then more of its words; else its id. Added to `taken`."""
    tries = (
        [words[:3]]
        + [words[:2] + [w] for w in words[3:]]
        + [words[:n] for n in range(4, len(words) + 1)]
    )
    label = next((lab for t in tries if t and (lab := " / ".join(t)).casefold() not in taken), None)
    if label is None:
        label = f"{' / '.join(words[:3])} ({cid})" if words else f"cluster {cid}"
    taken.add(label.casefold())
    return label
