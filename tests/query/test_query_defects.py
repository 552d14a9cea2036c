"""Each defect of deepcq 0.3.0, fixed: these tests pass on deepcontext.query and fail on deepcq."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any


def fill(cq: Any, sections: dict[str, str]) -> None:
    """Store ``{name: body}`` as ``[name]`` sections in the state tier."""
    for name, body in sections.items():
        cq.state.set(name, f"[{name}]\n{body}\n")


def _schema(impl: ModuleType, sections: list[str]) -> object:
    return impl.MemorySchema(sections=sections, fallback_include_all=False)


def test_inflected_words_match_through_the_stemmer(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["network", "billing"]))
    fill(cq, {"network": "3 open connections, statuses all green", "billing": "invoice sent"})
    result = cq.query("connection status")
    assert result.sections_included == ["network"]
    assert result.intent["network"] == 1.0


def test_a_chinese_query_finds_a_chinese_section(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["错误", "指标"]))
    fill(cq, {"错误": "数据库连接数过多，最大连接数为二百。", "指标": "处理器使用率平均百分之七十八。"})
    result = cq.query("数据库连接为什么失败？")
    assert result.sections_included == ["错误"]
    assert "最大连接数" in result.content


def test_japanese_and_korean_queries_find_their_sections(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["予定", "仕事", "일정", "업무"]))
    fill(
        cq,
        {
            "予定": "水曜日の午後三時に歯医者の予約。",
            "仕事": "プロジェクトの締め切りは六月三十日。",
            "일정": "수요일 오후 3시 치과 예약.",
            "업무": "프로젝트 마감일은 6월 30일.",
        },
    )
    assert cq.query("歯医者の予約はいつ？").sections_included == ["予定"]
    assert cq.query("프로젝트 마감일이 언제예요?").sections_included == ["업무"]


def test_a_markdown_link_does_not_end_a_section(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["runbook", "contacts"]))
    fill(
        cq,
        {
            "runbook": "See [the ops guide](https://wiki.example.com/ops).\n"
            "[Grafana](https://grafana.example.com/d/queue)\n"
            "[x] checklist reviewed\n"
            "Restart rabbitmq on node mq-2 first, then mq-1.",
            "contacts": "Messaging on-call: Dario.",
        },
    )
    result = cq.query("which rabbitmq node do I restart first?")
    assert result.sections_included == ["runbook"]
    assert result.content.endswith("Restart rabbitmq on node mq-2 first, then mq-1.")
    assert "Dario" not in result.content


def test_history_turns_are_included_one_by_one_by_relevance(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["status"]))
    fill(cq, {"status": "all services running"})
    cq.history.add("user", "Please book a table for two at the Italian place on Friday.")
    cq.history.add("assistant", "Booked Trattoria Roma, Friday 19:30.")
    cq.history.add("user", "The billing export keeps failing with a timeout.")
    cq.history.add("assistant", "The billing export timeout is 30s; I raised it to 120s.")
    result = cq.query("what did we change about the billing export timeout?")
    assert "raised it to 120s" in result.content
    assert "keeps failing" in result.content
    assert "Trattoria" not in result.content and "table for two" not in result.content


def test_cache_entries_are_included_one_by_one_by_relevance(buggy_impl: ModuleType) -> None:
    cq = buggy_impl.DeepCQ(_schema(buggy_impl, ["status"]))
    fill(cq, {"status": "ok"})
    cq.cache.put("weather", "Sunny in Lisbon, 24 degrees, light wind from the north")
    cq.cache.put("fx", "Exchange rate: 1 EUR = 1.08 USD, fetched 09:00")
    result = cq.query("euro to dollar exchange rate")
    assert "1.08 USD" in result.content
    assert "Sunny" not in result.content


def test_notes_file_is_replaced_atomically(buggy_impl: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    store = buggy_impl.LongTermStore(path)
    store.append("project", "first note")
    before = os.stat(path).st_ino
    with open(path, encoding="utf-8") as reader:  # a reader that opened the old file
        store.append("project", "second note " + "x" * 10_000)
        assert reader.read().count("first note") == 1  # still the complete old file
    assert os.stat(path).st_ino != before  # a new file was renamed over the old one
    assert buggy_impl.LongTermStore(path).get("project") == ["first note", "second note " + "x" * 10_000]
