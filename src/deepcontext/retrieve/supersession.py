"""How knowledge updates show in search.

A superseded memory (an older value of a single-valued fact, see
:mod:`deepcontext.services.updates`) is left out of search unless ``include_superseded`` asks for
it; then it comes right after the version that replaced it, never above it. The verbatim turn that
stated the old value stays active but carries ``valid_to`` (what it says stopped being true then):
rescoring weighs it by ``outdated_factor`` unless the question is about the past ("Where did I live
before Lisbon?", "What did I use to drink?").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from deepcontext.store.interface import MemoryFilters, RankFields, Store
from deepcontext.text import keyword_terms
from deepcontext.types import Memory, MemoryStatus

H = TypeVar("H", bound=Any)

__all__ = ["about_the_past", "add_superseded", "outdated_factor"]

_PAST_RE = re.compile(
    r"\b(?:before|previous(?:ly)?|formerly|former|used\s+to|earlier|originally|at\s+first|first|old|ex|"
    r"anymore|any\s+more|no\s+longer|until|prior|back\s+when|back\s+then|in\s+the\s+past|history|change[ds]?|"
    r"did|was|were|had|lived|worked|drank|ate|drove)\b",
    re.IGNORECASE,
)


#: how many versions back from a hit include_superseded follows
_MAX_VERSIONS = 3

_NOW_RE = re.compile(r"\b(?:now|currently|current|these\s+days|nowadays|at\s+the\s+moment|today|still|latest)\b", re.IGNORECASE)


def about_the_past(query: str) -> bool:
    """Whether a question asks about an earlier state (past tense, "before", "used to", "previous")
    rather than the present ("now", "currently", "these days")."""
    return bool(_PAST_RE.search(query)) and not _NOW_RE.search(query)


def outdated_factor(f: RankFields, now: datetime, factor: float, *, past: bool) -> float:
    """Rescoring weight of a memory whose content stopped being true (``valid_to`` passed)."""
    if past or f.valid_to is None or f.valid_to > now:
        return 1.0
    return factor


def add_superseded(
    store: Store,
    user_id: str,
    query: str,
    hits: list[H],
    *,
    limit: int,
    filters: MemoryFilters,
    now: datetime,
    max_sources: int,
    make_hit: Callable[[Memory, float], H],
) -> list[H]:
    """``hits`` with the earlier versions of the hits and the superseded memories the query matches
    (keyword leg): each right after the version that replaced it (its score just below), the others
    after the current results; cut to ``limit``. ``hits`` have ``memory`` and ``score``;
    ``make_hit(memory, score)`` makes one."""
    old_filters = replace(filters, statuses=(MemoryStatus.SUPERSEDED,))
    terms = keyword_terms(query)
    found = [m for m, _ in store.keyword_search(user_id, terms, limit, old_filters, now)] if terms else []
    after: dict[int, int] = {}  # superseded id -> the result it follows (its newer version, or a memory of the same turn)
    newer = [h.memory.id for h in hits]
    for _ in range(_MAX_VERSIONS):  # versions back from the hits: the one each replaced, and so on
        pairs = store.superseded_versions(user_id, newer, filters, now)
        for old, new in pairs:
            after.setdefault(old, new)
        newer = [old for old, _ in pairs]
        found += newer
    found = list(dict.fromkeys(found))
    if not found:
        return hits
    memories, _ = store.result_details(user_id, found, max_sources=max_sources, links_per_memory=0)
    olds = [memories[m] for m in found if m in memories]
    out = list(hits)
    placed: set[int] = {h.memory.id for h in hits}
    pending = [m for m in olds if m.id not in placed]
    progress = True
    while pending and progress:  # a chain of versions: each after its successor
        progress = False
        for m in list(pending):
            target = after.get(m.id, m.superseded_by)
            at = next((i for i, h in enumerate(out) if h.memory.id in (target, m.superseded_by)), None)
            if at is None:
                continue
            nxt = out[at]
            out.insert(at + 1, make_hit(m, nxt.score * 0.999))
            placed.add(m.id)
            pending.remove(m)
            progress = True
    floor = min((h.score for h in out), default=1.0)
    out += [make_hit(m, floor * 0.999 ** (i + 1)) for i, m in enumerate(pending)]
    return out[:limit]
