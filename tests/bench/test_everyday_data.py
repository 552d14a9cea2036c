"""benchmarks/data/everyday-blind.jsonl, the blind part of the everyday cases: well formed, ids unique,
every kind with enough cases, and loadable by the benchmark itself."""

from __future__ import annotations

import json
from pathlib import Path

from deepcontext_bench.everyday import KINDS, load_everyday

BLIND = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "everyday-blind.jsonl"
FIELDS = {"id", "kind", "part", "statements", "question", "first", "not_first", "must_contain", "must_not_contain"}


def _cases() -> list[dict[str, object]]:
    return [json.loads(line) for line in BLIND.read_text(encoding="utf-8").splitlines() if line.strip()]


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) and t.strip() for t in value)


def test_every_case_has_its_fields_typed() -> None:
    for c in _cases():
        assert set(c) == FIELDS, c.get("id")
        assert isinstance(c["id"], str) and c["id"].startswith(f"b{c['kind']}-"), c["id"]
        assert c["kind"] in KINDS and c["part"] == "blind", c["id"]
        assert _texts(c["statements"]) and c["statements"], c["id"]
        assert isinstance(c["question"], str) and c["question"].strip(), c["id"]
        assert c["first"] is None or (isinstance(c["first"], str) and c["first"].strip()), c["id"]
        assert c["not_first"] is None or (isinstance(c["not_first"], str) and c["not_first"].strip()), c["id"]
        assert _texts(c["must_contain"]) and _texts(c["must_not_contain"]), c["id"]
        assert c["first"] or c["must_contain"] or c["must_not_contain"], f"{c['id']} checks nothing"


def test_ids_are_unique_and_every_kind_has_enough_cases() -> None:
    cases = _cases()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    assert len(cases) >= 160
    for kind in KINDS:
        assert sum(c["kind"] == kind for c in cases) >= 15, kind


def test_the_benchmark_loads_it() -> None:
    cases = load_everyday(BLIND)
    assert len(cases) == len(_cases()) and {c.part for c in cases} == {"blind"}
