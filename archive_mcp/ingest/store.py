"""Per-session Parquet files of a workspace: refined turns and their embeddings."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.errors import written
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import REFINER
from archive_mcp.refiners.summary import SUMMARY_MAX
from archive_mcp.refiners.text import shorten
from archive_mcp.schema import REFINED, empty_refined, refined_frame
from archive_mcp.workspaces import Workspace, atomic_write_bytes, locked, read_json

_SAFE = re.compile(r"^[A-Za-z0-9_.\-]{1,160}$")
KEY = ["agent", "turn"]


def session_file_stem(session_id: str) -> str:
    """A file name for a session id; ids that are not plain get a stable hashed name."""
    if _SAFE.match(session_id) and not session_id.startswith("."):
        return session_id
    return "s_" + hashlib.sha1(session_id.encode("utf-8")).hexdigest()


def refined_path(ws: Workspace, session_id: str) -> Path:
    return ws.refined_dir / f"{session_file_stem(session_id)}.parquet"


def embeddings_path(ws: Workspace, session_id: str) -> Path:
    return ws.embeddings_dir / f"{session_file_stem(session_id)}.parquet"


def _write_parquet(path: Path, df: pl.DataFrame) -> None:
    with written(path):  # a disk error Polars wraps is an OSError naming the file
        buf = io.BytesIO()
        df.write_parquet(buf, compression="zstd")
        atomic_write_bytes(path, buf.getvalue())


def _read_parquet(path: Path, columns: list[str] | None = None) -> pl.DataFrame:
    """One file read whole, then parsed: a writer replacing it meanwhile (an atomic rename)
    leaves this read on the old bytes. Polars reading the path itself may take the footer
    from one version and the pages from the next ("wrong page size")."""
    return pl.read_parquet(io.BytesIO(path.read_bytes()), columns=columns)


def read_refined(ws: Workspace, session_id: str) -> pl.DataFrame:
    try:  # no exists() first: a purge between the two would make the read fail
        return _read_parquet(refined_path(ws, session_id))
    except FileNotFoundError:
        return empty_refined()


def read_sessions(
    ws: Workspace, session_ids: list[str], columns: list[str], wanted: pl.DataFrame
) -> pl.DataFrame:
    """`columns` of the rows in `wanted` (session_id, agent, turn), read from the sessions'
    refined files. A file purged or replaced since the index was read is skipped, not an error:
    a reader racing a purge sees the session gone (its hits then carry no text)."""
    keys = wanted.select("session_id", "agent", "turn").lazy()
    frames = []
    for sid in session_ids:
        try:
            frames.append(
                _read_parquet(refined_path(ws, sid), columns=columns)
                .lazy()
                .join(keys, on=["session_id", "agent", "turn"], how="semi")
                .collect()
            )
        except (FileNotFoundError, pl.exceptions.ComputeError, OSError):
            continue
    if not frames:
        return empty_refined().select(columns)
    return pl.concat(frames, how="vertical_relaxed")


def merge_refined(
    ws: Workspace, session_id: str, rows: list[dict], replace_all: bool = False
) -> int:
    """Insert or replace rows (by agent, turn) in the session's Parquet; returns rows written."""
    new = refined_frame(rows)
    old = empty_refined() if replace_all else read_refined(ws, session_id)
    if old.height:
        old = old.join(new.select(KEY), on=KEY, how="anti")
    merged = pl.concat([old.select(list(REFINED)), new], how="vertical").sort(KEY)
    _write_parquet(refined_path(ws, session_id), merged)
    return new.height


def read_embeddings(ws: Workspace, session_id: str) -> pl.DataFrame | None:
    try:
        return _read_parquet(embeddings_path(ws, session_id))
    except FileNotFoundError:
        return None


def write_embeddings(
    ws: Workspace,
    session_id: str,
    model: str,
    keys: list[tuple[str, int, str]],
    vectors: np.ndarray,
) -> None:
    """Upsert vectors for (agent, turn, content_hash) keys; rows of other models are dropped."""
    dim = int(vectors.shape[1])
    new = pl.DataFrame(
        {
            "agent": [k[0] for k in keys],
            "turn": [k[1] for k in keys],
            "content_hash": [k[2] for k in keys],
            "model": [model] * len(keys),
            "vector": vectors.astype(np.float32),
        },
        schema={
            "agent": pl.String,
            "turn": pl.Int64,
            "content_hash": pl.String,
            "model": pl.String,
            "vector": pl.Array(pl.Float32, dim),
        },
    )
    old = read_embeddings(ws, session_id)
    if old is not None and old.height and old.schema.get("vector") == new.schema["vector"]:
        old = old.filter(pl.col("model") == model).join(new.select(KEY), on=KEY, how="anti")
        new = pl.concat([old, new], how="vertical")
    _write_parquet(embeddings_path(ws, session_id), new.sort(KEY))


def embedded_hashes(ws: Workspace, session_id: str, model: str) -> dict[tuple[str, int], str]:
    """(agent, turn) -> content_hash of the vectors already stored for `model`."""
    df = read_embeddings(ws, session_id)
    if df is None:
        return {}
    df = df.filter(pl.col("model") == model)
    return {(a, t): h for a, t, h in zip(df["agent"], df["turn"], df["content_hash"], strict=True)}


def carry_over(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> int:
    """Keep model-written summaries of unchanged turns in `new`; count the rows that changed."""
    before = {(r["agent"], r["turn"]): r for r in old}
    changed = 0
    for row in new:
        prev = before.get((row["agent"], row["turn"]))
        if (
            prev is not None
            and "+" in (prev["refiner"] or "")
            and prev["content_hash"] == row["content_hash"]
        ):
            row["summary"] = prev["summary"]
            row["refiner"] = f"{REFINER}+{prev['refiner'].split('+', 1)[1]}"
        if prev is None or any(
            prev[k] != row[k] for k in ("summary", "kinds", "keywords", "files")
        ):
            changed += 1
    return changed


def raw_files(ws: Workspace) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Archived raw logs per session: session id -> [(archive-relative path, ingest state)]."""
    state = read_json(ws.state_dir / "ingest.json", {}) or {}
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for raw_rel, entry in sorted(state.get("files", {}).items()):
        out.setdefault(entry["session"], []).append((raw_rel, entry))
    return out


def set_summaries(
    ws: Workspace, session_id: str, summaries: dict[tuple[str, int], str], refiner: str
) -> int:
    """Replace the summaries of some turns (e.g. written by the client's model)."""
    with locked(ws.root):
        df = read_refined(ws, session_id)
        rows = [
            {
                **r,
                "summary": shorten(redact(summaries[(r["agent"], r["turn"])])[0], SUMMARY_MAX),
                "refiner": refiner,
            }
            for r in df.iter_rows(named=True)
            if (r["agent"], r["turn"]) in summaries
        ]
        for r in rows:
            for col in ("started_at", "ended_at"):
                r[col] = int(r[col].timestamp() * 1_000_000) if r[col] else None
        if rows:
            merge_refined(ws, session_id, rows)
    return len(rows)
