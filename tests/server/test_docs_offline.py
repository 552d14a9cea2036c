"""The REST server's /docs (Swagger UI) and /redoc work offline: every script, style sheet and
image they load is served by the server itself, never by a CDN."""

from __future__ import annotations

import re

import pytest

from tests.server.helpers import Api

ASSET = re.compile(r"""(?:src|href)=["']([^"']+)["']""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_api_docs_load_every_asset_from_the_server(local_api: Api, page: str) -> None:
    async with local_api.client() as c:
        r = await c.get(page)
        assert r.status_code == 200
        assets = ASSET.findall(r.text)
        assert any(a.endswith(".js") for a in assets), assets
        for url in assets:
            assert url.startswith("/"), f"{page} loads {url} from outside the server"
            got = await c.get(url)
            assert got.status_code == 200, url
            assert len(got.content) > 1000 or url.endswith(".png"), url
        # the schema the page renders
        assert (await c.get("/openapi.json")).json()["info"]["title"] == "DeepContext API"
