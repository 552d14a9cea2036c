"""The keyword leg's pruning policy, the same on both backends: which query terms are worth
ranking by, which of them dominate the others, and how many candidates a ranking reads.

Pure functions of document frequencies; the backends' keyword indexes only count and execute.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = [
    "COMMON_TERM_SHARE",
    "DF_TTL_S",
    "MAX_TERM_SHARE",
    "RANK_CAP",
    "Pruned",
    "dominant_terms",
    "fetch_sizes",
    "informative_terms",
    "is_common",
    "WALK_PER_MATCH",
    "walk_fell_short",
    "walk_rows",
]

#: a keyword-query term found in more than this share of a user's memories is left out of the query
#: when a rarer term is asked for
COMMON_TERM_SHARE = 0.1
#: ... and when every term is that common, the rarest is still used unless it exceeds this share
MAX_TERM_SHARE = 0.25
#: at most this many of the most recent matches are ranked: bm25 / idf scoring visits every match it
#: orders
RANK_CAP = 2000
#: seconds a term's document frequency (and, on PostgreSQL, a query's lexemes) is reused
DF_TTL_S = 30.0


class Pruned(NamedTuple):
    """The terms to rank by, with their document frequencies; ``common_only`` when every term asked
    for was common and only the rarest was kept."""

    terms: list[tuple[str, int]]
    common_only: bool


def is_common(df: int, n_user: int, floor: int = 0) -> bool:
    """Whether a term in ``df`` of the user's ``n_user`` indexed memories is too common to rank by
    when a rarer term is asked for: in more than :data:`COMMON_TERM_SHARE` of them and in at least
    ``floor``."""
    return df >= floor and df > COMMON_TERM_SHARE * n_user


def informative_terms(dfs: Sequence[tuple[str, int]], n_user: int, floor: int = 0) -> Pruned:
    """The terms of ``dfs`` (term, document frequency) worth ranking by.

    Common terms cost the most to rank (every match is scored) and weigh least, so they go when a
    rarer one is asked for. When every term is common the rarest is kept (ties: the first in sort
    order), unless it is in more than :data:`MAX_TERM_SHARE` of the memories: then no term is."""
    rare = [(t, d) for t, d in dfs if not is_common(d, n_user, floor)]
    if rare or not dfs:
        return Pruned(rare, False)
    term, df = min(dfs, key=lambda x: (x[1], x[0]))
    return Pruned([(term, df)] if df <= MAX_TERM_SHARE * n_user else [], True)


def dominant_terms(dfs: Sequence[tuple[str, int]], weights: Sequence[float]) -> list[str] | None:
    """The rarest terms of a query (``dfs``: with their document frequencies, ``weights``: their
    weights, in the same order) if they have at most :data:`RANK_CAP` matches in all and the least of
    their weights exceeds the summed weights of all the others; else None.

    Then a memory holding any of them outscores every memory holding none (MaxScore pruning): the
    top ``k`` are their best ``k`` matches, and every one of their matches can be ranked, where
    the most recent :data:`RANK_CAP` of all matches could miss older ones."""
    if len(dfs) < 2:
        return None
    order = sorted(range(len(dfs)), key=lambda i: (dfs[i][1], dfs[i][0]))
    total = 0
    for j, i in enumerate(order[:-1]):
        total += dfs[i][1]
        if total > RANK_CAP:
            return None
        if weights[i] > sum(weights[x] for x in order[j + 1 :]):
            return [dfs[x][0] for x in order[: j + 1]]
    return None


def fetch_sizes(k: int, matches: int) -> Iterator[int]:
    """How many of the best-scored candidates a ranking reads, round after round, while the filters
    leave fewer than ``k``: 4k (at least 200), then four times as many, as long as there were more
    candidates (at most ``matches``, at most :data:`RANK_CAP`) than the last round read."""
    fetch = max(4 * k, 200)
    while True:
        yield fetch
        if fetch >= min(RANK_CAP, matches):
            return
        fetch *= 4


#: a walk over the user's newest memories costs a row less than half of what collecting one match
#: through PostgreSQL's GIN index does (the walk's rows are adjacent and recent, the matches scattered;
#: see the benchmarks page), so walking twice as many rows as there are matches still pays
WALK_PER_MATCH = 2.0


def walk_rows(matches: int, largest: int, n_user: int) -> int | None:
    """How many of the user's newest memories a ranking walks, testing each, to find the
    :data:`RANK_CAP` newest matches of lexemes that count ``matches`` together (memories holding
    several are counted once per lexeme) and ``largest`` the most common alone, among the user's
    ``n_user`` memories; None when collecting every match costs less (rare lexemes, few matches).

    Spread evenly, the newest RANK_CAP matches lie within ``RANK_CAP * n_user / matches`` rows. The
    walk stops at twice what the most common lexeme alone would need (its matches may be all there
    are), and the ranking then collects every match: a walk costs at most a few times the
    collection it replaces, when the matches lie in older memories."""
    if matches <= RANK_CAP:
        return None
    if RANK_CAP * n_user / matches > WALK_PER_MATCH * matches:
        return None
    return min(n_user, math.ceil(2 * RANK_CAP * n_user / max(1, largest)))


def walk_fell_short(walk: int | None, n_user: int, found: int | None) -> bool:
    """Whether a walk of ``walk`` rows that found ``found`` matches (None: its result was empty)
    stopped before the :data:`RANK_CAP` newest matches: the ranking must then collect them all."""
    return walk is not None and walk < n_user and (found is None or found < RANK_CAP)
