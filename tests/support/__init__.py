"""Shared test support: the fake OpenAI-compatible server (``fake_openai``) and its pytest fixtures
(``fixtures``; import them explicitly into your conftest or test module)."""
