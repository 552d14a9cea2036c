"""Standing facts and requests read off MiniLM embeddings, where the rules find nothing: the shipped
weights, the engine marking a user's turn at ingest, and search running the profile leg."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydantic
import pytest

from deepcontext import DeepContext
from deepcontext.embed.hashing import HashEmbedder
from deepcontext.embed.minilm import MiniLMEmbedder
from deepcontext.errors import ConfigurationError
from deepcontext.language.standing import is_request_for_user, standing_kind
from deepcontext.language.standing_model import StandingModel, model_for
from deepcontext.retrieve.config import SearchConfig
from deepcontext_bench.filler import filler_turns

ITCHY = "kiwi and me dont mix, my throat gets itchy"  # an allergy in words no rule lists
CHAT = ["we grabbed tacos after the game last night", "my brother just got a new puppy", "lol that meeting went on forever"]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def model(minilm: MiniLMEmbedder) -> StandingModel:
    m = model_for(minilm.model_id)
    assert m is not None, "the weights fitted on MiniLM ship with the package"
    return m


def test_the_weights_belong_to_one_embedder(model: StandingModel) -> None:
    assert model_for(HashEmbedder(256).model_id) is None
    assert model.kind_w.shape == (384, len(model.kinds)) and set(model.kinds) >= {"", "allergy", "instruction"}
    assert model.request_w.shape == (384,) and 0.5 <= model.request_threshold < 1


def test_chat_states_standing_facts_the_rules_miss(minilm: MiniLMEmbedder, model: StandingModel) -> None:
    assert standing_kind(ITCHY) is None
    kinds = model.kinds_of(minilm.embed([f"User: {t}" for t in [ITCHY, *CHAT]]))
    assert kinds == ["allergy", None, None, None]
    assert model.kinds_of(np.zeros((0, 384), dtype=np.float32)) == []


def test_requests_the_rules_miss_and_recall_questions(minilm: MiniLMEmbedder, model: StandingModel) -> None:
    for query, request in [
        ("need a quick idea for dinner", True),
        ("gift ideas for my nephew turning 8", True),
        ("What did Omar recommend for dinner?", False),
        ("when did i start my new job", False),
    ]:
        assert model.is_request(minilm.embed_one(query)) is request, query
    assert not is_request_for_user("need a quick idea for dinner")


async def _chat_then_statement(ctx: DeepContext, statement: str) -> int:
    turns = filler_turns(40, seed=3)
    await ctx.add(turns[:20], user_id="kai")
    r = await ctx.add([{"role": "user", "content": statement}], user_id="kai")
    await ctx.add(turns[20:], user_id="kai")
    return r.turn_ids[0]


async def test_ingest_marks_the_turn_and_search_reaches_it(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=minilm) as ctx:
        turn = await _chat_then_statement(ctx, ITCHY)
        page = await ctx.list("kai", tier="working", limit=200)
        said = next(m for m in page.memories if turn in {s.turn_id for s in m.sources})
        assert said.metadata.get("standing") == "allergy"
        assert said.importance > 0.3  # binding: not filler, however short
        res = await ctx.search("need a quick idea for a fruit salad", user_id="kai", limit=10)
        hit = next((r for r in res.results if "kiwi" in r.text), None)
        assert hit is not None and "profile" in hit.legs
        recall = await ctx.search("What did I say about the meeting?", user_id="kai", limit=10)
        assert all("profile" not in r.legs for r in recall.results)


async def test_other_embedders_rely_on_the_rules(tmp_path: Path) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/h.db", embedder=HashEmbedder(256)) as ctx:
        turn = await _chat_then_statement(ctx, ITCHY)
        page = await ctx.list("kai", tier="working", limit=200)
        said = next(m for m in page.memories if turn in {s.turn_id for s in m.sources})
        assert "standing" not in said.metadata


async def test_a_request_answered_directly_is_not_pushed_down_by_standing_facts(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/d.db", embedder=minilm) as ctx:
        await _chat_then_statement(ctx, "I'm allergic to shellfish, so no prawns or mussels for me.")
        await ctx.add([{"role": "user", "content": "To reset the router, hold the back button for ten seconds."}], user_id="kai")
        query = "How should I reset the router?"
        res = await ctx.search(query, user_id="kai", limit=5)
        assert "router" in res.results[0].text
        # without the margin every standing fact joins the profile leg, and one outranks the answer
        everything = await ctx.search(query, user_id="kai", limit=5, config=SearchConfig(profile_margin=2.0))
        assert "router" not in everything.results[0].text and "profile" in everything.results[0].legs


@pytest.mark.parametrize("margin", [-0.1, 2.5, "wide"])
def test_an_out_of_range_profile_margin_is_a_clear_error(tmp_path: Path, margin: object) -> None:
    with pytest.raises(ConfigurationError, match="profile_margin"):
        DeepContext(database_url=f"sqlite:///{tmp_path}/pm.db", embedder=HashEmbedder(64), profile_margin=margin)
    assert not (tmp_path / "pm.db").exists()
    with pytest.raises(pydantic.ValidationError, match="profile_margin"):
        SearchConfig(profile_margin=margin)  # type: ignore[arg-type]
