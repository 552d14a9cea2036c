"""The facade's plain answers are typed: each dict it returns has exactly the keys its declared
``TypedDict`` names (a key added or renamed in the code without the type fails here)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

from deepcontext import DeepContext, SyncDeepContext
from deepcontext.lifecycle.runner import LifecycleReport
from deepcontext.types import (
    DeletedMemoryInfo,
    GraphNeighbourInfo,
    LifecycleRun,
    MemoryListing,
    UpdatedMemory,
    UserInfo,
)


def _keys(td: Any) -> set[str]:
    return set(td.__required_keys__) | set(td.__optional_keys__)


def test_no_public_method_is_declared_to_return_a_bare_dict() -> None:
    bare = []
    for name, fn in inspect.getmembers(DeepContext, inspect.isfunction):
        if name.startswith("_") or name == "export":  # export yields JSON-ready records of many kinds
            continue
        shown = str(inspect.signature(fn).return_annotation)  # the annotation as written
        if shown.replace("builtins.", "").startswith(("dict[str, Any]", "list[dict[", "dict[str, int]")):
            bare.append((name, shown))
    assert not bare


def test_the_lifecycle_report_and_its_type_name_the_same_keys() -> None:
    assert {f.name for f in dataclasses.fields(LifecycleReport)} == _keys(LifecycleRun)


def test_each_answer_has_the_keys_of_its_type(tmp_path: Path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/t.db", embedder="hash") as ctx:
        added = ctx.add([{"role": "user", "content": "I live in Lisbon and I work at Globex."}], "ana")
        mid = added.memory_ids[0]
        assert set(ctx.update(mid, "User lives in Porto.", "ana")) == _keys(UpdatedMemory)
        assert set(ctx.get_user("ana")) == _keys(UserInfo)
        listing = ctx.list_memories("ana")
        assert set(listing) == _keys(MemoryListing) and listing["total"] >= 1
        hood = ctx.get_entity_graph("ana", "Globex")
        assert hood and all(set(n) == _keys(GraphNeighbourInfo) for n in hood)
        assert set(ctx.run_lifecycle("ana")) == _keys(LifecycleRun)
        assert set(ctx.consolidate("ana")) == _keys(LifecycleRun)
        assert set(ctx.delete(mid, "ana")) == _keys(DeletedMemoryInfo)
        counts = ctx.stats("ana")
        assert counts["memories"] >= 1 and all(isinstance(v, int) for v in counts.values())
