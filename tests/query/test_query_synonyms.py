"""SynonymMap and the built-in packs."""

from __future__ import annotations

import pytest

from deepcontext.errors import ValidationError
from deepcontext.query import DeepCQ, MemorySchema, SynonymMap, available_packs, load_pack


def test_overlapping_clusters_merge() -> None:
    m = SynonymMap.from_dict({"db": ["database"], "postgres": ["Database", "pg"]})
    assert len(m.clusters) == 1
    assert m.clusters[0] == frozenset({"db", "database", "postgres", "pg"})


def test_expand_and_expand_text() -> None:
    m = SynonymMap.from_dict({"eps": ["earnings per share"], "capex": ["capital expenditure"]})
    assert {"eps", "earnings", "share"} <= m.expand("eps")
    assert m.expand("EPS") >= {"earnings"}
    assert m.expand("unrelated") == frozenset({"unrelated"})
    assert {"capex", "capital", "expenditure"} <= m.expand_text("Capital expenditures rose 10%")
    assert m.expand_text("nothing relevant") == frozenset()


def test_union_composes_maps() -> None:
    m = SynonymMap.from_dict({"arr": ["annual recurring revenue"]}) | SynonymMap.from_dict({"mrr": ["monthly recurring revenue"]})
    assert len(m.clusters) == 2


def test_bad_terms_are_rejected() -> None:
    with pytest.raises(ValidationError):
        SynonymMap.from_dict({"the": ["a"]})  # no content words
    with pytest.raises(ValidationError):
        SynonymMap.from_dict(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_packs_load() -> None:
    assert {"devops", "finance", "personal"} <= set(available_packs())
    for name in available_packs():
        assert load_pack(name).clusters
    with pytest.raises(ValidationError) as err:
        load_pack("astrology")
    assert "available" in str(err.value)


def test_vocabulary_in_a_query_both_directions() -> None:
    schema = MemorySchema(sections=["infra", "people"], vocabulary=load_pack("devops"), fallback_include_all=False)
    cq = DeepCQ(schema)
    cq.state.set("infra", "[infra]\nk8s nodes at 91% RAM\n")
    cq.state.set("people", "[people]\nAnna runs the kubernetes training\n")
    r = cq.query("kubernetes memory")
    assert r.sections_included == ["infra", "people"]
    assert r.intent["infra"] == 1.0 and r.intent["people"] == 0.5
    assert DeepCQ(MemorySchema(sections=["infra"], fallback_include_all=False)).query("kubernetes").sections_included == []


def test_multiword_terms_and_cjk_terms() -> None:
    vocab = SynonymMap.from_dict({"oom": ["out of memory"], "数据库": ["db"]})
    cq = DeepCQ(MemorySchema(sections=["errors", "metrics"], vocabulary=vocab, fallback_include_all=False))
    cq.state.set("errors", "[errors]\nworker ran out of memory twice\n")
    cq.state.set("metrics", "[metrics]\ndb latency 20ms\n")
    assert cq.query("OOM").sections_included == ["errors"]
    assert cq.query("数据库").sections_included == ["metrics"]
