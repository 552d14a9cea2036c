"""SyncDeepContext shows DeepContext's real signatures (help(), editors), and its generated
methods work like the async ones."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from deepcontext import DeepContext, SyncDeepContext


def _public_async_methods() -> list[str]:
    return [
        name
        for name, fn in inspect.getmembers(DeepContext, inspect.isfunction)
        if not name.startswith("_") and (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn))
    ]


def test_every_public_method_has_the_async_signature() -> None:
    names = _public_async_methods()
    assert {"add", "search", "export", "dialogue", "context", "run_lifecycle", "delete_memories"} <= set(names)
    for name in names:
        sync_sig = inspect.signature(getattr(SyncDeepContext, name))
        async_sig = inspect.signature(getattr(DeepContext, name))
        assert list(sync_sig.parameters.values()) == list(async_sig.parameters.values()), name
        assert "**kwargs" not in str(sync_sig) and "**filters" not in str(sync_sig), (name, sync_sig)
        if name not in ("close", "dialogue"):  # these two keep docstrings of their own
            assert getattr(SyncDeepContext, name).__doc__ == getattr(DeepContext, name).__doc__, name
    # and on an instance, as help(ctx.search) reads it
    assert "min_score" in str(inspect.signature(SyncDeepContext.search))


def test_generated_methods_run_blocking(tmp_path: Path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder="hash") as ctx:
        res = ctx.add([{"role": "user", "content": "I live in Lisbon."}], "ana", timestamp="2025-05-01T12:00:00Z")
        assert res.memory_ids
        assert any("Lisbon" in r.text for r in ctx.search("where do I live", "ana", min_score=0.0).results)
        records = ctx.export("ana")
        assert isinstance(records, list) and records and records[0]["record"] == "header"
        with pytest.raises(TypeError):
            ctx.search("x", "ana", colour="blue")  # unknown keywords fail like the async method's
