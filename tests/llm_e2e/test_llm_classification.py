"""`DeepContext.add` with LLM classification: ADD / UPDATE / REPLACE / DELETE / NOOP never lose
anything, and decisions naming memories that were not shown are rejected."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from deepcontext import DeepContext, MemoryNotFoundError
from deepcontext.extract.interface import Classifier, Decision, ExistingMemory, ExtractedFact, ExtractionContext
from deepcontext.extract.llm_classifier import LLMClassifier
from deepcontext.llm import Router
from deepcontext.store.interface import AddPlan, MemoryChange, NewMemory
from deepcontext.text import content_hash
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier, MemoryType
from tests.llm_e2e.conftest import Brain, MakeCtx, decisions, extraction, fact, user
from tests.support.fake_openai import Reply


async def seed(ctx: DeepContext, brain: Brain, text: str, said: str, user_id: str = "ana") -> int:
    """Add one message whose extraction is ``text``; return the id of that fact."""
    brain.extract(extraction(fact(text, 0)))
    await ctx.add(user(said), user_id=user_id)
    page = await ctx.list(user_id, tier="short_term")
    return next(m.id for m in page.memories if m.text == text)


async def fact_ids(ctx: DeepContext, user_id: str = "ana") -> dict[str, int]:
    page = await ctx.list(user_id, tier="short_term", include_inactive=True)
    return {m.text: m.id for m in page.memories}


async def test_update_writes_a_new_version_and_keeps_the_old_one_reachable(ctx: DeepContext, brain: Brain) -> None:
    old = await seed(ctx, brain, "Ana likes pizza", "I love pizza.")
    brain.extract(extraction(fact("Ana likes margherita pizza the most", 0)))
    brain.classify(
        decisions(
            {
                "candidate": 0,
                "action": "UPDATE",
                "memory_id": old,
                "text": "Ana likes pizza, especially margherita",
                "reason": "adds the favourite kind",
            }
        )
    )
    r = await ctx.add(user("Margherita is my favourite!"), user_id="ana")
    assert (r.memories_updated, r.memories_added, r.memories_deleted) == (1, 1, 0)  # the version + the turn
    assert brain.shown_ids() == {0: [old]}
    new = (await fact_ids(ctx))["Ana likes pizza, especially margherita"]

    before = await ctx.get(old, "ana")
    assert before.status is MemoryStatus.SUPERSEDED and before.superseded_by == new
    assert before.valid_to is not None and before.text == "Ana likes pizza"
    after = await ctx.get(new, "ana")
    assert after.is_active and after.source == "llm"
    assert [s.turn_id for s in after.sources] == r.turn_ids

    old_hist = await ctx.history(old, "ana")
    assert [h.event for h in old_hist] == [HistoryEvent.ADD, HistoryEvent.UPDATE]
    assert old_hist[-1].new_text == "Ana likes pizza, especially margherita"
    assert old_hist[-1].details["superseded_by"] == new
    new_hist = await ctx.history(new, "ana")
    assert [h.event for h in new_hist] == [HistoryEvent.UPDATE]
    assert new_hist[0].old_text == "Ana likes pizza" and new_hist[0].reason == "adds the favourite kind"

    res = await ctx.search("pizza", user_id="ana", tier="short_term", limit=5)
    assert [x.memory_id for x in res.results] == [new]  # the old version is history, not a result
    everything = await ctx.list("ana", tier="short_term", include_inactive=True)
    assert {m.id for m in everything.memories} == {old, new}


async def test_replace_supersedes_a_contradicted_fact(ctx: DeepContext, brain: Brain) -> None:
    paris = await seed(ctx, brain, "Ana lives in Paris", "I live in Paris.")
    brain.extract(extraction(fact("Ana lives in Berlin", 0)))
    brain.classify(decisions({"candidate": 0, "action": "REPLACE", "memory_id": paris, "reason": "moved"}))
    r = await ctx.add(user("I just moved to Berlin."), user_id="ana")
    assert r.memories_replaced == 1 and r.memories_updated == 0
    berlin = (await fact_ids(ctx))["Ana lives in Berlin"]
    old = await ctx.get(paris, "ana")
    assert (old.status, old.superseded_by) == (MemoryStatus.SUPERSEDED, berlin)
    assert [h.event for h in await ctx.history(paris, "ana")] == [HistoryEvent.ADD, HistoryEvent.REPLACE]
    assert (await ctx.history(berlin, "ana"))[0].old_text == "Ana lives in Paris"
    res = await ctx.search("Where does Ana live?", user_id="ana", tier="short_term", limit=5)
    assert [x.text for x in res.results] == ["Ana lives in Berlin"]


async def test_delete_is_a_soft_delete_with_history(ctx: DeepContext, brain: Brain) -> None:
    car = await seed(ctx, brain, "Ana has a red car", "I have a red car.")
    brain.extract(extraction(fact("Ana sold her car", 0, type="episodic")))
    brain.classify(decisions({"candidate": 0, "action": "DELETE", "memory_id": car, "reason": "sold it"}))
    r = await ctx.add(user("I sold my car last week."), user_id="ana")
    assert r.memories_deleted == 1
    gone = await ctx.get(car, "ana")
    assert gone.status is MemoryStatus.DELETED and gone.valid_to is not None and gone.text == "Ana has a red car"
    hist = await ctx.history(car, "ana")
    assert [h.event for h in hist] == [HistoryEvent.ADD, HistoryEvent.DELETE]
    assert hist[-1].reason == "sold it" and hist[-1].old_text == "Ana has a red car"
    assert hist[-1].details["turn_ids"] == r.turn_ids  # which turn said so
    res = await ctx.search("car", user_id="ana", limit=10)
    assert car not in {x.memory_id for x in res.results}
    assert "Ana: I sold my car last week." in {x.text for x in res.results}  # the turn itself stays


async def test_an_identical_add_is_noop_and_deletes_nothing(ctx: DeepContext, brain: Brain) -> None:
    chat = user("I'm a data engineer at Acme.", "I live in Lisbon.")
    answer = extraction(fact("Ana works at Acme as a data engineer", 0), fact("Ana lives in Lisbon", 1))
    brain.extract(answer, answer)
    first = await ctx.add(chat, user_id="ana")
    rows = await ctx.stats("ana")
    second = await ctx.add(chat, user_id="ana")
    assert first.memories_added == 4
    assert (second.memories_added, second.memories_unchanged, second.memories_deleted) == (0, 4, 0)
    assert brain.seen["classify"] == []  # exact duplicates never reach the classifier
    after = await ctx.stats("ana")
    assert after["memories"] == rows["memories"] and after["turns"] == rows["turns"] + 2
    page = await ctx.list("ana", include_inactive=True)
    assert all(m.is_active for m in page.memories) and page.total == 4
    work = next(m for m in page.memories if m.text == "Ana works at Acme as a data engineer")
    assert [h.event for h in await ctx.history(work.id, "ana")] == [HistoryEvent.ADD, HistoryEvent.NOOP]
    assert sorted(s.turn_id for s in work.sources) == [first.turn_ids[0], second.turn_ids[0]]


async def test_an_llm_noop_links_the_new_turn_and_changes_nothing(ctx: DeepContext, brain: Brain) -> None:
    acme = await seed(ctx, brain, "Ana works at Acme", "I work at Acme.")
    brain.extract(extraction(fact("Ana is employed by Acme", 0)))
    brain.classify(decisions({"candidate": 0, "action": "NOOP", "memory_id": acme}))
    r = await ctx.add(user("Yes, Acme employs me."), user_id="ana")
    assert r.memories_unchanged == 1 and r.memories_added == 1  # the turn memory only
    assert set(await fact_ids(ctx)) == {"Ana works at Acme"}
    mem = await ctx.get(acme, "ana")
    assert mem.is_active and r.turn_ids[0] in {s.turn_id for s in mem.sources}


async def test_an_id_not_among_the_memories_shown_is_rejected(ctx: DeepContext, brain: Brain) -> None:
    texts = [f"Ana visited museum number {i}" for i in range(8)]
    brain.extract(extraction(*(fact(t, i) for i, t in enumerate(texts))))
    await ctx.add(user(*(f"I visited museum {i}." for i in range(8))), user_id="ana")
    ids = await fact_ids(ctx)
    hidden: list[int] = []

    def update_a_memory_not_shown(body: dict[str, Any]) -> Reply:
        shown = {int(x) for x in re.findall(r"- id (\d+) ", body["messages"][-1]["content"])}
        assert 0 < len(shown) < len(ids)
        hidden.append(next(i for i in ids.values() if i not in shown))  # Ana's, but not shown for it
        return Reply.json(decisions({"candidate": 0, "action": "UPDATE", "memory_id": hidden[0], "text": "Ana likes museums"}))

    brain.extract(extraction(fact("Ana likes the Prado museum best", 0)))
    brain.classify(update_a_memory_not_shown)
    r = await ctx.add(user("The Prado is my favourite."), user_id="ana")
    assert hidden and (r.memories_updated, r.memories_added) == (0, 2)
    untouched = await ctx.get(hidden[0], "ana")
    assert untouched.is_active and [h.event for h in await ctx.history(hidden[0], "ana")] == [HistoryEvent.ADD]
    new = (await fact_ids(ctx))["Ana likes the Prado museum best"]
    reason = (await ctx.history(new, "ana"))[0].reason or ""
    assert f"memory id {hidden[0]}" in reason and "not among the memories shown" in reason
    assert "Ana likes museums" not in await fact_ids(ctx)


async def test_another_users_memory_id_is_rejected_and_the_store_refuses_it_too(ctx: DeepContext, brain: Brain) -> None:
    bob = await seed(ctx, brain, "Bob likes jazz", "I like jazz.", user_id="bob")
    await seed(ctx, brain, "Ana likes rock", "I like rock.")
    brain.extract(extraction(fact("Ana no longer likes jazz", 0)))
    brain.classify(decisions({"candidate": 0, "action": "DELETE", "memory_id": bob}))
    r = await ctx.add(user("I don't like jazz any more."), user_id="ana")
    assert r.memories_deleted == 0 and "Ana no longer likes jazz" in await fact_ids(ctx)
    assert (await ctx.get(bob, "bob")).is_active
    assert [h.event for h in await ctx.history(bob, "bob")] == [HistoryEvent.ADD]

    # the store's own guard, inside the transaction: a plan naming Bob's memory for Ana aborts whole
    before_ana, before_bob = await ctx.stats("ana"), await ctx.stats("bob")
    for plan in (
        AddPlan(
            user_id="ana",
            conversation_id="default",
            now=ctx.clock.now(),
            memories=[
                NewMemory(
                    text="Ana likes blues",
                    content_hash=content_hash("Ana likes blues"),
                    memory_type=MemoryType.SEMANTIC,
                    tier=MemoryTier.SHORT_TERM,
                    importance=0.5,
                    confidence=0.8,
                    embedding=ctx.embedder.embed_one("Ana likes blues"),
                    supersedes=bob,
                    event=HistoryEvent.REPLACE,
                )
            ],
        ),
        AddPlan(
            user_id="ana",
            conversation_id="default",
            now=ctx.clock.now(),
            changes=[MemoryChange(memory_id=bob, action=HistoryEvent.DELETE)],
        ),
    ):
        with pytest.raises(MemoryNotFoundError):
            await asyncio.to_thread(ctx.store.apply_add, plan)
    assert await ctx.stats("ana") == before_ana and await ctx.stats("bob") == before_bob
    assert (await ctx.get(bob, "bob")).is_active


async def test_two_facts_cannot_change_the_same_memory(ctx: DeepContext, brain: Brain) -> None:
    pizza = await seed(ctx, brain, "Ana likes pizza", "I love pizza.")
    brain.extract(extraction(fact("Ana likes margherita pizza", 0), fact("Ana likes pizza with pineapple", 1)))
    brain.classify(
        decisions(
            {"candidate": 0, "action": "UPDATE", "memory_id": pizza, "text": "Ana likes pizza, margherita most"},
            {"candidate": 1, "action": "REPLACE", "memory_id": pizza},
        )
    )
    r = await ctx.add(user("Margherita mostly.", "Pineapple on it too."), user_id="ana")
    assert (r.memories_updated, r.memories_replaced) == (1, 0)
    stored = await fact_ids(ctx)
    assert {"Ana likes pizza, margherita most", "Ana likes pizza with pineapple"} <= set(stored)
    assert (await ctx.get(pizza, "ana")).superseded_by == stored["Ana likes pizza, margherita most"]
    pineapple = await ctx.history(stored["Ana likes pizza with pineapple"], "ana")
    assert pineapple[0].event is HistoryEvent.ADD and "already changed by another fact" in (pineapple[0].reason or "")


async def test_a_fact_seen_again_and_updated_in_the_same_add(ctx: DeepContext, brain: Brain) -> None:
    pizza = await seed(ctx, brain, "Ana likes pizza", "I love pizza.")
    brain.extract(extraction(fact("Ana likes pizza", 0), fact("Ana likes margherita pizza", 1)))
    brain.classify(
        decisions({"candidate": 0, "action": "UPDATE", "memory_id": pizza, "text": "Ana likes pizza, margherita most"})
    )
    r = await ctx.add(user("I love pizza.", "Margherita mostly."), user_id="ana")
    assert r.memories_updated == 1
    new = await ctx.get((await fact_ids(ctx))["Ana likes pizza, margherita most"], "ana")
    assert sorted(s.turn_id for s in new.sources) == sorted(r.turn_ids)  # the repeat's turn went to the new version
    assert (await ctx.get(pizza, "ana")).status is MemoryStatus.SUPERSEDED


class ChangesUnderneath(Classifier):
    """Classifies with the LLM, then has another writer delete the first memory it was shown, as a
    concurrent request (or the lifecycle) could while an LLM answers."""

    name = "llm"

    def __init__(self, inner: Classifier) -> None:
        self.inner = inner
        self.ctx: DeepContext | None = None
        self.calls = 0

    async def classify(
        self, candidates: list[ExtractedFact], neighbours: list[list[ExistingMemory]], context: ExtractionContext
    ) -> list[Decision]:
        out = await self.inner.classify(candidates, neighbours, context)
        self.calls += 1
        if self.calls == 1:
            assert self.ctx is not None
            await self.ctx.delete(neighbours[0][0].id, context.user_id)
        return out


async def test_a_memory_changed_by_another_writer_meanwhile_is_planned_again(
    make_ctx: MakeCtx, router: Router, brain: Brain
) -> None:
    racer = ChangesUnderneath(LLMClassifier(router))
    ctx = await make_ctx(llm=router, classifier=racer)
    racer.ctx = ctx
    pizza = await seed(ctx, brain, "Ana likes pizza", "I love pizza.")
    brain.extract(extraction(fact("Ana likes margherita pizza", 0)))
    brain.classify(decisions({"candidate": 0, "action": "UPDATE", "memory_id": pizza, "text": "Ana likes pizza, margherita"}))
    r = await ctx.add(user("Margherita mostly."), user_id="ana")
    # the first plan updated a memory deleted meanwhile: the store refused it, the add was planned again
    assert r.memories_updated == 0 and r.memories_added == 2 and len(r.turn_ids) == 1
    assert (await ctx.stats("ana"))["turns"] == 2  # the new turn was written once
    gone = await ctx.get(pizza, "ana")
    assert gone.status is MemoryStatus.DELETED and gone.superseded_by is None
    assert [h.actor for h in await ctx.history(pizza, "ana")][-1] == "user"
    assert "Ana likes margherita pizza" in await fact_ids(ctx)


async def test_the_classifier_is_shown_the_older_value_of_a_single_valued_fact(ctx: DeepContext, brain: Brain) -> None:
    """A stored memory holding another value of the same single-valued fact is shown to the LLM even
    when it is not among the nearest memories, and the LLM's REPLACE supersedes it."""
    madrid = await seed(ctx, brain, "Ana lives in Madrid", "I live in Madrid.")
    nearer = [f"Ana moved the {thing} to the attic" for thing in ("piano", "boxes", "desk", "bike", "lamp", "rug")]
    brain.extract(extraction(*(fact(t, 0) for t in nearer)))
    brain.classify(decisions(*({"candidate": i, "action": "ADD"} for i in range(len(nearer)))))
    await ctx.add(user("Busy weekend moving things around."), user_id="ana")
    brain.extract(extraction(fact("Ana moved to Porto", 0)))
    brain.classify(decisions({"candidate": 0, "action": "REPLACE", "memory_id": madrid, "reason": "moved"}))
    r = await ctx.add(user("I moved to Porto last month."), user_id="ana")
    shown = brain.shown_ids()[0]
    assert madrid in shown and len(shown) == 6  # the 5 nearest, and the older home
    assert r.memories_replaced == 1
    old = await ctx.get(madrid, "ana")
    porto = (await fact_ids(ctx))["Ana moved to Porto"]
    assert (old.status, old.superseded_by) == (MemoryStatus.SUPERSEDED, porto)


async def test_the_llm_decides_when_it_sees_no_change(ctx: DeepContext, brain: Brain) -> None:
    """With an LLM the classification is the LLM's: an ADD keeps the older value active."""
    madrid = await seed(ctx, brain, "Ana lives in Madrid", "I live in Madrid.")
    brain.extract(extraction(fact("Ana lives in Porto", 0)))
    brain.classify(decisions({"candidate": 0, "action": "ADD", "reason": "a second home"}))
    r = await ctx.add(user("I also have a place in Porto now."), user_id="ana")
    assert r.memories_replaced == 0
    assert (await ctx.get(madrid, "ana")).is_active
