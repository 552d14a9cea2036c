"""Hand-written relation readers: jobs, family and possessives, possessions and pets, favourites,
pairs ("Jo and I are friends"), allergies, games and instruments."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.relation_parts import (
    ADJ,
    ANY_THING,
    LIST_RE,
    LOC_OK,
    NEG_RE,
    NUM,
    ORG_OK,
    PHRASE_STOP,
    SCHOOL_OK,
    RelationHit,
    RelCtx,
    T,
    emit,
    modality_of,
    objects_after,
    span_at,
    subjects_before,
)
from deepcontext.language.gazetteer import (
    HAS_NOUNS,
    INSTRUMENTS_SPORTS,
    JOB_NOUNS,
    KIN,
    PET_NOUNS,
    words,
)
from deepcontext.types import EntityType

__all__ = ["CUSTOM", "possessives"]


_JOB_RE = re.compile(
    r"\b(?:is|was|has\s+been|had\s+been|became|becomes|is\s+now|works?\s+as|worked\s+as|working\s+as|"
    r"(?:got|landed|started|accepted|took|found|has|had)\s+(?:a|an|the|\w+'s)\s+(?:new\s+|first\s+|dream\s+)?"
    r"(?:job|position|role)\s+as|employed\s+as)\s+(?:a|an)\s+(?P<phrase>[\w+#.-]+(?:\s+[\w+#.-]+){0,3})",
    re.IGNORECASE,
)
_AFTER_JOB_RE = re.compile(r"\s+(?:(?:working|employed|based)\s+)?(?:at|for|with|in)\s+(?:the\s+)?")
_JOB_STOP = words("the and or who that which with at for in of from to but is was very really big huge")


def _jobs(ctx: RelCtx) -> None:
    for m in _JOB_RE.finditer(ctx.text):
        # the job noun is the first word of the next four that is one ("senior Python developer")
        found = None
        for w in _OBJ_WORD_RE.finditer(ctx.text, m.start("phrase"), m.end("phrase")):
            lw = w.group(0).lower()
            if lw in _JOB_STOP:
                break
            if lw in JOB_NOUNS or (lw.endswith("s") and lw[:-1] in JOB_NOUNS):
                found = w
                break
        if found is None:
            continue
        noun = found.group(0).lower().rstrip("s") if found.group(0).lower() not in JOB_NOUNS else found.group(0).lower()
        subjects, gap = subjects_before(ctx, m.start())
        subjects = [s for s in subjects if _type_of(ctx, s) in (T.PERSON, None)]
        if not subjects:
            continue
        negated, wish, future, used_to = modality_of(gap)
        if negated or wish:
            continue
        props: dict[str, Any] = {}
        if used_to or m.group(0).split()[0].lower() in ("was", "worked") or "had been" in m.group(0).lower():
            props["past"] = True
        if future:
            props["planned"] = True
        ctx.last_subjects = subjects
        end = found.end()
        title = ctx.text[m.start("phrase") : end]
        if noun == "student":
            relation_after = "studies_at"
        else:
            relation_after = "works_at"
            emit(ctx, subjects, "works_as", [(title, None)], T.CONCEPT, None, props)
        a = _AFTER_JOB_RE.match(ctx.text, end)
        if a:
            sp, _ = span_at(ctx, a.end())
            allowed = ORG_OK if relation_after == "works_at" else SCHOOL_OK
            if sp is not None and not sp.possessive and sp.type in allowed:
                emit(ctx, subjects, relation_after, [(sp.name, sp)], None, {T.OTHER: T.ORGANIZATION}, props)


def _type_of(ctx: RelCtx, name: str) -> EntityType | None:
    for sp in ctx.spans:
        if sp.name == name:
            return sp.type
    return None


# the kinship / pet word is captured generically and checked against the word lists in Python
_POSS_KIN_RE = re.compile(
    rf"\s+(?:{ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)(?:\s*,\s*|\s+)(?:(?:who\s+is|whose\s+name\s+is|named|called|is\s+named|is\s+called)\s+)?",
    re.IGNORECASE,
)
_POSS_NAME_IS_RE = re.compile(rf"\s+(?:{ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)'s\s+name\s+is\s+", re.IGNORECASE)
_HOME_RE = re.compile(
    r"\s+(?:home\s+country|hometown|home\s+town|native\s+country|birthplace|homeland)(?:\s*,\s*|\s+(?:is|was)\s+|\s+)"
    r"(?:the\s+)?",
    re.IGNORECASE,
)
_IS_POSS_RE = re.compile(r"\s*(?:,\s*|\s+(?:is|was)\s+)$")
_IS_KIN_AFTER_RE = re.compile(rf"'s\s+(?:{ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)\b", re.IGNORECASE)


def _kin_noun(word: str) -> tuple[str, bool] | None:
    """A kinship or pet noun in singular, and whether it was plural ("friends" -> ("friend", True))."""
    w = word.lower()
    if w in KIN or w in PET_NOUNS:
        return w, False
    if w.endswith("s") and (w[:-1] in KIN or w[:-1] in PET_NOUNS):
        return w[:-1], True
    return None


def _kin_relation(kin: str) -> tuple[str, bool]:
    """The relation for a kinship / pet noun and whether it is a pet (``has``)."""
    k = kin.lower()
    if k in KIN:
        return KIN[k], False
    return "has", True


def possessives(ctx: RelCtx) -> None:
    """ "Caroline's sister Sarah", "Caroline's dog Max", "Caroline's sister's name is Sarah", "Sarah is Caroline's sister"."""
    text = ctx.text
    for owner in ctx.spans:
        if not owner.possessive or owner.type is not T.PERSON:
            continue
        after = owner.end + 2 if text.startswith("'s", owner.end) else owner.end + 1
        m = _POSS_NAME_IS_RE.match(text, after) or _POSS_KIN_RE.match(text, after)
        noun = _kin_noun(m.group("kin")) if m else None
        if m and noun is not None:
            kin, plural = noun
            relation, pet = _kin_relation(kin)
            pos = m.end()
            names: list[EntitySpan] = []
            while True:
                sp = ctx.by_start.get(pos)
                if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.name == owner.name or sp.possessive:
                    break
                names.append(sp)
                c = LIST_RE.match(text, sp.end) if plural else None
                if not c:
                    break
                pos = c.end()
            for sp in names:
                if pet:
                    ctx.out.append(RelationHit(owner.name, "has", sp.name, T.OTHER, {}, {"kind": kin}))
                else:
                    ctx.out.append(RelationHit(sp.name, relation, owner.name, T.PERSON if sp.type is T.OTHER else None))
        h = _HOME_RE.match(text, after)
        if h:  # "Caroline's home country Sweden", "Caroline's hometown is Leeds"
            sp = ctx.by_start.get(h.end())
            if sp is not None and sp.type in LOC_OK and not sp.possessive:
                ctx.out.append(RelationHit(owner.name, "from", sp.name, T.LOCATION if sp.type is T.OTHER else None))
        # "Sarah is Caroline's sister"
        k = _IS_KIN_AFTER_RE.match(text, owner.end)
        if k and k.group("kin").lower() in KIN:
            for sp in reversed(ctx.spans):
                if sp.end <= owner.start:
                    if _IS_POSS_RE.fullmatch(text[sp.end : owner.start]) and sp.type in (T.PERSON, T.OTHER) and not sp.possessive:
                        relation, _ = _kin_relation(k.group("kin"))
                        ctx.out.append(RelationHit(sp.name, relation, owner.name, T.PERSON if sp.type is T.OTHER else None))
                    break


_HAS_NAMED_RE = re.compile(
    rf"\b(?:ha(?:s|d|ve)|got|owns?|owned|adopt(?:ed|s)?|bought|rescued|gets|is\s+getting)\s+{NUM}\s+"
    rf"(?:[\w-]+\s+){{0,2}}?(?P<noun>[a-z]+)\s*,?\s+(?:who\s+is\s+|whose\s+name\s+is\s+)?(?:named|called)\s+",
    re.IGNORECASE,
)
_HAS_THING_RE = re.compile(
    rf"\b(?:ha(?:s|d|ve)|owns?|owned|adopt(?:ed|s)?|bought|rescued)\s+(?P<obj>{NUM}\s+[\w-]+(?:\s+[\w-]+){{0,2}})",
    re.IGNORECASE,
)
_NAMED_AFTER_RE = re.compile(r"\s*,?\s+(?:who\s+is\s+)?(?:named|called)\b", re.IGNORECASE)
_OBJ_WORD_RE = re.compile(r"[\w-]+")
_AND_NAMED_RE = re.compile(
    rf"\s*,?\s+(?:and\s+)?{NUM}\s+(?:[\w-]+\s+){{0,2}}?(?P<noun>[a-z]+)\s*,?\s+(?:named|called)\s+",
    re.IGNORECASE,
)
_ARTICLE_RE = re.compile(r"^(?:a|an|the|another|one)\s+", re.IGNORECASE)


def _has(ctx: RelCtx) -> None:
    for rx, named in ((_HAS_NAMED_RE, True), (_HAS_THING_RE, False)):
        for m in rx.finditer(ctx.text):
            subjects, gap = subjects_before(ctx, m.start())
            if not subjects:
                continue
            negated, wish, future, used_to = modality_of(gap)
            if negated or wish or future:
                continue
            props = {"past": True} if used_to or m.group(0).lower().startswith("had") else {}
            if named:
                noun = m.group("noun").lower()
                if noun.endswith("s") and noun[:-1] in PET_NOUNS | KIN.keys():
                    noun = noun[:-1]
            else:
                # the first possession word among the next words: "a golden retriever", "two kids"
                tokens = list(_OBJ_WORD_RE.finditer(ctx.text, m.start("obj"), m.end("obj")))
                cut = next((i for i, w in enumerate(tokens) if i > 0 and w.group(0).lower() in HAS_NOUNS), None)
                if cut is None or _NAMED_AFTER_RE.match(ctx.text, tokens[cut].end()):
                    continue
                noun = tokens[cut].group(0).lower()
                obj_text = ctx.text[m.start("obj") : tokens[cut].end()]
            ctx.last_subjects = subjects
            if named:
                sp, _ = span_at(ctx, m.end())
                if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.possessive:
                    continue
                plural = m.group("noun").lower().endswith("s") and noun != m.group("noun").lower()
                while sp is not None:
                    if noun in KIN:
                        for s in subjects:
                            ctx.out.append(RelationHit(sp.name, KIN[noun], s, T.PERSON if sp.type is T.OTHER else None, props))
                    else:
                        pet = noun in PET_NOUNS or noun.rstrip("s") in PET_NOUNS
                        kind = noun.rstrip("s") if noun not in PET_NOUNS and pet else noun
                        for s in subjects:
                            ctx.out.append(RelationHit(s, "has", sp.name, T.OTHER if pet else None, props, {"kind": kind}))
                    if plural:  # "two cats named Milo and Luna"
                        c = LIST_RE.match(ctx.text, sp.end)
                        nxt = ctx.by_start.get(c.end()) if c else None
                        if nxt is not None and nxt.type in (T.PERSON, T.OTHER) and not nxt.possessive:
                            sp = nxt
                            continue
                    more = _AND_NAMED_RE.match(ctx.text, sp.end)  # "... and a daughter named Mia"
                    if not more:
                        break
                    noun = more.group("noun").lower()
                    sp = ctx.by_start.get(more.end())
                    if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.possessive:
                        break
            else:
                obj = _ARTICLE_RE.sub("", obj_text.lower()).strip()
                parts = obj.split()
                if len(parts) > 3:
                    obj = " ".join(parts[-3:])
                emit(ctx, subjects, "has", [(obj, None)], T.CONCEPT, None, props)


_CATEGORY_TYPES = {
    **dict.fromkeys(words("band group team company brand restaurant cafe café bar store shop club label"), T.ORGANIZATION),
    **dict.fromkeys(
        words("singer artist actor actress author writer musician player rapper athlete person comedian director poet painter"),
        T.PERSON,
    ),
    **dict.fromkeys(words("city country place destination spot beach park town island"), T.LOCATION),
    **dict.fromkeys(words("movie film book novel show series song album game app podcast"), T.PRODUCT),
}


def _category_retype(category: str) -> dict[EntityType, EntityType] | None:
    """ "favourite band" -> a band is an organisation (when the recogniser said "other")."""
    t = _CATEGORY_TYPES.get(category.split()[-1].rstrip("s") if category else "") or _CATEGORY_TYPES.get(category)
    return {T.OTHER: t} if t else None


_FAV_RE = re.compile(
    r"'s\s+(?:(?:all-time|all\s+time|absolute|current|new)\s+)?favou?rite\s+(?P<cat>[a-z][a-z -]{0,25}?)\s+(?:is|was|are|has\s+always\s+been)\s+",
    re.IGNORECASE,
)
_FAV_AFTER_RE = re.compile(r"\s+(?:is|was|are)\s+$", re.IGNORECASE)
_IS_FAV_RE = re.compile(
    r"'s\s+(?:(?:all-time|absolute|current|new)\s+)?favou?rite\b(?:\s+(?P<cat>[a-z][a-z-]{1,20}))?", re.IGNORECASE
)


def _favourites(ctx: RelCtx) -> None:
    text = ctx.text
    for owner in ctx.spans:
        if not owner.possessive or owner.type is not T.PERSON:
            continue
        m = _FAV_RE.match(text, owner.end)
        if m:
            targets = objects_after(ctx, m.end(), ANY_THING, True)
            cat = m.group("cat").strip().lower()
            emit(ctx, [owner.name], "prefers", targets, T.PREFERENCE, _category_retype(cat), {"category": cat})
            continue
        f = _IS_FAV_RE.match(text, owner.end)
        if f:  # "Sushi is Caroline's favourite food" / "Taylor Swift is Caroline's favorite singer"
            before = text[: owner.start]
            g = _FAV_AFTER_RE.search(before)
            if not g:
                continue
            subj_end = g.start()
            target: tuple[str, EntitySpan | None] | None = None
            for sp in ctx.spans:
                if sp.end == subj_end and not sp.possessive:
                    target = (sp.name, sp)
            if target is None:
                words = re.findall(r"[A-Za-z][a-z'-]*", before[max(0, subj_end - 30) : subj_end])
                if 1 <= len(words) <= 3 and words and all(w.lower() not in PHRASE_STOP for w in words):
                    target = (" ".join(words).lower(), None)
                elif words and words[-1].lower() not in PHRASE_STOP:
                    target = (words[-1].lower(), None)
            if target is not None:
                cat = (f.group("cat") or "").lower()
                props = {"category": cat} if cat else {}
                emit(ctx, [owner.name], "prefers", [target], T.PREFERENCE, _category_retype(cat), props)


_PAIR_RE = re.compile(
    r"\b(?:are|were|became|become|have\s+been|got|just\s+got)\s+(?:best\s+|good\s+|close\s+|old\s+|happily\s+)?"
    r"(?P<rel>friends|siblings|sisters|brothers|colleagues|coworkers|co-workers|roommates|neighbors|neighbours|married"
    r"|engaged|cousins|partners)\b",
    re.IGNORECASE,
)
_PAIR_REL = {
    "friends": "friend_of",
    "siblings": "sibling_of",
    "sisters": "sister_of",
    "brothers": "brother_of",
    "colleagues": "colleague_of",
    "coworkers": "colleague_of",
    "co-workers": "colleague_of",
    "roommates": "roommate_of",
    "neighbors": "neighbor_of",
    "neighbours": "neighbor_of",
    "married": "married_to",
    "engaged": "partner_of",
    "cousins": "cousin_of",
    "partners": "partner_of",
}


def _pairs(ctx: RelCtx) -> None:
    for m in _PAIR_RE.finditer(ctx.text):
        subjects, gap = subjects_before(ctx, m.start())
        if len(subjects) != 2 or NEG_RE.search(gap):
            continue
        a, b = subjects
        if _type_of(ctx, a) not in (T.PERSON, T.OTHER) or _type_of(ctx, b) not in (T.PERSON, T.OTHER):
            continue
        ctx.out.append(RelationHit(a, _PAIR_REL[m.group("rel").lower()], b, None))


_ALLERGY_RE = re.compile(
    r"\b(?:has|have|had)\s+(?:an?\s+)?(?:severe\s+|mild\s+|bad\s+)?(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+allerg(?:y|ies)\b",
    re.IGNORECASE,
)


def _allergy(ctx: RelCtx) -> None:
    for m in _ALLERGY_RE.finditer(ctx.text):
        subjects, gap = subjects_before(ctx, m.start())
        if not subjects or NEG_RE.search(gap):
            continue
        emit(ctx, subjects, "allergic_to", [(m.group("what").lower(), None)], T.CONCEPT, None, {})


_PLAYS_RE = re.compile(r"\bplay(?:s|ed|ing)?\s+(?:the\s+|some\s+|a\s+lot\s+of\s+|lots\s+of\s+|in\s+a\s+)?", re.IGNORECASE)


def _plays(ctx: RelCtx) -> None:
    for m in _PLAYS_RE.finditer(ctx.text):
        subjects, gap = subjects_before(ctx, m.start())
        if not subjects:
            continue
        negated, wish, _, used_to = modality_of(gap)
        if negated or wish:
            continue
        sp, _ = span_at(ctx, m.end())
        targets: list[tuple[str, EntitySpan | None]] = []
        if sp is not None and sp.type in (T.PRODUCT, T.OTHER, T.EVENT) and not sp.possessive:
            targets = [(sp.name, sp)]
        else:
            word = re.match(r"[a-z-]+", ctx.text[m.end() :])
            if word and word.group(0).lower() in INSTRUMENTS_SPORTS:
                targets = [(word.group(0).lower(), None)]
        if targets:
            ctx.last_subjects = subjects
            emit(ctx, subjects, "plays", targets, T.CONCEPT, None, {"past": True} if used_to else {})


CUSTOM: tuple[tuple[frozenset[str], Callable[[RelCtx], None]], ...] = (
    (words("is was been became becomes works worked working job employed"), _jobs),
    (words("has had have got own owns owned adopted adopts bought rescued gets getting"), _has),
    (words("favorite favourite"), _favourites),
    (
        words(
            "friends siblings sisters brothers colleagues coworkers co-workers roommates neighbors neighbours married "
            "engaged cousins partners"
        ),
        _pairs,
    ),
    (words("allergy allergies"), _allergy),
    (words("play plays played playing"), _plays),
)
