"""Real token counting: with the local MiniLM embedder, tokens are WordPiece tokens of its own
tokenizer, the text counts exactly what the breakdown says, and it stays within the budget."""

from __future__ import annotations

from deepcontext import DeepContext, ManualClock
from deepcontext.embed.minilm import MiniLMEmbedder
from tests.context.helpers import T0, seed


async def test_minilm_counts_real_tokens(tmp_path) -> None:
    embedder = MiniLMEmbedder()
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=embedder, clock=ManualClock(T0))
    await ctx.init()
    try:
        await seed(ctx)
        await ctx.add([{"role": "user", "content": "我下个月去里斯本开会，顺便看看大西洋。"}], "ana", "trip")
        for budget in (10, 40, 90, 400):
            res = await ctx.context("When do I fly to Lisbon for the conference?", "ana", "trip", budget_tokens=budget)
            assert "tokenizer" in res.token_counter and embedder.model_id in res.token_counter
            assert res.total_tokens <= budget
            # WordPiece splits at whitespace: the pieces add up exactly to the whole text
            assert res.text_tokens == embedder.count_tokens(res.text) == res.total_tokens
            assert sum(p.tokens for p in res.parts) == res.total_tokens
            for item in res.items:
                assert item.tokens == embedder.count_tokens(item.text)
        assert "Lisbon" in res.text and "[said 2025-05-01, event 2025-06-10]" in res.text
        # not the estimate: Chinese counts a token per character, far from len / 4
        zh = "我下个月去里斯本开会"
        assert embedder.count_tokens(zh) == len(zh) != (len(zh) + 3) // 4
        # the semantic leg makes a paraphrase relevant without a shared word
        res = await ctx.context("Which musical instrument does she practise?", "ana")
        assert any("cello" in i.text for i in res.part("memories").items)
    finally:
        await ctx.close()
