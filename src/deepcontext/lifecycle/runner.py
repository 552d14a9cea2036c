"""The lifecycle run of one user: decay, then consolidation (when due), then cleanup.

Safe at any time from any process: one run per user at a time, everywhere (the store's per-user
lock ``lifecycle``, held for the run but not a transaction: nothing stays open while the LLM
works); every write is a short transaction that re-checks what it changes, so concurrent adds,
updates and deletes are never lost. Consolidation is due when the user has
``consolidation_threshold`` active short-term memories more than the last one left over, or when
the user is flagged (``users.consolidation_due``, set when another run held the lock).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from deepcontext.errors import LLMError
from deepcontext.lifecycle.cleanup import cleanup
from deepcontext.lifecycle.consolidate import (
    MAX_FACT_CHARS,
    Fact,
    GroupItem,
    Statement,
    conflicts_among,
    extractive_merge,
    group_memories,
)
from deepcontext.lifecycle.decay import SECONDS_PER_DAY, DecayPolicy
from deepcontext.services.updates import fact_keys, without_fact_keys
from deepcontext.store import CandidateRow, DecayChange, FactWrite, GroupWrite
from deepcontext.text import content_hash, normalize_for_hash

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.embed.embedder import Embedder
    from deepcontext.llm.client import LLM
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store import HeldLock
    from deepcontext.store.interface import Store
    from deepcontext.types import LifecycleRun

__all__ = ["CONSOLIDATION_STATE", "LOCK_NAME", "LifecycleReport", "LifecycleRunner", "consolidation_due", "left_over"]

log = logging.getLogger("deepcontext.lifecycle")
T = TypeVar("T")

#: the per-user store lock every lifecycle run holds
LOCK_NAME = "lifecycle"
#: importance is rewritten only when it moved by more than this fraction (fewer writes, fewer
#: vector-cache refreshes; the stored value stays within 0.5 % of the curve)
REL_TOLERANCE = 0.005
#: short-term memories read per consolidation (oldest first; the rest waits for the next run)
MAX_CANDIDATES = 5_000
#: statements merged into one long-term memory at most
MAX_GROUP = 12
#: an LLM's merged fact may run this far past MAX_FACT_CHARS before its sources are composed offline
LLM_SLACK_CHARS = 100
#: a lone memory accessed this often moves to long-term
PROMOTE_ACCESSES = 3
#: importance bonus per extra source of a merged memory (repetition strengthens)
MERGE_BONUS = 0.05
_KV_NAMESPACE = "lifecycle"
_KV_KEY = "consolidation"
#: where a user's consolidation state (what the last run left over) is kept: (namespace, key)
CONSOLIDATION_STATE = (_KV_NAMESPACE, _KV_KEY)


def left_over(state: Any) -> int:
    """The short-term memories the last consolidation left as they were, from its stored state."""
    return int(state.get("left_over", 0)) if isinstance(state, dict) else 0


def consolidation_due(short_term: int, threshold: int, left: int, *, flagged: bool) -> bool:
    """The runner's rule, shared with every preview of it: due when the user is flagged, or holds
    ``threshold`` short-term memories more than the ``left`` the last run left over."""
    return flagged or short_term >= threshold + left


@dataclass
class LifecycleReport:
    """What a run did. :meth:`as_dict` gives ``run_lifecycle``'s answer."""

    user_id: str
    #: memories whose importance the forgetting curve lowered (the seed's count)
    memories_decayed: int = 0
    #: of those, memories that fell under decay_min_importance (status decayed)
    memories_deactivated: int = 0
    #: short-term memories that moved to long-term: merged into a new memory or promoted alone (seed's)
    memories_consolidated: int = 0
    #: of those, memories promoted alone (same row, tier long_term)
    memories_promoted: int = 0
    #: new long-term memories written by merges
    long_term_created: int = 0
    #: groups of two or more memories consolidated
    groups: int = 0
    #: groups not written because a source changed meanwhile (they are tried again next run)
    groups_skipped: int = 0
    #: groups merged offline because the LLM failed
    llm_fallbacks: int = 0
    consolidation_ran: bool = False
    #: "llm" or "extractive" when consolidation ran
    method: str | None = None
    #: faded memories soft-deleted by cleanup (the seed's count)
    memories_cleaned: int = 0
    #: memories purged for good after the retention period (with their merged / superseded versions)
    purged: int = 0
    #: expired memories purged
    expired: int = 0
    #: entities removed with the last memories mentioning them
    entities_purged: int = 0
    took_ms: float = 0.0

    def as_dict(self) -> LifecycleRun:
        return cast("LifecycleRun", asdict(self))


