"""`bench speed`'s stage table: the stages it times are the search's own (they rank what the search
returns), on both backends, with a user whose memories every leg finds."""

from __future__ import annotations

from deepcontext import DeepContext
from deepcontext_bench.search_stages import STAGES, search_stages
from deepcontext_bench.synthetic import SyntheticChat


async def test_the_stages_rank_what_the_search_returns(db_url: str) -> None:
    async with DeepContext(database_url=db_url, embedder="hash", track_access=False) as ctx:
        gen = SyntheticChat(seed=3)
        turns = gen.turns(10**6)
        for _ in range(4):
            msgs = [{"role": role, "content": text} for role, _, text in (next(turns) for _ in range(50))]
            await ctx.add(msgs, "u")
        await ctx.flush()  # the consolidation the adds started: it would change memories between the runs
        queries = SyntheticChat(seed=5).questions(30)
        out = await search_stages(ctx, "u", queries)
        assert out["same_results"] == 1.0
        assert list(out["stages"]) == list(STAGES)
        for name, t in out["stages"].items():
            assert 0 < t["p50"] <= t["p95"], name
        # the legs are parts of the stage that reads them (medians: one slow query on a busy machine
        # moves a mean, not this)
        legs = sum(out["stages"][leg]["p50"] for leg in ("vector leg", "keyword leg", "graph leg"))
        assert legs < out["stages"]["legs and candidates' fields"]["p50"] * 1.5
        # the user's memories were found at all (an empty user would rank nothing the same way)
        found = await ctx.search(queries[0], "u")
        assert found.results
