"""Ingest: messages -> turns + memories + graph, as one transaction.

``add`` (new messages) and ``derive`` (turns stored already, by the dialogue) run one pipeline;
nothing is written before its last step and no transaction is open while a model works:
**extract** (rules offline, an LLM when configured), one turn memory per message, then the steps
of :mod:`~deepcontext.services.ingest_steps`: **dedupe** (stored exact duplicates -> NOOP),
**embed**, **neighbours**, **classify** (:mod:`~deepcontext.services.ingest_classify`), **plan**
(memories, changes, entities, relations) and **write** (:meth:`Store.apply_add`, which re-checks
that every memory the plan changes is still active; if another writer changed one, the steps run
again). LLM failures raise :class:`~deepcontext.errors.LLMError` before anything is written, unless
``offline_fallback`` is on: then the offline extractor and rule take over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import LLMError, MemoryNotFoundError, ValidationError, WriteConflictError
from deepcontext.extract.interface import Classifier, ExtractionContext, ExtractionResult, Extractor, MessageIn
from deepcontext.extract.introductions import introduced_name
from deepcontext.language.same_kind import threshold_for
from deepcontext.language.standing_model import model_for
from deepcontext.services import ingest_steps as steps
from deepcontext.services.ingest_classify import classify
from deepcontext.services.ingest_steps import Candidate, Counts, turn_importance, turn_memory_text
from deepcontext.services.kin_referents import kin_referents
from deepcontext.services.naming import rename_user
from deepcontext.settings import DeepContextSettings
from deepcontext.store import TTLCache
from deepcontext.store.interface import AddOutcome, AddPlan, MemoryChange, NewMemory, NewTurn, Store
from deepcontext.text import content_hash
from deepcontext.types import AddResponse, HistoryEvent, MemoryType, Turn

__all__ = ["Candidate", "IngestService", "turn_importance", "turn_memory_text"]

log = logging.getLogger("deepcontext.ingest")

_NEIGHBOURS = 5
#: earlier turns read for an offline extraction whose batch opens with a pronoun ("She ...")
_REFERENT_TURNS = 3
#: how often an add is planned before a conflict with concurrent writers is reported
_PLAN_ATTEMPTS = 3


class IngestService:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        settings: DeepContextSettings,
        *,
        classifier: Classifier | None = None,
        offline_extractor: Extractor | None = None,
        offline_fallback: bool = False,
        context_turns: int = 0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.standing_model = model_for(embedder.model_id)
        self.same_kind = threshold_for(embedder.model_id)
        self.extractor = extractor
        self.classifier = classifier
        self.settings = settings
        #: used instead of ``extractor`` when it raises an LLMError and ``offline_fallback`` is on
        self.offline_extractor = offline_extractor
        self.offline_fallback = offline_fallback
        #: earlier turns of the conversation (and its summary) shown to the extractor; 0: none
        self.context_turns = context_turns
        # display names (see user_name); a name set by another process is seen within the minute
        self._names: TTLCache[str] = TTLCache(60.0, max_entries=10_000)

    async def user_name(self, user_id: str, msgs: Sequence[MessageIn] = ()) -> str | None:
        """The user's display name: the one set, else the first name on the user's turns (stored, or
        in ``msgs``), else None."""
        name = self._names.get(user_id)
        if name is None:
            name = await asyncio.to_thread(self.store.user_name, user_id) or ""
            self._names.put(user_id, name)
        if not name:
            name = next((m.name for m in msgs if m.role == "user" and m.name), "") or ""
            if name:
                self._names.put(user_id, name)
        return name or None

    def name_changed(self, user_id: str, name: str) -> None:
        self._names.put(user_id, name)

    async def _introduction(self, user_id: str, msgs: Sequence[MessageIn], now: datetime) -> None:
        """A user turn that introduces its speaker ("I'm Tomas", "call me Bea") names the user, as
        ``set_user`` does, unless a name was set explicitly (a turn with a ``name`` names no one)."""
        name = next((n for m in msgs if m.role == "user" and not m.name and (n := introduced_name(m.content))), None)
        if name is None or name == await self.user_name(user_id):
            return
        if await rename_user(self.store, self.embedder, user_id, name, now, source="introduced") >= 0:
            self._names.put(user_id, name)

    async def add(
        self,
        msgs: list[MessageIn],
        *,
        user_id: str,
        conversation_id: str,
        now: datetime,
        metadata: dict[str, Any],
        expires_at: datetime | None,
        infer: bool = True,
        actor: str = "system",
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> AddResponse:
        """Store ``msgs`` as new turns and the memories derived from them (``infer=False``: the turns
        and their turn memories only)."""
        context = ExtractionContext(user_id=user_id, conversation_id=conversation_id, now=now)
        if infer:
            await self._introduction(user_id, msgs, now)
        context.user_name = await self.user_name(user_id, msgs)
        extractor, classifier, result = self.extractor, self.classifier, ExtractionResult()
        if infer:
            if self.context_turns > 0:
                await self._load_context(context)
            elif msgs and extractor.wants_context(msgs):
                await self._load_context(context, _REFERENT_TURNS)
            context.kin_referents = await kin_referents(self.store, user_id, context.user_name, msgs, now)
            extractor, classifier, result = await self._extract(msgs, context, "add")

        def new_plan() -> AddPlan:
            plan = AddPlan(
                user_id=user_id, conversation_id=conversation_id, now=now, actor=actor, agent_id=agent_id, run_id=run_id
            )
            plan.turns = [
                NewTurn(
                    role=m.role,
                    content=m.content,
                    content_hash=content_hash(m.content, m.role, m.name or ""),
                    said_at=m.said_at,
                    name=m.name,
                    metadata=dict(m.metadata),
                )
                for m in msgs
            ]
            return plan

        return await self._run(
            "add", msgs, result, context, new_plan, metadata=metadata, expires_at=expires_at,
            source=extractor.name, classifier=classifier,
        )  # fmt: skip

    async def derive(
        self,
        msgs: list[MessageIn],
        *,
        user_id: str,
        conversation_id: str,
        now: datetime,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        actor: str = "system",
    ) -> AddResponse:
        """Derive memories from turns that are stored already (``msgs[i].turn_id`` set): the steps of
        :meth:`add` with provenance to those turn ids; no turn is inserted. ``turn_ids`` of the
        response are the given ones."""
        turn_ids = [m.turn_id for m in msgs]
        if not msgs or any(t is None for t in turn_ids):
            raise ValidationError("derive needs messages of stored turns (turn_id set)", field="messages")
        ids = [int(t) for t in turn_ids if t is not None]
        msgs = [replace(m, index=i) for i, m in enumerate(msgs)]
        context = ExtractionContext(user_id=user_id, conversation_id=conversation_id, now=now)
        await self._introduction(user_id, msgs, now)
        context.user_name = await self.user_name(user_id, msgs)
        if self.context_turns > 0:  # earlier turns only: the ones derived here are stored already
            await self._load_context(context)
            context.recent_messages = [m for m in context.recent_messages if m.turn_id is not None and m.turn_id < min(ids)]
        context.kin_referents = await kin_referents(self.store, user_id, context.user_name, msgs, now)
        extractor, classifier, result = await self._extract(msgs, context, "derive")
        response = await self._run(
            "derive", msgs, result, context,
            lambda: AddPlan(user_id=user_id, conversation_id=conversation_id, now=now, actor=actor),
            metadata=dict(metadata or {}), expires_at=expires_at, source=extractor.name, classifier=classifier,
            turn_ids=ids,
        )  # fmt: skip
        response.turn_ids = ids
        return response

    async def _extract(
        self, msgs: list[MessageIn], context: ExtractionContext, kind: str
    ) -> tuple[Extractor, Classifier | None, ExtractionResult]:
        """The extraction, and the extractor and classifier the rest of this ingest uses (the offline
        ones after an LLM failure, when ``offline_fallback`` is on)."""
        extractor, classifier = self.extractor, self.classifier
        try:
            result = await extractor.extract(msgs, context)
        except LLMError as exc:
            if not (self.offline_fallback and self.offline_extractor is not None):
                raise
            log.warning("LLM extraction failed (%s); this %s uses the offline extractor", exc, kind)
            extractor, classifier = self.offline_extractor, None
            result = await extractor.extract(msgs, context)
        return extractor, classifier, _sane(result, len(msgs))

    async def _run(
        self,
        kind: str,
        msgs: list[MessageIn],
        result: ExtractionResult,
        context: ExtractionContext,
        new_plan: Callable[[], AddPlan],
        *,
        metadata: dict[str, Any],
        expires_at: datetime | None,
        source: str,
        classifier: Classifier | None,
        turn_ids: list[int] | None = None,
    ) -> AddResponse:
        """Plan and write, planning again when another writer changed a memory the plan changes."""
        for attempt in range(1, _PLAN_ATTEMPTS + 1):
            turn_memories = self.settings.store_turn_memories
            candidates = await asyncio.to_thread(
                steps.build_candidates, msgs, result, metadata, context.user_name, turn_memories=turn_memories
            )
            plan = new_plan()
            counts = await self._plan(plan, candidates, context, expires_at, source=source, classifier=classifier)
            await asyncio.to_thread(steps.plan_graph, plan, result, candidates)
            if turn_ids is not None:  # message indices -> the stored turns
                items: list[NewMemory | MemoryChange] = [*plan.memories, *plan.changes]
                for item in items:
                    cited = (turn_ids[i] for i in item.source_turn_indices)
                    item.source_turn_ids = list(dict.fromkeys([*item.source_turn_ids, *cited]))
                    item.source_turn_indices = []
            try:
                outcome: AddOutcome = await asyncio.to_thread(self.store.apply_add, plan)
            except MemoryNotFoundError as exc:
                if exc.memory_id not in steps.referenced(plan):
                    raise
                if attempt == _PLAN_ATTEMPTS:
                    raise WriteConflictError(
                        f"{kind} for user {plan.user_id!r}: memory {exc.memory_id} was changed by another writer "
                        f"while this {kind} was being planned, {attempt} times in a row; nothing was written, retry the {kind}",
                        user_id=plan.user_id,
                    ) from exc
                log.info("memory %s changed while this %s was planned; planning again", exc.memory_id, kind)
                continue
            return _response(plan, outcome, result, counts, plan.conversation_id)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _plan(
        self,
        plan: AddPlan,
        candidates: list[Candidate],
        context: ExtractionContext,
        expires_at: datetime | None,
        *,
        source: str,
        classifier: Classifier | None,
    ) -> Counts:
        """dedupe -> embed -> neighbours -> classify -> plan; returns what happened to stored memories."""
        s = self.settings
        counts: Counts = {"noop": 0, "update": 0, "replace": 0, "delete": 0}
        fresh = await steps.drop_exact_duplicates(self.store, plan, candidates, counts)
        if not fresh:
            return counts
        vecs = await steps.embed(self.embedder, fresh)
        steps.mark_standing(self.standing_model, fresh)
        await steps.find_neighbours(self.store, plan, fresh, vecs, max(_NEIGHBOURS, s.max_connections_per_memory))
        facts = [c for c in fresh if not c.is_turn]
        kept, merged = await asyncio.to_thread(steps.merge_near_duplicates, facts, s.dedup_threshold)
        counts["noop"] += merged
        decisions = await classify(
            self.store, self.embedder, plan, kept, context, classifier,
            threshold=s.dedup_threshold, offline_fallback=self.offline_fallback, same_kind=self.same_kind,
        )  # fmt: skip
        await steps.plan_memories(
            self.embedder, plan, fresh, kept, decisions, counts,
            settings=s, source=source, expires_at=expires_at, conversation_id=plan.conversation_id,
        )  # fmt: skip
        return counts

    def _context_rows(self, user_id: str, conversation_id: str, turns: int) -> tuple[str | None, list[Turn]]:
        """The conversation's stored summary and its last ``turns`` turns (oldest first): one
        worker-thread hop for both."""
        summaries = self.store.summaries
        state = summaries.read(user_id, conversation_id) if summaries is not None else None
        if state is None and summaries is not None:
            return None, []  # a new conversation: no turns either
        recent = self.store.recent_turns(user_id, conversation_id, turns) if turns > 0 else []
        return (state.summary if state is not None else None), recent

    async def _load_context(self, context: ExtractionContext, turns_wanted: int | None = None) -> None:
        """Fill the context with the conversation's summary and its last turns (before this add)."""
        summary, turns = await asyncio.to_thread(
            self._context_rows, context.user_id, context.conversation_id, turns_wanted or self.context_turns
        )
        context.summary = summary
        context.recent_messages = [
            MessageIn(
                index=-len(turns) + i,  # before the batch: never citable
                role=t.role,
                content=t.content,
                said_at=t.said_at,
                name=t.name,
                turn_id=t.id,
            )
            for i, t in enumerate(turns)
        ]


