"""What each page shows, read from an `Archive` and shaped for the templates.

Everything comes from the library's frames (`Archive.turns`, `.sessions`, `.list_themes`,
`.search`, `.load_turn_context`, `.trace_theme`); nothing here reads a store of its own. The
per-turn columns every listing needs are read once per change of the refined files (`Overview`,
keyed by their names, sizes and mtimes, so turns the follower adds appear on the next page
load) and kept in memory: on a 50k-turn archive a page then costs a few Polars group-bys."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import polars as pl

from archive_mcp import frames
from archive_mcp.archive import Archive
from archive_mcp.errors import NotFound
from archive_mcp.settings import read_config
from archive_mcp.ui.models import ModelScan
from archive_mcp.ui.pricing import Prices, prices
from archive_mcp.workspaces import Workspace

COLUMNS = ["workspace_id", "source", "session_id", "title", "agent", "turn", "started_at"]
COLUMNS += ["ended_at", "status", "usage", "kinds", "raw_ref"]
PAGE = 100  # turns of a session per page


def _signature(workspaces: list[Workspace]) -> tuple[tuple[str, int], ...]:
    """What changes when a refined file is written: the refined folder's mtime (every write is
    a rename into that folder, and a purge an unlink from it)."""
    out = []
    for ws in workspaces:
        try:
            out.append((ws.id, Path(ws.refined_dir).stat().st_mtime_ns))
        except OSError:
            out.append((ws.id, 0))
    return tuple(out)


class Overview:
    """The archive's turns (listing columns only), read again when a refined file changes."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._frame: pl.DataFrame | None = None
        self._parts: dict[str, pl.DataFrame] = {}
        self._memo: dict[Any, Any] = {}
        self.scan = ModelScan()

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()`, remembered under `key` until the refined files change."""
        self.frame()
        full = (self._key, key)
        if full not in self._memo:
            if len(self._memo) > 64:
                self._memo.clear()
            self._memo[full] = make()
        return self._memo[full]

    def frame(self) -> pl.DataFrame:
        workspaces = self.archive.workspaces()
        key = (tuple(ws.id for ws in workspaces), _signature(workspaces))
        with self._lock:
            if self._frame is None or key != self._key:
                lf = self.archive.turns([ws.id for ws in workspaces]) if workspaces else None
                df = lf.select(COLUMNS).collect() if lf is not None else _empty()
                self._frame = df.with_columns(
                    pl.col("usage").struct.field("input").fill_null(0).alias("input"),
                    pl.col("usage").struct.field("output").fill_null(0).alias("output"),
                    pl.col("usage").struct.field("cache_read").fill_null(0).alias("cache_read"),
                    pl.col("usage")
                    .struct.field("cache_creation")
                    .fill_null(0)
                    .alias("cache_write"),
                    pl.col("raw_ref").struct.field("file").alias("raw_file"),
                ).drop("raw_ref")
                self._parts = {}
                self._key = key
            return self._frame

    def of(self, workspace_id: str) -> pl.DataFrame:
        """The turns of one workspace (split once per change of the files)."""
        df = self.frame()
        with self._lock:
            if not self._parts and df.height:
                self._parts = {
                    str(k[0]): part
                    for k, part in df.partition_by("workspace_id", as_dict=True).items()
                }
            return self._parts.get(workspace_id, df.clear())


def _empty() -> pl.DataFrame:
    from archive_mcp.schema import empty_refined

    return empty_refined().select(COLUMNS)


# --- home -----------------------------------------------------------------------------------
@dataclass
class WorkspaceRow:
    id: str
    name: str
    paths: list[str]
    sessions: int
    turns: int
    last_at: datetime | None
    agents: list[str]


def home(archive: Archive, ov: Overview) -> list[WorkspaceRow]:
    """Every workspace with its sessions, turns, last activity and the agents that wrote it."""
    df = ov.frame()
    per = {
        r["workspace_id"]: r
        for r in df.group_by("workspace_id")
        .agg(
            pl.col("session_id").n_unique().alias("sessions"),
            (pl.col("agent") == "main").sum().alias("turns"),
            pl.col("started_at").max().alias("last_at"),
            pl.col("source").unique().sort().alias("agents"),
        )
        .iter_rows(named=True)
    }
    rows = []
    for ws in archive.workspaces():
        r = per.get(ws.id, {})
        rows.append(
            WorkspaceRow(
                ws.id,
                ws.name,
                list(ws.paths),
                r.get("sessions", 0),
                r.get("turns", 0),
                r.get("last_at"),
                [a for a in r.get("agents", []) if a],
            )
        )
    epoch = datetime.min.replace(tzinfo=UTC)
    return sorted(rows, key=lambda r: r.last_at or epoch, reverse=True)


# --- workspace ------------------------------------------------------------------------------
@dataclass
class SessionFilter:
    agent: str = ""
    since: date | None = None
    until: date | None = None
    status: str = ""  # live | open | completed | error | ... (a status any turn has)


@dataclass
class WorkspacePage:
    ws: Workspace
    sessions: list[dict[str, Any]]
    total: int
    agents: list[str]
    statuses: list[str]
    per_day: list[dict[str, Any]]
    themes: list[Any]
    page: int = 1
    pages: int = 1


def workspace(
    archive: Archive, ov: Overview, ws_ref: str, f: SessionFilter, page: int = 1
) -> WorkspacePage:
    """A workspace's sessions (filtered; `PAGE` a page), turns per day and themes."""
    ws = archive.workspace(ws_ref)
    df = ov.of(ws.id)
    # the library's sessions frame over the cached turns, with what a cost needs beside it
    extra = df.group_by("session_id").agg(
        pl.col("input", "output", "cache_read", "cache_write").sum(), pl.col("raw_file").first()
    )
    sessions = (
        frames.sessions(df.lazy())
        .collect()
        .drop("input_tokens", "output_tokens")
        .join(extra, on="session_id", how="left")
        .with_columns(
            pl.when(pl.col("live"))
            .then(pl.col("statuses").list.concat(pl.lit(["live"])))
            .otherwise(pl.col("statuses"))
            .alias("statuses")
        )
    )
    agents = sorted(x for x in sessions["source"].unique().to_list() if x)
    statuses = sorted({s for ss in sessions["statuses"].to_list() for s in ss if s})
    if f.agent:
        sessions = sessions.filter(pl.col("source") == f.agent)
    if f.status:
        sessions = sessions.filter(pl.col("statuses").list.contains(f.status))
    if f.since:
        sessions = sessions.filter(pl.col("last_at").dt.date() >= f.since)
    if f.until:
        sessions = sessions.filter(pl.col("first_at").dt.date() <= f.until)
    per_day = (
        df.filter(pl.col("agent") == "main")
        .drop_nulls("started_at")
        .group_by(pl.col("started_at").dt.date().alias("day"), "source")
        .agg(pl.len().alias("turns"))
        .sort("day")
    )
    pages = max(1, -(-sessions.height // PAGE))
    page = min(max(page, 1), pages)
    rows = sessions.slice((page - 1) * PAGE, PAGE).to_dicts()
    priced = session_costs(ov, ws, rows)
    for r in rows:
        r["cost"] = priced.get(r["session_id"])
    return WorkspacePage(
        ws,
        rows,
        sessions.height,
        agents,
        statuses,
        [
            {"day": str(r["day"]), "agent": r["source"], "turns": r["turns"]}
            for r in per_day.iter_rows(named=True)
        ],
        archive.list_themes(ws),
        page,
        pages,
    )


def session_costs(
    ov: Overview, ws: Workspace, rows: list[dict[str, Any]]
) -> dict[str, float | None]:
    """The cost of each session listed, at the model its log names (None: no price known yet)."""
    table = price_table()
    paths = {r["session_id"]: Path(ws.root) / r["raw_file"] for r in rows if r.get("raw_file")}
    models, _ = ov.scan.models(paths.values())
    out: dict[str, float | None] = {}
    for r in rows:
        path = paths.get(r["session_id"])
        price = table.of(models.get(str(path))) if path else None
        out[r["session_id"]] = (
            price.cost(r["input"], r["output"], r["cache_read"], r["cache_write"])
            if price
            else None
        )
    return out


def price_table() -> Prices:
    return prices(read_config())


# --- session --------------------------------------------------------------------------------
@dataclass
class SessionPage:
    ws: Workspace
    session_id: str
    title: str
    source: str
    turns: list[dict[str, Any]]
    page: int
    pages: int
    total: int


def session(archive: Archive, ws_ref: str, session_id: str, page: int) -> SessionPage:
    """One page of a session's turns (main and subagents, in order), `PAGE` main turns a page."""
    ws = archive.workspace(ws_ref)
    lf = archive.turns(ws).filter(pl.col("session_id") == session_id)
    df = lf.sort("turn", "agent").collect()
    if not df.height:
        raise NotFound(f"no session {session_id!r} in workspace {ws.name}: open it from the list")
    main_turns = df.filter(pl.col("agent") == "main")["turn"].unique().sort().to_list()
    pages = max(1, -(-len(main_turns) // PAGE))
    page = min(max(page, 1), pages)
    chunk = main_turns[(page - 1) * PAGE : page * PAGE]
    lo, hi = (chunk[0], chunk[-1]) if chunk else (0, -1)
    if page == pages:
        hi = 1 << 62  # subagent turns after the last main turn
    if page == 1:
        lo = -(1 << 62)
    shown = df.filter(pl.col("turn").is_between(lo, hi)).sort("started_at", "turn", nulls_last=True)
    titles = df["title"].drop_nulls()
    return SessionPage(
        ws,
        session_id,
        titles[0] if len(titles) else session_id,
        df["source"][0] or "",
        shown.to_dicts(),
        page,
        pages,
        len(main_turns),
    )


# --- usage ----------------------------------------------------------------------------------
@dataclass
class Usage:
    by_day: list[dict[str, Any]]
    by_model: list[dict[str, Any]]
    by_agent: list[dict[str, Any]]
    by_workspace: list[dict[str, Any]]
    unpriced: list[str]
    unread: int
    prices: Prices
    days: int


def usage(archive: Archive, ov: Overview, days: int = 90) -> Usage:
    """Tokens and cost per day (the last `days`), model, agent and workspace; remembered until
    the archive, the models read from the logs or the price table change."""
    table = price_table()
    known = ov.scan.progress()
    today = datetime.now(UTC).date()
    return cast(
        Usage,
        ov.memo(
            ("usage", days, known, today, table.version, tuple(sorted(table.table.items()))),
            lambda: _usage(archive, ov, days),
        ),
    )


def _usage(archive: Archive, ov: Overview, days: int) -> Usage:
    names = {ws.id: ws for ws in archive.workspaces()}
    # one row per session and day first: the joins below then touch a few thousand rows
    base = (
        ov.frame()
        .with_columns(pl.col("started_at").dt.date().cast(pl.String).alias("day"))
        .group_by("workspace_id", "session_id", "source", "day")
        .agg(
            pl.col("input", "output", "cache_read", "cache_write").sum(),
            pl.len().alias("turns"),
            pl.col("raw_file").first(),
        )
    )
    files = base.unique(["workspace_id", "session_id"]).select(
        "workspace_id", "session_id", "raw_file"
    )
    paths = {
        (w, sid): Path(names[w].root) / f for w, sid, f in files.iter_rows() if f and w in names
    }
    known, unread = ov.scan.models(paths.values())
    table = price_table()
    model_of = {k: known.get(str(p)) or "unknown" for k, p in paths.items()}
    models = sorted(set(model_of.values()))
    sessions = pl.DataFrame(
        {
            "workspace_id": [k[0] for k in model_of],
            "session_id": [k[1] for k in model_of],
            "model": list(model_of.values()),
        },
        schema={"workspace_id": pl.String, "session_id": pl.String, "model": pl.String},
    )
    priced = _priced(base, sessions, _rates(table, models), names)
    # the last `days` days of the archive (ending at its newest turn: an old archive still shows)
    newest = base["day"].drop_nulls().max()
    since = str(date.fromisoformat(str(newest)) - timedelta(days=days - 1)) if newest else ""
    return Usage(
        _totals(priced.filter(pl.col("day") >= since), "day", sort_by_key=True),
        _totals(priced, "model"),
        _totals(priced, "agent"),
        _totals(priced, "workspace"),
        [m for m in models if table.of(m) is None],
        unread,
        table,
        days,
    )


TOKENS = ("input", "output", "cache_read", "cache_write")


def _rates(table: Prices, models: list[str]) -> pl.DataFrame:
    """$ per 1M tokens of each kind for each model (null: the model has no price)."""
    return pl.DataFrame(
        {"model": models, **{f"p_{k}": [_rate(table, m, k) for m in models] for k in TOKENS}},
        schema={"model": pl.String, **{f"p_{k}": pl.Float64 for k in TOKENS}},
    )


def _priced(
    base: pl.DataFrame,
    sessions: pl.DataFrame,
    rates: pl.DataFrame,
    names: dict[str, Workspace],
) -> pl.DataFrame:
    """Each session-day's tokens with its cost (0 and `unpriced` where the model has no price)."""
    return (
        base.join(sessions, on=["workspace_id", "session_id"], how="left")
        .with_columns(pl.col("model").fill_null("unknown"))
        .join(rates, on="model", how="left")
        .with_columns(
            (pl.sum_horizontal(*(pl.col(k) * pl.col(f"p_{k}") for k in TOKENS)) / 1e6)
            .alias("cost")
            .fill_null(strategy="zero")
            .cast(pl.Float64),
            pl.col("p_input").is_null().alias("unpriced"),
            pl.col("workspace_id")
            .replace_strict({k: v.name for k, v in names.items()}, default=pl.col("workspace_id"))
            .alias("workspace"),
            pl.col("source").fill_null("unknown").alias("agent"),
        )
    )


def _rate(table: Prices, model: str, which: str) -> float | None:
    p = table.of(model)
    return None if p is None else float(getattr(p, which))


def _totals(df: pl.DataFrame, key: str, sort_by_key: bool = False) -> list[dict[str, Any]]:
    out = df.group_by(key).agg(
        pl.col(*TOKENS).sum(),
        # the priced turns' cost (none when no turn has a price); `unpriced_turns` the others
        pl.when(pl.col("unpriced").all()).then(None).otherwise(pl.col("cost").sum()).alias("cost"),
        pl.col("turns").filter(pl.col("unpriced")).sum().alias("unpriced_turns"),
        pl.col("turns").sum(),
    )
    out = out.sort(key) if sort_by_key else out.sort("turns", descending=True)
    return [{**r, "key": r[key]} for r in out.iter_rows(named=True)]
