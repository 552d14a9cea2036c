"""The web inspector in a real browser: Debian's chromium, headless, driven by Selenium through
Debian's chromedriver (given explicitly: nothing is downloaded), against a real ``deepcontext
serve`` on 127.0.0.1. One browser session for the module; the tests run in file order, each page
after the one before (sign in, users, search, a memory, its source turn, the graph, the
conversation DAG, the context preview, the lifecycle, writes, a read-only key). Each page is
screenshotted into tests/screenshots/.

Skipped (one message) where chromium, chromedriver or selenium is missing; failed instead when
DEEPCONTEXT_REQUIRE_BROWSER=1 (CI: scripts/ci-browser.sh installs them).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from deepcontext import DeepContext
from tests.server.browser import CHROMEDRIVER, CHROMIUM, start_chromium
from tests.server.helpers import ROOT, cli_env, serve

pytestmark = pytest.mark.slow  # a real browser against a real server process

REQUIRED = os.environ.get("DEEPCONTEXT_REQUIRE_BROWSER", "") == "1"
SHOTS = ROOT / "tests" / "screenshots"
PWNED = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def _problem() -> str | None:
    if shutil.which(CHROMIUM) is None or shutil.which(CHROMEDRIVER) is None:
        return f"{CHROMIUM} / {CHROMEDRIVER} not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module", autouse=True)
def _need_browser() -> None:
    problem = _problem()
    if problem is None:
        return
    if REQUIRED:
        pytest.fail(f"DEEPCONTEXT_REQUIRE_BROWSER=1 but {problem}", pytrace=False)
    pytest.skip(f"browser tests skipped: {problem}", allow_module_level=True)


@dataclass
class Site:
    url: str
    writer: str
    reader: str


async def _seed(db_url: str) -> Site:
    async with DeepContext(database_url=db_url, embedder="hash") as ctx:
        now = ctx.clock.now()
        writer = ctx.store.keys.create("acme", now=now, name="writer")[1]
        reader = ctx.store.keys.create("acme", now=now, name="reader", read_only=True)[1]
        u = "acme/ana"
        says = [
            ("trip", "I moved to Lisbon in 2021 and I work at Orbital as a data engineer."),
            ("trip", "My sister Marta lives in Porto and visits Lisbon every month."),
            ("trip", "I adopted a dog called Rex at the Lisbon shelter."),
            ("work", "At Orbital I maintain the Kafka pipelines with my colleague Joao."),
            ("work", "Joao recommended the book Designing Data-Intensive Applications."),
            ("work", f"Note for the wiki: {PWNED} must never run."),
        ]
        for conv, text in says:
            await ctx.add([{"role": "user", "name": "Ana", "content": text}, {"role": "assistant", "content": "Noted."}], u, conv)
        # a conversation with a branch, a merge and a summary
        s = await ctx.dialogue(u, "plans", planner="offline")
        a = await s.record("I want to visit Madrid in May.", "May is a good month for Madrid.")
        b = await s.record("Should I take the train from Lisbon?", "There is a day train with a change.")
        c = await s.record("What about flying from Porto instead?", "Porto to Madrid is a short flight.", parent_ids=[a])
        await s.record("Train or plane: I will fly via Porto.", "Flying via Porto it is.", parent_ids=[b, c])
        await s.record("Book the hotel near Retiro park.", "Retiro is lovely in May.")
        await s.record("Remind me to pack an umbrella.", "Noted.")
        await s.flush()
        await ctx.compress_conversation(u, "plans", keep_recent=1)
        for i in range(60):  # more than a page of memories
            await ctx.add(
                [{"role": "user", "name": "Ana", "content": f"Reading log {i}: chapter {i} of the Kafka book."}], u, "log"
            )
    return Site("", writer, reader)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    db_url = f"sqlite:///{tmp_path_factory.mktemp('ui')}/ui.db"
    seeded = asyncio.run(_seed(db_url))
    with serve(["--db", db_url, "--embedder", "hash", "serve", "--log-level", "warning"], env=cli_env()) as server:
        seeded.url = server.url
        yield seeded


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    drv = start_chromium()
    drv.set_page_load_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield drv
    finally:
        drv.quit()


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def by(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def all_by(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def wait_gone(driver: Any, old: Any) -> None:
    """Wait until ``old`` (an element of the page before a navigation) no longer belongs to the page.
    Chromium answers for it with "stale element" or, mid-navigation, "does not belong to the
    document": both mean the old page is gone."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_: Any) -> bool:
        try:
            old.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(driver, 30).until(gone)


