"""A request whose answer is a time ("When should the electrician come?") puts the standing facts
that bear on time (night shifts, prayer times, a nap) first in the profile leg, above equally
binding facts about other things, on both backends."""

from __future__ import annotations

import pytest

from deepcontext import DeepContext
from deepcontext.embed.hashing import HashEmbedder
from deepcontext.errors import ConfigurationError
from deepcontext.retrieve.config import SearchConfig

STANDING = [
    "I'm allergic to penicillin.",
    "Please always answer me in French.",
    "I use a wheelchair, so stairs are a problem for me.",
    "I'm on a gluten-free diet.",
    "I work night shifts, so I sleep during the day.",
]
WHEN = [
    "When should the electrician come round?",
    "What time should we book the dentist for me?",
    "Which day should I schedule the move?",
]


async def _profile_rank(ctx: DeepContext, query: str, config: SearchConfig | None = None) -> int | None:
    res = await ctx.search(query, user_id="rui", limit=10, config=config)
    return next((r.legs.get("profile") for r in res.results if "night shifts" in r.text), None)


async def test_time_requests_put_time_bound_facts_first(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": s} for s in STANDING], user_id="rui", conversation_id="c")
    with_bonus = [await _profile_rank(ctx, q) for q in WHEN]
    assert with_bonus == [1, 1, 1], with_bonus
    without = [await _profile_rank(ctx, q, SearchConfig(profile_time_bonus=0.0)) for q in WHEN]
    assert all(r is not None for r in without), without
    assert sum(without) >= sum(with_bonus)  # type: ignore[arg-type]


@pytest.mark.parametrize("bonus", [-0.1, 1.5, "lots"])
def test_an_out_of_range_time_bonus_is_a_clear_configuration_error(tmp_path, bonus: object) -> None:
    with pytest.raises(ConfigurationError, match="profile_time_bonus"):
        DeepContext(database_url=f"sqlite:///{tmp_path}/pt.db", embedder=HashEmbedder(64), profile_time_bonus=bonus)
    assert not (tmp_path / "pt.db").exists()
