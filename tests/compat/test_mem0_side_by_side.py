"""The same mem0 script run on mem0 2.2.1 (the ``bench`` extra's) and on deepcontext.compat.mem0:
what the script sees must match, except ids, scores and the wording of extracted memories.

Both run offline on the same fake OpenAI-compatible server (real HTTP, the real ``openai`` client):
the same embeddings for both, and an LLM that extracts one memory per user message, answering
mem0's extraction prompt and deepcontext's. mem0 keeps its vectors in Qdrant's local mode and its
history in SQLite, both in a temporary folder; its telemetry is off and every non-loopback
connection is refused while it runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepcontext.llm import prompts
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

DIMS = 256
LISBON = "I live in Lisbon"


def _user_lines(text: str) -> list[str]:
    return re.findall(r"^user: (.*)$", text, flags=re.MULTILINE)


def _respond(body: dict[str, Any]) -> Reply:
    """One memory per user message, "User said: <message>", for mem0's prompt and for ours."""
    from mem0.configs.prompts import ADDITIVE_EXTRACTION_PROMPT

    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    if system.startswith(ADDITIVE_EXTRACTION_PROMPT[:200]):
        new = user.split("## New Messages", 1)[1].split("## Observation Date", 1)[0]
        facts = [{"id": str(i), "text": f"User said: {t}", "attributed_to": "user"} for i, t in enumerate(_user_lines(new))]
        return Reply.json({"memory": facts})
    if system.startswith(prompts.EXTRACT_SYSTEM[:60]):
        window = user.split("Messages to extract from:\n", 1)[1]
        ours = [
            {"text": f"User said: {t}", "type": "semantic", "source_indices": [int(i)], "importance": 0.7, "confidence": 0.9}
            for i, t in re.findall(r"^\[(\d+)\] .*?User: (.*)$", window, flags=re.MULTILINE)
        ]
        return Reply.json({"facts": ours, "entities": [], "relations": []})
    return Reply.error(404, "not scripted")  # deepcontext's other calls fall back to its offline rules


@pytest.fixture
def server(fake_openai: FakeOpenAI) -> FakeOpenAI:  # noqa: F811
    if importlib.util.find_spec("mem0") is None:  # not imported here: its telemetry switch is read at import
        pytest.skip("mem0ai is not installed (pip install 'deepcontext[bench]' to compare with it)")
    fake_openai.responder = _respond
    return fake_openai


def _mem0_config(server: FakeOpenAI, folder: Path) -> dict[str, Any]:
    openai = {"api_key": "sk-test", "openai_base_url": server.url}
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": str(folder / "qdrant"), "collection_name": "t", "embedding_model_dims": DIMS},
        },
        "embedder": {"provider": "openai", "config": {**openai, "embedding_dims": DIMS}},
        "llm": {"provider": "openai", "config": {**openai, "model": "fake-model"}},
        "history_db_path": str(folder / "history.db"),
    }


@pytest.fixture
def mem0_memory(server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # read by mem0 when it is first imported: no telemetry, its home folder in the test's
    monkeypatch.setenv("MEM0_TELEMETRY", "false")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))
    from deepcontext_bench.mem0_peer import network_guard

    with network_guard():
        from mem0 import Memory
        from mem0.memory import telemetry

        assert not telemetry.MEM0_TELEMETRY, "mem0 was imported with its telemetry on"
        m = Memory.from_config(_mem0_config(server, tmp_path / "sync"))
        try:
            yield m
        finally:
            m.close()


