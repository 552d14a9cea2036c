"""Memories that stay true after ordinary conversation: labelled everyday cases of seven kinds.

The kinds: (1) an update must not erase what it did not change; (2) another person's change is not
the user's; (3) changes said as events; (4) a self-introduction names the user; (5) recurring times
stay as said; (6) text a careful person would write; (7) slots of the right kind. Each case, one
JSON object a line: ``id``, ``kind`` (1-7), ``part`` (``dev``, or ``held-out``: written apart and
never used to choose anything, or ``blind``: written by someone who never read the rules), ``statements`` (said by the user in order, each in a session of its
own a month after the one before, among filler chat), ``question``, ``first`` (text the first
search result must hold), ``not_first`` (text it must not hold, or null), ``must_contain`` /
``must_not_contain`` (texts some active memory of the statements must hold / none may hold). A case passes
when every condition it gives holds (case-insensitive substrings).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from deepcontext.errors import ValidationError
from deepcontext.language.unnamed import parsed
from deepcontext_bench.updates import T0, statement_session

__all__ = ["DEFAULT_EVERYDAY", "EverydayCase", "EverydayReport", "load_everyday", "run_everyday"]

DEFAULT_EVERYDAY = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "everyday.jsonl"
KINDS = {
    1: "an update keeps what it did not change",
    2: "another person's change is theirs",
    3: "changes said as events",
    4: "a self-introduction names the user",
    5: "recurring times stay as said",
    6: "text a careful person writes",
    7: "slots of the right kind",
}
PARTS = ("dev", "held-out", "blind")


@dataclass(frozen=True, slots=True)
class EverydayCase:
    id: str
    kind: int
    part: str
    statements: list[str]
    question: str
    first: str | None = None
    not_first: str | None = None
    must_contain: list[str] = field(default_factory=list)
    must_not_contain: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CaseResult:
    case: EverydayCase
    failed: list[str]  # what did not hold; empty when the case passes
    top: str = ""


@dataclass(slots=True)
class EverydayReport:
    results: list[CaseResult] = field(default_factory=list)

    def shares(self) -> dict[tuple[int, str], tuple[int, int]]:
        """(kind, part) -> (cases passed, cases)."""
        out: dict[tuple[int, str], tuple[int, int]] = {}
        for r in self.results:
            ok, n = out.get((r.case.kind, r.case.part), (0, 0))
            out[(r.case.kind, r.case.part)] = (ok + (not r.failed), n + 1)
        return out

    def as_dict(self) -> dict[str, Any]:
        shares = self.shares()
        return {
            "cases": len(self.results),
            "passed": sum(not r.failed for r in self.results),
            "by_kind": {
                str(k): {p: {"passed": shares[(k, p)][0], "cases": shares[(k, p)][1]} for p in PARTS if (k, p) in shares}
                for k in KINDS
            },
            "failures": {r.case.id: r.failed for r in self.results if r.failed},
        }


def load_everyday(path: Path) -> list[EverydayCase]:
    """The cases of a JSON-lines file; a ValidationError names the first bad line."""
    cases = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            case = EverydayCase(**{k: d[k] for k in EverydayCase.__dataclass_fields__ if k in d})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValidationError(f"{path.name} line {n}: not a case ({exc})") from exc
        if case.kind not in KINDS or case.part not in PARTS or not case.statements or not case.question:
            raise ValidationError(f"{path.name} line {n}: kind 1-7, part dev|held-out|blind, statements and question needed")
        cases.append(case)
    return cases


async def run_case(ctx: Any, case: EverydayCase, *, filler: int, seed: int) -> CaseResult:
    """One case in a user of its own (named after the case)."""
    user = f"everyday-{case.id}"
    said: set[int] = set()
    for i, statement in enumerate(case.statements):
        said.update(await statement_session(ctx, user, statement, filler, seed + i, T0 + timedelta(days=30 * i), f"s{i}"))
    res = await ctx.search(case.question, user_id=user, limit=10)
    top = res.results[0].text if res.results else ""
    page = await ctx.list(user, tier=["short_term", "long_term"], limit=1000)
    # the texts checked are the case's own memories (from its statements), not the filler chat's, each
    # also as the rules read it ("the user's" as "User's"), so a check written either way holds
    own = [m.text for m in page.memories if any(s.turn_id in said for s in m.sources)]
    texts = [x.lower() for t in own for x in dict.fromkeys([t, parsed(t)])]
    failed = []
    if case.first and case.first.lower() not in top.lower():
        failed.append(f"first result lacks {case.first!r}")
    if case.not_first and case.not_first.lower() in top.lower():
        failed.append(f"first result holds {case.not_first!r}")
    failed += [f"no memory holds {t!r}" for t in case.must_contain if not any(t.lower() in x for x in texts)]
    failed += [f"a memory holds {t!r}" for t in case.must_not_contain if any(t.lower() in x for x in texts)]
    return CaseResult(case, failed, top)


async def run_everyday(
    path: Path,
    *,
    part: str | None = None,
    filler: int = 20,
    seed: int = 11,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> EverydayReport:
    """Every case of ``path`` (of one ``part`` when given) through the public API, default settings
    unless ``settings``."""
    from deepcontext import DeepContext

    cases = [c for c in load_everyday(path) if part is None or c.part == part]
    report = EverydayReport()
    with tempfile.TemporaryDirectory() as tmp:
        url = db_url or f"sqlite:///{tmp}/everyday.db"
        async with DeepContext(database_url=url, **(settings or {})) as ctx:
            if progress:
                progress("total", len(cases))
            for i, case in enumerate(cases):
                report.results.append(await run_case(ctx, case, filler=filler, seed=seed + 3 * i))
                if progress:
                    progress("advance", 1)
    return report
