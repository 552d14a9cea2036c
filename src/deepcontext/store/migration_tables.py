"""The tables and columns the migrations declare as SQLAlchemy objects: the *model* of their
``CreateTables`` and ``AddColumn`` steps (:mod:`deepcontext.store.migration_steps`), from the initial
schema of version 1 to the tables and columns later versions add. They are the same for every
backend, and :func:`deepcontext.store.schema.build_metadata` replays them into the description the
code queries; :mod:`deepcontext.store.migrations` lists the migrations and writes the raw SQL each
dialect runs besides them (keyword indexes, triggers, PostgreSQL's HNSW index).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from deepcontext.store.columns import JSONType, UTCDateTime, VectorType, pk_type

# nothing public: the migrations in deepcontext.store.migrations name these declarations
__all__: list[str] = []


def _v1_tables(md: MetaData, dim: int) -> None:
    """Version 1: the initial schema."""
    Table(
        "dc_meta",
        md,
        Column("key", String(64), primary_key=True),
        Column("value", Text, nullable=False),
    )
    Table(
        "users",
        md,
        Column("user_id", String(255), primary_key=True),
        # bumped by every write that changes memories: caches compare it to know what to reload
        Column("version", BigInteger, nullable=False, default=0),
        # random token made when the row is created: a re-created user never matches an old cache
        Column("incarnation", String(32), nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("consolidation_due", Boolean, nullable=False, default=False),
    )
    Table(
        "conversations",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("conversation_id", String(255), primary_key=True),
        Column("tip_turn_id", pk_type, nullable=True),
        Column("summary", Text, nullable=True),
        Column("summary_turn_id", pk_type, nullable=True),
        Column("summary_updated_at", UTCDateTime, nullable=True),
        Column("turn_count", Integer, nullable=False, default=0),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("metadata", JSONType, nullable=False, default=dict),
    )
    Table(
        "turns",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("conversation_id", String(255), nullable=False),
        Column("role", String(32), nullable=False),
        Column("name", String(255), nullable=True),
        Column("content", Text, nullable=False),
        Column("content_hash", String(32), nullable=False),
        Column("kind", String(16), nullable=False, default="message"),  # message | summary
        Column("said_at", UTCDateTime, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("archived", Boolean, nullable=False, default=False),
        Column("summarized_by", pk_type, nullable=True),
        Column("summary_of", JSONType, nullable=False, default=list),
        Column("tags", JSONType, nullable=False, default=list),
        Column("metadata", JSONType, nullable=False, default=dict),
        Index("ix_turns_user_conv", "user_id", "conversation_id", "id"),
    )
    Table(
        "turn_edges",
        md,
        Column("user_id", String(255), nullable=False),
        Column("child_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("parent_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("position", Integer, nullable=False, default=0),
        Index("ix_turn_edges_parent", "parent_id"),
    )
    Table(
        "memories",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("text", Text, nullable=False),
        Column("content_hash", String(32), nullable=False),
        Column("memory_type", String(16), nullable=False),
        Column("tier", String(16), nullable=False),
        Column("status", String(16), nullable=False, default="active"),
        Column("importance", Float, nullable=False),
        Column("base_importance", Float, nullable=False),  # importance at the last reinforcement
        Column("confidence", Float, nullable=False),
        Column("access_count", Integer, nullable=False, default=0),
        Column("last_accessed_at", UTCDateTime, nullable=True),
        Column("reinforced_at", UTCDateTime, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("said_at", UTCDateTime, nullable=True),
        Column("occurred_at", UTCDateTime, nullable=True),
        Column("valid_from", UTCDateTime, nullable=True),
        Column("valid_to", UTCDateTime, nullable=True),
        Column("expires_at", UTCDateTime, nullable=True),
        Column("deleted_at", UTCDateTime, nullable=True),
        Column("superseded_by", pk_type, nullable=True),
        Column("conversation_id", String(255), nullable=True),
        Column("source", String(32), nullable=False, default="rules"),
        Column("consolidated_from", JSONType, nullable=False, default=list),
        Column("metadata", JSONType, nullable=False, default=dict),
        Column("pinned", Boolean, nullable=False, default=False),
        Column("tags", JSONType, nullable=False, default=list),
        Column("canonical_key", String(255), nullable=True),
        Column("embedding", VectorType(dim), nullable=True),
        # the users.version of the write that last changed this row (incremental cache refresh)
        Column("rev", BigInteger, nullable=False, default=0),
        Index("ix_memories_user_status", "user_id", "status", "tier"),
        Index("ix_memories_user_hash", "user_id", "content_hash"),
        Index("ix_memories_user_rev", "user_id", "rev"),
        Index("ix_memories_user_created", "user_id", "created_at", "id"),
    )
    Table(
        "memory_sources",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("turn_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Index("ix_memory_sources_turn", "turn_id"),
    )
    Table(
        "memory_history",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("memory_id", pk_type, nullable=False),
        Column("event", String(16), nullable=False),
        Column("old_text", Text, nullable=True),
        Column("new_text", Text, nullable=True),
        Column("actor", String(64), nullable=False, default="system"),
        Column("reason", Text, nullable=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("details", JSONType, nullable=False, default=dict),
        Index("ix_memory_history_memory", "user_id", "memory_id", "id"),
    )
    Table(
        "memory_links",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("other_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Column("similarity", Float, nullable=False),
        Index("ix_memory_links_other", "other_id"),
    )
    Table(
        "entities",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("name", String(512), nullable=False),
        Column("norm_name", String(512), nullable=False),
        Column("entity_type", String(32), nullable=False),
        Column("mention_count", Integer, nullable=False, default=1),
        Column("first_seen_at", UTCDateTime, nullable=False),
        Column("last_seen_at", UTCDateTime, nullable=False),
        Column("attributes", JSONType, nullable=False, default=dict),
        UniqueConstraint("user_id", "norm_name", name="uq_entities_user_name"),
    )
    Table(
        "relations",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("source_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), nullable=False),
        Column("target_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), nullable=False),
        Column("relation", String(128), nullable=False),
        Column("strength", Float, nullable=False, default=1.0),
        Column("mention_count", Integer, nullable=False, default=1),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("properties", JSONType, nullable=False, default=dict),
        UniqueConstraint("user_id", "source_id", "relation", "target_id", name="uq_relations_edge"),
        Index("ix_relations_target", "user_id", "target_id"),
    )
    Table(
        "memory_entities",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("entity_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Index("ix_memory_entities_entity", "entity_id", "memory_id"),
    )
    Table(
        "kv",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("namespace", String(64), primary_key=True),
        Column("key", String(512), primary_key=True),
        Column("value", JSONType, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    )
    Table(
        "locks",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("name", String(64), primary_key=True),
        Column("owner", String(128), nullable=False),
        Column("expires_at", UTCDateTime, nullable=False),
    )
    Table(
        "api_keys",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("key_id", String(32), nullable=False, unique=True),  # public prefix shown in listings
        Column("key_hash", String(128), nullable=False),
        Column("tenant", String(255), nullable=False),
        Column("name", String(255), nullable=True),
        Column("user_ids", JSONType, nullable=True),  # null: every user of the tenant
        Column("read_only", Boolean, nullable=False, default=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("revoked_at", UTCDateTime, nullable=True),
        Column("last_used_at", UTCDateTime, nullable=True),
    )


def _v2_mention_count(dim: int) -> Column:  # type: ignore[type-arg]
    # how many times the memory was said: 1 when written, +1 on every re-mention (a NOOP of an add),
    # which also restarts its forgetting curve (deepcontext.lifecycle.decay); rows of version 1 get 1
    return Column("mention_count", Integer, nullable=False, default=1, server_default=text("1"))


def _v5_scope(name: str) -> Callable[[int], Column]:  # type: ignore[type-arg]
    # the agent / run a memory or turn belongs to, inside its user (NULL: none); rows before v5 have none
    return lambda dim: Column(name, String(255), nullable=True)


def _v11_ui_sessions(md: MetaData, dim: int) -> None:
    """The inspector's sign-ins: the browser holds a random session id, stored here hashed, tied to
    the key it was opened with (a revoked key ends its sessions) and ending at ``expires_at``."""
    Table(
        "ui_sessions",
        md,
        Column("session_hash", String(128), primary_key=True),
        Column("key_id", String(32), nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("expires_at", UTCDateTime, nullable=False),
        Index("ix_ui_sessions_key", "key_id"),
    )


def _v12_activity(md: MetaData, dim: int) -> None:
    """The activity log: each recorded search or context call (``details``: its parameters, results
    and what a context included and left out, as JSON) and, per result, a row naming the memory,
    so a memory's page finds the calls that retrieved it by index."""
    Table(
        "activity",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("kind", String(16), nullable=False),
        Column("via", String(16), nullable=False),
        Column("key_id", String(32), nullable=True),
        Column("agent_id", String(255), nullable=True),
        Column("run_id", String(255), nullable=True),
        Column("conversation_id", String(255), nullable=True),
        Column("query", Text, nullable=False),
        Column("took_ms", Float, nullable=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("details", JSONType, nullable=False, default=dict),
        Index("ix_activity_user", "user_id", "id"),
        Index("ix_activity_user_time", "user_id", "created_at"),
        sqlite_autoincrement=True,  # an id is never given again once pruned: a bookmarked call stays gone
    )
    Table(
        "activity_hits",
        md,
        Column("activity_id", pk_type, ForeignKey("activity.id", ondelete="CASCADE"), primary_key=True),
        Column("memory_id", pk_type, primary_key=True),
        Column("user_id", String(255), nullable=False),
        Column("rank", Integer, nullable=False),
        Index("ix_activity_hits_memory", "user_id", "memory_id", "activity_id"),
    )
