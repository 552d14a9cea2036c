"""Schemathesis over the OpenAPI document: valid and invalid requests to every operation, on SQLite
and PostgreSQL, never a 5xx (bounded: a few dozen examples per operation and mode)."""

from __future__ import annotations

import asyncio

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.python import asgi

from deepcontext import DeepContext
from deepcontext.server import create_app
from deepcontext.settings import DeepContextSettings
from deepcontext.store.apikeys import create_key

EXAMPLES = {schemathesis.GenerationMode.POSITIVE: 25, schemathesis.GenerationMode.NEGATIVE: 15}


def _make_key(url: str) -> str:
    async def go() -> str:
        async with DeepContext(database_url=url, embedder="hash") as ctx:
            await ctx.add([{"role": "user", "name": "Ana", "content": "I live in Lisbon and work at Globex."}], "acme/ana")
            return create_key(ctx.store, "acme", now=ctx.clock.now())[1]

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
