"""Every exception deepcontext raises, under one root, :class:`DeepContextError`.

Below it: configuration, validation (nothing was written), not found (per kind of id), storage
(the transaction was rolled back; migrations, locks, write conflicts), embedding, extraction, LLM
(timeouts, backend failures, rate limits, broken streams, unusable answers), cyclic conversation
graphs and authentication. Ids are attached as attributes (``memory_id``, ``user_id``...), never
only in the message.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthError",
    "ConfigurationError",
    "ConversationNotFoundError",
    "CyclicGraphError",
    "DeepContextError",
    "DiskFullError",
    "EmbeddingError",
    "EntityNotFoundError",
    "ExtractionError",
    "LLMBackendError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMStreamError",
    "LLMTimeoutError",
    "LLMValidationError",
    "LockTimeoutError",
    "MemoryNotFoundError",
    "MigrationError",
    "LegacyDatabaseError",
    "NotFoundError",
    "ReadOnlyDatabaseError",
    "StorageError",
    "TurnNotFoundError",
    "ValidationError",
    "WriteConflictError",
]


class DeepContextError(Exception):
    """Root of every error deepcontext raises on purpose."""


class ConfigurationError(DeepContextError):
    """Settings that cannot work together, or a missing optional component."""


class ValidationError(DeepContextError, ValueError):
    """Bad input to a public call. Raised before anything is written.

    ``field`` names the offending argument (``"messages[2].role"``), when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(DeepContextError, LookupError):
    """An id that does not exist, or does not belong to this user."""

    def __str__(self) -> str:  # LookupError would quote the message like a KeyError
        return str(self.args[0]) if self.args else self.__class__.__name__


class MemoryNotFoundError(NotFoundError, ValueError):
    """No active memory of this id for this user. ``status`` is set when the memory exists but is
    no longer active (``"deleted"``, ``"merged"``...), so the message can say so."""

    def __init__(self, memory_id: Any, user_id: str, *, status: str | None = None) -> None:
        super().__init__(
            f"memory {memory_id!r} not found for user {user_id!r}"
            if status is None
            else f"memory {memory_id!r} of user {user_id!r} {self.state(status)}"
        )
        self.memory_id = memory_id
        self.user_id = user_id
        self.status = status

    @staticmethod
    def state(status: str | None) -> str:
        """What the message says of the memory: not found, already deleted, or its status."""
        if status is None:
            return "not found"
        if status == "deleted":
            return "is already deleted"
        return f"is {status}, no longer active"


class EntityNotFoundError(NotFoundError):
    def __init__(self, entity_name: str, user_id: str) -> None:
        super().__init__(f"entity {entity_name!r} not found for user {user_id!r}")
        self.entity_name = entity_name
        self.user_id = user_id


class TurnNotFoundError(NotFoundError):
    def __init__(self, turn_id: Any, user_id: str) -> None:
        super().__init__(f"turn {turn_id!r} not found for user {user_id!r}")
        self.turn_id = turn_id
        self.user_id = user_id


class ConversationNotFoundError(NotFoundError):
    def __init__(self, conversation_id: str, user_id: str) -> None:
        super().__init__(f"conversation {conversation_id!r} not found for user {user_id!r}")
        self.conversation_id = conversation_id
        self.user_id = user_id


class StorageError(DeepContextError):
    """The database failed. The transaction was rolled back; nothing was half-written."""


class MigrationError(StorageError):
    pass


class ReadOnlyDatabaseError(StorageError):
    """A write to a database opened read-only (a SQLite file or folder this process may not write,
    a PostgreSQL server in read-only mode). Nothing was written; reads work."""


class DiskFullError(StorageError):
    """The disk holding the database is full (SQLite's SQLITE_FULL, PostgreSQL's disk_full). Nothing
    was written; reads work. Free space, or delete data (``delete_user``), then retry."""


