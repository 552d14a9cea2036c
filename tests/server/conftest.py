"""Fixtures of the server tests: the REST app over a real database (SQLite file and PostgreSQL via
``db_url``) with the hash embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from tests.server.helpers import Api, running


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(256))
    app = create_app(ctx)
    try:
        async with running(app):
            yield Api(app, ctx)
    finally:
        await ctx.close()


@pytest.fixture
async def local_api(tmp_path) -> AsyncIterator[Api]:
    """Authentication off (loopback only), SQLite."""
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/local.db", embedder=HashEmbedder(256), require_auth=False)
    app = create_app(ctx)
    try:
        async with running(app):
            yield Api(app, ctx, host="127.0.0.1:8000")
    finally:
        await ctx.close()
