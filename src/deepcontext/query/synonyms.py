"""Synonym / domain-vocabulary maps (deepcq's ``vocabulary.py``).

A :class:`SynonymMap` groups terms into clusters of interchangeable terms. With
``MemorySchema(vocabulary=...)`` a query word matches a section when the section contains the word
itself or any term of a cluster the word belongs to, so "eps" in a query matches "earnings per
share" in memory and the other way round::

    vocab = load_pack("finance") | SynonymMap.from_dict({"arr": ["annual recurring revenue"]})
    schema = MemorySchema(sections=["fundamentals"], vocabulary=vocab)

Terms are compared by their Snowball stems (multi-word terms as adjacent stems; CJK terms as
substrings). Built-in packs are JSON files under ``deepcontext/query/packs/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

from deepcontext.errors import ValidationError
from deepcontext.query.matcher import Pattern, text_pattern
from deepcontext.query.tokens import content_words, normalize, stem, tokenize

__all__ = ["SynonymMap", "available_packs", "load_pack"]


def _term_pattern(term: str) -> Pattern:
    p = text_pattern(term)
    if p is None:
        raise ValidationError(f"synonym term {term!r} has no content words (only stopwords/punctuation)")
    return p


def _merge_clusters(groups: Iterable[Iterable[str]]) -> tuple[frozenset[str], ...]:
    """Union the groups that share a term (compared by pattern)."""
    clusters: list[set[str]] = []
    keys: list[set[Pattern]] = []
    for group in groups:
        if isinstance(group, str):
            raise ValidationError("a synonym cluster must be a collection of terms, not a string")
        terms = {" ".join(str(t).split()).lower() for t in group if str(t).strip()}
        group_keys = {_term_pattern(t) for t in terms}
        overlapping = [i for i, ks in enumerate(keys) if ks & group_keys]
        for i in reversed(overlapping):
            terms |= clusters.pop(i)
            group_keys |= keys.pop(i)
        if terms:
            clusters.append(terms)
            keys.append(group_keys)
    return tuple(frozenset(c) for c in clusters)


@dataclass(frozen=True)
class SynonymMap:
    """Clusters of terms treated as interchangeable for scoring; expansion is symmetric."""

    _clusters: tuple[frozenset[str], ...] = ()
    _patterns: tuple[tuple[Pattern, ...], ...] = field(init=False, repr=False, compare=False)
    _by_stem: dict[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _by_word: dict[str, int] = field(init=False, repr=False, compare=False)
    _expansions: tuple[frozenset[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        clusters = _merge_clusters(self._clusters)
        patterns: list[tuple[Pattern, ...]] = []
        by_stem: dict[str, list[int]] = {}
        by_word: dict[str, int] = {}
        expansions: list[frozenset[str]] = []
        for i, cluster in enumerate(clusters):
            pats = tuple(sorted({_term_pattern(t) for t in cluster}, key=lambda p: p.label))
            patterns.append(pats)
            tokens: set[str] = set()
            for term in cluster:
                tokens.update(tokenize(term, include_stems=True))
                words = content_words(term)
                if len(words) == 1:
                    by_word[words[0]] = i
                    by_word[stem(words[0])] = i
            for p in pats:
                for s in p.stems:
                    by_stem.setdefault(s, []).append(i)
                if p.literal:
                    by_stem.setdefault(p.literal, []).append(i)
            expansions.append(frozenset(tokens))
        object.__setattr__(self, "_clusters", clusters)
        object.__setattr__(self, "_patterns", tuple(patterns))
        object.__setattr__(self, "_by_stem", {k: tuple(dict.fromkeys(v)) for k, v in by_stem.items()})
        object.__setattr__(self, "_by_word", by_word)
        object.__setattr__(self, "_expansions", tuple(expansions))

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Sequence[str]]) -> SynonymMap:
        """Each key plus its listed synonyms forms one cluster; overlapping clusters merge."""
        if not isinstance(mapping, Mapping):
            raise ValidationError("SynonymMap.from_dict() takes a mapping {term: [synonyms]}")
        groups = []
        for key, syns in mapping.items():
            if isinstance(syns, str):
                syns = [syns]
            groups.append(frozenset([key, *syns]))
        return cls(tuple(groups))

    @property
    def clusters(self) -> tuple[frozenset[str], ...]:
        return self._clusters

    def expand(self, token: str) -> frozenset[str]:
        """Tokens (words and stems) of every term in ``token``'s cluster, ``token`` included.
        Just ``{token}`` when the token is in no cluster (single-word terms only)."""
        t = normalize(token).strip()
        i = self._by_word.get(t)
        if i is None:
            i = self._by_word.get(stem(t))
        return self._expansions[i] | {token} if i is not None else frozenset({token})

    def expand_text(self, text: str) -> frozenset[str]:
        """Union of the expansions of every cluster with a term occurring in ``text``."""
        from deepcontext.query.matcher import UnitIndex

        if not self._clusters:
            return frozenset()
        index = UnitIndex([text])
        found = [i for i, pats in enumerate(self._patterns) if any(index.find(p) for p in pats)]
        return frozenset().union(*(self._expansions[i] for i in found))

    def alternatives(self, key: str) -> tuple[Pattern, ...]:
        """Patterns of every term in a cluster that the stem (or CJK term) ``key`` belongs to."""
        out: dict[Pattern, None] = {}
        for i in self._by_stem.get(key, ()):
            for p in self._patterns[i]:
                out.setdefault(p, None)
        return tuple(out)

    def __or__(self, other: SynonymMap) -> SynonymMap:
        """Compose two maps (a built-in pack plus your own terms)."""
        if not isinstance(other, SynonymMap):
            return NotImplemented
        return SynonymMap(self._clusters + other._clusters)


def available_packs() -> list[str]:
    """Names of the built-in vocabulary packs."""
    pack_dir = resources.files("deepcontext.query") / "packs"
    return sorted(p.name[:-5] for p in pack_dir.iterdir() if p.name.endswith(".json"))


def load_pack(name: str) -> SynonymMap:
    """A built-in pack (``packs/{name}.json``: a flat ``{term: [synonym, ...]}`` object)."""
    packs = available_packs()
    if name not in packs:
        raise ValidationError(f"unknown vocabulary pack {name!r}; available: {packs}", field="name")
    raw = (resources.files("deepcontext.query") / "packs" / f"{name}.json").read_text(encoding="utf-8")
    return SynonymMap.from_dict(json.loads(raw))