class LegacyDatabaseError(MigrationError):
    """The database was written by DeepContext 0.1: it is not migrated in place, it is imported."""

    def __init__(self, where: str) -> None:
        if "://" in where:  # a server database: the importer reads 0.1's SQLite files only
            message = (
                f"{where} holds a DeepContext 0.1 database, which is not migrated in place: point database_url at a new database"
            )
        else:
            message = (
                f"{where} is a DeepContext 0.1 database: import it with `deepcontext import-0.1 {where}` "
                f"(the 0.1 file is kept as {where}.v0.1.bak), or open another database and import from it"
            )
        super().__init__(message)
        self.where = where


class WriteConflictError(StorageError):
    """Other writers changed what a write was planned on, each time it was planned again. Nothing
    was written; retrying the write is safe."""

    def __init__(self, message: str, *, user_id: str) -> None:
        super().__init__(message)
        self.user_id = user_id


class LockTimeoutError(StorageError):
    def __init__(self, name: str, user_id: str) -> None:
        super().__init__(f"lock {name!r} for user {user_id!r} is held by another worker")
        self.name = name
        self.user_id = user_id


class EmbeddingError(DeepContextError):
    """The embedder failed or returned vectors of the wrong shape."""


class ExtractionError(DeepContextError):
    """An extractor failed or returned something that did not validate."""


class LLMError(DeepContextError):
    """An LLM call failed. The LLM layer raises subclasses with more detail."""


class CyclicGraphError(DeepContextError, ValueError):
    """Adding this edge would make the conversation graph cyclic."""

    def __init__(self, message: str, *, child: Any = None, parent: Any = None) -> None:
        super().__init__(message)
        self.child = child
        self.parent = parent


class AuthError(DeepContextError):
    """Missing, wrong, revoked or insufficient credentials (REST API)."""

    def __init__(self, message: str, *, status_code: int = 401) -> None:
        super().__init__(message)
        self.status_code = status_code


# --- the LLM layer's errors (deepcontext.llm) ---------------------------------------------------------


class LLMTimeoutError(LLMError, TimeoutError):
    """No answer within the timeout, after the retries the router allows.

    ``backend`` names the backend that timed out last; ``attempts`` counts the calls made.
    """

    def __init__(self, message: str, *, backend: str | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.backend = backend
        self.attempts = attempts
        #: every failure a router met before giving up (oldest first)
        self.failures: list[LLMError] = []


class LLMBackendError(LLMError):
    """The backend failed: an HTTP error status, a refused connection, a broken response.

    ``status_code`` is the HTTP status when there was one; ``retryable`` tells whether the same call
    may succeed later (5xx, 429, connection errors) or not (400, 401, 404...).
    """

    def __init__(
        self,
        message: str,
        *,
        backend: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.backend = backend
        self.status_code = status_code
        self.retryable = retryable
        self.attempts = attempts
        #: every failure a router met before giving up (oldest first)
        self.failures: list[LLMError] = []


class LLMRateLimitError(LLMBackendError):
    """HTTP 429. ``retry_after`` holds the seconds the backend asked to wait, when it said."""

    def __init__(
        self,
        message: str,
        *,
        backend: str | None = None,
        retry_after: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, backend=backend, status_code=429, retryable=True, attempts=attempts)
        self.retry_after = retry_after


class LLMStreamError(LLMBackendError):
    """A stream broke after text had been yielded. Never retried: the caller already has part of it.

    ``partial_text`` is what had been yielded before the break.
    """

    def __init__(self, message: str, *, backend: str | None = None, partial_text: str = "") -> None:
        super().__init__(message, backend=backend, retryable=False)
        self.partial_text = partial_text


class LLMResponseError(LLMError):
    """An answer arrived but cannot be used (empty, not JSON, cut off...).

    ``text`` holds the start of the offending answer (at most a few hundred characters).
    """

    def __init__(self, message: str, *, backend: str | None = None, text: str | None = None) -> None:
        super().__init__(message)
        self.backend = backend
        self.text = text


class LLMValidationError(LLMResponseError):
    """The answer's JSON does not fit the expected schema, even after one repair attempt.

    ``errors`` lists pydantic's error descriptions of the last attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        backend: str | None = None,
        text: str | None = None,
        errors: list[str] | None = None,
    ) -> None:
        super().__init__(message, backend=backend, text=text)
        self.errors = errors or []
