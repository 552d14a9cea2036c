"""DeepContext 0.1's example programs (the README's basic usage, ``chat_demo.py``) run as
subprocesses: offline, and the chat demo also against the fake OpenAI server over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from deepcontext import ValidationError
from tests.chat.helpers import Brain
from tests.examples.conftest import Run
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # example programs run as processes, as a user runs them


def test_basic_usage_runs_offline(run: Run) -> None:
    p = run(["examples/deepcontext_basic_usage.py"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("Stored ") and "Acme Corp" in lines[0]
    assert any("[short_term]" in line and "Acme Corp" in line for line in lines)  # the fact is found
    graph = [line for line in lines if "--> (depth" in line]
    assert graph and all("--None-->" not in line for line in graph)  # neighbours only, as in 0.1
    assert lines[-1].startswith("Decayed: ")


LLM_ENV = {
    "DEEPCONTEXT_LLM_API_KEY": "sk-test-0123456789",
    "DEEPCONTEXT_LLM_MODEL": "fake-model",
    "DEEPCONTEXT_LLM_MAX_RETRIES": "0",
}


def test_basic_usage_extracts_with_the_configured_llm(run: Run, fake_openai: FakeOpenAI) -> None:
    Brain(fake_openai).learn(
        "Acme Corp",
        "The user is a Python developer at Acme Corp.",
        entities=[("User", "person"), ("Acme Corp", "organization")],
        relations=[("User", "works_at", "Acme Corp")],
    )
    p = run(["examples/deepcontext_basic_usage.py"], env={**LLM_ENV, "DEEPCONTEXT_LLM_BASE_URL": fake_openai.url})
    assert p.returncode == 0, p.stderr
    assert "found ['User', 'Acme Corp'] entities" in p.stdout  # the model's entities, not the rules'
    assert "Acme Corp" in p.stdout.split("\n", 1)[1].split("-->", 1)[0]  # the search finds it
    assert "  User --works_at--> (depth 1)" in p.stdout
    assert any("I'm a Python developer working at Acme Corp" in r.last_user_message for r in fake_openai.chat_requests)


async def test_the_01_engine_class_keeps_01s_entity_graph(tmp_path: Any) -> None:
    from deepcontext.compat.deepcontext01 import DeepContext, MemoryEngine

    assert MemoryEngine is DeepContext
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/g.db", embedder="hash") as ctx:
        await ctx.add([{"role": "user", "content": "My sister Maria lives in Lisbon."}], user_id="u")
        hood = await ctx.get_entity_graph("u", "Maria")
        assert hood and all(n["depth"] >= 1 and n["relation"] for n in hood)
        assert "Lisbon" in {n["entity"] for n in hood}
        assert await ctx.get_entity_graph("u", "Atlantis") == []
        with pytest.raises(ValidationError):
            await ctx.get_entity_graph("u", "")  # inputs are still checked


CHAT = "my sister Maria lives in Lisbon\nwhere does Maria live?\nmemories\nMaria\ngraph Maria\ngraph Atlantis\nlifecycle\nexit\n"


def test_chat_demo_runs_offline(run: Run) -> None:
    p = run(["examples/chat_demo.py"], input=CHAT)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "offline: no LLM configured" in out
    assert "I remember:" in out and "Lisbon" in out.split("I remember:", 1)[1]
    assert "memories found ---" in out
    graph = out.split("--- Graph for 'Maria' ---", 1)[1].split("You:", 1)[0]
    assert "Lisbon" in graph
    assert "No connections found." in out.split("--- Graph for 'Atlantis' ---", 1)[1]
    assert "Decayed:" in out and out.rstrip().endswith("Goodbye!")


def test_chat_demo_answers_with_the_configured_llm(run: Run, fake_openai: FakeOpenAI) -> None:
    brain = Brain(fake_openai).learn(
        "Lisbon",
        "User's sister Maria lives in Lisbon.",
        entities=[("Maria", "person"), ("Lisbon", "location")],
        relations=[("Maria", "lives_in", "Lisbon")],
    )
    extract = brain._respond

    def respond(body: dict[str, Any]) -> Reply:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        if system.startswith("You are a helpful AI assistant with persistent memory"):
            return Reply.text(f"(model) {len(body['messages'])} messages; memories: {'Lisbon' in system}")
        return extract(body)

    fake_openai.responder = respond
    env = {**LLM_ENV, "DEEPCONTEXT_LLM_BASE_URL": fake_openai.url}
    p = run(["examples/chat_demo.py"], input=CHAT, env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "offline" not in out
    answers = [line for line in out.splitlines() if line.startswith("AI: ")]
    assert answers == ["AI: (model) 2 messages; memories: False", "AI: (model) 2 messages; memories: True"]
    graph = out.split("--- Graph for 'Maria' ---", 1)[1].split("You:", 1)[0]
    assert "--[lives_in]--> Lisbon (location)" in graph  # extracted by the model, over HTTP
    asked = [r for r in fake_openai.chat_requests if "persistent memory" in r.system_prompt]
    assert [r.last_user_message for r in asked] == ["my sister Maria lives in Lisbon", "where does Maria live?"]
