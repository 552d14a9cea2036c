"""Rule-based relation extraction over a rewritten (third-person) sentence.

A subject is an entity span just before a predicate (auxiliaries and adverbs between), or the subject
of the previous, coordinated predicate; "we" maps to the speaker when the caller says so. Objects are
entity spans or, for preferences and possessions, short lower-case phrases; lists are followed.
Negation turns likes into dislikes and drops other relations; wishes drop the relation; plans carry
``planned: true`` and past states ``past: true``. Family relations read "<named person> <relation>
<owner>" ("Caroline's sister Sarah" -> (Sarah, sister_of, Caroline)). The rules live in
:mod:`~deepcontext.extract.relation_rules` and :mod:`~deepcontext.extract.relation_custom`.
"""

from __future__ import annotations

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.relation_custom import CUSTOM, possessives
from deepcontext.extract.relation_parts import RelationHit, RelCtx, gerund
from deepcontext.extract.relation_rules import RULES, apply_rule

__all__ = ["RelationHit", "find_relations", "gerund"]


def find_relations(
    text: str, spans: list[EntitySpan], words: frozenset[str] | set[str], *, we_subject: str | None = None, future: bool = False
) -> list[RelationHit]:
    """Relations stated in one rewritten sentence.

    ``spans`` are its entities (from :func:`~deepcontext.extract.entities.find_entities`), ``words`` its
    lower-case word set (used to skip rules cheaply), ``we_subject`` the entity "we" stands for;
    ``future`` says the sentence speaks of the future (a trip "next Friday"), which marks moves, visits
    and jobs as ``planned``.
    """
    ctx = RelCtx(text, spans, {sp.start: sp for sp in spans}, we_subject, [], [], future)
    if any(sp.possessive for sp in spans):
        possessives(ctx)
    for triggers, fn in CUSTOM:
        if not triggers.isdisjoint(words):
            fn(ctx)
    for rule in RULES:
        if not rule.triggers.isdisjoint(words):
            apply_rule(ctx, rule)
    # deduplicate, keep the first
    seen: set[tuple[str, str, str]] = set()
    out: list[RelationHit] = []
    for r in ctx.out:
        key = (r.source.lower(), r.relation, r.target.lower())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
