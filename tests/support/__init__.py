"""Shared test support: the fake OpenAI-compatible server (``fake_openai``) and its pytest fixtures
(``fixtures``; import them explicitly into your conftest or test module), and ``cli.run_cli``, the
``deepcontext`` command run in the test process."""
