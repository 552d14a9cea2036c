"""DeepContext 0.1's embedding settings are used or refused, never ignored: the local and hash
embedders refuse a model or size they cannot give, naming the setting and what to set instead."""

from __future__ import annotations

import pytest

from deepcontext import ConfigurationError, DeepContext
from deepcontext.settings import DeepContextSettings
from tests.examples.conftest import Run


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (
            {"embedding_model": "text-embedding-3-small"},
            "embedding_model='text-embedding-3-small' is not available to the local embedder",
        ),
        ({"embedding_dimensions": 1536}, "embedding_dimensions=1536 is not available to the local embedder"),
        ({"embedder": "hash", "embedding_model": "text-embedding-3-small"}, "is not used by embedder='hash'"),
    ],
)
def test_settings_the_embedder_cannot_honour_are_refused(settings: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigurationError, match="set embedder='openai'") as err:
        DeepContext(**settings)
    assert says in str(err.value)


def test_settings_the_embedder_honours_are_accepted() -> None:
    assert DeepContextSettings(embedding_dimensions=384).embedding_dimensions == 384
    assert DeepContextSettings(embedding_model="sentence-transformers/all-MiniLM-L6-v2").embedder.value == "local"
    assert DeepContextSettings(embedder="hash", embedding_dimensions=64).embedding_dimensions == 64
    s = DeepContextSettings(embedder="openai", embedding_model="text-embedding-3-small", embedding_dimensions=512)
    assert (s.embedding_model, s.embedding_dimensions) == ("text-embedding-3-small", 512)


@pytest.mark.slow  # the command as a process
def test_a_01_environment_is_refused_by_the_cli_with_the_message(run: Run) -> None:
    p = run(["-m", "deepcontext", "users"], env={"DEEPCONTEXT_EMBEDDING_MODEL": "text-embedding-3-small"})
    assert p.returncode != 0
    said = " ".join((p.stdout + p.stderr).split())  # the terminal's line wrapping undone
    assert "embedding_model='text-embedding-3-small' is not available to the local embedder" in said
    assert "DEEPCONTEXT_EMBEDDER=openai" in said
    assert "Traceback" not in p.stderr
