"""Hostile input through Python is refused with ValidationError (never OverflowError, a bare
ValueError or a storage error); exports are strict JSON; ids are not text and are never reused."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from deepcontext import DeepContext, ValidationError
from deepcontext.embed import HashEmbedder
from tests.store_helpers import memory, plan, turn

MSG = [{"role": "user", "content": "I live in Porto and work at Globex"}]


def _nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


BAD_ADDS: dict[str, dict[str, Any]] = {
    "epoch beyond year 9999": {"timestamp": 10**20},
    "NaN timestamp": {"timestamp": float("nan")},
    "infinite timestamp": {"timestamp": float("inf")},
    "ISO time past the last instant": {"timestamp": "9999-12-31T23:59:59-05:00"},
    "infinite ttl": {"ttl": float("inf")},
    "ttl of 1e300 s": {"ttl": 1e300},
    "NaN ttl": {"ttl": float("nan")},
    "NaN in metadata": {"metadata": {"x": float("nan")}},
    "Infinity in a metadata list": {"metadata": {"x": [1.0, float("-inf")]}},
    "10 MB of metadata": {"metadata": {"x": "a" * 10_000_000}},
    "metadata 5,000 levels deep": {"metadata": _nested(5000)},
}


@pytest.fixture
async def ctx(db_url: str) -> Any:
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(64)) as c:
        yield c


@pytest.mark.parametrize("case", list(BAD_ADDS))
async def test_bad_add_arguments_raise_validation_error(tmp_path: Any, case: str) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        with pytest.raises(ValidationError):
            await ctx.add(MSG, user_id="u", **BAD_ADDS[case])
        with pytest.raises(ValidationError):  # the same inside a message
            kw = BAD_ADDS[case]
            key = "timestamp" if "timestamp" in kw else "metadata" if "metadata" in kw else None
            if key is None:
                raise ValidationError("ttl is an argument of add only")
            await ctx.add([{**MSG[0], key: kw[key]}], user_id="u")
        assert await ctx.users() == []


@pytest.mark.parametrize("user_id", [" base", "base ", "\tbase", "base\n"])
async def test_user_ids_with_surrounding_whitespace_are_refused(tmp_path: Any, user_id: str) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        with pytest.raises(ValidationError):
            await ctx.add(MSG, user_id=user_id)
        with pytest.raises(ValidationError):
            await ctx.search("Porto", user_id=user_id)


@pytest.mark.parametrize("memory_id", ["1", " 1", 1.0, 2**63, 0, -1, True])
async def test_memory_ids_must_be_integers_in_range(tmp_path: Any, memory_id: Any) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add(MSG, user_id="u")
        with pytest.raises(ValidationError):
            await ctx.get(memory_id, "u")
        with pytest.raises(ValidationError):
            await ctx.delete(memory_id, "u")


async def test_ids_are_never_reused_after_delete_user(ctx: DeepContext) -> None:
    first = await ctx.add(MSG, user_id="a")
    before_mem, before_turn = max(first.memory_ids), max(first.turn_ids)
    await ctx.delete_user("a")
    again = await ctx.add(MSG, user_id="b")
    assert min(again.memory_ids) > before_mem
    assert min(again.turn_ids) > before_turn


async def test_export_is_strict_json_and_import_refuses_nan(ctx: DeepContext) -> None:
    # SQLite kept NaN written before metadata was checked for it (PostgreSQL's JSONB refuses it):
    # written straight through the store
    score = math.nan if ctx.store.engine.dialect.name == "sqlite" else None  # type: ignore[attr-defined]
    ctx.store.apply_add(plan("u", turns=[turn("hello there")], memories=[memory("Likes tea", metadata={"score": score})]))
    records = [r async for r in ctx.export("u")]
    text = "\n".join(json.dumps(r, allow_nan=False) for r in records)  # raises on NaN / Infinity
    assert '"score": null' in text
    records = [json.loads(line) for line in text.splitlines()]
    bad = [dict(r, metadata={"score": math.inf}) if r["record"] == "memories" else r for r in records]
    with pytest.raises(ValidationError):
        await ctx.import_records(bad, user_id="v")
    assert "v" not in await ctx.users()


@pytest.mark.parametrize("name", ["Jo\\e", "Jo\\1", "A\\g<0>"])
async def test_speaker_names_are_text_not_patterns(tmp_path: Any, name: str) -> None:
    # a name is spliced into the extraction's substitutions: a backslash in it is a character
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        out = await ctx.add([{"role": "user", "name": name, "content": f"I'm {name}, a data engineer."}], user_id="u")
        page = await ctx.list("u", tier=["short_term", "long_term"])
        assert out.memory_ids and all("\\\\" not in m.text for m in page.memories)
        assert any(m.text.startswith(f"{name} is") for m in page.memories), [m.text for m in page.memories]


async def test_import_holds_metadata_to_the_add_limits(ctx: DeepContext) -> None:
    await ctx.add(MSG, user_id="u")
    records = [r async for r in ctx.export("u")]
    big = [dict(r, metadata={"x": "a" * 1_000_000}) if r["record"] == "memories" else r for r in records]
    with pytest.raises(ValidationError):
        await ctx.import_records(big, user_id="v")
    assert "v" not in await ctx.users()
