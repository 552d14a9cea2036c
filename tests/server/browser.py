"""The one way the browser tests start Chromium: headless, and quiet on the network. Chromium by
default reaches Google hosts in the background (component and safe-browsing updates, sync,
field trials, domain reliability reports, DNS prefetch...); the switches below turn that off, and
the resolver rule makes any host name but the loopback ones unresolvable, so a test run sends
nothing beyond loopback even if a switch is missed."""

from __future__ import annotations

from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: switches that keep Chromium off the network (checked by tests/server/test_browser_offline.py)
OFFLINE_ARGS = (
    "--disable-background-networking",
    "--disable-sync",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--disable-extensions",
    "--disable-field-trial-config",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-pings",
    "--metrics-recording-only",
    "--dns-prefetch-disable",
    "--safebrowsing-disable-auto-update",
    (
        "--disable-features=OptimizationHints,OptimizationGuideModelDownloading,MediaRouter,Translate,"
        "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions"
    ),
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)

#: how the tests' browser looks: headless, in a container, one window size for the screenshots
DISPLAY_ARGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1360,900")


def chromium_options() -> Any:
    """Selenium ChromeOptions for Debian's chromium with every switch above."""
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (*DISPLAY_ARGS, *OFFLINE_ARGS):
        opts.add_argument(arg)
    return opts


def start_chromium() -> Any:
    """A Selenium driver over Debian's chromedriver (given explicitly: nothing is downloaded)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=chromium_options())
