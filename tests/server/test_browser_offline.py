"""The browser tests' Chromium stays on loopback: every browser test starts it through
tests/server/browser.py, with background networking, sync, component updates and the like off,
and host names other than loopback unresolvable."""

from __future__ import annotations

import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import browser

HERE = Path(__file__).resolve().parent
REQUIRED_SWITCHES = (
    "--disable-background-networking",
    "--disable-sync",
    "--disable-component-update",
    "--disable-default-apps",
    "--no-first-run",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-pings",
)


def test_the_options_turn_background_networking_off() -> None:
    pytest.importorskip("selenium", reason="selenium is in the dev extra")
    args = browser.chromium_options().arguments
    for switch in REQUIRED_SWITCHES:
        assert switch in args, switch
    rules = next(a for a in args if a.startswith("--host-resolver-rules="))
    assert "MAP * ~NOTFOUND" in rules and "EXCLUDE 127.0.0.1" in rules
    assert "--headless=new" in args


def test_every_browser_test_starts_chromium_through_the_helper() -> None:
    users = []
    for path in sorted((HERE.parent).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name in ("browser.py", Path(__file__).name) or not re.search(r"webdriver|selenium", text):
            continue
        users.append(path.name)
        assert "webdriver.Chrome(" not in text and "ChromeOptions(" not in text, f"{path}: use tests.server.browser"
    assert "test_inspector_browser.py" in users


def _loopback_alias() -> str | None:
    """A name /etc/hosts resolves to 127.0.0.1, other than the loopback names the rule exempts."""
    try:
        lines = Path("/etc/hosts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if fields and fields[0] == "127.0.0.1":
            names = [n for n in fields[1:] if n not in ("localhost", "127.0.0.1")]
            if names:
                return names[0]
    return None


@pytest.fixture
def loopback_page() -> Iterator[str]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server API names it
            body = b"<title>loopback</title>ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a real browser
def test_chromium_reaches_loopback_and_resolves_no_other_host(loopback_page: str) -> None:
    pytest.importorskip("selenium", reason="selenium is in the dev extra")
    if shutil.which(browser.CHROMIUM) is None or shutil.which(browser.CHROMEDRIVER) is None:
        pytest.skip(f"{browser.CHROMIUM} / {browser.CHROMEDRIVER} not installed")
    alias = _loopback_alias()
    if alias is None:
        pytest.skip("no name other than localhost for 127.0.0.1 in /etc/hosts")
    drv = browser.start_chromium()
    try:
        drv.set_page_load_timeout(30)
        drv.get(loopback_page)
        assert drv.title == "loopback"
        # the same page under another name /etc/hosts gives 127.0.0.1: resolved, it would load (and
        # a public name would reach its host the same way)
        from selenium.common.exceptions import WebDriverException

        try:
            drv.get(loopback_page.replace("127.0.0.1", alias))
        except WebDriverException as exc:  # chromedriver reports the failed navigation
            assert "ERR_NAME_NOT_RESOLVED" in str(exc), str(exc)[:300]
        else:
            assert drv.title != "loopback" and "ERR_NAME_NOT_RESOLVED" in drv.page_source
    finally:
        drv.quit()
