"""`deepcontext demo`: each of the demo's questions puts the memory that answers it first, with the
embedder the demo uses (the local MiniLM model) and the default settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.cli.demo import load_sample
from deepcontext.embed.minilm import MiniLMEmbedder

# what the first result must say, per demo question (the demo's conversation is ours)
ANSWERS = {
    "Where does Maya work?": "Northwind Labs",
    "Which foods should I avoid when cooking for Maya?": "peanut",
    "How do I deploy the pipeline?": "make release",
    "What went wrong with the nightly job?": "disk",
    "Who is Lena?": "Lena",
    "What trips are planned?": "Kyoto",
}


@pytest.fixture(scope="module")
def sample() -> dict:
    s = load_sample()
    assert set(s["queries"]) == set(ANSWERS)
    return s


async def test_each_demo_question_puts_the_answer_first(tmp_path: Path, sample: dict) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/demo.db", embedder=MiniLMEmbedder()) as ctx:
        user = sample["user_id"]
        for session in sample["sessions"]:
            await ctx.add(session["messages"], user, session["conversation_id"], timestamp=session["timestamp"])
        for query, answer in ANSWERS.items():
            res = await ctx.search(query, user, limit=3)
            assert res.results, query
            assert answer.lower() in res.results[0].text.lower(), (query, [r.text for r in res.results])
