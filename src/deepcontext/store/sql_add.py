"""Writing an add: turns, memories, provenance, graph and history in one transaction, in bulk.

Rows of one kind go to the database in one statement (executemany / multi-row INSERT ... RETURNING),
so an add of 50 turns costs a dozen statements, not hundreds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, func, insert, select, update

from deepcontext.errors import MemoryNotFoundError
from deepcontext.store.interface import AddOutcome, AddPlan
from deepcontext.store.repository import Lookups, Writes
from deepcontext.store.sql_writes import MemoryWriter, history_row
from deepcontext.types import EntityType, HistoryEvent, MemoryStatus

if TYPE_CHECKING:
    from deepcontext.store.sql_memories import MemoryReads

__all__ = ["AddWriter"]


class AddContext(Lookups, Writes, Protocol):
    """What :class:`AddWriter` uses of its store: write transactions, the turn check, the memories
    it reads and the writer of their rows."""

    @property
    def memories(self) -> MemoryReads: ...

    @property
    def writer(self) -> MemoryWriter: ...

    def check_turns(self, conn: Connection, user_id: str, turn_ids: Sequence[int]) -> None: ...


class AddWriter:
    """A store's ``apply_add`` and its bulk helpers."""

    def __init__(self, store: AddContext) -> None:
        self.s = store

    def apply_add(self, plan: AddPlan) -> AddOutcome:
        t = self.s.t
        now = plan.now
        uid = plan.user_id
        with self.s.transaction() as conn:
            rev = self.s.bump_user(conn, uid, now, consolidation_due=plan.consolidation_due)
            turn_ids = self._insert_turns(conn, plan, rev)
            entity_ids = self._upsert_entities(conn, plan)

            external = {tid for m in plan.memories for tid in m.source_turn_ids}
            external |= {tid for c in plan.changes for tid in c.source_turn_ids}
            if external:
                self.s.check_turns(conn, uid, sorted(external))

            def sources_of(indices: Sequence[int], ids: Sequence[int]) -> list[int]:
                return list(dict.fromkeys([turn_ids[i] for i in indices] + list(ids)))

            # exact duplicates already stored (checked inside the transaction: races cannot duplicate)
            hashes = [m.content_hash for m in plan.memories if m.dedupe]
            scope = (plan.agent_id, plan.run_id)
            known: dict[str, Any] = dict(self.s.memories.active_hashes(conn, uid, hashes, now, scope=scope)) if hashes else {}
            olds = self._active_rows(
                conn, uid, [o for m in plan.memories for o in ([m.supersedes] if m.supersedes else []) + m.also_supersedes]
            )

            to_insert: list[int] = []
            folds: list[tuple[int, Any]] = []  # (plan index, existing id or ("new", plan index))
            for i, nm in enumerate(plan.memories):
                dup = known.get(nm.content_hash) if nm.dedupe else None
                if dup is not None and dup != nm.supersedes:
                    folds.append((i, dup))
                    continue
                known[nm.content_hash] = ("new", i)
                to_insert.append(i)

            memory_ids: list[int] = [0] * len(plan.memories)
            inserted = [False] * len(plan.memories)
            if to_insert:
                rows = [self._memory_row(plan, plan.memories[i]) for i in to_insert]
                verbatim = [self._verbatim_turn(plan.memories[i], turn_ids) for i in to_insert]
                new_ids = self.s.writer.insert(conn, uid, rows, now=now, rev=rev, turns=verbatim)
                for i, mid in zip(to_insert, new_ids, strict=True):
                    memory_ids[i] = int(mid)
                    inserted[i] = True

            source_rows: list[dict[str, Any]] = []
            entity_rows: list[dict[str, Any]] = []
            link_rows: list[dict[str, Any]] = []
            history: list[dict[str, Any]] = []
            # neighbours found while planning may be gone since (delete_user, cleanup): no link to them
            linkable = self._existing_memories(conn, uid, {o for i in to_insert for o, _ in plan.memories[i].links})
            for i in to_insert:
                nm, mid = plan.memories[i], memory_ids[i]
                src = sources_of(nm.source_turn_indices, nm.source_turn_ids)
                source_rows += [{"memory_id": mid, "turn_id": tid, "user_id": uid} for tid in src]
                ents = sorted({entity_ids[n] for n in nm.entity_names if n in entity_ids})
                entity_rows += [{"memory_id": mid, "entity_id": e, "user_id": uid} for e in ents]
                for other, sim in nm.links:
                    if other != mid and other in linkable:
                        link_rows.append({"memory_id": mid, "other_id": other, "user_id": uid, "similarity": sim})
                        link_rows.append({"memory_id": other, "other_id": mid, "user_id": uid, "similarity": sim})
                old = olds.get(nm.supersedes) if nm.supersedes else None
                details: dict[str, Any] = {"turn_ids": src[:50]}
                if nm.supersedes:
                    details["supersedes"] = nm.supersedes
                if nm.also_supersedes:
                    details["also_supersedes"] = list(nm.also_supersedes)
                history.append(
                    history_row(
                        uid, mid, nm.event, now, old_text=old.text if old is not None else None, new_text=nm.text,
                        actor=plan.actor, reason=nm.reason, details=details,
                    )
                )  # fmt: skip
                replaced = [olds[o] for o in ([nm.supersedes] if nm.supersedes else []) + nm.also_supersedes]
                self.s.writer.supersede(
                    conn, uid, replaced, by=mid, new_text=nm.text, valid_to=nm.valid_from or nm.said_at or now, now=now,
                    rev=rev, actor=plan.actor, event=nm.event, reason=nm.reason,
                )  # fmt: skip
                if nm.event is HistoryEvent.REPLACE:
                    for old in replaced:
                        self.s.writer.outdate_turns(conn, uid, old.id, nm.valid_from or nm.said_at or now, now, rev)
            if source_rows:
                conn.execute(insert(t.memory_sources), source_rows)
            if entity_rows:
                conn.execute(insert(t.memory_entities), entity_rows)
            if link_rows:
                ml = t.memory_links
                conn.execute(self.s.upsert(ml).on_conflict_do_nothing(index_elements=[ml.c.memory_id, ml.c.other_id]), link_rows)

            mentioned: list[int] = []  # memories said again: counted and reinforced
            for i, dup in folds:
                nm = plan.memories[i]
                target = memory_ids[dup[1]] if isinstance(dup, tuple) else int(dup)
                memory_ids[i] = target
                src = sources_of(nm.source_turn_indices, nm.source_turn_ids)
                added = self.s.writer.link_sources(conn, uid, target, src)
                mentioned.append(target)
                history.append(
                    history_row(
                        uid, target, HistoryEvent.NOOP, now, actor=plan.actor, reason=nm.reason or "seen again",
                        details={"turn_ids": src[:50], "new_sources": added},
                    )
                )  # fmt: skip

            changed = self._active_rows(conn, uid, [c.memory_id for c in plan.changes])
            for ch in plan.changes:
                row = changed[ch.memory_id]
                src = sources_of(ch.source_turn_indices, ch.source_turn_ids)
                if ch.action is HistoryEvent.DELETE:
                    turns: dict[str, Any] = {"turn_ids": src[:50]}
                    self.s.writer.soft_delete(
                        conn, uid, [row], now=now, rev=rev, actor=plan.actor, reason=ch.reason, details=lambda _row: turns
                    )
                else:
                    added = self.s.writer.link_sources(conn, uid, row.id, src)
                    mentioned.append(row.id)
                    history.append(
                        history_row(
                            uid, row.id, HistoryEvent.NOOP, now, actor=plan.actor, reason=ch.reason or "seen again",
                            details={"turn_ids": src[:50], "new_sources": added},
                        )
                    )  # fmt: skip
            self.s.writer.reinforce(conn, uid, mentioned, now)
            self.s.writer.history_rows(conn, history)
            relations_written = self._upsert_relations(conn, plan, entity_ids)
            return AddOutcome(
                turn_ids=turn_ids,
                memory_ids=memory_ids,
                inserted=inserted,
                entity_ids=entity_ids,
                relations_written=relations_written,
            )

    # ------------------------------------------------------------------------------------------
    def _existing_memories(self, conn: Connection, user_id: str, memory_ids: set[int]) -> set[int]:
        """The ids among ``memory_ids`` that are rows of the user (whatever their status)."""
        if not memory_ids:
            return set()
        mt = self.s.t.memories
        q = select(mt.c.id).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(sorted(memory_ids)))
        return {int(r[0]) for r in conn.execute(q)}

    def _active_rows(self, conn: Connection, user_id: str, memory_ids: Sequence[int]) -> dict[int, Any]:
        """Active memories of the user by id (id, text); MemoryNotFoundError if one is missing."""
        ids = sorted(set(memory_ids))
        if not ids:
            return {}
        mt = self.s.t.memories
        rows = {
            int(r.id): r
            for r in conn.execute(
                select(mt.c.id, mt.c.text).where(
                    self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(ids), mt.c.status == MemoryStatus.ACTIVE.value
                )
            )
        }
        for mid in ids:
            if mid not in rows:
                raise MemoryNotFoundError(mid, user_id)
        return rows

    @staticmethod
    def _verbatim_turn(nm: Any, turn_ids: Sequence[int]) -> int | None:
        """The turn a verbatim turn memory stores (None for any other memory)."""
        if nm.source != "turn":
            return None
        if nm.source_turn_indices:
            return turn_ids[nm.source_turn_indices[0]]
        return nm.source_turn_ids[0] if nm.source_turn_ids else None

    @staticmethod
    def _memory_row(plan: AddPlan, nm: Any) -> dict[str, Any]:
        return {
            "text": nm.text,
            "content_hash": nm.content_hash,
            "memory_type": nm.memory_type.value,
            "tier": nm.tier.value,
            "importance": nm.importance,
            "confidence": nm.confidence,
            "said_at": nm.said_at,
            "occurred_at": nm.occurred_at,
            "valid_from": nm.valid_from or nm.said_at or plan.now,
            "expires_at": nm.expires_at,
            "conversation_id": nm.conversation_id,
            "source": nm.source,
            "consolidated_from": nm.consolidated_from,
            "metadata": nm.metadata,
            "pinned": nm.pinned,
            "tags": nm.tags,
            "canonical_key": nm.canonical_key,
            "embedding": nm.embedding,
            "agent_id": plan.agent_id,
            "run_id": plan.run_id,
        }

    def _insert_turns(self, conn: Connection, plan: AddPlan, rev: int) -> list[int]:
        if not plan.turns:
            return []
        t = self.s.t
        now = plan.now
        cv = t.conversations
        row = conn.execute(
            select(cv.c.tip_turn_id).where(cv.c.user_id == plan.user_id, cv.c.conversation_id == plan.conversation_id)
        ).first()
        if row is None:
            conn.execute(
                insert(cv).values(
                    user_id=plan.user_id,
                    conversation_id=plan.conversation_id,
                    tip_turn_id=None,
                    turn_count=0,
                    created_at=now,
                    updated_at=now,
                    metadata={},
                )
            )
            prev: int | None = None
        else:
            prev = row[0]
        explicit = [p for nt in plan.turns if nt.parent_ids for p in nt.parent_ids]
        if explicit:
            self.s.check_turns(conn, plan.user_id, explicit)
        rows: list[dict[str, Any]] = [
            {
                "user_id": plan.user_id,
                "conversation_id": plan.conversation_id,
                "role": nt.role,
                "name": nt.name,
                "content": nt.content,
                "content_hash": nt.content_hash,
                "kind": nt.kind,
                "said_at": nt.said_at,
                "created_at": now,
                "archived": False,
                "summarized_by": None,
                "summary_of": [],
                "tags": [],
                "metadata": nt.metadata,
                "agent_id": plan.agent_id,
                "run_id": plan.run_id,
            }
            for nt in plan.turns
        ]
        ids = [
            int(x)
            for x in conn.execute(insert(t.turns).returning(t.turns.c.id, sort_by_parameter_order=True), rows).scalars().all()
        ]
        edges: list[dict[str, Any]] = []
        for nt, tid in zip(plan.turns, ids, strict=True):
            parents = nt.parent_ids if nt.parent_ids is not None else ([prev] if prev is not None else [])
            edges += [{"user_id": plan.user_id, "child_id": tid, "parent_id": p, "position": i} for i, p in enumerate(parents)]
            prev = tid
        if edges:
            conn.execute(insert(t.turn_edges), edges)
        conn.execute(
            update(cv)
            .where(cv.c.user_id == plan.user_id, cv.c.conversation_id == plan.conversation_id)
            .values(tip_turn_id=prev, turn_count=cv.c.turn_count + len(ids), updated_at=now)
        )
        return ids

    def _upsert_entities(self, conn: Connection, plan: AddPlan) -> dict[str, int]:
        """Insert new entities, bump the others; returns norm_name -> id.

        mention_count grows by the number of memories of this add that mention the entity (at least
        1): a document frequency the graph leg uses to tell specific entities from ubiquitous ones."""
        if not plan.entities:
            return {}
        et = self.s.t.entities
        mentions: dict[str, int] = {}
        for nm in plan.memories:
            for n in set(nm.entity_names):
                mentions[n] = mentions.get(n, 0) + 1
        rows: dict[str, dict[str, Any]] = {}
        for e in plan.entities:
            rows.setdefault(
                e.norm_name,
                {
                    "user_id": plan.user_id,
                    "name": e.name,
                    "norm_name": e.norm_name,
                    "entity_type": e.entity_type.value,
                    "mention_count": max(1, mentions.get(e.norm_name, 0)),
                    "first_seen_at": plan.now,
                    "last_seen_at": plan.now,
                    "attributes": e.attributes,
                },
            )
        stmt = self.s.upsert(et)
        stmt = stmt.on_conflict_do_update(
            index_elements=[et.c.user_id, et.c.norm_name],
            set_={
                "mention_count": et.c.mention_count + stmt.excluded.mention_count,
                "last_seen_at": stmt.excluded.last_seen_at,
                # a typed mention upgrades an entity first seen as OTHER
                "entity_type": func.coalesce(func.nullif(et.c.entity_type, EntityType.OTHER.value), stmt.excluded.entity_type),
            },
        )
        ordered = [rows[k] for k in sorted(rows)]  # a stable order: concurrent upserts lock rows alike
        conn.execute(stmt, ordered)
        ids: dict[str, int] = {}
        names = sorted(rows)
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            for norm, eid in conn.execute(
                select(et.c.norm_name, et.c.id).where(et.c.user_id == plan.user_id, et.c.norm_name.in_(chunk))
            ):
                ids[norm] = int(eid)
        return ids

    def _upsert_relations(self, conn: Connection, plan: AddPlan, entity_ids: dict[str, int]) -> int:
        rt = self.s.t.relations
        rows: dict[tuple[int, str, int], dict[str, Any]] = {}
        for r in plan.relations:
            s, o = entity_ids.get(r.source_norm), entity_ids.get(r.target_norm)
            if s is None or o is None or s == o:
                continue
            rows.setdefault(
                (s, r.relation, o),
                {
                    "user_id": plan.user_id,
                    "source_id": s,
                    "target_id": o,
                    "relation": r.relation,
                    "strength": 1.0,
                    "mention_count": 1,
                    "created_at": plan.now,
                    "updated_at": plan.now,
                    "properties": r.properties,
                },
            )
        if not rows:
            return 0
        stmt = self.s.upsert(rt)
        capped = func.min(rt.c.strength + 0.1, 2.0) if conn.dialect.name == "sqlite" else func.least(rt.c.strength + 0.1, 2.0)
        stmt = stmt.on_conflict_do_update(
            index_elements=[rt.c.user_id, rt.c.source_id, rt.c.relation, rt.c.target_id],
            set_={"strength": capped, "mention_count": rt.c.mention_count + 1, "updated_at": stmt.excluded.updated_at},
        )
        conn.execute(stmt, [rows[k] for k in sorted(rows)])
        return len(rows)
