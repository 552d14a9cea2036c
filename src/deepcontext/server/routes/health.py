"""GET /v1/health (the process answers) and GET /v1/ready (the database answers); both public."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

import deepcontext
from deepcontext.server.auth import get_ctx
from deepcontext.server.problems import PROBLEM_RESPONSES, problem_response, request_id_of
from deepcontext.server.schemas import Health, Readiness
from deepcontext.store import latest_version

__all__ = ["router"]

log = logging.getLogger("deepcontext.server")
router = APIRouter(prefix="/v1", tags=["health"])


@router.get("/health", response_model=Health)
async def health() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok", "version": deepcontext.__version__}


@router.get("/ready", response_model=Readiness, responses={503: PROBLEM_RESPONSES[503]})
async def ready(request: Request) -> Readiness | JSONResponse:
    """Readiness: the database answers, its schema is current and its disk is not full (a write of
    this process failed for want of space, and none has succeeded since). A read-only database is
    ready, with ``read_only`` true: reads are served, writes answer 503."""
    try:
        ctx = get_ctx(request)
        version = await asyncio.to_thread(ctx.store.schema_version)
    except Exception as exc:  # readiness reports, it does not fail
        log.warning("readiness check failed: %s: %s", type(exc).__name__, exc)
        return problem_response(503, "the database is not available", kind="not-ready", request_id=request_id_of(request))
    if version != latest_version():
        return problem_response(503, "the database schema is not current", kind="not-ready", request_id=request_id_of(request))
    if ctx.store.disk_full:
        return problem_response(
            503,
            "disk full: the database's disk has no space left; writes fail",
            kind="disk-full",
            request_id=request_id_of(request),
        )
    return Readiness(status="ready", database="ok", schema_version=version, read_only=ctx.store.read_only)
