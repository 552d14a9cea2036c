"""Export and import of every row of a user (an import remaps ids)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import MetaData, insert, select, update

from deepcontext.errors import ValidationError
from deepcontext.store.repository import Writes
from deepcontext.store.sql_writes import history_row
from deepcontext.types import HistoryEvent

if TYPE_CHECKING:
    from deepcontext.store.sql_writes import MemoryWriter

__all__ = ["IMPORTS_NAMESPACE", "Transfer"]

#: kv namespace of the imports a user received (key: the export's fingerprint)
IMPORTS_NAMESPACE = "deepcontext.imports"


class TransferContext(Writes, Protocol):
    """What :class:`Transfer` uses of its store: write transactions, every table, the memory writer."""

    @property
    def metadata(self) -> MetaData: ...

    @property
    def writer(self) -> MemoryWriter: ...


class Transfer:
    """A store's export and import."""

    def __init__(self, store: TransferContext) -> None:
        self.s = store

    EXPORT_ORDER = (
        "conversations", "turns", "turn_edges", "entities", "relations", "memories",
        "memory_sources", "memory_entities", "memory_links", "memory_history", "kv", "activity",
    )  # fmt: skip

    def export_rows(self, user_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row of the user, table by table in import order, as (table name, column dict)."""
        for name in self.EXPORT_ORDER:
            table = self.s.metadata.tables[name]
            order = [c for c in table.primary_key.columns]
            with self.s.connection() as conn:
                for r in conn.execute(select(table).where(table.c.user_id == user_id).order_by(*order)):
                    yield name, dict(r._mapping)

    def import_rows(
        self,
        user_id: str,
        rows: Sequence[tuple[str, dict[str, Any]]],
        now: datetime,
        *,
        fingerprint: str | None = None,
        maps: dict[str, dict[int, int]] | None = None,
        fixups: Sequence[tuple[str, dict[str, Any]]] = (),
        part: str | None = None,
    ) -> dict[str, int]:
        """Write exported rows for ``user_id`` with fresh ids (references remapped). One transaction.
        With a ``fingerprint``, an import of the same rows into the same user writes nothing the
        second time and returns the first one's counts plus ``already_imported: 1``. An import in
        parts shares ``maps`` (old id -> new id per kind, filled in place), records each ``part``
        under that key with the ids it gave, and resolves in its last part the references of earlier
        parts' rows (``fixups``: not written again) to rows imported after them."""
        t = self.s.t
        maps = maps if maps is not None else {}
        for kind in ("turns", "entities", "relations", "memories"):
            maps.setdefault(kind, {})
        before = {kind: set(ids) for kind, ids in maps.items()}
        fixed: dict[str, list[dict[str, Any]]] = {}
        for name, row in fixups:
            fixed.setdefault(name, []).append(row)
        counts: dict[str, int] = {}
        by_table: dict[str, list[dict[str, Any]]] = {}
        for name, row in rows:
            if name not in self.EXPORT_ORDER:
                raise ValidationError(f"unknown table {name!r} in import", field="records")
            by_table.setdefault(name, []).append(row)

        def m(kind: str, old: Any) -> Any:
            if old is None:
                return None
            return maps[kind].get(int(old))

        kv = t.kv
        mark = (kv.c.user_id == user_id, kv.c.namespace == IMPORTS_NAMESPACE, kv.c.key == fingerprint)
        part_mark = (kv.c.user_id == user_id, kv.c.namespace == IMPORTS_NAMESPACE, kv.c.key == part)
        with self.s.transaction() as conn:
            rev = self.s.bump_user(conn, user_id, now)  # locks the user: a concurrent retry waits here
            for key, where in ((fingerprint, mark), (part, part_mark)):
                done = conn.execute(select(kv.c.value).where(*where)).scalar() if key is not None else None
                if done is not None:
                    return {**done["counts"], "already_imported": 1}
            deferred_tips: list[tuple[str, Any, Any]] = [
                (r["conversation_id"], r.get("tip_turn_id"), r.get("summary_turn_id")) for r in fixed.get("conversations", [])
            ]
            for row in by_table.get("conversations", []):
                exists = conn.execute(
                    select(t.conversations.c.conversation_id).where(
                        t.conversations.c.user_id == user_id,
                        t.conversations.c.conversation_id == row["conversation_id"],
                    )
                ).first()
                if exists is None:
                    conn.execute(
                        insert(t.conversations).values(
                            **{**row, "user_id": user_id, "tip_turn_id": None, "summary_turn_id": None}
                        )
                    )
                deferred_tips.append((row["conversation_id"], row.get("tip_turn_id"), row.get("summary_turn_id")))
            for row in by_table.get("turns", []):
                old = row["id"]
                vals = {k: v for k, v in row.items() if k != "id"}
                vals.update(user_id=user_id, summarized_by=None)
                maps["turns"][int(old)] = int(conn.execute(insert(t.turns).values(**vals).returning(t.turns.c.id)).scalar_one())
            for row in [*fixed.get("turns", []), *by_table.get("turns", [])]:
                new_id = maps["turns"][int(row["id"])]
                upd: dict[str, Any] = {}
                if row.get("summarized_by") is not None:
                    upd["summarized_by"] = m("turns", row["summarized_by"])
                if row.get("summary_of"):
                    upd["summary_of"] = [m("turns", x) for x in row["summary_of"] if m("turns", x) is not None]
                if upd:
                    conn.execute(update(t.turns).where(t.turns.c.id == new_id).values(**upd))
            edges = [
                {**r, "user_id": user_id, "child_id": m("turns", r["child_id"]), "parent_id": m("turns", r["parent_id"])}
                for r in by_table.get("turn_edges", [])
            ]
            edges = [e for e in edges if e["child_id"] and e["parent_id"]]
            if edges:
                conn.execute(insert(t.turn_edges), edges)
            for cid, tip, summ in deferred_tips:
                conn.execute(
                    update(t.conversations)
                    .where(t.conversations.c.user_id == user_id, t.conversations.c.conversation_id == cid)
                    .values(tip_turn_id=m("turns", tip), summary_turn_id=m("turns", summ))
                )
            for row in by_table.get("entities", []):
                ex = conn.execute(
                    select(t.entities.c.id).where(t.entities.c.user_id == user_id, t.entities.c.norm_name == row["norm_name"])
                ).first()
                if ex is not None:
                    maps["entities"][int(row["id"])] = int(ex[0])
                    continue
                vals = {k: v for k, v in row.items() if k != "id"}
                vals["user_id"] = user_id
                maps["entities"][int(row["id"])] = int(
                    conn.execute(insert(t.entities).values(**vals).returning(t.entities.c.id)).scalar_one()
                )
            for row in by_table.get("relations", []):
                s_, o_ = m("entities", row["source_id"]), m("entities", row["target_id"])
                if s_ is None or o_ is None:
                    continue
                stmt = self.s.upsert(t.relations).values(
                    **{**{k: v for k, v in row.items() if k != "id"}, "user_id": user_id, "source_id": s_, "target_id": o_}
                )
                conn.execute(stmt.on_conflict_do_nothing())
            exported = by_table.get("memories", [])
            first_turn: dict[int, int] = {}
            for r in by_table.get("memory_sources", []):
                old_m, old_t = int(r["memory_id"]), int(r["turn_id"])
                first_turn[old_m] = min(first_turn.get(old_m, old_t), old_t)
            fresh = self.s.writer.insert(
                conn,
                user_id,
                [
                    {**{k: v for k, v in row.items() if k != "id"}, "superseded_by": None, "consolidated_from": []}
                    for row in exported
                ],
                now=now,
                rev=rev,
                # verbatim turns are indexed with their context, as when they were first written
                turns=[
                    m("turns", first_turn[int(row["id"])])
                    if row.get("source") == "turn" and int(row["id"]) in first_turn
                    else None
                    for row in exported
                ],
            )
            for row, new_id in zip(exported, fresh, strict=True):
                maps["memories"][int(row["id"])] = new_id
            for row in [*fixed.get("memories", []), *by_table.get("memories", [])]:
                upd = {}
                if row.get("superseded_by") is not None:
                    upd["superseded_by"] = m("memories", row["superseded_by"])
                if row.get("consolidated_from"):
                    upd["consolidated_from"] = [m("memories", x) for x in row["consolidated_from"] if m("memories", x)]
                if upd:
                    self.s.writer.relink(conn, user_id, maps["memories"][int(row["id"])], **upd)
            for name, cols in (
                ("memory_sources", (("memory_id", "memories"), ("turn_id", "turns"))),
                ("memory_entities", (("memory_id", "memories"), ("entity_id", "entities"))),
                ("memory_links", (("memory_id", "memories"), ("other_id", "memories"))),
            ):
                out = []
                for r in by_table.get(name, []):
                    vals = {**r, "user_id": user_id}
                    for col, kind in cols:
                        vals[col] = m(kind, r[col])
                    if all(vals[col] is not None for col, _ in cols):
                        out.append(vals)
                if out:
                    conn.execute(insert(self.s.metadata.tables[name]), out)
            hist = []
            for r in by_table.get("memory_history", []):
                mid = m("memories", r["memory_id"])
                if mid is not None:
                    hist.append({**{k: v for k, v in r.items() if k != "id"}, "user_id": user_id, "memory_id": mid})
            self.s.writer.history_rows(conn, hist)
            self.s.writer.history_rows(
                conn,
                [history_row(user_id, mid, HistoryEvent.IMPORT, now, reason="restored from an export") for mid in fresh],
            )
            for r in by_table.get("kv", []):
                stmt = self.s.upsert(t.kv).values(**{**r, "user_id": user_id})
                conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=[t.kv.c.user_id, t.kv.c.namespace, t.kv.c.key],
                        set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
                    )
                )
            for name, rows_ in by_table.items():
                counts[name] = len(rows_)
            if part is not None:
                given = {kind: {str(k): v for k, v in ids.items() if k not in before[kind]} for kind, ids in maps.items()}
                value = {"counts": counts, "at": now.isoformat(), "maps": given}
                conn.execute(
                    insert(kv).values(user_id=user_id, namespace=IMPORTS_NAMESPACE, key=part, value=value, updated_at=now)
                )
            if fingerprint is not None:
                conn.execute(
                    insert(kv).values(
                        user_id=user_id,
                        namespace=IMPORTS_NAMESPACE,
                        key=fingerprint,
                        value={"counts": counts, "at": now.isoformat()},
                        updated_at=now,
                    )
                )
        return counts