def _sane(result: ExtractionResult, n: int) -> ExtractionResult:
    """Drop extracted items that cite no real message (an extractor bug or an LLM invention)."""
    facts = []
    for f in result.facts:
        src = [i for i in f.source_indices if 0 <= i < n]
        if not src or not f.text.strip():
            log.warning("dropping extracted fact citing no message: %r", f.text[:80])
            continue
        facts.append(f.model_copy(update={"source_indices": src}))
    return ExtractionResult(facts=facts, entities=result.entities, relationships=result.relationships)


def _response(plan: AddPlan, outcome: AddOutcome, result: ExtractionResult, counts: Counts, conversation_id: str) -> AddResponse:
    r = AddResponse(conversation_id=conversation_id, turn_ids=outcome.turn_ids)
    for f in result.facts:
        {
            MemoryType.SEMANTIC: r.semantic_facts,
            MemoryType.EPISODIC: r.episodic_facts,
            MemoryType.PROCEDURAL: r.procedural_facts,
        }[f.memory_type].append(f.text)
    r.entities_found = [e.name for e in plan.entities]
    r.relationships_found = len(plan.relations)
    for nm, mid, ins in zip(plan.memories, outcome.memory_ids, outcome.inserted, strict=True):
        if not ins:
            r.memories_unchanged += 1
            continue
        r.memory_ids.append(mid)
        if nm.event is HistoryEvent.UPDATE:
            r.memories_updated += 1
        elif nm.event is HistoryEvent.REPLACE:
            r.memories_replaced += 1
        else:
            r.memories_added += 1
    r.memories_deleted = counts["delete"]
    r.memories_unchanged += counts["noop"]
    return r
