"""Every time, number and flag argument of the public DeepContext methods, swept with hostile values:
each is refused with a ValidationError naming the argument (never a TypeError, ValueError,
OverflowError or a storage error), and the ordinary values next to them are accepted."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from deepcontext import DeepContext, ValidationError
from deepcontext.embed import HashEmbedder
from deepcontext.query.schema import MemorySchema

MSG = [{"role": "user", "name": "Ana", "content": "I live in Porto and work at Globex"}]
EAST, WEST = timezone(timedelta(hours=14)), timezone(timedelta(hours=-14))
NAN, INF = math.nan, math.inf

#: times outside years 1 to 9998 (UTC), or not times at all
BAD_TIMES = [
    datetime.min.replace(tzinfo=EAST), datetime.max.replace(tzinfo=WEST), datetime.max, datetime(9999, 1, 1),
    datetime(9999, 12, 31, 23, 59, 59, 999990, tzinfo=UTC), 10**20, -(10**20), 10**400, NAN, INF, -INF, "garbage",
    "1e400", "nan", "", b"2024-01-01", date(2024, 1, 1), True, [], object(),
]  # fmt: skip
GOOD_TIMES = [datetime(1, 1, 1), datetime(9998, 12, 31, 23, 59, tzinfo=UTC), 0, 1.7e9, "1700000000", "2024-05-01T10:00:00Z"]
#: not an integer, or not one any count or id allows
BAD_INTS = [True, False, -1, 1.5, NAN, INF, "5", [1], None, object()]
#: not a finite number
BAD_NUMBERS = [True, NAN, INF, -INF, 10**400, "0.5", [0.5], object()]
#: not True or False
BAD_FLAGS = [1, 0, "yes", "", NAN, [True], object()]
#: and None, where None means "the setting decides"
BAD_OPTIONAL_FLAGS = BAD_FLAGS

Call = Callable[[DeepContext, Any], Awaitable[Any]]
SCHEMA = MemorySchema(sections=["travel"])


async def _import(ctx: DeepContext, part_size: Any) -> None:
    records = [r async for r in ctx.export("u")]
    await ctx.import_records(records, "copy", part_size=part_size)
    await ctx.delete_user("copy")


#: argument -> (the call, values it must refuse, values it must accept)
ARGS: dict[str, tuple[Call, list[Any], list[Any]]] = {
    "add.timestamp": (lambda c, v: c.add(MSG, "w", timestamp=v), BAD_TIMES, GOOD_TIMES),
    "add.expires_at": (lambda c, v: c.add(MSG, "w", expires_at=v), [*BAD_TIMES, datetime(2000, 1, 1)], [datetime(9998, 1, 1)]),
    "add.ttl": (
        lambda c, v: c.add(MSG, "w", ttl=v),
        [*BAD_NUMBERS, 0, -5, 1e300, timedelta.max, timedelta(0)],
        [60, 0.5, timedelta(days=1)],
    ),
    "add.infer": (lambda c, v: c.add(MSG, "w", infer=v), BAD_FLAGS, [True, False]),
    "add.messages[0].timestamp": (
        lambda c, v: c.add([{**MSG[0], "timestamp": v}], "w"),
        [t for t in BAD_TIMES if t != ""],
        GOOD_TIMES,
    ),
    "search.limit": (lambda c, v: c.search("Porto", "u", limit=v), [*BAD_INTS, 0, 101, 2**63], [1, 100]),
    "search.tier": (
        lambda c, v: c.search("Porto", "u", tier=v),
        [5, 1.5, True, object(), {"a": 1}, b"x", [5], ["lunar"]],
        ["long_term", ["working"]],
    ),
    "search.memory_type": (lambda c, v: c.search("Porto", "u", memory_type=v), [5, True, [5], "x"], ["semantic", ("episodic",)]),
    "search.conversation_id": (
        lambda c, v: c.search("Porto", "u", conversation_id=v),
        [5, True, [5], object()],
        ["default", ["a", "b"]],
    ),
    "search.after": (lambda c, v: c.search("Porto", "u", after=v), BAD_TIMES, GOOD_TIMES),
    "search.before": (lambda c, v: c.search("Porto", "u", before=v), BAD_TIMES, GOOD_TIMES),
    "search.min_score": (lambda c, v: c.search("Porto", "u", min_score=v), [*BAD_NUMBERS, -0.1, 1.5], [0, 0.5, 1, None]),
    "search.include_graph": (lambda c, v: c.search("Porto", "u", include_graph=v), BAD_FLAGS, [True, False]),
    "search.track_access": (lambda c, v: c.search("Porto", "u", track_access=v), BAD_OPTIONAL_FLAGS, [True, False, None]),
    "search.include_superseded": (lambda c, v: c.search("Porto", "u", include_superseded=v), BAD_FLAGS, [True, False]),
    "list.limit": (lambda c, v: c.list("u", limit=v), [*BAD_INTS, 0, 1001], [1, 1000]),
    "list.after": (lambda c, v: c.list("u", after=v), BAD_TIMES, GOOD_TIMES),
    "list.before": (lambda c, v: c.list("u", before=v), BAD_TIMES, GOOD_TIMES),
    "list.include_inactive": (lambda c, v: c.list("u", include_inactive=v), BAD_FLAGS, [True, False]),
    "list.cursor": (lambda c, v: c.list("u", cursor=v), [5, True, "!!", "a" * 10_000, object()], [None]),
    "list_memories.limit": (lambda c, v: c.list_memories("u", limit=v), [*BAD_INTS, 0, 10**30], [1, 1000]),
    "list_memories.offset": (lambda c, v: c.list_memories("u", offset=v), [*BAD_INTS[:2], -1, 1.5, "5", None], [0, 10**30]),
    "turns.limit": (lambda c, v: c.turns("u", limit=v), [*BAD_INTS, 0, 2**63], [1, 10_000]),
    "get.memory_id": (lambda c, v: c.get(v, "u"), [*BAD_INTS, 0, 2**63], [1]),
    "update.memory_id": (lambda c, v: c.update(v, "Ana lives in Porto", "u"), [*BAD_INTS, 0, 2**63], [1]),
    "history.memory_id": (lambda c, v: c.history(v, "u"), [*BAD_INTS, 0, 2**63], [1]),
    "delete.memory_id": (lambda c, v: c.delete(v, "u"), [*BAD_INTS, 0, 2**63], []),
    "memory_owner.memory_id": (lambda c, v: c.memory_owner(v), [*BAD_INTS, 0, 2**63], [1]),
    "get_entity_graph.depth": (lambda c, v: c.get_entity_graph("u", "Porto", v), [*BAD_INTS, 6, 10**30], [0, 5]),
    "run_lifecycle.wait": (lambda c, v: c.run_lifecycle("u", wait=v), [*BAD_NUMBERS, -1, 1e308, 10**30], [0, 2.5, None]),
    "run_lifecycle.consolidate": (lambda c, v: c.run_lifecycle("u", consolidate=v), BAD_OPTIONAL_FLAGS, [True, False, None]),
    "consolidate.wait": (lambda c, v: c.consolidate("u", wait=v), [*BAD_NUMBERS, -1, 1e308], [0, None]),
    "import_records.part_size": (_import, [*BAD_INTS[:8], 0], [1, 10**30, None]),
    "conversation_path.node_id": (lambda c, v: c.conversation_path("u", node_id=v), [*BAD_INTS[:-2], 0, 2**63, object()], [None]),
    "conversation_path.max_nodes": (lambda c, v: c.conversation_path("u", max_nodes=v), [*BAD_INTS[:-2], 0], [1, 10**30, None]),
    "compress_conversation.node_id": (lambda c, v: c.compress_conversation("u", node_id=v), [*BAD_INTS[:-2], 0, 2**63], [None]),
    "compress_conversation.keep_recent": (
        lambda c, v: c.compress_conversation("u", keep_recent=v),
        [*BAD_INTS[:-2]],
        [0, 10**30],
    ),
    "compress_conversation.max_nodes": (lambda c, v: c.compress_conversation("u", max_nodes=v), [*BAD_INTS[:-2], 0], [2, None]),
    "export_conversation.format": (lambda c, v: c.export_conversation("u", format=v), [5, None, "pdf", b"json"], ["json", "DOT"]),
    "dialogue.max_context_nodes": (lambda c, v: c.dialogue("u", max_context_nodes=v), [*BAD_INTS, 0], [1, 10**30]),
    "dialogue.pack_keep_recent": (lambda c, v: c.dialogue("u", pack_keep_recent=v), BAD_INTS, [0, 3]),
    "dialogue.extract": (lambda c, v: c.dialogue("u", extract=v), BAD_FLAGS, [True, False]),
    "context.budget_tokens": (lambda c, v: c.context("Porto", "u", budget_tokens=v), [*BAD_INTS, 0, 10**30], [1, 200_000]),
    "context.memory_limit": (lambda c, v: c.context("Porto", "u", memory_limit=v), [*BAD_INTS[:-2], 0, 101], [1, None]),
    "context.max_conversation_nodes": (
        lambda c, v: c.context("Porto", "u", max_conversation_nodes=v),
        [*BAD_INTS, 0, 1001],
        [1, 1000],
    ),
    "context.min_intent": (lambda c, v: c.context("Porto", "u", min_intent=v), [*BAD_NUMBERS, -0.5, 2], [0, 1, None]),
    "context.min_similarity": (lambda c, v: c.context("Porto", "u", min_similarity=v), [*BAD_NUMBERS, None, 1.01], [0, 0.3]),
    "context.track_access": (lambda c, v: c.context("Porto", "u", track_access=v), BAD_OPTIONAL_FLAGS, [True, None]),
    "context.shares": (
        lambda c, v: c.context("Porto", "u", shares=v),
        [
            *({"memories": b} for b in BAD_NUMBERS),
            {"memories": -1},
            {"moon": 0.5},
            5,
            "memories",
            {p: 0 for p in ("pinned", "memories", "tiers", "conversation")},
        ],
        [{"memories": 1}, None],
    ),  # fmt: skip
    "tiers.cache_size": (lambda c, v: c.tiers("u", SCHEMA, cache_size=v), [*BAD_INTS, 0], [1, 10**30]),
    "tiers.history_turns": (lambda c, v: c.tiers("u", SCHEMA, history_turns=v), [*BAD_INTS, 0], [1, 6]),
}


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[DeepContext]:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as c:
        await c.add(MSG, "u")
        await c.add([{"role": "assistant", "content": "Porto is lovely in May"}], "u")
        yield c


def _names_argument(field: str | None, arg: str) -> bool:
    return field is not None and (field == arg or field.startswith((f"{arg}.", f"{arg}[")))


@pytest.mark.parametrize("name", list(ARGS))
async def test_hostile_values_are_validation_errors_naming_the_argument(ctx: DeepContext, name: str) -> None:
    call, bad, good = ARGS[name]
    arg = name.split(".", 1)[1]
    wrong: list[str] = []
    for value in bad:
        try:
            await call(ctx, value)
        except ValidationError as exc:
            if not _names_argument(exc.field, arg):
                wrong.append(f"{value!r:.40}: ValidationError names {exc.field!r}")
        except Exception as exc:  # noqa: BLE001 - what the test reports
            wrong.append(f"{value!r:.40}: {type(exc).__name__}: {exc}")
        else:
            wrong.append(f"{value!r:.40}: accepted")
    for value in good:
        try:
            await call(ctx, value)
        except Exception as exc:  # noqa: BLE001 - what the test reports
            wrong.append(f"{value!r:.40} (valid): {type(exc).__name__}: {exc}")
    assert not wrong, f"{name}:\n" + "\n".join(wrong)
    assert "u" in await ctx.users()