@pytest.fixture
def our_memory(server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in list(os.environ):
        if key.startswith("DEEPCONTEXT_"):
            monkeypatch.delenv(key)
    from deepcontext.compat.mem0 import Memory

    m = Memory(
        database_url=f"sqlite:///{tmp_path / 'dc.db'}",
        embedder="openai",
        embedding_base_url=server.url,
        embedding_api_key="sk-test",
        embedding_dimensions=DIMS,
        llm_base_url=server.url,
        llm_model="fake-model",
        llm_max_retries=0,
    )
    try:
        yield m
    finally:
        m.close()


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        call()
    except (NotImplementedError, ValueError, TypeError) as exc:  # the kind of error, as a script catches it
        return next(k.__name__ for k in (NotImplementedError, ValueError, TypeError) if isinstance(exc, k))
    return "ok"


def script(m: Any) -> dict[str, Any]:
    """A mem0 user's script; returns what it saw, ids, scores and extracted wording left out."""
    seen: dict[str, Any] = {}
    alice = {"user_id": "alice"}

    # messages kept as given
    raw = m.add(
        [
            {"role": "user", "content": LISBON},
            {"role": "assistant", "content": "Lovely city to live in", "name": "guide"},
            {"role": "system", "content": "Be brief."},
        ],
        user_id="alice",
        metadata={"topic": "home"},
        infer=False,
    )["results"]
    seen["raw add"] = [{k: x[k] for k in sorted(x) if k != "id"} for x in raw]
    lisbon = raw[0]["id"]

    # memories extracted from a conversation
    inferred = m.add(
        [
            {"role": "user", "content": "I go hiking in the Alps every summer"},
            {"role": "assistant", "content": "That sounds wonderful, enjoy the mountains"},
        ],
        user_id="alice",
        metadata={"topic": "hobbies"},
    )["results"]
    seen["inferred add"] = [(sorted(x), x["event"], "hiking" in x["memory"]) for x in inferred]
    seen["inferred add: verbatim turns"] = [x["memory"] for x in inferred if x["memory"].startswith(("User:", "Assistant:"))]

    listed = m.get_all(filters=alice)["results"]
    seen["get_all"] = sorted(
        (x["memory"] if x["id"] == lisbon or "hiking" not in x["memory"] else "<hiking>", sorted(x)) for x in listed
    )
    seen["get_all metadata"] = sorted(str(x["metadata"]) for x in listed)
    seen["get_all hash"] = all(len(x["hash"]) == 32 for x in listed)
    seen["get_all top_k"] = len(m.get_all(filters=alice, top_k=1)["results"])

    found = m.search("Lisbon", filters=alice)["results"]
    seen["search Lisbon"] = [sorted(x) for x in found if x["memory"] == LISBON]
    seen["search scores"] = all(0 <= x["score"] <= 1 for x in found)
    hiking = m.search("hiking in the Alps", filters=alice)["results"]
    seen["search inferred"] = [(sorted(x), x["memory"].startswith(("User:", "Assistant:"))) for x in hiking[:1]]
    seen["search unrelated"] = m.search("quantum chromodynamics lattice gauge", filters=alice)
    explained = m.search("Lisbon", filters=alice, explain=True)["results"]
    seen["explain"] = bool(explained) and all("score_details" in x for x in explained)

    got = m.get(lisbon)
    seen["get"] = sorted(got)
    seen["get unknown"] = m.get("4f8e2a4c-1d1e-4f7a-9a53-4c1f2f0b9a11")

    # metadata merges; the expiry hides the memory unless asked for
    seen["update"] = m.update(lisbon, metadata={"mood": "happy"})
    seen["merged"] = m.get(lisbon)["metadata"]
    m.update(lisbon, expiration_date="2020-01-31")
    seen["expired get"] = m.get(lisbon)["expiration_date"]
    seen["expired get_all"] = lisbon in [x["id"] for x in m.get_all(filters=alice)["results"]]
    seen["show_expired get_all"] = lisbon in [x["id"] for x in m.get_all(filters=alice, show_expired=True)["results"]]
    seen["expired search"] = lisbon in [x["id"] for x in m.search(LISBON, filters=alice)["results"]]
    seen["show_expired search"] = lisbon in [x["id"] for x in m.search(LISBON, filters=alice, show_expired=True)["results"]]
    m.update(lisbon, text="I live in Porto")

    history = m.history(lisbon)
    seen["history"] = [
        (sorted(h), h["event"], h["old_memory"], h["new_memory"], h["actor_id"], h["role"], h["is_deleted"]) for h in history
    ]
    seen["history times"] = (
        all(h["created_at"] == history[0]["created_at"] for h in history) and history[-1]["updated_at"] > history[0]["updated_at"]
    )
    guide = m.history(raw[1]["id"])
    seen["history actor"] = [(h["actor_id"], h["role"]) for h in guide]

    # what mem0 refuses
    seen["errors"] = {
        "timestamp": _outcome(lambda: m.add("I like tea", user_id="alice", timestamp=1700000000)),
        "reference_date": _outcome(lambda: m.search("tea", filters=alice, reference_date="2024-01-01")),
        "chat": _outcome(lambda: m.chat("hello")),
        "no scope": _outcome(lambda: m.get_all(filters={})),
        "bad threshold": _outcome(lambda: m.search("tea", filters=alice, threshold=2)),
        "delete unknown": _outcome(lambda: m.delete("4f8e2a4c-1d1e-4f7a-9a53-4c1f2f0b9a11")),
        "delete_all no scope": _outcome(lambda: m.delete_all()),
    }

    # an integer user id
    seen["int user add"] = [
        {k: x[k] for k in sorted(x) if k != "id"} for x in m.add("I like tea", user_id=42, infer=False)["results"]
    ]
    seen["int user get_all"] = [(x["user_id"], x["memory"]) for x in m.get_all(filters={"user_id": 42})["results"]]

    seen["delete"] = m.delete(lisbon)
    seen["deleted get"] = m.get(lisbon)
    seen["delete history"] = [(h["event"], h["is_deleted"]) for h in m.history(lisbon)][-1]
    seen["delete_all"] = m.delete_all(user_id="alice")
    seen["after delete_all"] = m.get_all(filters=alice)
    seen["reset"] = m.reset()
    seen["after reset"] = m.get_all(filters={"user_id": 42})
    return seen


class _Blocking:
    """An ``AsyncMemory``'s methods run to completion on one event loop, for the same script."""

    def __init__(self, memory: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._memory, self._loop = memory, loop

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._memory, name)
        return lambda *args, **kwargs: self._loop.run_until_complete(method(*args, **kwargs))


def _compare(theirs: dict[str, Any], ours: dict[str, Any]) -> None:
    # what the script relies on holds on mem0 (the reference is what it is said to be) ...
    assert theirs["raw add"][0] == {"actor_id": None, "event": "ADD", "memory": LISBON, "role": "user"}
    assert theirs["inferred add"] and theirs["search unrelated"] == {"results": []}
    # ... and deepcontext shows the same, item by item
    for key, value in theirs.items():
        assert ours[key] == value, key


def test_a_mem0_script_sees_the_same_on_both(mem0_memory: Any, our_memory: Any) -> None:
    from deepcontext_bench.mem0_peer import network_guard

    with network_guard():
        theirs = script(mem0_memory)
    _compare(theirs, script(our_memory))


def test_the_async_interfaces_too(server: FakeOpenAI, mem0_memory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mem0 import AsyncMemory as Mem0AsyncMemory

    from deepcontext.compat.mem0 import AsyncMemory
    from deepcontext_bench.mem0_peer import network_guard

    for key in list(os.environ):
        if key.startswith("DEEPCONTEXT_"):
            monkeypatch.delenv(key)
    loop = asyncio.new_event_loop()
    theirs_async = Mem0AsyncMemory.from_config(_mem0_config(server, tmp_path / "async"))
    ours_async = AsyncMemory(
        database_url=f"sqlite:///{tmp_path / 'dc-async.db'}",
        embedder="openai",
        embedding_base_url=server.url,
        embedding_api_key="sk-test",
        embedding_dimensions=DIMS,
        llm_base_url=server.url,
        llm_model="fake-model",
        llm_max_retries=0,
    )
    try:
        with network_guard():
            theirs = script(_Blocking(theirs_async, loop))
        _compare(theirs, script(_Blocking(ours_async, loop)))
    finally:
        theirs_async.close()
        loop.run_until_complete(ours_async.close())
        loop.close()
