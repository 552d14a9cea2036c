"""DeepContextMemory: a LangChain-style chat memory over DeepContext, used the way LangChain's
chains call memory (no LangChain installed or imported)."""

from __future__ import annotations

import importlib.util

import pytest

from deepcontext import DeepContext, ManualClock, SyncDeepContext
from deepcontext.context import DeepContextMemory
from deepcontext.embed import HashEmbedder
from deepcontext.errors import ConfigurationError, ValidationError
from tests.context.helpers import T0


def test_langchain_is_not_imported() -> None:
    import sys

    import deepcontext.context.langchain  # noqa: F401

    assert importlib.util.find_spec("langchain") is None  # not installed here, and not needed
    assert not any(m.split(".")[0] in ("langchain", "langchain_core") for m in sys.modules)


def test_sync_chain_round_trip(tmp_path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/lc.db", embedder=HashEmbedder(256), clock=ManualClock(T0)) as ctx:
        memory = DeepContextMemory(ctx, "ana", "support", budget_tokens=300)
        assert memory.memory_variables == ["history"]
        memory.save_context({"input": "I moved to Porto last week."}, {"output": "Noted, Porto it is."})
        memory.save_context({"question": "My dog is called Rex."}, {"answer": "What a nice name!"})
        memory.save_context({}, {})  # nothing to store
        turns = ctx.turns("ana", "support")
        assert [t.content for t in turns] == [
            "I moved to Porto last week.", "Noted, Porto it is.", "My dog is called Rex.", "What a nice name!"
        ]  # fmt: skip
        loaded = memory.load_memory_variables({"input": "Where do I live now, Porto?"})
        text = loaded["history"]
        assert set(loaded) == {"history"} and "Porto" in text
        assert text == ctx.context("Where do I live now, Porto?", "ana", "support", budget_tokens=300).text
        assert "## Conversation so far" in text and "Rex" in text  # the conversation path
        assert memory.load_memory_variables({}) == {"history": ""}

        memory.clear()  # a new conversation: earlier turns are no longer shown as the conversation
        assert memory.conversation_id == "support~1"
        after = memory.load_memory_variables({"input": "Where do I live now, Porto?"})["history"]
        assert "## Conversation so far" not in after and "Porto" in after  # still a memory
        memory.save_context({"input": "Hello again"}, {"output": "Hi!"})
        assert [t.content for t in ctx.turns("ana", "support~1")] == ["Hello again", "Hi!"]
        assert len(ctx.turns("ana", "support")) == 4  # nothing was deleted

        custom = DeepContextMemory(ctx, "ana", memory_key="chat_history", min_similarity=0.9)
        assert custom.memory_variables == ["chat_history"]
        assert "chat_history" in custom.load_memory_variables({"input": "Porto"})


async def test_async_methods_with_an_async_deepcontext(tmp_path) -> None:
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/lca.db", embedder=HashEmbedder(256), clock=ManualClock(T0))
    await ctx.init()
    try:
        memory = DeepContextMemory(ctx, "bo", "chat")
        await memory.asave_context({"input": "I play the cello."}, {"output": "Lovely."})
        out = await memory.aload_memory_variables({"input": "Which instrument, the cello?"})
        assert "cello" in out["history"]
        with pytest.raises(ConfigurationError):
            memory.save_context({"input": "x"}, {"output": "y"})  # sync call on an async DeepContext
        await memory.aclear()
        assert memory.conversation_id == "chat~1"
    finally:
        await ctx.close()


def test_validation(tmp_path) -> None:
    with pytest.raises(ValidationError):
        DeepContextMemory(object(), "ana")
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/v.db", embedder=HashEmbedder(256)) as ctx:
        with pytest.raises(ValidationError):
            DeepContextMemory(ctx, "")
        memory = DeepContextMemory(ctx, "ana")
        with pytest.raises(ValidationError):
            memory.save_context("not a dict", {})  # type: ignore[arg-type]
