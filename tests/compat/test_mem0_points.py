"""deepcontext.compat.mem0 against what mem0 2.2.1's source does, point by point (these run without
mem0 installed; test_mem0_side_by_side.py runs the real one on the same kind of script)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.compat.test_mem0 import env, llm  # noqa: F401
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

#: mem0's item keys (get_all; search adds score, get an empty score); entity ids, actor_id, role,
#: attributed_to and expiration_date follow where the memory has them
ITEM = {"id", "memory", "hash", "metadata", "created_at", "updated_at", "user_id"}
#: mem0's history row
HISTORY = {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted", "actor_id", "role"}
PREFIXES = ("User:", "Assistant:", "guide:")


@pytest.fixture
def m(env: str) -> Any:  # noqa: F811
    from deepcontext.compat.mem0 import Memory

    memory = Memory()
    yield memory
    memory.close()


def test_infer_false_keeps_messages_as_given_with_mem0s_result_keys(m: Any) -> None:
    out = m.add(
        [
            {"role": "user", "content": "I live in Lisbon"},
            {"role": "assistant", "content": "Lovely city", "name": "guide"},
            {"role": "system", "content": "Be brief."},  # mem0 keeps no system message
        ],
        user_id="alice",
        infer=False,
    )["results"]
    assert [{k: x[k] for k in x if k != "id"} for x in out] == [
        {"memory": "I live in Lisbon", "event": "ADD", "actor_id": None, "role": "user"},
        {"memory": "Lovely city", "event": "ADD", "actor_id": "guide", "role": "assistant"},
    ]
    listed = {x["memory"]: x for x in m.get_all(filters={"user_id": "alice"})["results"]}
    assert set(listed) == {"I live in Lisbon", "Lovely city"}
    assert set(listed["Lovely city"]) == ITEM | {"actor_id", "role"} and listed["I live in Lisbon"]["role"] == "user"
    assert m.get(out[0]["id"])["memory"] == "I live in Lisbon"
    assert [h["new_memory"] for h in m.history(out[0]["id"])] == ["I live in Lisbon"]


def test_inferred_memories_show_without_verbatim_turns(llm: FakeOpenAI, m: Any) -> None:  # noqa: F811
    out = m.add(
        [
            {"role": "user", "content": "I go hiking in the Alps every summer"},
            {"role": "assistant", "content": "That sounds wonderful"},
        ],
        user_id="alice",
    )["results"]
    assert [(x["memory"], x["event"], set(x)) for x in out] == [
        ("The user said: I go hiking in the Alps every summer", "ADD", {"id", "memory", "event"})
    ]
    listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert [x["memory"] for x in listed] == ["The user said: I go hiking in the Alps every summer"]
    assert listed[0]["attributed_to"] == "user" and "role" not in listed[0]
    found = m.search("hiking in the Alps", filters={"user_id": "alice"})["results"]
    assert [x["memory"] for x in found] == ["The user said: I go hiking in the Alps every summer"]


def test_a_message_nothing_was_extracted_from_shows_as_its_content(m: Any) -> None:
    # offline, nothing is extracted from a greeting: the user's message stands for itself
    out = m.add("Hello there, nice to meet you", user_id="alice")["results"]
    assert [x["memory"] for x in out] == ["Hello there, nice to meet you"]
    assert not [x for x in m.get_all(filters={"user_id": "alice"})["results"] if x["memory"].startswith(PREFIXES)]


def test_search_and_get_all_default_to_top_k_20_and_threshold_0_1(m: Any) -> None:
    for i in range(25):
        m.add(f"Note number {i} about gardening tomatoes", user_id="alice", infer=False)
    assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 20
    assert len(m.get_all(filters={"user_id": "alice"}, top_k=25)["results"]) == 25
    found = m.search("gardening tomatoes", filters={"user_id": "alice"})["results"]
    assert 0 < len(found) <= 20 and all(x["score"] >= 0.1 for x in found)
    # an unrelated query: mem0's threshold leaves nothing; without it the low-score noise shows
    assert m.search("quantum chromodynamics lattice", filters={"user_id": "alice"}) == {"results": []}
    assert m.search("quantum chromodynamics lattice", filters={"user_id": "alice"}, threshold=0)["results"]


def test_threshold_is_on_the_calibrated_relevance() -> None:
    from deepcontext.compat.mem0 import relevance_from_score, score_from_relevance

    points = [0.0005, 0.0013, 0.01, 0.1, 0.5]
    scores = [score_from_relevance(p) for p in points]
    assert scores == sorted(scores) and scores[0] == 0.0 and 0.09 < scores[1] < 0.11
    for p, s in zip(points[1:], scores[1:], strict=True):
        assert relevance_from_score(s) == pytest.approx(p, rel=1e-6)


def test_update_merges_metadata_and_sets_the_expiration_date(m: Any) -> None:
    mid = m.add("I live in Lisbon", user_id="alice", metadata={"topic": "home", "n": 1}, infer=False)["results"][0]["id"]
    assert m.update(mid, metadata={"n": 2, "mood": "happy"}) == {"message": "Memory updated successfully!"}
    got = m.get(mid)
    assert got["metadata"] == {"topic": "home", "n": 2, "mood": "happy"} and got["memory"] == "I live in Lisbon"
    m.update(mid, expiration_date="2020-01-31")
    assert m.get(mid)["expiration_date"] == "2020-01-31" and m.get(mid)["metadata"] == {"topic": "home", "n": 2, "mood": "happy"}
    alice = {"user_id": "alice"}
    assert m.get_all(filters=alice)["results"] == [] and m.search("Lisbon", filters=alice)["results"] == []
    assert [x["id"] for x in m.get_all(filters=alice, show_expired=True)["results"]] == [mid]
    assert [x["id"] for x in m.search("Lisbon", filters=alice, show_expired=True)["results"]] == [mid]
    m.update(mid, expiration_date=None)  # clears it
    assert "expiration_date" not in m.get(mid) and [x["id"] for x in m.get_all(filters=alice)["results"]] == [mid]
    later = m.add("I like tea", user_id="alice", infer=False, expiration_date="2999-12-31")["results"][0]["id"]
    assert m.get(later)["expiration_date"] == "2999-12-31" and later in [x["id"] for x in m.get_all(filters=alice)["results"]]
    with pytest.raises(ValueError, match="expiration_date"):
        m.update(mid, expiration_date="next week")


def test_search_takes_explain_show_expired_and_refuses_reference_date_as_mem0(m: Any) -> None:
    m.add("I live in Lisbon", user_id="alice", infer=False)
    found = m.search("Lisbon", filters={"user_id": "alice"}, explain=True, show_expired=False, rerank=True)["results"]
    assert found and {"relevance", "final_score", "threshold"} <= set(found[0]["score_details"])
    assert set(found[0]) == ITEM | {"role", "score", "score_details"}
    with pytest.raises(ValueError, match="reference_date parameter is not supported"):
        m.search("Lisbon", filters={"user_id": "alice"}, reference_date="2024-01-01")
    with pytest.raises(ValueError, match="timestamp parameter is not supported"):
        m.add("I like tea", user_id="alice", timestamp=1700000000)


def test_items_carry_hash_and_role_and_history_mem0s_row(m: Any) -> None:
    mid = m.add({"role": "assistant", "content": "Your table is booked", "name": "concierge"}, user_id="alice", infer=False)[
        "results"
    ][0]["id"]
    item = m.get(mid)
    assert item["hash"] == hashlib.md5(b"Your table is booked").hexdigest()
    assert (item["role"], item["actor_id"], item["score"]) == ("assistant", "concierge", None)
    m.update(mid, "Your table for two is booked")
    assert m.get(mid)["hash"] == hashlib.md5(b"Your table for two is booked").hexdigest()
    m.delete(mid)
    history = m.history(mid)
    assert all(set(h) == HISTORY for h in history)
    assert [(h["event"], h["old_memory"], h["new_memory"], h["is_deleted"]) for h in history] == [
        ("ADD", None, "Your table is booked", False),
        ("UPDATE", "Your table is booked", "Your table for two is booked", False),
        ("DELETE", "Your table for two is booked", None, True),
    ]
    # mem0 records the message's speaker and role, the memory's creation time, and when it changed
    assert {(h["actor_id"], h["role"]) for h in history} == {("concierge", "assistant")}
    assert {h["created_at"] for h in history} == {history[0]["created_at"]}
    assert history[0]["updated_at"] == history[0]["created_at"] < history[1]["updated_at"] <= history[2]["updated_at"]


def test_chat_int_user_ids_and_no_engine_metadata(m: Any) -> None:
    with pytest.raises(NotImplementedError):
        m.chat("hello")
    out = m.add("I'm allergic to peanuts and I work at Acme as a nurse", user_id=42, metadata={"source": "intake"})["results"]
    listed = m.get_all(filters={"user_id": 42})["results"]
    assert out and listed and {x["user_id"] for x in listed} == {"42"}
    engine_keys = {k for mem in m.context.list("42").memories for k in mem.metadata}
    assert {"standing", "slots"} <= engine_keys, engine_keys  # the engine keeps its own keys ...
    assert m.search("peanuts", user_id=42)["results"]
    for x in listed + m.search("peanuts allergy", filters={"user_id": "42"}, threshold=0)["results"]:
        assert x["metadata"] == {"source": "intake"}, x  # ... which a mem0 user does not see
    m.delete_all(user_id=42)
    assert m.get_all(filters={"user_id": 42}) == {"results": []}
    with pytest.raises(ValueError, match="user_id"):
        m.add("I like tea", user_id="two words")


def test_a_revised_fact_is_an_update_and_a_duplicate_adds_nothing(m: Any) -> None:
    first = m.add("I work at Acme as a nurse", user_id="alice")["results"]
    assert [x["event"] for x in first] == ["ADD"]
    revised = m.add("I work at Globex as a nurse now", user_id="alice")["results"]
    assert [x["event"] for x in revised] == ["UPDATE"] and "Globex" in revised[0]["memory"]
    assert m.add("I work at Globex as a nurse now", user_id="alice") == {"results": []}
    assert [x["memory"] for x in m.get_all(filters={"user_id": "alice"})["results"]] == [revised[0]["memory"]]
    assert m.add("I like tea", user_id="alice", infer=False)["results"]
    assert m.add("I like tea", user_id="alice", infer=False) == {"results": []}
