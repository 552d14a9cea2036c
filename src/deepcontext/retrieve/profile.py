"""The profile leg: standing facts for questions that ask for a decision about the user.

"What dessert should I bring?" shares no word with "I'm lactose intolerant" and is only loosely
near it in meaning, while everyday chat about food is nearer. Memories that state a standing fact
(an allergy, a diet, a preference, a habit, a constraint, an instruction; marked at ingest, see
:mod:`deepcontext.language.standing`) are what such a question needs, so for a request (a
recommendation, a plan, a choice) the search reads a deeper vector pool and ranks the standing
memories in it, as a leg of their own fused with ``profile_weight``: by similarity, plus
``profile_hard_bonus`` for what constrains any decision (allergies, diets, constraints,
instructions) over what colours it (preferences, habits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from datetime import datetime

import numpy as np

from deepcontext.language.standing import HARD_KINDS, is_request_for_user
from deepcontext.language.standing_model import StandingModel
from deepcontext.retrieve.asked import asked_slot
from deepcontext.store.interface import RankFields

__all__ = ["HARD_KINDS", "POOL_FACTOR", "profile_leg", "uses_profile", "vector_pool"]

#: how much deeper than its own k the vector leg reads for the profile leg
POOL_FACTOR = 5


def uses_profile(query: str, weight: float, vector: np.ndarray | None = None, model: StandingModel | None = None) -> bool:
    """Whether a search runs the profile leg: the query is a request by the rules or, given its
    embedding ``vector``, by the embedding ``model``."""
    if weight <= 0:
        return False
    if asked_slot(query) is not None:  # "Where do I work?" asks a fact, not for a decision
        return False
    return is_request_for_user(query) or (model is not None and vector is not None and model.is_request(vector))


def vector_pool(k: int, profile: bool) -> int:
    """How many vector candidates to read: the leg's own ``k``, deeper for the profile leg."""
    return k * POOL_FACTOR if profile else k


def profile_leg(
    pool: Sequence[tuple[int, float]],
    fields: Mapping[int, RankFields],
    k: int,
    hard_bonus: float,
    timed: Set[int] = frozenset(),
    time_bonus: float = 0.0,
    margin: float = 2.0,
    now: datetime | None = None,
) -> list[int]:
    """The standing memories among the vector pool ``(id, cosine)``, best first, at most ``k``.
    ``timed``: those bearing on when things can happen, given ``time_bonus`` (for a request whose
    answer is a time). Only those within ``margin`` of the pool's best cosine, and only those still
    true at ``now``: a habit a later statement changed ("I switched from coffee to tea") stands no more."""
    scored = []
    floor = max((sim for _, sim in pool), default=0.0) - margin
    for m, sim in pool:
        f = fields.get(m)
        if f is not None and f.standing and (now is None or f.valid_to is None or f.valid_to > now):
            bonus = (hard_bonus if f.standing in HARD_KINDS else 0.0) + (time_bonus if m in timed else 0.0)
            if sim + bonus >= floor:
                scored.append((sim + bonus, m))
    scored.sort(key=lambda x: -x[0])
    return [m for _, m in scored[:k]]
