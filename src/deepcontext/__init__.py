"""deepcontext: the memory layer for AI agents."""

__version__ = "0.2.0"
