"""Consolidation writes all its groups in one transaction, each group checked on its own (both backends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deepcontext.store import FactWrite, GroupWrite, Store
from deepcontext.text import content_hash
from deepcontext.types import MemoryStatus, MemoryTier
from tests.store_helpers import axis, later, memory, open_test_store, plan


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def _group(store: Store, ids: list[int], text: str) -> GroupWrite:
    mems = store.get_memories("u", ids, details=False)
    fact = FactWrite(
        text=text, content_hash=content_hash(text), memory_type=mems[0].memory_type.value, source_ids=ids,
        importance=0.7, confidence=0.8, access_count=0, said_at=None, occurred_at=None, valid_from=later(0),
        valid_to=None, conversation_id="c1", metadata={}, embedding=axis(3),
    )  # fmt: skip
    return GroupWrite(sources={m.id: m.updated_at for m in mems}, facts=[fact], method="extractive", reason="test")


def test_a_changed_group_is_skipped_and_the_others_written(store: Store) -> None:
    out = store.apply_add(plan("u", memories=[memory(f"fact {i}", vec=axis(0, tilt=i + 1)) for i in range(4)]))
    a, b, c, d = out.memory_ids
    first, second = _group(store, [a, b], "fact 0 and fact 1"), _group(store, [c, d], "fact 2 and fact 3")
    store.update_memory(
        "u",
        d,
        text="fact 3, changed",
        content_hash=content_hash("fact 3, changed"),
        embedding=axis(1),
        now=later(1),
        actor="user",
        reason=None,
    )
    version = store.count_rows("u")
    written = store.write_consolidations("u", [first, second], later(2))
    assert written[1] is None and written[0] is not None and len(written[0]) == 1
    fact = store.get_memories("u", written[0])[0]
    assert (fact.text, fact.tier, fact.status) == ("fact 0 and fact 1", MemoryTier.LONG_TERM, MemoryStatus.ACTIVE)
    by_id = {m.id: m for m in store.get_memories("u", [a, b, c, d])}
    assert [by_id[i].status for i in (a, b, c, d)] == [
        MemoryStatus.MERGED,
        MemoryStatus.MERGED,
        MemoryStatus.ACTIVE,
        MemoryStatus.ACTIVE,
    ]
    assert by_id[a].superseded_by == fact.id and by_id[c].tier is MemoryTier.SHORT_TERM
    assert [h.event.value for h in store.history("u", a)][-1] == "MERGE"
    assert store.count_rows("u")["memories"] == version["memories"] + 1
    assert store.write_consolidations("u", [], later(3)) == []
