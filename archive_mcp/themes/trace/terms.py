"""The terms of a theme's turns and their TF-IDF rows (`term_matrix`), which pairing compares.

A turn's terms depend on its text alone: words of three letters or more that are not stopwords,
identifiers kept whole, CJK runs as bigrams. Tokenising is most of the matrix's cost and a trace
tokenises every member turn, so each text's terms are kept for the next trace (by the text itself:
a changed turn is a different text, nothing is invalidated by hand). The IDF and the matrix are
the theme's own and are computed every time, from the terms in the order one Polars pass over all
the texts gives them, so the matrix is the same whichever texts were kept.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import scipy.sparse as sp

from archive_mcp.refiners.text import STOPWORDS
from archive_mcp.themes.trace.recent import Recent

_CJK = "\u3400-\u9fff"
_WORD = "[^\\W\\d][\\w.-]*[^\\W_]|[" + _CJK + "]+"  # words (identifiers whole) or a CJK run
# the refined summary's own words ("Asked: … Did: edited x.ts; committed … Outcome: …") say nothing of a topic
_TEMPLATE = {
    "asked",
    "did",
    "outcome",
    "edited",
    "committed",
    "ran",
    "read",
    "grep",
    "glob",
    "installed",
    "failed",
    "task",
    "bash",
    "created",
}
_STOP = pl.Series(sorted(STOPWORDS | _TEMPLATE), dtype=pl.String)
KEPT = 20_000  # texts whose terms are kept at most (least recently used go first)


def tokenize(texts: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The texts' terms in one vectorised Polars pass (row, w): the words, then the CJK bigrams."""
    words = (
        pl.DataFrame({"w": texts}, schema={"w": pl.String})
        .with_row_index("row")
        .with_columns(pl.col("w").str.to_lowercase().str.extract_all(_WORD))
        .explode("w")
        .drop_nulls("w")
    )
    cjk = pl.col("w").str.contains(f"^[{_CJK}]")
    latin = words.filter(
        ~cjk & (pl.col("w").str.len_chars() > 2) & ~pl.col("w").is_in(_STOP.implode())
    )
    grams = (
        words.filter(cjk)  # CJK has no spaces: the bigrams of each run
        .with_columns(
            pl.int_ranges(0, pl.max_horizontal(pl.col("w").str.len_chars() - 1, 1)).alias("at")
        )
        .explode("at")
        .select("row", pl.col("w").str.slice(pl.col("at"), 2))
    )
    return latin, grams


class TextTerms:
    """Each text's terms (its words and its CJK bigrams), kept by a 128-bit digest of the text
    (thread-safe, least recently used first out beyond `most`). A text's words are kept as one
    string joined by newlines (terms hold no whitespace): a few hundred bytes a text."""

    def __init__(self, most: int = KEPT) -> None:
        self.kept: Recent[tuple[int, int], tuple[str, str]] = Recent(most)

    def terms(self, texts: list[str]) -> tuple[np.ndarray, pl.Series]:
        """(row, term) of every term of `texts`: every text's words in order, then every text's
        bigrams, as `tokenize` over all of them gives them."""
        series = pl.Series(texts, dtype=pl.String)
        keys = list(zip(series.hash(1).to_list(), series.hash(2).to_list(), strict=True))
        got = [self.kept.get(k) for k in keys]
        todo: dict[tuple[int, int], int] = {}  # each text not kept yet, once
        for i, (k, g) in enumerate(zip(keys, got, strict=True)):
            if g is None:
                todo.setdefault(k, i)
        if todo:
            fresh = dict(zip(todo, self._split([texts[i] for i in todo.values()]), strict=True))
            for k, g in fresh.items():
                self.kept.keep(k, g)
            got = [g if g is not None else fresh[k] for k, g in zip(keys, got, strict=True)]
        parts = [g[0] for g in got] + [g[1] for g in got]  # type: ignore[index]
        counts = [p.count("\n") + 1 if p else 0 for p in parts]
        rows = np.repeat(np.tile(np.arange(len(texts), dtype=np.int64), 2), counts)
        joined = "\n".join(p for p in parts if p)
        words = pl.Series("w", [joined] if joined else [], dtype=pl.String).str.split("\n")
        return rows, words.explode() if joined else pl.Series("w", [], dtype=pl.String)

    @staticmethod
    def _split(texts: list[str]) -> list[tuple[str, str]]:
        """`tokenize` of `texts`, as each text's (words, bigrams), each joined by newlines."""
        out = [["", ""] for _ in texts]
        for side, frame in enumerate(tokenize(texts)):
            each = frame.group_by("row", maintain_order=True).agg(pl.col("w").str.join("\n"))
            for row, w in zip(each["row"].to_list(), each["w"].to_list(), strict=True):
                out[row][side] = w
        return [(a, b) for a, b in out]


TERMS = TextTerms()


def term_matrix(texts: list[str]) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Unit rows of TF-IDF (1 + log tf, IDF over `texts`), the terms and their IDF: words of three
    letters or more that are not stopwords, identifiers kept whole, CJK runs as bigrams."""
    n = len(texts)
    rows, words = TERMS.terms(texts)
    # terms by their 64-bit hash: one numeric unique instead of a dictionary lookup per word
    _, first, codes = np.unique(words.hash().to_numpy(), return_index=True, return_inverse=True)
    vocab = words.gather(first).to_numpy()
    width = max(1, len(vocab))
    key, tf = np.unique(rows * width + codes.astype(np.int64), return_counts=True)
    rows, cols = key // width, key % width
    idf = np.log1p(n / (1 + np.bincount(cols, minlength=len(vocab)))).astype(np.float32)
    m = sp.csr_matrix(
        ((1 + np.log(tf.astype(np.float32))) * idf[cols], (rows, cols)),
        shape=(n, len(vocab)),
        dtype=np.float32,
    )
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1 / np.where(norms == 0, 1, norms)) @ m), vocab, idf
