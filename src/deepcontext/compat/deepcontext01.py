"""DeepContext 0.1's engine class, for code that relies on 0.1's ``get_entity_graph``:
``from deepcontext.compat.deepcontext01 import DeepContext`` (or ``MemoryEngine``).

It is deepcontext's :class:`~deepcontext.DeepContext` with one method as 0.1 had it:
``get_entity_graph`` returns ``[]`` for an entity the user's graph does not hold (deepcontext raises
:class:`~deepcontext.EntityNotFoundError`) and lists only the neighbours (deepcontext lists the
entity itself first, at depth 0 with no relation). Everything else is deepcontext's.
"""

from __future__ import annotations

import builtins

from deepcontext.core import DeepContext as _DeepContext
from deepcontext.errors import EntityNotFoundError
from deepcontext.types import GraphNeighbourInfo

__all__ = ["DeepContext", "MemoryEngine"]


class DeepContext(_DeepContext):
    """:class:`deepcontext.DeepContext` with DeepContext 0.1's ``get_entity_graph``."""

    async def get_entity_graph(self, user_id: str, entity_name: str, depth: int = 2) -> builtins.list[GraphNeighbourInfo]:
        """The entity's neighbours up to ``depth`` hops, breadth first (``[{entity, entity_type,
        relation, depth, strength, via, direction}]``); ``[]`` when the entity is unknown."""
        try:
            hood = await super().get_entity_graph(user_id, entity_name, depth)
        except EntityNotFoundError:
            return []
        return [n for n in hood if n["depth"] > 0]


#: 0.1's name for the engine
MemoryEngine = DeepContext
