"""The classify step of ingest: what each new fact does to the stored memories near it (ADD /
UPDATE / REPLACE / DELETE / NOOP).

Offline the rule of :func:`deepcontext.extract.llm_classifier.offline_decision` decides (NOOP above
``dedup_threshold`` cosine, else ADD), and a fact stating another value of a single-valued slot
replaces the memories holding the old one. An LLM classifier's answer is validated: ids must be
among the memories shown for that fact, and a memory is changed by at most one fact of the add;
otherwise the offline rule decides.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import LLMError
from deepcontext.extract.interface import Classifier, Decision, ExistingMemory, ExtractedFact, ExtractionContext
from deepcontext.extract.llm_classifier import offline_decision
from deepcontext.extract.replacements import (
    EndedThing,
    ended_things,
    ends,
    standing_thing,
    switched_to,
    taken_up,
    with_new_thing,
)
from deepcontext.language.unnamed import written
from deepcontext.services.ingest_steps import MUTATIONS, Candidate
from deepcontext.services.updates import SLOT_PREFIX, SLOTS_KEY, conflicts, fact_keys, slots_of, without_fact_keys
from deepcontext.store.interface import AddPlan, Store
from deepcontext.types import MemoryType, ToolAction

__all__ = ["classify"]

log = logging.getLogger("deepcontext.ingest")


async def classify(
    store: Store,
    embedder: Embedder,
    plan: AddPlan,
    kept: list[Candidate],
    context: ExtractionContext,
    classifier: Classifier | None,
    *,
    threshold: float,
    offline_fallback: bool,
    same_kind: float | None = None,
) -> list[Decision]:
    """One decision per kept fact. ``same_kind``: the embedder's fitted cosine at which a change that
    names no old thing replaces the standing fact of the same kind (None: such changes replace nothing)."""
    await _find_conflicts(store, embedder, plan, kept, show=classifier is not None)
    decisions = await _decide(kept, context, classifier, threshold, offline_fallback)
    if classifier is None:
        decisions = _supersede(kept, decisions, same_kind)
    return decisions


async def _find_conflicts(store: Store, embedder: Embedder, plan: AddPlan, kept: list[Candidate], *, show: bool) -> None:
    """Stored memories holding another value of a slot each candidate states (one read for the add).
    With a classifier they are shown to it beside the nearest memories."""
    with_slots = [c for c in kept if c.slots]
    if not with_slots:
        return
    keys = list(dict.fromkeys(SLOT_PREFIX + s.key for c in with_slots for s in c.slots))
    stored = await asyncio.to_thread(
        store.find_active_by_metadata_keys, plan.user_id, keys, plan.now, scope=(plan.agent_id, plan.run_id)
    )
    if not stored:
        return
    for c in with_slots:
        c.conflicts = conflicts(c.slots, stored, c.said_at)
    if not show:
        return
    extra = [x.memory for c in with_slots for x in c.conflicts]
    shown = {x.memory.id for c in with_slots for x in c.conflicts}
    vecs = await asyncio.to_thread(embedder.embed, [m.text for m in extra]) if extra else None
    sims = {m.id: v for m, v in zip(extra, vecs if vecs is not None else [], strict=True)}
    for c in with_slots:
        have = {n.id for n in c.neighbours}
        for x in c.conflicts:
            m = x.memory
            if m.id in have or m.id not in shown:
                continue
            sim = float(np.dot(c.vector, sims[m.id])) if c.vector is not None else 0.0
            c.neighbours.append(
                ExistingMemory(id=m.id, text=m.text, memory_type=m.memory_type, similarity=sim, said_at=m.said_at)
            )


def _supersede(kept: list[Candidate], decisions: list[Decision], same_kind: float | None) -> list[Decision]:
    """Offline: a new fact stating another value of a single-valued fact (where someone lives, their
    job...) replaces the stored memories holding the old value. Each memory is changed by at most
    one fact of the add."""
    claimed = {d.memory_id for d in decisions if d.action in MUTATIONS and d.memory_id is not None}
    out: list[Decision] = []
    for c, d in zip(kept, decisions, strict=True):
        free = [x for x in c.conflicts if x.memory.id not in claimed]
        ended = _ended_by(c, claimed) or _switched(c, claimed, same_kind) if d.action == "ADD" and not free else None
        if ended is not None:
            claimed.add(ended[0])
            out.append(Decision(action="REPLACE", memory_id=ended[0], reason=ended[1], text=ended[2]))
            c.conflicts = []
            continue
        if d.action != "ADD" or not free:
            out.append(d)
            c.conflicts = []
            continue
        c.conflicts = free
        claimed.update(x.memory.id for x in free)
        out.append(Decision(action="REPLACE", memory_id=free[0].memory.id, reason=free[0].reason))
    return out


def _ended_by(c: Candidate, claimed: set[int]) -> tuple[int, str, str | None] | None:
    """The nearest stored standing fact that ``c`` says has ended ("User sold the old Golf" ends
    "User drives a VW Golf"), with the reason and, when ``c`` names what took its place, the standing
    fact that now holds ("User traded the Golf in for a Kia": "User drives a Kia."); None when it
    ends none."""
    if c.is_turn or not c.neighbours:
        return None
    things = ended_things(c.text)
    if not things:
        return None
    for n in sorted(c.neighbours, key=lambda n: -n.similarity):
        if n.id in claimed or n.memory_type is not MemoryType.SEMANTIC:
            continue
        if c.said_at is not None and n.said_at is not None and n.said_at > c.said_at:
            continue
        for e in things:
            if ends(e, n.text):
                why = f"a later statement says {written(e.subject)} no longer has {e.thing!r}"
                new = taken_up(c.text)
                now_holds = with_new_thing(e, n.text, new) if new else None
                if now_holds is not None:
                    _now_holds(c, now_holds)
                    return n.id, f"{why} but {new!r}", now_holds
                _hold_slots_of(c, n.text)
                return n.id, why, None
    return None


def _switched(c: Candidate, claimed: set[int], threshold: float | None) -> tuple[int, str, str | None] | None:
    """Offline: a change that names no old thing ("User switched to a Pixel 8") replaces the stored
    standing fact of its subject of the same kind ("User is on an iPhone 12"): the most similar one
    under the embedder (the facts' cosine, as fitted), when it reaches ``threshold`` (None: the
    embedder has none). Returns it as :func:`_ended_by` does; ``c`` becomes the fact that now holds."""
    if threshold is None or c.is_turn or not c.neighbours or (switch := switched_to(c.text)) is None:
        return None
    olds = [
        (n, thing)
        for n in c.neighbours
        if n.id not in claimed
        and n.memory_type is MemoryType.SEMANTIC
        and not (c.said_at is not None and n.said_at is not None and n.said_at > c.said_at)
        and (thing := standing_thing(switch.subject, n.text)) is not None
        and thing.lower() != switch.new.lower()
    ]
    if not olds:
        return None
    n, thing = max(olds, key=lambda o: o[0].similarity)
    if n.similarity < threshold:
        return None
    why = f"a later statement says {written(switch.subject)} changed from {thing!r} to {switch.new!r}"
    now_holds = None if switch.restated else with_new_thing(EndedThing(switch.subject, thing), n.text, switch.new)
    if now_holds is not None:
        _now_holds(c, now_holds)
    return n.id, why, now_holds


def _now_holds(c: Candidate, text: str) -> None:
    """``c`` becomes the standing fact ``text`` (the change's own words stay in its turn): a
    semantic memory with the slots and standing kind that text states."""
    speaker = str(c.metadata.get("speaker") or "User")
    c.memory_type = MemoryType.SEMANTIC
    c.metadata = {**without_fact_keys(c.metadata), **fact_keys(text, speaker)}


def _hold_slots_of(c: Candidate, ended_text: str) -> None:
    """The change stands for the single-valued facts of what it ended ("User traded the Leaf in for a
    Polestar 2" is about the user's car): a question about them finds it, and a later value of them
    supersedes it. Its value is unknown to the rules (""), so any later value differs from it."""
    speaker = str(c.metadata.get("speaker") or "User")
    keys = [SLOT_PREFIX + s.key for s in slots_of(ended_text, speaker) if not s.ended]
    if not keys:
        return
    for key in keys:
        c.metadata.setdefault(key, {"value": ""})
    held = [k for k in c.metadata if k.startswith(SLOT_PREFIX)]
    c.metadata[SLOTS_KEY] = " ".join(k.removeprefix(SLOT_PREFIX) for k in held)


async def _decide(
    kept: list[Candidate], context: ExtractionContext, classifier: Classifier | None, threshold: float, offline_fallback: bool
) -> list[Decision]:
    offline = [offline_decision(c.neighbours, threshold) for c in kept]
    if classifier is None or not any(c.neighbours for c in kept):
        return offline
    facts = [c.fact or ExtractedFact(text=c.text) for c in kept]
    try:
        proposals = await classifier.classify(facts, [c.neighbours for c in kept], context)
    except LLMError as exc:
        if not offline_fallback:
            raise
        log.warning("LLM classification failed (%s); the offline rule decides this add", exc)
        return offline
    if len(proposals) != len(kept):
        log.warning("classifier returned %d decisions for %d candidates; using the offline rule", len(proposals), len(kept))
        return offline
    checked = [_validated(c, d, fb) for c, d, fb in zip(kept, proposals, offline, strict=True)]
    # a memory is changed (UPDATE / REPLACE / DELETE) by at most one fact of the add: the first
    out: list[Decision] = []
    claimed: set[int] = set()
    for d, fb in zip(checked, offline, strict=True):
        target = d.memory_id
        if d.action in MUTATIONS and target is not None:
            if target in claimed:
                d = fb.model_copy(
                    update={
                        "reason": f"rejected {d.action}: memory {target} is already changed by another "
                        f"fact of this add; {fb.reason or 'offline rule'}"
                    }
                )
            else:
                claimed.add(target)
        out.append(d)
    return out


def _validated(c: Candidate, d: Decision, fallback: Decision) -> Decision:
    """An LLM decision is applied only if its action is known and, for UPDATE / REPLACE / DELETE
    / NOOP, it names one of the neighbours shown for this candidate (stored memories of this
    user); otherwise the offline rule decides, and says why in the reason."""
    try:
        action = ToolAction(str(d.action).strip().upper()).value
    except ValueError:
        return fallback.model_copy(
            update={"reason": f"rejected unknown action {d.action!r}; {fallback.reason or 'offline rule'}"}
        )
    shown = {n.id for n in c.neighbours}
    if action == "ADD":
        return Decision(action="ADD", reason=d.reason)
    if action == "NOOP" and d.memory_id is None:
        return Decision(action="NOOP", reason=d.reason)
    if d.memory_id is None or d.memory_id not in shown:
        why = "no id" if d.memory_id is None else f"id {d.memory_id} was not among the memories shown"
        return fallback.model_copy(update={"reason": f"rejected {action} ({why}); {fallback.reason or 'offline rule'}"})
    return Decision(action=action, memory_id=d.memory_id, text=d.text, reason=d.reason)
