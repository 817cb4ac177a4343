"""The web UI's routes (`archive-mcp ui`): a thin face over `Archive`, as the CLI and MCP are.

Each handler parses its query, calls `views` (which calls the library) and renders a Jinja2
template with autoescaping on: text from a log is only ever template data, never markup. Pages
are server-rendered; `static/app.js` adds search as you type, tool calls loaded when opened, the
charts (vendored Vega, run by its interpreter so the CSP needs no eval) and the live banner.
Blocking work runs on Starlette's thread pool (every handler is a plain `def`)."""

from __future__ import annotations

from datetime import date, datetime
from importlib import resources
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError, InvalidArgument, NotFound
from archive_mcp.refs import turn_ref
from archive_mcp.search.engine import Filters
from archive_mcp.ui import charts, views
from archive_mcp.ui.conversation import clip, marks, refined_tool, tool_view
from archive_mcp.ui.export import export_session, export_theme
from archive_mcp.ui.security import CSRF_FIELD, Guard


def permalink(session_id: str, turn: int, agent: str = "main") -> str:
    """The path of a turn's page; `archive-mcp show` and `load_turn_context` accept the URL."""
    return "/turn/" + quote(turn_ref(session_id, turn, agent), safe=":")


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("archive_mcp.ui", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(permalink=permalink, quote=quote, turn_ref=turn_ref, marks=marks)
    env.filters["when"] = lambda d: d.strftime("%Y-%m-%d %H:%M") if isinstance(d, datetime) else ""
    env.filters["num"] = lambda n: f"{int(n or 0):,}"
    env.filters["usd"] = lambda c: "—" if c is None else f"${c:,.2f}"
    env.filters["spec"] = charts.embed
    return env


class UI:
    """The app's state: one Archive, its overview cache, the templates, the follower if any."""

    def __init__(self, archive: Archive, follower: Any = None) -> None:
        self.archive = archive
        self.overview = views.Overview(archive)
        self.env = _env()
        self.follower = follower

    def page(self, request: Request, name: str, status: int = 200, **data: Any) -> HTMLResponse:
        state = request.scope.get("state", {})
        html = self.env.get_template(name).render(
            csrf=state.get("csrf", ""),
            csrf_field=CSRF_FIELD,
            path=request.url.path,
            catching_up=self.follower.catching_up() if self.follower else None,
            **data,
        )
        return HTMLResponse(html, status_code=status)


def _ui(request: Request) -> UI:
    ui: UI = request.app.state.ui
    return ui


def _int(value: str | None, default: int, name: str) -> int:
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise InvalidArgument(f"{name}: a whole number; got {value!r}") from exc


def _date(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidArgument(f"{name}: a date as YYYY-MM-DD; got {value!r}") from exc


# --- pages ----------------------------------------------------------------------------------
def home(request: Request) -> Response:
    ui = _ui(request)
    return ui.page(request, "home.html", rows=views.home(ui.archive, ui.overview))


def workspace(request: Request) -> Response:
    ui, q = _ui(request), request.query_params
    f = views.SessionFilter(
        q.get("agent", ""),
        _date(q.get("since"), "since"),
        _date(q.get("until"), "until"),
        q.get("status", ""),
    )
    page = _int(q.get("page"), 1, "page")
    data = views.workspace(ui.archive, ui.overview, request.path_params["ws"], f, page)
    return ui.page(request, "workspace.html", p=data, f=f, chart=charts.turns_per_day(data.per_day))


def session(request: Request) -> Response:
    ui = _ui(request)
    page = _int(request.query_params.get("page"), 1, "page")
    data = views.session(ui.archive, request.path_params["ws"], request.path_params["sid"], page)
    rows = [
        {
            **r,
            "user": clip(r.get("user_text")),
            "assistant": clip(r.get("assistant_text")),
            "tools": [refined_tool(c) for c in r.get("tool_calls") or []],
            "marks": marks(r),
        }
        for r in data.turns
    ]
    return ui.page(request, "session.html", p=data, rows=rows)


def turn(request: Request) -> Response:
    ui = _ui(request)
    ref = request.path_params["ref"]
    ctx = ui.archive.load_turn_context(
        [ref], include_thinking=True, max_chars=400_000, anywhere=True, full_tools=True
    )
    t = ctx.turns[0]
    tools = [tool_view(c.name, c.status, c.arguments, c.result) for c in t.tool_calls]
    return ui.page(
        request,
        "turn.html",
        t=t,
        ref=turn_ref(t.session_id, t.turn, t.agent),
        ws=ui.archive.workspace(t.workspace_id),
        user=clip(t.user_text),
        assistant=clip(t.assistant_text),
        thinking=clip(t.thinking),
        tools=tools,
        url=str(request.url.replace(query="")),
    )


def tool_fragment(request: Request) -> Response:
    """One tool call in full (arguments, result, diff), loaded when its line is opened."""
    ui, q = _ui(request), request.query_params
    ctx = ui.archive.load_turn_context(
        [q.get("ref", "")], max_chars=400_000, anywhere=True, full_tools=True
    )
    calls = ctx.turns[0].tool_calls
    i = _int(q.get("i"), 0, "i")
    if not 0 <= i < len(calls):
        raise NotFound(f"turn {q.get('ref')} has {len(calls)} tool calls; no call {i}")
    c = calls[i]
    return ui.page(request, "tool.html", c=tool_view(c.name, c.status, c.arguments, c.result))


SEARCH_FIELDS = ("session", "agent", "source", "since", "until", "tool", "file", "theme", "kind")


def search(request: Request) -> Response:
    ui, q = _ui(request), request.query_params
    text = q.get("q", "").strip()
    ws = q.get("w", "")
    hits: Any = None
    error = ""
    if text:
        try:
            hits = ui.archive.search(
                text,
                workspace=ws or "all",
                limit=min(_int(q.get("limit"), 20, "limit"), 100),
                mode=q.get("mode", "hybrid") or "hybrid",
                filters=Filters(
                    session=q.get("session") or None,
                    agent=q.get("agent") or None,
                    since=_datetime(q.get("since")),
                    until=_datetime(q.get("until")),
                    tool=q.get("tool") or None,
                    file=q.get("file") or None,
                    theme=q.get("theme") or None,
                    kind=q.get("kind") or None,
                    source=q.get("source") or None,
                ),
            )
        except ArchiveError as exc:
            error = str(exc)
    template = "search_results.html" if q.get("fragment") else "search.html"
    names = {w.id: w.name for w in ui.archive.workspaces()}
    return ui.page(
        request,
        template,
        q=text,
        hits=hits,
        error=error,
        ws=ws,
        names=names,
        params=q,
        fields=SEARCH_FIELDS,
    )


def _datetime(value: str | None) -> datetime | None:
    d = _date(value, "date")
    return datetime(d.year, d.month, d.day) if d else None


def themes(request: Request) -> Response:
    ui = _ui(request)
    ws = ui.archive.workspace(request.path_params["ws"])
    return ui.page(request, "themes.html", ws=ws, themes=ui.archive.list_themes(ws), result=None)


def discover(request: Request) -> Response:
    ui = _ui(request)
    ws = ui.archive.workspace(request.path_params["ws"])
    ui.archive.discover_themes(ws)
    return RedirectResponse(f"/w/{ws.id}/themes", status_code=303)


async def tag(request: Request) -> Response:
    ui = _ui(request)
    form = await request.form()
    ws = ui.archive.workspace(request.path_params["ws"])
    name = str(form.get("theme", "")).strip()
    if not name:
        raise InvalidArgument("name the theme to tag")
    seeds = [s.strip() for s in str(form.get("seeds", "")).splitlines() if s.strip()]
    confirm = [str(v) for v in form.getlist("confirm")]
    drop = [str(v) for v in form.getlist("drop")]
    from starlette.concurrency import run_in_threadpool

    result = await run_in_threadpool(
        ui.archive.tag_theme,
        name,
        ws,
        references=confirm or None,
        seeds=seeds or None,
        remove=drop or None,
        who="ui",
    )
    return ui.page(request, "themes.html", ws=ws, themes=ui.archive.list_themes(ws), result=result)


def theme(request: Request) -> Response:
    ui = _ui(request)
    ws = ui.archive.workspace(request.path_params["ws"])
    name = request.path_params["name"]
    tl = ui.archive.trace_theme(name, ws)
    events = [
        {
            "at": e.at.isoformat() if e.at else None,
            "session": e.session_id[:13],
            "ref": e.ref if e.agent == "main" else turn_ref(e.session_id, e.turn, e.agent),
            "flag": e.flag or "turn",
            "gist": clip(e.summary, 300)[0],
            "url": permalink(e.session_id, e.turn, e.agent),
        }
        for e in tl.events
    ]
    return ui.page(
        request,
        "theme.html",
        ws=ws,
        tl=tl,
        text=tl.markdown(60_000),
        chart=charts.theme_timeline(events),
        events=events,
    )


def usage(request: Request) -> Response:
    ui = _ui(request)
    days = _int(request.query_params.get("days"), 90, "days")
    data = views.usage(ui.archive, ui.overview, days)
    return ui.page(request, "usage.html", u=data, chart=charts.usage_per_day(data.by_day))


def export(request: Request) -> Response:
    ui, p = _ui(request), request.path_params
    what, (name, _, fmt) = p["what"], p["name"].rpartition(".")  # a theme's name may hold "/"
    if what == "session":
        ex = export_session(ui.archive, p["ws"], name)
    elif what == "theme":
        ex = export_theme(ui.archive, p["ws"], name)
    else:
        raise NotFound(f"nothing to export as {what!r}: session or theme")
    filename = quote(f"{what}-{name[:40]}.{fmt}")
    head = {"content-disposition": f"attachment; filename*=UTF-8''{filename}"}
    if fmt == "md":
        return Response(ex.markdown(), media_type="text/markdown; charset=utf-8", headers=head)
    if fmt == "html":
        css = (resources.files("archive_mcp.ui") / "static" / "app.css").read_text("utf-8")
        html = ui.env.get_template("export.html").render(ex=ex, css=css)
        return HTMLResponse(html, headers=head)
    raise NotFound(f"no export format {fmt!r}: md or html")


def live(request: Request) -> Response:
    """What the live banner polls: how many turns the archive holds now."""
    ui = _ui(request)
    df = ui.overview.frame()
    return JSONResponse(
        {
            "turns": df.height,
            "catching_up": ui.follower.catching_up() if ui.follower else None,
        }
    )


async def on_error(request: Request, exc: Exception) -> Response:
    ui = _ui(request)
    status = 404 if isinstance(exc, NotFound) else 400
    return ui.page(request, "error.html", status=status, message=str(exc))


def build_app(archive: Archive, token: str | None, follower: Any = None) -> Guard:
    """The UI as an ASGI app behind its `Guard` (token None: no auth, for `--no-auth`)."""
    static = str(resources.files("archive_mcp.ui") / "static")
    routes = [
        Route("/", home),
        Route("/search", search),
        Route("/usage", usage),
        Route("/live", live),
        Route("/turn/{ref:path}", turn),
        Route("/fragment/tool", tool_fragment),
        Route("/w/{ws}", workspace),
        Route("/w/{ws}/s/{sid}", session),
        Route("/w/{ws}/themes", themes),
        Route("/w/{ws}/themes/discover", discover, methods=["POST"]),
        Route("/w/{ws}/themes/tag", tag, methods=["POST"]),
        Route("/w/{ws}/themes/{name:path}", theme),
        Route("/export/{what}/{ws}/{name:path}", export),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={ArchiveError: on_error})
    app.state.ui = UI(archive, follower)
    guard = Guard(app, token)
    guard.overview = app.state.ui.overview
    return guard
