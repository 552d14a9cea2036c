"""Helpers of the context tests: opening a DeepContext on a URL, sample data."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def open_ctx(url: str, clock: ManualClock, embedder: Any = None) -> DeepContext:
    return DeepContext(database_url=url, embedder=embedder or HashEmbedder(256), clock=clock)


async def seed(ctx: DeepContext, user: str = "ana") -> None:
    """Memories about a trip (conversation "trip", with dates) and about music (conversation
    "music"), a pinned key memory, and working-memory tiers."""
    from deepcontext.query import MemorySchema

    await ctx.add(
        [
            {"role": "user", "name": "Ana", "content": "I fly to Lisbon on June 10 for the conference."},
            {"role": "assistant", "content": "Great, I noted the Lisbon flight."},
        ],
        user,
        "trip",
    )
    await ctx.add(
        [
            {"role": "user", "name": "Ana", "content": "I play the cello in an orchestra on Sundays."},
            {"role": "assistant", "content": "That sounds lovely."},
        ],
        user,
        "music",
    )
    session = await ctx.dialogue(user, "trip", extract=False)
    session.memory_store.add_memory("Ana is allergic to peanuts", pinned=True)
    cq = await ctx.tiers(user, MemorySchema(sections=["status", "errors", "travel"]))
    cq.state.set("errors", "[errors]\n- the booking job crashed with OOM at 02:15\n")
    cq.state.set("status", "[status]\nall systems green\n")
    cq.state.set("travel", "[travel]\nhotel near the Lisbon conference centre, check-in June 10\n")
    cq.notes.append("packing", "pack the cello case")
