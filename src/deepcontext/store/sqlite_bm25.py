"""FTS5's bm25, computed here for the few rows of a user who owns a small share of the keyword index.

FTS5 ranks a query's rows by bm25, and to weigh each term it counts the rows holding the term in the
whole table, by reading the term's posting list on every query: with 10,000 users that is a few
hundred thousand entries for an everyday word, milliseconds for the user's hundred rows. The same
formula is computed here from what the index keeps anyway: the table's row count and token total
(its averages record), each row's size (its docsize record), each term's row count (fts5vocab, the
reads cached for a few seconds as the keyword index already caches them) and each row's text,
tokenized as the table's tokenizer does (``porter unicode61 remove_diacritics 2``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["bm25", "fts_tokens", "rank_rows", "sizes_of", "varints"]

#: FTS5's bm25 parameters
K1 = 1.2
B = 0.75

# unicode61's token characters: letters, digits and private-use characters; the rest separates
_TOKEN = re.compile(r"[^\W_]+|[\ue000-\uf8ff]+")


def fts_tokens(text: str, stem: Callable[[list[str]], list[str]]) -> list[str]:
    """The tokens FTS5's ``porter unicode61 remove_diacritics 2`` makes of ``text``: case folded,
    diacritics removed, split at anything but letters and digits, each stemmed."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(ch))
    tokens = _TOKEN.findall(folded)
    # FTS5's porter step leaves tokens under 3 or over 64 characters as they are
    todo = [i for i, t in enumerate(tokens) if 3 <= len(t) <= 64]
    for i, stemmed in zip(todo, stem([tokens[i] for i in todo]), strict=True):
        tokens[i] = stemmed
    return tokens


def varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another (FTS5's averages and docsize records):
    big-endian, seven bits a byte while the high bit is set, the ninth byte whole."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def bm25(
    rows: Sequence[tuple[int, Sequence[str], int]],
    phrases: Sequence[tuple[str | None, int]],
    n_rows: int,
    n_tokens: int,
) -> dict[int, float]:
    """FTS5's ``bm25()`` of each row (lower is better, as FTS5 returns it).

    ``rows``: (rowid, its body's tokens, its size in tokens over all columns); ``phrases``: (token,
    rows holding it in the table) per phrase of the query, the token None for the user's own token
    (one instance in every row asked about); ``n_rows`` and ``n_tokens``: the table's rows and tokens
    over all columns."""
    avgdl = n_tokens / n_rows if n_rows else 1.0
    idf = []
    for _, hits in phrases:
        # a count read a few seconds ago may exceed the rows now (deletions since): the floor, as for a common term
        ratio = (n_rows - hits + 0.5) / (hits + 0.5)
        value = math.log(ratio) if ratio > 0 else 0.0
        idf.append(value if value > 0.0 else 1e-6)
    scores: dict[int, float] = {}
    for rowid, tokens, size in rows:
        norm = K1 * (1 - B + B * size / avgdl)
        score = 0.0
        for (token, _), weight in zip(phrases, idf, strict=True):
            freq = 1 if token is None else tokens.count(token)
            if freq:
                score += weight * (freq * (K1 + 1.0)) / (freq + norm)
        scores[rowid] = -score
    return scores


def rank_rows(scores: dict[int, float]) -> list[tuple[int, float]]:
    """Best first, as ``ORDER BY bm25`` returns them (ties by rowid)."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]))


def sizes_of(raw: Any) -> dict[int, int]:
    """Row sizes over all columns from docsize rows (id, blob)."""
    return {int(rowid): sum(varints(blob)) for rowid, blob in raw}
