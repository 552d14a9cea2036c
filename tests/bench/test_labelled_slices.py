"""Small slices of the labelled benchmarks (knowledge updates, implicit needs) run through the
public API as a floor: a pipeline that stopped superseding, superseded coexisting facts or lost the
profile leg fails here. The scores themselves are the benchmarks' (`deepcontext bench updates |
needs`), not these tests'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext_bench.needs import DEFAULT_NEEDS, DIRECT_REQUESTS, holdout_sets, load_needs, run_need
from deepcontext_bench.updates import DEFAULT_UPDATES, load_cases, run_case
from tests.support.cli import run_cli


def test_the_labelled_sets_have_their_size() -> None:
    cases = load_cases(DEFAULT_UPDATES)
    assert sum(c.kind == "update" for c in cases) >= 60 and sum(c.kind == "control" for c in cases) >= 60
    assert len({c.id for c in cases}) == len(cases)
    needs = load_needs(DEFAULT_NEEDS)
    assert len(needs) >= 40 and len({c.kind for c in needs}) == 6


def test_the_held_out_needs_are_well_formed() -> None:
    sets = holdout_sets()
    assert len(sets) >= 2
    ids: set[str] = {c.id for c in load_needs(DEFAULT_NEEDS)}
    for path in sets:
        cases = load_needs(path)
        assert len(cases) >= 30 and len({c.kind for c in cases}) == 6, path
        for c in cases:
            assert c.id not in ids, c.id
            ids.add(c.id)
            # the fact is named by its statement and not by the request that needs it
            assert c.expect.lower() in c.statement.lower() and c.expect.lower() not in c.question.lower(), c.id


def test_the_direct_requests_and_the_training_sentences_are_well_formed() -> None:
    direct = load_needs(DIRECT_REQUESTS)
    assert len(direct) >= 40 and len({c.id for c in direct}) == len(direct)
    assert all(c.expect in c.statement for c in direct)
    data = DEFAULT_NEEDS.parent
    standing = [json.loads(line) for line in (data / "standing-train.jsonl").read_text(encoding="utf-8").splitlines()]
    kinds = {r["kind"] for r in standing}
    assert kinds == {None, "allergy", "diet", "preference", "habit", "constraint", "instruction"}
    requests = [json.loads(line) for line in (data / "requests-train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["request"] for r in requests} == {True, False}
    for rows in (standing, requests):
        texts = [r["text"].strip().lower() for r in rows]
        assert len(set(texts)) == len(texts)


@pytest.mark.slow  # every held-out set, end to end
def test_bench_needs_reports_the_held_out_sets(tmp_path: Path) -> None:
    data = tmp_path / "two.jsonl"
    data.write_text("\n".join(DEFAULT_NEEDS.read_text(encoding="utf-8").splitlines()[:2]) + "\n", encoding="utf-8")
    p = run_cli(
        ["bench", "needs", "--data", str(data), "--holdout", "--filler", "100", "--set", "embedder=hash"], env={"COLUMNS": "200"}
    )
    assert p.returncode == 0, p.stderr
    assert "2 cases: top 1" in p.stdout
    for path in holdout_sets():
        assert f"{path.name}: {len(load_needs(path))} cases: top 1" in p.stdout, p.stdout[-2000:]


async def test_a_slice_of_the_updates(tmp_path: Path) -> None:
    cases = load_cases(DEFAULT_UPDATES)
    picked = [c for c in cases if c.kind == "update"][:6] + [c for c in cases if c.kind == "control"][:6]
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/u.db", embedder=HashEmbedder(256)) as ctx:
        results = [await run_case(ctx, c, filler=6, seed=i) for i, c in enumerate(picked)]
    assert sum(r.superseded for r in results if r.case.kind == "update") >= 4
    assert not any(r.superseded for r in results if r.case.kind == "control")


async def test_a_slice_of_the_needs(tmp_path: Path) -> None:
    cases = load_needs(DEFAULT_NEEDS)
    picked = [cases[0], cases[8], cases[29], cases[37]]  # an allergy, a diet, a constraint, an instruction
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/n.db", embedder=HashEmbedder(256)) as ctx:
        found = 0
        for i, c in enumerate(picked):
            await run_need(ctx, c, filler=100, seed=i)
            res = await ctx.search(c.question, user_id=f"need-{c.id}", limit=10)
            hit = next((r for r in res.results if c.expect.lower() in r.text.lower()), None)
            found += hit is not None and "profile" in hit.legs
    assert found >= 2
