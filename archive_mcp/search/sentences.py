"""The turns' sentences as token ids, stored when the index is built: a hybrid query re-scores
its top 40 turns by their best sentence (`ranking.best_of_sentences`), and tokenizing those
sentences again at each query cost about 0.9 ms of its 15 at 50k turns, reading their text
records (zlib, JSON) about 1 more (bench/results/speed.md).

Each row is one record in `sentences.bin`, found through `sentences.off.npy` (row i is bytes
off[i]:off[i+1]), read with one `preadv` (`ondisk.read_rows`), no page kept:

    uint32 k | uint32 crc32 of each sentence's text (k) | uint32 end of each sentence's ids (k)
    | uint16 token ids of the k sentences, one after the other

`sentences.json` names the tokenizer (`Tokens.key`): a query reads the ids only with an embedder
of the same key, and embeds each distinct sentence once, as the text path does (distinct by text:
its crc32 and its ids), in the same order, so the cosines are the text path's to the bit.
"""

from __future__ import annotations

import json
import zlib
from array import array
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from archive_mcp.search.ondisk import open_rows, read_rows

MAX_VOCAB = 1 << 16  # ids are stored as uint16: a larger vocabulary stores none
BATCH = 4096  # sentences tokenized at once while building
KNOWN = 32_768  # distinct sentences whose ids a build remembers (then forgets them all)

Sentence = tuple[int, bytes]  # (crc32 of the text, its ids as uint16 bytes): distinct by text


@runtime_checkable
class Tokens(Protocol):
    """An embedder that embeds token ids as it embeds the texts they came from."""

    @property
    def key(self) -> str:
        """Which tokenizer: ids stored by one are read only by an embedder of the same key."""
        ...

    @property
    def vocabulary(self) -> int:
        """How many token ids there are."""
        ...

    def token_ids(self, texts: list[str]) -> list[list[int]]: ...

    def embed_ids(self, ids: list[list[int]]) -> np.ndarray:
        """`embed` of the texts these ids came from, to the bit."""
        ...


class SentenceWriter:
    """Appends each row's sentences as token ids to `sentences.bin`; offsets written when closed.
    Rows wait until `BATCH` sentences are pending, then their new distinct sentences are
    tokenized at once (turns repeat lines: "Done.", a tool's output)."""

    def __init__(self, folder: Path, tokens: Tokens) -> None:
        self.folder, self.tokens = folder, tokens
        self.file = (folder / "sentences.bin").open("wb")
        self.offsets = array("q", [0])
        self.pending: list[list[str]] = []
        self.waiting = 0
        self.known: dict[str, bytes] = {}

    def add(self, sentences: list[str]) -> None:
        self.pending.append(sentences)
        self.waiting += len(sentences)
        if self.waiting >= BATCH:
            self._flush()

    def _flush(self) -> None:
        new = list(dict.fromkeys(s for row in self.pending for s in row if s not in self.known))
        if len(self.known) + len(new) > KNOWN:
            self.known.clear()
            new = list(dict.fromkeys(s for row in self.pending for s in row))
        for s, found in zip(new, self.tokens.token_ids(new), strict=True):
            self.known[s] = np.asarray(found, np.uint16).tobytes()
        for row in self.pending:
            ids = [self.known[s] for s in row]
            ends = np.cumsum([len(b) // 2 for b in ids], dtype=np.uint32)
            crcs = np.array([zlib.crc32(s.encode("utf-8")) for s in row], np.uint32)
            record = b"".join([np.uint32(len(row)).tobytes(), crcs.tobytes(), ends.tobytes(), *ids])
            self.file.write(record)
            self.offsets.append(self.offsets[-1] + len(record))
        self.pending, self.waiting = [], 0

    def close(self) -> None:
        self._flush()
        self.file.close()
        np.save(self.folder / "sentences.off.npy", np.frombuffer(self.offsets, np.int64))
        (self.folder / "sentences.json").write_text(
            json.dumps({"tokenizer": self.tokens.key}), encoding="utf-8"
        )


def writer(folder: Path, tokens: Tokens | None) -> SentenceWriter | None:
    """A writer of the sentences' ids for this tokenizer (None: none, or too large a vocabulary)."""
    return SentenceWriter(folder, tokens) if tokens and tokens.vocabulary <= MAX_VOCAB else None


class SentenceIds:
    """The sentence records of one segment, memory-mapped."""

    def __init__(self, key: str, offsets: np.ndarray, blob: np.ndarray) -> None:
        self.key, self.offsets, self.blob = key, offsets, blob

    @classmethod
    def load(cls, folder: Path, rows: int) -> SentenceIds | None:
        """The segment's records, or None when it has none (built without a tokenizer)."""
        path = folder / "sentences.bin"
        if not (folder / "sentences.json").exists():
            return None
        key = json.loads((folder / "sentences.json").read_text(encoding="utf-8"))["tokenizer"]
        offsets = np.load(folder / "sentences.off.npy")
        size = path.stat().st_size
        if offsets.shape != (rows + 1,) or int(offsets[-1]) != size:
            raise ValueError(
                f"the search cache is damaged (sentences of {offsets.shape[0] - 1} rows, "
                f"{size} bytes, for {rows} rows): delete {folder.parent} and search again "
                "to rebuild it"
            )
        blob = open_rows(path, np.uint8, (size,)) if size else np.zeros(0, np.uint8)
        return cls(str(key), offsets, blob)

    def get(self, row: int) -> list[Sentence]:
        """The row's sentences, in order."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        data = read_rows(self.blob, a, b).tobytes()
        k = int(np.frombuffer(data, np.uint32, 1)[0])
        crcs = np.frombuffer(data, np.uint32, k, 4).tolist()
        ends = np.frombuffer(data, np.uint32, k, 4 + 4 * k).tolist()
        at = 4 + 8 * k
        out = []
        for crc, start, end in zip(crcs, [0, *ends][:k], ends, strict=True):
            out.append((crc, data[at + 2 * start : at + 2 * end]))
        return out


def best_of_ids(q: np.ndarray, rows: list[list[Sentence]], tokens: Tokens) -> np.ndarray:
    """`ranking.best_of_sentences` of the rows whose sentences these are, to the bit: for each
    row, the best cosine between `q` and one of its sentences (-1 if none)."""
    owner = [i for i, row in enumerate(rows) for _ in row]
    pieces = [s for row in rows for s in row]
    out = np.full(len(rows), -1.0, np.float32)
    if pieces:
        distinct = {s: None for s in pieces}
        where = {s: i for i, s in enumerate(distinct)}
        ids = [np.frombuffer(b, np.uint16).tolist() for _, b in distinct]
        sims = tokens.embed_ids(ids) @ q.astype(np.float32)
        at = np.fromiter((where[s] for s in pieces), np.int64, len(pieces))
        np.maximum.at(out, np.asarray(owner), sims.astype(np.float32)[at])
    return out
