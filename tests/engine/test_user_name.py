"""The user's display name: set_user, the first name on the user's turns, one entity node."""

from __future__ import annotations

import pytest

from deepcontext import DeepContext, ValidationError
from deepcontext.errors import EntityNotFoundError


async def test_set_user_names_the_user_in_memories_and_merges_the_entity(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "I work at Globex in Lisbon."}], user_id="ana")
    before = [m.text for m in (await ctx.list("ana")).memories]
    assert "The user works at Globex in Lisbon." in before
    graph = await ctx.get_entity_graph("ana", "User")
    assert graph, "the unnamed user is an entity of its own before the name is known"

    await ctx.set_user("ana", name="Ana")
    assert await ctx.get_user("ana") == {"user_id": "ana", "name": "Ana"}
    # what was stored before takes the name too: the text, the keyword index, the history
    [mem] = [m for m in (await ctx.list("ana")).memories if m.text.endswith("works at Globex in Lisbon.")]
    assert mem.text == "Ana works at Globex in Lisbon."
    hits = await ctx.search("Ana Globex", "ana", limit=3)
    assert hits.results[0].memory_id == mem.id
    [rename] = [h for h in await ctx.history(mem.id, "ana") if h.new_text == mem.text]
    assert rename.old_text == "The user works at Globex in Lisbon."
    await ctx.add([{"role": "user", "content": "My sister Jo moved to Porto."}], user_id="ana")
    texts = [m.text for m in (await ctx.list("ana")).memories]
    assert "Ana's sister Jo moved to Porto." in texts
    # one node for the user: the "User" entity became "Ana", and it still reaches Globex and Jo
    hood = await ctx.get_entity_graph("ana", "Ana")
    names = {h["entity"] for h in hood}
    assert {"Globex", "Jo"} <= names
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("ana", "User")
    # another user is untouched
    await ctx.add([{"role": "user", "content": "I live in Madrid and love football."}], user_id="bo")
    assert "The user lives in Madrid and loves football." in [m.text for m in (await ctx.list("bo")).memories]
    assert (await ctx.get_user("bo"))["name"] is None


async def test_the_first_name_on_the_users_turns_is_the_display_name(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "Hi there!", "name": "Maya"}], user_id="m1")
    await ctx.add([{"role": "user", "content": "I work at Initech as a data engineer."}], user_id="m1")
    texts = [m.text for m in (await ctx.list("m1")).memories]
    assert "Maya works at Initech as a data engineer." in texts
    assert (await ctx.get_user("m1"))["name"] == "Maya"


async def test_renaming_twice_keeps_one_node(ctx: DeepContext) -> None:
    await ctx.set_user("u", name="Sam")
    await ctx.add([{"role": "user", "content": "I play the guitar and sing in a choir."}], user_id="u")
    await ctx.set_user("u", name="Samuel")
    await ctx.add([{"role": "user", "content": "I moved to Berlin in 2020."}], user_id="u")
    hood = {h["entity"] for h in await ctx.get_entity_graph("u", "Samuel")}
    assert "Berlin" in hood
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("u", "Sam")


@pytest.mark.parametrize("bad", ["", "   ", "x" * 101, "a\x00b", 5, None])
async def test_set_user_validates_the_name(ctx: DeepContext, bad: object) -> None:
    with pytest.raises(ValidationError):
        await ctx.set_user("u", name=bad)  # type: ignore[arg-type]
