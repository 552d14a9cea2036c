"""alembic's entry point for this repository: the command goes to deepcontext's own migrations."""

from alembic import context

from deepcontext.compat.alembic_env import run

run(context)
