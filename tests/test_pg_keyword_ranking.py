"""PostgreSQL's keyword leg ranks by the summed idf weights of the query's lexemes a memory holds
(newer first on ties). When the rarest lexemes outweigh all the others together, only their matches
are ranked (MaxScore pruning): checked here against a ranking of every memory computed from the
index itself, with and without filters, where the pruning applies and where it does not or must
fall back; and beyond RANK_CAP matches, where the pruned ranking still finds old memories holding
the rare word that ranking only the most recent matches missed."""

from __future__ import annotations

import math
import random

from sqlalchemy import text

from deepcontext.store import MemoryFilters
from deepcontext.store.keyword_policy import RANK_CAP, dominant_terms, walk_rows
from deepcontext.store.migrations import PG_TS_CONFIG
from deepcontext.store.postgres import PostgresStore
from deepcontext.store.postgres_keywords import DF_CAP
from deepcontext.types import MemoryTier
from tests.store_helpers import DIM, axis, later, memory, plan

WORDS = [f"w{i}" for i in range(40)]


def index_rows(pg: PostgresStore, user_id: str) -> dict[int, set[str]]:
    """Each memory's lexemes, read from the keyword index."""
    with pg.engine.connect() as conn:
        rows = conn.execute(text("SELECT memory_id, tsvector_to_array(tsv) FROM memory_fts WHERE user_id = :u"), {"u": user_id})
        return {int(mid): set(lexes) for mid, lexes in rows}


def exact_ranking(index: dict[int, set[str]], query: list[str], k: int, allowed: set[int] | None = None) -> list[int]:
    """The top ``k`` of every memory by the documented score, summed in the query's order."""
    n = len(index)
    cap = max(DF_CAP, int(0.1 * n))
    df = {lx: sum(1 for lexes in index.values() if lx in lexes) for lx in query}
    weights = [(lx, math.log(1.0 + cap / (df[lx] + 0.5))) for lx in query if df[lx] > 0]
    scored = []
    for mid, lexes in index.items():
        if allowed is not None and mid not in allowed:
            continue
        score = 0.0
        for lx, w in weights:
            score += w if lx in lexes else 0.0
        if score > 0:
            scored.append((score, mid))
    scored.sort(key=lambda x: (-x[0], -x[1]))
    return [mid for _, mid in scored[:k]]


def test_ranking_equals_an_exhaustive_ranking_with_and_without_pruning(pg: PostgresStore) -> None:
    rng = random.Random(5)
    # word i is drawn with weight 1/(i+1): w0 in many memories, w39 in a few
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    # "twin1 twin2" always together (equal weights: nothing dominates); m<i> makes every text unique
    texts = [
        f"m{i} "
        + ("twin1 twin2 " if i % 9 == 0 else "")
        + " ".join(sorted(set(rng.choices(WORDS, weights, k=rng.randint(2, 6)))))
        for i in range(400)
    ]
    tiers = [MemoryTier.LONG_TERM if i % 3 == 0 else MemoryTier.SHORT_TERM for i in range(len(texts))]
    # another user says the same words (and more of them): neither their rows nor their counts count
    pg.apply_add(plan("other", memories=[memory(t + " w39 twin1", vec=axis(i)) for i, t in enumerate(texts[:200])]))
    out = pg.apply_add(
        plan("u", memories=[memory(t, vec=axis(i), tier=tier) for i, (t, tier) in enumerate(zip(texts, tiers, strict=True))])
    )
    long_term = {mid for mid, tier in zip(out.memory_ids, tiers, strict=True) if tier == MemoryTier.LONG_TERM}
    index = index_rows(pg, "u")
    assert len(index) == len(texts)
    only_long = MemoryFilters(tiers=(MemoryTier.LONG_TERM,))
    queries = [[rare, common] for rare in ("w39", "w31", "w25", "w12") for common in ("w0", "w1", "w2")]
    queries += [
        ["w0", "w1"],
        ["w2", "w3", "w4"],
        ["w39", "w38", "w0"],
        ["w20", "w21", "w22", "w0"],
        ["w5", "w6", "w7", "w8"],
        ["twin1", "twin2"],
        ["twin1", "twin2", "w0"],
        ["twin2", "w39"],
    ]
    pruned = 0
    for query in queries:
        dfs = [(lx, sum(1 for lexes in index.values() if lx in lexes)) for lx in query]
        cap = max(DF_CAP, int(0.1 * len(index)))
        if dominant_terms(dfs, [math.log(1.0 + cap / (df + 0.5)) for _, df in dfs]) is not None:
            pruned += 1
        for k in (3, 10, 40):
            got = [m for m, _ in pg.keyword_search("u", query, k, MemoryFilters(), later(1))]
            assert got == exact_ranking(index, query, k), (query, k)
            got = [m for m, _ in pg.keyword_search("u", query, k, only_long, later(1))]
            assert got == exact_ranking(index, query, k, long_term), (query, k, "long-term")
    # both paths were taken: pruned (some with fewer than k rare matches passing the filters) and not
    assert 0 < pruned < len(queries)


