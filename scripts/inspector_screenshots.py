"""Screenshots of the web inspector for the docs: the demo's data (``deepcontext demo``) in a fresh
SQLite file, ``deepcontext serve --no-auth`` on 127.0.0.1, and Debian's headless chromium driven
by Selenium through Debian's chromedriver (nothing is downloaded; background networking, sync and
component updates are off).

    python scripts/inspector_screenshots.py [--out docs/images]

Writes inspector-search.png (a search with each result's legs and score), inspector-memory.png (a
memory: its fields, history and the turns it was said in), inspector-activity.png (a search an
agent made through the REST API, run again) and inspector-graph.png (the user's neighbourhood).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
USER = "maya"  # the demo's user
QUERY = "Where does Maya work?"
WINDOW = (1360, 900)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer in {timeout:.0f} s")


def browser() -> object:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--hide-scrollbars", "--disable-extensions", "--no-first-run", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--disable-default-apps", "--metrics-recording-only",
    ):  # fmt: skip
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(60)
    return drv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"), help="folder for the PNGs")
    args = parser.parse_args()
    for tool in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install chromium chromium-driver")
    from selenium.webdriver.common.by import By

    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPCONTEXT_")}
    cli = [sys.executable, "-m", "deepcontext"]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dc-shots-") as tmp:
        db = f"sqlite:///{Path(tmp) / 'demo.db'}"
        subprocess.run([*cli, "demo", "--db", db], check=True, env=env, stdout=subprocess.DEVNULL)
        port = free_port()
        server = subprocess.Popen(
            [*cli, "--db", db, "serve", "--no-auth", "--port", str(port), "--log-level", "warning"], env=env
        )
        base = f"http://127.0.0.1:{port}"
        drv = None
        try:
            wait_http(base + "/health", server)
            drv = browser()
            search = f"{base}/ui/memories?{urlencode({'user': USER, 'q': QUERY})}"
            drv.get(search)  # the first search loads the embedding model: not the latency to show
            drv.get(search)
            drv.find_element(By.CSS_SELECTOR, "#results tbody tr")
            drv.save_screenshot(str(args.out / "inspector-search.png"))
            # a fact extracted from what was said (not a verbatim "speaker: text" memory)
            link = next(a for a in drv.find_elements(By.CSS_SELECTOR, "a.memory-link") if ": " not in a.text)
            drv.get(link.get_attribute("href"))
            drv.find_element(By.CSS_SELECTOR, "#memory-text")
            drv.save_screenshot(str(args.out / "inspector-memory.png"))
            # what an agent was given: a call through the REST API (recorded by default), opened
            # and run again
            body = json.dumps({"user_id": USER, "query": "What does Maya do at the weekend?"}).encode()
            ask = urllib.request.Request(base + "/v1/search", data=body, headers={"Content-Type": "application/json"})
            urllib.request.urlopen(ask, timeout=60).read()
            time.sleep(3)  # the server writes its records a moment after the call
            drv.get(f"{base}/ui/activity?{urlencode({'user': USER})}")
            drv.get(drv.find_element(By.CSS_SELECTOR, "a.call-link").get_attribute("href") + "&again=1")
            drv.find_element(By.CSS_SELECTOR, "#changes")
            drv.save_screenshot(str(args.out / "inspector-activity.png"))
            drv.get(f"{base}/ui/graph?{urlencode({'user': USER})}")
            drv.find_element(By.CSS_SELECTOR, "#graph-legend")
            drv.save_screenshot(str(args.out / "inspector-graph.png"))
        finally:
            if drv is not None:
                drv.quit()  # type: ignore[attr-defined]
            server.terminate()
            server.wait(timeout=20)
    print(f"screenshots in {args.out}: inspector-search.png, inspector-memory.png, inspector-activity.png, inspector-graph.png")


if __name__ == "__main__":
    main()
