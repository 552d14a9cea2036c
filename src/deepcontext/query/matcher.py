"""Find query patterns in many texts at once, in time linear in their total size.

The texts ("units") are joined once into a normalised string and each pattern is looked for with
``str.find``: a Latin pattern (a sequence of stems) by the
:func:`~deepcontext.query.tokens.safe_prefixes` of its first stem, each occurrence read as a word,
stemmed and compared; a CJK pattern as a plain substring. Once a pattern is found in a unit the
search jumps to that unit's end, so the work is the text size times the number of patterns.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deepcontext.query.tokens import (
    STOPWORDS,
    WORD_RE,
    content_words,
    is_cjk_char,
    normalize,
    safe_prefixes,
    stem,
)

__all__ = ["MatchStats", "Pattern", "UnitIndex", "text_pattern"]

_SEP = "\x00"


@dataclass(frozen=True, slots=True)
class Pattern:
    """What one query term (or phrase, or synonym) looks for in a text.

    ``stems``: adjacent content words (stopwords skipped) with these Snowball stems;
    ``literal``: a normalised substring (CJK text).
    """

    stems: tuple[str, ...] = ()
    literal: str = ""

    @property
    def label(self) -> str:
        return self.literal or " ".join(self.stems)


def text_pattern(text: str) -> Pattern | None:
    """The pattern a free-text term (a keyword, a synonym) is matched by; None if it has no content."""
    words = content_words(text)
    if not words:
        return None
    if any(is_cjk_char(w[0]) for w in words):
        return Pattern(literal=" ".join(normalize(text).split()))
    return Pattern(stems=tuple(stem(w) for w in words))


@dataclass(slots=True)
class MatchStats:
    """Work done by a :class:`UnitIndex` (to check it grows linearly, not to time it)."""

    units: int = 0
    chars: int = 0
    #: full passes of ``str.find`` over the joined text (one per needle)
    needle_passes: int = 0
    #: occurrences of a needle that were looked at
    candidates: int = 0
    #: words read and stemmed at an occurrence
    words_checked: int = 0


def _is_word_char(c: str) -> bool:
    return c.isalnum() and not is_cjk_char(c)


class UnitIndex:
    """Texts ("units") searched together; answers "which units contain this pattern/substring"."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        joined = _SEP.join(self._texts)
        if joined.count(_SEP) != max(0, len(self._texts) - 1):
            joined = _SEP.join(t.replace(_SEP, " ") for t in self._texts)
        self._joined = joined
        if joined.isascii():
            self._norm = joined.lower()
            lengths: Iterable[int] = (len(t) for t in self._texts)
        else:
            self._norm = normalize(joined)
            lengths = (len(p) for p in self._norm.split(_SEP))
        starts: list[int] = []
        pos = 0
        for n in lengths:
            starts.append(pos)
            pos += n + 1
        self._starts = starts
        self._orig_starts: list[int] | None = None
        self.stats = MatchStats(units=len(self._texts), chars=len(self._norm))

    def __len__(self) -> int:
        return len(self._texts)

    def _unit_end(self, u: int, starts: list[int] | None = None) -> int:
        st = self._starts if starts is None else starts
        return st[u + 1] - 1 if u + 1 < len(st) else (len(self._norm) if starts is None else len(self._joined))

    def _unit_of(self, pos: int, starts: list[int] | None = None) -> int:
        return bisect_right(self._starts if starts is None else starts, pos) - 1

    def find(self, pattern: Pattern) -> set[int]:
        """Indexes of the units containing ``pattern``."""
        if not self._texts:
            return set()
        if pattern.literal:
            return self._find_literal(self._norm, pattern.literal, None)
        if not pattern.stems:
            return set()
        norm = self._norm
        first, rest = pattern.stems[0], pattern.stems[1:]
        hits: set[int] = set()
        stats = self.stats
        for needle in safe_prefixes(first):
            if not needle:
                continue
            stats.needle_passes += 1
            i = norm.find(needle)
            while i != -1:
                stats.candidates += 1
                u = self._unit_of(i)
                if u in hits:
                    nxt = self._unit_end(u)
                elif i > 0 and _is_word_char(norm[i - 1]):
                    nxt = i + 1
                else:
                    m = WORD_RE.match(norm, i)
                    nxt = m.end() if m else i + 1
                    stats.words_checked += 1
                    if m and stem(m.group()) == first and (not rest or self._follows(m.end(), rest, u)):
                        hits.add(u)
                        nxt = self._unit_end(u)
                i = norm.find(needle, nxt)
        return hits

    def _follows(self, pos: int, rest: tuple[str, ...], u: int) -> bool:
        want = 0
        for m in WORD_RE.finditer(self._norm, pos, self._unit_end(u)):
            w = m.group()
            if len(w) < 2 or w in STOPWORDS or w.isdigit():
                continue
            self.stats.words_checked += 1
            if stem(w) != rest[want]:
                return False
            want += 1
            if want == len(rest):
                return True
        return False

    def _find_literal(self, haystack: str, needle: str, starts: list[int] | None) -> set[int]:
        hits: set[int] = set()
        if not needle:
            return hits
        self.stats.needle_passes += 1
        i = haystack.find(needle)
        while i != -1:
            self.stats.candidates += 1
            u = self._unit_of(i, starts)
            hits.add(u)
            i = haystack.find(needle, self._unit_end(u, starts))
        return hits

    def find_verbatim(self, text: str) -> set[int]:
        """Units whose original (not normalised) text contains ``text``, case-sensitively."""
        if not text or not self._texts or _SEP in text:
            return set()
        if self._orig_starts is None:
            if self._joined.isascii():
                self._orig_starts = self._starts
            else:
                starts, pos = [], 0
                for t in self._texts:
                    starts.append(pos)
                    pos += len(t) + 1
                self._orig_starts = starts
        return self._find_literal(self._joined, text, self._orig_starts)
