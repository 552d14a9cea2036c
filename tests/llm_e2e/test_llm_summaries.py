"""Running conversation summaries: written in the background after enough turns, shown to the
extractor, never written offline."""

from __future__ import annotations

from deepcontext import DeepContext, SyncDeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.llm import Router, prompts
from tests.llm_e2e.conftest import KEY, Brain, MakeCtx, extraction, user
from tests.support.fake_openai import FakeOpenAI, Reply

FIRST = "Ana is planning a two-week trip to Japan in May, starting in Tokyo."
SECOND = "Ana is planning a trip to Japan in May: Tokyo, then Kyoto; she booked a ryokan."


async def test_the_summary_is_refreshed_every_n_turns_and_shown_to_the_extractor(
    make_ctx: MakeCtx, router: Router, brain: Brain
) -> None:
    ctx = await make_ctx(llm=router, summary_every_turns=4)
    brain.defaults["extract"] = Reply.json(extraction())
    await ctx.add(user("I'm going to Japan in May.", "Two weeks!"), user_id="ana", conversation_id="trip")
    assert await ctx.summary("ana", "trip") is None and brain.seen["summary"] == []

    brain.summary(FIRST)
    await ctx.add(user("Starting in Tokyo.", "Any tips?"), user_id="ana", conversation_id="trip")
    assert await ctx.summary("ana", "trip") == FIRST
    asked = brain.user_prompt("summary")
    assert "Previous summary" not in asked
    assert all(t in asked for t in ("I'm going to Japan in May.", "Two weeks!", "Starting in Tokyo.", "Any tips?"))
    assert brain.system_prompt("summary").startswith(prompts.SUMMARY_SYSTEM.format(max_words=200))

    # the next extraction sees the summary and the last turns (context, not citable)
    await ctx.add(user("Then Kyoto."), user_id="ana", conversation_id="trip")
    extract_prompt = brain.user_prompt("extract")
    assert f"Summary of the conversation so far:\n{FIRST}" in extract_prompt
    earlier, _, new = extract_prompt.partition("Messages to extract from:")
    assert "Earlier messages (context only, do not cite):" in earlier and "Ana (user): Any tips?" in earlier
    assert "[0] " in new and "Then Kyoto." in new and "Then Kyoto." not in earlier

    brain.summary(SECOND)
    await ctx.add(user("I booked a ryokan.", "Near the station.", "Done!"), user_id="ana", conversation_id="trip")
    assert await ctx.summary("ana", "trip") == SECOND
    asked = brain.user_prompt("summary")
    assert f"Previous summary:\n{FIRST}" in asked
    assert "Then Kyoto." in asked and "Starting in Tokyo." not in asked  # only the turns since
    assert len(brain.seen["summary"]) == 2

    assert await ctx.summary("ana", "other") is None and await ctx.summary("bob", "trip") is None
    assert brain.unexpected == []


async def test_a_failed_summary_changes_nothing_and_the_next_add_retries_it(
    make_ctx: MakeCtx, router: Router, brain: Brain
) -> None:
    ctx = await make_ctx(llm=router, summary_every_turns=2)
    brain.defaults["extract"] = Reply.json(extraction())
    brain.summary(Reply.error(400, "bad request"))
    r = await ctx.add(user("Hello there.", "I like tea."), user_id="ana")
    assert len(r.turn_ids) == 2  # the add itself is not affected
    assert await ctx.summary("ana") is None and len(brain.seen["summary"]) == 1
    brain.summary("Ana likes tea.")
    await ctx.add(user("Green tea mostly."), user_id="ana")
    assert await ctx.summary("ana") == "Ana likes tea."
    assert "Green tea mostly." in brain.user_prompt("summary") and "Hello there." in brain.user_prompt("summary")


async def test_adds_without_inference_are_summarized_with_the_next_one(make_ctx: MakeCtx, router: Router, brain: Brain) -> None:
    ctx = await make_ctx(llm=router, summary_every_turns=3)
    await ctx.add(user("One.", "Two.", "Three.", "Four."), user_id="ana", infer=False)
    assert brain.seen["extract"] == [] and await ctx.summary("ana") is None  # no LLM work at all
    brain.extract(extraction())
    brain.summary("Ana counted to five.")
    await ctx.add(user("Five."), user_id="ana")
    assert await ctx.summary("ana") == "Ana counted to five."
    assert all(w in brain.user_prompt("summary") for w in ("One.", "Four.", "Five."))


async def test_offline_no_summary_is_written(make_ctx: MakeCtx, fake_openai: FakeOpenAI) -> None:
    ctx: DeepContext = await make_ctx(llm_provider="none", summary_every_turns=2)
    await ctx.add(user("I like tea.", "Green tea.", "Every morning."), user_id="ana")
    assert await ctx.summary("ana") is None and fake_openai.chat_requests == []


def test_the_blocking_shell_runs_the_llm_and_summaries_on_its_loop(db_url: str, fake_openai: FakeOpenAI) -> None:
    brain = Brain(fake_openai)
    brain.extract(extraction({"text": "Ana likes tea", "type": "semantic", "source_indices": [0]}))
    brain.summary("Ana talked about tea.")
    with SyncDeepContext(
        database_url=db_url,
        embedder=HashEmbedder(256),
        llm_base_url=fake_openai.url,
        llm_api_key=KEY,
        llm_model="fake-model",
        summary_every_turns=2,
    ) as ctx:
        r = ctx.add(user("I like tea.", "Every morning."), user_id="ana")
        assert r.semantic_facts == ["Ana likes tea"]
        assert ctx.summary("ana") == "Ana talked about tea."
    assert brain.unexpected == []
