"""pytest fixtures for the fake OpenAI-compatible server. Import the ones you need explicitly::

    from tests.support.fixtures import fake_openai, fake_openai_factory, fake_openai_server  # noqa: F401

``fake_openai`` (function scope) is a running server, reset before and after the test: empty script,
empty request log. ``fake_openai_factory()`` starts extra servers (closed after the test), for
example a second backend to fall back to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI

__all__ = ["fake_openai", "fake_openai_factory", "fake_openai_server"]


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """One fake server for the whole session (prefer ``fake_openai``, which resets it)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The session's fake server with an empty script and an empty request log."""
    fake_openai_server.reset()
    yield fake_openai_server
    fake_openai_server.reset()


@pytest.fixture
def fake_openai_factory() -> Iterator[Callable[[], FakeOpenAI]]:
    """Start extra fake servers for this test; all are stopped afterwards."""
    started: list[FakeOpenAI] = []

    def make() -> FakeOpenAI:
        server = FakeOpenAI().start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
