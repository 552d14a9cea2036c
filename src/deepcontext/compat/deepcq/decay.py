"""``deepcq.decay``."""

from deepcontext.query.recency import DecayFn, Recency, exponential_decay, linear_decay, no_decay

__all__ = ["DecayFn", "Recency", "exponential_decay", "linear_decay", "no_decay"]
