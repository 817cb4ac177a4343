"""The web UI (`archive-mcp ui`) driven in process through Starlette's test client: privacy (token,
cookie, Host, Origin, CSRF, CSP), hostile log text rendered inert, every page, paging, search,
themes, usage and prices, export, the permalink. The real browser runs in test_ui_browser.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from archive_mcp import Archive
from archive_mcp.cli.main import main
from archive_mcp.errors import InvalidArgument
from archive_mcp.refs import TurnRef, parse_ref
from archive_mcp.synthetic.sessions import CallSpec, TurnSpec, write_session
from archive_mcp.ui.app import build_app, permalink
from archive_mcp.ui.conversation import diffs_of
from archive_mcp.ui.models import log_model
from archive_mcp.ui.pricing import TABLE, Price, prices
from archive_mcp.ui.security import COOKIE, CSP

TOKEN = "s3cret-token"
BASE = "http://127.0.0.1:8766"
HOSTILE = [
    "<script>alert('pwned')</script>",
    '<img src=x onerror="alert(1)">',
    "[click me](javascript:alert(document.cookie))",
    '<a href="javascript:alert(2)">link</a>',
]
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
BIG = 5_000_000
HOSTILE_SID = "00000000-0000-4000-8000-00000000bad1"
LONG_SID = "00000000-0000-4000-8000-000000000150"


def _write(root: Path) -> None:
    write_session(
        root,
        "/rec/user/projects/hostile",
        [
            TurnSpec(HOSTILE[0], HOSTILE[1]),
            TurnSpec(
                HOSTILE[2] + " " + HOSTILE[3],
                "edited the loader",
                [
                    CallSpec(
                        "StrReplaceFile",
                        {
                            "path": "src/loader.py",
                            "edit": {"old": "workers = 2", "new": "workers = 8"},
                        },
                        "ok",
                    )
                ],
            ),
            TurnSpec(f"my token is {SECRET} please rotate it", "rotated"),
            TurnSpec("x" * BIG, "that was long"),
        ],
        1767225600.0,
        session_id=HOSTILE_SID,
    )
    write_session(
        root,
        "/rec/user/projects/long",
        [TurnSpec(f"question number {i} about redis pools", f"answer {i}") for i in range(150)],
        1767312000.0,
        session_id=LONG_SID,
    )


@pytest.fixture
def ui_archive(tmp_path: Path, fake_embedder: object) -> Archive:
    root = tmp_path / "share"
    _write(root)
    a = Archive(embedder=fake_embedder)  # type: ignore[arg-type]
    a.ingest(root, exclude=())
    return a


@pytest.fixture
def client(ui_archive: Archive) -> TestClient:
    c = TestClient(build_app(ui_archive, TOKEN), base_url=BASE)
    assert c.get(f"/?token={TOKEN}").status_code == 200
    return c


def _ws(a: Archive, name: str) -> str:
    return a.workspace(name).id


# --- privacy ----------------------------------------------------------------------------------
def test_a_request_without_the_token_is_refused(ui_archive: Archive) -> None:
    c = TestClient(build_app(ui_archive, TOKEN), base_url=BASE)
    r = c.get("/")
    assert r.status_code == 403
    assert "needs its token" in r.text
    assert c.get("/?token=wrong").status_code == 403
    assert c.get("/static/app.js").status_code == 403


def test_the_token_url_sets_a_cookie_and_redirects_without_the_token(ui_archive: Archive) -> None:
    c = TestClient(build_app(ui_archive, TOKEN), base_url=BASE)
    r = c.get(f"/search?q=redis&token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/search?q=redis"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert TOKEN not in cookie
    assert c.get("/").status_code == 200  # the cookie from now on


def test_a_bearer_header_opens_the_ui_for_scripts(ui_archive: Archive) -> None:
    c = TestClient(build_app(ui_archive, TOKEN), base_url=BASE)
    assert c.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert c.get("/", headers={"Authorization": "Bearer nope"}).status_code == 403


def test_no_auth_needs_no_token(ui_archive: Archive) -> None:
    c = TestClient(build_app(ui_archive, None), base_url=BASE)
    assert c.get("/").status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example:8766"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://localhost:8766"}, 200),
    ],
)
def test_host_and_origin_are_checked_as_the_mcp_transport_does(
    client: TestClient, headers: dict[str, str], status: int
) -> None:
    assert client.get("/", headers=headers).status_code == status


def test_a_post_without_the_csrf_token_changes_nothing(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "long")
    r = client.post(f"/w/{ws}/themes/tag", data={"theme": "pools", "seeds": "redis pools"})
    assert r.status_code == 403
    assert "CSRF" in r.text
    assert ui_archive.list_themes(ws) == []
    r = client.get(f"/w/{ws}/themes/tag")  # a GET reads (a theme named "tag"), never tags
    assert r.status_code == 400
    assert ui_archive.list_themes(ws) == []


def test_every_answer_carries_the_csp_and_no_page_has_inline_script(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "hostile")
    for path in ["/", f"/w/{ws}", f"/w/{ws}/s/{HOSTILE_SID}", "/search?q=alert", "/usage"]:
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-security-policy"] == CSP
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "script-src 'self';" in CSP and "unsafe-eval" not in CSP
        inline = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", r.text)
        assert inline == [], path
        assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", r.text), path  # no inline handler
        assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", r.text), path  # offline


# --- hostile text -----------------------------------------------------------------------------
def test_hostile_prompts_render_as_inert_text(client: TestClient, ui_archive: Archive) -> None:
    ws = _ws(ui_archive, "hostile")
    pages = [
        client.get(f"/w/{ws}/s/{HOSTILE_SID}").text,
        client.get(permalink(HOSTILE_SID, 0)).text,
        client.get(permalink(HOSTILE_SID, 1)).text,
        client.get("/search?q=alert+pwned&w=" + ws).text,
    ]
    for html in pages:
        assert "<script>alert" not in html
        assert "<img src=x" not in html
        assert 'href="javascript:' not in html
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in pages[0]
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in pages[0]
    assert "javascript:alert(document.cookie)" in pages[2]  # shown as text, not a link


def test_a_five_megabyte_prompt_renders_cut_and_fast(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "hostile")
    # CPU seconds of this process (the app runs on its threads): a loaded machine's wait is not
    # counted, work that grows with the prompt is
    started = time.process_time()
    r = client.get(f"/w/{ws}/s/{HOSTILE_SID}")
    assert time.process_time() - started < 1.0
    assert r.status_code == 200
    assert len(r.text) < 100_000
    assert "[… more in the raw log]" in r.text  # the refined row keeps its head
    started = time.process_time()
    turn = client.get(permalink(HOSTILE_SID, 3))  # read back from the raw log, cut to a page
    assert time.process_time() - started < 1.0
    assert turn.status_code == 200 and len(turn.text) < 300_000
    assert re.search(r"… [\d,]+ more characters", turn.text)


# --- pages ------------------------------------------------------------------------------------
def test_home_lists_each_workspace_with_its_counts(client: TestClient) -> None:
    html = client.get("/").text
    assert html.count('<tr>\n  <td><a href="/w/') == 2
    row = re.search(r">long</a>.*?</tr>", html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="n">([^<]*)</td>', row.group(0))
    assert cells == ["1", "150"]
    assert '<span class="tag">kimi</span>' in row.group(0)


def test_the_workspace_lists_sessions_filtered_by_agent_status_and_date(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "long")
    assert f"/w/{ws}/s/{LONG_SID}" in client.get(f"/w/{ws}").text
    assert f"/w/{ws}/s/{LONG_SID}" in client.get(f"/w/{ws}?agent=kimi").text
    assert f"/w/{ws}/s/{LONG_SID}" not in client.get(f"/w/{ws}?agent=codex").text
    assert f"/w/{ws}/s/{LONG_SID}" not in client.get(f"/w/{ws}?since=2030-01-01").text
    assert f"/w/{ws}/s/{LONG_SID}" not in client.get(f"/w/{ws}?status=error").text
    r = client.get(f"/w/{ws}?since=tomorrow")
    assert r.status_code == 400 and "since: a date as YYYY-MM-DD" in r.text
    assert 'id="spec-days"' in client.get(f"/w/{ws}").text


def test_a_long_session_pages(client: TestClient, ui_archive: Archive) -> None:
    ws = _ws(ui_archive, "long")
    first = client.get(f"/w/{ws}/s/{LONG_SID}").text
    second = client.get(f"/w/{ws}/s/{LONG_SID}?page=2").text
    assert "page 1 of 2" in first and "page 2 of 2" in second
    assert first.count('<article class="turn') == 100
    assert second.count('<article class="turn') == 50
    assert "question number 99 about" in first and "question number 100 about" in second


def test_a_tool_call_opens_to_its_diff(client: TestClient) -> None:
    html = client.get(f"/fragment/tool?ref={HOSTILE_SID}:1&i=0").text
    assert '<span class="del">-workers = 2</span>' in html
    assert '<span class="add">+workers = 8</span>' in html
    assert client.get(f"/fragment/tool?ref={HOSTILE_SID}:1&i=5").status_code == 404


def test_the_permalink_is_a_reference_show_and_load_turn_context_accept(
    client: TestClient, ui_archive: Archive
) -> None:
    url = BASE + permalink(LONG_SID, 7)
    assert parse_ref(url) == TurnRef(LONG_SID, 7)
    assert parse_ref(BASE + "/turn/abc:3%20%5Bsub1%5D") == TurnRef("abc", 3, "sub1")
    ctx = ui_archive.load_turn_context([url], anywhere=True)
    assert ctx.turns[0].user_text == "question number 7 about redis pools"
    r = CliRunner().invoke(main, ["show", url, "-w", "long"])
    assert r.exit_code == 0, r.output
    assert "question number 7 about redis pools" in r.output
    assert client.get(permalink(LONG_SID, 7)).status_code == 200


def test_search_answers_with_the_mcp_filters(client: TestClient, ui_archive: Archive) -> None:
    ws = _ws(ui_archive, "long")
    html = client.get(f"/search?q=question+number+42&fragment=1&w={ws}&limit=5").text
    assert html.startswith('<p class="count">')
    assert f'href="/turn/{LONG_SID}:42"' in html
    none = client.get("/search?q=question+number&fragment=1&source=codex").text
    assert none.startswith('<p class="count">0 hits for &#39;question number&#39; (mode ')
    bad = client.get("/search?q=x&since=2026-02-01&until=2026-01-01&fragment=1").text
    assert "since (2026-02-01T00:00:00) is after until" in bad


def test_a_theme_is_tagged_from_seeds_confirmed_and_traced(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "long")
    page = client.get(f"/w/{ws}/themes").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert csrf is not None
    r = client.post(
        f"/w/{ws}/themes/tag",
        data={"csrf": csrf[1], "theme": "pools", "seeds": "redis pools"},
    )
    assert r.status_code == 200
    theme = ui_archive.list_themes(ws)[0]
    assert theme.name == "pools" and theme.members
    assert f"{len(theme.members)} members" in r.text
    extra = f"{LONG_SID}:149"
    r = client.post(
        f"/w/{ws}/themes/tag", data={"csrf": csrf[1], "theme": "pools", "confirm": extra}
    )
    assert r.status_code == 200
    assert any(m.turn == 149 for m in ui_archive.list_themes(ws)[0].members)
    trace = client.get(f"/w/{ws}/themes/pools").text
    spec = re.search(r'<script type="application/json" id="spec-theme">(.*?)</script>', trace, re.S)
    assert spec is not None
    assert f'"url": "/turn/{LONG_SID}:149"' in spec[1]
    assert '"mark": {"type": "point"' in spec[1]
    assert "# Theme: pools" in trace
    r = client.post(f"/w/{ws}/themes/tag", data={"csrf": csrf[1], "theme": "pools", "drop": extra})
    assert r.status_code == 200
    assert not any(m.turn == 149 for m in ui_archive.list_themes(ws)[0].members)


def test_usage_counts_tokens_and_names_models_without_a_price(
    client: TestClient, ui_archive: Archive
) -> None:
    html = client.get("/usage").text
    assert "Per model" in html and "Per workspace" in html and "Per agent" in html
    assert "No price for: <code>unknown</code>" in html  # Kimi's wire logs name no model
    assert "2026-01" in html


def test_a_session_and_a_theme_export_as_redacted_markdown_and_html(
    client: TestClient, ui_archive: Archive
) -> None:
    ws = _ws(ui_archive, "hostile")
    md = client.get(f"/export/session/{ws}/{HOSTILE_SID}.md")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert SECRET not in md.text and "[REDACTED]" in md.text
    html = client.get(f"/export/session/{ws}/{HOSTILE_SID}.html").text
    assert SECRET not in html and "<script" not in html
    assert "&lt;script&gt;" in html and "<style>" in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)
    long = _ws(ui_archive, "long")
    ui_archive.tag_theme("pools", long, seeds=["redis pools"])
    theme_md = client.get(f"/export/theme/{long}/pools.md").text
    assert theme_md.startswith("# Theme: pools\n") and f"## {LONG_SID}:" in theme_md


def test_an_unknown_session_or_workspace_says_so(client: TestClient, ui_archive: Archive) -> None:
    ws = _ws(ui_archive, "long")
    r = client.get(f"/w/{ws}/s/nope")
    assert r.status_code == 404 and "no session &#39;nope&#39;" in r.text
    r = client.get("/w/no-such-workspace")
    assert r.status_code == 400 and "no workspace matches &#39;no-such-workspace&#39;" in r.text


# --- parts ------------------------------------------------------------------------------------
def test_prices_match_the_longest_prefix_and_the_config_overrides() -> None:
    table = prices({"prices": {"my-model": {"input": 1, "output": 2}, "gpt-5": {"output": 11}}})
    assert table.of("claude-sonnet-4-5-20250929") == TABLE["claude-sonnet-4"]
    assert table.of("gpt-5-mini-2025") == TABLE["gpt-5-mini"]
    assert table.of("anthropic/claude-opus-4-5") == TABLE["claude-opus-4-5"]
    assert table.of("my-model-x") == Price(1.0, 2.0, 0.0, 0.0)
    assert table.of("gpt-5") == Price(1.25, 11.0, 0.125, 1.25)
    assert table.of("mystery") is None
    assert table.version.endswith("+ config")
    assert Price(3.0, 15.0, 0.3, 3.75).cost(1_000_000, 0, 1_000_000, 0) == pytest.approx(3.3)
    with pytest.raises(InvalidArgument, match="every price is a number"):
        prices({"prices": {"m": {"input": "cheap"}}})


def test_diffs_come_from_each_agents_edit_arguments() -> None:
    claude = diffs_of("Edit", '{"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}')
    assert claude[0].path == "a.py"
    assert claude[0].lines == [("hunk", "@@ -1 +1 @@"), ("del", "-x = 1"), ("add", "+x = 2")]
    multi = diffs_of(
        "MultiEdit", '{"file_path": "b", "edits": [{"old_string": "a", "new_string": "b"}]}'
    )
    assert [k for k, _ in multi[0].lines] == ["hunk", "del", "add"]
    patch = (
        '{"input": "*** Begin Patch\\n*** Update File: c.py\\n@@\\n-old\\n+new\\n*** End Patch"}'
    )
    codex = diffs_of("apply_patch", patch)
    assert codex[0].path == "c.py"
    assert codex[0].lines == [("hunk", "@@"), ("del", "-old"), ("add", "+new")]
    assert diffs_of("Shell", '{"command": "ls"}') == []


def test_a_logs_model_is_the_one_it_names_most(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        '{"message": {"model": "claude-sonnet-4-5"}}\n' * 3
        + '{"message": {"model": "<synthetic>"}}\n' * 5
        + '{"message": {"model": "claude-haiku-4-5"}}\n',
        encoding="utf-8",
    )
    assert log_model(log) == "claude-sonnet-4-5"
    assert log_model(tmp_path / "missing.jsonl") is None


def test_the_ui_command_refuses_a_token_with_no_auth() -> None:
    r = CliRunner().invoke(main, ["ui", "--no-auth", "--token", "x"])
    assert r.exit_code == 2
    assert "--token and --no-auth cannot go together" in r.output


def test_a_bad_number_in_the_address_is_a_clear_error(client: TestClient) -> None:
    r = client.get("/usage?days=many")
    assert r.status_code == 400 and "days: a whole number; got &#39;many&#39;" in r.text


def test_the_users_words_given_through_a_tool_are_the_users() -> None:
    from archive_mcp.ui.conversation import refined_tool

    asked = refined_tool({"name": "AskUserQuestion", "result_summary": "Use Redis", "status": "ok"})
    assert asked.answer == "Use Redis"
    refused = refined_tool(
        {
            "name": "Bash",
            "status": "error",
            "result_summary": "The user doesn't want to proceed with this tool use. "
            "The tool use was rejected. To tell you how to proceed, the user said: run it in CI",
        }
    )
    assert refused.answer == "run it in CI"
    assert refined_tool({"name": "Bash", "result_summary": "ok"}).answer == ""


def test_turns_the_follower_archives_appear_without_a_restart(
    tmp_path: Path, fake_embedder: object
) -> None:
    import json
    import urllib.request

    from archive_mcp.ui import UIServer

    share = tmp_path / "share"
    _write(share)
    a = Archive(embedder=fake_embedder)  # type: ignore[arg-type]
    srv = UIServer(a, port=0, token=TOKEN, follow=True, paths=[str(share)]).start()

    def live() -> int:
        req = urllib.request.Request(
            srv.base + "/live", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return int(json.loads(r.read())["turns"])

    def wait_for(turns: int) -> None:
        deadline = time.monotonic() + 60
        while live() != turns:
            assert time.monotonic() < deadline, f"still {live()} turns, not {turns}"
            time.sleep(0.2)

    try:
        wait_for(154)  # the follower's first round archives both sessions
        write_session(
            share,
            "/rec/user/projects/long",
            [TurnSpec("one more about redis", "ok")],
            1767400000.0,
            session_id="00000000-0000-4000-8000-000000000151",
        )
        wait_for(155)
    finally:
        srv.stop()


def test_a_discovered_theme_whose_name_holds_slashes_opens_and_exports(tmp_path: Path) -> None:
    from urllib.parse import quote

    from archive_mcp.demo import sample_archive

    a = sample_archive(tmp_path / "sample", embed=False)
    shop = a.workspace("shop")
    a.discover_themes(shop)
    name = next(t.name for t in a.list_themes(shop) if "/" in t.name)
    c = TestClient(build_app(a, None), base_url=BASE)
    page = c.get(f"/w/{shop.id}/themes/{quote(name)}")
    assert page.status_code == 200
    md = c.get(f"/export/theme/{shop.id}/{quote(name)}.md")
    assert md.status_code == 200
    assert md.text.startswith(f"# Theme: {name}\n")
    assert c.get(f"/export/theme/{shop.id}/{quote(name)}.pdf").status_code == 404
