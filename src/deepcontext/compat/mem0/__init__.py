"""mem0's open-source ``Memory`` / ``AsyncMemory`` interface over the deepcontext engine.

Code written for mem0 runs with ``from deepcontext.compat.mem0 import Memory``.
:class:`AsyncMemory` is the implementation; :class:`Memory` runs it on a
:class:`~deepcontext.SyncDeepContext`'s event loop. What a mem0 user sees is what mem0 shows:
extracted memories (the engine's verbatim turns only where nothing was extracted from them, as
their content), mem0's item keys, ``top_k=20`` and ``threshold=0.1`` by default. Ids are
deepcontext's integer ids as strings; ``score`` is deepcontext's calibrated relevance put on
mem0's cosine-like scale (see :func:`score_from_relevance`).
"""

from deepcontext.compat.mem0.memory import AsyncMemory, Memory
from deepcontext.compat.mem0.views import relevance_from_score, score_from_relevance

__all__ = ["AsyncMemory", "Memory", "relevance_from_score", "score_from_relevance"]
