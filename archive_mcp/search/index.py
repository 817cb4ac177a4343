"""The search index of one workspace: a derived cache under `cache/search/`.

Two segments, `base` and `delta`, each holding BM25 postings, a small metadata frame (for
filters and hits) and the turns' vectors. A refresh compares the refined and embedding files
with the manifest: a few changed sessions are rebuilt into `delta` (their `base` rows are masked);
many changes rebuild `base`. Staleness costs two `stat` calls: every refined or embedding write
is an atomic rename, which changes its folder's mtime.
"""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.ingest.store import session_file_stem
from archive_mcp.refiners.embed import token_source
from archive_mcp.search.lexical import Postings, index_terms
from archive_mcp.search.ondisk import open_rows, read_rows
from archive_mcp.search.projection import Projection, exact_of, scan, write_int8, write_projection
from archive_mcp.search.sentences import Sentence, Tokens
from archive_mcp.search.texts import Texts, TextWriter, TurnText
from archive_mcp.workspaces import (
    Workspace,
    atomic_write_json,
    held_elsewhere,
    locked,
    read_json,
)

INDEX_VERSION = 9  # 3: stemmed terms, dates as text; 4: vectors as raw float16 (vectors.f16); 5: + int8 when large; 6: + texts; 7: + principal projection when large; 8: + runs of a path's parts (`index_terms`); 9: + a Windows path's runs as its slash form
DELTA_SHARE = 0.25  # rebuild base when the changed sessions hold more than this share of turns
META_COLUMNS = [
    "session_id",
    "agent",
    "turn",
    "started_at",
    "source",
    "status",
    "kinds",
    "files",
    "tools",
    "raw_ref",
]
TEXT_CAP = 3000
BUILD_CHUNK = 256  # session files read at once while building
BUILD_BYTES = 32 << 20  # and at most this much of them (compressed Parquet; one file at least)
BUILD_ROWS = 65536  # rows of zeros written at once (the rows before the first vector)
READ_ROWS = 16384  # vector rows read at once when they stream from disk (faster than 65536: cache)
DENSE_MAX_BYTES = 256 << 20  # float32 vectors kept in memory up to this; larger ones stream (int8)
PROJECTED_ROWS = 32768  # from this many rows a segment's scan goes through a projection (speed.md)


def date_text(started: datetime | None) -> str:
    """A turn's date as words a question may use: "8 May 2023 Monday"."""
    return f"{started.day} {started:%B %Y %A}" if started else ""


# The fields of a turn its index text is made of, in this order. The summary, keywords and
# session title cost LoCoMo up to 0.009 R@5 but find the coding queries' turns; measured held out
# with other field sets (`bench/textbook.py --index-fields`, bench/results/retrieval.md).
INDEXED = ("date", "summary", "request", "answer", "tools", "files", "keywords", "title")


def doc_text(row: dict[str, Any]) -> str:
    """What a turn is searchable as: the request, the answer, tools, files, summary, its date."""
    calls = " ".join(
        f"{c['name']} {c['args_summary']} {c['result_summary']}" for c in row["tool_calls"] or []
    )
    parts = {
        "date": date_text(row["started_at"]),
        "summary": row["summary"] or "",
        "request": (row["user_text"] or "")[:TEXT_CAP],
        "answer": (row["assistant_text"] or "")[:TEXT_CAP],
        "tools": calls,
        "files": " ".join(row["files"] or []),
        "keywords": " ".join(row["keywords"] or []),
        "title": row["title"] or "",
    }
    return "\n".join(parts[k] for k in INDEXED)


