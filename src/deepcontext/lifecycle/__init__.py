"""The memory lifecycle: forgetting-curve decay, consolidation into long-term memory, cleanup and
expiry. Safe to run at any time from any process (see :mod:`deepcontext.lifecycle.runner`).

- :mod:`~deepcontext.lifecycle.decay`: the forgetting curve (pure functions, :class:`DecayPolicy`);
- :mod:`~deepcontext.lifecycle.consolidate`: union-find grouping, contradictions, the offline merger;
- :mod:`~deepcontext.lifecycle.cleanup`: soft-delete what faded, purge old deletions and expired memories;
- :mod:`~deepcontext.lifecycle.runner`: one user's run under the store lock (:class:`LifecycleRunner`);
- :mod:`~deepcontext.lifecycle.service`: ``DeepContext.run_lifecycle`` / ``consolidate`` and auto-consolidation.

Its reads and writes are steps of the store (:class:`deepcontext.store.Store`); their SQL lives in
:mod:`deepcontext.store.lifecycle`.
"""

from __future__ import annotations

from deepcontext.lifecycle.decay import DecayPolicy, decayed_importance, effective_half_life, retention

__all__ = ["DecayPolicy", "decayed_importance", "effective_half_life", "retention"]
