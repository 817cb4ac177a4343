"""The web UI in a real browser: Debian's headless Chromium driven by Selenium through its
chromedriver, against `UIServer` on a free port of 127.0.0.1. Navigation, search as you type, a
theme's chart (rendered under the CSP, a point opening its turn), hostile prompts inert, and the
token refused. Skipped, with the reason, where Chromium or Selenium is not installed
(`apt-get install -y chromium chromium-driver`; `.ci/run` installs them)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from test_ui import HOSTILE, HOSTILE_SID, _write

from archive_mcp import Archive
from archive_mcp.ui import UIServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
]


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, DRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install -y chromium chromium-driver)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture
def server(tmp_path: Path, fake_embedder: object) -> Iterator[UIServer]:
    _write(tmp_path / "share")
    a = Archive(embedder=fake_embedder)  # type: ignore[arg-type]
    a.ingest(tmp_path / "share", exclude=())
    a.tag_theme("pools", "long", seeds=["redis pools"])
    srv = UIServer(a, port=0, token="browser-token").start()
    yield srv
    srv.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _wait(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except Exception:  # noqa: BLE001 - an element not there yet
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {check}")
        time.sleep(0.1)


def _csp_errors(driver: Any) -> list[str]:
    return [
        e["message"]
        for e in driver.get_log("browser")
        if "Content Security Policy" in e["message"] or "Refused" in e["message"]
    ]


def test_the_browser_navigates_home_workspace_session_and_opens_a_tool_call(
    server: UIServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url())
    assert browser.current_url == server.base + "/"  # the token left the address bar
    assert browser.find_element(By.TAG_NAME, "h1").text == "Workspaces"
    browser.find_element(By.LINK_TEXT, "hostile").click()
    _wait(lambda: browser.find_element(By.ID, "sessions"))
    browser.find_element(By.CSS_SELECTOR, "#sessions td a").click()
    _wait(lambda: browser.find_element(By.CSS_SELECTOR, ".conversation"))
    tool = browser.find_element(By.CSS_SELECTOR, "details.tool summary")
    assert tool.text == "ok StrReplaceFile path=src/loader.py"
    tool.click()
    added = _wait(lambda: browser.find_element(By.CSS_SELECTOR, "details.tool .diff .add"))
    assert added.text == "+workers = 8"
    assert _csp_errors(browser) == []


def test_search_answers_as_you_type_and_a_hit_opens_its_turn(
    server: UIServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.url("/search"))
    box = browser.find_element(By.ID, "q")
    box.send_keys("question number 42")
    link = _wait(
        lambda: browser.find_element(By.CSS_SELECTOR, '#results a.ref[href$="-000000000150:42"]')
    )
    assert "q=question+number+42" in browser.current_url  # the address follows the query
    link.click()
    _wait(lambda: "Turn " in browser.find_element(By.TAG_NAME, "h1").text)
    text = browser.find_element(By.CSS_SELECTOR, ".msg.user .text").text
    assert text == "question number 42 about redis pools"


def test_a_themes_chart_renders_under_the_csp_and_a_point_opens_its_turn(
    server: UIServer, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    ws = server.archive.workspace("long").id
    browser.get(server.url(f"/w/{ws}/themes/pools"))
    chart = browser.find_element(By.ID, "theme-chart")
    _wait(lambda: chart.get_attribute("data-rendered") == "1")
    points = browser.find_elements(By.CSS_SELECTOR, "#theme-chart g.mark-symbol path")
    members = len(server.archive.list_themes(ws)[0].members)
    assert len(points) == members
    assert _csp_errors(browser) == []
    last = points[-1]  # drawn last: on top of any point it overlaps
    url = last.get_attribute("aria-label").rsplit("url: ", 1)[1]
    last.click()
    _wait(lambda: browser.current_url == server.base + url)
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Turn ")


def test_hostile_prompts_stay_text_in_the_browser(server: UIServer, browser: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    ws = server.archive.workspace("hostile").id
    browser.get(server.url(f"/w/{ws}/s/{quote(HOSTILE_SID)}"))
    texts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".msg .text")]
    assert texts[0] == HOSTILE[0]
    assert texts[1] == HOSTILE[1]
    assert texts[2] == f"{HOSTILE[2]} {HOSTILE[3]}"
    assert browser.find_elements(By.CSS_SELECTOR, ".conversation img") == []
    assert browser.find_elements(By.CSS_SELECTOR, '.conversation a[href^="javascript"]') == []
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert (
        browser.execute_script("return document.querySelectorAll('script:not([src])').length") == 0
    )


def test_the_browser_without_the_token_is_refused(server: UIServer, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(server.base + "/")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert body.startswith("403: this archive needs its token")
    browser.get(server.base + "/?token=wrong")
    assert browser.find_element(By.TAG_NAME, "body").text.startswith("403: wrong token")
    browser.get(server.url())
    assert browser.find_element(By.TAG_NAME, "h1").text == "Workspaces"
