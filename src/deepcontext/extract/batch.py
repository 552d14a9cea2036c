"""What one extraction batch has found so far: facts, entities and relations, deduplicated, with
the messages each came from merged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.interface import ExtractedEntity, ExtractedFact, ExtractedRelationship, ExtractionResult
from deepcontext.extract.relations import RelationHit
from deepcontext.language.gazetteer import ORG_HEADS, ORG_SUFFIXES, STOPCAPS
from deepcontext.types import EntityType

__all__ = ["BatchAcc"]


@dataclass(slots=True)
class EntityAcc:
    name: str
    type: EntityType
    attributes: dict[str, Any]
    sources: list[int]


@dataclass(slots=True)
class BatchAcc:
    """Batch-level accumulator: deduplicates facts, entities and relations, merging their sources."""

    facts: dict[str, ExtractedFact] = field(default_factory=dict)
    learned: dict[str, EntityType | None] = field(default_factory=dict)  # names seen so far in the batch
    entities: dict[str, EntityAcc] = field(default_factory=dict)
    relations: dict[tuple[str, str, str], ExtractedRelationship] = field(default_factory=dict)

    def learn(self, spans: list[EntitySpan], known: dict[str, EntityType | None]) -> None:
        """Remember names for the rest of the batch ("Acme Corp" now, "Acme" at a sentence start later)."""
        for sp in spans:
            if sp.type is EntityType.DATE:
                continue
            key = sp.name.lower()
            known.setdefault(key, sp.type)
            self.learned.setdefault(key, sp.type)
            if sp.type in (EntityType.ORGANIZATION, EntityType.PERSON) and sp.name.count(" ") == 1:
                first, second = sp.name.split(" ")
                if (
                    first[:1].isupper()
                    and first.lower() not in STOPCAPS
                    and first not in ORG_HEADS
                    and (sp.type is EntityType.PERSON or second in ORG_SUFFIXES)
                ):
                    known.setdefault(first.lower(), sp.type)
                    self.learned.setdefault(first.lower(), sp.type)

    def fact(self, fact: ExtractedFact) -> None:
        key = " ".join(fact.text.lower().split()).rstrip(".")
        old = self.facts.get(key)
        if old is None:
            self.facts[key] = fact
            return
        for i in fact.source_indices:
            if i not in old.source_indices:
                old.source_indices.append(i)
        old.importance = max(old.importance, fact.importance)

    def entity(self, name: str, etype: EntityType, index: int, attributes: dict[str, Any] | None = None) -> str:
        key = name.lower()
        e = self.entities.get(key)
        if e is None:
            self.entities[key] = EntityAcc(name, etype, dict(attributes or {}), [index])
            return name
        if index not in e.sources:
            e.sources.append(index)
        if e.type is EntityType.OTHER and etype is not EntityType.OTHER and "kind" not in e.attributes:
            e.type = etype  # a pet ("a dog named Max") stays a pet when "Max" is seen again
        if attributes:
            for k, v in attributes.items():
                e.attributes.setdefault(k, v)
        return e.name

    def relation(self, hit: RelationHit, index: int) -> None:
        key = (hit.source.lower(), hit.relation, hit.target.lower())
        r = self.relations.get(key)
        if r is None:
            self.relations[key] = ExtractedRelationship(
                source=hit.source,
                target=hit.target,
                relation=hit.relation,
                properties=dict(hit.properties),
                source_indices=[index],
            )
        elif index not in r.source_indices:
            r.source_indices.append(index)

    def result(self) -> ExtractionResult:
        aliases = self._aliases()
        entities = [
            ExtractedEntity(name=e.name, entity_type=e.type, attributes=e.attributes, source_indices=sorted(e.sources))
            for key, e in self.entities.items()
            if key not in aliases
        ]
        facts = list(self.facts.values())
        relations = list(self.relations.values())
        if aliases:
            for f in facts:
                f.entities = list(dict.fromkeys(aliases.get(n.lower(), n) for n in f.entities))
            merged: dict[tuple[str, str, str], ExtractedRelationship] = {}
            for r in relations:
                r.source = aliases.get(r.source.lower(), r.source)
                r.target = aliases.get(r.target.lower(), r.target)
                key = (r.source.lower(), r.relation, r.target.lower())
                if key in merged:
                    merged[key].source_indices = sorted(set(merged[key].source_indices) | set(r.source_indices))
                elif r.source.lower() != r.target.lower():
                    merged[key] = r
            relations = list(merged.values())
            for e in entities:  # give the long form the sources of its short form
                for short, long in aliases.items():
                    if long == e.name:
                        e.source_indices = sorted(set(e.source_indices) | set(self.entities[short].sources))
        return ExtractionResult(facts=facts, entities=entities, relationships=relations)

    def _aliases(self) -> dict[str, str]:
        """Short forms of a longer name in the same batch: "Acme" -> "Acme Corp", "Sarah" -> "Sarah Lee"."""
        longs: dict[str, list[str]] = {}
        for e in self.entities.values():
            if " " in e.name and e.type in (EntityType.ORGANIZATION, EntityType.PERSON):
                longs.setdefault(e.name.split(" ", 1)[0].lower(), []).append(e.name)
        out: dict[str, str] = {}
        if not longs:
            return out
        for key, e in self.entities.items():
            cands = longs.get(key)
            if (
                cands
                and len(cands) == 1
                and " " not in e.name
                and e.type in (EntityType.ORGANIZATION, EntityType.PERSON, EntityType.OTHER)
            ):
                long = self.entities[cands[0].lower()]
                if e.type is EntityType.OTHER or e.type is long.type:
                    out[key] = long.name
        return out
