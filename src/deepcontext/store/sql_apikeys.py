"""API keys and sign-in sessions (:class:`~deepcontext.store.apikeys.ApiKeys`) on a SQL store:
the ``api_keys`` and ``ui_sessions`` tables."""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Connection, delete, insert, select, update

from deepcontext.errors import AuthError, NotFoundError, StorageError, ValidationError
from deepcontext.ids import check_external_user, check_tenant
from deepcontext.store.apikeys import (
    DUMMY_HASH,
    KEY_PREFIX,
    LAST_USED_RESOLUTION,
    SESSION_RE,
    ApiKey,
    ApiKeys,
    key_digest,
    parse_key,
    session_digest,
)
from deepcontext.store.repository import Reads

__all__ = ["SQLApiKeys"]

log = logging.getLogger("deepcontext.server")


class _Context(Reads, Protocol):
    """Its tables, reads and plain transactions (no user's rows change)."""

    read_only: bool

    def transaction(self, begin: Callable[[], Any] | None = None) -> AbstractContextManager[Connection]: ...


def _from_row(r: Any) -> ApiKey:
    return ApiKey(
        key_id=r.key_id,
        tenant=r.tenant,
        name=r.name,
        user_ids=tuple(r.user_ids) if r.user_ids is not None else None,
        read_only=bool(r.read_only),
        created_at=r.created_at,
        revoked_at=r.revoked_at,
        last_used_at=r.last_used_at,
    )


class SQLApiKeys(ApiKeys):
    def __init__(self, store: _Context) -> None:
        self.s = store

    def create(
        self,
        tenant: str,
        *,
        now: datetime,
        user_ids: Sequence[str] | None = None,
        read_only: bool = False,
        name: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key; returns it and its full text (the only time the secret exists in clear)."""
        s = self.s
        tenant = check_tenant(tenant)
        users: tuple[str, ...] | None = None
        if user_ids is not None:
            if isinstance(user_ids, str):
                raise ValidationError("user_ids must be a list of user ids", field="user_ids")
            users = tuple(dict.fromkeys(check_external_user(u) for u in user_ids))
            if not users:
                raise ValidationError("user_ids must name at least one user (or be omitted for every user)", field="user_ids")
        if name is not None and (not isinstance(name, str) or len(name) > 255):
            raise ValidationError("name must be a string of at most 255 characters", field="name")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        with s.transaction() as conn:
            conn.execute(
                insert(s.t.api_keys).values(
                    key_id=key_id,
                    key_hash=key_digest(key_id, secret),
                    tenant=tenant,
                    name=name,
                    user_ids=list(users) if users is not None else None,
                    read_only=read_only,
                    created_at=now,
                )
            )
        key = ApiKey(key_id, tenant, name, users, read_only, now, None, None)
        return key, f"{KEY_PREFIX}_{key_id}_{secret}"

    def all(self, *, tenant: str | None = None, include_revoked: bool = True) -> list[ApiKey]:
        """Keys, oldest first."""
        s = self.s
        k = s.t.api_keys
        q = select(k).order_by(k.c.id)
        if tenant is not None:
            q = q.where(k.c.tenant == tenant)
        if not include_revoked:
            q = q.where(k.c.revoked_at.is_(None))
        with s.connection() as conn:
            return [_from_row(r) for r in conn.execute(q)]

    def get(self, key_id: str) -> ApiKey:
        s = self.s
        k = s.t.api_keys
        with s.connection() as conn:
            r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
        if r is None:
            raise NotFoundError(f"API key {key_id!r} not found")
        return _from_row(r)

    def revoke(self, key_id: str, *, now: datetime) -> ApiKey:
        """Revoke a key (idempotent: a revoked key keeps its first revocation time)."""
        s = self.s
        k = s.t.api_keys
        with s.transaction() as conn:
            r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
            if r is None:
                raise NotFoundError(f"API key {key_id!r} not found")
            if r.revoked_at is None:
                conn.execute(update(k).where(k.c.key_id == key_id).values(revoked_at=now))
            conn.execute(delete(s.t.ui_sessions).where(s.t.ui_sessions.c.key_id == key_id))  # its browsers sign out
        return self.get(key_id)

    def verify(self, presented: str, *, now: datetime) -> ApiKey:
        """The active key ``presented`` is the text of; AuthError (401) for a malformed, unknown, wrong
        or revoked key (one message for all: nothing tells which)."""
        s = self.s
        k = s.t.api_keys
        key_id, secret = parse_key(presented)
        with s.connection() as conn:
            r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
        ok = hmac.compare_digest(key_digest(key_id, secret), r.key_hash if r is not None else DUMMY_HASH)
        if r is None or not ok or r.revoked_at is not None:
            raise AuthError("invalid API key", status_code=401)
        key = _from_row(r)
        if not s.read_only and (key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION):
            try:
                with s.transaction() as conn:
                    conn.execute(update(k).where(k.c.key_id == key_id).values(last_used_at=now))
            except StorageError as exc:
                # a bookkeeping write: a database that cannot take it (a full disk) still serves reads
                log.debug("last_used_at of key %s not recorded: %s", key_id, exc)
        return key

    def open_session(self, key: ApiKey, *, now: datetime, seconds: int) -> str:
        """Open a sign-in session for ``key`` ending ``seconds`` from ``now``; returns its id (random,
        stored only hashed). Sessions that ended are removed in the same transaction."""
        s = self.s
        u = s.t.ui_sessions
        token = secrets.token_urlsafe(32)
        with s.transaction() as conn:
            conn.execute(delete(u).where(u.c.expires_at <= now))
            conn.execute(
                insert(u).values(
                    session_hash=session_digest(token),
                    key_id=key.key_id,
                    created_at=now,
                    expires_at=now + timedelta(seconds=seconds),
                )
            )
        return token

    def session_key(self, token: str, *, now: datetime) -> ApiKey:
        """The active key of a session; AuthError (401) for an unknown, ended or signed-out session, or
        one whose key was revoked."""
        s = self.s
        u, k = s.t.ui_sessions, s.t.api_keys
        if not isinstance(token, str) or not SESSION_RE.fullmatch(token):
            raise AuthError("sign in again", status_code=401)
        with s.connection() as conn:
            r = conn.execute(
                select(k)
                .join(u, u.c.key_id == k.c.key_id)
                .where(u.c.session_hash == session_digest(token), u.c.expires_at > now, k.c.revoked_at.is_(None))
            ).first()
        if r is None:
            raise AuthError("sign in again", status_code=401)
        return _from_row(r)

    def end_session(self, token: str) -> None:
        """Sign a session out (nothing happens for an unknown one)."""
        s = self.s
        u = s.t.ui_sessions
        if isinstance(token, str) and SESSION_RE.fullmatch(token):
            with s.transaction() as conn:
                conn.execute(delete(u).where(u.c.session_hash == session_digest(token)))
