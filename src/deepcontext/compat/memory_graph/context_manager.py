"""``modules.context_manager``: the planner-driven chat over the DAG. Planning runs offline unless
the manager is given ``planner=LLMPlanner(llm)``."""

from deepcontext.dialogue.manager import ContextManager
from deepcontext.dialogue.plan import ContextDecision

__all__ = ["ContextDecision", "ContextManager"]
