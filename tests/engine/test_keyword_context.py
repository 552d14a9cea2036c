"""A message's memory is found by the words of the turns it answers (``keyword_context_turns``):
"Mostly adoption agencies." comes back for "What did she research?", on both backends, whether the
question came in the same add or an earlier one, and still after the memory's text is edited."""

from __future__ import annotations

import pytest

from deepcontext import DeepContext
from deepcontext.embed.hashing import HashEmbedder
from deepcontext.errors import ConfigurationError

QUESTION = {"role": "user", "content": "What did you research for the paperwork last month?"}
REPLY = {"role": "assistant", "content": "Mostly adoption agencies, honestly."}


async def _keyword_texts(ctx: DeepContext, query: str, user: str) -> list[str]:
    return [r.text for r in (await ctx.search(query, user_id=user, config="keyword")).results]


async def test_a_reply_is_found_by_the_question_it_answers(ctx: DeepContext) -> None:
    await ctx.add([QUESTION, REPLY], user_id="ana", conversation_id="c1")
    found = await _keyword_texts(ctx, "research paperwork", "ana")
    assert any("adoption agencies" in t for t in found), found
    # the reply's own words still find it; the question is not found by the reply's words
    assert any("adoption" in t for t in await _keyword_texts(ctx, "adoption", "ana"))
    assert not any("research" in t for t in await _keyword_texts(ctx, "adoption", "ana"))


async def test_the_question_may_come_in_an_earlier_add(ctx: DeepContext) -> None:
    await ctx.add([QUESTION], user_id="ana", conversation_id="c1")
    await ctx.add([REPLY], user_id="ana", conversation_id="c1")
    # another conversation's turn is not context: it starts a conversation of its own
    await ctx.add([{"role": "user", "content": "The garden needs watering."}], user_id="ana", conversation_id="c2")
    found = await _keyword_texts(ctx, "paperwork", "ana")
    assert any("adoption agencies" in t for t in found), found
    assert not any("garden" in t for t in found), found


async def test_context_reaches_back_as_many_turns_as_set(db_url: str, tmp_path) -> None:
    turns = [
        {"role": "user", "content": "Tell me about the lighthouse trip."},
        {"role": "assistant", "content": "Which part would you like to hear about?"},
        {"role": "user", "content": "The food mostly."},
    ]
    for depth, reaches in ((0, False), (1, False), (2, True)):
        user = f"u{depth}"
        async with DeepContext(database_url=db_url, embedder=HashEmbedder(64), keyword_context_turns=depth) as ctx:
            await ctx.add(turns, user_id=user, conversation_id="c")
            found = await _keyword_texts(ctx, "lighthouse", user)
            assert any(t.endswith("The food mostly.") for t in found) is reaches, (depth, found)


async def test_an_edited_turn_keeps_its_context(ctx: DeepContext) -> None:
    await ctx.add([QUESTION, {"role": "user", "content": "Adoption agencies, mostly."}], user_id="ana", conversation_id="c1")
    hits = (await ctx.search("paperwork", user_id="ana", config="keyword")).results
    target = next(r for r in hits if "agencies" in r.text)
    await ctx.update(target.memory_id, "User: Adoption agencies and foster care.", "ana")
    found = await _keyword_texts(ctx, "paperwork", "ana")
    assert "User: Adoption agencies and foster care." in found, found
    assert not any(t.endswith("mostly.") for t in found), found


async def test_an_imported_turn_keeps_its_context(ctx: DeepContext) -> None:
    await ctx.add([QUESTION, REPLY], user_id="ana", conversation_id="c1")
    records = [rec async for rec in ctx.export("ana")]
    await ctx.import_records(records, user_id="ana-copy")
    found = await _keyword_texts(ctx, "paperwork", "ana-copy")
    assert any("adoption agencies" in t for t in found), found


@pytest.mark.parametrize("depth", [-1, 6, "two"])
def test_an_out_of_range_depth_is_a_clear_configuration_error(tmp_path, depth: object) -> None:
    with pytest.raises(ConfigurationError, match="keyword_context_turns"):
        DeepContext(database_url=f"sqlite:///{tmp_path}/kc.db", embedder=HashEmbedder(64), keyword_context_turns=depth)
    assert not (tmp_path / "kc.db").exists()