def test_a_dominant_rare_word_finds_old_memories_beyond_the_most_recent_matches(pg: PostgresStore) -> None:
    # five old memories say "deploy"; then more memories holding "alpha", "beta" or "gamma" than
    # RANK_CAP (each word in fewer than DF_CAP memories, so none is left out as common)
    old = [memory(f"how to deploy service {i}", vec=axis(i)) for i in range(5)]
    n_each = RANK_CAP // 3 + 200
    assert n_each < DF_CAP and 3 * n_each > RANK_CAP
    recent = [memory(f"note {i} about {word}", vec=axis(i)) for word in ("alpha", "beta", "gamma") for i in range(n_each)]
    first = pg.apply_add(plan("u", memories=old))
    pg.apply_add(plan("u", memories=recent, now=later(1)))
    got = [m for m, _ in pg.keyword_search("u", ["deploy", "alpha", "beta", "gamma"], 5, MemoryFilters(), later(2))]
    # "deploy" outweighs the three common words together: its five memories, the newest first
    assert got == sorted(first.memory_ids, reverse=True)
    # with more asked for than "deploy" has, the rest come from the recent matches, ranked after it
    got = [m for m, _ in pg.keyword_search("u", ["deploy", "alpha", "beta", "gamma"], 8, MemoryFilters(), later(2))]
    assert got[:5] == sorted(first.memory_ids, reverse=True) and len(got) == 8
    assert not set(got[5:]) & set(first.memory_ids)


def test_fewer_matches_than_asked_for_are_ranked_in_one_statement(pg_url: str, pg: PostgresStore) -> None:
    # three memories say "deploy": with 20 asked for, reading the best rows again (four times as
    # many, twice) cannot find more; the ranking runs once (it ran three times per search)
    pg.apply_add(
        plan(
            "u",
            memories=[memory(f"deploy note {i}", vec=axis(i)) for i in range(3)]
            + [memory(f"other {i}", vec=axis(i + 3)) for i in range(5)],
        )
    )
    statements: list[str] = []
    traced = PostgresStore(pg_url, DIM, tracer=lambda stmt, params: statements.append(stmt))
    try:
        # filters other than the default: the statement goes through SQLAlchemy, where the tracer sees it
        got = traced.keyword_search("u", ["deploy"], 20, MemoryFilters(tiers=(MemoryTier.SHORT_TERM,)), later(1))
    finally:
        traced.close()
    assert len(got) == 3
    assert sum(1 for s in statements if "memory_fts" in s and "score" in s) == 1
    # and the default filters' statement finds the same three
    assert [m for m, _ in pg.keyword_search("u", ["deploy"], 20, MemoryFilters(), later(1))] == [m for m, _ in got]


def newest_ranking(pg: PostgresStore, user_id: str, terms: list[str], k: int) -> list[int]:
    """The documented ranking of the RANK_CAP newest memories holding a lexeme of ``terms``,
    computed from the keyword index itself."""
    index = index_rows(pg, user_id)
    with pg.engine.connect() as conn:
        body = {"b": " ".join(terms)}
        lexes = [
            str(r[0]) for r in conn.execute(text(f"SELECT unnest(tsvector_to_array(to_tsvector('{PG_TS_CONFIG}', :b)))"), body)
        ]
    newest = sorted((mid for mid, held in index.items() if held & set(lexes)), reverse=True)[:RANK_CAP]
    return exact_ranking(index, lexes, k, allowed=set(newest))


