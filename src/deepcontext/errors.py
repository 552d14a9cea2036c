"""Every exception deepcontext raises, under one root.

The tree::

    DeepContextError                  anything raised on purpose by deepcontext
    ├── ConfigurationError            bad or incompatible settings (unknown backend, missing model package,
    │                                 a database made with another embedder, ...)
    ├── ValidationError (ValueError)  bad input to a public call; nothing was written
    ├── NotFoundError (LookupError)   an id that does not exist for this user
    │   ├── MemoryNotFoundError (ValueError too, as DeepContext 0.1 raised ValueError)
    │   ├── EntityNotFoundError
    │   ├── TurnNotFoundError
    │   └── ConversationNotFoundError
    ├── StorageError                  the database failed; the transaction was rolled back
    │   ├── MigrationError            the schema could not be brought to the current version
    │   └── LockTimeoutError          a per-user lock (lifecycle) could not be taken in time
    ├── EmbeddingError                the embedder failed; nothing was written
    ├── ExtractionError               an extractor failed or returned something unusable
    ├── LLMError                      an LLM call failed (the LLM layer adds subclasses)
    ├── CyclicGraphError (ValueError) an edge would create a cycle in a conversation DAG
    └── AuthError                     REST API authentication / authorisation

Ids are attached as attributes (``memory_id``, ``user_id``...), never only in the message.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthError",
    "ConfigurationError",
    "ConversationNotFoundError",
    "CyclicGraphError",
    "DeepContextError",
    "EmbeddingError",
    "EntityNotFoundError",
    "ExtractionError",
    "LLMError",
    "LockTimeoutError",
    "MemoryNotFoundError",
    "MigrationError",
    "NotFoundError",
    "StorageError",
    "TurnNotFoundError",
    "ValidationError",
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
    def __init__(self, memory_id: Any, user_id: str) -> None:
        super().__init__(f"memory {memory_id!r} not found for user {user_id!r}")
        self.memory_id = memory_id
        self.user_id = user_id


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
