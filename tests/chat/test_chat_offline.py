"""The chat with no LLM configured: it says so once, stores every message, and shows the memories
it stored and the context an LLM would have received."""

from __future__ import annotations

import asyncio
from pathlib import Path

from deepcontext import DeepContext
from tests.chat.helpers import block, chat, last_node, opener


def test_without_an_llm_it_still_runs_stores_and_shows_the_context(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    code, out = chat(
        opener(db), ["My sister Lena lives in Porto.", "Where does my sister live?", "memories Lena", "context", "exit"]
    )
    assert code == 0
    assert out.count("No LLM is configured") == 1 and "answers need an LLM" in out  # said once, at the start
    assert "DEEPCONTEXT_LLM_BASE_URL" in out and "DEEPCONTEXT_OPENAI_API_KEY" in out  # how to configure one
    assert "assistant ›" not in out

    first = block(out, "My sister Lena lives in Porto.")
    assert "stored (your message only: no answer without an LLM)" in first
    assert "[short_term/semantic] The user's sister Lena lives in Porto." in first  # derived by the rules
    assert "[working/episodic] User: My sister Lena lives in Porto." in first
    assert "what an LLM would have received" in first and "[user]" in first

    second = block(out, "Where does my sister live?")
    assert "what an LLM would have received" in second
    prompt = second.split("what an LLM would have received", 1)[1]
    assert "## Relevant memories" in prompt and "Lena lives in Porto" in prompt
    assert "## Conversation so far (oldest first)" in prompt and "user: My sister Lena lives in Porto." in prompt
    assert "Lena lives in Porto" in block(out, "memories Lena")
    assert "Relevant memories" in block(out, "context") and "memories used" in block(out, "context")

    async def stored() -> list[list[tuple[str, str]]]:
        async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash", llm_provider="none") as ctx:
            path = await ctx.conversation_path("ana", "c1")
        return [n.messages for n in path.nodes]

    assert asyncio.run(stored()) == [  # each turn stored as a node holding the user's message alone
        [("user", "My sister Lena lives in Porto.")],
        [("user", "Where does my sister live?")],
    ]


def test_offline_memories_are_recalled_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    code, out = chat(opener(db), ["I work at Globex as a data engineer.", "exit"])
    assert code == 0
    tip = last_node(out)
    code, out = chat(opener(db), ["Where do I work?", "exit"], conversation="other")
    assert code == 0
    prompt = block(out, "Where do I work?").split("what an LLM would have received", 1)[1]
    assert "Globex" in prompt.split("## Relevant memories", 1)[1]  # from memory: another conversation
    code, out = chat(opener(db), ["exit"])
    assert f"continuing after [{tip}]" in out and out.count("No LLM is configured") == 1
