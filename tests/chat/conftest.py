"""Fixtures of the chat tests (helpers in :mod:`tests.chat.helpers`)."""

from __future__ import annotations

import pytest

from tests.chat.helpers import Brain
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import fake_openai, fake_openai_factory, fake_openai_server  # noqa: F401


@pytest.fixture
def brain(fake_openai: FakeOpenAI) -> Brain:  # noqa: F811
    return Brain(fake_openai)
