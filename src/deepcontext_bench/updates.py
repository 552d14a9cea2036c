"""Knowledge updates: labelled statement pairs, each in its own user, buried in everyday chat.

Every case is an earlier statement and a later one (a month apart, each in a session of filler
turns, :mod:`deepcontext_bench.filler`), labelled ``update`` (the later one changes a single-valued
fact: the earlier memory must be superseded) or ``control`` (both hold: nothing may be superseded).
Reported: precision and recall of supersession over all cases, and for the updates the ranking
check: asked the case's question about the present, does a result naming the current value come
before every result naming the old one (the old statement's verbatim turn included)?
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deepcontext_bench.filler import filler_turns

__all__ = ["DEFAULT_UPDATES", "T0", "UpdateCase", "UpdateResult", "load_cases", "run_updates", "statement_session"]

DEFAULT_UPDATES = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "updates.jsonl"
T0 = datetime(2024, 3, 4, 18, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class UpdateCase:
    id: str
    kind: str  # update | control
    attribute: str
    before: str
    after: str
    question: str
    current: str  # text naming the value that holds now
    old: str  # text naming the earlier value


@dataclass(slots=True)
class UpdateResult:
    case: UpdateCase
    superseded: bool
    current_rank: int | None = None
    old_rank: int | None = None

    @property
    def correct(self) -> bool:
        return self.superseded == (self.case.kind == "update")

    @property
    def ranked(self) -> bool:
        """The current value is found and comes before the old one."""
        return self.current_rank is not None and (self.old_rank is None or self.current_rank < self.old_rank)


@dataclass(slots=True)
class UpdatesReport:
    results: list[UpdateResult] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        tp = sum(1 for r in self.results if r.superseded and r.case.kind == "update")
        fp = sum(1 for r in self.results if r.superseded and r.case.kind != "update")
        fn = sum(1 for r in self.results if not r.superseded and r.case.kind == "update")
        updates = [r for r in self.results if r.case.kind == "update"]
        n = max(1, len(updates))
        return {
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "current_above_old": sum(r.ranked for r in updates) / n,
            "current_at_1": sum(r.current_rank == 1 for r in updates) / n,
            "current_in_top_3": sum(r.current_rank is not None and r.current_rank <= 3 for r in updates) / n,
        }


def load_cases(path: Path) -> list[UpdateCase]:
    """The labelled cases of a JSON-lines file."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            cases.append(UpdateCase(**{k: d[k] for k in UpdateCase.__dataclass_fields__}))
    return cases


def _rank(results: list[Any], needle: str) -> int | None:
    low = needle.lower()
    return next((i for i, r in enumerate(results, start=1) if low in r.text.lower()), None)


async def statement_session(ctx: Any, user: str, statement: str, filler: int, seed: int, when: datetime, conv: str) -> list[int]:
    """A session: filler, the statement, filler; returns the statement's turn ids."""
    turns = filler_turns(filler, seed)
    half = len(turns) // 2
    if turns[:half]:
        await ctx.add(turns[:half], user_id=user, conversation_id=conv, timestamp=when)
    r = await ctx.add(
        [{"role": "user", "content": statement}], user_id=user, conversation_id=conv, timestamp=when + timedelta(minutes=5)
    )
    if turns[half:]:
        await ctx.add(turns[half:], user_id=user, conversation_id=conv, timestamp=when + timedelta(minutes=10))
    return list(r.turn_ids)


async def run_case(ctx: Any, case: UpdateCase, *, filler: int, seed: int) -> UpdateResult:
    """One case in a user of its own (named after the case)."""
    user = f"case-{case.id}"
    before_turns = await statement_session(ctx, user, case.before, filler, seed, T0, "s1")
    await statement_session(ctx, user, case.after, filler, seed + 1, T0 + timedelta(days=30), "s2")
    page = await ctx.list(user, tier=["short_term", "long_term"], include_inactive=True, limit=1000)
    superseded = False
    for m in page.memories:
        if m.status.value == "superseded" and any(s.turn_id in before_turns for s in (await ctx.get(m.id, user)).sources):
            superseded = True
    res = await ctx.search(case.question, user_id=user, limit=10)
    return UpdateResult(case, superseded, _rank(res.results, case.current), _rank(res.results, case.old))


async def run_updates(
    path: Path,
    *,
    filler: int = 60,
    seed: int = 7,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> UpdatesReport:
    """Every case of ``path`` through the public API, with the default settings unless ``settings``."""
    from deepcontext import DeepContext

    cases = load_cases(path)
    report = UpdatesReport()
    with tempfile.TemporaryDirectory() as tmp:
        url = db_url or f"sqlite:///{tmp}/updates.db"
        async with DeepContext(database_url=url, **(settings or {})) as ctx:
            if progress:
                progress("total", len(cases))
            for i, case in enumerate(cases):
                report.results.append(await run_case(ctx, case, filler=filler, seed=seed + 2 * i))
                if progress:
                    progress("advance", 1)
    return report


async def sweep_updates(
    path: Path,
    grid: list[dict[str, float]],
    *,
    filler: int = 60,
    seed: int = 7,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> dict[tuple[float, ...], list[int | None]]:
    """Every case ingested once, then each update case's question asked under each search
    configuration of ``grid``: 1 where the first result names the current value, else None (the
    shape :func:`deepcontext_bench.needs.kfold` takes)."""
    from deepcontext import DeepContext
    from deepcontext.retrieve.config import SearchConfig

    cases = load_cases(path)
    out: dict[tuple[float, ...], list[int | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = db_url or f"sqlite:///{tmp}/updates.db"
        async with DeepContext(database_url=url, **(settings or {})) as ctx:
            if progress:
                progress("total", len(cases) + len(grid))
            for i, case in enumerate(cases):
                await run_case(ctx, case, filler=filler, seed=seed + 2 * i)
                if progress:
                    progress("advance", 1)
            base = SearchConfig.from_settings(ctx.settings)
            updates = [c for c in cases if c.kind == "update"]
            for point in grid:
                cfg = base.model_copy(update=point)
                marks: list[int | None] = []
                for case in updates:
                    res = await ctx.search(case.question, user_id=f"case-{case.id}", limit=10, config=cfg)
                    marks.append(1 if _rank(res.results, case.current) == 1 else None)
                out[tuple(point.values())] = marks
                if progress:
                    progress("advance", 1)
    return out
