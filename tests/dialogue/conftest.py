"""Fixtures of the dialogue tests: a graph on every backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepcontext.dialogue import LLMContextGraph
from tests.dialogue.helpers import open_store, store_backend
from tests.support.fixtures import fake_openai, fake_openai_factory, fake_openai_server  # noqa: F401


@pytest.fixture
def store_url(db_url: str) -> str:
    """``db_url`` of the shared conftest: a fresh SQLite file or PostgreSQL database."""
    return db_url


@pytest.fixture
def store(store_url: str) -> Iterator[Any]:
    st = open_store(store_url)
    yield st
    st.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_graph(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], LLMContextGraph]]:
    """A factory of empty graphs on one backend. Store graphs of one test share a database but get
    their own user, so they never see each other."""
    stores: list[Any] = []
    if request.param == "memory":
        yield LLMContextGraph
        return
    url = f"sqlite:///{tmp_path / 'dialogue.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_database")()
    stores.append(open_store(url))

    def make() -> LLMContextGraph:
        return LLMContextGraph(store_backend(stores[0]))

    yield make
    for st in stores:
        st.close()


@pytest.fixture
def graph(make_graph: Callable[[], LLMContextGraph]) -> LLMContextGraph:
    return make_graph()
