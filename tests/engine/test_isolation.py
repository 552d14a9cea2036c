"""No query crosses users: a randomised test over many users and queries."""

from __future__ import annotations

import random

import pytest

from deepcontext import DeepContext, EntityNotFoundError, MemoryNotFoundError

WORDS = "apple river violin orbit canyon pepper harbor quartz maple lantern comet velvet falcon tundra saffron".split()


async def test_users_never_see_each_other(ctx: DeepContext) -> None:
    rng = random.Random(7)
    users = [f"user-{i}" for i in range(12)]
    owned: dict[str, set[int]] = {}
    for u in users:
        msgs = [
            {"role": "user", "content": f"My {rng.choice(WORDS)} and {rng.choice(WORDS)} notes for {u} number {k}."}
            for k in range(4)
        ]
        r = await ctx.add(msgs, user_id=u, conversation_id="shared-conversation-name")
        owned[u] = set(r.memory_ids)
    for _ in range(60):
        u = rng.choice(users)
        q = " ".join(rng.sample(WORDS, 3)) + " " + rng.choice(users)
        res = await ctx.search(q, user_id=u, limit=20)
        got = {x.memory_id for x in res.results}
        assert got <= owned[u], (u, q, got - owned[u])
        page = await ctx.list(u, limit=1000)
        assert {m.id for m in page.memories} == owned[u]
    # by id: another user's memory is "not found", never returned or changed
    a, b = users[0], users[1]
    foreign = next(iter(owned[b]))
    for call in (ctx.get(foreign, a), ctx.history(foreign, a), ctx.delete(foreign, a), ctx.update(foreign, "hacked", a)):
        with pytest.raises(MemoryNotFoundError):
            await call
    assert (await ctx.get(foreign, b)).text != "hacked"


async def test_entity_graph_is_per_user(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "name": "Ana", "content": "I work at Globex Corporation in Madrid."}], user_id="a")
    await ctx.add([{"role": "user", "name": "Bo", "content": "I live in Oslo."}], user_id="b")
    hood = await ctx.get_entity_graph("a", "Globex Corporation")
    assert hood[0]["entity"] == "Globex Corporation"
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("b", "Globex Corporation")
    res = await ctx.search("Globex Corporation Madrid", user_id="b")
    assert all("Globex" not in x.text for x in res.results)
