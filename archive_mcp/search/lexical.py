"""BM25 over code- and CJK-aware tokens, as numpy postings, with fuzzy term expansion.

A `Postings` is immutable: built once from tokenised documents, saved as .npy files, loaded
with memory mapping. Scoring a query touches only the postings of its terms.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process

from archive_mcp.refiners.text import tokens

K1, B = 1.2, 0.75

# Snowball's English stopword list (function words only: no "run", "use", "test", ...).
ENGLISH_STOPWORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing would should
could ought i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd
she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't
haven't hadn't doesn't don't didn't won't wouldn't shan't shouldn't can't cannot couldn't
mustn't let's that's who's what's here's there's when's where's why's how's a an the and but if
or because as until while of at by for with about against between into through during before
after above below to from up down in out on off over under again further then once here there
when where why how all any both each few more most other some such no nor not only own same so
than too very s t d ll re ve m don didn doesn isn wasn aren couldn wouldn shouldn
""".split())


def _stemmer() -> Callable[[list[str]], list[str]]:
    try:
        import Stemmer  # PyStemmer: the C build of the Snowball stemmers

        return Stemmer.Stemmer("english").stemWords  # type: ignore[no-any-return]
    except ImportError:
        import snowballstemmer

        return snowballstemmer.stemmer("english").stemWords  # type: ignore[no-any-return]


_STEM = _stemmer()
_STEMS: dict[str, str] = {}


def stem(word: str) -> str:
    """The Snowball stem of a lowercase word (cached: a vocabulary is small)."""
    out = _STEMS.get(word)
    if out is None:
        out = _STEM([word])[0]
        if len(_STEMS) < 500_000:
            _STEMS[word] = out
    return out


def analyse(text: str, drop_stopwords: bool = False) -> list[str]:
    """Index and query terms: code-aware tokens with plain English words stemmed (Snowball).

    Identifiers (`parse_config`, `a.b`, paths) stay whole beside their stemmed parts, CJK
    characters and bigrams pass through. Stopwords stay in the index (BM25's idf weighs them
    down; dropping them cost the generated paraphrase queries more than it gained on LoCoMo,
    see bench/RESULTS.md); highlighting drops them.
    """
    out = []
    for t in tokens(text):
        if drop_stopwords and t in ENGLISH_STOPWORDS:
            continue
        out.append(stem(t) if t.isalpha() and t.isascii() else t)
    return out


class Postings:
    def __init__(self, vocab: list[str], offsets: np.ndarray, doc_ids: np.ndarray, tfs: np.ndarray,
                 doc_len: np.ndarray) -> None:
        self.vocab = vocab
        self.term_id = {t: i for i, t in enumerate(vocab)}
        self.offsets, self.doc_ids, self.tfs, self.doc_len = offsets, doc_ids, tfs, doc_len
        self.n_docs = int(doc_len.shape[0])
        self._by_len: dict[int, list[str]] | None = None
        self._similar: dict[tuple[str, int, float], list[tuple[str, float]]] = {}

    @classmethod
    def build(cls, docs: Iterable[list[str]]) -> Postings:
        term_id: dict[str, int] = {}
        t_ids: list[np.ndarray] = []
        d_ids: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        lengths: list[int] = []
        for d, doc_terms in enumerate(docs):
            c = Counter(doc_terms)
            lengths.append(len(doc_terms))
            if not c:
                continue
            t_ids.append(np.fromiter((term_id.setdefault(t, len(term_id)) for t in c), np.int32, len(c)))
            counts.append(np.fromiter(c.values(), np.float32, len(c)))
            d_ids.append(np.full(len(c), d, np.int32))
        doc_len = np.asarray(lengths, np.float32)
        if not t_ids:
            return cls([], np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), doc_len)
        terms, docs_a, tfs = np.concatenate(t_ids), np.concatenate(d_ids), np.concatenate(counts)
        order = np.argsort(terms, kind="stable")
        offsets = np.zeros(len(term_id) + 1, np.int64)
        offsets[1:] = np.cumsum(np.bincount(terms, minlength=len(term_id)))
        vocab = [""] * len(term_id)
        for t, i in term_id.items():
            vocab[i] = t
        return cls(vocab, offsets, docs_a[order], tfs[order], doc_len)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("offsets", "doc_ids", "tfs", "doc_len"):
            np.save(folder / f"{name}.npy", getattr(self, name))
        (folder / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Postings:
        arrays = {n: np.load(folder / f"{n}.npy", mmap_mode="r") for n in ("offsets", "doc_ids", "tfs", "doc_len")}
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        return cls(vocab, **arrays)

    def df(self, term: str) -> int:
        i = self.term_id.get(term)
        return 0 if i is None else int(self.offsets[i + 1] - self.offsets[i])

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        i = self.term_id.get(term)
        if i is None:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return np.asarray(self.doc_ids[a:b]), np.asarray(self.tfs[a:b])

    def similar_terms(self, token: str, limit: int = 6, cutoff: float = 78.0) -> list[tuple[str, float]]:
        """Vocabulary terms within a few edits of `token` (typos, half-remembered names)."""
        if len(token) < 4 or not token.isascii():
            return []
        key = (token, limit, cutoff)
        if key not in self._similar:
            buckets = self.by_length()
            n = len(token)
            candidates = [t for size in range(n - 2, n + 3) for t in buckets.get(size, ())]
            found = process.extract(token, candidates, scorer=fuzz.ratio, score_cutoff=cutoff, limit=limit)
            if len(self._similar) > 4096:
                self._similar.clear()
            self._similar[key] = [(term, score) for term, score, _ in found if term != token]
        return self._similar[key]

    def by_length(self) -> dict[int, list[str]]:
        if self._by_len is None:
            buckets: dict[int, list[str]] = {}
            for t in self.vocab:
                if 4 <= len(t) <= 40 and t.isascii() and not t.isdigit():
                    buckets.setdefault(len(t), []).append(t)
            self._by_len = buckets
        return self._by_len


def bm25(parts: list[Postings], weighted_terms: list[tuple[str, float]], alive: list[np.ndarray]) -> list[np.ndarray]:
    """BM25 scores per part (segments share idf and average length), terms weighted."""
    n_docs = sum(int(m.sum()) for m in alive) or 1
    total_len = sum(float(p.doc_len[m].sum()) for p, m in zip(parts, alive, strict=True))
    avgdl = total_len / n_docs or 1.0
    scores = [np.zeros(p.n_docs, np.float32) for p in parts]
    for term, weight in weighted_terms:
        df = sum(p.df(term) for p in parts)
        if df == 0:
            continue
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        for p, s in zip(parts, scores, strict=True):
            docs, tf = p.postings(term)
            if docs.size == 0:
                continue
            dl = p.doc_len[docs]
            s[docs] += weight * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
    return scores
