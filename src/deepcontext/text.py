"""Small text utilities shared by ingest, keyword search and the graph leg.

Word tokens are Unicode-aware: Latin, Cyrillic, Greek... words are kept whole; Chinese, Japanese
and Korean runs (written without spaces) are split into single characters plus overlapping
bigrams, so a keyword index over them still matches a query.

The query scorer (:mod:`deepcontext.query.tokens`) builds on the same pieces: the CJK ranges, the
normal form, the Snowball stemmer and its own stop words (:data:`QUERY_STOPWORDS`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = [
    "CJK_CHARS",
    "QUERY_STOPWORDS",
    "STOPWORDS",
    "cjk_grams",
    "cjk_split",
    "entity_norm",
    "query_ngrams",
    "content_hash",
    "is_cjk",
    "keyword_terms",
    "normalize",
    "normalize_for_hash",
    "search_text",
    "stem",
    "word_tokens",
]

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_CJK_RANGES = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK ext A
    (0x4E00, 0x9FFF),  # CJK unified
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility
    (0x20000, 0x2FA1F),  # CJK ext B..F, compat supplement
)

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves also just really like get got would will shall may might must
    im ive id dont doesnt didnt cant wont yeah yes ok okay oh hey hi hello thanks thank please""".split()
)


#: character class body of the scripts written without spaces (kana, CJK ideographs, Hangul)
CJK_CHARS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_RE = re.compile(f"[{CJK_CHARS}]")


def is_cjk(ch: str) -> bool:
    return _CJK_RE.match(ch) is not None


def cjk_split(token: str) -> list[str]:
    """Split a token containing CJK characters into its characters plus overlapping bigrams."""
    if _CJK_RE.search(token) is None:
        return [token]
    out: list[str] = []
    run: list[str] = []
    other: list[str] = []

    def flush_run() -> None:
        if run:
            out.extend(run)
            out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
            run.clear()

    def flush_other() -> None:
        if other:
            out.append("".join(other))
            other.clear()

    for c in token:
        if is_cjk(c):
            flush_other()
            run.append(c)
        else:
            flush_run()
            other.append(c)
    flush_run()
    flush_other()
    return out


def word_tokens(text: str) -> list[str]:
    """Lower-cased word tokens, CJK split into characters and bigrams."""
    out: list[str] = []
    for m in _WORD_RE.finditer(text.lower()):
        tok = m.group(0).replace("’", "'")
        out.extend(cjk_split(tok))
    return out


def keyword_terms(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Distinct terms for a keyword query, in order of first appearance."""
    seen: dict[str, None] = {}
    for tok in word_tokens(text):
        if drop_stopwords and tok in STOPWORDS:
            continue
        if tok.endswith("'s"):
            tok = tok[:-2]
        tok = tok.replace("'", "")
        if tok:
            seen.setdefault(tok, None)
    return list(seen)


def search_text(text: str) -> str:
    """The form of a text given to the keyword index: tokens joined by spaces."""
    return " ".join(t.replace("'", "") for t in word_tokens(text))


def normalize_for_hash(text: str) -> str:
    """Case-, width- and whitespace-insensitive form used to spot exact duplicates."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = re.sub(r"\s+", " ", t).strip()
    return t.rstrip(".!?。！？ ")


def content_hash(text: str, *parts: Iterable[str] | str) -> str:
    h = hashlib.sha256(normalize_for_hash(text).encode("utf-8"))
    for p in parts:
        h.update(b"\x00")
        h.update((p if isinstance(p, str) else "\x01".join(p)).encode("utf-8"))
    return h.hexdigest()[:32]


def entity_norm(name: str) -> str:
    """The normalised form of an entity name: lower-case word tokens joined by spaces, possessive
    ``'s`` dropped. Query n-grams are normalised the same way, so matching is by whole words and
    case-insensitive ("Acme Corp." matches "acme corp", "My" never matches "mycology")."""
    toks = []
    for t in word_tokens(name):
        if t.endswith("'s"):
            t = t[:-2]
        t = t.replace("'", "")
        if t:
            toks.append(t)
    return " ".join(toks)


def query_ngrams(text: str, max_n: int = 5) -> list[str]:
    """Every run of 1..max_n consecutive word tokens of ``text`` (normalised like entity names),
    skipping runs made only of stopwords."""
    toks = entity_norm(text).split()
    out: dict[str, None] = {}
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            run = toks[i : i + n]
            if all(t in STOPWORDS for t in run):
                continue
            out.setdefault(" ".join(run), None)
    return list(out)


# --- the query scorer's pieces ---------------------------------------------------------------------
#: stop words of questions put to a memory (deepcq's list): broader than :data:`STOPWORDS`, since
#: the scorer weighs every word left, where the keyword index only needs the noise gone
QUERY_STOPWORDS: frozenset[str] = frozenset(
    """a an the and or but in on at to for of with by from is are was were be been being have has had
    do does did will would could should may might shall can it its this that these those i me my we our
    you your he she him her his hers they them their what which who whom how when where why all any both
    each few more most other some such no not only same so than too very just about up down out if then
    as also into through during before after above below between while although because since until
    unless however therefore there here now show tell get give let make see know go come think say want
    look use find take much many lot like new good right old long little own first last next back over
    again once am s re ve ll d please""".split()
)


def normalize(text: str) -> str:
    """The form texts are compared in: NFKC, then casefold. ASCII text is only lower-cased."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def cjk_grams(run: str) -> list[str]:
    """Characters plus overlapping bigrams of a CJK run (``数据库`` -> 数 据 库 数据 据库)."""
    chars = list(run)
    return chars + [run[i : i + 2] for i in range(len(run) - 1)]


@lru_cache(maxsize=1)
def _snowball() -> Any:
    import Stemmer  # type: ignore[import-not-found]  # PyStemmer (C Snowball stemmers), on first use

    return Stemmer.Stemmer("english")


_STEM_CACHE: dict[str, str] = {}
_STEM_CACHE_MAX = 200_000


def stem(word: str) -> str:
    """English Snowball stem of a normalised word (``connections`` -> ``connect``)."""
    s = _STEM_CACHE.get(word)
    if s is None:
        s = _snowball().stemWord(word)
        if len(_STEM_CACHE) >= _STEM_CACHE_MAX:
            _STEM_CACHE.clear()
        _STEM_CACHE[word] = s
    return s
