"""LangChain-style memory, ToolContextProvider, PromptLibrary (local CSV only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcontext.errors import ValidationError
from deepcontext.query import DeepCQ, LangChainMemoryAdapter, MemorySchema, PromptLibrary, ToolContextProvider


def test_langchain_adapter_saves_loads_and_clears() -> None:
    cq = DeepCQ(MemorySchema(sections=["profile"]))
    cq.state.set("profile", "[profile]\nAnna, vegetarian, lives in Lisbon\n")
    memory = LangChainMemoryAdapter(cq)
    assert memory.memory_variables == ["history"] and memory.input_key == "input" and memory.output_key == "output"
    memory.save_context({"input": "Book me a flight to Porto on Friday"}, {"output": "Booked TP1943, Friday 08:10"})
    memory.save_context({"input": "What's the weather in Lisbon?"}, {"output": "Sunny, 24 degrees"})
    assert [m["role"] for m in memory.chat_memory.messages] == ["human", "ai", "human", "ai"]

    ctx = memory.load_memory_variables({"input": "when is my flight to Porto?"})
    assert "TP1943" in ctx["history"] and "Sunny" not in ctx["history"]
    assert memory.load_memory_variables({})["history"] == cq.history.as_text()

    cq.cache.put("tool", "result")
    memory.clear()
    assert cq.history.turns() == [] and cq.cache.keys() == []
    assert cq.state.get("profile")  # state is kept
    with pytest.raises(ValidationError):
        LangChainMemoryAdapter("not a DeepCQ")  # type: ignore[arg-type]


def _write_prompts(folder: Path) -> None:
    (folder / "risk-management.csv").write_text(
        "prompt\nAssess the concentration risk of {portfolio} against a {limit} single-name limit\n"
        '"Stress test {portfolio} for a rate shock of {bps} basis points"\n',
        encoding="utf-8",
    )
    (folder / "summarization.csv").write_text("prompt\nSummarise {document} in five bullet points\n", encoding="utf-8")
    (folder / "my-own.csv").write_text("prompt\nDraft a polite reminder email about {invoice}\n", encoding="utf-8")


def test_prompt_library_from_local_csv(tmp_path: Path) -> None:
    _write_prompts(tmp_path)
    lib = PromptLibrary.from_local(tmp_path)
    assert lib.loaded_sections() == ["my-own", "risk-management", "summarization"]
    r = lib.query("portfolio concentration risk")
    assert r.sections_included == ["risk-management"]
    assert "{portfolio}" in r.content and "Summarise" not in r.content
    assert lib.query("reminder email for an unpaid invoice").sections_included == ["my-own"]
    assert lib.query("zzz").content == ""  # no fallback for prompts

    provider = ToolContextProvider(DeepCQ(MemorySchema(sections=["portfolio"])))
    memory, template = provider.get_context_with_template("summarise this document", lib)
    assert memory == "" and "Summarise {document}" in template


def test_prompt_library_from_files_and_sections(tmp_path: Path) -> None:
    _write_prompts(tmp_path)
    lib = PromptLibrary.from_files({"summaries": tmp_path / "summarization.csv"})
    assert lib.loaded_sections() == ["summaries"]
    lib = PromptLibrary.from_local(tmp_path, sections=["summarization"])
    assert lib.loaded_sections() == ["summarization"]
    with pytest.raises(ValidationError):
        PromptLibrary.from_files({"x": tmp_path / "missing.csv"})


@pytest.mark.parametrize(
    "call",
    [
        lambda: PromptLibrary.from_urls(),
        lambda: PromptLibrary.from_urls({"research": "https://example.com/research.csv"}),
        lambda: PromptLibrary.from_local("https://example.com/prompts/"),
        lambda: PromptLibrary.from_files({"research": "https://example.com/research.csv"}),
    ],
)
def test_remote_loading_is_disabled(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as err:
        call()
    assert "remote loading is disabled" in str(err.value)
