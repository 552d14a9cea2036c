"""The inspector's dashboard actions over HTTP: pin, unpin, restore, metadata and expiry of a memory
(each in its history), a user's page with agents and runs, exports as JSON and CSV, deletion behind
a typed confirmation, and the search's preset, limit and older-values controls."""

from __future__ import annotations

import csv
import io
import json
import re

from tests.server.helpers import Api
from tests.server.test_inspector import browser

U = "acme/ana"


async def _seed(api: Api) -> list[int]:
    r = await api.ctx.add([{"role": "user", "content": "I live in Leeds."}], U, "home", agent_id="coach", run_id="week-1")
    await api.ctx.add([{"role": "user", "content": "I moved to York."}], U, "home", agent_id="coach")
    r2 = await api.ctx.add([{"role": "user", "content": "I play the cello."}], U, "music")
    return [*r.memory_ids, *r2.memory_ids]


async def test_pin_restore_metadata_and_expiry_from_a_memorys_page(api: Api) -> None:
    *_, mid = await _seed(api)
    async with browser(api, api.key("acme")) as (c, token):
        form = {"user": "ana", "csrf": token}
        page = (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        assert 'id="pin"' in page and ">Pin<" in page
        r = await c.post(f"/ui/memory/{mid}/pin", data=form)
        assert r.status_code == 303 and "notice=pinned" in r.headers["location"]
        assert (await api.ctx.get(mid, U)).pinned
        assert ">Unpin<" in (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        await c.post(f"/ui/memory/{mid}/pin", data={**form, "pinned": "0"})
        assert not (await api.ctx.get(mid, U)).pinned

        r = await c.post(f"/ui/memory/{mid}/metadata", data={**form, "metadata": '{"source": "email"}'})
        assert r.status_code == 303 and (await api.ctx.get(mid, U)).metadata == {"source": "email"}
        for bad in ("{not json", "[1, 2]"):
            r = await c.post(f"/ui/memory/{mid}/metadata", data={**form, "metadata": bad})
            assert r.status_code == 400 and "metadata" in r.text, bad
        r = await c.post(f"/ui/memory/{mid}/expiry", data={**form, "expires_at": "2099-05-01T10:30"})
        assert r.status_code == 303 and (await api.ctx.get(mid, U)).expires_at.isoformat().startswith("2099-05-01T10:30")
        r = await c.post(f"/ui/memory/{mid}/expiry", data={**form, "expires_at": "2001-01-01T00:00"})
        assert r.status_code == 400 and "past" in r.text
        await c.post(f"/ui/memory/{mid}/expiry", data={**form, "expires_at": ""})
        assert (await api.ctx.get(mid, U)).expires_at is None

        await api.ctx.delete(mid, U)
        page = (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        assert 'id="restore"' in page and 'id="write-controls"' not in page
        r = await c.post(f"/ui/memory/{mid}/restore", data=form)
        assert r.status_code == 303 and (await api.ctx.get(mid, U)).status.value == "active"
        history = (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        for reason in ("pinned", "unpinned", "metadata changed", "expiry set", "expiry cleared", "restored"):
            assert f'<div class="reason">{reason}</div>' in history, reason
        r = await c.post(f"/ui/memory/{mid}/restore", data=form)  # active already
        assert r.status_code == 400 and "only deleted or decayed" in r.text


async def test_a_users_page_exports_and_deletes(api: Api) -> None:
    *_, cello = await _seed(api)
    await api.ctx.update(cello, '=HYPERLINK("http://evil.example") cello', U)
    await api.ctx.add([{"role": "user", "content": "I live in Oslo."}], "acme/bob")
    async with browser(api, api.key("acme")) as (c, token):
        page = (await c.get("/ui/user", params={"user": "ana"})).text
        agents = re.search(r'<table class="grid" id="agents">(.*?)</table>', page, re.S).group(1)
        assert "coach" in agents and "/ui/memories?user=ana&amp;agent=coach" in agents
        assert "week-1" in re.search(r'id="runs">(.*?)</table>', page, re.S).group(1)

        got = await c.get("/ui/export", params={"user": "ana", "format": "json"})
        assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
        rows = json.loads(got.text)
        assert len(rows) == (await api.ctx.stats(U))["memories"] and {r["status"] for r in rows} >= {"active", "superseded"}
        table = list(csv.DictReader(io.StringIO((await c.get("/ui/export", params={"user": "ana", "format": "csv"})).text)))
        assert [r["id"] for r in table] == [str(r["id"]) for r in rows]
        assert any(r["text"].startswith("'=HYPERLINK") for r in table)  # a formula is written as text
        assert all(not r["text"].startswith("=") for r in table)
        assert (await c.get("/ui/export", params={"user": "ana", "format": "xml"})).status_code == 400

        r = await c.post("/ui/user/delete", data={"user": "ana", "csrf": token, "confirm": "an"})
        assert r.status_code == 400 and (await api.ctx.stats(U))["memories"] > 0
        r = await c.post("/ui/user/delete", data={"user": "ana", "csrf": token, "confirm": "ana"})
        assert r.status_code == 303 and (await api.ctx.stats(U))["memories"] == 0
        assert "deleted user ana" in (await c.get(r.headers["location"])).text
        assert (await api.ctx.stats("acme/bob"))["memories"] > 0


async def test_search_controls_and_a_conversations_search(api: Api) -> None:
    await _seed(api)
    async with browser(api, api.key("acme")) as (c, _):
        q = {"user": "ana", "q": "where do I live"}
        now = (await c.get("/ui/memories", params=q)).text
        assert "York" in now and "replaced by" not in now
        older = (await c.get("/ui/memories", params={**q, "superseded": "true"})).text
        assert re.search(r"Leeds[^<]*</a> <span class=\"badge superseded\">replaced by", older)
        few = (await c.get("/ui/memories", params={**q, "limit": 1, "preset": "keyword"})).text
        assert re.search(r'id="result-count">1 results', few)
        for bad in ({"limit": 0}, {"limit": 101}, {"preset": "magic"}):
            assert (await c.get("/ui/memories", params={**q, **bad})).status_code == 400, bad
        conv = (await c.get("/ui/conversations", params={"user": "ana", "conversation": "music"})).text
        assert 'id="search-conversation"' in conv and 'name="conversation" value="music"' in conv
        inside = (await c.get("/ui/memories", params={"user": "ana", "q": "where do I live", "conversation": "music"})).text
        assert "York" not in inside


async def test_rest_patch_and_restore(api: Api) -> None:
    *_, mid = await _seed(api)
    async with api.client(api.key("acme")) as c:
        url = f"/v1/memories/{mid}"
        r = await c.patch(
            url, json={"user_id": "ana", "pinned": True, "metadata": {"k": 1}, "expires_at": "2099-01-01T00:00:00Z"}
        )
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["pinned"] is True and got["metadata"] == {"k": 1} and got["expires_at"].startswith("2099-01-01")
        history = (await c.get(f"{url}/history", params={"user_id": "ana"})).json()
        assert history[-1]["details"]["pinned"] is True and history[-1]["details"]["metadata"]["new"] == {"k": 1}
        assert sum(1 for h in history if h["event"] == "UPDATE") == 1  # three changes, one transaction, one entry
        r = await c.patch(url, json={"user_id": "ana", "expires_at": None, "pinned": False})
        assert r.status_code == 200 and r.json()["expires_at"] is None and r.json()["pinned"] is False
        assert (await c.patch(url, json={"user_id": "ana"})).json()["text"] == got["text"]  # nothing to change
        for bad in ({"user_id": "ana", "text": None}, {"user_id": "ana", "pinned": "yes"}, {"user_id": "ana", "metadata": [1]}):
            assert (await c.patch(url, json=bad)).status_code == 422, bad
        r = await c.patch(url, json={"user_id": "ana", "text": "changed", "expires_at": "2001-01-01T00:00:00Z"})
        assert r.status_code in (400, 422) and (await api.ctx.get(mid, U)).text != "changed"  # nothing written
        assert (await c.delete(url, params={"user_id": "ana"})).status_code == 200
        r = await c.post(f"{url}/restore", json={"user_id": "ana"})
        assert r.status_code == 200 and r.json()["status"] == "active"
        assert (await c.post(f"{url}/restore", json={"user_id": "ana"})).status_code == 400
    async with api.client(api.key("acme", read_only=True)) as c:
        assert (await c.post(f"/v1/memories/{mid}/restore", json={"user_id": "ana"})).status_code == 403


async def test_an_export_of_several_batches_holds_every_memory_once(api: Api) -> None:
    from deepcontext.server.inspector.dashboard_pages import EXPORT_BATCH

    said = [{"role": "user", "content": f"note number {i} about the garden"} for i in range(EXPORT_BATCH * 2 + 30)]
    await api.ctx.add(said, "acme/zoe", infer=False)
    total = (await api.ctx.stats("acme/zoe"))["memories"]
    assert total > 2 * EXPORT_BATCH
    async with browser(api, api.key("acme")) as (c, _token):
        for fmt in ("json", "csv"):
            r = await c.get("/ui/export", params={"user": "zoe", "format": fmt})
            assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
            text = r.text
            ids = (
                [m["id"] for m in json.loads(text)]
                if fmt == "json"
                else [int(m["id"]) for m in csv.DictReader(io.StringIO(text))]
            )
            assert len(ids) == total and ids == sorted(ids) and len(set(ids)) == total  # none lost or doubled at a batch's edge
