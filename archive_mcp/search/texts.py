"""The turn texts a query needs after ranking, kept in the index: no refined file is read to
re-score the head of the ranking or to build hits.

Each row is one zlib-compressed JSON record in `texts.bin`, found through `texts.off.npy` (row
i is bytes off[i]:off[i+1]). Both are memory-mapped; a query reads its few dozen rows through
the map and releases their pages (`ondisk.read_rows`), so the store costs no resident memory
whatever the workspace's size. A record holds what the query path uses and no more: the request
and answer cut as the snippet reads them (`SNIPPET_CAP`), the tool calls' three fields, the
summary and title, and the sentences the best-sentence cosine embeds (`split_sentences` of the
whole request and answer, so the cut never changes which sentences count).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archive_mcp.search.ondisk import open_rows, read_rows
from archive_mcp.search.ranking import split_sentences
from archive_mcp.search.sentences import SentenceIds, Tokens, writer

SNIPPET_CAP = 20_000  # characters of the request and of the answer a snippet looks at
HEAD = 2_000  # characters of a candidate's text a second-stage model reads whole


@dataclass(frozen=True)
class TurnText:
    """What search shows and re-scores of one turn."""

    summary: str = ""
    title: str | None = None
    user_text: str = ""  # cut to SNIPPET_CAP
    assistant_text: str = ""  # cut to SNIPPET_CAP
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)  # split_sentences(request + answer)

    @property
    def head(self) -> str:
        """The first HEAD characters of the request and answer (as `f"{user}\\n{answer}"`)."""
        return f"{self.user_text}\n{self.assistant_text}"[:HEAD]

    @classmethod
    def of(cls, row: dict[str, Any]) -> TurnText:
        """A refined row's text record."""
        user, answer = row.get("user_text") or "", row.get("assistant_text") or ""
        return cls(
            summary=row.get("summary") or "",
            title=row.get("title"),
            user_text=user[:SNIPPET_CAP],
            assistant_text=answer[:SNIPPET_CAP],
            tool_calls=[
                {
                    "name": c["name"] or "",
                    "args_summary": c["args_summary"] or "",
                    "result_summary": c["result_summary"] or "",
                }
                for c in row.get("tool_calls") or []
            ],
            sentences=split_sentences(f"{user}\n{answer}"),
        )

    def encode(self) -> bytes:
        calls = [[c["name"], c["args_summary"], c["result_summary"]] for c in self.tool_calls]
        record = [
            self.summary,
            self.title,
            self.user_text,
            self.assistant_text,
            calls,
            self.sentences,
        ]
        return zlib.compress(json.dumps(record, ensure_ascii=False).encode("utf-8"), 1)

    @classmethod
    def decode(cls, blob: bytes) -> TurnText:
        summary, title, user, answer, calls, sentences = json.loads(zlib.decompress(blob))
        return cls(
            summary,
            title,
            user,
            answer,
            [{"name": n, "args_summary": a, "result_summary": r} for n, a, r in calls],
            sentences,
        )


class TextWriter:
    """Appends records to `texts.bin` and writes the offsets when closed; with `tokens`, the
    sentences' token ids too (search/sentences.py)."""

    def __init__(self, folder: Path, tokens: Tokens | None = None) -> None:
        self.folder = folder
        self.file = (folder / "texts.bin").open("wb")
        self.offsets = [0]
        self.sentences = writer(folder, tokens)

    def add(self, row: dict[str, Any]) -> None:
        record = TurnText.of(row)
        blob = record.encode()
        self.file.write(blob)
        self.offsets.append(self.offsets[-1] + len(blob))
        if self.sentences is not None:
            self.sentences.add(record.sentences)

    def __enter__(self) -> TextWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()
        np.save(self.folder / "texts.off.npy", np.asarray(self.offsets, np.int64))
        if self.sentences is not None:
            self.sentences.close()


class Texts:
    """The text records of one segment, memory-mapped."""

    def __init__(
        self, offsets: np.ndarray, blob: np.ndarray, sentences: SentenceIds | None = None
    ) -> None:
        self.offsets, self.blob = offsets, blob
        self.sentences = sentences  # the sentences' token ids, when the index stored them

    @classmethod
    def load(cls, folder: Path, rows: int) -> Texts:
        offsets = np.load(folder / "texts.off.npy")
        size = (folder / "texts.bin").stat().st_size
        if offsets.shape != (rows + 1,) or int(offsets[-1]) != size:
            raise ValueError(
                f"the search cache is damaged (texts of {offsets.shape[0] - 1} rows, "
                f"{size} bytes, for {rows} rows): delete {folder.parent} and search again "
                "to rebuild it"
            )
        blob = open_rows(folder / "texts.bin", np.uint8, (size,)) if size else np.zeros(0, np.uint8)
        return cls(offsets, blob, SentenceIds.load(folder, rows))

    def get(self, row: int) -> TurnText:
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        return TurnText.decode(read_rows(self.blob, a, b).tobytes())
