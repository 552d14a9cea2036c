"""What a query looks for: its terms (with stems, CJK bigrams, synonyms), phrases and anchors.

A *term* is one content word of the query (a Snowball stem) or one CJK run (particles removed).
A Latin term is found or not; a CJK run is made of its bigrams and earns partial credit, the
share of its bigrams found, so a long Chinese or Korean word is not all-or-nothing. A section's
token score is the mean credit of the query's terms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from deepcontext.query.anchors import extract_literal_anchors
from deepcontext.query.matcher import Pattern
from deepcontext.query.synonyms import SynonymMap
from deepcontext.query.tokens import query_words, stem

__all__ = ["QueryPlan", "Term", "content_pattern_string", "extract_phrases", "plan_query"]


@dataclass(frozen=True, slots=True)
class Term:
    """One query term; ``components`` each hold alternative patterns (credit = share found)."""

    surface: str
    key: str
    components: tuple[tuple[Pattern, ...], ...]
    is_cjk: bool = False


@dataclass(frozen=True, slots=True)
class QueryPlan:
    query: str
    terms: tuple[Term, ...]
    #: (label, pattern) of each stemmed n-gram of the query (phrase matching)
    phrases: tuple[tuple[str, Pattern], ...]
    anchors: tuple[str, ...]

    @property
    def has_cjk(self) -> bool:
        """True when a term is written in a CJK script."""
        return any(t.is_cjk for t in self.terms)

    def patterns(self) -> list[Pattern]:
        """Every distinct pattern the plan needs looked up."""
        out: dict[Pattern, None] = {}
        for t in self.terms:
            for comp in t.components:
                for p in comp:
                    out.setdefault(p, None)
        for _, p in self.phrases:
            out.setdefault(p, None)
        return list(out)


def extract_phrases(text: str, sizes: Sequence[int] = (2,)) -> set[str]:
    """The stemmed content-word n-grams of ``text`` for each size, space-joined (deepcq's
    ``extract_phrases``): "cost of goods sold" gives "cost good" and "good sold"."""
    return {label for label, _ in plan_query(text, phrase_sizes=sizes).phrases}


def plan_query(
    query: str,
    *,
    vocabulary: SynonymMap | None = None,
    phrase_sizes: Sequence[int] = (),
    anchor_patterns: Sequence[re.Pattern[str]] | None = None,
) -> QueryPlan:
    """Analyse ``query`` once; the plan is then matched against any number of texts."""
    terms: list[Term] = []
    seen: set[str] = set()
    latin_runs: list[list[str]] = [[]]
    for kind, tok in query_words(query):
        if kind == "cjk":
            latin_runs.append([])
            if tok in seen:
                continue
            seen.add(tok)
            grams = [tok] if len(tok) == 1 else list(dict.fromkeys(tok[i : i + 2] for i in range(len(tok) - 1)))
            alts = vocabulary.alternatives(tok) if vocabulary is not None else ()
            if alts:
                components: tuple[tuple[Pattern, ...], ...] = ((Pattern(literal=tok), *alts),)
            else:
                components = tuple((Pattern(literal=g),) for g in grams)
            terms.append(Term(surface=tok, key=tok, components=components, is_cjk=True))
            continue
        s = stem(tok)
        latin_runs[-1].append(s)
        if s in seen:
            continue
        seen.add(s)
        base = Pattern(stems=(s,))
        alts = tuple(p for p in vocabulary.alternatives(s) if p != base) if vocabulary is not None else ()
        terms.append(Term(surface=tok, key=s, components=((base, *alts),)))
    phrases: dict[str, Pattern] = {}
    for n in phrase_sizes:
        for run in latin_runs:
            for i in range(len(run) - n + 1):
                gram = tuple(run[i : i + n])
                phrases.setdefault(" ".join(gram), Pattern(stems=gram))
    anchors = extract_literal_anchors(query, anchor_patterns)
    return QueryPlan(query=query, terms=tuple(terms), phrases=tuple(phrases.items()), anchors=tuple(anchors))


def content_pattern_string(query: str) -> str:
    """deepcq's ``content_pattern``: a regex of the query's words, their stems and CJK bigrams."""
    latin: set[str] = set()
    cjk: set[str] = set()
    for kind, tok in query_words(query):
        if kind == "cjk":
            cjk.update([tok] if len(tok) == 1 else (tok[i : i + 2] for i in range(len(tok) - 1)))
        else:
            latin.update((tok, stem(tok)))
    alts = []
    if latin:
        alts.append(r"\b(?:" + "|".join(re.escape(t) for t in sorted(latin, key=lambda t: (-len(t), t))) + r")\b")
    alts.extend(re.escape(t) for t in sorted(cjk))
    return "(" + "|".join(alts) + ")" if alts else "(?!)"
