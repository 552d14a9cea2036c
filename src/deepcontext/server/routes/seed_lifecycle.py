"""DeepContext 0.1's POST /lifecycle/run (decay, consolidation, cleanup of one user), present when
the engine has ``DeepContext.run_lifecycle``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from deepcontext.core import DeepContext
from deepcontext.server.auth import Ctx, WriteScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.routes._util import external_report, jsonable
from deepcontext.server.routes.seed import TAG
from deepcontext.server.schemas import LifecycleBody

__all__ = ["available", "router"]

router = APIRouter(tags=[TAG])


def available() -> bool:
    return hasattr(DeepContext, "run_lifecycle")


@router.post("/lifecycle/run", responses=PROBLEM_RESPONSES)
async def run_lifecycle(body: LifecycleBody, scope: WriteScope, ctx: Ctx) -> Any:
    """Run the memory lifecycle of one user: decay, consolidation, cleanup."""
    report = await ctx.run_lifecycle(scope.user(body.user_id))  # type: ignore[attr-defined]
    return external_report(scope, jsonable(report))
