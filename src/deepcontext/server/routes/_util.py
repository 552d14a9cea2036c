"""Small helpers shared by the routers: stored user ids back to external ones in responses, the
users a scope sees."""

from __future__ import annotations

from typing import Any

from deepcontext.core import DeepContext
from deepcontext.server.tenancy import Scope
from deepcontext.types import Memory, SearchResponse

__all__ = ["external_memory", "external_report", "external_search", "jsonable", "scope_users"]


def external_memory(scope: Scope, m: Memory) -> Memory:
    return m.model_copy(update={"user_id": scope.external(m.user_id)})


def external_search(scope: Scope, res: SearchResponse) -> SearchResponse:
    return res.model_copy(update={"user_id": scope.external(res.user_id)})


def external_report(scope: Scope, report: dict[str, Any]) -> dict[str, Any]:
    """A report naming a stored ``user_id`` (the lifecycle's), with the external id."""
    if isinstance(report.get("user_id"), str):
        return {**report, "user_id": scope.external(report["user_id"])}
    return report


def jsonable(value: Any) -> Any:
    """A pydantic model or plain data as JSON-ready data."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


async def scope_users(ctx: DeepContext, scope: Scope, *, after: str | None = None, limit: int | None = None) -> list[str]:
    """The stored ids of the scope's users among ``limit`` stored ids after ``after``, in byte
    order: a tenant's are read from their range of the index, never the other tenants' users."""
    found = await ctx.users(tenant=scope.tenant, after=after, limit=limit)
    return [u for u in found if scope.owns(u)]
