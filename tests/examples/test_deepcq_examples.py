"""deepcq's SDK examples run as subprocesses: offline, and the ones that call a model against the
fake OpenAI server over HTTP; plus the seed's module names importing from the compat package."""

from __future__ import annotations

import importlib
import json

import pytest

from tests.examples.conftest import Run
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # example programs run as processes, as a user runs them


def test_openai_agents_example_offline_prints_only_the_relevant_sections(run: Run) -> None:
    p = run(["examples/deepcq/openai_agents_sdk.py"])
    assert p.returncode == 0, p.stderr
    assert "sections: ['portfolio', 'risk-management']" in p.stdout
    assert "Concentration limit" in p.stdout and "cloud revenue" not in p.stdout


def test_openai_agents_example_sends_the_filtered_context(run: Run, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Too concentrated: AAPL is 40%, the limit is 30%."))
    p = run(["examples/deepcq/openai_agents_sdk.py", "--base-url", fake_openai.url, "--model", "fake-model"])
    assert p.returncode == 0, p.stderr
    assert "agent: Too concentrated" in p.stdout
    (req,) = fake_openai.chat_requests
    assert "AAPL 40%" in req.system_prompt and "cloud revenue" not in req.system_prompt
    assert req.last_user_message == "What is my portfolio concentration risk?"


def test_claude_example_keeps_the_exchanges_and_filters_each_turn(run: Run, fake_openai: FakeOpenAI) -> None:
    offline = run(["examples/deepcq/claude_agents_sdk.py"])
    assert offline.returncode == 0, offline.stderr
    assert "history turns: 4" in offline.stdout
    fake_openai.script(Reply.text("Yes: an OOM on worker-7 at 02:15."), Reply.text("v2.3.1."))
    p = run(["examples/deepcq/claude_agents_sdk.py", "--base-url", fake_openai.url, "--model", "fake-model"])
    assert p.returncode == 0, p.stderr
    assert "claude: Yes: an OOM" in p.stdout and "claude: v2.3.1." in p.stdout
    first, second = fake_openai.chat_requests
    assert "OOM" in first.system_prompt and "v2.3.1" not in first.system_prompt
    assert "v2.3.1" in second.system_prompt


def test_qwen_example_locates_english_and_chinese_chunks(run: Run, fake_openai: FakeOpenAI) -> None:
    p = run(["examples/deepcq/qwen_agents_sdk.py"])
    assert p.returncode == 0, p.stderr
    assert "chunk 1 " in p.stdout and "sliding window counter." in p.stdout
    assert "chunk 3 " in p.stdout  # the Chinese paragraph, for the Chinese question
    assert "authentication" not in p.stdout
    fake_openai.default_reply = Reply.text("Per API key, with a sliding window.")
    p = run(["examples/deepcq/qwen_agents_sdk.py", "--base-url", fake_openai.url])
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("qwen: Per API key") == 2
    assert all("authentication" not in r.system_prompt for r in fake_openai.chat_requests)


def test_a2a_example_answers_a_message_send_request(run: Run) -> None:
    p = run(["examples/deepcq/google_a2a.py"])
    assert p.returncode == 0, p.stderr
    decoder = json.JSONDecoder()
    card, end = decoder.raw_decode(p.stdout)
    response, _ = decoder.raw_decode(p.stdout[end:].lstrip())
    assert card["skills"][0]["id"] == "recall"
    answer = response["result"]["parts"][0]["text"]
    assert "DHL 77812" in answer and "30 days" not in answer
    assert "shipping" in response["result"]["metadata"]["sections"]


SEED_MODULES = {
    "core": ["DeepCQ"],
    "schema": ["MemorySchema", "TIER_NAMES"],
    "result": ["QueryResult", "OptimizationMetrics", "ScoreExplanation"],
    "regex_gen": ["build_content_pattern", "content_pattern_string"],
    "intent": ["score_sections", "score_sections_detailed"],
    "tokens": ["tokenize", "stem"],
    "locate": ["locate", "Candidate"],
    "memory": ["AppState", "SessionCache", "History", "LongTermStore", "ReferenceData"],
    "memory.state": ["AppState"],
    "memory.session": ["SessionCache", "History"],
    "memory.store": ["LongTermStore", "ReferenceData"],
    "integrations.ternary": ["ToolContextProvider", "LangChainMemoryAdapter", "PromptLibrary"],
    "integrations.ternary.adapters": ["ToolContextProvider", "LangChainMemoryAdapter"],
    "integrations.ternary.prompt_library": ["PromptLibrary"],
}


@pytest.mark.parametrize("module", sorted(SEED_MODULES))
def test_deepcqs_module_names_import_from_the_compat_package(module: str) -> None:
    mod = importlib.import_module(f"deepcontext.compat.deepcq.{module}")
    for name in SEED_MODULES[module]:
        assert getattr(mod, name) is not None, (module, name)


def test_the_compat_names_are_deepcontexts_classes() -> None:
    from deepcontext.compat.deepcq.core import DeepCQ
    from deepcontext.compat.deepcq.memory.state import AppState
    from deepcontext.compat.deepcq.result import QueryResult
    from deepcontext.query import AppState as OurAppState
    from deepcontext.query import DeepCQ as OurDeepCQ
    from deepcontext.query import QueryResult as OurQueryResult

    assert (DeepCQ, AppState, QueryResult) == (OurDeepCQ, OurAppState, OurQueryResult)


def test_regex_gen_matches_the_query_words_and_their_stems() -> None:
    from deepcontext import ValidationError
    from deepcontext.compat.deepcq.regex_gen import build_content_pattern, content_pattern_string

    pattern = build_content_pattern("Connections failing?")
    assert pattern.search("cannot CONNECT") and pattern.search("it will fail") and not pattern.search("all good")
    assert pattern.pattern == content_pattern_string("Connections failing?")
    assert build_content_pattern("数据库连接").search("数据库很慢")  # CJK bigrams
    assert not build_content_pattern("the of").search("the of")  # no content word: matches nothing
    with pytest.raises(ValidationError):
        content_pattern_string(None)  # type: ignore[arg-type]


def test_prompt_downloads_say_they_are_not_available(tmp_path: object) -> None:
    from deepcontext import ValidationError
    from deepcontext.compat.deepcq.integrations.ternary import PromptLibrary, ToolContextProvider, prompt_library

    with pytest.raises(AttributeError, match="never downloads at run time"):
        PromptLibrary.from_urls(PromptLibrary.DEFAULT_URLS)
    with pytest.raises(AttributeError, match="from_local"):
        prompt_library.DEFAULT_URLS  # noqa: B018
    with pytest.raises(ValidationError, match="never downloads"):
        PromptLibrary.from_urls()
    assert "risk-management" in prompt_library.SECTIONS
    lib = PromptLibrary()
    lib.load_text("risk-management", "Assess the concentration risk of {portfolio}\n")
    from deepcontext.compat.deepcq import DeepCQ, MemorySchema

    provider = ToolContextProvider(DeepCQ(schema=MemorySchema(sections=["notes"])))
    assert "{portfolio}" in provider.get_prompt_template("concentration risk", lib)
