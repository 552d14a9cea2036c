"""Rule-based relation extraction over a rewritten (third-person) sentence.

The sentence has already been rewritten ("I work at Acme" -> "Caroline works at Acme") and its entities
found, so a subject is always an entity span: the speaker, a named person, an organisation. A rule is a
predicate pattern ending where its object starts; the subject is the entity just before the predicate,
separated only by auxiliaries and adverbs ("Caroline has really been working at ..."), or the subject of
the previous predicate when the verb phrases are coordinated ("... and works at ..."). ``we`` maps to the
speaker when the caller says so.

Objects are entity spans, or, for preferences and possessions, short lower-case phrases (1-3 words,
"hiking", "two kids", "cooking" from "to cook"); lists are followed ("hiking, swimming and reading").
Negation flips likes into dislikes and drops other relations; wishes and conditionals ("would love to",
"wants to") drop the relation; future plans keep it with ``planned: true``; past states ("worked at",
"used to live in") carry ``past: true``.

Relations: works_at, works_as, colleague_of, studies_at, lives_in, from, born_in, moved_to, visited, likes,
dislikes, prefers, allergic_to, uses, has, learns, plays, speaks, member_of, and family / social ones
(sister_of, brother_of, mother_of, father_of, child_of, married_to, partner_of, friend_of, ...), which
read "<named person> <relation> <owner>": "Caroline's sister Sarah" -> (Sarah, sister_of, Caroline).
"""

from __future__ import annotations

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.relation_custom import CUSTOM, possessives
from deepcontext.extract.relation_parts import RelationHit, RelCtx, gerund
from deepcontext.extract.relation_rules import RULES, apply_rule

__all__ = ["RelationHit", "find_relations", "gerund"]


def find_relations(text: str, spans: list[EntitySpan], words: frozenset[str] | set[str], *,
                   we_subject: str | None = None, future: bool = False) -> list[RelationHit]:
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
