"""Every add is one transaction: a failure anywhere leaves nothing behind."""

from __future__ import annotations

import numpy as np
import pytest

from deepcontext import DeepContext, EmbeddingError
from deepcontext.embed import HashEmbedder


class FlakyEmbedder(HashEmbedder):
    """A test double of the embedder seam: fails on its n-th batch."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(256)
        self.calls = 0
        self.fail_on = fail_on

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("embedding service went away")
        return super().embed_batch(texts)


async def test_embedder_failure_halfway_leaves_no_rows(db_url: str, clock) -> None:
    emb = FlakyEmbedder(fail_on=2)
    emb.batch_size = 2  # several batches per add, so the failure is "halfway"
    ctx = DeepContext(database_url=db_url, embedder=emb, clock=clock)
    await ctx.init()
    try:
        msgs = [{"role": "user", "content": f"Fact number {i}: I visited city {i} last year."} for i in range(6)]
        with pytest.raises(EmbeddingError):
            await ctx.add(msgs, user_id="u")
        assert all(v == 0 for v in (await ctx.stats("u")).values())
        # the same add works once the embedder recovers, and writes everything
        r = await ctx.add(msgs, user_id="u")
        assert len(r.turn_ids) == 6
        assert (await ctx.stats("u"))["turns"] == 6
    finally:
        await ctx.close()


async def test_bad_input_writes_nothing(ctx: DeepContext) -> None:
    from deepcontext import ValidationError

    bad = [
        [],
        [{"role": "user", "content": "ok"}, {"role": "robot", "content": "beep"}],
        [{"role": "user", "content": 42}],
        [{"role": "user", "content": "   "}],
        [{"role": "user", "content": "x" * 40_000}],
        [{"role": "user"}],
        [{"role": "user", "content": "hi", "colour": "blue"}],
        "I am a string",
        [{"role": "user", "content": "hi", "timestamp": "not a date"}],
        [{"role": "user", "content": "a NUL \x00 inside"}],
        [{"role": "user", "content": "a lone surrogate \ud800 inside"}],
        [{"role": "user", "content": "fine", "metadata": {"k": "bad \x00"}}],
        [{"role": "user", "content": "fine", "metadata": {"k": object()}}],
    ]
    for messages in bad:
        with pytest.raises(ValidationError):
            await ctx.add(messages, user_id="u")  # type: ignore[arg-type]
    for user in ("", "   ", None, "x" * 300, "a\x00b"):
        with pytest.raises(ValidationError):
            await ctx.add([{"role": "user", "content": "hello there friend"}], user_id=user)  # type: ignore[arg-type]
    assert all(v == 0 for v in (await ctx.stats("u")).values())
    for limit in (0, -1, 101, "5", True):
        with pytest.raises(ValidationError):
            await ctx.search("x", user_id="u", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await ctx.search("", user_id="u")
    with pytest.raises(ValidationError):
        await ctx.search("x", user_id="u", tier="medium_term")
    with pytest.raises(ValidationError):
        await ctx.get(0, "u")
    with pytest.raises(ValidationError):
        await ctx.update(1, "", "u")
    with pytest.raises(ValidationError):
        await ctx.list("u", cursor="garbage!")
    import base64

    huge = base64.urlsafe_b64encode(b"v1:" + str(10**30).encode()).decode().rstrip("=")
    with pytest.raises(ValidationError):
        await ctx.list("u", cursor=huge)
    with pytest.raises(ValidationError):
        await ctx.add([{"role": "user", "content": "hello there friend"}], user_id="u", ttl=-5)
