"""What SQLite and PostgreSQL stores share: SQLAlchemy Core queries over the common schema.

Backends subclass :class:`SQLStore` and provide the engine, the transaction flavour, the keyword
index and the vector leg. Everything else (turns, memories, provenance, history, graph, kv,
listing, export, user deletion) is written once here.
"""

from __future__ import annotations

import base64
import functools
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, and_, bindparam, delete, false, func, insert, literal, or_, select, union_all, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from deepcontext.errors import (
    ConfigurationError,
    DeepContextError,
    MemoryNotFoundError,
    MigrationError,
    StorageError,
    TurnNotFoundError,
)
from deepcontext.store.base import MemoryFilters, MemoryRewrite, RankFields, Store, entity_limits
from deepcontext.store.metafilter import compile_filter, parse_metadata_filter
from deepcontext.store.migrations import MIGRATIONS, latest_version
from deepcontext.store.sql_add import AddWriter
from deepcontext.store.schema import Tables, build_metadata
from deepcontext.types import (
    HistoryEntry,
    HistoryEvent,
    Memory,
    MemoryStatus,
    MemoryTier,
    MemoryType,
    Provenance,
    Turn,
)

__all__ = ["SQLStore"]

_META_VERSION = "schema_version"


#: "no limit" for a LIMIT parameter (both backends take a 64-bit integer; SQLite has no NULL limit)
_NO_LIMIT = 2**62


def _chunks(seq: Sequence[Any], n: int = 500) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


_USER_NS, _PROFILE = "user", "profile"  # the kv row of the user's display name


