"""A memory promoted to long-term alone is logged as a promotion, not a merge, and the lifecycle
table counts promotions in a column of their own."""

from __future__ import annotations

from deepcontext import DeepContext, MemoryTier
from deepcontext.types import HistoryEvent
from tests.lifecycle.helpers import say


async def test_a_memory_promoted_alone_is_logged_as_promote(ctx: DeepContext) -> None:
    alone = await say(ctx, "u", "Maya's sister Lena lives in Berlin", importance=0.9)
    r = await ctx.consolidate("u")
    assert r["memories_promoted"] == 1 and r["long_term_created"] == 0
    assert (await ctx.get(alone, "u")).tier is MemoryTier.LONG_TERM
    last = (await ctx.history(alone, "u"))[-1]
    assert last.event is HistoryEvent.PROMOTE and last.details["promoted"] is True
    assert HistoryEvent.MERGE not in {h.event for h in await ctx.history(alone, "u")}


def test_the_lifecycle_table_has_a_promoted_column() -> None:
    from rich.console import Console

    from deepcontext.cli.lifecycle import _table

    report = {
        "user_id": "ana", "memories_decayed": 4, "memories_deactivated": 1, "memories_consolidated": 5,
        "memories_promoted": 2, "groups": 1, "long_term_created": 1, "memories_cleaned": 0, "purged": 0,
        "expired": 0, "took_ms": 12.5,
    }  # fmt: skip
    console = Console(width=200, record=True)
    console.print(_table([report], "run"))
    lines = console.export_text().splitlines()
    header = next(ln for ln in lines if "promoted" in ln).split()
    row = next(ln for ln in lines if ln.strip().startswith("ana")).split()
    cells = dict(zip(header, row, strict=False))  # "new LT" splits in two: only columns before it are read
    assert cells["promoted"] == "2" and cells["merged"] == "3", lines  # 5 moved: 3 merged, 2 promoted alone
