"""A user who introduces themselves ("I'm Tomas", "call me Bea") is named as set_user names them."""

from __future__ import annotations

import pytest

from deepcontext import DeepContext
from deepcontext.errors import EntityNotFoundError
from deepcontext.extract.introductions import introduced_name


@pytest.mark.parametrize(
    ("said", "name"),
    [
        ("Hey, I'm Tomas, I share a flat in Brno with my friend Pavel", "Tomas"),
        ("Hi! I'm Priya.", "Priya"),
        ("My name is Olga and I teach maths", "Olga"),
        ("hello, my name's Ines", "Ines"),
        ("Call me Bea", "Bea"),
        ("Kofi here, I just moved to Leeds", "Kofi"),
        ("I'm Sam Okafor", "Sam Okafor"),
        ("Hi, I'm Wren", "Wren"),
        ("I'm Marta from Lisbon", "Marta"),
        ("I am Zdenek, nice to meet you", "Zdenek"),
        ("Nice to meet you. I'm Fred.", "Fred"),
        ("I'm Ahmed and I drive a taxi", "Ahmed"),
        ("Hi, this is Radek. I study law in Brno.", "Radek"),
        ("Hello there, it's Marta, I work at the bakery", "Marta"),
    ],
)
def test_an_introduction_gives_the_name(said: str, name: str) -> None:
    assert introduced_name(said) == name


@pytest.mark.parametrize(
    "said",
    [
        "I'm tired",
        "I'm Italian",
        "I'm a nurse",
        "I'm in Paris",
        "I'm English",
        "I'm Christian",
        "I'm Sorry",
        "I'm Google",
        "I'm Ready!",
        "I'm Tuesday",
        "My friend Pavel is here",
        "I'm Excited!",
        "I'm Retired",
        "I'm Stressed, honestly",
        "I'm Nervous",
        "I'm Tomas's sister",
        "I'm Italian and I cook every day.",
        "This is Paris.",
        "Hi, this is great.",
        "Hi, this is Lisbon, what a city!",
    ],
)
def test_other_i_am_sentences_name_no_one(said: str) -> None:
    assert introduced_name(said) is None


async def entity_names(ctx: DeepContext, user_id: str) -> list[str]:
    return [r["name"] async for r in ctx.export(user_id) if r.get("record") == "entities"]


async def test_a_self_introduction_names_the_user_with_one_node(ctx: DeepContext) -> None:
    said = "Hey, I'm Tomas, I share a flat in Brno with my friend Pavel"
    await ctx.add([{"role": "user", "content": said}], user_id="t")
    assert (await ctx.get_user("t"))["name"] == "Tomas"
    texts = [m.text for m in (await ctx.list("t")).memories if m.memory_type.value != "turn"]
    assert any(t.startswith("Tomas shares a flat in Brno with their friend Pavel") for t in texts), texts
    assert not any("User" in t for t in texts), texts
    names = await entity_names(ctx, "t")
    assert names.count("Tomas") == 1 and "User" not in names and "Pavel" in names
    hood = {h["entity"] for h in await ctx.get_entity_graph("t", "Tomas")}
    assert "Pavel" in hood
    await ctx.add([{"role": "user", "content": "I love climbing."}], user_id="t")
    assert "Tomas loves climbing." in [m.text for m in (await ctx.list("t")).memories]


async def test_memories_stored_before_the_introduction_take_the_name(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "I work at Globex in Lisbon."}], user_id="a")
    await ctx.add([{"role": "user", "content": "By the way, my name is Ana."}], user_id="a")
    [mem] = [m for m in (await ctx.list("a")).memories if m.text.endswith("works at Globex in Lisbon.")]
    assert mem.text == "Ana works at Globex in Lisbon."
    [rename] = [h for h in await ctx.history(mem.id, "a") if h.new_text == mem.text]
    assert rename.old_text == "The user works at Globex in Lisbon."
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("a", "User")


async def test_a_name_set_explicitly_wins_over_an_introduction(ctx: DeepContext) -> None:
    await ctx.set_user("e", name="Elena")
    await ctx.add([{"role": "user", "content": "Call me Lena, I run a bakery in Turin."}], user_id="e")
    assert (await ctx.get_user("e"))["name"] == "Elena"
    assert "Lena" not in await entity_names(ctx, "e")
    # an introduced name gives way to a later set_user
    await ctx.add([{"role": "user", "content": "I'm Piet, I fix bikes in Ghent."}], user_id="p")
    assert (await ctx.get_user("p"))["name"] == "Piet"
    await ctx.set_user("p", name="Pieter")
    await ctx.add([{"role": "user", "content": "I'm Piet, by the way."}], user_id="p")
    assert (await ctx.get_user("p"))["name"] == "Pieter"


async def test_a_turn_with_its_own_name_names_no_one_else(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "I'm Jonas, her neighbour.", "name": "Maya"}], user_id="m")
    assert (await ctx.get_user("m"))["name"] == "Maya"


async def test_non_names_leave_the_user_unnamed(ctx: DeepContext) -> None:
    for said in ("I'm Italian and I cook every day.", "I'm a nurse in Leeds.", "I'm tired of my commute."):
        await ctx.add([{"role": "user", "content": said}], user_id="n")
    assert (await ctx.get_user("n"))["name"] is None


async def test_the_other_person_of_an_introduction_is_found(ctx: DeepContext) -> None:
    await ctx.add(
        [{"role": "user", "content": "Hi, I'm Tomas. My friend Pavel works as a chef and I study law in Brno."}],
        user_id="q",
    )
    await ctx.add([{"role": "user", "content": "I also enjoy running on weekends."}], user_id="q")
    hits = await ctx.search("What does Pavel do for a living?", "q", limit=3)
    assert "Pavel works as a chef" in hits.results[0].text


async def test_an_introduction_with_an_apposition_keeps_what_it_says(tmp_path) -> None:
    # "I'm Maya, a data engineer at ..." names the user and says her job: the job stays in a memory
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/a.db") as ctx:
        await ctx.add([{"role": "user", "content": "Hi! I'm Maya, a data engineer at Northwind Labs in Lisbon."}], "u1")
        texts = [m["text"] for m in (await ctx.list_memories("u1"))["memories"] if m["source"] != "turn"]
        assert any(t.startswith("Maya is a data engineer at Northwind Labs") for t in texts), texts
        assert (await ctx.get_user("u1"))["name"] == "Maya"
