"""The chat with an LLM (the fake OpenAI server), driven through its input and output streams: it
remembers across sessions, streams its answers, continues where it stopped, and fails cleanly."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from deepcontext import DeepContext
from tests.chat.helpers import Brain, block, chat, last_node, opener
from tests.support.fake_openai import FakeOpenAI, Reply

LENA = "Ana's sister Lena lives in Porto"


def teach_lena(brain: Brain) -> None:
    brain.learn(
        "Lena lives in Porto",
        LENA,
        entities=[("Ana", "person"), ("Lena", "person"), ("Porto", "location")],
        relations=[("Lena", "lives_in", "Porto"), ("Lena", "sister_of", "Ana")],
    )


def section(system: str, title: str) -> str:
    """One ``## title`` part of the context text in a system message."""
    if f"## {title}" not in system:
        return ""
    return system.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_a_fact_told_in_one_session_is_recalled_in_the_next_after_a_restart(
    tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain
) -> None:
    db = tmp_path / "chat.db"
    teach_lena(brain)
    brain.say("Nice, Porto is lovely.")
    code, out = chat(opener(db, fake_openai), ["My sister Lena lives in Porto.", "exit"], conversation="first")
    assert code == 0
    said = block(out, "My sister Lena lives in Porto.")
    assert "assistant › Nice, Porto is lovely." in said
    assert LENA in said and "[short_term/semantic]" in said  # the derived memory, shown as stored
    assert out.rstrip().endswith(f"bye; the next start continues after [{last_node(out)}]")

    # a new DeepContext on the same file (what a new process does), another conversation: only the
    # memory can bring the fact back
    before = len(brain.streamed)
    brain.say("Your sister Lena lives in Porto.")
    code, out = chat(opener(db, fake_openai), ["Where does my sister live?", "context", "exit"], conversation="second")
    assert code == 0 and "a new conversation" in out
    assert "assistant › Your sister Lena lives in Porto." in block(out, "Where does my sister live?")
    asked = brain.streamed[before:]
    assert len(asked) == 1
    system, user = asked[0].messages[0]["content"], asked[0].messages[1]
    assert LENA in section(system, "Relevant memories")  # the request body the LLM received
    assert user == {"role": "user", "content": "Where does my sister live?"}
    shown = block(out, "context")
    assert LENA in shown and "Relevant memories" in shown and "memories used" in shown
    assert "turn " in shown and "(first, " in shown  # the memory cites its turn in the first conversation


def test_the_next_start_continues_the_conversation_where_it_stopped(
    tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain
) -> None:
    db = tmp_path / "chat.db"
    brain.say("Hello Ana.", "Lisbon it is.")
    code, out = chat(opener(db, fake_openai), ["Hi, I am Ana.", "Let us plan a trip to Lisbon.", "exit"])
    assert code == 0
    tip = last_node(out)

    brain.say("Three days are enough.")
    code, out = chat(opener(db, fake_openai), ["How many days do I need?", "path", "exit"])
    assert code == 0
    assert f"continuing after [{tip}]" in out and "Let us plan a trip to Lisbon." in out.split("you ›")[0]
    system = brain.streamed[-1].messages[0]["content"]
    conversation = section(system, "Conversation so far (oldest first)")
    assert "user: Hi, I am Ana." in conversation and "assistant: Lisbon it is." in conversation
    new = last_node(out)
    assert f"[{tip}]" in block(out, "path") and f"[{new}]" in block(out, "path")

    async def parents() -> dict[int, list[int]]:
        async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash", llm_provider="none") as ctx:
            data = json.loads(await ctx.export_conversation("ana", "c1", "json"))
        return {n["id"]: n["parents"] for n in data["nodes"]}

    graph = asyncio.run(parents())
    assert graph[new] == [tip] and len(graph) == 3  # one node per round: message and answer together


class Probe(io.StringIO):
    """A screen that notes, when the first piece of the answer is written, whether the server is
    still sending the answer."""

    def __init__(self, server: FakeOpenAI, first_piece: str) -> None:
        super().__init__()
        self.server = server
        self.first_piece = first_piece
        self.server_busy_at_first_piece: bool | None = None
        self.pieces: list[str] = []

    def write(self, s: str) -> int:
        if self.server_busy_at_first_piece is None and s == self.first_piece:
            self.server_busy_at_first_piece = self.server.in_flight > 0
        if self.server_busy_at_first_piece is not None and self.server.in_flight > 0:
            self.pieces.append(s)
        return super().write(s)


def test_the_answer_is_streamed_as_it_arrives(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    answer = "Streaming shows each piece as soon as it arrives."
    brain.say(Reply.text(answer, chunk_size=5, chunk_delay=0.05))
    screen = Probe(fake_openai, answer[:5])
    code, out = chat(opener(tmp_path / "chat.db", fake_openai), ["Tell me about streaming.", "exit"], screen=screen)
    assert code == 0 and f"assistant › {answer}" in out
    assert screen.server_busy_at_first_piece is True  # shown before the server had sent the rest
    assert len(screen.pieces) >= 5 and "".join(screen.pieces).startswith(answer[:25])


def test_an_llm_failure_stores_nothing_and_the_chat_goes_on(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    db = tmp_path / "chat.db"
    brain.say(Reply.error(500, "the model is down"), "Back again.")
    code, out = chat(opener(db, fake_openai), ["First try.", "Second try.", "path", "exit"])
    assert code == 0
    failed = block(out, "First try.")
    assert "the LLM failed:" in failed and "nothing was stored" in failed and "stored;" not in failed
    assert "assistant › Back again." in block(out, "Second try.")
    path = block(out, "path")
    assert "Second try." in path and "First try." not in path


def test_an_answer_cut_halfway_is_not_stored(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain) -> None:
    brain.say(Reply.cut("This answer will never finish because", after_chunks=2))
    code, out = chat(opener(tmp_path / "chat.db", fake_openai), ["Go on.", "path", "exit"])
    assert code == 0
    shown = block(out, "Go on.")
    assert "assistant › This answer " in shown and "the LLM failed:" in shown
    assert "the conversation is empty" in block(out, "path")
