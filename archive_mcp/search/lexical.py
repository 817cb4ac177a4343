"""BM25 over code- and CJK-aware tokens, as numpy postings, with fuzzy term expansion.

A `Postings` is immutable: built once from tokenised documents, in memory or written to .npy
files in bounded memory and loaded with memory mapping. Scoring a query touches only the
postings of its terms.
"""

from __future__ import annotations

import json
import shutil
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from archive_mcp.refiners.text import tokens, words
from archive_mcp.search.ondisk import open_npy, read_rows, release

K1, B = 1.2, 0.75
RUN_POSTINGS = (
    4_000_000  # postings held in memory while writing an index; more spill to sorted runs
)
BLOCK_POSTINGS = 4_000_000  # postings merged from the runs at once

# Snowball's English stopword list (function words only: no "run", "use", "test", ...).
ENGLISH_STOPWORDS = frozenset(
    """
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
""".split()
)


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
    down) and, by default, in the query: leaving them out of the query gains LoCoMo 0.010 R@5
    but not the coding queries held out (bench/results/retrieval.md, session 10); highlighting
    drops them.
    """
    out = []
    for t in tokens(text):
        if drop_stopwords and t in ENGLISH_STOPWORDS:
            continue
        out.append(stem(t) if t.isalpha() and t.isascii() else t)
    return out


PATH_MARKS = frozenset("./")  # a word holding one of these is a path or a dotted name
WINDOW = 4  # the most `/`-parts of a path indexed as a term of its own (`locales/en.ts`)


class Terms(list[str]):
    """A document's terms, and the length BM25 weighs it by: that of its words (`analyse`'s),
    so that the runs of a path's parts lengthen no turn."""

    def __init__(self, terms: list[str], length: int) -> None:
        super().__init__(terms)
        self.length = length


def index_terms(text: str) -> Terms:
    """A turn's index terms: `analyse`'s, and of each path the runs of two to WINDOW of its
    `/`-parts and its file's name (`src/locales/en.ts` also as `src/locales`, `locales/en.ts`,
    `en.ts`): a path asked is found where it is part of a longer one, as a term, not as its
    pieces apart. A Windows path's runs are those of its slash form (`C:\\src\\locales\\en.ts`
    holds `locales/en.ts`). A folder's name alone is no new term (`cd /home/a/proj` would make
    `proj` a term of every turn that went there). Their length is `analyse`'s."""
    out = analyse(text)
    length = len(out)
    for word, slashed in _path_words(text):
        low = word.lower()
        parts = [p for p in low.split("/") if p]
        runs = [
            "/".join(parts[i : i + size])
            for size in range(2, min(WINDOW, len(parts)) + 1)
            for i in range(len(parts) - size + 1)
        ]
        if slashed:  # `analyse` has its parts and its file's name as words of their own
            out.extend(runs)
            continue
        pieces = set(tokens(word))
        # every run holds a `/` and every name a `.`: none is a word `analyse` would stem
        out.extend(
            run
            for run in [name for name in parts[-1:] if "." in name] + runs
            if run != low and run not in pieces
        )
    return Terms(out, length)


def _path_words(text: str) -> Iterator[tuple[str, bool]]:
    """The words of `text` that hold a `/`, and of its Windows paths the slash form, each with
    whether it was written with backslashes (`words` splits at a backslash)."""
    for word in words(text):
        if "/" in word:
            yield word, False
    if "\\" in text:
        for chunk in text.split():
            if "\\" in chunk:
                written = set(words(chunk))
                for word in words(chunk.replace("\\", "/")):
                    if "/" in word and word not in written:
                        yield word, True


