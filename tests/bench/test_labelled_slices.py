"""Small slices of the labelled benchmarks (knowledge updates, implicit needs) run through the
public API as a floor: a pipeline that stopped superseding, superseded coexisting facts or lost the
profile leg fails here. The scores themselves are the benchmarks' (`deepcontext bench updates |
needs`), not these tests'."""

from __future__ import annotations

from pathlib import Path

from deepcontext import DeepContext
from deepcontext.bench.needs import DEFAULT_NEEDS, load_needs, run_need
from deepcontext.bench.updates import DEFAULT_UPDATES, load_cases, run_case
from deepcontext.embed import HashEmbedder


def test_the_labelled_sets_have_their_size() -> None:
    cases = load_cases(DEFAULT_UPDATES)
    assert sum(c.kind == "update" for c in cases) >= 60 and sum(c.kind == "control" for c in cases) >= 60
    assert len({c.id for c in cases}) == len(cases)
    needs = load_needs(DEFAULT_NEEDS)
    assert len(needs) >= 40 and len({c.kind for c in needs}) == 6


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