class LifecycleRunner:
    """Runs lifecycle steps for users of one store. Cheap to build; holds no state between runs."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: DeepContextSettings,
        clock: Clock,
        llm: LLM | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.llm = llm
        self.policy = DecayPolicy.from_settings(settings)

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    # ------------------------------------------------------------------------------------------
    # locking
    # ------------------------------------------------------------------------------------------
    @asynccontextmanager
    async def locked(self, user_id: str, timeout: float) -> AsyncIterator[HeldLock]:
        """Hold the user's ``lifecycle`` store lock (waiting up to ``timeout`` s; LockTimeoutError)."""
        abandon = threading.Event()
        cm = self.store.user_lock(user_id, LOCK_NAME, timeout=timeout, abandon=abandon)
        taking = asyncio.ensure_future(asyncio.to_thread(cm.__enter__))
        try:
            held = await asyncio.shield(taking)
        except asyncio.CancelledError:
            # the caller gave up while the worker thread may still be taking the lock: stop its wait,
            # and release a lock it got all the same, or it would stay held (and renewed) until the
            # process exits
            abandon.set()

            def release(t: asyncio.Future[Any]) -> None:
                if not t.cancelled() and t.exception() is None:
                    threading.Thread(target=cm.__exit__, args=(None, None, None), daemon=True).start()

            taking.add_done_callback(release)
            raise
        try:
            yield held
        finally:
            await asyncio.to_thread(cm.__exit__, None, None, None)

    # ------------------------------------------------------------------------------------------
    # runs
    # ------------------------------------------------------------------------------------------
    async def run(self, user_id: str, *, consolidate: bool | None = None, lock_timeout: float | None = None) -> LifecycleReport:
        """Decay, consolidation (``None``: when due; True: always; False: never), cleanup."""
        started = time.perf_counter()
        report = LifecycleReport(user_id=user_id)
        timeout = self.settings.lifecycle_lock_timeout if lock_timeout is None else lock_timeout
        async with self.locked(user_id, timeout) as held:
            now = self.clock.now()
            await self.decay(user_id, now, report)
            due = consolidate
            if due is None:
                due = await self._due(user_id, now)
            if due:
                await self.consolidate(user_id, now, report, held)
            await self.cleanup(user_id, now, report)
        report.took_ms = round((time.perf_counter() - started) * 1000, 3)
        return report

    async def consolidate_now(self, user_id: str, *, lock_timeout: float | None = None) -> LifecycleReport:
        """Consolidation alone, whatever the threshold (on demand)."""
        started = time.perf_counter()
        report = LifecycleReport(user_id=user_id)
        timeout = self.settings.lifecycle_lock_timeout if lock_timeout is None else lock_timeout
        async with self.locked(user_id, timeout) as held:
            await self.consolidate(user_id, self.clock.now(), report, held)
        report.took_ms = round((time.perf_counter() - started) * 1000, 3)
        return report

    async def auto(self, user_id: str) -> LifecycleReport | None:
        """Auto-consolidation after an add: if due, flag the user (durably), then consolidate if no
        other run holds the user's lock (else the flag stays and the next run does it)."""
        from deepcontext.errors import LockTimeoutError

        if not await self._due(user_id, self.clock.now()):
            return None
        await self._db(self.store.set_consolidation_due, user_id, True)
        started = time.perf_counter()
        report = LifecycleReport(user_id=user_id)
        try:
            async with self.locked(user_id, 0) as held:
                await self.consolidate(user_id, self.clock.now(), report, held)
        except LockTimeoutError:
            log.debug("auto-consolidation of %r skipped: a lifecycle run holds the lock", user_id)
            return None
        report.took_ms = round((time.perf_counter() - started) * 1000, 3)
        return report

    async def _due(self, user_id: str, now: datetime) -> bool:
        count = await self._db(self.store.count_short_term, user_id, now)
        if await self._db(self.store.consolidation_flag, user_id):
            return True
        state = await self._db(self.store.kv_get, user_id, _KV_NAMESPACE, _KV_KEY) or {}
        left = left_over(state)
        if consolidation_due(count, self.settings.consolidation_threshold, left, flagged=False):
            return True
        if left > count:  # memories left over have faded or been deleted since: lower the bar
            await self._db(self.store.kv_put, user_id, _KV_NAMESPACE, _KV_KEY, {**state, "left_over": count}, now)
        return False

    # ------------------------------------------------------------------------------------------
    # decay
    # ------------------------------------------------------------------------------------------
    async def decay(self, user_id: str, now: datetime, report: LifecycleReport) -> None:
        """Recompute every active memory's importance from the forgetting curve; deactivate the ones
        under the threshold."""
        rows = await self._db(self.store.decay_rows, user_id, now)
        policy = self.policy
        changes: list[DecayChange] = []
        lowered = 0
        for r in rows:
            half = policy.half_life(r.memory_type, r.tier)
            imp = policy.importance(
                memory_type=r.memory_type,
                tier=r.tier,
                base_importance=r.base_importance,
                reinforced_at=r.reinforced_at,
                now=now,
                access_count=r.access_count,
                last_accessed_at=r.last_accessed_at,
            )
            if imp < policy.min_importance:
                ref = max(r.reinforced_at, r.last_accessed_at or r.reinforced_at)
                days = (now - ref).total_seconds() / SECONDS_PER_DAY
                changes.append(
                    DecayChange(
                        id=r.id,
                        importance=imp,
                        access_count=r.access_count,
                        mention_count=r.mention_count,
                        deactivate=True,
                        reason=f"importance {imp:.4f} fell under {policy.min_importance:g} (forgetting curve)",
                        details={
                            "importance": imp,
                            "base_importance": r.base_importance,
                            "days_since_reinforced": round(days, 4),
                            "half_life_days": half * (1 + 0.1 * r.access_count),
                            "access_count": r.access_count,
                        },
                    )
                )
            elif abs(imp - r.importance) > max(1e-9, REL_TOLERANCE * r.importance):
                changes.append(DecayChange(id=r.id, importance=imp, access_count=r.access_count, mention_count=r.mention_count))
            else:
                continue
            if imp < r.importance:
                lowered += 1
        deactivated = await self._db(self.store.apply_decay, user_id, changes, now)
        report.memories_decayed += lowered
        report.memories_deactivated += len(deactivated)

    # ------------------------------------------------------------------------------------------
    # consolidation
    # ------------------------------------------------------------------------------------------
    async def consolidate(self, user_id: str, now: datetime, report: LifecycleReport, held: HeldLock) -> None:
        """Group the short-term memories, merge each group (LLM or offline), write group by group."""
        report.consolidation_ran = True
        report.method = "llm" if self.llm is not None else "extractive"
        # clear the flag before reading: an add after this read flags the user again
        await self._db(self.store.set_consolidation_due, user_id, False)
        cands = await self._db(self.store.consolidation_candidates, user_id, now, MAX_CANDIDATES)
        items = [
            GroupItem(
                memory_type=c.memory_type,
                entity_ids=c.entity_ids,
                vector=c.embedding,
                when=c.when.timestamp(),
                scope=(c.agent_id, c.run_id),
            )
            for c in cands
        ]
        hubs = set(await self._db(self.store.speaker_entity_ids, user_id)) if cands else set()
        # grouping, offline merging and planning the writes are CPU work: off the event loop.
        # Episodes join by what they share (a person, a place, a project), not by reading alike:
        # "went to Madrid" and "went to Porto" are two trips; only near-duplicates join without an entity
        sim = self.settings.consolidation_similarity_threshold
        groups = await asyncio.to_thread(
            group_memories,
            items,
            similarity=sim,
            max_group=MAX_GROUP,
            hubs=hubs,
            type_similarity={"episodic": max(sim, self.settings.dedup_threshold)},
        )
        multi = [[cands[i] for i in g] for g in groups if len(g) > 1]
        alone = [cands[g[0]] for g in groups if len(g) == 1]
        if self.llm is None:
            merged = await asyncio.to_thread(lambda: [(self._extractive(m, hubs), "extractive") for m in multi])
        else:
            merged = list(await asyncio.gather(*(self._merge(members, report, hubs) for members in multi)))

        def plan() -> list[GroupWrite]:
            writes = [self._group_write(members, facts, method) for members, (facts, method) in zip(multi, merged, strict=True)]
            for c in alone:
                if c.base_importance >= self.settings.consolidation_promote_importance or c.access_count >= PROMOTE_ACCESSES:
                    writes.append(self._group_write([c], [Fact(text=c.text, sources=[0])], "promotion"))
            return writes

        writes = await asyncio.to_thread(plan)
        await self._embed(writes)
        consolidated = 0
        if held.lost:
            log.warning("lifecycle lock of %r was lost (a stall longer than its lease); stopping", user_id)
            written: list[list[int] | None] = [None] * len(writes)
        else:  # all groups in one transaction (each checked on its own)
            written = await self._db(self.store.write_consolidations, user_id, writes, now)
        for gw, ids in zip(writes, written, strict=True):
            if ids is None:
                report.groups_skipped += 1
                continue
            promoted = [f for f in gw.facts if f.promote is not None]
            report.memories_promoted += len(promoted)
            report.long_term_created += len(gw.facts) - len(promoted)
            report.memories_consolidated += len(gw.sources)
            consolidated += len(gw.sources)
            if len(gw.sources) > 1:
                report.groups += 1
        # what this consolidation read but could not move (memories added meanwhile do not count)
        left = len(cands) - consolidated
        await self._db(
            self.store.kv_put,
            user_id,
            _KV_NAMESPACE,
            _KV_KEY,
            {"at": now.isoformat(), "left_over": left, "method": report.method},
            now,
        )

    async def _merge(
        self, members: Sequence[CandidateRow], report: LifecycleReport, hubs: Collection[int] = ()
    ) -> tuple[list[Fact], str]:
        """Facts for one group: the LLM's merge when configured (falling back to the offline merger
        when it fails), else the extractive merge."""
        if self.llm is not None:
            from deepcontext.llm.tasks import merge_memories

            try:
                out = await merge_memories(self.llm, [m.text for m in members], timeout=self.settings.llm_timeout)
                facts: list[Fact] = []
                for f in out:
                    if len(f.text) <= MAX_FACT_CHARS + LLM_SLACK_CHARS or len(f.sources) < 2:
                        facts.append(Fact(text=f.text, sources=list(f.sources)))
                        continue
                    # a diary, not a memory: its sources merged offline instead
                    log.info("LLM merge gave %d characters; composing its %d sources offline", len(f.text), len(f.sources))
                    sub = self._extractive([members[i] for i in f.sources], hubs)
                    facts.extend(Fact(text=x.text, sources=[f.sources[i] for i in x.sources]) for x in sub)
                return facts, "llm"
            except LLMError as exc:
                log.warning("LLM merge failed (%s); merging %d memories offline", exc, len(members))
                report.llm_fallbacks += 1
        return await asyncio.to_thread(self._extractive, members, hubs), "extractive"

    def _extractive(self, members: Sequence[CandidateRow], hubs: Collection[int] = ()) -> list[Fact]:
        statements = [
            Statement(text=m.text, when=m.when, importance=m.base_importance, vector=m.embedding, names=m.entity_names)
            for m in members
        ]
        hub_names = {n for m in members for e, n in zip(m.entity_ids, m.entity_names, strict=False) if e in hubs}
        return extractive_merge(statements, dedup_threshold=self.settings.dedup_threshold, hub_names=hub_names)

    def _group_write(self, members: Sequence[CandidateRow], facts: list[Fact], method: str) -> GroupWrite:
        writes: list[FactWrite] = []
        for f in facts:
            srcs = [members[i] for i in f.sources]
            promote = srcs[0].id if len(srcs) == 1 and normalize_for_hash(f.text) == normalize_for_hash(srcs[0].text) else None
            same_conv = {s.conversation_id for s in srcs}
            said = [s.said_at for s in srcs if s.said_at is not None]
            occurred = [s.occurred_at for s in srcs if s.occurred_at is not None]
            ends = [s.valid_to for s in srcs if s.valid_to is not None]
            common_meta = dict(srcs[0].metadata)
            for s in srcs[1:]:
                common_meta = {k: v for k, v in common_meta.items() if s.metadata.get(k) == v}
            common_meta = {**without_fact_keys(common_meta), **fact_keys(f.text, str(common_meta.get("speaker") or "User"))}
            writes.append(
                FactWrite(
                    text=f.text,
                    content_hash=content_hash(f.text),
                    memory_type=members[0].memory_type,
                    source_ids=[s.id for s in srcs],
                    importance=min(1.0, max(s.base_importance for s in srcs) + MERGE_BONUS * (len(srcs) - 1)),
                    confidence=max(s.confidence for s in srcs),
                    access_count=max(s.access_count for s in srcs),
                    said_at=max(said) if said else None,
                    occurred_at=min(occurred) if occurred else None,
                    valid_from=min(s.when for s in srcs),
                    valid_to=max(ends) if len(ends) == len(srcs) else None,
                    conversation_id=same_conv.pop() if len(same_conv) == 1 else None,
                    metadata=common_meta,
                    embedding=next((s.embedding for s in srcs if s.text == f.text), None),
                    promote=promote,
                    agent_id=members[0].agent_id,
                    run_id=members[0].run_id,
                )
            )
        # contradictions among the facts (disjoint sources): each stays its own fact; a value change
        # or a negation ends the older fact's validity when the newer one starts
        names = list(dict.fromkeys(n for m in members for n in m.entity_names))
        for i, j, c in conflicts_among([w.text for w in writes], names):
            a, b = writes[i], writes[j]
            if set(a.source_ids) & set(b.source_ids):
                continue
            a.contradicts.append(j)
            b.contradicts.append(i)
            if c.strong and a.valid_from is not None and b.valid_from is not None and a.valid_from != b.valid_from:
                old, new = (a, b) if a.valid_from < b.valid_from else (b, a)
                old.valid_to = new.valid_from if old.valid_to is None else min(old.valid_to, new.valid_from)  # type: ignore[type-var]
        n = len(members)
        reason = (
            f"consolidated {n} short-term memories into {len(writes)} long-term ({method})"
            if n > 1
            else "consolidated into long-term memory (important or rehearsed, related to no other memory)"
        )
        return GroupWrite(sources={m.id: m.updated_at for m in members}, facts=writes, method=method, reason=reason)

    async def _embed(self, writes: list[GroupWrite]) -> None:
        todo = [f for gw in writes for f in gw.facts if f.promote is None and f.embedding is None]
        if not todo:
            return
        vecs = await asyncio.to_thread(self.embedder.embed, [f.text for f in todo])
        for f, v in zip(todo, np.asarray(vecs), strict=True):
            f.embedding = v

    # ------------------------------------------------------------------------------------------
    # cleanup
    # ------------------------------------------------------------------------------------------
    async def cleanup(self, user_id: str, now: datetime, report: LifecycleReport) -> None:
        res = await self._db(
            cleanup,
            self.store,
            user_id,
            now=now,
            min_importance=self.policy.min_importance,
            retention_days=self.settings.deleted_retention_days,
        )
        report.memories_cleaned += len(res.cleaned)
        report.purged += len(res.purge.deleted) + len(res.purge.predecessors)
        report.expired += len(res.purge.expired)
        report.entities_purged += res.purge.entities
