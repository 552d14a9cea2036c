"""Constructor checks shared by the HTTP backends (one implementation in ``LLM._configure_remote``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from deepcontext.errors import ConfigurationError
from deepcontext.llm.openai_compat import OpenAICompatibleLLM
from deepcontext.settings import JSONMode


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "  "}, "a model name is required"),
        ({"base_url": "ftp://x"}, "base_url must start with http"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"timeout": True}, "timeout must be a positive number"),
        ({"max_retries": -1}, "max_retries must be an int >= 0"),
        ({"json_mode": "yaml"}, "json_mode must be one of"),
    ],
)
def test_bad_configuration_is_named(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"model": "m", **kwargs}
    with pytest.raises(ConfigurationError, match=message) as info:
        OpenAICompatibleLLM(args.pop("model"), name="mine", **args)
    assert "'mine'" in str(info.value)


def test_good_configuration_is_normalised_and_key_hidden() -> None:
    llm = OpenAICompatibleLLM(
        " gpt-x ",
        base_url="http://127.0.0.1:9/v1/",
        api_key=SecretStr("sk-secret-123"),
        timeout=3,
        max_retries=0,
        json_mode="json_object",
    )
    assert (llm.model, llm.base_url, llm.timeout, llm.max_retries, llm.json_mode) == (
        "gpt-x", "http://127.0.0.1:9/v1", 3, 0, JSONMode.JSON_OBJECT,
    )  # fmt: skip
    assert "sk-secret-123" not in repr(llm)


def test_litellm_backend_shares_the_checks() -> None:
    pytest.importorskip("litellm")
    from deepcontext.llm.litellm_backend import LiteLLMBackend

    with pytest.raises(ConfigurationError, match="base_url must start with http"):
        LiteLLMBackend("openai/m", base_url="localhost:8000")
