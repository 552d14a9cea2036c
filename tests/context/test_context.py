"""DeepContext.context: the budget, the parts and their order, the breakdown, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from deepcontext import DeepContext, ManualClock, SyncDeepContext
from deepcontext.context import ContextResult, ContextShares
from deepcontext.embed import HashEmbedder
from deepcontext.errors import ValidationError
from deepcontext.query import MemorySchema
from tests.context.helpers import T0, open_ctx, seed

LISBON = "When do I fly to Lisbon?"


def check_accounting(res: ContextResult, ctx: DeepContext) -> None:
    """The breakdown adds up and the text never counts more than the budget."""
    assert res.total_tokens <= res.budget_tokens
    assert sum(p.tokens for p in res.parts) == res.total_tokens
    for p in res.parts:
        assert p.tokens == (p.header_tokens if p.items else 0) + sum(i.tokens for i in p.items), p.name
        assert p.header_tokens == (ctx.embedder.count_tokens(f"\n## {p.title}\n") if p.items else 0)
        for i in p.items:
            assert i.tokens == ctx.embedder.count_tokens(i.text + "\n")
            assert i.text in res.text
    assert res.text_tokens == ctx.embedder.count_tokens(res.text) <= res.total_tokens
    assert [p.name for p in res.parts] == ["pinned", "memories", "tiers", "conversation"]
    assert abs(sum(p.share for p in res.parts) - 1.0) < 1e-6


async def test_budget_is_never_exceeded(ctx: DeepContext) -> None:
    await seed(ctx)
    for conversation in (None, "trip"):
        for budget in (1, 8, 25, 60, 120, 400, 2000):
            res = await ctx.context(LISBON, "ana", conversation, budget_tokens=budget)
            check_accounting(res, ctx)
    small = await ctx.context(LISBON, "ana", "trip", budget_tokens=25)
    big = await ctx.context(LISBON, "ana", "trip", budget_tokens=2000)
    assert len(small.items) < len(big.items)
    assert any(lo.cause == "budget" and lo.tokens for lo in small.left_out)


async def test_the_parts_in_order_with_pinned_first_and_dates(ctx: DeepContext) -> None:
    await seed(ctx)
    res = await ctx.context(LISBON, "ana", "trip")
    assert res.user_id == "ana" and res.conversation_id == "trip" and res.budget_tokens == 2000
    text = res.text
    assert text.startswith("## Pinned memories\n- [said 2025-05-01] Ana is allergic to peanuts")
    heads = [text.index(f"## {t}") for t in ("Pinned memories", "Relevant memories", "Working memory", "Conversation so far")]
    assert heads == sorted(heads)
    pinned = res.part("pinned").items
    assert [i.text for i in pinned] == ["- [said 2025-05-01] Ana is allergic to peanuts"]
    assert pinned[0].why.startswith("pinned memory") and pinned[0].memory_id
    # the retrieved fact carries both dates: when it was said and when it happens
    fact = next(i for i in res.part("memories").items if "Lisbon" in i.text)
    assert "[said 2025-05-01, event 2025-06-10]" in fact.text
    assert fact.said_at == T0 and fact.occurred_at is not None and fact.occurred_at.date().isoformat() == "2025-06-10"
    assert fact.score and "search rank" in fact.why
    check_accounting(res, ctx)


async def test_relevant_memories_beat_irrelevant_ones(ctx: DeepContext) -> None:
    await seed(ctx)
    res = await ctx.context(LISBON, "ana")
    shown = " ".join(i.text for i in res.part("memories").items)
    assert "Lisbon" in shown and "cello" not in shown
    cello = [lo for lo in res.left_out if "cello" in lo.preview and lo.part == "memories"]
    assert cello and all(lo.cause == "relevance" and "similarity" in lo.why for lo in cello)
    assert res.part("memories").left_out.get("relevance", 0) >= len(cello)
    # with room for one memory only, it is the relevant one
    one = await ctx.context(LISBON, "ana", budget_tokens=40, shares={"memories": 1, "pinned": 0, "tiers": 0})
    (only,) = one.part("memories").items
    assert "Lisbon" in only.text
    # and the other way round
    res = await ctx.context("Which instrument does Ana play on Sundays?", "ana")
    shown = " ".join(i.text for i in res.part("memories").items)
    assert "cello" in shown and "Lisbon" not in shown


async def test_tier_sections_are_selected_by_intent(ctx: DeepContext) -> None:
    await seed(ctx)
    (await ctx.tiers("ana", MemorySchema(sections=["errors"]))).state.set("empty", "  \n")  # says nothing
    res = await ctx.context("why did the booking job crash?", "ana", budget_tokens=2000)
    tiers = res.part("tiers").items
    assert [i.id for i in tiers] == ["state:errors"]
    assert tiers[0].text == "[errors]\n- the booking job crashed with OOM at 02:15"
    assert tiers[0].tier == "state" and tiers[0].key == "errors" and tiers[0].score >= 0.3
    assert "intent score" in tiers[0].why and "crash" in tiers[0].why
    left = {lo.id: lo for lo in res.left_out if lo.part == "tiers"}
    assert {"state:status", "state:travel", "notes:packing"} <= set(left)
    assert all(lo.cause == "relevance" and lo.tokens is None for lo in left.values())
    # another intent, other sections; the notes tier too
    res = await ctx.context("what should I pack for the Lisbon conference? the cello?", "ana")
    assert {i.id for i in res.part("tiers").items} >= {"state:travel", "notes:packing"}
    assert "state:errors" not in {i.id for i in res.part("tiers").items}
    # a schema's keywords and a threshold change what is selected
    schema = MemorySchema(sections=["errors"], keywords={"errors": ["failure", "incident"]})
    res = await ctx.context("any incident tonight?", "ana", schema=schema)
    assert [i.id for i in res.part("tiers").items] == ["state:errors"]
    res = await ctx.context("why did the booking job crash at the airport?", "ana")
    assert [i.id for i in res.part("tiers").items] == ["state:errors"]
    res = await ctx.context("why did the booking job crash at the airport?", "ana", min_intent=1.0)
    assert res.part("tiers").items == [] and res.part("tiers").left_out == {"relevance": 4}


async def test_conversation_path_in_order_newest_kept(ctx: DeepContext, clock: ManualClock) -> None:
    for i in range(8):
        clock.advance(minutes=5)
        await ctx.add(
            [{"role": "user", "content": f"question number {i} about the garden"},
             {"role": "assistant", "content": f"answer number {i}"}],
            "ana", "chat",
        )  # fmt: skip
    res = await ctx.context("garden", "ana", "chat", shares={"conversation": 1, "pinned": 0, "memories": 0, "tiers": 0})
    conv = res.part("conversation").items
    assert [i.text for i in conv] == [
        f"user: question number {i} about the garden\nassistant: answer number {i}" for i in range(8)
    ]
    positions = [res.text.index(i.text) for i in conv]
    assert positions == sorted(positions)
    assert all(i.node_id is not None and len(i.turn_ids) == 2 for i in conv)
    # a small budget keeps the newest rounds, contiguous, still oldest first
    small = await ctx.context("garden", "ana", "chat", budget_tokens=60, shares={"conversation": 1})
    kept = [i.text.split("\n")[0] for i in small.part("conversation").items]
    assert kept and kept == [f"user: question number {i} about the garden" for i in range(8 - len(kept), 8)]
    assert all(lo.cause == "budget" for lo in small.left_out if lo.part == "conversation")
    check_accounting(small, ctx)
    # max_conversation_nodes bounds what is considered
    res = await ctx.context("garden", "ana", "chat", max_conversation_nodes=3)
    assert len(res.part("conversation").items) == 3
    # an unknown conversation is empty, not an error
    res = await ctx.context("garden", "ana", "nope")
    assert res.part("conversation").items == []


async def test_turns_shown_in_the_conversation_are_not_repeated(ctx: DeepContext) -> None:
    await seed(ctx)
    res = await ctx.context(LISBON, "ana", "trip")
    conv_turns = {t for i in res.part("conversation").items for t in i.turn_ids}
    assert conv_turns
    dups = [lo for lo in res.left_out if lo.cause == "duplicate"]
    assert dups and all(lo.part == "memories" for lo in dups)
    assert res.text.count("I fly to Lisbon on June 10 for the conference") == 1  # only in the conversation


async def test_a_long_last_message_is_clipped_to_its_share(ctx: DeepContext) -> None:
    long = " ".join(f"word{i}" for i in range(3000))
    await ctx.add([{"role": "user", "content": long}], "ana", "long", infer=False)
    res = await ctx.context("word7", "ana", "long", budget_tokens=300)
    (node,) = res.part("conversation").items
    assert node.clipped and node.text.startswith("user: word0 word1") and node.text.endswith(" …")
    assert res.part("conversation").tokens <= res.part("conversation").allotted_tokens
    check_accounting(res, ctx)


async def test_an_empty_user_gets_an_empty_valid_context(ctx: DeepContext) -> None:
    await seed(ctx, "someone-else")
    res = await ctx.context("anything at all?", "nobody", "default")
    assert res.text == "" and res.total_tokens == 0 and res.text_tokens == 0
    assert res.items == [] and res.left_out == []
    assert [p.tokens for p in res.parts] == [0, 0, 0, 0] and all(p.left_out == {} for p in res.parts)
    assert ContextResult.model_validate_json(res.model_dump_json()) == res
    assert await ctx.users() == ["someone-else"]  # reading created nothing


async def test_shares_turn_parts_off_and_are_validated(ctx: DeepContext) -> None:
    await seed(ctx)
    res = await ctx.context(LISBON, "ana", "trip", shares={"tiers": 0, "conversation": 0})
    assert res.part("tiers").items == [] and res.part("conversation").items == []
    assert not [lo for lo in res.left_out if lo.part in ("tiers", "conversation")]
    assert res.part("tiers").share == 0 and abs(res.part("memories").share - 0.35 / 0.5) < 1e-6
    res = await ctx.context(LISBON, "ana", shares=ContextShares(pinned=1, memories=1, tiers=1, conversation=1))
    assert {p.share for p in res.parts} == {0.25}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"budget_tokens": -5}, "budget_tokens"),
        ({"budget_tokens": True}, "budget_tokens"),
        ({"budget_tokens": "100"}, "budget_tokens"),
        ({"budget_tokens": 10**7}, "budget_tokens"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 5000}, "query"),
        ({"query": None}, "query"),
        ({"user_id": ""}, "user_id"),
        ({"conversation_id": ""}, "conversation_id"),
        ({"shares": {"bogus": 1}}, "shares"),
        ({"shares": {"memories": -1}}, "shares.memories"),
        ({"shares": {"pinned": 0, "memories": 0, "tiers": 0, "conversation": 0}}, "shares"),
        ({"shares": [0.5]}, "shares"),
        ({"min_intent": 2}, "min_intent"),
        ({"min_similarity": -0.1}, "min_similarity"),
        ({"memory_limit": 0}, "memory_limit"),
        ({"memory_limit": 101}, "memory_limit"),
        ({"max_conversation_nodes": 0}, "max_conversation_nodes"),
        ({"schema": {"sections": ["x"]}}, "schema"),
    ],
)
async def test_validation_errors(sqlite_ctx: DeepContext, kwargs: dict, field: str) -> None:
    args = {"query": "hello", "user_id": "ana", **kwargs}
    query, user = args.pop("query"), args.pop("user_id")
    with pytest.raises(ValidationError) as err:
        await sqlite_ctx.context(query, user, **args)
    assert err.value.field == field
    assert await sqlite_ctx.users() == []


async def test_same_data_same_context(tmp_path) -> None:
    results = []
    for _ in range(2):
        clock = ManualClock(T0)
        ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/d{len(results)}.db", embedder=HashEmbedder(256),
                          clock=clock, track_access=False)  # fmt: skip
        await ctx.init()
        try:
            await seed(ctx)
            a = await ctx.context(LISBON, "ana", "trip", budget_tokens=150)
            b = await ctx.context(LISBON, "ana", "trip", budget_tokens=150)
            assert a.model_dump(exclude={"took_ms"}) == b.model_dump(exclude={"took_ms"})
            results.append(a)
        finally:
            await ctx.close()
    assert results[0].text == results[1].text  # a fresh database with the same data: the same text


async def test_included_memories_count_as_accessed(tmp_path, clock: ManualClock) -> None:
    url = f"sqlite:///{tmp_path}/acc.db"
    ctx = open_ctx(url, clock)
    await ctx.init()
    await seed(ctx)
    res = await ctx.context(LISBON, "ana")
    included = [i.memory_id for i in res.items if i.memory_id]
    left = [lo.memory_id for lo in res.left_out if lo.memory_id and lo.cause == "relevance"]
    await ctx.close()  # waits for the background bump
    ctx = open_ctx(url, clock)
    await ctx.init()
    try:
        assert included and left
        assert [(await ctx.get(m, "ana")).access_count for m in included] == [1] * len(included)
        assert [(await ctx.get(m, "ana")).access_count for m in left] == [0] * len(left)
    finally:
        await ctx.close()


def test_sync_deepcontext_has_it_too(tmp_path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder=HashEmbedder(256)) as ctx:
        ctx.add([{"role": "user", "name": "Ana", "content": "I fly to Lisbon on June 10."}], "ana", "trip")
        cq = ctx.tiers("ana", MemorySchema(sections=["errors"]))
        cq.state.set("errors", "[errors]\nthe Lisbon booking failed\n")
        res = ctx.context(LISBON, "ana", "trip", budget_tokens=500)
        assert isinstance(res, ContextResult)
        assert "Lisbon" in res.part("memories").items[0].text
        assert [i.id for i in res.part("tiers").items] == ["state:errors"]
        assert res.part("conversation").items


async def test_a_larger_budget_considers_more_search_results(sqlite_ctx: DeepContext) -> None:
    ctx = sqlite_ctx
    await ctx.add(
        [{"role": "user", "content": f"I visited museum number {i} in Lisbon last year."} for i in range(60)],
        "ana", "trip", infer=False,
    )  # fmt: skip
    only = {"pinned": 0, "memories": 1, "tiers": 0, "conversation": 0}
    query = "Which museums did I visit in Lisbon?"
    small = await ctx.context(query, "ana", budget_tokens=1000, shares=only)
    big = await ctx.context(query, "ana", budget_tokens=4000, shares=only)
    capped = await ctx.context(query, "ana", budget_tokens=4000, shares=only, memory_limit=20)
    n_small, n_big, n_capped = (len(r.part("memories").items) for r in (small, big, capped))
    assert n_capped <= 20 < n_big and n_small < n_big
    check_accounting(big, ctx)


async def test_a_turn_only_its_neighbour_lifts_takes_no_place_in_the_context(db_url: str, clock: ManualClock) -> None:
    # without keyword context the reply shares no word with the question: only spreading reaches it
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock, keyword_context_turns=0) as ctx:
        await _neighbour_only_turn_left_out(ctx)


async def _neighbour_only_turn_left_out(ctx: DeepContext) -> None:
    from deepcontext import SearchConfig

    words = ["sock", "spoon", "cable", "paper", "spice", "tool", "toy", "linen", "pen", "tape", "cup", "box"]
    chat = [
        {"role": "user", "name": "Maya", "content": f"Chore {i}: sort the {w} drawer and the {v} shelf."}
        for i, (w, v) in enumerate((w, v) for w in words for v in words[:10])
    ]
    chat += [
        {"role": "user", "name": "Lena", "content": "Did you ever visit the lighthouse at Cape Spear?"},
        {"role": "user", "name": "Maya", "content": "Yes, last Tuesday with my cousins!"},
    ]
    added = await ctx.add(chat, user_id="maya", conversation_id="c1")
    reply = added.turn_ids[-1]
    query = "When was the lighthouse at Cape Spear visited?"

    async def cites_reply(**cfg: object) -> bool:
        config = SearchConfig(group_by_source=False, before_weight=0.6, **cfg)
        out = await ctx.search(query, user_id="maya", limit=25, config=config)
        return any(s.turn_id == reply for r in out.results for s in r.sources)

    # search reaches the reply only through the question before it
    assert not await cites_reply(neighbour_turns=False) and await cites_reply()
    res = await ctx.context(query, "maya", memory_limit=25)
    assert not any("Tuesday" in lo.preview for lo in res.left_out)
    assert "Tuesday" not in res.text
    # deeper, the reply is a (barely similar) candidate that its question lifts: the context's
    # relevance check leaves it out
    deep = await ctx.context(query, "maya", memory_limit=50)
    assert [lo.cause for lo in deep.left_out if "Tuesday" in lo.preview] == ["relevance"]
    assert "Tuesday" not in deep.text