class SQLStore(AddWriter, Store):
    """Common SQL implementation. Subclasses set ``engine`` and implement the abstract hooks."""

    engine: Engine

    def __init__(self, url: str, dim: int, *, tracer: Any = None) -> None:
        self.url = url
        self.dim = dim
        self.metadata = build_metadata(dim)
        self.t = Tables(self.metadata)
        self.tracer = tracer
        self._count_cache: dict[str, tuple[tuple[str, str, int], int]] = {}
        self._pinned = threading.local()

    # ------------------------------------------------------------------------------------------
    # transactions
    # ------------------------------------------------------------------------------------------
    @contextmanager
    def _write(self, begin: Callable[[], Any] | None = None) -> Iterator[Connection]:
        """A write transaction. Errors roll back and surface as StorageError (ours pass through)."""
        try:
            with (begin or self._begin_write)() as conn:
                yield conn
        except DeepContextError:
            raise
        except SQLAlchemyError as exc:
            raise StorageError(f"database write failed: {exc.__class__.__name__}: {getattr(exc, 'orig', None) or exc}") from exc

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Run the reads inside on one connection of this thread (one snapshot on SQLite, and no
        pool checkout per call): search wraps its legs in it."""
        with self._pin(self._open_read):
            yield

    @contextmanager
    def side_reading(self) -> Iterator[None]:
        """As :meth:`reading`, on a connection from :meth:`_open_side_read` (see Store.side_reading)."""
        with self._pin(self._open_side_read):
            yield

    @contextmanager
    def _pin(self, opener: Callable[[], AbstractContextManager[Connection]]) -> Iterator[None]:
        if getattr(self._pinned, "conn", None) is not None:
            yield
            return
        with opener() as conn:
            self._pinned.conn = conn
            try:
                yield
            finally:
                self._pinned.conn = None

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        pinned = getattr(self._pinned, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._open_read() as conn:
            yield conn

    @contextmanager
    def _open_read(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except DeepContextError:
            raise
        except SQLAlchemyError as exc:
            raise StorageError(f"database read failed: {exc.__class__.__name__}: {getattr(exc, 'orig', None) or exc}") from exc

    def _open_side_read(self) -> AbstractContextManager[Connection]:
        """A read connection for :meth:`side_reading` (default: the main pool's)."""
        return self._open_read()

    def _begin_write(self) -> Any:
        """Context manager yielding a connection inside a write transaction."""
        return self.engine.begin()

    def _begin_migration(self) -> Any:
        """As :meth:`_begin_write`, for the migrations' transaction."""
        return self._begin_write()

    # hooks for the backend --------------------------------------------------------------------
    def _index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Add (memory_id, text) rows to the keyword index (if it is not maintained by the DB)."""

    def _unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        """Remove memories from the keyword index."""

    def _migration_lock(self, conn: Connection) -> None:
        """Serialise migrations across processes (inside the transaction)."""

    def _forget_user_caches(self, user_id: str) -> None:
        """Drop in-process caches of a user."""

    def _purge_deleted(self, conn: Connection) -> None:
        """After a user's rows were deleted, in the same transaction: remove what the database keeps
        of them beyond the rows (SQLite: the keyword index's deleted entries)."""

    def _speaker_names(self, conn: Connection, user_id: str) -> set[str]:
        """The names of the speakers of the user's user and assistant turns."""
        tt = self.t.turns
        rows = conn.execute(
            select(tt.c.name)
            .where(tt.c.user_id == user_id, tt.c.role.in_(["user", "assistant"]), tt.c.name.is_not(None))
            .distinct()
        )
        return {r[0] for r in rows}

    def _ids_in(self, col: Any, ids: Sequence[int]) -> ColumnElement[bool]:
        """``col IN (ids)`` for the hot paths of search (a hundred candidate ids); backends pass the
        list as one parameter where they can (rendering and binding one placeholder per id costs more
        than the lookups)."""
        return col.in_([int(i) for i in ids])

    def _owner(self, col: Any) -> Any:
        """The user_id column as used in lookups by primary key: both backends hide it from the
        planner so the primary key is used, never a user_id index (a user's rows are many; with
        statistics older than a bulk insert, PostgreSQL took the user index for a 1-row estimate and
        read all of the user's rows once per candidate: 60 ms for one keyword leg at 10k memories)."""
        return col

    def _lock_user(self, conn: Connection, user_id: str) -> None:
        """Serialise this write with the user's other writes, before it reads anything (PostgreSQL:
        the users row FOR UPDATE; SQLite: nothing, BEGIN IMMEDIATE already serialises writers)."""

    def _upsert(self, table: Any) -> Any:
        """The dialect's INSERT supporting ON CONFLICT (sqlite / postgresql insert())."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------
    # schema
    # ------------------------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self._read() as conn:
            return self._version(conn)

    def _version(self, conn: Connection) -> int:
        if not self.engine.dialect.has_table(conn, "dc_meta"):
            return 0
        row = conn.execute(select(self.t.meta.c.value).where(self.t.meta.c.key == _META_VERSION)).first()
        return int(row[0]) if row else 0

    def migrate(self) -> int:
        target = latest_version()
        try:
            with self._write(self._begin_migration) as conn:
                self._migration_lock(conn)
                current = self._version(conn)
                if current == 0 and all(self.engine.dialect.has_table(conn, t) for t in ("memories", "relationships")):
                    # DeepContext 0.1's tables: creating ours would fail on "memories"
                    from deepcontext.errors import LegacyDatabaseError

                    path = getattr(self, "path", None)
                    raise LegacyDatabaseError(str(path) if path else self.engine.url.render_as_string(hide_password=True))
                if current > target:
                    raise MigrationError(
                        f"database schema version {current} is newer than this deepcontext ({target}); upgrade deepcontext"
                    )
                if current == target:
                    return current
                from sqlalchemy import MetaData

                md = MetaData()
                for migration in MIGRATIONS:
                    for step in migration.steps:
                        step.model(md, self.dim)
                        if migration.version > current:
                            step.apply(conn, md, self.dim)
                self._set_meta(conn, _META_VERSION, str(target))
                return target
        except MigrationError:
            raise
        except StorageError as exc:
            raise MigrationError(f"migration failed: {exc}") from exc

    def _set_meta(self, conn: Connection, key: str, value: str) -> None:
        m = self.t.meta
        if conn.execute(select(m.c.key).where(m.c.key == key)).first():
            conn.execute(update(m).where(m.c.key == key).values(value=value))
        else:
            conn.execute(insert(m).values(key=key, value=value))

    def ensure_embedder(self, model_id: str, dimensions: int) -> None:
        m = self.t.meta
        with self._read() as conn:  # the usual case, and the only one a read-only database allows
            known = dict(conn.execute(select(m.c.key, m.c.value).where(m.c.key.in_(["embedder", "dimensions"]))).all())
        if known.get("embedder") == model_id and known.get("dimensions") == str(dimensions):
            return
        with self._write() as conn:
            rows = dict(
                conn.execute(select(m.c.key, m.c.value).where(m.c.key.in_(["embedder", "dimensions"]))).all()
            )
            if not rows:
                self._set_meta(conn, "embedder", model_id)
                self._set_meta(conn, "dimensions", str(dimensions))
                return
            if rows.get("embedder") != model_id or rows.get("dimensions") != str(dimensions):
                raise ConfigurationError(
                    f"this database holds vectors of embedder {rows.get('embedder')!r} "
                    f"({rows.get('dimensions')} dims) but the configured embedder is {model_id!r} "
                    f"({dimensions} dims); use the same embedder or another database"
                )

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------------------------------
    # writes
    # ------------------------------------------------------------------------------------------
    def _bump_user(self, conn: Connection, user_id: str, now: datetime, *, consolidation_due: bool = False) -> int:
        """Create the user row if needed and increment its version; returns the new version.

        An upsert, so two writers creating the same user cannot collide. On PostgreSQL the row
        lock it takes also serialises concurrent writes of one user until commit."""
        u = self.t.users
        stmt = self._upsert(u).values(
            user_id=user_id,
            version=1,
            incarnation=secrets.token_hex(8),
            created_at=now,
            updated_at=now,
            consolidation_due=consolidation_due,
        )
        set_: dict[str, Any] = {"version": u.c.version + 1, "updated_at": now}
        if consolidation_due:
            set_["consolidation_due"] = True
        stmt = stmt.on_conflict_do_update(index_elements=[u.c.user_id], set_=set_).returning(u.c.version)
        return int(conn.execute(stmt).scalar_one())

    def _check_turns(self, conn: Connection, user_id: str, turn_ids: Sequence[int]) -> None:
        ids = sorted(set(turn_ids))
        if not ids:
            return
        tt = self.t.turns
        found = {
            r[0] for r in conn.execute(select(tt.c.id).where(tt.c.user_id == user_id, tt.c.id.in_(ids))).all()
        }
        missing = [i for i in ids if i not in found]
        if missing:
            raise TurnNotFoundError(missing[0], user_id)

    def _active_memory(self, conn: Connection, user_id: str, memory_id: int) -> Any:
        mt = self.t.memories
        row = conn.execute(select(mt).where(self._owner(mt.c.user_id) == user_id, mt.c.id == memory_id)).first()
        if row is None or row.status != MemoryStatus.ACTIVE.value:
            raise MemoryNotFoundError(memory_id, user_id)
        return row

    def _history(
        self,
        conn: Connection,
        user_id: str,
        memory_id: int,
        event: HistoryEvent,
        now: datetime,
        *,
        old_text: str | None = None,
        new_text: str | None = None,
        actor: str = "system",
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        conn.execute(
            insert(self.t.memory_history).values(
                user_id=user_id,
                memory_id=memory_id,
                event=event.value,
                old_text=old_text,
                new_text=new_text,
                actor=actor,
                reason=reason,
                created_at=now,
                details=details or {},
            )
        )

    def _link_sources(self, conn: Connection, user_id: str, memory_id: int, turn_ids: Sequence[int]) -> int:
        if not turn_ids:
            return 0
        ms = self.t.memory_sources
        have = {
            r[0]
            for r in conn.execute(
                select(ms.c.turn_id).where(ms.c.memory_id == memory_id, ms.c.turn_id.in_(list(set(turn_ids))))
            ).all()
        }
        new = [tid for tid in dict.fromkeys(turn_ids) if tid not in have]
        if new:
            conn.execute(insert(ms), [{"memory_id": memory_id, "turn_id": tid, "user_id": user_id} for tid in new])
        return len(new)

    def _insert_links(self, conn: Connection, user_id: str, rows: list[dict[str, Any]]) -> None:
        ml = self.t.memory_links
        stmt = self._upsert(ml).on_conflict_do_nothing(index_elements=[ml.c.memory_id, ml.c.other_id])
        conn.execute(stmt, rows)

    def _scope_clause(self, scope: tuple[str | None, str | None]) -> list[ColumnElement[bool]]:
        """Memories of this agent and run, where given (None: any)."""
        mt = self.t.memories
        return [col == v for col, v in ((mt.c.agent_id, scope[0]), (mt.c.run_id, scope[1])) if v is not None]

    def _active_hashes(
        self,
        conn: Connection,
        user_id: str,
        hashes: Sequence[str],
        now: datetime,
        *,
        scope: tuple[str | None, str | None] | None = None,
    ) -> dict[str, int]:
        mt = self.t.memories
        in_scope = self._scope_clause(scope) if scope is not None else []
        out: dict[str, int] = {}
        for chunk in _chunks(sorted(set(hashes))):
            rows = conn.execute(
                select(mt.c.content_hash, mt.c.id)
                .where(
                    mt.c.user_id == user_id,
                    mt.c.content_hash.in_(list(chunk)),
                    mt.c.status == MemoryStatus.ACTIVE.value,
                    or_(mt.c.expires_at.is_(None), mt.c.expires_at > now),
                    *in_scope,
                )
                .order_by(mt.c.id)
            ).all()
            for h, mid in rows:
                out.setdefault(h, int(mid))
        return out

    def find_active_by_hash(
        self, user_id: str, hashes: Sequence[str], now: datetime, *, scope: tuple[str | None, str | None] | None = None
    ) -> dict[str, int]:
        with self._read() as conn:
            return self._active_hashes(conn, user_id, hashes, now, scope=scope)

    def update_memory(
        self,
        user_id: str,
        memory_id: int,
        *,
        text: str,
        content_hash: str,
        embedding: np.ndarray | None,
        now: datetime,
        actor: str,
        reason: str | None,
        metadata: dict[str, Any] | None = None,
    ) -> Memory:
        mt = self.t.memories
        with self._write() as conn:
            self._lock_user(conn, user_id)
            row = self._active_memory(conn, user_id, memory_id)
            rev = self._bump_user(conn, user_id, now)
            values: dict[str, Any] = {
                "text": text,
                "content_hash": content_hash,
                "embedding": embedding,
                "updated_at": now,
                "rev": rev,
            }
            if metadata is not None:
                values["metadata"] = metadata
            conn.execute(update(mt).where(mt.c.id == memory_id).values(**values))
            self._unindex(conn, [memory_id])
            self._index_texts(conn, [(memory_id, text)])
            self._history(
                conn, user_id, memory_id, HistoryEvent.UPDATE, now,
                old_text=row.text, new_text=text, actor=actor, reason=reason,
            )  # fmt: skip
        return self.get_memories(user_id, [memory_id])[0]

    def delete_memory(self, user_id: str, memory_id: int, *, now: datetime, actor: str, reason: str | None) -> Memory:
        mt = self.t.memories
        with self._write() as conn:
            self._lock_user(conn, user_id)
            row = self._active_memory(conn, user_id, memory_id)
            rev = self._bump_user(conn, user_id, now)
            conn.execute(
                update(mt)
                .where(mt.c.id == memory_id)
                .values(status=MemoryStatus.DELETED.value, deleted_at=now, valid_to=now, updated_at=now, rev=rev)
            )
            self._history(conn, user_id, memory_id, HistoryEvent.DELETE, now, old_text=row.text, actor=actor, reason=reason)
        return self.get_memories(user_id, [memory_id])[0]

    def delete_memories(
        self, user_id: str, filters: MemoryFilters, *, now: datetime, actor: str, reason: str | None
    ) -> list[int]:
        mt = self.t.memories
        with self._write() as conn:
            self._lock_user(conn, user_id)
            rows = conn.execute(
                select(mt.c.id, mt.c.text).where(mt.c.user_id == user_id, *self._filter_clause(filters, now)).order_by(mt.c.id)
            ).all()
            if not rows:
                return []
            rev = self._bump_user(conn, user_id, now)
            ids = [int(r.id) for r in rows]
            for chunk in _chunks(ids):
                conn.execute(
                    update(mt)
                    .where(mt.c.user_id == user_id, mt.c.id.in_(list(chunk)))
                    .values(status=MemoryStatus.DELETED.value, deleted_at=now, valid_to=now, updated_at=now, rev=rev)
                )
            for r in rows:
                self._history(conn, user_id, int(r.id), HistoryEvent.DELETE, now, old_text=r.text, actor=actor, reason=reason)
        return ids

    def memory_owner(self, memory_id: int) -> str | None:
        mt = self.t.memories
        with self._read() as conn:
            row = conn.execute(select(mt.c.user_id).where(mt.c.id == int(memory_id))).first()
        return None if row is None else str(row[0])

    def delete_user(self, user_id: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._write() as conn:
            # lock the users row as an add does, creating it if needed: on PostgreSQL a user being
            # created by a concurrent add is waited for instead of deadlocking with it
            created = self._bump_user(conn, user_id, datetime.now(UTC)) == 1
            ids = [r[0] for r in conn.execute(select(self.t.memories.c.id).where(self.t.memories.c.user_id == user_id))]
            self._unindex(conn, ids)
            for table in self.t.user_tables:
                counts[table.name] = conn.execute(delete(table).where(table.c.user_id == user_id)).rowcount or 0
            if created:
                counts[self.t.users.name] -= 1
            self._purge_deleted(conn)
        self._forget_user_caches(user_id)
        return counts

    def bump_access(self, user_id: str, memory_ids: Sequence[int], now: datetime) -> None:
        if not memory_ids:
            return
        mt = self.t.memories
        with self._write() as conn:
            conn.execute(
                update(mt)
                .where(self._owner(mt.c.user_id) == user_id, mt.c.id.in_(sorted(set(memory_ids))))
                .values(access_count=mt.c.access_count + 1, last_accessed_at=now)
            )

    # ------------------------------------------------------------------------------------------
    # reads
    # ------------------------------------------------------------------------------------------
    def _memory_from_row(self, r: Any) -> Memory:
        # rows come from our own schema: construct without re-validating (hot path of search)
        return Memory.model_construct(
            id=r.id,
            user_id=r.user_id,
            text=r.text,
            memory_type=MemoryType(r.memory_type),
            tier=MemoryTier(r.tier),
            status=MemoryStatus(r.status),
            importance=r.importance,
            confidence=r.confidence,
            access_count=r.access_count,
            mention_count=r.mention_count,
            last_accessed_at=r.last_accessed_at,
            created_at=r.created_at,
            updated_at=r.updated_at,
            said_at=r.said_at,
            occurred_at=r.occurred_at,
            valid_from=r.valid_from,
            valid_to=r.valid_to,
            expires_at=r.expires_at,
            superseded_by=r.superseded_by,
            conversation_id=r.conversation_id,
            source=r.source,
            consolidated_from=list(r.consolidated_from or []),
            metadata=dict(r.metadata or {}),
            pinned=bool(r.pinned),
            tags=list(r.tags or []),
            agent_id=r.agent_id,
            run_id=r.run_id,
            entities=[],
            sources=[],
        )

    def _memory_columns(self) -> list[Any]:
        return [c for c in self.t.memories.c if c.name != "embedding"]

    def get_memories(
        self, user_id: str, memory_ids: Sequence[int], *, details: bool = True, max_sources: int | None = None
    ) -> list[Memory]:
        ids = list(dict.fromkeys(int(i) for i in memory_ids))
        if not ids:
            return []
        with self._read() as conn:
            by_id = self._read_memories(conn, user_id, ids)
            if details and by_id:
                found = list(by_id)
                ents = self._memory_entities(conn, user_id, found)
                srcs = self._sources(conn, user_id, found, max_sources)
                for mid, mem in by_id.items():
                    mem.entities = ents.get(mid, [])
                    mem.sources = srcs.get(mid, [])
        return [by_id[i] for i in ids if i in by_id]

    def _read_memories(self, conn: Connection, user_id: str, ids: list[int]) -> dict[int, Memory]:
        """The user's memories among ``ids`` (without entities and sources), by id."""
        mt = self.t.memories
        by_id: dict[int, Memory] = {}
        for chunk in _chunks(ids):
            for r in conn.execute(
                select(*self._memory_columns()).where(self._owner(mt.c.user_id) == user_id, self._ids_in(mt.c.id, chunk))
            ):
                by_id[r.id] = self._memory_from_row(r)
        return by_id

    def _filter_clause(self, filters: MemoryFilters, now: datetime) -> list[ColumnElement[bool]]:
        mt = self.t.memories
        c: list[ColumnElement[bool]] = [mt.c.status.in_([s.value for s in filters.statuses])]
        if not filters.include_expired:
            c.append(or_(mt.c.expires_at.is_(None), mt.c.expires_at > now))
        if filters.tiers is not None:
            c.append(mt.c.tier.in_([x.value for x in filters.tiers]))
        if filters.types is not None:
            c.append(mt.c.memory_type.in_([x.value for x in filters.types]))
        if filters.conversation_ids is not None:
            c.append(mt.c.conversation_id.in_(list(filters.conversation_ids)))
        when = func.coalesce(mt.c.said_at, mt.c.created_at)
        if filters.after is not None:
            c.append(when >= filters.after)
        if filters.before is not None:
            c.append(when < filters.before)
        for col, wanted in ((mt.c.agent_id, filters.agent_ids), (mt.c.run_id, filters.run_ids)):
            if wanted is not None:
                named = [v for v in wanted if v is not None]
                either = ([col.in_(named)] if named else []) + ([col.is_(None)] if None in wanted else [])
                c.append(or_(*either) if either else false())
        if filters.metadata is not None:
            meta = filters.metadata
            tree = parse_metadata_filter(meta) if isinstance(meta, Mapping) else meta
            if tree is not None:
                c.append(compile_filter(tree, mt.c.metadata, self.engine.dialect.name))
        return c

    def list_memories(
        self,
        user_id: str,
        filters: MemoryFilters,
        *,
        limit: int,
        cursor: str | None,
        now: datetime,
    ) -> tuple[list[Memory], int, str | None]:
        mt = self.t.memories
        where = [mt.c.user_id == user_id, *self._filter_clause(filters, now)]
        after_id = _decode_cursor(cursor) if cursor else None
        with self._read() as conn:
            total = int(conn.execute(select(func.count()).select_from(mt).where(*where)).scalar_one())
            page_where = list(where)
            if after_id is not None:
                page_where.append(mt.c.id < after_id)
            ids = [
                r[0]
                for r in conn.execute(
                    select(mt.c.id).where(and_(*page_where)).order_by(mt.c.id.desc()).limit(limit + 1)
                )
            ]
        more = len(ids) > limit
        ids = ids[:limit]
        memories = self.get_memories(user_id, ids)
        return memories, total, (_encode_cursor(ids[-1]) if more and ids else None)

    def superseded_versions(
        self, user_id: str, memory_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, int]]:
        if not memory_ids:
            return []
        mt, ms = self.t.memories, self.t.memory_sources
        newer, here = ms.alias("newer"), ms.alias("here")
        stmt = (
            select(mt.c.id, here.c.memory_id)
            .join(newer, and_(newer.c.memory_id == mt.c.superseded_by, newer.c.user_id == user_id))
            .join(here, and_(here.c.turn_id == newer.c.turn_id, here.c.user_id == user_id))
            .where(
                mt.c.user_id == user_id,
                *self._filter_clause(replace(filters, statuses=(MemoryStatus.SUPERSEDED,)), now),
                here.c.memory_id.in_(list(dict.fromkeys(memory_ids))),
            )
            .order_by(mt.c.id.desc())
        )
        with self._read() as conn:
            pairs = [(int(a), int(b)) for a, b in conn.execute(stmt)]
        first: dict[int, int] = {}
        for old, new in pairs:
            first.setdefault(old, new)
        return list(first.items())

    def find_active_by_metadata_keys(
        self,
        user_id: str,
        keys: Sequence[str],
        now: datetime,
        *,
        limit: int = 50,
        scope: tuple[str | None, str | None] | None = None,
    ) -> list[Memory]:
        if not keys:
            return []
        mt = self.t.memories
        filters = MemoryFilters(tiers=(MemoryTier.SHORT_TERM, MemoryTier.LONG_TERM))
        has_key = or_(*(mt.c.metadata[k].as_string().isnot(None) for k in dict.fromkeys(keys)))
        with self._read() as conn:
            ids = [
                int(r[0])
                for r in conn.execute(
                    select(mt.c.id)
                    .where(
                        mt.c.user_id == user_id,
                        *self._filter_clause(filters, now),
                        *(self._scope_clause(scope) if scope is not None else []),
                        has_key,
                    )
                    .order_by(mt.c.id.desc())
                    .limit(limit)
                )
            ]
        return self.get_memories(user_id, ids, details=False) if ids else []

    def history(self, user_id: str, memory_id: int) -> list[HistoryEntry]:
        h = self.t.memory_history
        mt = self.t.memories
        with self._read() as conn:
            if conn.execute(select(mt.c.id).where(self._owner(mt.c.user_id) == user_id, mt.c.id == memory_id)).first() is None:
                raise MemoryNotFoundError(memory_id, user_id)
            rows = conn.execute(
                select(h).where(h.c.user_id == user_id, h.c.memory_id == memory_id).order_by(h.c.id)
            ).all()
        return [
            HistoryEntry(
                id=r.id,
                memory_id=r.memory_id,
                event=HistoryEvent(r.event),
                old_text=r.old_text,
                new_text=r.new_text,
                actor=r.actor,
                reason=r.reason,
                created_at=r.created_at,
                details=dict(r.details or {}),
            )
            for r in rows
        ]

    def memory_links(
        self, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None
    ) -> dict[int, list[int]]:
        ml, mt = self.t.memory_links, self.t.memories
        out: dict[int, list[int]] = {}
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if not ids or (per_memory is not None and per_memory <= 0):
            return out
        with self._read() as conn:
            rows = conn.execute(
                select(ml.c.memory_id, ml.c.other_id)
                .join(mt, mt.c.id == ml.c.other_id)
                .where(
                    ml.c.user_id == user_id,
                    ml.c.memory_id.in_(ids),
                    mt.c.status == MemoryStatus.ACTIVE.value,
                )
                .order_by(ml.c.memory_id, ml.c.similarity.desc(), ml.c.other_id)
            ).all()
        for mid, other in rows:
            got = out.setdefault(mid, [])
            if per_memory is None or len(got) < per_memory:
                got.append(other)
        return out

    def _turn_from_row(self, r: Any, parents: list[int]) -> Turn:
        return Turn(
            id=r.id,
            user_id=r.user_id,
            conversation_id=r.conversation_id,
            role=r.role,
            name=r.name,
            content=r.content,
            said_at=r.said_at,
            created_at=r.created_at,
            kind=r.kind,
            parent_ids=parents,
            archived=bool(r.archived),
            metadata=dict(r.metadata or {}),
            agent_id=r.agent_id,
            run_id=r.run_id,
        )

    def _turns_where(self, conn: Connection, *where: Any, order_desc: bool = False, limit: int | None = None) -> list[Turn]:
        tt, te = self.t.turns, self.t.turn_edges
        q = select(tt).where(*where).order_by(tt.c.id.desc() if order_desc else tt.c.id)
        if limit is not None:
            q = q.limit(limit)
        rows = conn.execute(q).all()
        if not rows:
            return []
        ids = [r.id for r in rows]
        parents: dict[int, list[int]] = {}
        for chunk in _chunks(ids):
            for child, parent in conn.execute(
                select(te.c.child_id, te.c.parent_id).where(te.c.child_id.in_(list(chunk))).order_by(te.c.position)
            ):
                parents.setdefault(child, []).append(parent)
        return [self._turn_from_row(r, parents.get(r.id, [])) for r in rows]

    def get_turns(self, user_id: str, turn_ids: Sequence[int]) -> list[Turn]:
        tt = self.t.turns
        ids = list(dict.fromkeys(turn_ids))
        if not ids:
            return []
        with self._read() as conn:
            found = {t.id: t for t in self._turns_where(conn, tt.c.user_id == user_id, tt.c.id.in_(ids))}
        return [found[i] for i in ids if i in found]

    def recent_turns(self, user_id: str, conversation_id: str, limit: int) -> list[Turn]:
        tt = self.t.turns
        with self._read() as conn:
            turns = self._turns_where(
                conn,
                tt.c.user_id == user_id,
                tt.c.conversation_id == conversation_id,
                order_desc=True,
                limit=limit,
            )
        return list(reversed(turns))

    def count_rows(self, user_id: str) -> dict[str, int]:
        with self._read() as conn:
            return {
                table.name: int(
                    conn.execute(select(func.count()).select_from(table).where(table.c.user_id == user_id)).scalar_one()
                )
                for table in self.t.user_tables
            }

    def _user_state(self, conn: Connection, user_id: str) -> tuple[str, int] | None:
        """The user's (incarnation, version): changes with every write of the user's memories (None
        for an unknown user)."""
        u = self.t.users
        row = conn.execute(select(u.c.incarnation, u.c.version).where(u.c.user_id == user_id)).first()
        return None if row is None else (row[0], int(row[1]))

    def active_memory_count(self, user_id: str) -> int:
        """Active memories of the user (cached per user version: one indexed lookup when unchanged)."""
        mt = self.t.memories
        with self._read() as conn:
            state = self._user_state(conn, user_id)
            if state is None:
                return 0
            key = (user_id, *state)
            cached = self._count_cache.get(user_id)
            if cached is not None and cached[0] == key:
                return cached[1]
            n = int(
                conn.execute(
                    select(func.count()).select_from(mt).where(mt.c.user_id == user_id, mt.c.status == MemoryStatus.ACTIVE.value)
                ).scalar_one()
            )
        self._count_cache[user_id] = (key, n)
        return n

    def list_users(self) -> list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute(select(self.t.users.c.user_id).order_by(self.t.users.c.user_id))]

    # ------------------------------------------------------------------------------------------
    # graph
    # ------------------------------------------------------------------------------------------
    # Statements of the graph leg, built once per store with bound parameters (building and keying
    # a statement costs as much as running it; expanding IN lists keep one compiled form).
    @functools.cached_property
    def _match_entities_stmt(self) -> Any:
        et = self.t.entities
        return select(et.c.norm_name, et.c.id, et.c.mention_count).where(
            et.c.user_id == bindparam("uid"), et.c.norm_name.in_(bindparam("names", expanding=True))
        )

    @functools.cached_property
    def _entities_stmt(self) -> Any:
        et = self.t.entities
        return select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count).where(
            et.c.user_id == bindparam("uid"), et.c.id.in_(bindparam("ids", expanding=True))
        )

    def _in_param(self, col: Any, name: str) -> Any:
        """``col`` is one of the ids bound as ``name`` (an expanding IN list; PostgreSQL binds an array)."""
        return col.in_(bindparam(name, expanding=True))

    def _not_in_param(self, col: Any, name: str) -> Any:
        return col.not_in(bindparam(name, expanding=True))

    @functools.cached_property
    def _neighbours_stmt(self) -> Any:
        """Entities related to any of ``ids`` and not in ``known``, each once with its strongest
        relation (strength, then relation id), strongest first, then by id, at most ``lim``.
        Parameters uid, ids, known, lim. Both directions as two index searches ((user, source) and
        (user, target); an OR of the two made SQLite read every relation of the user); only the
        chosen rows leave the database (a person's second hop touched ~550 relations for 12 new
        entities)."""
        et, rt = self.t.entities, self.t.relations

        def side(here: Any, there: Any, outgoing: int) -> Any:
            return (
                select(
                    rt.c.id.label("rid"), here.label("here"), there.label("there"), rt.c.relation, rt.c.strength,
                    et.c.name, et.c.entity_type, et.c.mention_count, literal(outgoing).label("outgoing"),
                )  # fmt: skip
                .join(et, and_(et.c.id == there, et.c.user_id == bindparam("uid")))
                .where(rt.c.user_id == bindparam("uid"), self._in_param(here, "ids"), self._not_in_param(there, "known"))
            )

        both = union_all(side(rt.c.source_id, rt.c.target_id, 1), side(rt.c.target_id, rt.c.source_id, 0)).subquery("both")
        best = func.row_number().over(partition_by=both.c.there, order_by=(both.c.strength.desc(), both.c.rid))
        ranked = select(both, best.label("rn")).subquery("ranked")
        return (
            select(
                ranked.c.here, ranked.c.there, ranked.c.relation, ranked.c.strength, ranked.c.name,
                ranked.c.entity_type, ranked.c.mention_count, ranked.c.rid, ranked.c.outgoing,
            )  # fmt: skip
            .where(ranked.c.rn == 1)
            .order_by(ranked.c.strength.desc(), ranked.c.there)
            .limit(bindparam("lim"))
        )

    def _neighbour_rows(
        self, conn: Connection, user_id: str, entity_ids: Sequence[int], known: Sequence[int], limit: int
    ) -> list[tuple[Any, ...]]:
        """(here, there, relation, strength, name, entity_type, mention_count, relation id, outgoing:
        1 when the relation runs from ``here`` to ``there``): each
        entity outside ``known`` related to one of ``entity_ids`` (``here``) once, with its strongest
        relation; strongest first, then by entity id; at most ``limit``."""
        params = {"uid": user_id, "ids": [int(i) for i in entity_ids], "known": [int(i) for i in known], "lim": int(limit)}
        return [tuple(r) for r in conn.execute(self._neighbours_stmt, params)]

    def match_entities(self, user_id: str, norm_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        names = sorted(set(norm_names))
        if not names:
            return {}
        out: dict[str, tuple[int, int]] = {}
        with self._read() as conn:
            for chunk in _chunks(names):
                for r in conn.execute(self._match_entities_stmt, {"uid": user_id, "names": list(chunk)}):
                    out[r.norm_name] = (int(r.id), int(r.mention_count))
        return out

    def entity_neighbourhood(
        self,
        user_id: str,
        entity_ids: Sequence[int],
        depth: int,
        *,
        max_per_level: int | None = None,
        max_expand_mentions: int | None = None,
    ) -> list[dict[str, Any]]:
        start = list(dict.fromkeys(int(i) for i in entity_ids))
        if not start:
            return []
        info: dict[int, dict[str, Any]] = {}
        with self._read() as conn:
            for r in conn.execute(self._entities_stmt, {"uid": user_id, "ids": start}):
                info[r.id] = {
                    "id": r.id,
                    "entity": r.name,
                    "entity_type": r.entity_type,
                    "relation": None,
                    "depth": 0,
                    "strength": 1.0,
                    "via": None,
                    "direction": None,
                    "mention_count": r.mention_count,
                }
            order = [i for i in start if i in info]

            def expands(i: int) -> bool:
                return max_expand_mentions is None or int(info[i]["mention_count"] or 0) <= max_expand_mentions

            frontier = [i for i in order if expands(i)]
            cap = _NO_LIMIT if max_per_level is None else max(int(max_per_level), 0)
            for d in range(1, depth + 1):
                if not frontier or not cap:
                    break
                # each new entity once, by its strongest relation to the frontier (strength, then
                # relation id): the database picks it per chunk of the frontier, the best of the
                # chunks' picks wins
                best: dict[int, tuple[Any, ...]] = {}
                for chunk in _chunks(frontier):
                    for row in self._neighbour_rows(conn, user_id, chunk, list(info), cap):
                        there = int(row[1])
                        held = best.get(there)
                        if held is None or (-float(row[3]), int(row[7])) < (-float(held[3]), int(held[7])):
                            best[there] = row
                if not best:
                    break
                new = sorted(best, key=lambda i: (-float(best[i][3]), i))[:cap]
                for i in new:
                    here, there, relation, strength, name, entity_type, mentions, _, outgoing = best[i]
                    info[i] = {
                        "id": i,
                        "entity": name,
                        "entity_type": entity_type,
                        "mention_count": mentions,
                        "relation": relation,
                        "depth": d,
                        "strength": float(strength),
                        "via": int(here),
                        "direction": "out" if outgoing else "in",
                    }
                order += new
                frontier = [i for i in new if expands(i)]
        return [info[i] for i in order]

    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        """(memory_id, entity_id) pairs, the most recent mentions of each entity first, at most
        ``limit`` per entity (index range scans on (entity_id, memory_id), no sort of all mentions)."""
        me, mt = self.t.memory_entities, self.t.memories
        pairs = entity_limits(entity_ids, limit)
        if not pairs:
            return []
        out: list[tuple[int, int]] = []
        # one statement, executed per entity with its id bound (built once: constructing and keying
        # a statement costs as much as running it; a UNION ALL of the per-entity scans measured 3x
        # slower on SQLite)
        stmt = (
            select(me.c.memory_id)
            .join(mt, mt.c.id == me.c.memory_id)
            .where(me.c.entity_id == bindparam("eid"), me.c.user_id == user_id, *self._filter_clause(filters, now))
            .order_by(me.c.memory_id.desc())
            .limit(bindparam("lim"))
        )
        with self._read() as conn:
            for eid, lim in pairs:
                out += [(int(r[0]), eid) for r in conn.execute(stmt, {"eid": eid, "lim": lim})]
        return out

    def _memory_entities(self, conn: Connection, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        me, et = self.t.memory_entities, self.t.entities
        out: dict[int, list[str]] = {}
        for chunk in _chunks(list(memory_ids)):
            for mid, name in conn.execute(
                select(me.c.memory_id, et.c.name)
                .join(et, et.c.id == me.c.entity_id)
                .where(me.c.user_id == user_id, self._ids_in(me.c.memory_id, chunk))
                .order_by(me.c.memory_id, et.c.name)
            ):
                out.setdefault(mid, []).append(name)
        return out

    def rank_fields(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, RankFields]:
        """What rescoring and grouping need, for many candidates, in one query (the first cited
        turn by an index seek per row), without building full Memory objects."""
        out: dict[int, RankFields] = {}
        with self._read() as conn:
            for chunk in _chunks(list(dict.fromkeys(memory_ids))):
                for r in conn.execute(self._rank_fields_select(user_id, chunk), {"uid": user_id, "ids": list(chunk)}):
                    out[int(r.id)] = RankFields(
                        importance=float(r.importance),
                        confidence=float(r.confidence),
                        when=r.said_at or r.created_at,
                        access_count=int(r.access_count),
                        active=r.status == MemoryStatus.ACTIVE.value,
                        first_turn=None if r.first_turn is None else int(r.first_turn),
                        pinned=bool(r.pinned),
                        valid_to=r.valid_to,
                        standing=r.standing,
                        slots=r.slots,
                        conversation_id=r.conversation_id,
                        occurred_at=r.occurred_at,
                    )
        return out

    def _rank_fields_select(self, user_id: str, ids: Sequence[int]) -> Any:
        """rank_fields' statement for ``ids`` of the user bound as ``uid`` (PostgreSQL builds one
        statement once, for any ids bound as the ``ids`` array parameter)."""
        return self._rank_fields_base().where(self._ids_in(self.t.memories.c.id, ids))

    def _rank_fields_base(self) -> Any:
        mt, ms = self.t.memories, self.t.memory_sources
        uid: Any = bindparam("uid")
        first = (
            select(func.min(ms.c.turn_id))
            .where(ms.c.memory_id == mt.c.id, ms.c.user_id == uid)
            .correlate(mt)
            .scalar_subquery()
            .label("first_turn")
        )
        return select(
            mt.c.id, mt.c.importance, mt.c.confidence, mt.c.said_at, mt.c.created_at, mt.c.access_count,
            mt.c.status, mt.c.pinned, mt.c.valid_to, mt.c.metadata["standing"].as_string().label("standing"),
            mt.c.metadata["slots"].as_string().label("slots"), mt.c.conversation_id, mt.c.occurred_at, first,
        ).where(self._owner(mt.c.user_id) == uid)  # fmt: skip

    def memory_entities(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        with self._read() as conn:
            return self._memory_entities(conn, user_id, memory_ids)

    def _sources(
        self, conn: Connection, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None
    ) -> dict[int, list[Provenance]]:
        """Provenance of memories, oldest turn first; at most ``per_memory`` turns each if given (a
        memory seen again thousands of times cites thousands of turns)."""
        ms, tt = self.t.memory_sources, self.t.turns
        pairs: list[tuple[int, int]] = []
        if per_memory is None:
            for chunk in _chunks(list(memory_ids)):
                pairs += [
                    (int(m), int(t))
                    for m, t in conn.execute(
                        select(ms.c.memory_id, ms.c.turn_id).where(ms.c.user_id == user_id, ms.c.memory_id.in_(list(chunk)))
                    )
                ]
        else:
            # the oldest turns of each memory: one index range scan each, never all its sources; one
            # statement with bound parameters, compiled once (a UNION of per-memory subqueries was
            # compiled anew for every search: 5 ms of a 10-result search)
            stmt = (
                select(ms.c.turn_id)
                .where(ms.c.memory_id == bindparam("mid"), ms.c.user_id == bindparam("uid"))
                .order_by(ms.c.turn_id)
                .limit(bindparam("lim", literal_execute=False))
            )
            for mid in dict.fromkeys(int(m) for m in memory_ids):
                pairs += [(mid, int(r[0])) for r in conn.execute(stmt, {"mid": mid, "uid": user_id, "lim": per_memory})]
        turns: dict[int, Any] = {}
        turn_ids = sorted({t for _, t in pairs})
        for chunk in _chunks(turn_ids):
            for r in conn.execute(
                select(tt.c.id, tt.c.conversation_id, tt.c.role, tt.c.name, tt.c.said_at).where(tt.c.id.in_(list(chunk)))
            ):
                turns[int(r.id)] = r
        out: dict[int, list[Provenance]] = {}
        for mid, tid in sorted(pairs):
            t = turns.get(tid)
            if t is not None:
                out.setdefault(mid, []).append(  # rows of our own schema: no re-validation (hot path of search)
                    Provenance.model_construct(
                        turn_id=t.id, conversation_id=t.conversation_id, role=t.role, speaker=t.name, said_at=t.said_at
                    )
                )
        return out

    def sources(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[Provenance]]:
        with self._read() as conn:
            return self._sources(conn, user_id, memory_ids)

    # ------------------------------------------------------------------------------------------
    # kv
    # ------------------------------------------------------------------------------------------
    def user_name(self, user_id: str) -> str | None:
        kv, tt = self.t.kv, self.t.turns
        with self._read() as conn:
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == _USER_NS, kv.c.key == _PROFILE)
            ).first()
            if row is not None and isinstance(row[0], dict) and row[0].get("name"):
                return str(row[0]["name"])
            first = conn.execute(
                select(tt.c.name)
                .where(tt.c.user_id == user_id, tt.c.role == "user", tt.c.name.is_not(None))
                .order_by(tt.c.id)
                .limit(1)
            ).first()
        return None if first is None else str(first[0])

    def set_user_name(self, user_id: str, name: str, now: datetime, rewrites: Sequence[MemoryRewrite] = ()) -> int:
        from deepcontext.text import entity_norm

        kv, et, me, rt = self.t.kv, self.t.entities, self.t.memory_entities, self.t.relations
        with self._write() as conn:
            self._lock_user(conn, user_id)
            rewritten = self._rewrite_texts(conn, user_id, rewrites, now, "the user's display name") if rewrites else 0
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == _USER_NS, kv.c.key == _PROFILE)
            ).first()
            old = row[0].get("name") if row is not None and isinstance(row[0], dict) else None
            stmt = self._upsert(kv).values(user_id=user_id, namespace=_USER_NS, key=_PROFILE, value={"name": name}, updated_at=now)
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
                src = conn.execute(select(et.c.id, et.c.mention_count).where(et.c.user_id == user_id, et.c.norm_name == norm)).first()
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
                            select(rt.c.id).where(rt.c.user_id == user_id, rt.c.source_id == pair[0],
                                                  rt.c.relation == relation, rt.c.target_id == pair[1])
                        ).first()
                        if taken is None and pair[0] != pair[1]:
                            conn.execute(update(rt).where(rt.c.id == rid).values({col.name: b}))
                conn.execute(update(et).where(et.c.id == b).values(mention_count=et.c.mention_count + int(src[1]), last_seen_at=now))
                conn.execute(delete(et).where(et.c.id == a))  # its leftover links go with it (cascade)
            self._bump_user(conn, user_id, now)
        self._forget_user_caches(user_id)
        return rewritten

    def _rewrite_texts(self, conn: Connection, user_id: str, rewrites: Sequence[MemoryRewrite], now: datetime,
                       reason: str) -> int:
        """New texts of active memories whose text is still the one read (one changed since is left)."""
        mt = self.t.memories
        current: dict[int, str] = {}
        for ids in _chunks([r.memory_id for r in rewrites]):
            rows = conn.execute(
                select(mt.c.id, mt.c.text).where(
                    mt.c.user_id == user_id, mt.c.id.in_(ids), mt.c.status == MemoryStatus.ACTIVE.value
                )
            ).all()
            current.update((int(mid), str(text)) for mid, text in rows)
        todo = [r for r in rewrites if current.get(r.memory_id) == r.old_text]
        if not todo:
            return 0
        rev = self._bump_user(conn, user_id, now)
        for r in todo:
            conn.execute(
                update(mt).where(mt.c.id == r.memory_id, mt.c.user_id == user_id)
                .values(text=r.text, content_hash=r.content_hash, embedding=r.embedding, updated_at=now, rev=rev)
            )
            self._history(conn, user_id, r.memory_id, HistoryEvent.UPDATE, now, old_text=r.old_text, new_text=r.text,
                          reason=reason)
        self._unindex(conn, [r.memory_id for r in todo])
        self._index_texts(conn, [(r.memory_id, r.text) for r in todo])
        return len(todo)

    def kv_get(self, user_id: str, namespace: str, key: str) -> Any | None:
        kv = self.t.kv
        with self._read() as conn:
            row = conn.execute(
                select(kv.c.value).where(kv.c.user_id == user_id, kv.c.namespace == namespace, kv.c.key == key)
            ).first()
        return None if row is None else row[0]

    def kv_put(self, user_id: str, namespace: str, key: str, value: Any, now: datetime) -> None:
        kv = self.t.kv
        with self._write() as conn:
            stmt = self._upsert(kv).values(user_id=user_id, namespace=namespace, key=key, value=value, updated_at=now)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[kv.c.user_id, kv.c.namespace, kv.c.key],
                    set_={"value": stmt.excluded.value, "updated_at": now},
                )
            )

    def kv_delete(self, user_id: str, namespace: str, key: str) -> bool:
        kv = self.t.kv
        with self._write() as conn:
            res = conn.execute(
                delete(kv).where(kv.c.user_id == user_id, kv.c.namespace == namespace, kv.c.key == key)
            )
            return bool(res.rowcount)

    def kv_list(self, user_id: str, namespace: str) -> dict[str, Any]:
        kv = self.t.kv
        with self._read() as conn:
            return {
                r.key: r.value
                for r in conn.execute(
                    select(kv.c.key, kv.c.value)
                    .where(kv.c.user_id == user_id, kv.c.namespace == namespace)
                    .order_by(kv.c.key)
                )
            }

    # ------------------------------------------------------------------------------------------
    # export
    # ------------------------------------------------------------------------------------------
    def iter_memories(self, user_id: str, *, batch: int = 500) -> Iterator[Memory]:
        mt = self.t.memories
        last = 0
        while True:
            with self._read() as conn:
                ids = [
                    r[0]
                    for r in conn.execute(
                        select(mt.c.id).where(mt.c.user_id == user_id, mt.c.id > last).order_by(mt.c.id).limit(batch)
                    )
                ]
            if not ids:
                return
            yield from self.get_memories(user_id, ids)
            last = ids[-1]

    def embeddings(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of these memories (export, consolidation)."""
        mt = self.t.memories
        out: dict[int, np.ndarray] = {}
        with self._read() as conn:
            for chunk in _chunks(list(memory_ids)):
                for mid, emb in conn.execute(
                    select(mt.c.id, mt.c.embedding).where(self._owner(mt.c.user_id) == user_id, mt.c.id.in_(list(chunk)))
                ):
                    if emb is not None:
                        out[int(mid)] = emb
        return out


    # ------------------------------------------------------------------------------------------
    # raw export / import (id-remapping copy of every row of a user)
    # ------------------------------------------------------------------------------------------
    #: tables in the order an import must write them, with their id-bearing columns
    _EXPORT_ORDER = (
        "conversations", "turns", "turn_edges", "entities", "relations", "memories",
        "memory_sources", "memory_entities", "memory_links", "memory_history", "kv",
    )  # fmt: skip

    def export_rows(self, user_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row of the user, table by table in import order, as (table name, column dict)."""
        for name in self._EXPORT_ORDER:
            table = self.metadata.tables[name]
            order = [c for c in table.primary_key.columns]
            with self._read() as conn:
                for r in conn.execute(select(table).where(table.c.user_id == user_id).order_by(*order)):
                    yield name, dict(r._mapping)

    def import_rows(
        self, user_id: str, rows: Sequence[tuple[str, dict[str, Any]]], now: datetime, *, fingerprint: str | None = None
    ) -> dict[str, int]:
        """Write exported rows for ``user_id`` with fresh ids (references remapped). One transaction.
        With a ``fingerprint``, an import of the same rows into the same user writes nothing the
        second time and returns the first one's counts plus ``already_imported: 1``."""
        t = self.t
        maps: dict[str, dict[int, int]] = {"turns": {}, "entities": {}, "relations": {}, "memories": {}}
        counts: dict[str, int] = {}
        by_table: dict[str, list[dict[str, Any]]] = {}
        for name, row in rows:
            if name not in self._EXPORT_ORDER:
                from deepcontext.errors import ValidationError

                raise ValidationError(f"unknown table {name!r} in import", field="records")
            by_table.setdefault(name, []).append(row)

        def m(kind: str, old: Any) -> Any:
            if old is None:
                return None
            return maps[kind].get(int(old))

        kv = t.kv
        mark = (kv.c.user_id == user_id, kv.c.namespace == IMPORTS_NAMESPACE, kv.c.key == fingerprint)
        with self._write() as conn:
            rev = self._bump_user(conn, user_id, now)  # locks the user: a concurrent retry waits here
            if fingerprint is not None:
                done = conn.execute(select(kv.c.value).where(*mark)).scalar()
                if done is not None:
                    return {**done["counts"], "already_imported": 1}
            deferred_tips: list[tuple[str, Any, Any]] = []
            for row in by_table.get("conversations", []):
                exists = conn.execute(
                    select(t.conversations.c.conversation_id).where(
                        t.conversations.c.user_id == user_id,
                        t.conversations.c.conversation_id == row["conversation_id"],
                    )
                ).first()
                if exists is None:
                    conn.execute(insert(t.conversations).values(**{**row, "user_id": user_id, "tip_turn_id": None, "summary_turn_id": None}))
                deferred_tips.append((row["conversation_id"], row.get("tip_turn_id"), row.get("summary_turn_id")))
            for row in by_table.get("turns", []):
                old = row["id"]
                vals = {k: v for k, v in row.items() if k != "id"}
                vals.update(user_id=user_id, summarized_by=None)
                maps["turns"][int(old)] = int(conn.execute(insert(t.turns).values(**vals).returning(t.turns.c.id)).scalar_one())
            for row in by_table.get("turns", []):
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
                stmt = self._upsert(t.relations).values(
                    **{**{k: v for k, v in row.items() if k != "id"}, "user_id": user_id, "source_id": s_, "target_id": o_}
                )
                conn.execute(stmt.on_conflict_do_nothing())
            fts: list[tuple[int, str]] = []
            for row in by_table.get("memories", []):
                vals = {k: v for k, v in row.items() if k != "id"}
                vals.update(user_id=user_id, superseded_by=None, consolidated_from=[], rev=rev)
                new_id = int(conn.execute(insert(t.memories).values(**vals).returning(t.memories.c.id)).scalar_one())
                maps["memories"][int(row["id"])] = new_id
                fts.append((new_id, row["text"]))
            for row in by_table.get("memories", []):
                upd = {}
                if row.get("superseded_by") is not None:
                    upd["superseded_by"] = m("memories", row["superseded_by"])
                if row.get("consolidated_from"):
                    upd["consolidated_from"] = [m("memories", x) for x in row["consolidated_from"] if m("memories", x)]
                if upd:
                    conn.execute(update(t.memories).where(t.memories.c.id == maps["memories"][int(row["id"])]).values(**upd))
            self._index_texts(conn, fts)
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
                    conn.execute(insert(self.metadata.tables[name]), out)
            hist = []
            for r in by_table.get("memory_history", []):
                mid = m("memories", r["memory_id"])
                if mid is not None:
                    hist.append({**{k: v for k, v in r.items() if k != "id"}, "user_id": user_id, "memory_id": mid})
            if hist:
                conn.execute(insert(t.memory_history), hist)
            for new_mid in maps["memories"].values():
                self._history(conn, user_id, new_mid, HistoryEvent.IMPORT, now, reason="restored from an export")
            for r in by_table.get("kv", []):
                stmt = self._upsert(t.kv).values(**{**r, "user_id": user_id})
                conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=[t.kv.c.user_id, t.kv.c.namespace, t.kv.c.key],
                        set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
                    )
                )
            for name, rows_ in by_table.items():
                counts[name] = len(rows_)
            if fingerprint is not None:
                conn.execute(
                    insert(kv).values(
                        user_id=user_id, namespace=IMPORTS_NAMESPACE, key=fingerprint, value={"counts": counts, "at": now.isoformat()}, updated_at=now
                    )
                )
        return counts


#: kv namespace of the imports a user received (key: the export's fingerprint)
IMPORTS_NAMESPACE = "deepcontext.imports"


def _encode_cursor(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{last_id}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> int:
    from deepcontext.errors import ValidationError

    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, value = raw.split(":", 1)
        if version != "v1":
            raise ValueError(version)
        last = int(value)
        if not 1 <= last <= 2**63 - 1:
            raise ValueError(value)
        return last
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError("invalid cursor: pass back the next_cursor of a previous page", field="cursor") from exc
