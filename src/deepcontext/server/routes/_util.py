"""Small helpers shared by the routers: stored user ids back to external ones in responses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from deepcontext.server.tenancy import Scope
from deepcontext.types import Memory, MemoryPage, SearchResponse, Turn

__all__ = ["external_memory", "external_page", "external_report", "external_search", "external_turns", "jsonable"]


def external_memory(scope: Scope, m: Memory) -> Memory:
    return m.model_copy(update={"user_id": scope.external(m.user_id)})


def external_page(scope: Scope, page: MemoryPage) -> MemoryPage:
    return page.model_copy(update={"memories": [external_memory(scope, m) for m in page.memories]})


def external_search(scope: Scope, res: SearchResponse) -> SearchResponse:
    return res.model_copy(update={"user_id": scope.external(res.user_id)})


def external_turns(scope: Scope, turns: Iterable[Turn]) -> list[Turn]:
    return [t.model_copy(update={"user_id": scope.external(t.user_id)}) for t in turns]


def external_report(scope: Scope, report: dict[str, Any]) -> dict[str, Any]:
    """A report naming a stored ``user_id`` (the lifecycle's), with the external id."""
    if isinstance(report.get("user_id"), str):
        return {**report, "user_id": scope.external(report["user_id"])}
    return report


def jsonable(value: Any) -> Any:
    """A pydantic model or plain data as JSON-ready data."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value
