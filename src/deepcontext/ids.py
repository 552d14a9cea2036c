"""The ids the engine stores: user and conversation ids, tenants, and the stored id of a tenant's
user.

Every row is keyed by one ``user_id`` string. Ids named through the REST API and the MCP server are
*external*: in a tenant the stored id is ``f"{tenant}/{user_id}"``, without one it is ``user_id``.
Neither an external user id nor a tenant may contain ``/`` (:data:`SEPARATOR`), so the mapping is
injective: no user id of one tenant can spell a stored id of another.

These rules sit below the store and the servers, which both apply them.
"""

from __future__ import annotations

import re
from typing import Any

from deepcontext.errors import ValidationError

__all__ = [
    "MAX_EXTERNAL_USER_CHARS",
    "MAX_ID_CHARS",
    "SEPARATOR",
    "TENANT_PATTERN",
    "check_encodable",
    "check_external_user",
    "check_id",
    "check_tenant",
    "internal_user_id",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_ID_CHARS = 255
SEPARATOR = "/"
#: tenants: 1-64 letters, digits, ``_ . -``
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_TENANT_RE = re.compile(TENANT_PATTERN)
#: 64 (tenant) + 1 (separator) + 190 = 255, the engine's longest user id
MAX_EXTERNAL_USER_CHARS = 190


def check_encodable(value: str, field: str) -> None:
    """Text must be storable everywhere: no NUL characters (PostgreSQL rejects them) and valid
    UTF-8 (no lone surrogates)."""
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{field} is not valid Unicode (lone surrogate)", field=field) from None


def check_id(value: Any, field: str) -> str:
    """A user / conversation id: a non-empty string of at most 255 characters, no control chars, no
    whitespace around it."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value.strip():
        raise ValidationError(f"{field} must not be empty", field=field)
    if value != value.strip():  # " ana" and "ana" would be two users that read the same
        raise ValidationError(f"{field} must not start or end with whitespace, got {value!r}", field=field)
    if len(value) > MAX_ID_CHARS:
        raise ValidationError(f"{field} is longer than {MAX_ID_CHARS} characters", field=field)
    if _CONTROL.search(value):
        raise ValidationError(f"{field} contains control characters", field=field)
    check_encodable(value, field)
    return value


def check_tenant(tenant: Any) -> str:
    """A tenant name: 1-64 letters, digits, ``_``, ``.`` or ``-``, starting with a letter or digit."""
    if not isinstance(tenant, str) or not _TENANT_RE.fullmatch(tenant):
        raise ValidationError(
            "tenant must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit", field="tenant"
        )
    return tenant


def check_external_user(user_id: Any, field: str = "user_id") -> str:
    """A user id as API callers write it: the engine's rules, at most 190 characters, no ``/``."""
    user_id = check_id(user_id, field)
    if SEPARATOR in user_id:
        raise ValidationError(f"{field} must not contain {SEPARATOR!r}", field=field)
    if len(user_id) > MAX_EXTERNAL_USER_CHARS:
        raise ValidationError(f"{field} is longer than {MAX_EXTERNAL_USER_CHARS} characters", field=field)
    return user_id


def internal_user_id(tenant: str | None, user_id: str) -> str:
    """The stored user id of ``user_id`` in ``tenant`` (validates both)."""
    user_id = check_external_user(user_id)
    if tenant is None:
        return user_id
    return f"{check_tenant(tenant)}{SEPARATOR}{user_id}"
