"""SQLite's keyword leg when the query's terms match more than RANK_CAP rows: only the most recent
RANK_CAP matches are ranked (bm25), best first, ties to the newer memory; expired memories and
other users' rows are skipped, with a second round taking all the rest when the best rows are all
skipped. Pinned against the definition computed from the FTS5 index directly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from deepcontext.store import Store
from deepcontext.store.interface import DEFAULT_FILTERS
from deepcontext.store.keyword_policy import RANK_CAP
from tests.store_helpers import T0, later, memory, open_test_store, plan

FILLER = 8_000  # the user's memories without the term: keeps its document frequency (all users) under MAX_TERM_SHARE of the user's rows
MATCHING = 2_200  # the user's memories with it: more than RANK_CAP
OTHERS = 260  # another user's, the most recent and the best-scoring: more than one round of rows


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, list[int], list[int]]]:
    path: Path = tmp_path_factory.mktemp("cap") / "cap.db"
    store = open_test_store(f"sqlite:///{path}")
    texts = [f"note {i} about the weather and lunch plans" for i in range(FILLER)]
    # the oldest matches are the shortest (best bm25) but fall outside the most recent RANK_CAP
    texts += ["garden" if i < 150 else f"garden {' '.join(['plants'] * (i % 7))} watered on day {i}" for i in range(MATCHING)]
    mine = store.apply_add(plan("u", memories=[memory(t) for t in texts])).memory_ids
    theirs = store.apply_add(plan("v", memories=[memory(f"garden {i}") for i in range(OTHERS)])).memory_ids
    yield store, mine, theirs
    store.close()


def expire(store: Store, ids: set[int]) -> None:
    """Let memories expire (at ``later(2)``): still active and indexed, but no search's."""
    mt = store.t.memories  # type: ignore[attr-defined]
    with store.transaction() as conn:  # type: ignore[attr-defined]
        conn.execute(update(mt).where(mt.c.id.in_(sorted(ids))).values(expires_at=later(2)))


def definition(store: Store, user_id: str, k: int, inactive: set[int]) -> list[int]:
    """The most recent RANK_CAP rows matching "garden" (any user), ordered by bm25 then newest
    first, kept if the user's and not ``inactive``."""
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.exec_driver_sql(
            "SELECT rowid, bm25(memory_fts) FROM memory_fts WHERE memory_fts MATCH 'body : (\"garden\")'"
        ).all()
        owners = dict(conn.exec_driver_sql("SELECT id, user_id FROM memories").all())
    recent = sorted(rows, key=lambda r: -r[0])[:RANK_CAP]
    ranked = sorted(recent, key=lambda r: (r[1], -r[0]))
    return [int(r[0]) for r in ranked if owners[r[0]] == user_id and r[0] not in inactive][:k]


def test_capped_ranking_matches_the_definition(filled: tuple[Store, list[int], list[int]]) -> None:
    store, mine, theirs = filled
    got = store.keyword_search("u", ["garden"], 10, DEFAULT_FILTERS, later(1))
    expected = definition(store, "u", 10, set())
    assert [i for i, _ in got] == expected
    assert len(expected) == 10
    assert not set(expected) & set(theirs)  # the other user's rows ranked first were skipped
    assert not set(expected) & set(mine[FILLER : FILLER + 150])  # the oldest matches are not ranked
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    # the other user sees only theirs
    assert {i for i, _ in store.keyword_search("v", ["garden"], 10, DEFAULT_FILTERS, later(1))} <= set(theirs)


def test_expired_rows_are_skipped_in_a_second_round(filled: tuple[Store, list[int], list[int]]) -> None:
    store, _mine, _theirs = filled
    first = definition(store, "u", 250, set())
    gone = set(first[:230])  # with the other user's 260, the best ~490 rows are skipped: the first round's 200 all
    expire(store, gone)
    got = store.keyword_search("u", ["garden"], 10, DEFAULT_FILTERS, later(3))
    assert [i for i, _ in got] == definition(store, "u", 10, gone) == first[230:240]
    assert T0 < later(3)


def test_below_the_cap_every_match_is_ranked_over_rounds(tmp_path: Path) -> None:
    """A small user (the ranking is not capped): expired best matches are skipped, a further round
    with more rows follows when the first one is all skipped."""
    store = open_test_store(f"sqlite:///{tmp_path / 'small.db'}")
    try:
        texts = [f"garden {' '.join(['plants'] * (i % 40))} note {i}" for i in range(400)]
        ids = store.apply_add(plan("u", memories=[memory(t) for t in texts])).memory_ids
        store.apply_add(plan("v", memories=[memory("garden") for _ in range(5)]))  # best scores, not u's
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            scores = dict(
                conn.exec_driver_sql(
                    "SELECT rowid, bm25(memory_fts) FROM memory_fts WHERE memory_fts MATCH 'body : (\"garden\")'"
                ).all()
            )
        best_first = sorted(ids, key=lambda i: (scores[i], -i))
        gone = set(best_first[:230])  # more than the first round's 200 rows
        expire(store, gone)
        got = store.keyword_search("u", ["garden"], 10, DEFAULT_FILTERS, later(3))
        expected = [i for i in best_first if i not in gone][:10]
        assert len(got) == 10 and not {i for i, _ in got} & gone
        assert sorted(-s for _, s in got) == sorted(scores[i] for i in expected)  # the 10 best scores
    finally:
        store.close()
