"""Screenshots of the web UI's pages for the README (docs/ui/*.png), taken on the bundled sample
with Debian's headless Chromium (`apt-get install -y chromium chromium-driver`).

    python tools/ui_screenshots.py docs/ui
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from archive_mcp.demo import sample_archive
from archive_mcp.ui import UIServer

FLAGS = "--headless=new --no-sandbox --disable-gpu --disable-background-networking "
FLAGS += "--disable-component-update --disable-sync --no-first-run --window-size=1280,860"


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    a = sample_archive(tempfile.mkdtemp(prefix="archive-mcp-shots-"))
    shop = a.workspace("shop")
    a.tag_theme("session cache", shop, seeds=["SessionCache redis_pool"])
    webapp = a.workspace("webapp")
    sess = a.sessions(webapp.id).sort("turns", descending=True).collect()["session_id"][0]
    srv = UIServer(a, port=0, token="screenshots").start()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS.split():
        options.add_argument(flag)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        d.get(srv.url())
        pages = {
            "home": "/",
            "workspace": f"/w/{shop.id}",
            "session": f"/w/{webapp.id}/s/{quote(sess)}",
            "search": "/search?q=" + quote("login form submitting twice"),
            "themes": f"/w/{shop.id}/themes",
            "theme": f"/w/{shop.id}/themes/" + quote("session cache"),
            "turn": f"/turn/{quote(sess)}:0",
            "usage": "/usage",
        }
        d.get(srv.base + "/usage")  # queues the logs' model reads
        srv.overview.scan.wait(60)
        for name, path in pages.items():
            d.get(srv.base + path)
            if name == "session":
                for tool in d.find_elements(By.CSS_SELECTOR, "details.tool summary")[:1]:
                    tool.click()
            time.sleep(2.0)  # charts render, fragments load
            d.save_screenshot(str(out / f"{name}.png"))
            print(out / f"{name}.png")
    finally:
        d.quit()
        srv.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/ui"))
