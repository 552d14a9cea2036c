"""Per-user named locks, so lifecycle work (decay, consolidation, cleanup) runs once per user at a time
even with many processes over one database: ``with store.user_lock(user_id, "consolidate", timeout=10):``
raises :class:`~deepcontext.errors.LockTimeoutError` when another worker holds it longer. Locks are
not re-entrant.

PostgreSQL: a session-level advisory lock on a connection held out of the pool while the lock is
held (idle, no open transaction; the server releases it if the process dies). SQLite: a lease, one
row of the ``locks`` table taken inside ``BEGIN IMMEDIATE`` and renewed by a background thread every
``ttl / 3`` seconds; a lease of a dead process of this host is taken over at once, one of another
host after ``ttl``. Neither holds a write transaction open: both are safe across LLM or embedding calls.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from deepcontext.clock import Clock, SystemClock
from deepcontext.errors import LockTimeoutError, StorageError, ValidationError
from deepcontext.store.records import HeldLock

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

__all__ = ["HeldLock", "UserLockMixin", "advisory_key", "holder_is_dead", "user_lock"]

#: the ``locks.name`` column is VARCHAR(64)
_MAX_NAME = 64


def advisory_key(user_id: str, name: str) -> int:
    """The signed 64-bit key of a (user, name) PostgreSQL advisory lock."""
    digest = hashlib.blake2b(f"deepcontext:user-lock\x00{name}\x00{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _validate(user_id: str, name: str, timeout: float, ttl: float) -> None:
    if not isinstance(user_id, str) or not user_id:
        raise ValidationError("user_id must be a non-empty string", field="user_id")
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        raise ValidationError(f"lock name must be 1..{_MAX_NAME} characters", field="name")
    if timeout < 0:
        raise ValidationError("timeout must be >= 0 seconds", field="timeout")
    if ttl <= 0:
        raise ValidationError("ttl must be > 0 seconds", field="ttl")


def _process_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), or "-" where unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "-"


def _this_host() -> str:
    """This host and PID namespace (containers on one host each have their own process ids)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return hashlib.blake2b(f"{socket.gethostname()}\x00{namespace}".encode(), digest_size=6).hexdigest()


_HOST = _this_host()


def _owner() -> str:
    pid = os.getpid()
    return f"{_HOST}:{pid}:{_process_start(pid)}:{threading.get_ident() % 1_000_000}:{secrets.token_hex(4)}"


def holder_is_dead(owner: str) -> bool:
    """True when ``owner`` (a lease's owner) is a process of this host that no longer runs. False
    for other hosts, owners in another format, and whenever it cannot be told."""
    parts = owner.split(":")
    if len(parts) != 5 or parts[0] != _HOST or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it runs, as another user
        pass
    started = _process_start(pid)
    return "-" not in (started, parts[2]) and started != parts[2]  # the id now names a later process


@contextmanager
def user_lock(
    store: SQLStore,
    user_id: str,
    name: str,
    *,
    timeout: float = 30.0,
    ttl: float = 600.0,
    clock: Clock | None = None,
    abandon: threading.Event | None = None,
) -> Iterator[HeldLock]:
    """Hold the lock ``name`` of ``user_id`` for the body of the ``with``.

    ``timeout``: seconds to wait for a lock held elsewhere (0: try once), then LockTimeoutError.
    ``ttl``: SQLite lease length (renewed while held); ignored on PostgreSQL.
    ``clock``: wall clock for lease expiries (default: the system clock).
    ``abandon``: set by a caller that gave up waiting (an async task cancelled while this runs in a
    thread): a SQLite wait stops at once with LockTimeoutError, and a lease taken in the meantime is
    handed back, so a late take never blocks the next caller. PostgreSQL waits inside the server.
    """
    _validate(user_id, name, timeout, ttl)
    if store.engine.dialect.name == "postgresql":
        with _advisory_lock(store, user_id, name, timeout) as held:
            yield held
    else:
        stop = abandon or threading.Event()
        with _lease_lock(store, user_id, name, timeout, ttl, clock or SystemClock(), stop) as held:
            yield held


class UserLockMixin:
    """Gives a SQL store the ``user_lock`` method (see the module docstring)."""

    def user_lock(
        self,
        user_id: str,
        name: str,
        *,
        timeout: float = 30.0,
        ttl: float = 600.0,
        clock: Clock | None = None,
        abandon: threading.Event | None = None,
    ) -> AbstractContextManager[HeldLock]:
        """Context manager holding the per-user lock ``name``; raises LockTimeoutError after ``timeout`` s."""
        return user_lock(self, user_id, name, timeout=timeout, ttl=ttl, clock=clock, abandon=abandon)  # type: ignore[arg-type]


