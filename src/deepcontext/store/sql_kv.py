"""The key-value rows of a user, and the user's display name."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import delete, select, text, update

from deepcontext.store.interface import MemoryRewrite
from deepcontext.store.migrations import NAMED_USER_TURN
from deepcontext.store.repository import Writes

if TYPE_CHECKING:
    from deepcontext.store.sql_writes import MemoryWriter

__all__ = ["KeyValues"]

_USER_NS, _PROFILE = "user", "profile"  # the kv row of the user's display name


class KeyValuesContext(Writes, Protocol):
    """What :class:`KeyValues` uses of its store: write transactions and the memory writer."""

    @property
    def writer(self) -> MemoryWriter: ...


class KeyValues:
    """A store's key-value rows."""

    def __init__(self, store: KeyValuesContext) -> None:
        self.s = store

    def user_name(self, user_id: str) -> str | None:
        kv, tt = self.s.t.kv, self.s.t.turns
        with self.s.connection() as conn:
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == _USER_NS, kv.c.key == _PROFILE)
            ).first()
            if row is not None and isinstance(row[0], dict) and row[0].get("name"):
                return str(row[0]["name"])
            first = conn.execute(
                select(tt.c.name).where(tt.c.user_id == user_id, text(NAMED_USER_TURN)).order_by(tt.c.id).limit(1)
            ).first()
        return None if first is None else str(first[0])

    def set_user_name(
        self, user_id: str, name: str, now: datetime, rewrites: Sequence[MemoryRewrite] = (), *, source: str = "set"
    ) -> int:
        from deepcontext.text import entity_norm

        kv, et, me, rt = self.s.t.kv, self.s.t.entities, self.s.t.memory_entities, self.s.t.relations
        with self.s.transaction() as conn:
            self.s.lock_user(conn, user_id)
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == _USER_NS, kv.c.key == _PROFILE)
            ).first()
            profile = row[0] if row is not None and isinstance(row[0], dict) else {}
            old = profile.get("name")
            if source != "set" and old and profile.get("source", "set") == "set":
                return -1  # a name set explicitly is not replaced by one the user said
            rewritten = self.s.writer.rewrite_texts(conn, user_id, rewrites, now, "the user's display name") if rewrites else 0
            stmt = self.s.upsert(kv).values(
                user_id=user_id, namespace=_USER_NS, key=_PROFILE, value={"name": name, "source": source}, updated_at=now
            )
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[kv.c.user_id, kv.c.namespace, kv.c.key],
                    set_={"value": stmt.excluded.value, "updated_at": now},
                )
            )
            new_norm = entity_norm(name)
            for former in dict.fromkeys([old or "", "User"]):
                norm = entity_norm(former)
                if not norm or norm == new_norm:
                    continue
                src = conn.execute(
                    select(et.c.id, et.c.mention_count).where(et.c.user_id == user_id, et.c.norm_name == norm)
                ).first()
                if src is None:
                    continue
                dst = conn.execute(select(et.c.id).where(et.c.user_id == user_id, et.c.norm_name == new_norm)).first()
                if dst is None:  # one node, renamed
                    conn.execute(update(et).where(et.c.id == src[0]).values(name=name, norm_name=new_norm, last_seen_at=now))
                    continue
                a, b = int(src[0]), int(dst[0])
                linked = select(me.c.memory_id).where(me.c.entity_id == b)
                conn.execute(update(me).where(me.c.entity_id == a, me.c.memory_id.not_in(linked)).values(entity_id=b))
                for col, other in ((rt.c.source_id, rt.c.target_id), (rt.c.target_id, rt.c.source_id)):
                    rows = conn.execute(select(rt.c.id, other, rt.c.relation).where(rt.c.user_id == user_id, col == a)).all()
                    for rid, other_id, relation in rows:
                        pair = (b, other_id) if col is rt.c.source_id else (other_id, b)
                        taken = conn.execute(
                            select(rt.c.id).where(
                                rt.c.user_id == user_id,
                                rt.c.source_id == pair[0],
                                rt.c.relation == relation,
                                rt.c.target_id == pair[1],
                            )
                        ).first()
                        if taken is None and pair[0] != pair[1]:
                            conn.execute(update(rt).where(rt.c.id == rid).values({col.name: b}))
                conn.execute(
                    update(et).where(et.c.id == b).values(mention_count=et.c.mention_count + int(src[1]), last_seen_at=now)
                )
                conn.execute(delete(et).where(et.c.id == a))  # its leftover links go with it (cascade)
            self.s.bump_user(conn, user_id, now)
        self.s.forget_user_caches(user_id)
        return rewritten

    def kv_get(self, user_id: str, namespace: str, key: str) -> Any | None:
        kv = self.s.t.kv
        with self.s.connection() as conn:
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == namespace, kv.c.key == key)
            ).first()
        return None if row is None else row[0]

    def kv_put(self, user_id: str, namespace: str, key: str, value: Any, now: datetime) -> None:
        kv = self.s.t.kv
        with self.s.transaction() as conn:
            stmt = self.s.upsert(kv).values(user_id=user_id, namespace=namespace, key=key, value=value, updated_at=now)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[kv.c.user_id, kv.c.namespace, kv.c.key],
                    set_={"value": stmt.excluded.value, "updated_at": now},
                )
            )

    def kv_delete(self, user_id: str, namespace: str, key: str) -> bool:
        kv = self.s.t.kv
        with self.s.transaction() as conn:
            res = conn.execute(delete(kv).where(kv.c.user_id == user_id, kv.c.namespace == namespace, kv.c.key == key))
            return bool(res.rowcount)

    def kv_list(self, user_id: str, namespace: str) -> dict[str, Any]:
        kv = self.s.t.kv
        with self.s.connection() as conn:
            return {
                r.key: r.value
                for r in conn.execute(
                    select(kv.c.key, kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == namespace).order_by(kv.c.key)
                )
            }