def go(driver: Any, element: Any, submit: bool = False) -> None:
    """Click ``element`` (or submit its form) and wait for the next page to load."""
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element("css selector", "html")
    element.submit() if submit else element.click()
    wait_gone(driver, page)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def sign_in(driver: Any, site: Site, key: str) -> None:
    driver.get(site.url + "/ui/")
    assert driver.current_url.endswith("/ui/login")
    by(driver, "#key").send_keys(key)
    go(driver, by(driver, "#sign-in"))
    assert driver.current_url.endswith("/ui/"), driver.current_url


@pytest.fixture(autouse=True)
def _fresh_sign_in(request: pytest.FixtureRequest, driver: Any, site: Site) -> None:
    """Each test starts signed out (the sign-in tests) or signed in with the writer key, whichever
    tests ran before it in this worker and however they left the browser."""
    driver.get(site.url + "/ui/login")
    driver.delete_all_cookies()
    if request.node.name not in _SIGN_IN_THEMSELVES:
        sign_in(driver, site, site.writer)


_SIGN_IN_THEMSELVES = frozenset({"test_sign_in_and_users"})


def open_found(driver: Any, site: Site, query: str, contains: str) -> None:
    """Search, then open the result whose text holds ``contains`` (search shows active memories only)."""
    from urllib.parse import urlencode

    driver.get(f"{site.url}/ui/memories?{urlencode({'user': 'ana', 'q': query})}")
    go(driver, next(a for a in all_by(driver, "a.memory-link") if contains in a.text))


