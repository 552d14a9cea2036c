"""Schemathesis over the OpenAPI document: valid and invalid requests to every operation, on SQLite
and PostgreSQL, never a 5xx (bounded: a few dozen examples per operation and mode); and, quickly,
that the schema and the server agree (what is valid is accepted, what is not is refused, answers
fit the schema)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import checks
from schemathesis.python import asgi

from deepcontext import DeepContext
from deepcontext.server import create_app
from deepcontext.settings import DeepContextSettings
from tests.server.helpers import Api

EXAMPLES = {schemathesis.GenerationMode.POSITIVE: 25, schemathesis.GenerationMode.NEGATIVE: 15}


def _make_key(url: str) -> str:
    async def go() -> str:
        async with DeepContext(database_url=url, embedder="hash") as ctx:
            await ctx.add([{"role": "user", "name": "Ana", "content": "I live in Lisbon and work at Globex."}], "acme/ana")
            return ctx.store.keys.create("acme", now=ctx.clock.now())[1]

    return asyncio.run(go())


@pytest.mark.slow  # hundreds of generated requests per backend
def test_no_server_errors(db_url: str) -> None:
    key = _make_key(db_url)
    app = create_app(DeepContextSettings(database_url=db_url, embedder="hash"))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = {"Authorization": f"Bearer {key}"}
    failures: list[str] = []
    calls = 0
    try:
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 17
        for op in operations:
            for mode, n in EXAMPLES.items():

                @given(case=op.as_strategy(generation_mode=mode))
                @settings(
                    max_examples=n,
                    deadline=None,
                    database=None,
                    derandomize=True,
                    suppress_health_check=list(HealthCheck),
                )
                def run(case: schemathesis.Case) -> None:
                    nonlocal calls
                    calls += 1
                    response = case.call(headers=headers)
                    if response.status_code >= 500:
                        failures.append(f"{op.label} [{mode.value}] -> {response.status_code}: {response.text[:300]}")
                    else:
                        assert response.status_code != 401, response.text  # the key was used

                try:
                    run()
                except Unsatisfiable:  # nothing to make invalid (an operation without parameters)
                    assert mode is schemathesis.GenerationMode.NEGATIVE, op.label
    finally:
        asgi.shutdown_lifespans()
    assert not failures, "\n".join(failures[:20])
    assert calls >= len(operations) * 25


#: what the schema promises, checked on every response (response_headers_conformance is left out:
#: the paging headers are optional, and that check wants every documented header present)
CONFORMANCE = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
    checks.positive_data_acceptance,
]
CONFORMANCE_EXAMPLES = {schemathesis.GenerationMode.POSITIVE: 12, schemathesis.GenerationMode.NEGATIVE: 8}


def _outside_json_schema(value: Any) -> bool:
    """Metadata the server refuses where a schema would need a recursive type to say so: a NUL in a
    string, an integer beyond 64 bits."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -(2**63) <= value < 2**63
    if isinstance(value, list):
        return any(_outside_json_schema(v) for v in value)
    if isinstance(value, dict):
        return any(_outside_json_schema(k) or _outside_json_schema(v) for k, v in value.items())
    return False


def _valid_beyond_the_schema(case: schemathesis.Case, label: str) -> bool:
    """Make a valid-looking case valid where no schema can say (False: leave it out): cursors are
    opaque (only a previous page's is valid), a metadata filter has a grammar of its own, metadata
    is described, not typed, ``expires_at`` must be in the future, ``after`` earlier than
    ``before``, and JSON tools round integers near 2**63."""
    for part in (case.query, case.body):
        if not isinstance(part, dict):
            continue
        part.pop("cursor", None)
        part.pop("expires_at", None)
        if label in ("POST /v1/search", "GET /v1/memories"):
            part.pop("metadata", None)
        if part.get("after") is not None and part.get("before") is not None:
            part.pop("before")
        if isinstance(part.get("memory_id"), int) and part["memory_id"] > 2**53:
            part["memory_id"] = 2**53
    return not _outside_json_schema(case.body)


def test_the_schema_says_what_the_server_enforces(tmp_path) -> None:
    """Schema-valid requests are accepted (or answered 404 / 409 for what does not exist or
    conflicts), schema-invalid ones refused, and every answer fits its documented status, content
    type and schema (SQLite; a few examples per operation and mode, well under a minute)."""
    url = f"sqlite:///{tmp_path / 'st.db'}"
    key = _make_key(url)
    app = create_app(DeepContextSettings(database_url=url, embedder="hash"))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    try:
        for result in schema.get_all_operations():
            op = result.ok()
            for mode, n in CONFORMANCE_EXAMPLES.items():

                @given(case=op.as_strategy(generation_mode=mode))
                @settings(max_examples=n, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
                def run(case: schemathesis.Case) -> None:
                    if mode is schemathesis.GenerationMode.POSITIVE and not _valid_beyond_the_schema(case, op.label):
                        return
                    case.call_and_validate(headers={"Authorization": f"Bearer {key}"}, checks=CONFORMANCE)

                try:
                    run()
                except Unsatisfiable:
                    assert mode is schemathesis.GenerationMode.NEGATIVE, op.label
                except BaseException as exc:  # noqa: BLE001 - schemathesis' failure groups, reported together
                    if not isinstance(exc, Exception) and not isinstance(exc, BaseExceptionGroup):
                        raise
                    failures.append(f"{op.label} [{mode.value}]: {str(exc)[:1200]}")
    finally:
        asgi.shutdown_lifespans()
    assert not failures, "\n\n".join(failures)


async def test_405_allow_lists_every_method_of_the_path(local_api: Api) -> None:
    spec = local_api.app.openapi()
    checked = 0
    async with local_api.client() as c:
        for template, ops in spec["paths"].items():
            documented = {m.upper() for m in ops if m in ("get", "post", "put", "patch", "delete")}
            path = template.replace("{memory_id}", "1").replace("{user_id}", "ana")
            for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - documented):
                r = await c.request(method, path)
                assert r.status_code == 405, (method, path, r.status_code)
                assert set(r.headers["allow"].split(", ")) == documented, (method, path, r.headers["allow"])
                checked += 1
    assert checked > 40