# --- PostgreSQL: advisory locks ------------------------------------------------------------------


@contextmanager
def _advisory_lock(store: SQLStore, user_id: str, name: str, timeout: float) -> Iterator[HeldLock]:
    key = advisory_key(user_id, name)
    try:
        conn = store.engine.connect()
    except SQLAlchemyError as exc:
        raise StorageError(f"could not connect to take lock {name!r}: {exc}") from exc
    try:
        try:
            with conn.begin():
                if timeout <= 0:
                    got = bool(conn.execute(select(func.pg_try_advisory_lock(key))).scalar())
                else:
                    # lock_timeout bounds the wait; SET LOCAL ends with this short transaction, the
                    # session-level advisory lock stays with the connection
                    conn.execute(text("SELECT set_config('lock_timeout', :ms, true)"), {"ms": f"{max(1, int(timeout * 1000))}ms"})
                    conn.execute(select(func.pg_advisory_lock(key)))
                    got = True
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) != "55P03":  # 55P03: lock_not_available
                raise StorageError(f"taking lock {name!r} for user {user_id!r} failed: {exc.orig}") from exc
            got = False
        if not got:
            raise LockTimeoutError(name, user_id)
        try:
            yield HeldLock(user_id=user_id, name=name, owner=_owner())
        finally:
            try:
                with conn.begin():
                    conn.execute(select(func.pg_advisory_unlock(key)))
            except SQLAlchemyError:
                # a broken session: the server drops its advisory locks with it; never reuse it
                conn.invalidate()
    finally:
        conn.close()


# --- SQLite: leases in the locks table ------------------------------------------------------------


def _try_take(store: SQLStore, user_id: str, name: str, owner: str, ttl: float, clock: Clock) -> bool:
    lk = store.t.locks
    with store.transaction() as conn:
        now = clock.now()
        row = conn.execute(select(lk.c.owner, lk.c.expires_at).where(lk.c.user_id == user_id, lk.c.name == name)).first()
        if row is None:
            conn.execute(insert(lk).values(user_id=user_id, name=name, owner=owner, expires_at=now + timedelta(seconds=ttl)))
            return True
        if row.expires_at <= now or holder_is_dead(row.owner):
            conn.execute(
                update(lk)
                .where(lk.c.user_id == user_id, lk.c.name == name)
                .values(owner=owner, expires_at=now + timedelta(seconds=ttl))
            )
            return True
        return False


def _renew(store: SQLStore, held: HeldLock, ttl: float, clock: Clock) -> bool:
    lk = store.t.locks
    with store.transaction() as conn:
        res = conn.execute(
            update(lk)
            .where(lk.c.user_id == held.user_id, lk.c.name == held.name, lk.c.owner == held.owner)
            .values(expires_at=clock.now() + timedelta(seconds=ttl))
        )
        return bool(res.rowcount)


@contextmanager
def _lease_lock(
    store: SQLStore, user_id: str, name: str, timeout: float, ttl: float, clock: Clock, abandon: threading.Event
) -> Iterator[HeldLock]:
    owner = _owner()
    deadline = time.monotonic() + timeout
    delay = 0.01
    while not _try_take(store, user_id, name, owner, ttl, clock):
        left = deadline - time.monotonic()
        if left <= 0 or abandon.wait(min(delay, left)):
            raise LockTimeoutError(name, user_id)
        delay = min(delay * 2, 0.25)
    if abandon.is_set():  # given up while the last try took it
        _release(store, user_id, name, owner)
        raise LockTimeoutError(name, user_id)
    held = HeldLock(user_id=user_id, name=name, owner=owner)

    def heartbeat() -> None:
        while not held._stop.wait(ttl / 3):
            try:
                if not _renew(store, held, ttl, clock):
                    held.lost = True
                    return
            except (SQLAlchemyError, StorageError):
                continue  # a busy database: try again at the next beat, the lease still runs

    beat = threading.Thread(target=heartbeat, name=f"deepcontext-lease-{name}", daemon=True)
    beat.start()
    try:
        yield held
    finally:
        held._stop.set()
        beat.join()
        _release(store, user_id, name, owner)


def _release(store: SQLStore, user_id: str, name: str, owner: str) -> None:
    lk = store.t.locks
    with store.transaction() as conn:
        conn.execute(delete(lk).where(lk.c.user_id == user_id, lk.c.name == name, lk.c.owner == owner))
