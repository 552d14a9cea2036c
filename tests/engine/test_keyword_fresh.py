"""The keyword leg finds a memory as soon as its add returns, even for a word searched just before
(when no memory of the user held it yet) or a word searched for another user."""

from __future__ import annotations

from deepcontext import DeepContext


async def test_a_word_searched_before_it_was_said_is_found_right_after(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "I keep my bike in the garage"}], user_id="ana")
    assert (await ctx.search("locker", user_id="ana", config="keyword")).results == []
    await ctx.add([{"role": "user", "content": "My locker code is 4512"}], user_id="ana")
    found = await ctx.search("locker", user_id="ana", config="keyword")
    assert [r.text for r in found.results] and all("locker" in r.text.lower() for r in found.results)
    # another user's empty answer for the same word is not theirs
    assert (await ctx.search("locker", user_id="bob", config="keyword")).results == []
    await ctx.add([{"role": "user", "content": "Bob's locker is number 7"}], user_id="bob")
    theirs = await ctx.search("locker", user_id="bob", config="keyword")
    assert theirs.results and all("7" in r.text for r in theirs.results)
    mine = await ctx.search("locker", user_id="ana", config="keyword")
    assert {r.memory_id for r in mine.results} == {r.memory_id for r in found.results}
