"""The keyword leg's pruning policy (shared by both backends) as pure functions."""

from __future__ import annotations

from deepcontext.store.keyword_policy import (
    COMMON_TERM_SHARE,
    MAX_TERM_SHARE,
    RANK_CAP,
    WALK_PER_MATCH,
    dominant_terms,
    fetch_sizes,
    informative_terms,
    is_common,
    walk_fell_short,
    walk_rows,
)


def test_a_term_is_common_above_the_share_and_from_the_floor() -> None:
    n = 10_000
    at_share = int(COMMON_TERM_SHARE * n)
    assert not is_common(at_share, n)
    assert is_common(at_share + 1, n)
    assert not is_common(at_share + 1, n, floor=at_share + 2)
    assert is_common(at_share + 2, n, floor=at_share + 2)


def test_common_terms_go_when_a_rarer_one_is_asked_for() -> None:
    pruned = informative_terms([("the", 4_000), ("garden", 12), ("rose", 0)], 10_000)
    assert pruned.terms == [("garden", 12), ("rose", 0)]
    assert not pruned.common_only


def test_when_all_are_common_the_rarest_stays_unless_it_says_nothing() -> None:
    n = 1_000
    pruned = informative_terms([("b", 200), ("a", 200), ("c", 240)], n)
    assert pruned == ([("a", 200)], True)  # ties: the first in sort order
    too_common = int(MAX_TERM_SHARE * n) + 1
    assert informative_terms([("a", too_common), ("b", too_common + 5)], n) == ([], True)
    assert informative_terms([], n) == ([], False)


def test_the_floor_keeps_terms_of_small_users() -> None:
    # 300 of 1,000 memories: common by share, but under a floor of 1,000 rows it still ranks
    assert informative_terms([("x", 300), ("y", 3)], 1_000, floor=1_000).terms == [("x", 300), ("y", 3)]


def test_dominant_terms_outweigh_all_the_others_together() -> None:
    dfs = [("mobile", 700), ("deploy", 66), ("app", 700)]
    assert dominant_terms(dfs, [0.95, 5.1, 0.95]) == ["deploy"]
    assert dominant_terms(dfs, [0.95, 1.5, 0.95]) is None  # 1.5 < 0.95 + 0.95
    assert dominant_terms([("a", 3), ("b", 4), ("c", 900)], [4.0, 3.0, 2.0]) == ["a", "b"]
    assert dominant_terms([("only", 5)], [9.0]) is None


def test_dominant_terms_need_few_matches() -> None:
    dfs = [("rare", RANK_CAP + 1), ("common", RANK_CAP * 3)]
    assert dominant_terms(dfs, [10.0, 0.1]) is None


def test_fetch_sizes_grow_until_every_candidate_was_read() -> None:
    assert list(fetch_sizes(10, 50)) == [200]
    assert list(fetch_sizes(10, 900)) == [200, 800, 3200]
    assert list(fetch_sizes(100, 10**6)) == [400, 1600, 6400]
    assert all(size >= 200 for size in fetch_sizes(1, RANK_CAP))


def test_a_walk_is_taken_only_where_the_newest_matches_lie_close() -> None:
    # fewer matches than a ranking reads: every match is collected
    assert walk_rows(RANK_CAP, RANK_CAP, 1_000_000) is None
    # a rare term: the newest RANK_CAP matches lie far back
    assert walk_rows(RANK_CAP + 1, RANK_CAP + 1, 1_000_000) is None
    # a term in a tenth of a million memories: about 20,000 rows hold its newest RANK_CAP matches
    assert walk_rows(100_000, 100_000, 1_000_000) == 40_000
    # two terms always said together count their matches twice: the walk goes as far as either alone needs
    assert walk_rows(100_000, 50_000, 1_000_000) == 80_000
    # the walk never goes past the user's memories
    assert walk_rows(4_000, 4_000, 5_000) == 5_000


def test_the_walk_is_bounded_by_what_collecting_would_cost() -> None:
    n_user = 1_000_000
    for matches in (RANK_CAP + 1, 30_000, 44_000, 45_000, 100_000, 400_000):
        walk = walk_rows(matches, matches, n_user)
        expected = RANK_CAP * n_user / matches
        assert (walk is not None) == (expected <= WALK_PER_MATCH * matches)
        if walk is not None:  # read at most twice the expected rows: a few times the collection at worst
            assert walk <= 2 * expected + 1 and walk <= 2 * WALK_PER_MATCH * matches + 1


def test_a_walk_falls_short_only_when_it_stopped_before_the_newest_matches() -> None:
    assert not walk_fell_short(None, 10_000, None)  # no walk: every match was collected
    assert not walk_fell_short(8_000, 10_000, RANK_CAP)  # it found all a ranking reads
    assert walk_fell_short(8_000, 10_000, RANK_CAP - 1)
    assert walk_fell_short(8_000, 10_000, None)  # nothing came back: look further
    assert not walk_fell_short(10_000, 10_000, 5)  # it walked every memory: those are all there are
