"""``deepcq.core``."""

from deepcontext.query.core import DeepCQ

__all__ = ["DeepCQ"]
