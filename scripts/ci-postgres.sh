#!/usr/bin/env bash
# CI set-up for the PostgreSQL tests: the server must answer and offer pgvector, then the tests are
# made mandatory (DEEPCONTEXT_REQUIRE_POSTGRES=1: a missing server or extension FAILS them instead of
# skipping them).
#
#   in .ci/run:   source scripts/ci-postgres.sh             (exports into the calling shell)
#        or:      eval "$(bash scripts/ci-postgres.sh)"     (prints the export on stdout)
#
# Steps: wait up to 30 s for the server (127.0.0.1:5432, user postgres, database test; override with
# PGHOST / PGPORT / PGUSER / PGDATABASE), build and install pgvector with scripts/install-pgvector.sh
# when the extension is missing (needs root; ~15 s), check again. Any failure: a clear message on
# stderr and a non-zero status.

_dc_ci_postgres() {
    local here pg_url tries
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}" PGDATABASE="${PGDATABASE:-test}"
    pg_url="postgresql://${PGUSER}@${PGHOST}:${PGPORT}/${PGDATABASE}"

    if ! command -v psql >/dev/null 2>&1; then
        echo "[ci-postgres] FATAL: psql not found; the PostgreSQL tests need PostgreSQL 15 on ${PGHOST}:${PGPORT}" >&2
        return 1
    fi
    tries=0
    until psql -X -qAt -c "SELECT 1" >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -ge 30 ]; then
            echo "[ci-postgres] FATAL: PostgreSQL does not answer at ${pg_url} after 30 s:" >&2
            psql -X -qAt -c "SELECT 1" >&2 || true
            return 1
        fi
        sleep 1
    done

    if [ "$(psql -X -qAt -c "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")" != "1" ]; then
        echo "[ci-postgres] the vector extension is missing: building it (scripts/install-pgvector.sh)" >&2
        if ! bash "${here}/install-pgvector.sh"; then
            echo "[ci-postgres] FATAL: could not install pgvector; see the messages above" >&2
            return 1
        fi
    fi
    if [ "$(psql -X -qAt -c "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")" != "1" ]; then
        echo "[ci-postgres] FATAL: PostgreSQL at ${pg_url} still has no vector extension" >&2
        return 1
    fi
    echo "[ci-postgres] PostgreSQL $(psql -X -qAt -c "SHOW server_version") with pgvector" \
        "$(psql -X -qAt -c "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")" \
        "at ${pg_url}: PostgreSQL tests are required" >&2
    export DEEPCONTEXT_TEST_POSTGRES_URL="${DEEPCONTEXT_TEST_POSTGRES_URL:-$pg_url}"
    export DEEPCONTEXT_REQUIRE_POSTGRES=1
}

if (return 0 2>/dev/null); then
    # sourced: export into the caller; a failure returns non-zero (which stops a `set -e` caller)
    _dc_ci_postgres || return 1
else
    set -euo pipefail
    _dc_ci_postgres
    echo "export DEEPCONTEXT_REQUIRE_POSTGRES=1 DEEPCONTEXT_TEST_POSTGRES_URL=${DEEPCONTEXT_TEST_POSTGRES_URL}"
fi
