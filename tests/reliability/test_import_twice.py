"""Importing the same export twice writes it once: a retried import is idempotent."""

from __future__ import annotations

import json

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder


async def test_importing_an_export_twice_writes_it_once(db_url: str) -> None:
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{"role": "user", "name": "Ana", "content": "I live in Lisbon and work at Globex"}], user_id="ana")
        await ctx.add([{"role": "user", "name": "Ana", "content": "My sister Rita plays the cello"}], user_id="ana")
        # through JSON, as the CLI's files go
        records = [json.loads(json.dumps(r)) async for r in ctx.export("ana")]
        first = await ctx.import_records(records, user_id="copy")
        stats = await ctx.stats("copy")
        again = await ctx.import_records(records, user_id="copy")
        assert again == {**first, "already_imported": 1}
        assert await ctx.stats("copy") == stats
        hits = await ctx.search("Where does Ana live?", user_id="copy", limit=20)
        texts = [h.text for h in hits.results]
        assert texts and len(texts) == len(set(texts))
        # another user may receive the same export; the user deleted and re-created receives it anew
        assert "already_imported" not in await ctx.import_records(records, user_id="other")
        await ctx.delete_user("copy")
        assert "already_imported" not in await ctx.import_records(records, user_id="copy")