def test_sign_in_and_users(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/memories?user=ana")
    assert "Sign in" in driver.title  # no key, no page
    shot(driver, "login")
    by(driver, "#key").send_keys(site.writer)
    go(driver, by(driver, "#sign-in"))
    assert driver.current_url == site.url + "/ui/memories?user=ana"  # back to the page asked for
    driver.get(site.url + "/ui/")
    assert site.writer not in driver.current_url
    session = driver.get_cookie("dc_ui_session")
    assert session["httpOnly"] is True and site.writer not in session["value"]  # a session id, never the key
    assert driver.execute_script("return document.cookie") == ""  # neither cookie is readable by script
    row = by(driver, "#users tbody tr")
    cells = [c.text for c in row.find_elements("css selector", "td")]
    assert cells[0] == "ana" and int(cells[1]) > 70  # turns
    shot(driver, "users")
    go(driver, by(driver, "a.user-link"))
    assert "/ui/memories?user=ana" in driver.current_url


def test_list_and_page_through_memories(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/memories?user=ana")
    total = int(by(driver, "#total").text.split()[0])
    first = [a.get_attribute("href") for a in all_by(driver, "a.memory-link")]
    assert len(first) == 50 < total
    go(driver, by(driver, "#next"))
    second = [a.get_attribute("href") for a in all_by(driver, "a.memory-link")]
    assert second and not set(first) & set(second)


def test_search(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/memories?user=ana")
    box = by(driver, "#q")
    box.send_keys("Where does Ana live? Lisbon")
    go(driver, box, submit=True)
    assert "results" in by(driver, "#result-count").text
    rows = all_by(driver, "#results tbody tr")
    assert rows and any("Lisbon" in r.text for r in rows[:3])
    assert all_by(driver, "#results .leg") and float(by(driver, "#results .score").text) > 0
    shot(driver, "search")
    link = next(a for a in all_by(driver, "a.memory-link") if "moved to Lisbon" in a.text)
    go(driver, link)
    assert "/ui/memory/" in driver.current_url


def test_memory_and_its_source_turn(driver: Any, site: Site) -> None:
    open_found(driver, site, "Where does Ana live? Lisbon", "moved to Lisbon")
    assert "Lisbon" in by(driver, "#memory-text").text
    assert "I moved to Lisbon in 2021" in by(driver, "pre.verbatim").text
    events = {li.text.split()[0] for li in all_by(driver, "#history li")}
    assert events and events <= {"ADD", "MERGE", "PROMOTE", "UPDATE", "NOOP"}  # consolidation may have merged it already
    assert by(driver, "#write-controls")  # a writing key
    shot(driver, "memory")
    go(driver, by(driver, "a.turn-link"))
    assert "/ui/conversations" in driver.current_url and "conversation=trip" in driver.current_url
    assert "I moved to Lisbon in 2021" in by(driver, "#node-content").text
    # the page opens at the turn in the picture, marked, with its text in view beside it
    turn = driver.current_url.split("#dnode-")[1]
    node = by(driver, f"#dnode-{turn}")
    assert "selected" in node.get_attribute("class")
    in_view = "var r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight;"
    assert driver.execute_script(in_view, node) and driver.execute_script(in_view, by(driver, "#node-content"))
    shot(driver, "conversation-turn")


def test_a_script_in_a_memory_is_text(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/memories?user=ana&q=wiki+note+never+run")
    link = next(a for a in all_by(driver, "a.memory-link") if "window.__pwned" in a.text)
    assert "<script>window.__pwned = 1</script>" in link.text  # shown as the characters typed
    go(driver, link)
    assert "<script>window.__pwned = 1</script>" in by(driver, "#memory-text").text
    assert driver.execute_script("return window.__pwned") is None
    assert len(all_by(driver, "script")) == 1 and not all_by(driver, "main img")
    shot(driver, "escaped")


def test_graph(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/graph?user=ana")
    nodes = all_by(driver, "#graph .node")
    assert len(nodes) >= 5 and all_by(driver, "#graph .edges line")
    view = "return document.getElementById('graph').getAttribute('viewBox')"
    before = driver.execute_script(view)
    driver.execute_script(
        "var s = document.getElementById('graph'), r = s.getBoundingClientRect();"
        "s.dispatchEvent(new WheelEvent('wheel', {deltaY: -300, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true, cancelable: true}));"
    )
    zoomed = driver.execute_script(view)
    assert zoomed != before and float(zoomed.split()[2]) < float(before.split()[2])  # zoomed in
    shot(driver, "graph")
    box = by(driver, "#find")
    box.send_keys("lisb")
    go(driver, box, submit=True)
    go(driver, by(driver, "#found a.ent"))
    assert "Lisbon" in by(driver, "h1").text
    assert any("Lisbon" in li.text for li in all_by(driver, "#entity-memories li"))
    assert by(driver, "#graph .node.centre").get_attribute("data-name") == "Lisbon"
    wide = len(all_by(driver, "#graph .node"))
    from selenium.webdriver.support.ui import Select

    Select(by(driver, "#depth")).select_by_value("1")
    go(driver, by(driver, "#show"), submit=True)
    assert len(all_by(driver, "#graph .node")) <= wide
    shot(driver, "graph-entity")
    # the whole graph: a legend, and no visible label covers another
    driver.get(site.url + "/ui/graph?user=ana&whole=1&limit=300")
    assert all_by(driver, "#graph-legend li")
    boxes = driver.execute_script(
        "return Array.from(document.querySelectorAll('#node-labels text')).map(function (t) {"
        " var b = t.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height]; });"
    )
    assert boxes
    assert not any(
        a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3] for i, a in enumerate(boxes) for b in boxes[i + 1 :]
    )
    shot(driver, "graph-whole")


def test_conversation_dag(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/conversations?user=ana")
    go(driver, next(a for a in all_by(driver, "#conversations a") if a.text == "plans"))
    assert len(all_by(driver, "#dag .dnode")) >= 13
    assert all_by(driver, "#dag .dnode.k-summary rect") and all_by(driver, "#dag .summarises")
    lanes = {round(float(c.get_attribute("cx"))) for c in all_by(driver, "#dag .dnode circle")}
    assert len(lanes) >= 2  # the branch
    merge = next(n for n in all_by(driver, "#dag .dnode") if "I will fly via Porto" in n.get_attribute("textContent"))
    go(driver, merge)
    assert "Train or plane: I will fly via Porto." in by(driver, "#node-content").text
    assert "parents:" in by(driver, "aside.node-text").text
    shot(driver, "conversation")


def test_context_preview(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/context?user=ana")
    by(driver, "#context-q").send_keys("Who is Marta and where does she live?")
    budget = by(driver, "#budget")
    budget.clear()
    budget.send_keys("150")
    go(driver, by(driver, "#preview"))
    used, _, budget_shown = by(driver, "#context-total").text.split()[:3]
    assert int(budget_shown) == 150 and int(used) <= 150
    assert "Marta" in by(driver, "#context-text").text
    assert all_by(driver, "#part-memories tbody tr") and all_by(driver, "#left-out tbody tr")
    shot(driver, "context")


def test_lifecycle(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/lifecycle?user=ana")
    assert len(all_by(driver, "#curves .curve polyline")) >= 3
    assert "active memories" in by(driver, "#plan").text
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    page = by(driver, "html")
    by(driver, "#run").click()  # asks first
    WebDriverWait(driver, 10).until(ec.alert_is_present()).accept()
    wait_gone(driver, page)
    assert "memories decayed" in by(driver, "#report").text
    assert "/ui/lifecycle?" in driver.current_url and "ran_" in driver.current_url  # POST, then a page of its own
    shot(driver, "lifecycle")


def test_edit_and_forget(driver: Any, site: Site) -> None:
    open_found(driver, site, "Joao recommended book", "Designing Data-Intensive")
    text = by(driver, "#edit-text")
    text.clear()
    text.send_keys("Joao recommended the book Kafka: The Definitive Guide.")
    go(driver, by(driver, "#edit"))
    assert "memory updated" in by(driver, "#notice").text
    assert "Definitive Guide" in by(driver, "#memory-text").text and "UPDATE" in by(driver, "#history").text
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    page = by(driver, "html")
    by(driver, "#forget").click()
    WebDriverWait(driver, 10).until(ec.alert_is_present()).accept()
    wait_gone(driver, page)
    assert by(driver, "#status").text == "deleted"
    assert not all_by(driver, "#write-controls")


def test_read_only_key_has_no_write_controls(driver: Any, site: Site) -> None:
    driver.get(site.url + "/ui/")
    go(driver, by(driver, "header button.link"))  # sign out
    assert driver.current_url.endswith("/ui/login")
    sign_in(driver, site, site.reader)
    open_found(driver, site, "adopted dog Rex shelter", "Rex")
    page = driver.current_url
    mid = page.split("/ui/memory/")[1].split("?")[0]
    assert by(driver, "#read-only").text == "read-only"
    assert not all_by(driver, "#write-controls") and not all_by(driver, "#forget")
    shot(driver, "memory-read-only")
    driver.get(site.url + "/ui/lifecycle?user=ana")
    assert not all_by(driver, "#run")
    # a forged write from this browser is refused by the server
    page_el = by(driver, "html")
    driver.execute_script(
        "var f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
        "for (var [k, v] of [['user', 'ana'], ['csrf', arguments[1]]]) {"
        "  var i = document.createElement('input'); i.name = k; i.value = v; f.appendChild(i); }"
        "document.body.appendChild(f); f.submit();",
        f"/ui/memory/{mid}/forget",
        by(driver, "input[name=csrf]").get_attribute("value") if all_by(driver, "input[name=csrf]") else "",
    )
    wait_gone(driver, page_el)
    assert "read-only" in by(driver, "#error").text
    driver.get(page)
    assert by(driver, "#status").text == "active"


def test_activity_shows_what_an_agent_was_given(driver: Any, site: Site) -> None:
    import httpx

    headers = {"X-API-Key": site.writer}
    body = {"user_id": "ana", "query": "who recommended a book"}
    found = httpx.post(f"{site.url}/v1/search", json=body, headers=headers, timeout=30).json()["results"]
    assert found
    from selenium.webdriver.support.ui import WebDriverWait

    def listed(d: Any) -> bool:  # the server writes its records a moment after the call returns
        d.get(site.url + "/ui/activity?user=ana&via=rest&kind=search")
        return bool(all_by(d, "#calls tbody tr"))

    WebDriverWait(driver, 20, poll_frequency=0.5).until(listed)
    row = by(driver, "#calls tbody tr")
    assert "who recommended a book" in row.text and "rest" in row.text
    shot(driver, "activity")
    go(driver, by(driver, "a.call-link"))
    assert by(driver, "#call-query").text == "who recommended a book"
    ranks = [r.find_elements("css selector", "td")[0].text for r in all_by(driver, "#call-results tbody tr")]
    assert ranks == [str(i) for i in range(1, len(found) + 1)]
    go(driver, by(driver, "#run-again"))
    import re

    assert re.fullmatch(r"\d+ gained · \d+ lost · \d+ moved", by(driver, "#change-summary").text)
    assert len(all_by(driver, "#changes tbody tr")) >= len(found)  # every result then, and any new one
    shot(driver, "activity-call")
    # the first result's page names the call
    driver.get(f"{site.url}/ui/memory/{found[0]['memory_id']}?user=ana")
    assert "who recommended a book" in by(driver, "#retrievals").text


def test_dashboard_actions(driver: Any, site: Site) -> None:
    import httpx

    headers = {"X-API-Key": site.writer}
    said = {"user_id": "temp", "messages": [{"role": "user", "content": "I keep bees on the allotment."}], "agent_id": "gardener"}
    assert httpx.post(f"{site.url}/v1/memories", json=said, headers=headers, timeout=30).status_code == 201
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(site.url + "/ui/memories?user=temp")
    go(driver, by(driver, "a.memory-link"))
    go(driver, by(driver, "#pin"))
    assert "memory pinned" in by(driver, "#notice").text and by(driver, "#pin").text == "Unpin"
    meta = by(driver, "#edit-metadata")
    meta.clear()
    meta.send_keys('{"source": "garden"}')
    go(driver, by(driver, "#save-metadata"))
    assert "metadata changed" in by(driver, "#history").text and "garden" in by(driver, "dl.facts").text
    # forget it, then restore it
    page = by(driver, "html")
    by(driver, "#forget").click()
    WebDriverWait(driver, 10).until(ec.alert_is_present()).accept()
    wait_gone(driver, page)
    go(driver, by(driver, "#restore"))
    assert "memory restored" in by(driver, "#notice").text and by(driver, "#status").text == "active"
    expiry = by(driver, "#edit-expiry")
    driver.execute_script("arguments[0].value = '2099-01-02T03:04'", expiry)
    go(driver, by(driver, "#save-expiry"))
    assert "2099-01-02 03:04" in by(driver, "dl.facts").text
    # the search's own controls, and a search inside one conversation
    driver.get(site.url + "/ui/memories?user=temp")
    by(driver, "#q").send_keys("bees")
    from selenium.webdriver.support.ui import Select

    Select(by(driver, "#preset")).select_by_value("keyword")
    lim = by(driver, "#limit")
    lim.clear()
    lim.send_keys("1")
    by(driver, "#superseded").click()
    go(driver, by(driver, "#go"))
    assert "preset=keyword" in driver.current_url and "superseded=true" in driver.current_url
    assert len(all_by(driver, "#results tbody tr")) == 1
    driver.get(site.url + "/ui/conversations?user=ana&conversation=trip")
    by(driver, "#conversation-q").send_keys("Lisbon")
    go(driver, by(driver, "#conversation-search"))
    assert "conversation=trip" in driver.current_url and all_by(driver, "#results tbody tr")
    driver.get(site.url + "/ui/user?user=temp")
    assert "gardener" in by(driver, "#agents").text and by(driver, "#export-csv").get_attribute("href").endswith("format=csv")
    shot(driver, "user")

    by(driver, "#confirm-user").send_keys("temp")
    page = by(driver, "html")
    by(driver, "#delete-user-button").click()
    WebDriverWait(driver, 10).until(ec.alert_is_present()).accept()
    wait_gone(driver, page)
    assert "deleted user temp" in by(driver, "#notice").text
    assert "temp" not in [a.text for a in all_by(driver, "a.user-link")]