def path_keys(path: str) -> list[str]:
    """The terms every turn that holds `path` (as `index_terms` indexes it) holds: the path
    itself, or, when it has more `/`-parts than WINDOW, each run of WINDOW of them (inside a
    longer path only its runs are terms)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) <= WINDOW:
        return [path]
    return ["/".join(parts[i : i + WINDOW]) for i in range(len(parts) - WINDOW + 1)]


@dataclass(frozen=True)
class QueryTerms:
    """A query analysed once: its terms (each once, in order), those of its words that are
    not stopwords (`analyse` with and without `drop_stopwords`, from one pass), and the pieces
    of each path or dotted name it holds (`locales/en.ts`: `local`, `en`, `ts`), which count
    only where the path is (`bm25`'s `together`)."""

    terms: list[str]
    content: list[str]
    paths: list[tuple[str, ...]] = field(default_factory=list)  # each path whole, its pieces
    free: frozenset[str] = frozenset()  # terms that count alone: all but a path's pieces

    @classmethod
    def of(cls, query: str) -> QueryTerms:
        terms: dict[str, None] = {}
        content: dict[str, None] = {}
        paths: list[tuple[str, ...]] = []
        free: set[str] = set()
        for word in words(query):
            analysed = []
            for t in tokens(word):
                term = stem(t) if t.isalpha() and t.isascii() else t
                analysed.append(term)
                terms[term] = None
                if t not in ENGLISH_STOPWORDS:
                    content[term] = None
                else:  # a function word names no part of a path (`and/or`): it counts alone
                    free.add(term)
            if len(analysed) > 2 and PATH_MARKS & set(word):  # the word whole, then its pieces
                paths.append(tuple(dict.fromkeys(analysed)))
                free.add(analysed[0])
            else:
                free.update(analysed)
        return cls(list(terms), list(content), paths, frozenset(free))

    def together(self) -> dict[str, list[tuple[str, ...]]]:
        """Each term that counts only as a piece of a path: the paths it is of (each whole, then
        its pieces)."""
        out: dict[str, list[tuple[str, ...]]] = {}
        for path in self.paths:
            for t in path[1:]:
                if t not in self.free:
                    out.setdefault(t, []).append(path)
        return out


class Postings:
    def __init__(
        self,
        vocab: list[str],
        offsets: np.ndarray,
        doc_ids: np.ndarray,
        tfs: np.ndarray,
        doc_len: np.ndarray,
    ) -> None:
        self.vocab = vocab
        self.term_id = {t: i for i, t in enumerate(vocab)}
        self.offsets, self.doc_ids, self.tfs, self.doc_len = offsets, doc_ids, tfs, doc_len
        self.n_docs = int(doc_len.shape[0])
        self._by_len: dict[int, list[str]] | None = None
        self._total_len: float | None = None
        self._similar: dict[tuple[str, int, float], list[tuple[str, float]]] = {}

    @classmethod
    def build(cls, docs: Iterable[list[str]]) -> Postings:
        """Postings of a few documents, held in memory (memories, tests); `write` streams large sets."""
        term_id: dict[str, int] = {}
        lengths: list[int] = []
        parts = list(_doc_postings(docs, term_id, lengths))
        doc_len = np.asarray(lengths, np.float32)
        if not parts:
            return cls(
                [], np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), doc_len
            )
        doc_ids, tfs, counts = _sorted_run(parts, len(term_id))
        offsets = np.zeros(len(term_id) + 1, np.int64)
        offsets[1:] = np.cumsum(counts)
        return cls(_vocab(term_id), offsets, doc_ids, tfs, doc_len)

    @staticmethod
    def write(
        docs: Iterable[list[str]],
        folder: Path,
        run_size: int | None = None,
        block_size: int | None = None,
    ) -> None:
        """Write the postings of `docs` into `folder` in bounded memory (`load` maps them).

        Postings are gathered `run_size` at a time, sorted by term and spilled to disk as a run;
        the runs are then merged term range by term range (`block_size` postings at a time) and
        written in order. Runs hold documents in order and each run is sorted stably, so a term's
        documents come out ascending, exactly as `build` gives them.
        """
        run_size, block_size = run_size or RUN_POSTINGS, block_size or BLOCK_POSTINGS
        folder.mkdir(parents=True, exist_ok=True)
        spill = folder / "runs"
        spill.mkdir(exist_ok=True)
        term_id: dict[str, int] = {}
        lengths = array("f")
        n_runs = 0  # runs spilled, in document order
        held: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        n_held = 0

        def spill_run() -> None:
            nonlocal n_held, n_runs
            doc_ids, tfs, counts = _sorted_run(held, len(term_id))
            doc_ids.tofile(spill / f"{n_runs}.docs")
            tfs.tofile(spill / f"{n_runs}.tfs")
            counts.tofile(spill / f"{n_runs}.counts")
            n_runs += 1
            held.clear()
            n_held = 0

        for part in _doc_postings(docs, term_id, lengths):
            held.append(part)
            n_held += part[0].size
            if n_held >= run_size:
                spill_run()
        if held:
            spill_run()
        offsets = _merge_runs(spill, n_runs, len(term_id), folder, block_size)
        np.save(folder / "offsets.npy", offsets)
        np.save(
            folder / "doc_len.npy",
            np.frombuffer(lengths, np.float32) if lengths else np.zeros(0, np.float32),
        )
        (folder / "vocab.json").write_text(
            json.dumps(_vocab(term_id), ensure_ascii=False), encoding="utf-8"
        )
        shutil.rmtree(spill)

    @classmethod
    def load(cls, folder: Path) -> Postings:
        """Offsets and lengths in memory (small); the postings themselves mapped, read per term."""
        arrays = {
            n: open_npy(folder / f"{n}.npy")
            if n in ("doc_ids", "tfs")
            else np.load(folder / f"{n}.npy")
            for n in ("offsets", "doc_ids", "tfs", "doc_len")
        }
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        return cls(vocab, **arrays)

    def total_len(self, alive: np.ndarray) -> float:
        """The summed length of the docs `alive` marks (of all of them computed once)."""
        if not alive.all():
            return float(self.doc_len[alive].sum())
        if self._total_len is None:
            self._total_len = float(self.doc_len.sum())
        return self._total_len

    def df(self, term: str) -> int:
        i = self.term_id.get(term)
        return 0 if i is None else int(self.offsets[i + 1] - self.offsets[i])

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        i = self.term_id.get(term)
        if i is None:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return read_rows(self.doc_ids, a, b), read_rows(self.tfs, a, b)

    def holds(self, term: str, docs: np.ndarray) -> np.ndarray:
        """Which of `docs` hold `term`: a binary search per doc in its postings through the map
        (a few dozen pages), not a read of them (at 1M turns a frequent term's are 2 MB)."""
        i = self.term_id.get(term)
        a, b = (int(self.offsets[i]), int(self.offsets[i + 1])) if i is not None else (0, 0)
        if a == b or docs.size == 0:
            return np.zeros(docs.size, bool)
        found = _among(docs, self.doc_ids[a:b])
        release(self.doc_ids, a, b)
        return found

    def similar_terms(
        self, token: str, limit: int = 6, cutoff: float = 78.0
    ) -> list[tuple[str, float]]:
        """Vocabulary terms within a few edits of `token` (typos, half-remembered names)."""
        if len(token) < 4 or not token.isascii():
            return []
        key = (token, limit, cutoff)
        if key not in self._similar:
            buckets = self.by_length()
            n = len(token)
            candidates = [t for size in range(n - 2, n + 3) for t in buckets.get(size, ())]
            found = process.extract(
                token, candidates, scorer=fuzz.ratio, score_cutoff=cutoff, limit=limit
            )
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


