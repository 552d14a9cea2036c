"""SQLite's keyword leg for a user who owns a small share of the index ranks the user's rows with
FTS5's bm25 computed from the index's records (not by FTS5, which would count each term's rows in
the whole table on every query): the same rows, in the same order, with the same scores as FTS5's
own ``bm25()``, on a real SQLite file with many users, deletions, plurals, diacritics and digits."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.store.interface import MemoryFilters
from deepcontext.store.sqlite_bm25 import bm25, fts_tokens, varints
from deepcontext.store.sqlite_keywords import _TABLES, _porter, user_token
from deepcontext.types import MemoryStatus

WORDS = (
    "café naïve résumé trips trip planned planning porto weekend weekends cycling cycled garden gardens "
    "2024 covid19 o'brien e-mail sister's kayak knitting pottery Zürich Kraków déjà-vu running runner"
).split()


def fts5_match(user: str, terms: list[str]) -> str:
    body = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f'uid : "{user_token(user)}" AND body : ({body})'


def fts5_ranking(db: Path, user: str, terms: list[str], ids: set[int]) -> list[tuple[int, float]]:
    """FTS5's own ranking of the user's rows for ``terms`` (the query the keyword leg would send)."""
    match = fts5_match(user, terms)
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT rowid, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ? ORDER BY s, rowid", (match,)
        ).fetchall()
    return [(int(r), -float(s)) for r, s in rows if int(r) in ids]


async def test_small_users_rank_exactly_as_fts5_would(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rng = random.Random(7)
    users = [f"user-{i}" for i in range(40)]
    async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash") as ctx:
        for user in users:
            texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) for _ in range(25)]
            r = await ctx.add([{"role": "user", "content": t} for t in texts], user, infer=False)
            for mid in rng.sample(r.memory_ids, 3):  # deletions leave markers in the index
                await ctx.delete(mid, user)
    async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash") as ctx:  # a fresh cache
        store, now, compared, ranked_here = ctx.store, ctx.clock.now(), 0, 0
        for user in users[::3]:
            active = {m.id for m in store.iter_memories(user) if m.is_active}
            for _ in range(6):
                terms = rng.sample(WORDS, rng.randint(1, 4))
                ours = store.keyword_search(user, terms, 50, MemoryFilters(), now)
                theirs = fts5_ranking(db, user, terms, active)[:50]
                assert [m for m, _ in ours] == [m for m, _ in theirs], terms
                assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=1e-9), terms
                compared += len(ours)
                # and the rows were ranked here, not by FTS5 (the user owns a small share), unless a
                # term is several tokens ("e-mail": a phrase, left to FTS5)
                if any(len(fts_tokens(t, _porter().stemWords)) != 1 for t in terms):
                    continue
                ranked_here += 1
                with store.connection() as conn:
                    own = store.keyword_index._small_bm25(
                        conn, _TABLES[MemoryStatus.ACTIVE], user, terms, len(active) + 3,
                        fts5_match(user, terms),
                    )  # fmt: skip
                assert own is not None and [m for m, _ in own if m in active][: len(ours)] == [m for m, _ in ours]
        assert compared > 100 and ranked_here > 20


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Café NAÏVE résumés", ["cafe", "naiv", "resum"]),
        ("o'brien's e-mail, 2024!", ["o", "brien", "s", "e", "mail", "2024"]),
        ("Zürich → Kraków", ["zurich", "krakow"]),
    ],
)
def test_tokens_are_the_index_tokenizers(tmp_path: Path, text: str, want: list[str]) -> None:
    assert fts_tokens(text, _porter().stemWords) == want
    # and FTS5 itself agrees: each token matches the row as a term of its own
    with sqlite3.connect(tmp_path / "t.db") as con:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        con.execute("INSERT INTO t(body) VALUES (?)", (text,))
        assert sorted(r[0] for r in con.execute("SELECT term FROM v")) == sorted(set(want))


def test_varints_read_sqlites_encoding() -> None:
    assert varints(bytes([0x05])) == [5]
    assert varints(bytes([0x81, 0x00, 0x7F])) == [128, 127]
    assert varints(bytes([0xFF] * 8 + [0x01])) == [(1 << 64) - 255]


def test_a_stale_count_above_the_rows_weighs_like_a_common_term() -> None:
    # a term's row count is read a few seconds ago; deletions since may leave fewer rows than it says
    rows = [(1, ["kayak"], 3), (2, ["kayak", "kayak"], 4)]
    scores = bm25(rows, [(None, 2), ("kayak", 50)], n_rows=40, n_tokens=140)
    common = bm25(rows, [(None, 2), ("kayak", 39)], n_rows=40, n_tokens=140)
    assert scores == pytest.approx(common) and all(s < 0 for s in scores.values())
