"""API keys of the REST API and the MCP server: their format, their hash and their SQL.

A key reads ``dck_<key_id>_<secret>``: ``key_id`` is 16 hex characters (public: it names the key in
listings and logs), ``secret`` is 32 random bytes in URL-safe base64. Only a SHA-256 digest of the
secret (salted with the key id) is stored (a 256-bit random secret needs no slow password hash)
and compared in constant time; the full key is shown once, when it is created. Each key belongs to
a tenant, may be limited to some user ids (``None``: every user of the tenant) and may be
read-only. :class:`ApiKeys` is the store's facet for them (``store.keys``), with the inspector's
sign-in sessions; each method is one transaction, blocking: run it in a thread from async code.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from deepcontext.errors import AuthError

__all__ = ["KEY_PREFIX", "LAST_USED_RESOLUTION", "ApiKey", "ApiKeys", "parse_key"]

KEY_PREFIX = "dck"
KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")
_HASH_SCHEME = "sha256"
#: last_used_at is written at most this often per key (a write per request would serialise readers)
LAST_USED_RESOLUTION = timedelta(seconds=60)
#: digest compared when the key id is unknown, so both failures cost the same
DUMMY_HASH = f"{_HASH_SCHEME}${'0' * 64}"
#: a sign-in session's id: 32 random bytes in URL-safe base64
SESSION_RE = re.compile(r"[A-Za-z0-9_-]{43}")


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


def key_digest(key_id: str, secret: str) -> str:
    h = hashlib.sha256(b"deepcontext-api-key\x00" + key_id.encode() + b"\x00" + secret.encode())
    return f"{_HASH_SCHEME}${h.hexdigest()}"


def parse_key(presented: str) -> tuple[str, str]:
    """``(key_id, secret)`` of a key's text; AuthError (401) if it is not shaped like a key."""
    parts = presented.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not KEY_ID_RE.fullmatch(parts[1]) or not _SECRET_RE.fullmatch(parts[2]):
        raise AuthError("invalid API key", status_code=401)
    return parts[1], parts[2]


def session_digest(token: str) -> str:
    return hashlib.sha256(b"deepcontext-ui-session\x00" + token.encode()).hexdigest()


class ApiKeys(ABC):
    """The store's API keys and the inspector's sign-in sessions (``store.keys``)."""

    @abstractmethod
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

    @abstractmethod
    def all(self, *, tenant: str | None = None, include_revoked: bool = True) -> list[ApiKey]:
        """Keys, oldest first."""

    @abstractmethod
    def get(self, key_id: str) -> ApiKey:
        """The key ``key_id``; NotFoundError when there is none."""

    @abstractmethod
    def revoke(self, key_id: str, *, now: datetime) -> ApiKey:
        """Revoke a key (idempotent: a revoked key keeps its first revocation time); its sign-in
        sessions end."""

    @abstractmethod
    def verify(self, presented: str, *, now: datetime) -> ApiKey:
        """The active key ``presented`` is the text of; AuthError (401) for a malformed, unknown,
        wrong or revoked key (one message for all: nothing tells which)."""

    @abstractmethod
    def open_session(self, key: ApiKey, *, now: datetime, seconds: int) -> str:
        """Open a sign-in session for ``key`` ending ``seconds`` from ``now``; returns its id (random,
        stored only hashed). Sessions that ended are removed in the same transaction."""

    @abstractmethod
    def session_key(self, token: str, *, now: datetime) -> ApiKey:
        """The active key of a session; AuthError (401) for an unknown, ended or signed-out session,
        or one whose key was revoked."""

    @abstractmethod
    def end_session(self, token: str) -> None:
        """Sign a session out (nothing happens for an unknown one)."""
