"""REST errors a newcomer reads: what a bad id must not contain rather than the schema's regex, and a
deleted memory said to be deleted."""

from __future__ import annotations

from tests.server.helpers import Api


async def test_a_bad_id_is_described_not_shown_as_a_regex(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        for body, field, words in (
            ({"user_id": "ana/bo", "query": "x"}, "user_id", "must not contain '/'"),
            ({"user_id": "ana", "query": "x", "conversation_id": ["a\x01b"]}, "conversation_id", "control characters"),
        ):
            r = await c.post("/v1/search", json=body)
            assert r.status_code == 422, r.text
            problem = r.json()
            assert field in problem["detail"] and words in problem["detail"], problem
            for text in [problem["detail"], *(e["msg"] for e in problem["errors"])]:
                assert "^" not in text and "\\x" not in text and "pattern" not in text and "\n" not in text, text


async def test_deleting_a_deleted_memory_says_so(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I live in Lisbon."}]})
        assert r.status_code in (200, 201), r.text
        mid = r.json()["memory_ids"][0]
        assert (await c.delete(f"/v1/memories/{mid}", params={"user_id": "ana"})).status_code == 200
        r = await c.delete(f"/v1/memories/{mid}", params={"user_id": "ana"})
        assert r.status_code == 404 and "already deleted" in r.json()["detail"], r.text
