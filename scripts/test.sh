#!/usr/bin/env bash
# Install deepcontext with its dev extra into ./.venv and run the whole test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k search -x).
# PostgreSQL tests run when a server answers on 127.0.0.1:5432 with the pgvector extension; they
# skip with one message otherwise, and fail if DEEPCONTEXT_REQUIRE_POSTGRES=1 (CI) is set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[dev]"
exec python -m pytest "$@"
