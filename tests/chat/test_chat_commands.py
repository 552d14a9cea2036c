"""Every chat command, as a user types it (with the fake LLM answering), and the hints for bad ones."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.chat.commands import COMMANDS, Command, Invalid, Message, parse_line
from tests.chat.helpers import Brain, block, blocks, chat, last_node, memory_id, opener
from tests.support.fake_openai import FakeOpenAI

LENA = "Ana's sister Lena lives in Porto"
GLOBEX = "Ana works at Globex as a data engineer"


def teach(brain: Brain) -> None:
    brain.learn(
        "Lena lives in Porto",
        LENA,
        entities=[("Ana", "person"), ("Lena", "person"), ("Porto", "location")],
        relations=[("Lena", "lives_in", "Porto"), ("Lena", "sister_of", "Ana")],
    )
    brain.learn("I work at Globex", GLOBEX, entities=[("Ana", "person"), ("Globex", "organization")],
                relations=[("Ana", "works_at", "Globex")])  # fmt: skip
    brain.learn("brother Tom", "Ana has a brother named Tom", entities=[("Ana", "person"), ("Tom", "person")])


def test_every_command_works(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    db = tmp_path / "chat.db"
    teach(brain)
    brain.say("Porto, lovely.", "Globex, nice.", "Tom, noted.")
    nodes: dict[str, int] = {}

    def remember(name: str, line: str):  # type: ignore[no-untyped-def]
        def typed(screen: str) -> str:
            nodes[name] = last_node(screen)
            return line

        return typed

    lines = [
        "My sister Lena lives in Porto.",
        remember("lena", "I work at Globex as a data engineer."),
        remember("globex", "memories"),
        "memories sister",
        "/memories Globex",
        "graph Lena",
        "context",
        "path",
        lambda s: f"branch {nodes['lena']}",
        "I have a brother Tom too.",
        lambda s: f"history {memory_id(s, GLOBEX)}",
        lambda s: f"forget {memory_id(s, GLOBEX)}",
        lambda s: f"/history {memory_id(s, GLOBEX)}",
        "memories Globex",
        "lifecycle",
        "help",
        "exit",
        "this line is never read",
    ]
    code, out = chat(opener(db, fake_openai), lines)
    assert code == 0
    typed = [t for t, _ in blocks(out)]
    assert "this line is never read" not in typed and out.rstrip().endswith(
        f"bye; the next start continues after [{last_node(out)}]"
    )

    listed = block(out, "memories")
    assert "newest" in listed and LENA in listed and GLOBEX in listed and "short_term" in listed
    found = block(out, "memories sister")
    assert re.search(rf"#\d+\s+0\.\d{{4}}\s+short_term\s+semantic\s+{re.escape(LENA)}\s+turn \d+ \(c1, ", found)
    assert GLOBEX in block(out, "/memories Globex")

    graph = block(out, "graph Lena")
    assert graph.startswith("Lena (person)") and "--lives_in--> Porto (location" in graph and "--sister_of--> Ana" in graph

    context = block(out, "context")  # the context of the last message (about Globex)
    for part in ("Pinned memories", "Relevant memories", "Conversation so far (oldest first)", "tokens", "allotted"):
        assert part in context
    assert f"conversation path in the context: [{nodes['lena']}]" in context
    assert "what the LLM received for 'I work at Globex as a data engineer.'" in context
    assert re.search(r"context: \d+ of 2000 tokens", context)

    path = block(out, "path")
    assert f"[{nodes['lena']}] user: My sister Lena" in path and f"[{nodes['globex']}] user: I work at Globex" in path

    branched = block(out, f"branch {nodes['lena']}")
    assert f"continues from [{nodes['lena']}] (a new branch" in branched
    tom = block(out, "I have a brother Tom too.")
    assert "assistant › Tom, noted." in tom and f"branching off [{nodes['lena']}]" in tom
    system = brain.streamed[-1].messages[0]["content"]
    conversation = system.split("## Conversation so far (oldest first)", 1)[1]
    assert "My sister Lena lives in Porto." in conversation and "Globex" not in conversation

    gid = memory_id(out, GLOBEX)
    assert "ADD" in block(out, f"history {gid}") and "DELETE" not in block(out, f"history {gid}")
    assert f"forgot memory #{gid}" in block(out, f"forget {gid}")
    assert "DELETE" in block(out, f"/history {gid}")
    assert f"#{gid} " not in block(out, "memories Globex")  # forgotten: no longer found

    life = block(out, "lifecycle")
    assert "lifecycle run:" in life and "decayed" in life and "consolidated into long-term" in life

    helped = block(out, "help")
    for spec in COMMANDS.values():
        assert spec.usage in helped
    assert "/say" in helped

    async def graph_of_conversation() -> dict[int, list[int]]:
        async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash", llm_provider="none") as ctx:
            data = json.loads(await ctx.export_conversation("ana", "c1", "json"))
        return {n["id"]: n["parents"] for n in data["nodes"]}

    dag = asyncio.run(graph_of_conversation())
    tom_node = last_node(out)
    assert dag[tom_node] == [nodes["lena"]] and dag[nodes["globex"]] == [nodes["lena"]]  # a branch in the DAG


def test_bad_commands_get_a_one_line_hint(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    bad = [
        "/nope",
        "/history abc",
        "/history",
        "graph",
        "branch",
        "/branch 99999",
        "/forget 424242",
        "history 424242",
        "graph Atlantis",
        "/exit now",
        "/say",
    ]
    code, out = chat(opener(tmp_path / "chat.db", fake_openai), [*bad, "exit"])
    assert code == 0
    for line in bad:
        shown = block(out, line)
        assert shown and "\n" not in shown, f"{line!r} printed {shown!r}"
    assert "unknown command /nope" in block(out, "/nope") and "help" in block(out, "/nope")
    assert "usage /history <memory id>" in block(out, "/history abc")
    assert "usage graph <entity>" in block(out, "graph") and "/say" in block(out, "graph")
    assert "no node [99999]" in block(out, "/branch 99999")
    assert "424242" in block(out, "/forget 424242") and "424242" in block(out, "history 424242")
    assert "Atlantis" in block(out, "graph Atlantis")
    assert "exit takes no argument" in block(out, "/exit now")
    assert brain.streamed == []  # none of them reached the LLM


def test_messages_that_start_with_a_command_word(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    sent = ["history of Rome is long", "help me plan a trip", "Memories of Lisbon are vivid", "forget it"]
    code, _ = chat(opener(tmp_path / "chat.db", fake_openai), [*sent, "/say memories fade over time", "exit"])
    assert code == 0
    asked = [r.messages[-1]["content"] for r in brain.streamed]
    assert asked == [*sent, "memories fade over time"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("memories", Command("memories")),
        ("memories Lisbon trip", Command("memories", text="Lisbon trip")),
        ("/memories", Command("memories")),
        ("graph Lena", Command("graph", text="Lena")),
        ("lifecycle", Command("lifecycle")),
        ("EXIT", Command("exit")),
        ("quit", Command("exit")),
        ("/q", Command("exit")),
        ("branch 12", Command("branch", number=12)),
        ("branch [12]", Command("branch", number=12)),
        ("forget #7", Command("forget", number=7)),
        ("/history 3", Command("history", number=3)),
        ("history of Rome", Message("history of Rome")),
        ("Graph theory is fun", Message("Graph theory is fun")),
        ("exit strategy?", Message("exit strategy?")),
        ("/say exit", Message("exit")),
        ("  hello  ", Message("hello")),
        ("", None),
        ("   ", None),
    ],
)
def test_commands_and_messages_are_told_apart(line: str, expected: object) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize("line", ["/nope", "/", "/branch", "/branch x", "/forget", "graph", "branch", "/context now", "/say"])
def test_invalid_lines_are_hints(line: str) -> None:
    found = parse_line(line)
    assert isinstance(found, Invalid) and "\n" not in found.hint and found.hint
