"""Implicit needs: a standing fact said once (an allergy, a diet, a preference, a habit, a constraint,
an instruction), buried in everyday chat, must come back for a question that needs it without
naming it ("What dessert should I bring?" after "By the way, I'm lactose intolerant.").

Every case is a user of its own: ``filler`` turns of :mod:`deepcontext_bench.filler` over three
sessions a week apart, the statement at a seeded position among them; then the question through
``search``. Reported per case: the rank of the first result naming the fact (``expect``); overall:
the share in the top 1, 3 and 10.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deepcontext_bench.filler import filler_turns

__all__ = [
    "DEFAULT_NEEDS",
    "DIRECT_REQUESTS",
    "NeedCase",
    "NeedResult",
    "NeedsReport",
    "holdout_sets",
    "load_needs",
    "run_need",
    "run_needs",
]

DEFAULT_NEEDS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "needs.jsonl"
#: the counterweight: requests that an earlier message answers directly ("How do I reset the
#: router?" after the steps were given), where the user's standing facts must not win
DIRECT_REQUESTS = DEFAULT_NEEDS.parent / "requests-direct.jsonl"
_T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
_SESSIONS = 3


@dataclass(frozen=True, slots=True)
class NeedCase:
    id: str
    kind: str  # allergy | diet | preference | habit | constraint | instruction
    statement: str
    question: str
    expect: str  # text naming the fact that must be found


@dataclass(slots=True)
class NeedResult:
    case: NeedCase
    rank: int | None
    top: str = ""


@dataclass(slots=True)
class NeedsReport:
    results: list[NeedResult] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        n = max(1, len(self.results))
        return {f"top_{k}": sum(1 for r in self.results if r.rank is not None and r.rank <= k) / n for k in (1, 3, 10)}


def holdout_sets() -> list[Path]:
    """The held-out case files beside the default set: written apart from the rules (standing kinds,
    requests), never used to fit a number; the check that the dev figure is not the rules' alone."""
    return sorted(DEFAULT_NEEDS.parent.glob("needs-holdout*.jsonl"))


def load_needs(path: Path) -> list[NeedCase]:
    """The labelled cases of a JSON-lines file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(NeedCase(**{k: d[k] for k in NeedCase.__dataclass_fields__}))
    return out


async def run_need(ctx: Any, case: NeedCase, *, filler: int, seed: int) -> NeedResult:
    """One case in a user of its own (named after the case)."""
    user = f"need-{case.id}"
    turns = filler_turns(filler, seed)
    at = random.Random(seed).randrange(len(turns) + 1)
    turns.insert(at, {"role": "user", "content": case.statement})
    per = -(-len(turns) // _SESSIONS)
    for s in range(_SESSIONS):
        chunk = turns[s * per : (s + 1) * per]
        if chunk:
            await ctx.add(chunk, user_id=user, conversation_id=f"s{s + 1}", timestamp=_T0 + timedelta(days=7 * s))
    res = await ctx.search(case.question, user_id=user, limit=10)
    low = case.expect.lower()
    rank = next((i for i, r in enumerate(res.results, start=1) if low in r.text.lower()), None)
    return NeedResult(case, rank, res.results[0].text if res.results else "")


async def run_needs(
    path: Path,
    *,
    filler: int = 120,
    seed: int = 11,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> NeedsReport:
    """Every case of ``path`` through the public API, with the default settings unless ``settings``."""
    from deepcontext import DeepContext

    cases = load_needs(path)
    report = NeedsReport()
    with tempfile.TemporaryDirectory() as tmp:
        url = db_url or f"sqlite:///{tmp}/needs.db"
        async with DeepContext(database_url=url, **(settings or {})) as ctx:
            if progress:
                progress("total", len(cases))
            for i, case in enumerate(cases):
                report.results.append(await run_need(ctx, case, filler=filler, seed=seed + i))
                if progress:
                    progress("advance", 1)
    return report


def kfold(
    ranks: dict[tuple[float, ...], list[int | None]], *, folds: int = 5, top: int = 3, seed: int = 0
) -> tuple[float, list[tuple[float, ...]]]:
    """k-fold cross-validation of a parameter choice: for each fold, the candidate with the most
    cases in the top ``top`` on the other folds (ties: the higher mean reciprocal rank, then the
    first given) is scored on the fold. Returns the share of held-out cases in the top ``top`` and
    the choice of each fold. ``ranks`` maps each candidate to its rank per case (None: not found)."""
    n = len(next(iter(ranks.values())))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    hits, chosen = 0, []
    for f in range(folds):
        held = set(order[f::folds])
        train = [i for i in range(n) if i not in held]

        def quality(c: tuple[float, ...], idx: list[int]) -> tuple[int, float]:
            rs = [ranks[c][i] for i in idx]
            return sum(1 for r in rs if r is not None and r <= top), sum(1 / r for r in rs if r is not None)

        best = max(ranks, key=lambda c: quality(c, train))
        chosen.append(best)
        hits += quality(best, sorted(held))[0]
    return hits / n, chosen


async def sweep_needs(
    paths: Path | list[Path],
    grid: list[dict[str, float]],
    *,
    filler: int = 120,
    seed: int = 11,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> dict[tuple[float, ...], list[int | None]]:
    """Every case (of one file or several) ingested once, then asked under each search configuration
    of ``grid`` (settings overrides): the rank per case for each, keyed by the grid entry's values."""
    from deepcontext import DeepContext
    from deepcontext.retrieve.config import SearchConfig

    cases = [c for p in ([paths] if isinstance(paths, Path) else paths) for c in load_needs(p)]
    out: dict[tuple[float, ...], list[int | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = db_url or f"sqlite:///{tmp}/needs.db"
        async with DeepContext(database_url=url, **(settings or {})) as ctx:
            if progress:
                progress("total", len(cases) + len(grid))
            for i, case in enumerate(cases):
                await run_need(ctx, case, filler=filler, seed=seed + i)
                if progress:
                    progress("advance", 1)
            base = SearchConfig.from_settings(ctx.settings)
            for point in grid:
                cfg = base.model_copy(update=point)
                ranks: list[int | None] = []
                for case in cases:
                    res = await ctx.search(case.question, user_id=f"need-{case.id}", limit=10, config=cfg)
                    low = case.expect.lower()
                    ranks.append(next((j for j, r in enumerate(res.results, start=1) if low in r.text.lower()), None))
                out[tuple(point.values())] = ranks
                if progress:
                    progress("advance", 1)
    return out