def _both_filters(pg: PostgresStore, user_id: str, terms: list[str], k: int) -> list[list[int]]:
    """The ranking under the default filters and under filters that keep the same memories (every
    tier), which take the other statement."""
    return [
        [m for m, _ in pg.keyword_search(user_id, terms, k, filters, later(2))]
        for filters in (MemoryFilters(), MemoryFilters(tiers=tuple(MemoryTier)))
    ]


def test_walking_the_newest_memories_ranks_as_collecting_every_match(pg: PostgresStore) -> None:
    # word i % 6 in memory i (each in about 830 memories: none common), "x" in every tenth: the
    # words asked for match more memories than a ranking reads, spread evenly
    n = 5000
    pg.apply_add(plan("e", memories=[memory(f"e{i} v{i % 6} {'x' if i % 10 == 0 else 'y'}", vec=axis(i)) for i in range(n)]))
    assert walk_rows(3 * (n // 6), n // 6, n) is not None
    for terms in (["v0", "v1", "v2"], ["v0", "v1", "v2", "x"], ["v3", "v4", "v5", "v0"]):
        expected = newest_ranking(pg, "e", terms, 20)
        assert len(expected) == 20 and _both_filters(pg, "e", terms, 20) == [expected, expected]


def test_a_walk_that_ends_before_the_newest_matches_collects_them(pg: PostgresStore) -> None:
    # three words said together in the oldest 4,400 memories (two more in some of them), then
    # 40,600 newer memories without them: the ranking walks the newest rows, where few of them lie,
    # and must go on to collect the matches further back
    old, new = 4400, 40_600
    rows = [memory(f"o{i} a b c{' d' if i % 2 else ''}{' e' if i % 3 == 0 else ''}", vec=axis(i)) for i in range(old)]
    rows += [memory(f"n{i} plum w{i % 7}", vec=axis(i)) for i in range(new)]
    for start in range(0, len(rows), 5000):
        pg.apply_add(plan("c", memories=rows[start : start + 5000]))
    walk = walk_rows(3 * old + old // 2 + old // 3 + 1, old, old + new)
    assert walk is not None and walk - new < RANK_CAP  # the walk alone finds too few
    for terms, k in ((["a", "b", "c", "d", "e"], 800), (["a", "b", "c", "e"], 1000)):
        expected = newest_ranking(pg, "c", terms, k)
        assert len(expected) == k and _both_filters(pg, "c", terms, k) == [expected, expected]
        scores = [sc for _, sc in pg.keyword_search("c", terms, k, MemoryFilters(), later(2))]
        assert scores[0] > scores[-1]  # ranked by the words held, not only by age


def test_one_common_word_finds_the_newest_live_memories_holding_it(pg: PostgresStore) -> None:
    # "z" in every fourth of 4,800 memories (common: past DF_CAP and the common share, under the
    # share past which no word is used): the newest memories holding it that are active and
    # unexpired, whatever the newest rows are; another user's rows say it too
    n = 4800
    rows = [memory(f"c{i}{' z' if i % 4 == 0 else ''}{' q' if i % 20 == 0 else ''}", vec=axis(i)) for i in range(n)]
    for i in (n - 4, n - 12, n - 32):  # some of the newest holding it expired before the search
        rows[i] = memory(rows[i].text, vec=axis(i), expires_at=later(0.5))
    pg.apply_add(plan("o", memories=[memory(f"o{i} z", vec=axis(i)) for i in range(300)]))
    ids = []
    for start in range(0, n, 2400):
        ids += pg.apply_add(plan("cm", memories=rows[start : start + 2400])).memory_ids
    for i in (n - 8, n - 20):  # and two deleted
        pg.delete_memory("cm", ids[i], now=later(0.5), actor="test", reason=None)
    gone = {ids[i] for i in (n - 4, n - 12, n - 32, n - 8, n - 20)}
    holding = [mid for i, mid in enumerate(ids) if i % 4 == 0 and mid not in gone]
    got = [mid for mid, _ in pg.keyword_search("cm", ["z"], 25, MemoryFilters(), later(1))]
    assert got == holding[::-1][:25]
    # a rarer word beside it is ranked by both: its memories first
    with_q = [mid for i, mid in enumerate(ids) if i % 20 == 0 and mid not in gone]
    got = [mid for mid, _ in pg.keyword_search("cm", ["z", "q"], 10, MemoryFilters(), later(1))]
    assert got == with_q[::-1][:10]
