"""API keys of the REST API and the MCP server: their format, their hash and their SQL.

A key reads ``dck_<key_id>_<secret>``: ``key_id`` is 16 hex characters (public: it names the key in
listings and logs), ``secret`` is 32 random bytes in URL-safe base64. Only a SHA-256 digest of the
secret (salted with the key id) is stored (a 256-bit random secret needs no slow password hash)
and compared in constant time; the full key is shown once, when it is created. Each key belongs to
a tenant, may be limited to some user ids (``None``: every user of the tenant) and may be
read-only. Each function is one transaction over the store's ``api_keys`` table.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert, select, update

from deepcontext.errors import AuthError, ConfigurationError, NotFoundError, StorageError, ValidationError
from deepcontext.ids import check_external_user, check_tenant
from deepcontext.store.interface import Store

__all__ = [
    "create_session",
    "end_session",
    "session_key",
    "KEY_PREFIX",
    "ApiKey",
    "create_key",
    "get_key",
    "list_keys",
    "parse_key",
    "revoke_key",
    "verify_key",
]

log = logging.getLogger("deepcontext.server")

KEY_PREFIX = "dck"
_KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
_HASH_SCHEME = "sha256"
#: last_used_at is written at most this often per key (a write per request would serialise readers)
LAST_USED_RESOLUTION = timedelta(seconds=60)
#: digest compared when the key id is unknown, so both failures cost the same
_DUMMY_HASH = f"{_HASH_SCHEME}${'0' * 64}"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored key (never its secret)."""

    key_id: str
    tenant: str
    name: str | None
    user_ids: tuple[str, ...] | None
    read_only: bool
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "tenant": self.tenant,
            "name": self.name,
            "user_ids": list(self.user_ids) if self.user_ids is not None else None,
            "read_only": self.read_only,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
        }


def _digest(key_id: str, secret: str) -> str:
    h = hashlib.sha256(b"deepcontext-api-key\x00" + key_id.encode() + b"\x00" + secret.encode())
    return f"{_HASH_SCHEME}${h.hexdigest()}"


def parse_key(presented: str) -> tuple[str, str]:
    """``(key_id, secret)`` of a key's text; AuthError (401) if it is not shaped like a key."""
    parts = presented.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not _KEY_ID_RE.fullmatch(parts[1]) or not _SECRET_RE.fullmatch(parts[2]):
        raise AuthError("invalid API key", status_code=401)
    return parts[1], parts[2]


def _tables(store: Store) -> Any:
    from deepcontext.store.sql import SQLStore

    if not isinstance(store, SQLStore):
        raise ConfigurationError("API keys need a SQL store (SQLite or PostgreSQL)")
    return store


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


def create_key(
    store: Store,
    tenant: str,
    *,
    now: datetime,
    user_ids: Sequence[str] | None = None,
    read_only: bool = False,
    name: str | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns it and its full text (the only time the secret exists in clear)."""
    s = _tables(store)
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
                key_hash=_digest(key_id, secret),
                tenant=tenant,
                name=name,
                user_ids=list(users) if users is not None else None,
                read_only=read_only,
                created_at=now,
            )
        )
    key = ApiKey(key_id, tenant, name, users, read_only, now, None, None)
    return key, f"{KEY_PREFIX}_{key_id}_{secret}"


def list_keys(store: Store, *, tenant: str | None = None, include_revoked: bool = True) -> list[ApiKey]:
    """Keys, oldest first."""
    s = _tables(store)
    k = s.t.api_keys
    q = select(k).order_by(k.c.id)
    if tenant is not None:
        q = q.where(k.c.tenant == tenant)
    if not include_revoked:
        q = q.where(k.c.revoked_at.is_(None))
    with s.connection() as conn:
        return [_from_row(r) for r in conn.execute(q)]


def get_key(store: Store, key_id: str) -> ApiKey:
    s = _tables(store)
    k = s.t.api_keys
    with s.connection() as conn:
        r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
    if r is None:
        raise NotFoundError(f"API key {key_id!r} not found")
    return _from_row(r)


def revoke_key(store: Store, key_id: str, *, now: datetime) -> ApiKey:
    """Revoke a key (idempotent: a revoked key keeps its first revocation time)."""
    s = _tables(store)
    k = s.t.api_keys
    with s.transaction() as conn:
        r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
        if r is None:
            raise NotFoundError(f"API key {key_id!r} not found")
        if r.revoked_at is None:
            conn.execute(update(k).where(k.c.key_id == key_id).values(revoked_at=now))
        conn.execute(delete(s.t.ui_sessions).where(s.t.ui_sessions.c.key_id == key_id))  # its browsers sign out
    return get_key(store, key_id)


def verify_key(store: Store, presented: str, *, now: datetime) -> ApiKey:
    """The active key ``presented`` is the text of; AuthError (401) for a malformed, unknown, wrong
    or revoked key (one message for all: nothing tells which)."""
    s = _tables(store)
    k = s.t.api_keys
    key_id, secret = parse_key(presented)
    with s.connection() as conn:
        r = conn.execute(select(k).where(k.c.key_id == key_id)).first()
    ok = hmac.compare_digest(_digest(key_id, secret), r.key_hash if r is not None else _DUMMY_HASH)
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


# --- the inspector's sign-in sessions -------------------------------------------------------------

_SESSION_RE = re.compile(r"[A-Za-z0-9_-]{43}")


def _session_digest(token: str) -> str:
    return hashlib.sha256(b"deepcontext-ui-session\x00" + token.encode()).hexdigest()


def create_session(store: Store, key: ApiKey, *, now: datetime, seconds: int) -> str:
    """Open a sign-in session for ``key`` ending ``seconds`` from ``now``; returns its id (random,
    stored only hashed). Sessions that ended are removed in the same transaction."""
    s = _tables(store)
    u = s.t.ui_sessions
    token = secrets.token_urlsafe(32)
    with s.transaction() as conn:
        conn.execute(delete(u).where(u.c.expires_at <= now))
        conn.execute(
            insert(u).values(
                session_hash=_session_digest(token),
                key_id=key.key_id,
                created_at=now,
                expires_at=now + timedelta(seconds=seconds),
            )
        )
    return token


def session_key(store: Store, token: str, *, now: datetime) -> ApiKey:
    """The active key of a session; AuthError (401) for an unknown, ended or signed-out session, or
    one whose key was revoked."""
    s = _tables(store)
    u, k = s.t.ui_sessions, s.t.api_keys
    if not isinstance(token, str) or not _SESSION_RE.fullmatch(token):
        raise AuthError("sign in again", status_code=401)
    with s.connection() as conn:
        r = conn.execute(
            select(k)
            .join(u, u.c.key_id == k.c.key_id)
            .where(u.c.session_hash == _session_digest(token), u.c.expires_at > now, k.c.revoked_at.is_(None))
        ).first()
    if r is None:
        raise AuthError("sign in again", status_code=401)
    return _from_row(r)


def end_session(store: Store, token: str) -> None:
    """Sign a session out (nothing happens for an unknown one)."""
    s = _tables(store)
    u = s.t.ui_sessions
    if isinstance(token, str) and _SESSION_RE.fullmatch(token):
        with s.transaction() as conn:
            conn.execute(delete(u).where(u.c.session_hash == _session_digest(token)))