@dataclass
class Segment:
    postings: Postings
    meta: pl.DataFrame
    vectors: np.ndarray | None  # float16 (n, dim), rows without a vector are zero
    has_vector: np.ndarray  # bool (n,)
    # Past DENSE_MAX_BYTES the vectors are also kept as int8 with a scale per row, which a
    # query scans four times faster than float16 (converting float16 is the cost).
    quantized: tuple[np.ndarray, np.ndarray] | None = None
    texts: Texts | None = None  # what hits and re-scoring read of each row (search/texts.py)
    # with the int8 copy, each row in a few principal directions (search/projection.py)
    projection: Projection | None = None

    @staticmethod
    def write(ws: Workspace, files: list[Path], model: str | None, folder: Path) -> dict[str, int]:
        """Build the segment of these refined files into `folder`; its turns per session id.

        Memory stays bounded whatever the workspace's size: the files are read a few at a time
        (`_chunks`), their postings spill to sorted runs on disk (`Postings.write`), their vectors
        are appended to `vectors.f16`, their texts to `texts.bin` and their metadata is written as
        one part per chunk and then streamed into `meta.parquet`. Nothing of the segment stays in memory: `load` maps it.
        """
        folder.mkdir(parents=True, exist_ok=True)
        cols = [*META_COLUMNS[:8], "tool_calls", "raw_ref", "summary", "user_text"]
        cols += ["assistant_text", "keywords", "title", "content_hash"]
        parts = folder / "meta.parts"
        parts.mkdir(exist_ok=True)
        turns: dict[str, int] = {}
        written: list[Path] = []  # metadata parts, in row order

        def docs(vectors: _VectorWriter, texts: TextWriter) -> Iterator[list[str]]:
            # While `Postings.write` pulls the documents, each chunk's metadata part, vectors and
            # texts are written too: one read of the refined files feeds all four.
            for chunk in _chunks(files):
                df = pl.read_parquet([str(f) for f in chunk], columns=cols)
                meta = df.with_columns(
                    pl.col("tool_calls")
                    .list.eval(pl.element().struct.field("name"))
                    .alias("tools"),
                ).select(META_COLUMNS)
                written.append(parts / f"{len(written)}.parquet")
                meta.write_parquet(written[-1])
                for session, n in meta.group_by("session_id").len().iter_rows():
                    turns[session] = turns.get(session, 0) + n
                vectors.add(df.select("session_id", "agent", "turn", "content_hash"))
                for r in df.iter_rows(named=True):
                    texts.add(r)
                    yield index_terms(doc_text(r))

        with (
            _VectorWriter(ws, model, folder / "vectors.f16") as vectors,
            TextWriter(folder, token_source(model) if files else None) as texts,
        ):
            Postings.write(docs(vectors, texts), folder / "postings")
        if written:
            pl.scan_parquet(written).sink_parquet(folder / "meta.parquet")
        else:
            pl.DataFrame(schema={c: pl.Null for c in META_COLUMNS}).write_parquet(
                folder / "meta.parquet"
            )
        shutil.rmtree(parts)
        has = vectors.has_vector()
        np.save(folder / "has_vector.npy", has)
        if vectors.dim and streams(len(has), vectors.dim):
            write_int8(folder, len(has), vectors.dim)
        if vectors.dim and (streams(len(has), vectors.dim) or len(has) >= PROJECTED_ROWS):
            write_projection(folder, len(has), vectors.dim, has)
        return turns

    def dense(self) -> np.ndarray | None:
        """The vectors as float32 in memory when that stays small; else None (stream from disk)."""
        if self.vectors is None:
            return None
        if not hasattr(self, "_dense"):
            self._dense = (
                None if streams(*self.vectors.shape) else np.asarray(self.vectors, np.float32)
            )
        return self._dense

    @classmethod
    def load(cls, folder: Path) -> Segment:
        has = np.load(folder / "has_vector.npy")
        vec_path = folder / "vectors.f16"
        vectors = None
        if vec_path.exists() and has.shape[0]:
            size = vec_path.stat().st_size
            dim = size // (2 * has.shape[0])
            if dim == 0 or size != 2 * has.shape[0] * dim:
                raise _damaged(
                    folder, f"{vec_path.name} holds {size} bytes for {has.shape[0]} rows"
                )
            vectors = np.memmap(vec_path, np.float16, "r", shape=(has.shape[0], dim))
        quantized = None
        if vectors is not None and (folder / "vectors.q8").exists():
            q8, scales = folder / "vectors.q8", np.load(folder / "scales.npy")
            if q8.stat().st_size != vectors.size or scales.shape != (vectors.shape[0],):
                raise _damaged(
                    folder, f"{q8.name} or scales.npy do not fit {vectors.shape[0]} rows"
                )
            quantized = (open_rows(q8, np.int8, vectors.shape), scales)
        projection = Projection.load(folder, *vectors.shape) if vectors is not None else None
        return cls(
            Postings.load(folder / "postings"),
            # read whole, then parsed: a rebuild swapping the folder meanwhile leaves this read on
            # the old bytes (Polars reading the path may take the footer from one file and the
            # pages from the next, and panic)
            pl.read_parquet(io.BytesIO((folder / "meta.parquet").read_bytes())),
            vectors,
            has,
            quantized,
            Texts.load(folder, has.shape[0]),
            projection,
        )


