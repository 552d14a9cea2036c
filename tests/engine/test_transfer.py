"""Export then import restores the same memories, provenance and history."""

from __future__ import annotations

from deepcontext import DeepContext

CHAT = [
    {"role": "user", "name": "Ana", "content": "I live in Porto and I love surfing."},
    {"role": "assistant", "content": "Porto has great waves!"},
    {"role": "user", "name": "Ana", "content": "My brother Rui works at Globex Corporation."},
]


def _shape(memories) -> list[tuple]:
    return sorted(
        (m.text, m.memory_type.value, m.tier.value, m.status.value, round(m.importance, 6), m.said_at,
         tuple(s.role for s in m.sources), tuple(sorted(m.entities)))
        for m in memories
    )  # fmt: skip


async def test_export_import_round_trip(ctx: DeepContext) -> None:
    r = await ctx.add(CHAT, user_id="ana", conversation_id="trip")
    await ctx.update(r.memory_ids[0], "Ana lives in Porto and surfs every weekend", "ana")
    await ctx.delete(r.memory_ids[1], "ana")
    records = [rec async for rec in ctx.export("ana")]
    assert records[0]["record"] == "header"
    counts = await ctx.import_records(records, user_id="ana-copy")
    assert counts["memories"] == len((await ctx.list("ana", include_inactive=True, limit=1000)).memories)
    src = (await ctx.list("ana", include_inactive=True, limit=1000)).memories
    dst = (await ctx.list("ana-copy", include_inactive=True, limit=1000)).memories
    assert _shape(src) == _shape(dst)
    # history came along (plus one IMPORT entry each)
    updated = next(m for m in dst if m.text.startswith("Ana lives in Porto and surfs"))
    events = [h.event.value for h in await ctx.history(updated.id, "ana-copy")]
    assert events[-2:] == ["UPDATE", "IMPORT"] and events[0] == "ADD"
    # the copy is searchable and its turns keep their chain
    res = await ctx.search("surfing in Porto", user_id="ana-copy", limit=3)
    assert res.results and all(x.memory_id in {m.id for m in dst} for x in res.results)
    turns = await ctx.turns("ana-copy", "trip")
    assert [t.content for t in turns] == [m["content"] for m in CHAT]
    assert turns[2].parent_ids == [turns[1].id]
    hood = await ctx.get_entity_graph("ana-copy", "Globex Corporation")
    assert hood[0]["entity"] == "Globex Corporation"


async def test_import_rejects_garbage(ctx: DeepContext) -> None:
    import pytest

    from deepcontext import ValidationError

    with pytest.raises(ValidationError):
        await ctx.import_records([{"record": "memories", "text": "x"}], user_id="u")
    with pytest.raises(ValidationError):
        await ctx.import_records(
            [{"record": "header", "format": "deepcontext-export", "version": 1, "user_id": "u"}, {"record": "nope"}]
        )
    assert all(v == 0 for v in (await ctx.stats("u")).values())
