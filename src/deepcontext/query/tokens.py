"""Tokens for intent scoring: Unicode words, Snowball stems, CJK characters and bigrams.

A word is a maximal run of Unicode letters and digits; runs of CJK characters (written without
spaces) become their characters plus overlapping bigrams. Words are stemmed with the English
Snowball stemmer, so inflections meet (``connection``/``connections`` -> ``connect``). Text is
compared in a normal form (NFKC, then ``casefold``). The normal form, the stemmer, the CJK ranges
and the stop words are :mod:`deepcontext.text`'s. :func:`safe_prefixes` lets the matcher find every
word of a text that stems to a given stem with plain substring search (see ``matcher``).
"""

from __future__ import annotations

import re

from deepcontext.text import CJK_CHARS, cjk_grams, normalize, stem
from deepcontext.text import QUERY_STOPWORDS as STOPWORDS
from deepcontext.text import is_cjk as is_cjk_char

__all__ = [
    "CJK_CHARS",
    "STOPWORDS",
    "cjk_grams",
    "content_words",
    "is_cjk_char",
    "normalize",
    "query_words",
    "safe_prefixes",
    "stem",
    "tokenize",
]

#: A CJK run, or a word of any other script (letters and digits, no underscore).
TOKEN_RE = re.compile(rf"(?P<cjk>[{CJK_CHARS}]+)|(?P<word>[^\W_{CJK_CHARS}]+)")
#: A non-CJK word, used by the matcher to read the word that starts at a found prefix.
WORD_RE = re.compile(rf"[^\W_{CJK_CHARS}]+")

# Particles and question words dropped from CJK queries before bigrams are formed: they would
# otherwise be "query terms" that every text contains. Hangul is left alone (its particles are
# syllables that also occur inside words).
_CJK_STOP_SEQUENCES = (
    "什么",
    "怎么样",
    "怎么",
    "如何",
    "哪些",
    "哪个",
    "为什么",
    "是否",
    "有没有",
    "多少",
    "ですか",
    "ますか",
    "ですが",
    "です",
    "ます",
    "でしょうか",
)
_CJK_STOP_CHARS = frozenset("的了吗呢吧啊呀么是在和与及或把被给都就很请有我你您他她它们谁这那哪几のはがをにでとへやかねよ")
_CJK_STOP_RE = re.compile("|".join(sorted(_CJK_STOP_SEQUENCES, key=len, reverse=True)))


def safe_prefixes(stem_: str) -> tuple[str, ...]:
    """Strings such that every word whose Snowball stem is ``stem_`` starts with one of them.

    The English Snowball algorithm only rewrites the end of a word, and the only endings it can
    *introduce* are a final ``e`` (``hoped`` -> ``hope``, ``-ation`` -> ``-ate``), ``i`` (``y`` ->
    ``i``) and ``ble``/``bl`` (``-bility``). Dropping those gives a prefix of the original word.
    A handful of irregular forms (``dying`` -> ``die``, ``skies`` -> ``sky``) get a prefix of their
    own. Checked against 476k distinct words (stdlib and site-packages sources, LoCoMo
    dialogues); ``tests/query/test_tokens.py`` keeps checking it.
    """
    s = stem_
    if len(s) >= 4 and s.endswith("ble"):
        p = s[:-2]
    elif len(s) >= 3 and s.endswith(("e", "i", "bl")):
        p = s[:-1]
    else:
        p = s
    out = [p]
    if len(s) == 3 and s.endswith("ie"):  # dying -> die, lying -> lie, fying -> fie
        out.append(s[0] + "y")
    if len(s) >= 2 and s.endswith("y"):  # skies -> sky
        out.append(s[:-1] + "i")
    # drop prefixes that another prefix already covers
    out = sorted(set(out), key=len)
    kept: list[str] = []
    for q in out:
        if not any(q.startswith(k) for k in kept):
            kept.append(q)
    return tuple(kept)


def _keep_word(w: str) -> bool:
    return len(w) >= 2 and w not in STOPWORDS and not w.isdigit()


def query_cjk_runs(run: str) -> list[str]:
    """A CJK run of a query with particles and question words removed, split where they were."""
    cleaned = _CJK_STOP_RE.sub(" ", run)
    cleaned = "".join(" " if c in _CJK_STOP_CHARS else c for c in cleaned)
    return [r for r in cleaned.split() if r]


def query_words(text: str) -> list[tuple[str, str]]:
    """The content tokens of a query in order, as ``(kind, token)``: ``("word", w)`` for a
    normalised non-stopword word, ``("cjk", run)`` for a CJK run (particles removed)."""
    out: list[tuple[str, str]] = []
    for m in TOKEN_RE.finditer(normalize(text)):
        if m.group("cjk"):
            out.extend(("cjk", r) for r in query_cjk_runs(m.group("cjk")))
        else:
            w = m.group("word")
            if _keep_word(w):
                out.append(("word", w))
    return out


def tokenize(text: str, include_stems: bool = True) -> list[str]:
    """Distinct tokens of ``text`` in order of appearance (deepcq's ``tokenize``).

    Words are normalised, stopwords dropped; with ``include_stems`` each word is followed by its
    Snowball stem when that differs. CJK runs give their characters and bigrams.
    """
    seen: dict[str, None] = {}
    for m in TOKEN_RE.finditer(normalize(text)):
        run = m.group("cjk")
        if run:
            for g in cjk_grams(run):
                seen.setdefault(g, None)
            continue
        w = m.group("word")
        if not _keep_word(w):
            continue
        seen.setdefault(w, None)
        if include_stems:
            s = stem(w)
            if s != w and len(s) >= 2:
                seen.setdefault(s, None)
    return list(seen)


def content_words(text: str) -> list[str]:
    """Normalised non-stopword words in order, no stemming, no dedup (CJK runs kept whole)."""
    out: list[str] = []
    for m in TOKEN_RE.finditer(normalize(text)):
        run = m.group("cjk")
        if run:
            out.append(run)
        elif _keep_word(m.group("word")):
            out.append(m.group("word"))
    return out
