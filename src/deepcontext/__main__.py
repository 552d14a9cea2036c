"""``python -m deepcontext``: the same as the ``deepcontext`` command."""

from deepcontext.cli.main import run

run()
