"""Tier backends: the protocol, in-memory and JSON files, atomic writes, round trips."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from deepcontext.errors import StorageError, ValidationError
from deepcontext.query import DeepCQ, JsonFileBackend, MemoryBackend, MemorySchema, TierBackend
from deepcontext.query.tiers import LongTermStore, ReferenceData, atomic_write_json


class FakeStore:
    """Stands in for the engine's store: kv_* methods keyed by user."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], Any] = {}

    def kv_get(self, user_id: str, namespace: str, key: str) -> Any:
        return self.rows.get((user_id, namespace, key))

    def kv_put(self, user_id: str, namespace: str, key: str, value: Any) -> None:
        self.rows[(user_id, namespace, key)] = json.loads(json.dumps(value))

    def kv_delete(self, user_id: str, namespace: str, key: str) -> None:
        self.rows.pop((user_id, namespace, key), None)

    def kv_list(self, user_id: str, namespace: str) -> list[tuple[str, Any]]:
        return sorted((k, v) for (u, n, k), v in self.rows.items() if u == user_id and n == namespace)


class StoreTierBackend:
    """The adapter from the TierBackend docstring: four one-line methods."""

    def __init__(self, store: FakeStore, user_id: str) -> None:
        self.store, self.user_id = store, user_id

    def get(self, namespace: str, key: str) -> Any:
        return self.store.kv_get(self.user_id, namespace, key)

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.store.kv_put(self.user_id, namespace, key, value)

    def delete(self, namespace: str, key: str) -> None:
        self.store.kv_delete(self.user_id, namespace, key)

    def list(self, namespace: str) -> Mapping[str, Any]:
        return dict(self.store.kv_list(self.user_id, namespace))


def populate(cq: DeepCQ) -> None:
    cq.state.set("status", "[status]\nall good\n")
    cq.state.set("errors", "[errors]\ndisk full\n")
    cq.state.set("status", "[status]\ndegraded\n")  # replaced, keeps its place
    for i in range(4):
        cq.cache.put(f"k{i}", f"value {i}")
    cq.cache.put("k1", "value 1 changed")
    for i in range(5):
        cq.history.add("user" if i % 2 == 0 else "ai", f"turn {i}")
    cq.notes.append("ops", "rotate keys monthly")
    cq.notes.append("ops", "backups at 04:00")
    cq.reference.set("region", "eu-west-1")
    cq.reference.set("limits", {"cpu": 4, "ram_gb": 16})


def snapshot(cq: DeepCQ) -> dict[str, Any]:
    # notes and reference keys come in the backend's listing order (files: insertion order)
    return {name: sorted(tier.as_text().splitlines()) for name, tier in cq.tiers().items()}


@pytest.mark.parametrize("kind", ["memory", "files", "store"])
def test_tiers_round_trip_through_a_backend(kind: str, tmp_path: Path) -> None:
    schema = MemorySchema(sections=["status", "errors"])
    store = FakeStore()

    def backend() -> TierBackend:
        if kind == "memory":
            return shared
        if kind == "files":
            return JsonFileBackend(tmp_path)
        return StoreTierBackend(store, "u1")

    shared = MemoryBackend()
    first = DeepCQ(schema, backend=backend(), cache_size=3, history_turns=3)
    populate(first)
    again = DeepCQ(schema, backend=backend(), cache_size=3, history_turns=3)
    assert snapshot(again) == snapshot(first)
    assert again.state.sections() == ["status", "errors"]
    assert again.cache.keys() == ["k2", "k3", "k1"]  # k0 evicted, k1 most recent
    assert [t.text for t in again.history.turns()] == ["turn 2", "turn 3", "turn 4"]
    assert again.reference.get("limits") == {"cpu": 4, "ram_gb": 16}
    assert again.query("disk").sections_included == ["errors"]
    again.history.add("ai", "turn 5")
    assert [t.text for t in DeepCQ(schema, backend=backend(), history_turns=3).history.turns()][-1] == "turn 5"


def test_users_do_not_see_each_other() -> None:
    store = FakeStore()
    schema = MemorySchema(sections=["status"])
    DeepCQ(schema, backend=StoreTierBackend(store, "alice")).state.set("status", "[status]\nalice\n")
    assert DeepCQ(schema, backend=StoreTierBackend(store, "bob")).state.as_text() == ""


def test_file_backend_layout_and_no_temp_files_left(tmp_path: Path) -> None:
    cq = DeepCQ(MemorySchema(sections=["status"]), backend=JsonFileBackend(tmp_path), namespace_prefix="u1.")
    populate(cq)
    cq.state.clear()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["u1.cache.json", "u1.history.json", "u1.notes.json", "u1.reference.json", "u1.state.json"]
    assert json.loads((tmp_path / "u1.notes.json").read_text()) == {"ops": ["rotate keys monthly", "backups at 04:00"]}
    assert json.loads((tmp_path / "u1.state.json").read_text()) == {}


def test_deepcq_files_keep_their_format(tmp_path: Path) -> None:
    notes, ref = tmp_path / "notes.json", tmp_path / "ref.json"
    notes.write_text(json.dumps({"project": ["written by deepcq"]}))
    ref.write_text(json.dumps({"tz": "Europe/Berlin"}))
    cq = DeepCQ(MemorySchema(sections=["project"]), store_path=notes, reference_path=ref)
    assert cq.notes.get("project") == ["written by deepcq"] and cq.reference.get("tz") == "Europe/Berlin"
    cq.notes.append("project", "and one more")
    cq.reference.set("lang", "de")
    assert json.loads(notes.read_text()) == {"project": ["written by deepcq", "and one more"]}
    assert json.loads(ref.read_text()) == {"tz": "Europe/Berlin", "lang": "de"}


def test_a_corrupt_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text("{not json")
    with pytest.raises(StorageError):
        LongTermStore(path)
    assert path.read_text() == "{not json"
    path.write_text("[1, 2]")
    with pytest.raises(StorageError):
        ReferenceData(path).get("x")


def test_failed_writes_leave_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "ref.json"
    ref = ReferenceData(path)
    ref.set("a", 1)
    with pytest.raises(ValidationError):
        ref.set("b", {1, 2})  # not JSON
    with pytest.raises(ValidationError):
        ref.set("c", float("nan"))
    assert json.loads(path.read_text()) == {"a": 1}
    with pytest.raises(StorageError):
        atomic_write_json(path / "inside-a-file.json", {})  # parent is a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.json"]


def test_backend_contract() -> None:
    for backend in (MemoryBackend(),):
        assert isinstance(backend, TierBackend)
        backend.put("ns", "k", {"a": [1, 2]})
        value = backend.get("ns", "k")
        value["a"].append(3)  # callers get copies
        assert backend.get("ns", "k") == {"a": [1, 2]}
        assert backend.list("ns") == {"k": {"a": [1, 2]}} and backend.list("other") == {}
        backend.delete("ns", "k")
        backend.delete("ns", "missing")
        assert backend.get("ns", "k") is None
        with pytest.raises(ValidationError):
            backend.put("", "k", 1)
    with pytest.raises(ValidationError):
        JsonFileBackend()
    with pytest.raises(ValidationError):
        DeepCQ(MemorySchema(sections=["a"]), backend=object())  # type: ignore[arg-type]
