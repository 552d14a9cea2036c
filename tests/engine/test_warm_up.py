"""The embedding model loads when the engine opens (in the background), so the first search does not
wait for it; the server loads it before it answers; a setting turns it off."""

from __future__ import annotations

import asyncio
import time

from deepcontext import DeepContext
from deepcontext.embed.minilm import MiniLMEmbedder
from deepcontext.server import create_app
from deepcontext.settings import DeepContextSettings


async def _loaded_within(embedder: MiniLMEmbedder, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if embedder.loaded:
            return True
        await asyncio.sleep(0.05)
    return embedder.loaded


async def test_the_model_loads_in_the_background_when_the_engine_opens(tmp_path) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/w.db") as ctx:
        assert isinstance(ctx.embedder, MiniLMEmbedder)
        assert await _loaded_within(ctx.embedder, 30)  # nothing was embedded: the warm-up loaded it
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/w.db", warm_up_embedder=False) as ctx:
        assert isinstance(ctx.embedder, MiniLMEmbedder)
        await asyncio.sleep(1.0)
        assert not ctx.embedder.loaded  # off: the first embedding loads it


async def test_the_server_loads_the_model_before_it_answers(tmp_path) -> None:
    settings = DeepContextSettings(database_url=f"sqlite:///{tmp_path}/s.db", require_auth=False)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        ctx = app.state.deepcontext.ctx
        assert isinstance(ctx.embedder, MiniLMEmbedder) and ctx.embedder.loaded
