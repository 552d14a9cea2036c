"""Memory Graph's main.py flow (``examples/memory_graph_main.py``) as a subprocess: offline, and
against the fake OpenAI server over HTTP; plus the seed's module names under the compat package."""

from __future__ import annotations

import importlib
import runpy
from typing import Any

import pytest

from deepcontext.llm.prompts import PLAN_SYSTEM
from tests.examples.conftest import ROOT, Run
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # example programs run as processes, as a user runs them


def test_main_runs_offline_and_prints_the_final_state(run: Run) -> None:
    p = run(["examples/memory_graph_main.py"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "running offline" in out
    assert "最终状态总结" in out and "【Active Graph 活跃图】" in out
    assert "<-- 最新节点" in out
    assert "活跃上下文路径 (Node 5): [" in out
    assert out.count("(offline answer") == 5  # rounds 1-5 printed, each answered


def test_main_plans_and_answers_with_the_model_each_round(run: Run, fake_openai: FakeOpenAI) -> None:
    """As in Memory Graph, each planned round first asks the model for its plan (validated JSON);
    the plan's key memory ends up pinned in the final state."""

    def respond(body: dict[str, Any]) -> Reply:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        question = body["messages"][-1]["content"]
        if system.startswith(PLAN_SYSTEM[:60]):
            memories = []
            if "词源" in question and "御宅族这个词" in question:
                memories = [
                    {
                        "content": "御宅 was first an honorific pronoun",
                        "tags": ["词源"],
                        "pinned": True,
                        "packable": False,
                        "source_node_ids": [],
                    }
                ]
            return Reply.json(
                {
                    "reasoning": "continue",
                    "selected_node_ids": [],
                    "nodes_to_pack": [],
                    "memories_to_extract": memories,
                    "memory_queries": ["词源"],
                }
            )
        return Reply.text(f"model answer about {question[:12]}")

    fake_openai.responder = respond
    env = {"DEEPSEEK_API_KEY": "sk-test-0123456789", "MEMORY_GRAPH_API_URL": fake_openai.url, "MEMORY_GRAPH_MODEL": "fake-model"}
    p = run(["examples/memory_graph_main.py"], env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "running offline" not in out
    assert out.count("model answer about") == 5
    questions = runpy.run_path(str(ROOT / "examples" / "memory_graph_main.py"), run_name="example")["QUESTIONS"]
    asked = [r.last_user_message for r in fake_openai.chat_requests if r.last_user_message in questions]
    assert asked == questions
    plans = [r for r in fake_openai.chat_requests if r.system_prompt.startswith(PLAN_SYSTEM[:60])]
    assert len(plans) == 5  # rounds 1-5 were planned by the model
    pinned = out.split("【Pinned Memory 永久记忆】", 1)[1].split("【All Memory", 1)[0]
    assert "御宅 was first an honorific pronoun" in pinned
    assert all(r.model == "fake-model" for r in fake_openai.chat_requests)


def test_the_compat_manager_plans_with_a_fetcher_and_offline_otherwise() -> None:
    from deepcontext.compat.memory_graph import ContextManager, LLMFetcher
    from deepcontext.dialogue import LLMPlanner, OfflinePlanner

    fetcher = LLMFetcher("http://127.0.0.1:9/v1", "sk-test-0123456789", "fake-model")
    assert isinstance(ContextManager(fetcher, max_context_nodes=6).planner, LLMPlanner)
    assert isinstance(ContextManager(fetcher, planner=OfflinePlanner()).planner, OfflinePlanner)

    class Agent:
        async def fetch(self, msg: str, system_prompt: str | None = None, temperature: float = 0.4, max_tokens: int = 1) -> str:
            return "ok"

    assert isinstance(ContextManager(Agent()).planner, OfflinePlanner)


SEED_NAMES = {
    "": [
        "LLMFetcher",
        "LLMContextGraph",
        "ContextManager",
        "LLMContext",
        "LLMContextPair",
        "MemoryStore",
        "KeyMemory",
        "ContextDecision",
        "CyclicGraphError",
        "LLMContextGraphNode",
        "LLMBackendConfig",
        "LLMError",
        "LLMTimeoutError",
        "LLMBackendError",
    ],
    ".context_graph": ["LLMContextGraph", "LLMContextPair", "LLMContextGraphNode", "CyclicGraphError"],
    ".context_manager": ["ContextManager", "ContextDecision"],
    ".memory_store": ["MemoryStore", "KeyMemory"],
    ".llm_fetcher": ["LLMFetcher", "LLMContext", "LLMBackendConfig", "LLMError", "LLMTimeoutError", "LLMBackendError"],
    ".llm_fetcher.llm_fetcher": ["LLMFetcher", "LLMContext"],
}


@pytest.mark.parametrize("module", sorted(SEED_NAMES))
def test_the_seeds_modules_import_under_the_compat_package(module: str) -> None:
    mod = importlib.import_module(f"deepcontext.compat.memory_graph{module}")
    for name in SEED_NAMES[module]:
        assert getattr(mod, name) is not None, (module, name)


def test_the_seed_readme_dag_example_runs() -> None:
    from deepcontext.compat.memory_graph import LLMContext, LLMContextGraph, LLMContextPair
    from deepcontext.compat.memory_graph.context_graph import CyclicGraphError

    def pair(u: str, a: str) -> LLMContextPair:
        return LLMContextPair(user_role=LLMContext(role="user", content=u), llm_role=LLMContext(role="assistant", content=a))

    graph = LLMContextGraph()
    n0 = graph.add_node(pair("你好", "你好！"))
    n1 = graph.add_node(pair("量子计算", "..."), parent_ids={n0})
    n2 = graph.add_node(pair("合并", "..."), parent_ids={n0, n1})
    assert graph.get_ancestor_chain(n2, strategy="longest") == [0, 1, 2]
    assert [m.content for m in graph.build_linear_context(n2, max_nodes=8)][:2] == ["你好", "你好！"]
    with pytest.raises(CyclicGraphError):
        graph.add_edge(n0, n2)
