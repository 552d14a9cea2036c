"""``deepcontext chat``: a terminal chat with an assistant that remembers (see :mod:`deepcontext.chat`)."""

from __future__ import annotations

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import fail, settings_kwargs, state


@app.command()
def chat(
    user: str = typer.Option("me", "--user", "-u", help="Whose memories and conversation (default: me)"),
    conversation: str = typer.Option(
        "chat", "--conversation", "-c", help="Conversation id; a new start continues it where it stopped"
    ),
    budget: int = typer.Option(2000, "--budget", min=100, max=200_000, help="Token budget of the context built for each message"),
    system_prompt: str = typer.Option(
        None, "--system", help="System prompt put before the context (default: a short memory-aware one)"
    ),
    temperature: float = typer.Option(None, "--temperature", min=0.0, max=2.0, help="Sampling temperature of the LLM"),
) -> None:
    """Chat in the terminal with an assistant that remembers across turns and sessions.

    Each message gets a context built from your memories and the conversation, the configured LLM
    answers (streamed), and the round is stored with the memories derived from it. Commands:
    memories [query], graph <entity>, lifecycle, context, path, branch <node>, history <id>,
    forget <id>, help, exit (bare or with a leading /). Without an LLM it still stores and shows
    what it remembers and the context an LLM would have received."""
    from deepcontext.chat.runner import run_chat
    from deepcontext.core import DeepContext
    from deepcontext.errors import DeepContextError
    from deepcontext.services.validation import check_id

    try:
        check_id(user, "user")
        check_id(conversation, "conversation")
        kwargs = settings_kwargs()
        DeepContext(**kwargs)  # invalid settings fail here, with one line, before the chat starts
    except DeepContextError as exc:
        fail(" ".join(str(exc).split()))
    code = run_chat(
        lambda: DeepContext(**kwargs),
        user_id=user,
        conversation_id=conversation,
        budget_tokens=budget,
        system_prompt=system_prompt,
        temperature=temperature,
        debug=state.debug,
    )
    raise typer.Exit(code)
