"""Knowledge updates: a newer value of a single-valued fact supersedes the older memory.

Every fact is read for the slots it states (:func:`deepcontext.extract.slots.find_slots`); the
current ones are kept in the memory's metadata under ``slot:<subject>|<attribute>`` (value and
qualifier), so a later add finds the memories holding the same slot whatever their wording or
vector. A fact stating another value (or that the value stopped: "doesn't drink tea anymore")
supersedes them: offline by this rule, with an LLM by the LLM's classification, which is shown those
memories beside the nearest ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deepcontext.extract.slots import Slot, find_slots, same_value
from deepcontext.language.unnamed import parsed
from deepcontext.store import SLOT_KEY_PREFIX
from deepcontext.types import Memory

__all__ = ["SLOTS_KEY", "SLOT_PREFIX", "fact_keys", "without_fact_keys", "Conflict", "conflicts", "slot_metadata", "slots_of"]

#: metadata keys of a memory's current slots start with this (the store indexes them)
SLOT_PREFIX = SLOT_KEY_PREFIX
#: metadata key holding a memory's current slot keys, space-separated
SLOTS_KEY = "slots"


def slots_of(text: str, speaker: str) -> list[Slot]:
    """The slots a fact states (current and ended)."""
    return find_slots(text, speaker)


def slot_metadata(slots: list[Slot]) -> dict[str, Any]:
    """What a memory stores of its current slots: ``{"slot:user|residence": {"value": "porto"}}``."""
    out: dict[str, Any] = {}
    for s in slots:
        if not s.ended:
            entry: dict[str, Any] = {"value": s.value}
            if s.qualifier:
                entry["qualifier"] = s.qualifier
            out.setdefault(SLOT_PREFIX + s.key, entry)
    if out:  # the keys in one string too, read by search for questions about one of them
        out[SLOTS_KEY] = " ".join(k.removeprefix(SLOT_PREFIX) for k in out)
    return out


def fact_keys(text: str, speaker: str) -> dict[str, Any]:
    """The metadata a fact's text gives: its current slots and, if it states one, its standing kind."""
    from deepcontext.language.standing import STANDING_KEY, standing_kind

    kind = standing_kind(parsed(text, speaker))
    return {**slot_metadata(slots_of(text, speaker)), **({STANDING_KEY: kind} if kind else {})}


def without_fact_keys(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without what :func:`fact_keys` derives (a merged text is read again)."""
    from deepcontext.language.standing import STANDING_KEY

    return {k: v for k, v in metadata.items() if not (k.startswith(SLOT_PREFIX) or k in (SLOTS_KEY, STANDING_KEY))}


@dataclass(frozen=True, slots=True)
class Conflict:
    """A stored memory holding another value of a slot the new fact states."""

    memory: Memory
    slot: Slot
    old_value: str

    @property
    def reason(self) -> str:
        subject, attribute = self.slot.subject, self.slot.attribute
        if self.slot.ended:
            return f"a later statement says {subject}'s {attribute} {self.old_value!r} no longer holds"
        return f"a later statement changes {subject}'s {attribute}: {self.old_value!r} -> {self.slot.value!r}"


def conflicts(slots: list[Slot], stored: list[Memory], said_at: Any) -> list[Conflict]:
    """Stored memories (said no later than the new fact) that the new fact's slots supersede, newest first.

    A current slot conflicts with another value; an ended slot with the same value (any value when it
    names none). A qualified habit ("tea in the morning") is changed only by an unqualified statement
    or one with the same qualifier, so "coffee in the evening" leaves the morning tea alone.
    """
    out: list[Conflict] = []
    seen: set[int] = set()
    for s in slots:
        for m in stored:
            if m.id in seen:
                continue
            entry = m.metadata.get(SLOT_PREFIX + s.key)
            if not isinstance(entry, dict):
                continue
            old = str(entry.get("value", ""))
            if said_at is not None and m.said_at is not None and m.said_at > said_at:
                continue
            if s.qualifier is not None and entry.get("qualifier") not in (None, s.qualifier):
                continue
            hit = (s.value == "" or same_value(old, s.value)) if s.ended else not same_value(old, s.value)
            if hit:
                seen.add(m.id)
                out.append(Conflict(m, s, old))
    return out
