"""The conversation path: what a context builder shows of a conversation's history.

:func:`conversation_path` returns the active chain root -> node of a conversation (the tip when no
node is given), cut to its last ``max_nodes`` nodes, with each node's messages, summary text and
turn ids. Archived rounds appear as the summary node that stands for them, before the rounds that
follow it; the original turns stay stored. :meth:`ConversationPath.messages` flattens it into chat
messages, :meth:`ConversationPath.turn_ids` gives the provenance of everything shown. Pass the same
:class:`~deepcontext.dialogue.sqlstore.StoreDialogueBackend` to reuse its structure cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepcontext.dialogue.paths import ancestor_chain
from deepcontext.dialogue.vocabulary import NodeNotFoundError

__all__ = ["ConversationPath", "PathNode", "conversation_path"]


@dataclass(slots=True)
class PathNode:
    """One node of the path: a round (user message and reply) or a summary of older rounds."""

    id: int
    #: (role, content) of the node's non-empty messages, in order; a summary's is ("summary", text)
    messages: list[tuple[str, str]]
    is_summary: bool = False
    #: for a summary: the nodes it covers directly
    summarized_ids: list[int] = field(default_factory=list)
    #: the node's short summary text (``LLMContextGraph.set_node_summary``), "" if none
    summary: str = ""
    tags: list[str] = field(default_factory=list)
    #: the stored turns of the node (provenance)
    turn_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class ConversationPath:
    """The active chain of one conversation, oldest first."""

    user_id: str
    conversation_id: str
    #: the node the path ends at (None for an empty conversation)
    node_id: int | None
    nodes: list[PathNode] = field(default_factory=list)
    #: the length of the whole active chain (``len(nodes)`` is at most ``max_nodes`` of it)
    chain_length: int = 0

    @property
    def truncated(self) -> bool:
        """True when older nodes of the chain were left out."""
        return self.chain_length > len(self.nodes)

    @property
    def node_ids(self) -> list[int]:
        return [n.id for n in self.nodes]

    def turn_ids(self) -> list[int]:
        """Every turn shown, in order."""
        return [t for n in self.nodes for t in n.turn_ids]

    def messages(self) -> list[dict[str, str]]:
        """Chat messages in order; a summary node becomes one system message."""
        out: list[dict[str, str]] = []
        for n in self.nodes:
            for role, content in n.messages:
                if role == "summary":
                    out.append({"role": "system", "content": f"Summary of the earlier conversation: {content}"})
                else:
                    out.append({"role": role, "content": content})
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "node_id": self.node_id,
            "chain_length": self.chain_length,
            "truncated": self.truncated,
            "nodes": [
                {
                    "id": n.id,
                    "messages": [{"role": r, "content": c} for r, c in n.messages],
                    "is_summary": n.is_summary,
                    "summarized_ids": n.summarized_ids,
                    "summary": n.summary,
                    "tags": n.tags,
                    "turn_ids": n.turn_ids,
                }
                for n in self.nodes
            ],
        }


def conversation_path(
    store: Any = None,
    user_id: str | None = None,
    conversation_id: str = "default",
    *,
    node_id: int | None = None,
    max_nodes: int | None = 8,
    strategy: str = "longest",
    backend: Any = None,
) -> ConversationPath:
    """The active chain of (``user_id``, ``conversation_id``) ending at ``node_id`` (default: the
    conversation's tip), its last ``max_nodes`` nodes (None: all), oldest first.

    Give a migrated ``store`` with ``user_id`` / ``conversation_id``, or a ready ``backend`` (a
    :class:`~deepcontext.dialogue.sqlstore.StoreDialogueBackend`, whose cache is reused). An empty
    or unknown conversation gives an empty path. Raises
    :class:`~deepcontext.dialogue.vocabulary.NodeNotFoundError` for a ``node_id`` not in it.
    """
    if backend is None:
        from deepcontext.dialogue.sqlstore import StoreDialogueBackend

        if store is None or user_id is None:
            from deepcontext.errors import ValidationError

            raise ValidationError("conversation_path needs a store and a user_id, or a backend", field="store")
        backend = StoreDialogueBackend(store, user_id=user_id, conversation_id=conversation_id)
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1):
        from deepcontext.errors import ValidationError

        raise ValidationError("max_nodes must be a positive integer or None", field="max_nodes")
    target = node_id if node_id is not None else backend.tip_node_id()
    path = ConversationPath(user_id=backend.user_id, conversation_id=backend.conversation_id, node_id=target)
    if target is None:
        return path
    if isinstance(target, bool) or not isinstance(target, int):
        raise NodeNotFoundError(target)
    with backend.topology() as topo:
        if target not in topo:
            raise NodeNotFoundError(target)
        full = ancestor_chain(topo, target, None, strategy)
    chain = full if max_nodes is None else full[-max_nodes:]
    path.chain_length = len(full)
    nodes = backend.get_nodes(chain)
    turns = backend.node_turn_ids(chain) if hasattr(backend, "node_turn_ids") else {}
    for n in chain:
        node = nodes.get(n)
        if node is None:
            continue
        if node.is_summary:
            messages = [("summary", node.context.llm_role.content)]
        else:
            messages = [(m.role, m.content) for m in node.context.messages()]
        path.nodes.append(
            PathNode(
                id=n,
                messages=messages,
                is_summary=node.is_summary,
                summarized_ids=sorted(node.summarized_ids),
                summary=node.summary,
                tags=sorted(node.tags),
                turn_ids=turns.get(n, []),
            )
        )
    return path