def _doc_postings(
    docs: Iterable[list[str]], term_id: dict[str, int], lengths: MutableSequence[Any]
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(term ids, doc ids, term counts) of each document that has terms; every length is appended."""
    for d, doc_terms in enumerate(docs):
        c = Counter(doc_terms)
        lengths.append(doc_terms.length if isinstance(doc_terms, Terms) else len(doc_terms))
        if c:
            yield (
                np.fromiter((term_id.setdefault(t, len(term_id)) for t in c), np.int32, len(c)),
                np.full(len(c), d, np.int32),
                np.fromiter(c.values(), np.float32, len(c)),
            )


def _sorted_run(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n_terms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Doc ids and counts sorted by term (stable: documents stay in order) and postings per term."""
    terms = np.concatenate([p[0] for p in parts])
    order = np.argsort(terms, kind="stable")
    doc_ids = np.concatenate([p[1] for p in parts])[order]
    tfs = np.concatenate([p[2] for p in parts])[order]
    return doc_ids, tfs, np.bincount(terms, minlength=n_terms).astype(np.int64)


def _merge_runs(
    spill: Path, n_runs: int, n_terms: int, folder: Path, block_size: int
) -> np.ndarray:
    """Merge the spilled runs into `doc_ids.npy` and `tfs.npy`, one range of terms at a time;
    the terms' offsets. Run k holds `k.docs` and `k.tfs` sorted by term, and `k.counts`, its
    postings per term (shorter than `n_terms` when the vocabulary grew after it)."""
    totals = np.zeros(n_terms, np.int64)
    for k in range(n_runs):
        c = np.fromfile(spill / f"{k}.counts", np.int64)
        totals[: c.size] += c
    offsets = np.zeros(n_terms + 1, np.int64)
    offsets[1:] = np.cumsum(totals)
    n = int(offsets[-1])
    with (
        _NpyOut(folder / "doc_ids.npy", np.int32, n) as out_docs,
        _NpyOut(folder / "tfs.npy", np.float32, n) as out_tfs,
    ):
        cursor = [0] * n_runs  # postings of each run merged so far
        lo = 0
        while (
            lo < n_terms
        ):  # terms lo:hi make a block of about block_size postings (one term at least)
            hi = min(
                n_terms,
                max(
                    lo + 1,
                    int(np.searchsorted(offsets, offsets[lo] + block_size, side="right")) - 1,
                ),
            )
            size = int(offsets[hi] - offsets[lo])
            block_docs = np.empty(size, np.int32)
            block_tfs = np.empty(size, np.float32)
            start = offsets[lo:hi] - offsets[lo]  # where each term of the block starts in it
            filled = np.zeros(hi - lo, np.int64)  # postings of each term placed by earlier runs
            for k in range(n_runs):
                counts_k = _read_items(spill / f"{k}.counts", np.int64, lo, hi)
                m = int(counts_k.sum())
                if m == 0:
                    continue
                term = np.repeat(
                    np.arange(counts_k.size), counts_k
                )  # each posting's term in the block
                first = np.cumsum(counts_k) - counts_k  # where each term starts in this run's slice
                # A posting goes after its term's postings from earlier runs, at its rank in this run.
                dest = start[term] + filled[term] + (np.arange(m) - first[term])
                block_docs[dest] = _read_items(
                    spill / f"{k}.docs", np.int32, cursor[k], cursor[k] + m
                )
                block_tfs[dest] = _read_items(
                    spill / f"{k}.tfs", np.float32, cursor[k], cursor[k] + m
                )
                filled[: counts_k.size] += counts_k
                cursor[k] += m
            out_docs.write(block_docs)
            out_tfs.write(block_tfs)
            lo = hi
    return offsets


def _vocab(term_id: dict[str, int]) -> list[str]:
    vocab = [""] * len(term_id)
    for t, i in term_id.items():
        vocab[i] = t
    return vocab


def _read_items(path: Path, dtype: type, start: int, stop: int) -> np.ndarray:
    """Items [start, stop) of a raw array file (fewer when the file is shorter), read, not mapped."""
    size = np.dtype(dtype).itemsize
    count = min(stop, path.stat().st_size // size) - start
    return (
        np.fromfile(path, dtype, count=count, offset=start * size)
        if count > 0
        else np.zeros(0, dtype)
    )


class _NpyOut:
    """A 1-d .npy file of known length written block by block (no mapping: writes leave RSS alone)."""

    def __init__(self, path: Path, dtype: type, n: int) -> None:
        self.file = path.open("wb")
        np.lib.format.write_array_header_1_0(
            self.file,
            {
                "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                "fortran_order": False,
                "shape": (n,),
            },
        )

    def write(self, block: np.ndarray) -> None:
        block.tofile(self.file)

    def __enter__(self) -> _NpyOut:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def bm25(
    parts: list[Postings],
    weighted_terms: list[tuple[str, float]],
    alive: list[np.ndarray],
    together: Mapping[str, Sequence[tuple[str, ...]]] | None = None,
) -> list[np.ndarray]:
    """BM25 scores per part (segments share idf and average length), terms weighted. A term
    `together` names scores only in the docs that hold one of its paths (each whole, then its
    pieces; `index_terms` indexes a path inside longer ones): `ts` of `locales/en.ts` does not
    count on its own. Where no doc alive holds one of them, the term counts alone: a slash
    between words (`and/or`) names no path, and a path no turn names is found by its pieces."""
    n_docs = sum(int(m.sum()) for m in alive) or 1
    total_len = sum(p.total_len(m) for p, m in zip(parts, alive, strict=True))
    avgdl = total_len / n_docs or 1.0
    scores = [np.zeros(p.n_docs, np.float32) for p in parts]
    held: dict[str, list[np.ndarray]] = {}  # a path: per part, the docs alive that hold it

    def holders(path: str) -> list[np.ndarray]:
        if path not in held:
            held[path] = [_holders(p, path, m) for p, m in zip(parts, alive, strict=True)]
        return held[path]

    for term, weight in weighted_terms:
        df = sum(p.df(term) for p in parts)
        if df == 0:
            continue
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        paths = [g[0] for g in (together.get(term, ()) if together else ())]
        if not all(any(h.size for h in holders(path)) for path in paths):
            paths = []  # a piece of a path no turn holds counts alone (`artists/bands`)
        for i, (p, s) in enumerate(zip(parts, scores, strict=True)):
            docs, tf = p.postings(term)
            if paths:
                ids = np.unique(np.concatenate([holders(path)[i] for path in paths]))
                keep = _among(docs, ids)
                docs, tf = docs[keep], tf[keep]
            if docs.size == 0:
                continue
            # weight·idf·tf·(K1 + 1) / (tf + K1·(1 - B + B·dl / avgdl)), in place: a frequent
            # term's postings are a few hundred thousand at 1M turns
            denom = p.doc_len[docs]
            denom *= np.float32(K1 * B / avgdl)
            denom += np.float32(K1 * (1 - B))
            denom += tf
            tf *= np.float32(weight * idf * (K1 + 1))
            tf /= denom
            s[docs] += tf
    return scores


def _holders(part: Postings, path: str, alive: np.ndarray) -> np.ndarray:
    """The docs of `part` alive that hold `path` (each of its `path_keys`), ascending."""
    first, *rest = path_keys(path)
    docs, _ = part.postings(first)
    for key in rest:
        docs = docs[part.holds(key, docs)]
    return docs[alive[docs]]


def _among(docs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Which of `docs` are in `ids` (ascending): a binary search each."""
    if ids.size == 0:
        return np.zeros(docs.size, bool)
    return np.asarray(ids[np.minimum(np.searchsorted(ids, docs), ids.size - 1)] == docs)
