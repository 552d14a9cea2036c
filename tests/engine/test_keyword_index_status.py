"""SQLite's keyword index holds what searches look for: active memories in memory_fts, superseded
ones in memory_fts_past (questions about the past), no others. A trigger on memories moves a row on
every status change, whichever write path makes it; imported memories land in their status' table.
Checked against the tables themselves and the index consistency check of ``bench reliability``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.types import MemoryStatus
from deepcontext_bench.reliability_checks import check_index
from tests.engine.test_knowledge_updates import facts, say
from tests.lifecycle.helpers import ScriptedExtractor
from tests.lifecycle.helpers import say as lifecycle_say


def tables_of(ctx: DeepContext, memory_id: int) -> list[str]:
    """The keyword index tables holding a row for the memory."""
    with ctx.store.engine.connect() as conn:  # type: ignore[attr-defined]
        return [
            table
            for table in ("memory_fts", "memory_fts_past")
            if conn.execute(text(f"SELECT count(*) FROM {table} WHERE rowid = :i"), {"i": memory_id}).scalar_one()
        ]


async def test_statuses_move_rows_between_the_tables(sqlite_ctx: DeepContext) -> None:
    ctx = sqlite_ctx
    await say(ctx, "I rent a small apartment in Madrid, close to the Retiro park.", 0)
    await say(ctx, "We finally relocated to Porto in the spring, the view from the new place is amazing.", 60)
    by_text: dict[str, Any] = await facts(ctx)
    old = next(m for t, m in by_text.items() if "Madrid" in t)
    new = next(m for t, m in by_text.items() if "Porto" in t)
    assert old.status is MemoryStatus.SUPERSEDED
    assert tables_of(ctx, old.id) == ["memory_fts_past"] and tables_of(ctx, new.id) == ["memory_fts"]
    # the past version is still found where questions about the past look for it, and only there
    everything = await ctx.search("apartment in Madrid", user_id="ana", include_superseded=True, config="keyword")
    assert old.id in [r.memory_id for r in everything.results]
    now = await ctx.search("apartment in Madrid", user_id="ana", config="keyword")
    assert old.id not in [r.memory_id for r in now.results]

    await ctx.delete(new.id, user_id="ana")
    assert tables_of(ctx, new.id) == []
    assert check_index(ctx) == []


async def test_merged_memories_leave_the_index(tmp_path: Path, clock: ManualClock) -> None:
    # the lifecycle tests' setup: scripted extraction, consolidation when asked
    async with DeepContext(
        database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(256), clock=clock, extractor=ScriptedExtractor(),
        auto_consolidate=False, llm_provider="none", consolidation_similarity_threshold=0.99,
    ) as ctx:  # fmt: skip
        a = await lifecycle_say(ctx, "u", "Maya adopted a dog named Pixel", entities=["Maya", "Pixel"])
        b = await lifecycle_say(ctx, "u", "Pixel is a border collie from Quokkaville", entities=["Pixel", "Quokkaville"])
        await ctx.consolidate("u")
        merged = ctx.store.get_memories("u", [a, b])
        assert all(m.status is MemoryStatus.MERGED for m in merged)
        assert [tables_of(ctx, m.id) for m in merged] == [[], []]
        (survivor,) = {m.superseded_by for m in merged}
        assert survivor is not None and tables_of(ctx, survivor) == ["memory_fts"]
        assert check_index(ctx) == []


async def test_imported_memories_land_in_their_status_table(sqlite_ctx: DeepContext) -> None:
    ctx = sqlite_ctx
    await say(ctx, "Every morning I have two mugs of black tea.", 0)
    await say(ctx, "I switched to espresso, I don't drink tea anymore.", 30)
    records = [r async for r in ctx.export("ana")]
    await ctx.import_records(records, user_id="bea")
    by_text: dict[str, Any] = await facts(ctx, "bea")
    tea = next(m for t, m in by_text.items() if "black tea" in t)
    assert tea.status is MemoryStatus.SUPERSEDED and tables_of(ctx, tea.id) == ["memory_fts_past"]
    assert check_index(ctx) == []
