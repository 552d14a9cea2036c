"""Tenants and the user ids the engine sees: the one place (tenant, user id) becomes a stored id.

Requests through the REST API and the MCP server run in a :class:`Scope` (from an API key, or the
local scope when authentication is off). The stored id is ``f"{tenant}/{user_id}"`` with a tenant
and ``user_id`` without one; neither part may contain ``/`` (:data:`SEPARATOR`), so two tenants may
use the same user ids without meeting. Responses turn stored ids back with :meth:`Scope.external`;
the id rules live in :mod:`deepcontext.ids`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deepcontext.errors import AuthError
from deepcontext.ids import (
    MAX_EXTERNAL_USER_CHARS,
    SEPARATOR,
    TENANT_PATTERN,
    check_external_user,
    check_tenant,
    internal_user_id,
)

if TYPE_CHECKING:
    from deepcontext.store import ApiKey

__all__ = [
    "MAX_EXTERNAL_USER_CHARS",
    "SEPARATOR",
    "TENANT_PATTERN",
    "Scope",
    "check_external_user",
    "check_tenant",
    "internal_user_id",
]


@dataclass(frozen=True, slots=True)
class Scope:
    """What a request may touch: a tenant's users (all or some), read-only or not.

    ``tenant`` None is the local scope (authentication off, no ``local_tenant``): user ids are used
    as they are. ``key_id`` names the API key (None without one).
    """

    tenant: str | None
    user_ids: frozenset[str] | None = None
    read_only: bool = False
    key_id: str | None = None

    @classmethod
    def from_key(cls, key: ApiKey) -> Scope:
        return cls(
            tenant=key.tenant,
            user_ids=frozenset(key.user_ids) if key.user_ids is not None else None,
            read_only=key.read_only,
            key_id=key.key_id,
        )

    @classmethod
    def local(cls, tenant: str | None = None) -> Scope:
        """The scope of requests without a key (loopback only)."""
        return cls(tenant=check_tenant(tenant) if tenant is not None else None)

    def check_write(self) -> None:
        """AuthError (403) for a read-only key."""
        if self.read_only:
            raise AuthError("this API key is read-only", status_code=403)

    def user(self, user_id: Any, field: str = "user_id") -> str:
        """The stored id of an external ``user_id``; AuthError (403) when the key may not touch it."""
        user_id = check_external_user(user_id, field)
        if self.user_ids is not None and user_id not in self.user_ids:
            raise AuthError("this API key may not access this user", status_code=403)
        return user_id if self.tenant is None else f"{self.tenant}{SEPARATOR}{user_id}"

    def stored(self, user_id: Any, field: str = "user_id") -> str:
        """The stored id an external ``user_id`` has in this scope's tenant, without the key's user
        list check: a position in the list of users (a cursor), not an access."""
        user_id = check_external_user(user_id, field)
        return user_id if self.tenant is None else f"{self.tenant}{SEPARATOR}{user_id}"

    def owns(self, stored_user_id: str) -> bool:
        """Whether a stored user id belongs to this scope (tenant and user list)."""
        ext = self._strip(stored_user_id)
        if ext is None:
            return False
        return self.user_ids is None or ext in self.user_ids

    def external(self, stored_user_id: str) -> str:
        """The external id of a stored user id of this scope."""
        ext = self._strip(stored_user_id)
        if ext is None:  # never happens for ids the engine returned for this scope's queries
            raise AuthError("user outside this API key's tenant", status_code=403)
        return ext

    def _strip(self, stored: str) -> str | None:
        if self.tenant is None:
            return None if SEPARATOR in stored else stored
        prefix = f"{self.tenant}{SEPARATOR}"
        if not stored.startswith(prefix):
            return None
        rest = stored[len(prefix) :]
        return rest if rest and SEPARATOR not in rest else None
