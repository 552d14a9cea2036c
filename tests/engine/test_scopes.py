"""Agent and run scopes and metadata filter operators through the engine (both backends) and the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.errors import MemoryNotFoundError, ValidationError
from tests.support.cli import run_cli


def cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash"}
    return run_cli(["--db", str(tmp_path / "cli.db"), *args], stdin=stdin, env=env)


def said(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def fill(ctx: DeepContext) -> dict[str, int]:
    """One memory per (agent, run) combination of user ana, and one of user bo with the same ids."""
    ids: dict[str, int] = {}
    for name, text, agent, run, meta in [
        ("plain", "I drink green tea every morning.", None, None, {"kind": "habit", "n": 1}),
        ("coach", "I run five kilometres on Mondays.", "coach", None, {"kind": "sport", "n": 5}),
        ("coach_r1", "I want to run a marathon in October.", "coach", "r1", {"kind": "goal", "n": 42}),
        ("chef_r1", "I am allergic to peanuts.", "chef", "r1", {"kind": "health", "n": 0, 'odd"key': "yes"}),
        ("r2", "I keep a diary in Portuguese.", None, "r2", {"kind": "habit", "n": 3}),
    ]:
        r = await ctx.add(said(text), "ana", agent_id=agent, run_id=run, metadata=meta, infer=False)
        ids[name] = r.memory_ids[0]
    r = await ctx.add(
        said("I run five kilometres on Mondays."), "bo", agent_id="coach", run_id="r1", metadata={"kind": "sport"}, infer=False
    )
    ids["bo"] = r.memory_ids[0]
    return ids


async def found(ctx: DeepContext, ids: dict[str, int], user: str = "ana", **kw: object) -> tuple[set[str], set[str]]:
    name = {v: k for k, v in ids.items()}
    res = await ctx.search("tea run marathon peanuts diary kilometres", user, limit=20, **kw)  # type: ignore[arg-type]
    page = await ctx.list(user, **kw)  # type: ignore[arg-type]
    return {name[r.memory_id] for r in res.results}, {name[m.id] for m in page.memories}


async def test_search_and_list_filter_by_any_combination(ctx: DeepContext) -> None:
    ids = await fill(ctx)
    everything = {"plain", "coach", "coach_r1", "chef_r1", "r2"}
    assert await found(ctx, ids) == (everything, everything)
    assert await found(ctx, ids, agent_id="coach") == ({"coach", "coach_r1"},) * 2
    assert await found(ctx, ids, run_id="r1") == ({"coach_r1", "chef_r1"},) * 2
    assert await found(ctx, ids, agent_id="coach", run_id="r1") == ({"coach_r1"},) * 2
    assert await found(ctx, ids, agent_id=["coach", "chef"], run_id=["r1", "r2"]) == ({"coach_r1", "chef_r1"},) * 2
    assert await found(ctx, ids, agent_id="coach", metadata={"n": {"gte": 10}}) == ({"coach_r1"},) * 2
    assert await found(ctx, ids, metadata={'odd"key': "yes"}) == ({"chef_r1"},) * 2
    assert await found(ctx, ids, metadata={"OR": [{"kind": "habit"}, {"n": {"gt": 40}}]}) == ({"plain", "r2", "coach_r1"},) * 2
    # isolation: bo's memory has the same agent and run, and never shows for ana (nor ana's for bo)
    assert await found(ctx, ids, user="bo", agent_id="coach", run_id="r1") == ({"bo"},) * 2
    assert await found(ctx, ids, user="bo", agent_id="chef") == (set(), set())


async def test_results_turns_and_exports_carry_the_scope(ctx: DeepContext) -> None:
    ids = await fill(ctx)
    res = await ctx.search("marathon", "ana", agent_id="coach")
    hit = next(r for r in res.results if r.memory_id == ids["coach_r1"])
    assert (hit.agent_id, hit.run_id) == ("coach", "r1")
    mem = await ctx.get(ids["chef_r1"], "ana")
    assert (mem.agent_id, mem.run_id) == ("chef", "r1")
    turn = (await ctx.turns("ana"))[2]
    assert (turn.content, turn.agent_id, turn.run_id) == ("I want to run a marathon in October.", "coach", "r1")
    records = [r async for r in ctx.export("ana")]
    await ctx.import_records(records, user_id="ana2")
    copy = await ctx.list("ana2", agent_id="coach", run_id="r1")
    original = await ctx.list("ana", agent_id="coach", run_id="r1")
    assert [m.text for m in copy.memories] == [m.text for m in original.memories] and copy.total == 1


async def test_delete_memories_and_memory_owner(ctx: DeepContext) -> None:
    ids = await fill(ctx)
    assert await ctx.memory_owner(ids["r2"]) == "ana" and await ctx.memory_owner(ids["bo"]) == "bo"
    with pytest.raises(MemoryNotFoundError):
        await ctx.memory_owner(10**9)
    gone = await ctx.delete_memories("ana", agent_id="coach")
    assert sorted(gone) == sorted([ids["coach"], ids["coach_r1"]])
    assert (await ctx.list("ana")).total == 3 and (await ctx.list("bo")).total == 1
    assert [h.event.value for h in await ctx.history(ids["coach"], "ana")] == ["ADD", "DELETE"]


@pytest.mark.parametrize(
    "kw",
    [
        {"agent_id": ""},
        {"agent_id": "a\nb"},
        {"run_id": 3},
        {"agent_id": []},
        {"metadata": {"n": {"between": 1}}},
        {"metadata": {"n": {"in": "x"}}},
    ],
)
async def test_bad_scopes_and_filters_are_validation_errors(ctx: DeepContext, kw: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        await ctx.search("tea", "ana", **kw)  # type: ignore[arg-type]
    if "metadata" not in kw and kw.get("agent_id") != []:
        with pytest.raises(ValidationError):
            await ctx.add(said("I like tea."), "ana", **kw)  # type: ignore[arg-type]
    assert await ctx.users() == []  # nothing was written


async def test_an_add_dedupes_within_its_agent(ctx: DeepContext) -> None:
    a = await ctx.add(said("I like jasmine tea."), "ana", agent_id="a1")
    same = await ctx.add(said("I like jasmine tea."), "ana", agent_id="a1")
    other = await ctx.add(said("I like jasmine tea."), "ana", agent_id="a2")
    assert same.memories_added == 0 and a.memories_added >= 1
    assert other.memories_added >= 1  # another agent's memories are not this one's
    assert {m.agent_id for m in (await ctx.list("ana", tier="short_term")).memories} == {"a1", "a2"}


def test_cli_agent_run_and_metadata_options(tmp_path: Path) -> None:
    for text, extra in (("I swim on Fridays.", ["--agent", "coach", "--run", "r1"]), ("I read poetry.", [])):
        p = cli(tmp_path, "add", "-", "--user", "ana", *extra, stdin=json.dumps(said(text)))
        assert p.returncode == 0, p.stderr
    p = cli(tmp_path, "search", "swim poetry", "--user", "ana", "--agent", "coach", "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)["results"]
    assert res and {(r["agent_id"], r["run_id"]) for r in res} == {("coach", "r1")}
    p = cli(tmp_path, "list", "--user", "ana", "--run", "r1", "--json")
    assert {m["run_id"] for m in json.loads(p.stdout)["memories"]} == {"r1"}
    p = cli(tmp_path, "list", "--user", "ana", "--metadata", '{"x": {"gte": 1}}', "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["total"] == 0
    p = cli(tmp_path, "search", "swim", "--user", "ana", "--metadata", "{not json")
    assert p.returncode != 0 and "not valid JSON" in p.stderr
    p = cli(tmp_path, "search", "swim", "--user", "ana", "--metadata", '{"x": {"near": 1}}')
    assert p.returncode != 0 and "unknown operator" in p.stderr and "Traceback" not in p.stderr


async def test_context_takes_the_scopes(ctx: DeepContext) -> None:
    await fill(ctx)
    everything = await ctx.context("run marathon kilometres peanuts", "ana", min_similarity=0, min_intent=0)
    coach = await ctx.context("run marathon kilometres peanuts", "ana", min_similarity=0, min_intent=0, agent_id="coach")
    chosen = [i.text for p in coach.parts for i in p.items]
    assert any("marathon" in t for t in chosen) and not any("peanuts" in t for t in chosen)
    assert any("peanuts" in i.text for p in everything.parts for i in p.items)
    with pytest.raises(ValidationError):
        await ctx.context("x", "ana", run_id="")


async def test_a_changed_fact_supersedes_only_within_its_agent(ctx: DeepContext) -> None:
    await ctx.add(said("I live in Lisbon."), "ana", agent_id="a1")
    await ctx.add(said("I live in Porto."), "ana", agent_id="a2")
    a1 = {m.text for m in (await ctx.list("ana", agent_id="a1", tier="short_term")).memories}
    assert any("Lisbon" in t for t in a1)  # another agent's new value leaves it as it was
    await ctx.add(said("I live in Madrid."), "ana", agent_id="a1")
    a1 = {m.text for m in (await ctx.list("ana", agent_id="a1", tier="short_term")).memories}
    assert any("Madrid" in t for t in a1) and not any("Lisbon" in t for t in a1)