def _damaged(folder: Path, what: str) -> ValueError:
    return ValueError(
        f"the search cache is damaged ({what}): delete {folder.parent} and search again to rebuild it"
    )


def streams(rows: int, dim: int) -> bool:
    """Are vectors of this size too large to hold as float32 (`DENSE_MAX_BYTES`)? Then they
    stream from disk, and the index keeps an int8 copy for that scan."""
    return rows * dim * 4 > DENSE_MAX_BYTES


def _chunks(files: list[Path]) -> Iterator[list[Path]]:
    """The files in order, at most `BUILD_CHUNK` files or `BUILD_BYTES` of them at a time (one
    file at least): a few long sessions weigh as much as hundreds of short ones."""
    chunk: list[Path] = []
    size = 0
    for f in files:
        try:
            n = f.stat().st_size
        except OSError:
            n = 0
        if chunk and (len(chunk) >= BUILD_CHUNK or size + n > BUILD_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(f)
        size += n
    if chunk:
        yield chunk


class _VectorWriter:
    """The rows' stored vectors (float16, zero where a row has none), appended chunk by chunk.

    Each chunk of rows reads only its own sessions' embedding files and takes a row's vector from
    its own session's file; rows that come before the first vector (whose width is not known yet)
    are written as zeros once it is.
    """

    def __init__(self, ws: Workspace, model: str | None, path: Path) -> None:
        self.ws, self.model, self.path = ws, model, path
        self.has: list[np.ndarray] = []
        self.dim = 0
        self.pending = 0  # rows before the first vector
        self.file: Any = None

    def add(self, keys: pl.DataFrame) -> None:
        has = np.zeros(keys.height, bool)
        self.has.append(has)
        emb = self._embeddings(keys["session_id"].unique(maintain_order=True).to_list())
        if emb is None and not self.dim:
            self.pending += keys.height
            return
        if emb is not None and not self.dim:
            self.dim = emb.schema["vector"].size  # type: ignore[union-attr]
            self.file = self.path.open("wb")
            for start in range(0, self.pending, BUILD_ROWS):
                np.zeros((min(BUILD_ROWS, self.pending - start), self.dim), np.float16).tofile(
                    self.file
                )
        block = np.zeros((keys.height, self.dim), np.float16)
        if emb is not None:
            joined = keys.with_row_index("row").join(
                emb, on=["session_id", "agent", "turn", "content_hash"], how="inner"
            )
            rows = joined["row"].to_numpy()
            block[rows] = joined["vector"].to_numpy().astype(np.float16)
            has[rows] = True
        block.tofile(self.file)

    def _embeddings(self, sessions: list[str]) -> pl.DataFrame | None:
        """This model's vectors of these sessions, each row with its session id."""
        if self.model is None:
            return None
        paths = {
            str(self.ws.embeddings_dir / f"{session_file_stem(s)}.parquet"): s for s in sessions
        }
        paths = {p: s for p, s in paths.items() if Path(p).exists()}
        if not paths:
            return None

        def read(files: list[str]) -> pl.DataFrame:
            return (
                pl.scan_parquet(files, include_file_paths="path")
                .select("agent", "turn", "content_hash", "model", "vector", "path")
                .filter(pl.col("model") == self.model)
                .collect()
            )

        try:
            emb = read(list(paths))
        except (
            pl.exceptions.PolarsError
        ):  # files of different vector widths (another model's, not re-embedded yet)
            frames = [read([p]) for p in paths]
            frames = [f for f in frames if f.height]
            if not frames:
                return None
            emb = pl.concat(frames)
        emb = emb.with_columns(
            session_id=pl.col("path").replace_strict(paths, return_dtype=pl.String)
        ).drop("model", "path")
        return emb if emb.height else None

    def has_vector(self) -> np.ndarray:
        """Which rows have a vector."""
        return np.concatenate(self.has) if self.has else np.zeros(0, bool)

    def __enter__(self) -> _VectorWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()


# A Polars panic (a BaseException) on a file replaced while it was read is retried like an error.
PANIC: type[BaseException] = getattr(pl.exceptions, "PanicException", Exception)
REBUILD_TRIES = 5  # builds that may meet a refined file purged or replaced while they read it


class WorkspaceIndex:
    """Loaded lazily, refreshed when the workspace's refined files change."""

    def __init__(self, ws: Workspace, model: str | None) -> None:
        self.ws = ws
        self.model = model
        self.folder = ws.cache_dir / "search"
        self.segments: list[Segment] = []
        self.alive = np.zeros(0, bool)
        self.meta = pl.DataFrame()
        self._stamp: tuple[int, int] | None = None
        self.build_seconds = 0.0
        self.behind: str | None = None  # set while answering from an index older than the files

    # --- freshness -------------------------------------------------------------------------
    def _dir_stamp(self) -> tuple[int, int]:
        def mt(p: Path) -> int:
            try:
                return p.stat().st_mtime_ns
            except FileNotFoundError:
                return 0

        return mt(self.ws.refined_dir), mt(self.ws.embeddings_dir)

    def _file_stats(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for folder, slot in ((self.ws.refined_dir, 0), (self.ws.embeddings_dir, 2)):
            if not folder.is_dir():
                continue
            for p in folder.glob("*.parquet"):
                st = p.stat()
                out.setdefault(p.stem, [0, 0, 0, 0])[slot : slot + 2] = [st.st_mtime_ns, st.st_size]
        return out

    def refresh(self) -> WorkspaceIndex:
        """Load the index, rebuilding it first when the refined files changed.

        An up-to-date index is loaded without any lock, so a search never waits on an ingest
        holding the workspace; rebuilds are serialised by the cache's own lock (an ingest never
        takes it), and the folder is swapped in by rename.
        """
        for attempt in range(REBUILD_TRIES):
            stamp = self._dir_stamp()
            if stamp == self._stamp:
                self.behind = None
                return self
            if self._serve_behind():
                return self
            try:
                if not self._load_unlocked(stamp):
                    with locked(self.ws.cache_dir):
                        manifest = read_json(self.folder / "manifest.json", {}) or {}
                        if not self._fresh(manifest, stamp):
                            manifest = self._rebuild(manifest, stamp)
                        self._load(manifest)
            except (FileNotFoundError, pl.exceptions.ComputeError, PANIC):
                # A refined file was purged or replaced while the build read it: the set it
                # started from is gone, so build again from the new one.
                if attempt == REBUILD_TRIES - 1:
                    raise
                continue
            self._stamp = stamp
            self.behind = None
            return self
        return self

    def _serve_behind(self) -> bool:
        """While a writer (an ingest, a purge) holds the workspace, or another process builds
        this index, answer from the last index built, whole as it was, instead of rebuilding (or
        waiting) on every call as the files change under it: a search during a long ingest
        stays fast and sees the sessions of one consistent set. The first call after the writer
        lets go rebuilds as usual."""
        if not (held_elsewhere(self.ws.root) or held_elsewhere(self.ws.cache_dir)):
            return False
        if not self.segments:  # a fresh process: the last index on disk, if it is usable
            try:
                manifest = json.loads((self.folder / "manifest.json").read_text(encoding="utf-8"))
                if not self._usable(manifest) or len(manifest.get("stamp", [])) != 2:
                    return False
                self._load(manifest)
                self._stamp = (int(manifest["stamp"][0]), int(manifest["stamp"][1]))
            except (Exception, PANIC):  # noqa: BLE001 - none or mid-swap: build as usual
                self.segments = []
                return False
        self.behind = "the workspace is being written: answered from the index built before"
        return True

    def needs_build(self) -> bool:
        """Would a refresh build (not only load)? The cache on disk is older than the refined
        and embedding files. Two stats, and the manifest read when this process's copy is old."""
        stamp = self._dir_stamp()
        if stamp == self._stamp or self._serve_behind():
            return False
        return not self._fresh(read_json(self.folder / "manifest.json", {}) or {}, stamp)

    def _usable(self, manifest: Any) -> bool:
        """An index this process can read: this format's version, built with this model."""
        return (
            isinstance(manifest, dict)
            and manifest.get("version") == INDEX_VERSION
            and manifest.get("model") == self.model
        )

    def _fresh(self, manifest: dict[str, Any], stamp: tuple[int, int]) -> bool:
        return self._usable(manifest) and manifest.get("stamp") == list(stamp)

    def _load_unlocked(self, stamp: tuple[int, int]) -> bool:
        """Load a fresh index without a lock; False when it is stale or was swapped meanwhile."""
        path = self.folder / "manifest.json"
        try:
            text = path.read_text(encoding="utf-8")
            manifest = json.loads(text)
            if not self._fresh(manifest, stamp):
                return False
            self._load(manifest)
            return path.read_text(encoding="utf-8") == text
        except (Exception, PANIC):  # noqa: BLE001 - a half-swapped folder: lock, read again
            return False

    def _rebuild(self, manifest: dict[str, Any], stamp: tuple[int, int]) -> dict[str, Any]:
        t = time.perf_counter()
        stats = self._file_stats()
        valid = self._usable(manifest)
        base = manifest.get("base", {}) if valid else {}
        changed = sorted(s for s, st in stats.items() if base.get(s) != st)
        removed = [s for s in base if s not in stats]
        base_turns = max(int(manifest.get("base_turns", 0)), 1)
        changed_turns = sum(int(manifest.get("turns", {}).get(s, 50)) for s in changed)
        names = (  # only the files `stats` saw: one written since is indexed by the next refresh
            {p.stem: p for p in self.ws.refined_dir.glob("*.parquet") if p.stem in stats}
            if self.ws.refined_dir.is_dir()
            else {}
        )
        rebuild_base = not valid or not base or changed_turns > DELTA_SHARE * base_turns
        for stale in [
            *self.folder.parent.glob("search.tmp*"),
            *self.folder.parent.glob("search.old*"),
        ]:
            shutil.rmtree(
                stale, ignore_errors=True
            )  # left by a killed build (we hold the cache lock)
        tmp = self.folder.with_name(f"search.tmp{time.time_ns()}")
        try:
            if rebuild_base:
                stems = sorted(names)
                turns = Segment.write(self.ws, [names[s] for s in stems], self.model, tmp / "base")
                Segment.write(self.ws, [], self.model, tmp / "delta")
                base = {s: stats[s] for s in stems}
                manifest = {
                    "version": INDEX_VERSION,
                    "model": self.model,
                    "base": base,
                    "base_turns": sum(turns.values()),
                    "turns": {session_file_stem(k): v for k, v in turns.items()},
                    "dead_sessions": [],
                    "delta_sessions": [],
                }
            else:
                shutil.copytree(self.folder / "base", tmp / "base")
                stems = [s for s in changed if s in names]
                turns = Segment.write(self.ws, [names[s] for s in stems], self.model, tmp / "delta")
                # the delta's sessions count their real turns when the next refresh weighs its changes
                known = {k: v for k, v in manifest.get("turns", {}).items() if k not in removed}
                manifest = {
                    **manifest,
                    "dead_sessions": sorted(set(changed) | set(removed)),
                    "delta_sessions": stems,
                    "turns": {**known, **{session_file_stem(k): v for k, v in turns.items()}},
                }
            manifest["stamp"] = list(stamp)
            atomic_write_json(tmp / "manifest.json", manifest)
        except BaseException:
            shutil.rmtree(
                tmp, ignore_errors=True
            )  # a failed build leaves nothing (it may weigh GBs)
            raise
        old = self.folder.with_name(f"search.old{time.time_ns()}")
        if self.folder.exists():
            self.folder.rename(old)
        tmp.rename(self.folder)
        shutil.rmtree(old, ignore_errors=True)
        self.build_seconds = time.perf_counter() - t
        return manifest

    def _load(self, manifest: dict[str, Any]) -> None:
        self.segments = [Segment.load(self.folder / "base"), Segment.load(self.folder / "delta")]
        dead = set(manifest.get("dead_sessions", []))
        base_alive = np.ones(self.segments[0].meta.height, bool)
        if dead and self.segments[0].meta.height:
            stems = (
                self.segments[0]
                .meta["session_id"]
                .map_elements(session_file_stem, return_dtype=pl.String)
            )
            base_alive = ~stems.is_in(list(dead)).to_numpy()
        self.alive = np.concatenate([base_alive, np.ones(self.segments[1].meta.height, bool)])
        frames = [s.meta for s in self.segments if s.meta.height]
        self.meta = (
            pl.concat(frames, how="vertical_relaxed")
            if frames
            else pl.DataFrame(schema={c: pl.String for c in META_COLUMNS})
        )

    # --- access ----------------------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return int(self.alive.shape[0])

    def has_vectors(self) -> bool:
        return any(bool(s.has_vector.any()) for s in self.segments)

    def texts(self, docs: list[int]) -> list[TurnText]:
        """The text records of these docs (indices over the segments, as `meta` rows)."""
        out = []
        first = self.segments[0].meta.height if self.segments else 0
        for d in docs:
            seg, row = (self.segments[0], d) if d < first else (self.segments[1], d - first)
            out.append(seg.texts.get(row) if seg.texts is not None else TurnText())
        return out

    def sentence_ids(self, docs: list[int], tokens: object) -> list[list[Sentence]] | None:
        """The docs' sentences as token ids of `tokens` (search/sentences.py); None unless
        `tokens` reads ids and every doc's segment stored them with its tokenizer."""
        key = tokens.key if isinstance(tokens, Tokens) else None
        first, out = self.segments[0].meta.height, []
        for d in docs:
            seg, row = (self.segments[0], d) if d < first else (self.segments[1], d - first)
            ids = seg.texts.sentences if seg.texts is not None else None
            if ids is None or ids.key != key:
                return None
            out.append(ids.get(row))
        return out

    def exact_cosine(self, query: np.ndarray, docs: list[int]) -> np.ndarray:
        """The exact cosine of these docs with `query` (0 where a doc has no vector), of an
        index with a projection: what `cosine` gives a shortlisted row (int8 or float32)."""
        at, out = np.asarray(docs, np.int64), np.zeros(len(docs), np.float32)
        bounds = [0, self.segments[0].meta.height, self.n_docs]
        for seg, lo, hi in zip(self.segments, bounds, bounds[1:], strict=False):
            rows, scale = seg.quantized if seg.quantized is not None else (seg.dense(), None)
            mine = np.flatnonzero((at >= lo) & (at < hi))
            if rows is not None and mine.size:  # a segment's docs at once, rows ascending
                mine = mine[np.argsort(at[mine])]
                r = at[mine] - lo
                out[mine] = exact_of(rows, r, query, None if scale is None else scale[r])
        return out

    def cosine(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine of every doc with `query` (unit vectors; estimated beyond a shortlist where a
        segment has a projection) and which docs have one."""
        sims, has = [], []
        q = query.astype(np.float32)
        for s in self.segments:
            n = s.meta.height
            out = np.zeros(n, np.float32)
            if s.vectors is not None and n:
                dense = s.dense()
                rows, scale = (dense, None) if dense is not None else s.quantized or (None, None)
                if s.projection is not None and rows is not None:
                    out = s.projection.cosine(q, rows, scale, s.has_vector)
                elif dense is not None:
                    out = scan(dense, q)
                else:
                    rows, scale = s.quantized if s.quantized is not None else (s.vectors, None)
                    for a in range(0, n, READ_ROWS):  # block by block, pages released after each
                        out[a : a + READ_ROWS] = (
                            read_rows(rows, a, min(a + READ_ROWS, n)).astype(np.float32) @ q
                        )
                    if scale is not None:
                        out *= scale
            sims.append(out)
            has.append(s.has_vector if n else np.zeros(0, bool))
        return np.concatenate(sims), np.concatenate(has)
