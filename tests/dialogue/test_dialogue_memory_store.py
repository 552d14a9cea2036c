"""MemoryStore: the seed's key-memory API on every backend, and its key-leak defect fixed."""

from __future__ import annotations

import pytest

from deepcontext.dialogue import (
    KeyMemory,
    LLMContextGraph,
    MemoryStore,
    NodeNotFoundError,
)
from deepcontext.errors import ValidationError
from tests.dialogue.helpers import chain_of


@pytest.fixture
def memories(graph: LLMContextGraph) -> MemoryStore:
    return MemoryStore(graph.backend)


def test_readme_example(graph: LLMContextGraph, memories: MemoryStore) -> None:
    (n0,) = chain_of(graph, 1)
    mid = memories.add_memory(content="叠加态公式: |ψ⟩ = α|0⟩ + β|1⟩", tags={"公式", "量子计算"}, source_nodes={n0})
    mem = memories.get_memory(mid)
    assert isinstance(mem, KeyMemory)
    assert mem.content.startswith("叠加态公式") and mem.tags == {"公式", "量子计算"} and mem.source_nodes == {n0}
    assert (mem.status, mem.pinned, mem.packable, mem.turn_id) == ("candidate", False, True, 0)
    assert [m.id for m in memories.get_all_memories()] == [mid]
    assert memories.memories == {mid: mem}


def test_in_memory_ids_start_at_zero() -> None:
    store = MemoryStore()
    assert [store.add_memory("a"), store.add_memory("b")] == [0, 1]


def test_canonical_key_deduplicates_and_merges_sources(graph: LLMContextGraph, memories: MemoryStore) -> None:
    a, b = chain_of(graph, 2)
    first = memories.add_memory("E = mc^2", source_nodes={a}, canonical_key="e=mc2")
    again = memories.add_memory("E=mc²", source_nodes={b}, canonical_key="e=mc2")
    assert again == first and len(memories.get_all_memories()) == 1
    assert memories.get_memory(first).source_nodes == {a, b}  # type: ignore[union-attr]
    assert memories.find_canonical("e=mc2") == first


def test_removing_a_memory_frees_its_key(memories: MemoryStore) -> None:
    mid = memories.add_memory("F = ma", canonical_key="f=ma")
    assert memories.remove_memory(mid) is True
    assert memories.remove_memory(mid) is False
    assert memories.get_memory(mid) is None
    # the seed kept "f=ma" -> mid in its index: this add returned the removed id and stored nothing
    fresh = memories.add_memory("F = m a", canonical_key="f=ma")
    assert fresh != mid and memories.get_memory(fresh) is not None
    assert [m.content for m in memories.get_all_memories()] == ["F = m a"]


def test_candidates_commit_and_reject_by_round(memories: MemoryStore) -> None:
    r1 = memories.add_memory("round one", turn_id=1)
    r2 = memories.add_memory("round two", turn_id=2, pinned=True, canonical_key="two")
    done = memories.add_memory("already", turn_id=1, status="committed")
    assert memories.commit_candidates(1) == [r1]
    assert {m.id for m in memories.get_committed_memories()} == {r1, done}
    assert memories.reject_candidates(2) == [r2]
    rejected = memories.get_memory(r2)
    assert rejected is not None and rejected.status == "rejected"
    assert memories.get_pinned_memories() == []  # a rejected memory is never injected
    assert memories.add_memory("two again", canonical_key="two") != r2  # and holds no key
    with pytest.raises(ValidationError):
        memories.add_memory("bad", status="maybe")


def test_pinned_and_search(memories: MemoryStore) -> None:
    formula = memories.add_memory("Qubit: |ψ⟩ = α|0⟩ + β|1⟩", tags={"formula", "quantum"}, pinned=True, packable=False)
    pref = memories.add_memory("User prefers short answers", tags={"preference"})
    other = memories.add_memory("Measurement collapses the state", tags={"quantum", "measurement"})
    assert [m.id for m in memories.get_pinned_memories()] == [formula]
    assert [m.id for m in memories.search_by_tags({"quantum"})] == [formula, other]
    assert [m.id for m in memories.search_by_tags({"quantum", "formula"})] == [formula]
    assert memories.search_by_tags({"quantum", "nothing"}) == [] and memories.search_by_tags(set()) == []
    assert [m.id for m in memories.search_by_text("SHORT")] == [pref]
    assert [m.id for m in memories.search_by_text("measure")] == [other]  # content or tag, substring
    assert [m.id for m in memories.search_by_text("preference")] == [pref]  # a tag
    assert memories.search_by_text("  ") == []
    assert memories.get_memory(formula).packable is False  # type: ignore[union-attr]


def test_bad_input(graph: LLMContextGraph, memories: MemoryStore) -> None:
    with pytest.raises(ValidationError):
        memories.add_memory("   ")
    with pytest.raises(KeyError) as info:
        memories.add_memory("cites nothing real", source_nodes={123456})
    assert isinstance(info.value, NodeNotFoundError)
    assert memories.get_all_memories() == []
    assert memories.get_memory("1") is None  # type: ignore[arg-type]
    assert memories.remove_memory(98765) is False


def test_snapshots_do_not_write_through(memories: MemoryStore) -> None:
    mid = memories.add_memory("fact", tags={"x"})
    memories.get_memory(mid).tags.add("y")  # type: ignore[union-attr]
    assert memories.get_memory(mid).tags == {"x"}  # type: ignore[union-attr]
